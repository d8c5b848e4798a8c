"""A partition leading on a broker with a fake host (``support/replication_host.py``): becoming leader,
the acks=all checks before and after an append, and the ISR changes it asks the controller for, each
test pinned to the rule of Kafka 4.1's ``Partition`` (or ``DelayedProduce``) it names."""

from __future__ import annotations

import asyncio

import pytest

from kconform.codecs.errors import Errors
from kconform.reference_broker.partition import PartitionError

from ...support.replication_host import LAG_MS, apply, batch, registration, replica, replicate_once


def produce(partition, *values: str, acks: int = -1) -> int:
    """Append as a producer would; returns the offset the append must be replicated to."""
    records = batch(*values)
    result = partition.append_records(records, produce_version=9, required_acks=acks, transactional_id=None)
    return result.last_offset + 1


def trio(tmp_path, *, min_isr: int = 1, isr=(1, 2, 3)):
    """Broker 1 leading orders-0 at leader epoch 1 over replicas 1, 2, 3; brokers 2 and 3 following."""
    leader, host = replica(tmp_path, 1, min_isr=min_isr)
    info = registration(1, (1, 2, 3), isr, 1, 1)
    apply(leader, host, info)
    followers = []
    for broker in (2, 3):
        follower, follower_host = replica(tmp_path, broker, clock=host.clock)
        apply(follower, follower_host, info)
        followers.append(follower)
    return leader, host, followers


def test_becoming_leader_starts_its_epoch_at_log_end(tmp_path):
    # Partition.makeLeader: isNewLeaderEpoch -> leaderEpochStartOffset = LEO and
    # leaderLog.assignEpochStartOffset(newEpoch, LEO), though nothing is written in it yet
    leader, host = replica(tmp_path, 1)
    apply(leader, host, registration(1, (1,), (1,), 1, 1))
    leader.append_internal(batch("a", "b", "c"))
    assert apply(leader, host, registration(1, (1,), (1,), 4, 2))
    assert leader.leadership.epoch_start_offset == 3
    assert [(e.epoch, e.start_offset) for e in leader.log.epoch_entries] == [(1, 0), (4, 3)]
    assert leader.log.end_offset_for_epoch(4) == (4, 3)


def test_single_replica_leader_high_watermark_follows_log_end(tmp_path):
    # Partition.appendRecordsToLeader -> maybeIncrementLeaderHW: no other replica holds it back
    leader, host = replica(tmp_path, 1)
    apply(leader, host, registration(1, (1,), (1,), 1, 1))
    assert produce(leader, "a", "b") == 2
    assert leader.high_watermark == leader.log_end_offset == 2


def test_acks_all_refused_before_append_while_isr_under_min_isr(tmp_path):
    # Partition.appendRecordsToLeader: committed isr.size < effectiveMinIsr && requiredAcks == -1 ->
    # NotEnoughReplicasException, nothing appended; acks=1 appends
    leader, _, _ = trio(tmp_path, min_isr=2, isr=(1,))
    with pytest.raises(PartitionError) as refused:
        produce(leader, "a", acks=-1)
    assert refused.value.code == Errors.NOT_ENOUGH_REPLICAS
    assert leader.log_end_offset == 0
    assert produce(leader, "a", acks=1) == 1


def test_acks_all_answered_once_followers_fetch_past_the_append(tmp_path):
    # DelayedProduce.tryComplete -> Partition.checkEnoughReplicasReachOffset: HW >= requiredOffset and
    # effectiveMinIsr <= maximalIsr.size -> (true, NONE)
    leader, _, (second, third) = trio(tmp_path, min_isr=2)

    async def scenario():
        required = produce(leader, "a")
        waiter = asyncio.create_task(leader.wait_for_replication(required, 5.0))
        replicate_once(leader, second)
        replicate_once(leader, third)  # both now hold the record, but the leader has not seen it
        await asyncio.sleep(0)
        assert not waiter.done() and leader.high_watermark == 0
        replicate_once(leader, second)
        replicate_once(leader, third)
        return await waiter

    assert asyncio.run(scenario()) == Errors.NONE


def test_acks_all_not_enough_replicas_after_append_when_isr_shrank(tmp_path):
    # Partition.checkEnoughReplicasReachOffset: HW >= requiredOffset but maximalIsr.size <
    # effectiveMinIsr -> (true, NOT_ENOUGH_REPLICAS_AFTER_APPEND): the records are written, yet fewer
    # replicas than min.insync.replicas are known to hold them
    leader, host, (second, third) = trio(tmp_path, min_isr=2)

    async def scenario():
        required = produce(leader, "a")
        waiter = asyncio.create_task(leader.wait_for_replication(required, 5.0))
        await asyncio.sleep(0)
        host.clock.advance(LAG_MS + 1)
        leader.maybe_shrink_isr()  # neither follower has fetched: ask for ISR (1,)
        replicate_once(leader, second)
        replicate_once(leader, third)
        replicate_once(leader, second)
        replicate_once(leader, third)
        assert leader.high_watermark == required  # the waiter is woken but has not run yet
        leader.isr_committed((1,), 1, 2)
        return await waiter

    assert asyncio.run(scenario()) == Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND


def test_acks_all_not_leader_when_partition_becomes_follower_while_waiting(tmp_path):
    # Partition.checkEnoughReplicasReachOffset: not leader -> (false, NOT_LEADER_OR_FOLLOWER); the
    # replica manager completes waiting produces when the partition becomes a follower
    leader, host, _ = trio(tmp_path)

    async def scenario():
        required = produce(leader, "a")
        waiter = asyncio.create_task(leader.wait_for_replication(required, 5.0))
        await asyncio.sleep(0)
        apply(leader, host, registration(2, (1, 2, 3), (2, 3), 2, 2))
        return await waiter

    assert asyncio.run(scenario()) == Errors.NOT_LEADER_OR_FOLLOWER


def test_acks_all_times_out_while_followers_lag(tmp_path):
    # DelayedProduce: a pending partition's error is preset to REQUEST_TIMED_OUT, answered on expiry
    leader, host, _ = trio(tmp_path)

    async def scenario():
        required = produce(leader, "a")
        waiter = asyncio.create_task(leader.wait_for_replication(required, 5.0))
        await asyncio.sleep(0)
        host.clock.advance(5_001)
        host.purgatory.notify(leader.watch_key)  # a wake-up after the deadline
        return await waiter

    assert asyncio.run(scenario()) == Errors.REQUEST_TIMED_OUT


def test_isr_expansion_proposed_when_follower_catches_up_one_at_a_time(tmp_path):
    # Partition.maybeExpandIsr: needsExpandIsr = canAddReplicaToIsr (no change in flight, not in the ISR,
    # eligible) && isFollowerInSync (LEO >= HW and >= leader epoch start) -> PendingExpandIsr
    leader, host, (second, third) = trio(tmp_path, isr=(1,))
    produce(leader, "a", "b")
    replicate_once(leader, second)  # fetched from 0: behind the HW (2)
    assert host.replication.proposals == []
    replicate_once(leader, second)  # fetched from 2
    replicate_once(leader, third)
    replicate_once(leader, third)  # caught up too, but one change is in flight
    [proposal] = host.replication.proposals
    assert (proposal.isr, proposal.leader_epoch, proposal.partition_epoch) == ((1, 2), 1, 1)
    leader.isr_committed((1, 2), 1, 2)
    assert leader.leadership.isr == (1, 2) and leader.leadership.partition_epoch == 2
    replicate_once(leader, third)
    assert [p.isr for p in host.replication.proposals] == [(1, 2), (1, 2, 3)]


def test_fenced_follower_is_not_added_to_isr(tmp_path):
    # Partition.isReplicaIsrEligible: not fenced, not shutting down, fetch at the registered epoch
    leader, host, (second, _) = trio(tmp_path, isr=(1,))
    host.replication.fenced.add(2)
    replicate_once(leader, second, replica_epoch=-1)
    assert host.replication.proposals == []


def test_isr_shrink_proposed_after_lag_time_without_catching_up(tmp_path):
    # Partition.maybeShrinkIsr / getOutOfSyncReplicas: ISR members not caught up for
    # replica.lag.time.max.ms; one at the leader's LEO is never dropped
    leader, host, (second, third) = trio(tmp_path)
    replicate_once(leader, third)  # at the leader's end (0)
    produce(leader, "a")
    replicate_once(leader, second)
    replicate_once(leader, second)  # at the leader's end (1); 3 is not
    host.clock.advance(LAG_MS)
    leader.maybe_shrink_isr()
    assert host.replication.proposals == []
    host.clock.advance(1)
    leader.maybe_shrink_isr()
    assert [p.isr for p in host.replication.proposals] == [(1, 2)]
    leader.maybe_shrink_isr()  # getOutOfSyncReplicas: nothing while a change is in flight
    assert len(host.replication.proposals) == 1
    leader.isr_committed((1, 2), 1, 2)
    assert leader.leadership.isr == (1, 2)


def test_answer_after_metadata_replaced_the_proposal_is_ignored(tmp_path):
    # Partition.submitAlterPartition: partitionState != proposedIsrState -> the answer is out of date
    leader, host, (second, _) = trio(tmp_path, isr=(1,))
    replicate_once(leader, second)  # proposes (1, 2)
    apply(leader, host, registration(1, (1, 2, 3), (1, 3), 1, 2))
    leader.isr_committed((1, 2), 1, 2)
    assert leader.leadership.isr == (1, 3) and leader.leadership.pending is None


def test_answer_for_another_leader_epoch_leaves_the_change_pending(tmp_path):
    # Partition.handleAlterPartitionUpdate: leaderEpoch != local or partitionEpoch < local -> ignored,
    # the state stays pending (no further ISR change) until metadata arrives
    leader, host, (second, third) = trio(tmp_path, isr=(1,))
    replicate_once(leader, second)
    proposal = host.replication.proposals[0]
    leader.isr_committed((1, 2), 2, 2)
    assert leader.leadership.isr == (1,) and leader.leadership.pending is proposal
    replicate_once(leader, third)
    assert host.replication.proposals == [proposal]
