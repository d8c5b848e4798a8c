"""A leader answering its followers' fetches (Kafka's ``Partition.fetchRecords`` for a follower and
``updateFollowerFetchState``).

The follower must be one of the partition's replicas (UNKNOWN_LEADER_EPOCH otherwise: the leader may
not know of it yet). Its last fetched epoch is checked first: if the leader's log ends that epoch
earlier than the follower's fetch offset, or has no such epoch, the answer is the diverging epoch (the
largest epoch at or below the follower's and where it ends here) and no records, and the follower's
progress is not recorded, since its log end offset is not a true one; an epoch the leader cannot place
at all is OFFSET_OUT_OF_RANGE. Otherwise the leader reads from the fetch offset up to its log end (not
the high watermark: followers copy everything); then, for a fetch from the follower's current broker
epoch, records its progress, adds it to the ISR when it has caught up, and moves the high watermark.
The answer's offsets are those from before the read."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kconform.codecs.errors import Errors

from ..partition import LogSlice, PartitionError

if TYPE_CHECKING:
    from ..partition import Partition

__all__ = ["FollowerRead", "serve_follower_fetch"]


@dataclass(slots=True)
class FollowerRead:
    records: bytes | LogSlice
    high_watermark: int
    log_start_offset: int
    last_stable_offset: int
    diverging_epoch: tuple[int, int] | None = None
    """(epoch, end offset) when the follower's log diverged from the leader's."""


def serve_follower_fetch(
    partition: Partition,
    *,
    replica_id: int,
    replica_epoch: int,
    fetch_offset: int,
    log_start_offset: int,
    last_fetched_epoch: int,
    current_leader_epoch: int,
    max_bytes: int,
    record_progress: bool = True,
) -> FollowerRead:
    """``record_progress`` False for a re-read of a fetch waiting for data (Kafka's
    ``readFromPurgatory``): the follower's progress was recorded when the fetch arrived."""
    from ..storage import OffsetOutOfRange

    partition.check_leader_epoch(current_leader_epoch)
    partition.check_leader()
    if replica_id not in partition.leadership.followers:
        # Partition.followerReplicaOrThrow: the follower retries once its leader knows of it
        raise PartitionError(
            Errors.UNKNOWN_LEADER_EPOCH if current_leader_epoch >= 0 else Errors.NOT_LEADER_OR_FOLLOWER
        )
    log = partition.log
    # the answer carries the offsets from before the read: a follower learns the high watermark its
    # own fetch moves on its next fetch (Partition.readRecords)
    high_watermark, log_start, stable = log.high_watermark, log.log_start_offset, log.last_stable_offset
    if last_fetched_epoch >= 0:
        epoch, end_offset = log.end_offset_for_epoch(last_fetched_epoch)
        if epoch < 0 or end_offset < 0 or fetch_offset < log_start:
            raise PartitionError(Errors.OFFSET_OUT_OF_RANGE)  # Partition.readRecords
        if epoch < last_fetched_epoch or end_offset < fetch_offset:
            return FollowerRead(b"", high_watermark, log_start, stable, diverging_epoch=(epoch, end_offset))
    try:
        result = log.read(fetch_offset, max_bytes, min_one_batch=True)
    except OffsetOutOfRange:
        raise PartitionError(Errors.OFFSET_OUT_OF_RANGE) from None
    if record_progress:
        if replica_epoch >= 0 and partition.replication.alive_broker_epoch(replica_id) > replica_epoch:
            # Replica.updateFetchStateOrThrow: a fetch from an older incarnation of the follower; only
            # a fetch that records progress is checked
            raise PartitionError(Errors.NOT_LEADER_OR_FOLLOWER)
        partition.record_follower_fetch(replica_id, replica_epoch, fetch_offset, log_start_offset)
    return FollowerRead(
        LogSlice(result.region) if result.region is not None else b"", high_watermark, log_start, stable
    )
