"""Writing a transaction's COMMIT or ABORT markers to its partitions: what a partition leader does for
WriteTxnMarkers, and what this node's transaction coordinator calls directly.

Each partition gets one control batch, appended as the coordinator's write with acks=all (Kafka's
``KafkaApis.handleWriteTxnMarkersRequest`` -> ``ReplicaManager.appendRecords``): a partition this
node does not have is UNKNOWN_TOPIC_OR_PARTITION, one below its min.insync.replicas
NOT_ENOUGH_REPLICAS, and the producer state's epoch checks give INVALID_PRODUCER_EPOCH or
TRANSACTION_COORDINATOR_FENCED. For a ``__consumer_offsets`` partition the group coordinator is told
once the marker is in, so that the transaction's offset commits take effect or are dropped."""

from __future__ import annotations

import logging
from collections.abc import Iterable

from kconform.codecs.errors import Errors

from .internal_topics import CONSUMER_OFFSETS
from .partition import PartitionError

__all__ = ["write_txn_markers"]

log = logging.getLogger(__name__)


def write_txn_markers(
    broker,
    *,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    commit: bool,
    partitions: Iterable[tuple[str, int]],
    transaction_version: int = 0,
) -> dict[tuple[str, int], int]:
    """The error code for each partition: NONE once its marker is in the log. A partition named
    twice gets one marker (Kafka gathers the marker batches in a map keyed by partition)."""
    results: dict[tuple[str, int], int] = {}
    for topic, index in dict.fromkeys(partitions):
        results[(topic, index)] = _write_one(
            broker, topic, index, producer_id, producer_epoch, coordinator_epoch, commit, transaction_version
        )
    return results


def _write_one(
    broker,
    topic: str,
    index: int,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    commit: bool,
    transaction_version: int,
) -> int:
    partition = broker.partition(topic, index)
    if partition is None:
        return Errors.UNKNOWN_TOPIC_OR_PARTITION
    if partition.under_min_isr():  # acks=all is checked before anything is written
        return Errors.NOT_ENOUGH_REPLICAS
    try:
        partition.append_control_marker(
            producer_id, producer_epoch, coordinator_epoch, commit, transaction_version
        )
    except PartitionError as exc:
        return exc.code
    except Exception:  # a disk failure on one partition must not stop the others
        log.exception("marker for producer %d on %s-%d failed", producer_id, topic, index)
        return Errors.KAFKA_STORAGE_ERROR
    if topic != CONSUMER_OFFSETS:
        return Errors.NONE
    complete = getattr(broker.group_coordinator, "complete_transaction", None)
    if complete is None:
        return Errors.NONE
    try:
        complete(index, producer_id, producer_epoch, commit)
    except Exception:  # Kafka answers a failed offsets update with UNKNOWN_SERVER_ERROR
        log.exception("group coordinator failed to complete producer %d's transaction", producer_id)
        return Errors.UNKNOWN_SERVER_ERROR
    return Errors.NONE
