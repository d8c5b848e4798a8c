"""How a leader moves its high watermark (``follower_progress.high_watermark`` and
``Partition._advance_high_watermark``), each test pinned to the rule of Kafka 4.1's
``Partition.maybeIncrementLeaderHW`` it names."""

from __future__ import annotations

from kconform.reference_broker.replication.follower_progress import FollowerProgress, high_watermark

from ...support.replication_host import (
    BROKER_EPOCH,
    LAG_MS,
    START_MS,
    apply,
    batch,
    registration,
    replica,
    replicate_once,
)

T0 = START_MS


def eligible(broker: int, broker_epoch: int = -1) -> bool:
    return broker != 9 and broker_epoch in (-1, BROKER_EPOCH)  # broker 9 is fenced


def hw(followers, maximal_isr, *, current=0, leader_end=10, now=T0) -> int:
    by_id = {p.broker_id: p for p in followers}
    return high_watermark(
        current, leader_end, by_id, maximal_isr, now_ms=now, lag_ms=LAG_MS, isr_eligible=eligible
    )


def behind(broker: int, log_end_offset: int, *, caught_up_ms: int = 0, epoch: int = BROKER_EPOCH):
    return FollowerProgress(
        broker, log_end_offset=log_end_offset, last_caught_up_ms=caught_up_ms, broker_epoch=epoch
    )


def test_high_watermark_is_the_smallest_log_end_of_the_maximal_isr():
    # maybeIncrementLeaderHW: start at the leader's LEO, lower it to each maximal-ISR member's LEO
    assert hw([behind(2, 7), behind(3, 4)], (1, 2, 3)) == 4
    assert hw([behind(2, 7), behind(3, 4)], (1, 2)) == 7  # 3 is neither in the ISR nor caught up
    assert hw([], (1,)) == 10


def test_caught_up_eligible_follower_outside_isr_holds_high_watermark():
    # maybeIncrementLeaderHW: shouldWaitForReplicaToJoinIsr = isCaughtUp && isReplicaIsrEligible
    assert hw([behind(2, 6, caught_up_ms=T0)], (1,)) == 6
    assert hw([behind(2, 6, caught_up_ms=T0 - LAG_MS - 1)], (1,)) == 10  # not caught up
    assert hw([behind(9, 6, caught_up_ms=T0)], (1,)) == 10  # fenced: not eligible


def test_follower_fetching_at_an_old_broker_epoch_does_not_hold_high_watermark():
    # Partition.isBrokerEpochIsrEligible: the epoch of its last fetch is -1 or the registered one
    assert hw([behind(2, 6, caught_up_ms=T0, epoch=-1)], (1,)) == 6
    assert hw([behind(2, 6, caught_up_ms=T0, epoch=BROKER_EPOCH - 1)], (1,)) == 10


def test_isr_member_with_unknown_log_end_holds_high_watermark():
    # Replica.resetReplicaState: a new leader's followers have LEO UNKNOWN (-1); an ISR member holds
    # the HW where it is until its first fetch (UnifiedLog.maybeIncrementHighWatermark moves up only)
    assert hw([FollowerProgress(2, last_caught_up_ms=T0)], (1, 2), current=3) == 3


def test_high_watermark_never_decreases():
    # UnifiedLog.maybeIncrementHighWatermark: only an increase is applied
    assert hw([behind(2, 2)], (1, 2), current=5) == 5


def test_pending_isr_change_counts_as_maximal_isr(tmp_path):
    # PendingExpandIsr.maximalIsr = isr + the new member; PendingShrinkIsr.maximalIsr = isr (the
    # replicas being removed still hold the HW until the controller commits the change)
    leader, host = replica(tmp_path, 1)
    follower, follower_host = replica(tmp_path, 3, clock=host.clock)
    apply(leader, host, registration(1, (1, 2, 3), (1, 2), 1, 1))
    apply(follower, follower_host, registration(1, (1, 2, 3), (1, 2), 1, 1))
    replicate_once(leader, follower)  # at the leader's end: may join
    assert (leader.leadership.isr, leader.leadership.maximal_isr) == ((1, 2), (1, 2, 3))
    leader.isr_committed((1, 2, 3), 1, 2)
    leader.append_internal(batch("a"))
    host.clock.advance(LAG_MS + 1)
    leader.maybe_shrink_isr()
    assert host.replication.proposals[-1].isr == (1,)
    assert (leader.leadership.isr, leader.leadership.maximal_isr) == ((1, 2, 3), (1, 2, 3))
    assert leader.high_watermark == 0
    leader.isr_committed((1,), 1, 3)
    assert leader.high_watermark == 1


def test_high_watermark_does_not_move_while_committed_isr_under_min_isr(tmp_path):
    # maybeIncrementLeaderHW: if (isUnderMinIsr) return false; isUnderMinIsr uses the committed ISR,
    # so a follower being added (the maximal ISR) does not count
    leader, host = replica(tmp_path, 1, min_isr=2)
    follower, follower_host = replica(tmp_path, 2, clock=host.clock)
    info = registration(1, (1, 2, 3), (1,), 1, 1)
    apply(leader, host, info)
    apply(follower, follower_host, registration(1, (1, 2, 3), (1,), 1, 1))
    leader.append_internal(batch("a", "b"))
    replicate_once(leader, follower)
    replicate_once(leader, follower)  # at the leader's end: an expansion to (1, 2) is pending
    assert host.replication.proposals[-1].isr == (1, 2) and leader.leadership.maximal_isr == (1, 2)
    assert (leader.log_end_offset, leader.high_watermark) == (2, 0)
    leader.isr_committed((1, 2), 1, 2)
    assert leader.high_watermark == 2


def test_effective_min_isr_is_capped_at_the_replica_count(tmp_path):
    # Partition.effectiveMinIsr = min(min.insync.replicas, replicas): one replica, min.insync 3
    leader, host = replica(tmp_path, 1, min_isr=3)
    apply(leader, host, registration(1, (1,), (1,), 1, 1))
    assert not leader.under_min_isr()
    leader.append_internal(batch("a"))
    assert leader.high_watermark == 1
