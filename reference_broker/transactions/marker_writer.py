"""Writing a transaction's COMMIT or ABORT markers, as control batches, into the partitions of this node:
what a partition leader does for WriteTxnMarkers, and what this node's transaction coordinator calls
directly.

Each partition gets one control batch, appended as the coordinator's write with acks=all (Kafka's
``KafkaApis.handleWriteTxnMarkersRequest`` -> ``ReplicaManager.appendRecords``): a partition this
node does not have is UNKNOWN_TOPIC_OR_PARTITION, one below its min.insync.replicas
NOT_ENOUGH_REPLICAS, and the producer state's epoch checks give INVALID_PRODUCER_EPOCH or
TRANSACTION_COORDINATOR_FENCED. For a ``__consumer_offsets`` partition the group coordinator is told
once the marker is in, so that the transaction's offset commits take effect or are dropped."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import Protocol, runtime_checkable

from kconform.codecs.errors import Errors

from ..internal_topics import CONSUMER_OFFSETS
from ..partition import PartitionError

__all__ = [
    "MarkerHost",
    "MarkerTarget",
    "TransactionCompleter",
    "write_markers_replicated",
    "write_txn_markers",
]

log = logging.getLogger(__name__)


class MarkerTarget(Protocol):
    """A partition that takes markers (``partition.Partition``)."""

    @property
    def leader_epoch(self) -> int: ...

    def under_min_isr(self) -> bool: ...

    async def wait_for_replication(self, required_end: int, timeout_s: float) -> int: ...

    def append_control_marker(
        self,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        commit: bool,
        transaction_version: int,
    ) -> object: ...


class TransactionCompleter(Protocol):
    """The group coordinator's side of a marker in ``__consumer_offsets`` (Kafka's
    ``GroupCoordinator.onTransactionCompleted``)."""

    def complete_transaction(
        self, offsets_partition: int, producer_id: int, producer_epoch: int, commit: bool
    ) -> None: ...


@runtime_checkable
class MarkerHost(Protocol):
    """What writing markers needs from a node."""

    def partition(self, topic_name: str, index: int) -> MarkerTarget | None:
        """This node's partition, or None when it has no such partition."""

    @property
    def group_coordinator(self) -> TransactionCompleter:
        """Looked up at each write; one without ``complete_transaction`` is skipped."""


def write_txn_markers(
    host: MarkerHost,
    *,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    commit: bool,
    partitions: Iterable[tuple[str, int]],
    transaction_version: int = 0,
) -> dict[tuple[str, int], int]:
    """The error code for each partition: NONE once its marker is in the leader's log. A partition
    named twice gets one marker (Kafka gathers the marker batches in a map keyed by partition)."""
    return {
        key: code
        for key, (code, _end) in _write_all(
            host, producer_id, producer_epoch, coordinator_epoch, commit, partitions, transaction_version
        ).items()
    }


async def write_markers_replicated(
    host: MarkerHost,
    *,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    commit: bool,
    partitions: Iterable[tuple[str, int]],
    transaction_version: int = 0,
    timeout_s: float,
) -> dict[tuple[str, int], int]:
    """``write_txn_markers`` with acks=-1: each written marker's code becomes NONE only once the
    partition's high watermark passes it (NOT_ENOUGH_REPLICAS_AFTER_APPEND, NOT_LEADER_OR_FOLLOWER or
    REQUEST_TIMED_OUT otherwise), as Kafka appends markers with ``requiredAcks = -1`` and
    ``request.timeout.ms``."""
    written = _write_all(
        host, producer_id, producer_epoch, coordinator_epoch, commit, partitions, transaction_version
    )
    waits = {
        key: host.partition(*key).wait_for_replication(end, timeout_s)
        for key, (code, end) in written.items()
        if code == Errors.NONE and end >= 0 and host.partition(*key) is not None
    }
    replicated = dict(zip(waits, await asyncio.gather(*waits.values()), strict=True))
    return {key: replicated.get(key, code) for key, (code, _end) in written.items()}


def _write_all(
    host: MarkerHost,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    commit: bool,
    partitions: Iterable[tuple[str, int]],
    transaction_version: int,
) -> dict[tuple[str, int], tuple[int, int]]:
    """(error code, end offset of the marker or -1) for each partition."""
    return {
        (topic, index): _write_one(
            host, topic, index, producer_id, producer_epoch, coordinator_epoch, commit, transaction_version
        )
        for topic, index in dict.fromkeys(partitions)
    }


def _write_one(
    host: MarkerHost,
    topic: str,
    index: int,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    commit: bool,
    transaction_version: int,
) -> tuple[int, int]:
    partition = host.partition(topic, index)
    if partition is None:
        return Errors.UNKNOWN_TOPIC_OR_PARTITION, -1
    if partition.under_min_isr():  # acks=all is checked before anything is written
        return Errors.NOT_ENOUGH_REPLICAS, -1
    try:
        offset = partition.append_control_marker(
            producer_id, producer_epoch, coordinator_epoch, commit, transaction_version
        )
    except PartitionError as exc:
        return exc.code, -1
    except Exception:  # a disk failure on one partition must not stop the others
        log.exception("marker for producer %d on %s-%d failed", producer_id, topic, index)
        return Errors.KAFKA_STORAGE_ERROR, -1
    end = offset + 1 if isinstance(offset, int) else -1
    if topic != CONSUMER_OFFSETS:
        return Errors.NONE, end
    complete = getattr(host.group_coordinator, "complete_transaction", None)
    if complete is None:
        return Errors.NONE, end
    try:
        complete(index, producer_id, producer_epoch, commit)
    except Exception:  # Kafka answers a failed offsets update with UNKNOWN_SERVER_ERROR
        log.exception("group coordinator failed to complete producer %d's transaction", producer_id)
        return Errors.UNKNOWN_SERVER_ERROR, end
    return Errors.NONE, end
