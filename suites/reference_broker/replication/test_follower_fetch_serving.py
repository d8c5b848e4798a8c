"""A leader answering its followers' fetches (``replication.serving.serve_follower_fetch``), each test
pinned to the rule of Kafka 4.1's ``Partition.fetchRecords`` / ``readRecords`` (or
``Replica.updateFetchStateOrThrow``) it names."""

from __future__ import annotations

import pytest

from kconform.codecs.errors import Errors
from kconform.codecs.records import iter_batch_headers
from kconform.reference_broker.partition import PartitionError
from kconform.reference_broker.replication.serving import serve_follower_fetch

from ...support.replication_host import BROKER_EPOCH, apply, batch, registration, replica


def leading(tmp_path, *, isr=(1, 2), leader_epoch: int = 1):
    """Broker 1 leading orders-0 over replicas 1 and 2."""
    leader, host = replica(tmp_path, 1)
    apply(leader, host, registration(1, (1, 2), isr, leader_epoch, leader_epoch))
    return leader, host


def fetch(leader, *, fetch_offset=0, last_fetched_epoch=-1, current_leader_epoch=1, **overrides):
    """A fetch from broker 2 at its registered broker epoch."""
    request = dict(
        replica_id=2,
        replica_epoch=BROKER_EPOCH,
        fetch_offset=fetch_offset,
        log_start_offset=0,
        last_fetched_epoch=last_fetched_epoch,
        current_leader_epoch=current_leader_epoch,
        max_bytes=1 << 20,
    )
    return serve_follower_fetch(leader, **(request | overrides))


def error_of(leader, **request) -> int:
    with pytest.raises(PartitionError) as raised:
        fetch(leader, **request)
    return raised.value.code


def offsets(read) -> list[tuple[int, int]]:
    data = read.records.read() if hasattr(read.records, "read") else read.records
    return [(h.base_offset, h.last_offset) for h in iter_batch_headers(data)]


def test_follower_reads_up_to_log_end_not_high_watermark(tmp_path):
    # Partition.readRecords: a follower reads with FetchIsolation.LOG_END
    leader, _ = leading(tmp_path)
    leader.append_internal(batch("a", "b"))
    leader.append_internal(batch("c"))
    assert leader.high_watermark == 0
    assert offsets(fetch(leader)) == [(0, 1), (2, 2)]


def test_answer_carries_high_watermark_from_before_the_fetch_moved_it(tmp_path):
    # Partition.readRecords: initialHighWatermark (and log start, LSO) are taken before the read; the
    # follower's progress (updateFollowerFetchState) moves the HW after it, for its next fetch to see
    leader, _ = leading(tmp_path)
    leader.append_internal(batch("a", "b"))
    fetch(leader)
    read = fetch(leader, fetch_offset=2, last_fetched_epoch=1)
    assert (leader.high_watermark, read.high_watermark) == (2, 0)
    assert fetch(leader, fetch_offset=2, last_fetched_epoch=1).high_watermark == 2


def test_unknown_replica_answered_unknown_leader_epoch_or_not_leader(tmp_path):
    # Partition.followerReplicaOrThrow: currentLeaderEpoch present -> UNKNOWN_LEADER_EPOCH (the
    # follower retries); absent -> NOT_LEADER_OR_FOLLOWER
    leader, _ = leading(tmp_path)
    assert error_of(leader, replica_id=3) == Errors.UNKNOWN_LEADER_EPOCH
    assert error_of(leader, replica_id=3, current_leader_epoch=-1) == Errors.NOT_LEADER_OR_FOLLOWER


def test_fetch_at_stale_broker_epoch_answered_not_leader(tmp_path):
    # Replica.updateFetchStateOrThrow: brokerEpoch != -1 and the alive broker's epoch is greater ->
    # NotLeaderOrFollowerException; -1 (Fetch < v15) skips the check
    leader, _ = leading(tmp_path)
    assert error_of(leader, replica_epoch=BROKER_EPOCH - 1) == Errors.NOT_LEADER_OR_FOLLOWER
    assert leader.leadership.followers[2].log_end_offset == -1
    fetch(leader, replica_epoch=-1)
    assert leader.leadership.followers[2].log_end_offset == 0


def test_stale_broker_epoch_checked_only_when_progress_is_recorded(tmp_path):
    # Partition.fetchRecords: updateFollowerFetchState (and its epoch check) runs only when
    # updateFetchState (not a purgatory re-read) and there is no diverging epoch
    leader, host = leading(tmp_path)
    leader.append_internal(batch("a", "b"))
    apply(leader, host, registration(1, (1, 2), (1, 2), 2, 2))
    stale = BROKER_EPOCH - 1
    reread = fetch(leader, current_leader_epoch=2, replica_epoch=stale, record_progress=False)
    assert offsets(reread) == [(0, 1)]
    diverged = fetch(
        leader, fetch_offset=4, last_fetched_epoch=1, current_leader_epoch=2, replica_epoch=stale
    )
    assert diverged.diverging_epoch == (1, 2)  # answered, though the fetch's broker epoch is stale


def test_diverging_last_fetched_epoch_answered_with_epoch_end_and_no_records(tmp_path):
    # Partition.readRecords: epochEndOffset.leaderEpoch < lastFetchedEpoch or endOffset < fetchOffset
    # -> no records, divergingEpoch = (epoch, end offset); fetchRecords records no progress then
    leader, host = leading(tmp_path)
    leader.append_internal(batch("a", "b", "c"))
    apply(leader, host, registration(1, (1, 2), (1, 2), 3, 3))
    leader.append_internal(batch("d"))
    before = leader.leadership.followers[2]
    read = fetch(leader, fetch_offset=5, last_fetched_epoch=1, current_leader_epoch=3)
    assert (read.diverging_epoch, read.records) == ((1, 3), b"")
    # the largest epoch at or below the follower's, ending where the next starts
    read = fetch(leader, fetch_offset=5, last_fetched_epoch=2, current_leader_epoch=3)
    assert read.diverging_epoch == (1, 3)
    assert leader.leadership.followers[2] == before
    assert fetch(leader, fetch_offset=3, last_fetched_epoch=1, current_leader_epoch=3).diverging_epoch is None


def test_last_fetched_epoch_unknown_to_leader_answered_offset_out_of_range(tmp_path):
    # Partition.readRecords: endOffset == UNDEFINED_EPOCH_OFFSET or leaderEpoch == UNDEFINED_EPOCH ->
    # OffsetOutOfRangeException (LeaderEpochFileCache.endOffsetFor: no epoch above the requested one)
    leader, _ = leading(tmp_path)
    leader.append_internal(batch("a"))
    assert error_of(leader, fetch_offset=1, last_fetched_epoch=5) == Errors.OFFSET_OUT_OF_RANGE


def test_fetch_below_log_start_answered_offset_out_of_range(tmp_path):
    # Partition.readRecords (KAFKA-12696): fetchOffset < logStartOffset -> OFFSET_OUT_OF_RANGE, checked
    # before any divergence; without a last fetched epoch the log read refuses it
    leader, _ = leading(tmp_path, isr=(1,))
    leader.append_internal(batch("a", "b"))
    leader.append_internal(batch("c"))
    leader.log.delete_records_before(2)
    assert error_of(leader, fetch_offset=1, last_fetched_epoch=1) == Errors.OFFSET_OUT_OF_RANGE
    assert error_of(leader, fetch_offset=1) == Errors.OFFSET_OUT_OF_RANGE
    assert error_of(leader, fetch_offset=4) == Errors.OFFSET_OUT_OF_RANGE  # past the log end
    assert offsets(fetch(leader, fetch_offset=2)) == [(2, 2)]


def test_current_leader_epoch_fenced_or_unknown(tmp_path):
    # Partition.localLogWithEpochOrThrow: request epoch < local -> FENCED_LEADER_EPOCH, > local ->
    # UNKNOWN_LEADER_EPOCH, then a replica that does not lead -> NOT_LEADER_OR_FOLLOWER
    leader, host = leading(tmp_path, leader_epoch=3)
    assert error_of(leader, current_leader_epoch=2) == Errors.FENCED_LEADER_EPOCH
    assert error_of(leader, current_leader_epoch=4) == Errors.UNKNOWN_LEADER_EPOCH
    apply(leader, host, registration(2, (1, 2), (1, 2), 4, 4))
    assert error_of(leader, current_leader_epoch=4) == Errors.NOT_LEADER_OR_FOLLOWER
    assert error_of(leader, current_leader_epoch=3) == Errors.FENCED_LEADER_EPOCH
