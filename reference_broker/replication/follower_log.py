"""A follower's side of a fetch (Kafka's ``AbstractFetcherThread.processFetchResponse``,
``ReplicaFetcherThread.processPartitionData`` and ``truncateOnFetchResponse``): what to fetch next,
appending what came (offsets as the leader assigned them, producer state replayed from the batches),
the follower's high watermark (the leader's, but never past its own log end), and truncating to where
its log diverged from the leader's."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kconform.codecs.records import iter_batch_headers, truncated_tail

if TYPE_CHECKING:
    from ..partition import Partition

__all__ = ["FetchPosition", "append_fetched", "position", "truncate_to_divergence", "truncation_offset"]

_log = logging.getLogger(__name__)

UNDEFINED_EPOCH = -1
_BATCH_OVERHEAD = 12  # base offset and batch length, outside batch_length


@dataclass(frozen=True, slots=True)
class FetchPosition:
    fetch_offset: int
    current_leader_epoch: int
    last_fetched_epoch: int
    log_start_offset: int


def position(partition: Partition) -> FetchPosition:
    latest = partition.log.latest_epoch
    return FetchPosition(
        fetch_offset=partition.log.log_end_offset,
        current_leader_epoch=partition.leader_epoch,
        last_fetched_epoch=UNDEFINED_EPOCH if latest is None else latest,
        log_start_offset=partition.log.log_start_offset,
    )


def append_fetched(
    partition: Partition, records, *, leader_epoch: int, high_watermark: int, log_start_offset: int
) -> int:
    """Append the whole batches of a fetch answer; returns the bytes appended. A batch the leader cut
    short at the end is fetched again next time; so is a batch from a leader epoch newer than the one
    fetched with, and all after it (``UnifiedLog.appendAsFollower``, KAFKA-18723): the metadata that
    explains that epoch has not reached this broker yet."""
    from ..storage import AppendOrigin

    log = partition.log
    data = bytes(records.read() if hasattr(records, "read") else records or b"")
    whole = data[: len(data) - truncated_tail(data)] if data else b""
    kept = 0
    for header in iter_batch_headers(whole, verify_crc=False):
        if header.partition_leader_epoch > leader_epoch:
            break
        kept += _BATCH_OVERHEAD + header.batch_length
    whole = whole[:kept]
    if whole:
        log.append(whole, assign_offsets=False, origin=AppendOrigin.REPLICATION)
    log.update_high_watermark(min(high_watermark, log.log_end_offset))
    if log_start_offset > log.log_start_offset:
        # the leader deleted records or retained less: follow it, within what this log holds
        log.delete_records_before(min(log_start_offset, log.high_watermark))
    partition.replica_progressed()
    return len(whole)


def truncation_offset(partition: Partition, leader_epoch: int, leader_end_offset: int) -> int:
    """Where to cut, given the leader's diverging epoch and where it ends that epoch
    (``AbstractFetcherThread.getOffsetTruncationState``). When this log does not have the leader's
    epoch it cuts to the end of its largest epoch below it; the next fetch then compares again."""
    log = partition.log
    end = log.log_end_offset
    if leader_end_offset < 0:  # the leader knows no end for the epoch: stay at the fetch offset
        return end
    if leader_epoch == UNDEFINED_EPOCH:
        return min(leader_end_offset, end)
    follower_epoch, follower_end = log.end_offset_for_epoch(leader_epoch)
    if follower_epoch == UNDEFINED_EPOCH:
        return min(leader_end_offset, end)
    if follower_epoch != leader_epoch:
        return min(follower_end, end)
    return min(follower_end, leader_end_offset, end)


def truncate_to_divergence(partition: Partition, leader_epoch: int, leader_end_offset: int) -> int:
    offset = truncation_offset(partition, leader_epoch, leader_end_offset)
    end = partition.log.log_end_offset
    if offset < end:  # an uncommitted suffix the new leader never had: worth an operator's eye
        _log.warning(
            "%s-%d: truncated %d records to offset %d (diverging at leader epoch %d)",
            partition.topic_name,
            partition.index,
            end - offset,
            offset,
            leader_epoch,
        )
    partition.log.truncate_to(offset)
    partition.replica_progressed()
    return offset
