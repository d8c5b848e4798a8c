"""What a leader knows of each follower (``replication.follower_progress``, ``Leadership.apply``), each
test pinned to the Kafka 4.1 rule it names: when a follower counts as caught up, when it falls out of
sync, when it may join the ISR, and what a new or re-elected leader starts from."""

from __future__ import annotations

from kconform.reference_broker.replication.follower_progress import (
    UNKNOWN_OFFSET,
    FollowerProgress,
    after_fetch,
    is_caught_up,
    may_join_isr,
    new_leader_view,
    out_of_sync,
)
from kconform.reference_broker.replication.leadership import Leadership

from ...support.replication_host import LAG_MS, START_MS, registration

T0 = START_MS


def fetched(progress: FollowerProgress, fetch_offset: int, leader_end_offset: int, now_ms: int):
    return after_fetch(
        progress,
        fetch_offset=fetch_offset,
        log_start_offset=0,
        leader_end_offset=leader_end_offset,
        now_ms=now_ms,
        broker_epoch=7,
    )


def caught_up_fetch(leadership: Leadership, broker: int, now_ms: int):
    """A fetch from an empty leader's log end (offset 0) at broker epoch 7."""
    return leadership.follower_fetched(
        broker,
        fetch_offset=0,
        log_start_offset=0,
        leader_end_offset=0,
        high_watermark=0,
        now_ms=now_ms,
        broker_epoch=7,
        isr_eligible=True,
    )


def test_fetch_from_leader_end_is_caught_up_at_fetch_time():
    # Replica.updateFetchStateOrThrow: fetchOffset >= leaderEndOffset -> max(lastCaughtUp, fetchTime)
    progress = fetched(FollowerProgress(2, last_caught_up_ms=T0), 10, 10, T0 + 500)
    assert progress.last_caught_up_ms == T0 + 500
    # ... the fetch offset is the follower's log end; the fetch sets its log start, time and epoch
    assert (progress.log_end_offset, progress.log_start_offset) == (10, 0)
    assert (progress.last_fetch_ms, progress.broker_epoch) == (T0 + 500, 7)


def test_fetch_from_previous_leader_end_is_caught_up_at_previous_fetch():
    # Replica.updateFetchStateOrThrow: fetchOffset >= old lastFetchLeaderLogEndOffset (but below the
    # leader's end now) -> max(lastCaughtUp, old lastFetchTimeMs): it had caught up by the last fetch
    first = fetched(FollowerProgress(2), 4, 10, T0 + 100)
    assert first.last_caught_up_ms == 0
    second = fetched(first, 10, 15, T0 + 900)
    assert second.last_caught_up_ms == T0 + 100


def test_fetch_behind_previous_leader_end_keeps_last_caught_up():
    # Replica.updateFetchStateOrThrow: otherwise lastCaughtUpTimeMs is unchanged
    first = fetched(FollowerProgress(2, last_caught_up_ms=T0), 4, 10, T0 + 100)
    second = fetched(first, 8, 12, T0 + 900)
    assert second.last_caught_up_ms == T0


def test_last_fetch_leader_end_offset_never_goes_back():
    # Replica.updateFetchStateOrThrow: lastFetchLeaderLogEndOffset = max(leaderEndOffset, old)
    first = fetched(FollowerProgress(2), 4, 10, T0)
    assert fetched(first, 4, 6, T0 + 1).last_fetch_leader_end_offset == 10
    assert fetched(first, 4, 12, T0 + 1).last_fetch_leader_end_offset == 12


def test_follower_at_leader_end_is_never_out_of_sync():
    # ReplicaState.isCaughtUp: leaderEndOffset == logEndOffset, however long since it last fetched
    # (an idle partition keeps its ISR)
    progress = FollowerProgress(2, log_end_offset=10, last_caught_up_ms=T0)
    later = T0 + 10 * LAG_MS
    assert is_caught_up(progress, 10, later, LAG_MS)
    assert out_of_sync({2: progress}, (1, 2), 1, 10, later, LAG_MS) == []


def test_follower_out_of_sync_once_not_caught_up_for_lag_time():
    # ReplicaState.isCaughtUp: now - lastCaughtUpTimeMs <= replica.lag.time.max.ms;
    # Partition.getOutOfSyncReplicas: the ISR members (not the leader) that are not caught up
    progress = FollowerProgress(2, log_end_offset=8, last_caught_up_ms=T0)
    followers = {2: progress, 3: FollowerProgress(3, log_end_offset=10, last_caught_up_ms=T0)}
    assert out_of_sync(followers, (1, 2, 3), 1, 10, T0 + LAG_MS, LAG_MS) == []
    assert out_of_sync(followers, (1, 2, 3), 1, 10, T0 + LAG_MS + 1, LAG_MS) == [2]


def test_isr_member_without_progress_is_out_of_sync():
    # Partition.isFollowerOutOfSync: getReplica(id).fold(true)(...): no Replica means out of sync
    followers = {2: FollowerProgress(2, log_end_offset=10)}
    assert out_of_sync(followers, (1, 2, 3), 1, 10, T0, LAG_MS) == [3]


def test_may_join_isr_needs_high_watermark_and_leader_epoch_start():
    # Partition.isFollowerInSync: follower LEO >= leader HW and >= leaderEpochStartOffset; lag time
    # plays no part
    at = FollowerProgress(2, log_end_offset=5, last_caught_up_ms=0)
    assert may_join_isr(at, high_watermark=5, leader_epoch_start_offset=5)
    assert not may_join_isr(at, high_watermark=6, leader_epoch_start_offset=0)
    assert not may_join_isr(at, high_watermark=3, leader_epoch_start_offset=6)
    assert not may_join_isr(FollowerProgress(2), high_watermark=0, leader_epoch_start_offset=0)


def test_new_leader_knows_nothing_of_its_followers():
    # Replica.resetReplicaState(isNewLeader=true): LEO, log start and lastFetchLeaderLogEndOffset
    # unknown, no broker epoch; lastCaughtUpTimeMs = now for ISR members, else 0
    view = new_leader_view([2, 3], isr=(1, 2), now_ms=T0)
    assert view[2] == FollowerProgress(2, last_caught_up_ms=T0)
    assert view[3] == FollowerProgress(3, last_caught_up_ms=0)
    assert view[2].log_end_offset == view[2].last_fetch_leader_end_offset == UNKNOWN_OFFSET


def test_reelected_leader_keeps_its_followers_offsets():
    # Partition.makeLeader at a new leader epoch while already leader: Replica.resetReplicaState
    # (isNewLeader=false) keeps log start, LEO and broker epoch; lastFetchLeaderLogEndOffset = the
    # leader's LEO; lastFetchTimeMs and lastCaughtUpTimeMs = now if in the ISR, else 0
    leadership = Leadership(1)
    leadership.apply(registration(1, (1, 2, 3), (1, 2, 3), 1, 1), log_end_offset=0, now_ms=T0)
    caught_up_fetch(leadership, 2, T0 + 5)
    later = T0 + 1000
    assert leadership.apply(registration(1, (1, 2, 3), (1, 2), 2, 2), log_end_offset=4, now_ms=later)
    kept = leadership.followers[2]
    assert (kept.log_end_offset, kept.log_start_offset, kept.broker_epoch) == (0, 0, 7)
    assert kept.last_fetch_leader_end_offset == 4
    assert kept.last_fetch_ms == kept.last_caught_up_ms == later
    dropped = leadership.followers[3]
    assert (dropped.last_fetch_ms, dropped.last_caught_up_ms) == (0, 0)
    assert leadership.epoch_start_offset == 4


def test_registration_older_than_the_partition_epoch_is_skipped():
    # Partition.makeLeader / makeFollower: partitionEpoch < current -> change nothing (the partition
    # epoch may have moved ahead of the image by an AlterPartition answer)
    leadership = Leadership(1)
    leadership.apply(registration(1, (1, 2), (1,), 1, 1), log_end_offset=0, now_ms=T0)
    assert caught_up_fetch(leadership, 2, T0) is not None  # an expansion to (1, 2)
    leadership.committed((1, 2), leader_epoch=1, partition_epoch=2)
    assert not leadership.apply(registration(1, (1, 2, 3), (1,), 1, 1), log_end_offset=0, now_ms=T0)
    assert (leadership.isr, leadership.replicas, leadership.partition_epoch) == ((1, 2), (1, 2), 2)
