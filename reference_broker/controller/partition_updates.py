"""What the controller writes when a broker's state moves its partitions (Kafka's
``ReplicationControlManager.generateLeaderAndIsrUpdates``): a broker fenced, shutting down or
re-registering leaves every ISR it is in (never emptying one) and may not lead, so where it led a new
leader is elected from what is left; a broker unfenced may lead the leaderless partitions, even before
the image shows it unfenced; a preferred or unclean election asks for one leader. Each partition's
election is UNCLEAN where its topic allows it (``uncleanLeaderElectionEnabledForTopic``). Pure
functions over the image; the controller appends what they return."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from kconform.codecs.metadata_records import PartitionChangeRecord

from ..cluster_metadata import NO_LEADER, ClusterImage, PartitionInfo, TopicInfo
from .partition_change import Election, PartitionChange, build_partition_change

__all__ = ["leader_may_be", "isr_without_broker", "elect_for_leaderless", "unclean_allowed"]


def leader_may_be(image: ClusterImage, *, excluding: int | None = None, including: int | None = None):
    """``isAcceptableLeader``: registered, unfenced, not shutting down (``ClusterControlManager.isActive``);
    ``including`` counts as acceptable (brokerToAdd), ``excluding`` never (brokerToRemove)."""

    def may_lead(broker_id: int) -> bool:
        if broker_id == including:
            return True
        if broker_id == excluding:
            return False
        broker = image.brokers.get(broker_id)
        return broker is not None and not broker.fenced and not broker.in_controlled_shutdown

    return may_lead


def unclean_allowed(image: ClusterImage, topic: TopicInfo, default: bool) -> bool:
    """The topic's override, else the cluster-wide dynamic default, else ``default`` (the static one)."""
    value = topic.configs.get("unclean.leader.election.enable")
    if value is None:
        value = image.broker_configs(None).get("unclean.leader.election.enable")
    return default if value is None else value.strip().lower() == "true"


def isr_without_broker(
    image: ClusterImage, broker_id: int, *, unclean_default: bool
) -> list[PartitionChangeRecord]:
    """The broker leaves every ISR it is in (``partitionsWithBrokerInIsr``); where it led, a new leader
    is elected from what is left."""
    may_lead = leader_may_be(image, excluding=broker_id)
    return _changes(
        image,
        ((topic, p) for topic in image for p in topic.partitions if broker_id in p.isr),
        lambda topic, p: PartitionChange(
            topic.topic_id,
            p,
            may_lead,
            target_isr=[r for r in p.isr if r != broker_id],
            unclean_allowed=unclean_allowed(image, topic, unclean_default),
        ),
    )


def elect_for_leaderless(
    image: ClusterImage, *, newly_usable: int | None = None, unclean_default: bool
) -> list[PartitionChangeRecord]:
    """Every leaderless partition gets a leader if one of its replicas may lead now."""
    may_lead = leader_may_be(image, including=newly_usable)
    return _changes(
        image,
        ((topic, p) for topic in image for p in topic.partitions if p.leader == NO_LEADER),
        lambda topic, p: PartitionChange(
            topic.topic_id, p, may_lead, unclean_allowed=unclean_allowed(image, topic, unclean_default)
        ),
    )


def _changes(
    image: ClusterImage,
    partitions: Iterable[tuple[TopicInfo, PartitionInfo]],
    change_for: Callable[[TopicInfo, PartitionInfo], PartitionChange],
) -> list[PartitionChangeRecord]:
    records = []
    for topic, partition in partitions:
        record = build_partition_change(change_for(topic, partition))
        if record is not None:
            records.append(record)
    return records


def election(
    image: ClusterImage, topic: TopicInfo, partition: PartitionInfo, kind: Election
) -> PartitionChangeRecord | None:
    return build_partition_change(
        PartitionChange(topic.topic_id, partition, leader_may_be(image), election=kind)
    )
