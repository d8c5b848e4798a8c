"""Partition reassignment (Kafka's ``ReplicationControlManager.changePartitionReassignment`` and
``cancelPartitionReassignment`` with ``PartitionReassignmentReplicas``).

A reassignment to ``target`` keeps the replicas it removes until the ones it adds are in sync: the
replica list becomes ``target`` followed by the replicas being removed, ``adding = target - current``
and ``removing = current - target``. It completes in the same step when the ISR already covers the
target, and otherwise when an AlterPartition brings the last added replica into the ISR
(``PartitionChangeBuilder.completeReassignmentIfNeeded``). Cancelling goes back to the original
replicas and drops the added ones from the ISR; if that would leave the ISR empty the first original
replica would have to lead uncleanly, which is refused unless the topic allows unclean elections."""

from __future__ import annotations

from kconform.codecs.errors import Errors
from kconform.codecs.metadata_records import PartitionChangeRecord

from ..cluster_metadata import ClusterImage
from .partition_change import PartitionChange, build_partition_change
from .partition_updates import leader_may_be, unclean_allowed

__all__ = ["reassignment_change"]


def reassignment_change(
    image: ClusterImage, name: str, index: int, target: list[int] | None, *, unclean_default: bool
) -> tuple[int, str | None, PartitionChangeRecord | None]:
    """(error code, message, record to write) for one partition."""
    topic = image.get(name)
    if topic is None or not 0 <= index < len(topic.partitions):
        return Errors.UNKNOWN_TOPIC_OR_PARTITION, None, None
    partition = topic.partitions[index]
    original = [r for r in partition.replicas if r not in partition.adding_replicas]
    may_lead = leader_may_be(image)
    unclean = unclean_allowed(image, topic, unclean_default)
    if target is None:
        if not partition.is_reassigning:
            return Errors.NO_REASSIGNMENT_IN_PROGRESS, None, None
        isr = [r for r in partition.isr if r not in partition.adding_replicas]
        if not isr:
            if not unclean:
                return Errors.INVALID_REPLICA_ASSIGNMENT, "Unable to revert partition assignment", None
            isr = original[:1]
        change = PartitionChange(
            topic.topic_id,
            partition,
            may_lead,
            target_isr=isr,
            target_replicas=original,
            target_adding=[],
            target_removing=[],
            unclean_allowed=unclean,
        )
        return Errors.NONE, None, build_partition_change(change)
    if not target or len(set(target)) != len(target) or any(b not in image.brokers for b in target):
        return Errors.INVALID_REPLICA_ASSIGNMENT, f"Invalid replica assignment {target}", None
    removing = sorted(r for r in original if r not in target)
    adding = sorted(r for r in target if r not in original)
    change = PartitionChange(
        topic.topic_id,
        partition,
        may_lead,
        target_replicas=list(target) + removing,
        target_adding=adding,
        target_removing=removing,
        unclean_allowed=unclean,
    )
    return Errors.NONE, None, build_partition_change(change)
