"""PartitionRegistration.merge and PartitionChangeBuilder, pinned rule by rule against Kafka's source
(metadata/src/main/java/org/apache/kafka/{metadata/PartitionRegistration,controller/PartitionChangeBuilder}.java)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kconform.codecs.metadata_records import PartitionChangeRecord
from kconform.reference_broker.cluster_metadata import NO_LEADER, NO_LEADER_CHANGE, LeaderRecoveryState
from kconform.reference_broker.controller.partition_change import (
    Election,
    PartitionChange,
    build_partition_change,
)

from .cluster import TOPIC_ID, partition

RECOVERING, RECOVERED = LeaderRecoveryState.RECOVERING, LeaderRecoveryState.RECOVERED


def alive(*brokers):
    return lambda b: b in brokers


ANY = alive(1, 2, 3, 4, 5)


def build(p, may_lead=ANY, **targets):
    return build_partition_change(PartitionChange(TOPIC_ID, p, may_lead, **targets))


def change(**fields) -> PartitionChangeRecord:
    return PartitionChangeRecord(partition_id=0, topic_id=TOPIC_ID, **fields)


# ---- PartitionRegistration.merge -------------------------------------------------------------------


def test_merge_named_leader_bumps_leader_epoch_even_when_unchanged():
    """PartitionRegistration.merge: any leader other than NO_LEADER_CHANGE bumps leaderEpoch."""
    after = partition([1, 2, 3]).merge(change(leader=1))
    assert (after.leader, after.leader_epoch, after.partition_epoch) == (1, 6, 10)


def test_merge_without_leader_keeps_leader_epoch_and_moves_partition_epoch():
    """PartitionRegistration.merge: no leader change keeps leaderEpoch; partitionEpoch is always + 1."""
    after = partition([1, 2, 3]).merge(change(isr=[1, 2]))
    assert (after.isr, after.leader, after.leader_epoch, after.partition_epoch) == ((1, 2), 1, 5, 10)


def test_merge_null_fields_keep_current_values():
    """PartitionRegistration.merge: a null replicas/adding/removing/isr and NO_CHANGE recovery keep ours."""
    before = partition([1, 2, 3, 4], adding_replicas=(4,), removing_replicas=(1,), leader_recovery_state=1)
    after = before.merge(change())
    assert after == before.__class__(0, (1, 2, 3, 4), (1, 2, 3, 4), 1, 5, 10, (1,), (4,), RECOVERING)


@given(
    leader=st.sampled_from([NO_LEADER_CHANGE, NO_LEADER, 1, 2]),
    isr=st.none() | st.lists(st.integers(1, 3), min_size=1, max_size=3, unique=True),
)
def test_merge_epochs_for_any_change(leader, isr):
    """PartitionRegistration.merge: leaderEpoch + 1 exactly when a leader is named; partitionEpoch + 1."""
    after = partition([1, 2, 3]).merge(change(leader=leader, isr=isr))
    assert after.partition_epoch == 10
    assert after.leader_epoch == (5 if leader == NO_LEADER_CHANGE else 6)
    assert after.leader == (1 if leader == NO_LEADER_CHANGE else leader)


# ---- elections -----------------------------------------------------------------------------------


def test_preferred_election_takes_first_replica_when_in_isr_and_acceptable():
    """PartitionChangeBuilder.electPreferredLeader: targetReplicas.get(0) if isValidNewLeader."""
    record = build(partition([1, 2, 3], leader=2), election=Election.PREFERRED)
    assert (record.leader, record.isr) == (1, None)


def test_preferred_election_keeps_valid_current_leader_when_preferred_cannot_lead():
    """PartitionChangeBuilder.electPreferredLeader: the current leader stays when it is still valid."""
    assert build(partition([1, 2, 3], [2, 3], leader=3), election=Election.PREFERRED) is None


def test_preferred_election_is_never_unclean():
    """PartitionChangeBuilder.electPreferredLeader: no unclean branch, whatever the topic allows."""
    p = partition([1, 2, 3], [3], leader=NO_LEADER)
    assert build(p, alive(1, 2), election=Election.PREFERRED, unclean_allowed=True) is None


def test_online_election_keeps_current_valid_leader_over_preferred():
    """PartitionChangeBuilder.electAnyLeader: a valid current leader is kept (no change, no record)."""
    assert build(partition([1, 2, 3], leader=3)) is None


def test_online_election_takes_first_isr_member_in_replica_order():
    """PartitionChangeBuilder.electAnyLeader: the first of targetReplicas that is valid, not ISR order."""
    record = build(partition([1, 2, 3], [3, 2, 1], leader=1), alive(2, 3), target_isr=[3, 2])
    assert (record.leader, record.isr) == (2, [3, 2])


def test_unclean_election_only_when_enabled():
    """PartitionChangeBuilder.electAnyLeader: without Election.UNCLEAN no leader outside the ISR."""
    p = partition([1, 2, 3], [1], leader=1)
    record = build(p, alive(2, 3), target_isr=[])
    assert (record.leader, record.isr, record.leader_recovery_state) == (NO_LEADER, None, -1)


def test_unclean_election_sets_isr_to_leader_and_recovering():
    """PartitionChangeBuilder.tryElection: unclean -> ISR = [leader], leaderRecoveryState RECOVERING."""
    p = partition([1, 2, 3], [1], leader=1)
    record = build(p, alive(2, 3), target_isr=[], unclean_allowed=True)
    assert (record.leader, record.isr, record.leader_recovery_state) == (2, [2], RECOVERING)
    after = p.merge(record)
    assert (after.leader, after.isr, after.leader_epoch, after.leader_recovery_state) == (
        2,
        (2,),
        6,
        RECOVERING,
    )


def test_explicit_unclean_election_prefers_isr_member():
    """PartitionChangeBuilder.electAnyLeader: UNCLEAN still takes a valid ISR member first."""
    p = partition([1, 2, 3], [3], leader=NO_LEADER)
    record = build(p, alive(2, 3), election=Election.UNCLEAN)
    assert (record.leader, record.isr, record.leader_recovery_state) == (3, None, -1)


def test_unclean_election_of_recovering_partition_does_not_rewrite_state():
    """PartitionChangeBuilder.tryElection: RECOVERING is set only if not already RECOVERING."""
    p = partition([1, 2, 3], [1], leader=NO_LEADER, leader_recovery_state=RECOVERING)
    record = build(p, alive(3), election=Election.UNCLEAN)
    assert (record.leader, record.isr, record.leader_recovery_state) == (3, [3], -1)


def test_no_acceptable_leader_leaves_partition_leaderless_and_isr_with_last_member():
    """PartitionChangeBuilder.build: an empty target ISR is not written without ELR; leader -> -1."""
    record = build(partition([1, 2, 3], [2], leader=2), alive(1, 3), target_isr=[])
    assert (record.leader, record.isr) == (NO_LEADER, None)
    after = partition([1, 2, 3], [2], leader=2).merge(record)
    assert (after.leader, after.isr, after.leader_epoch) == (NO_LEADER, (2,), 6)


def test_leaderless_partition_elects_returning_last_isr_member():
    """PartitionChangeBuilder.electAnyLeader: the kept ISR member leads cleanly when acceptable again."""
    record = build(partition([1, 2, 3], [2], leader=NO_LEADER), alive(2))
    assert (record.leader, record.isr, record.leader_recovery_state) == (2, None, -1)


def test_isr_shrink_keeps_leader_epoch_from_metadata_version_3_6():
    """PartitionChangeBuilder.triggerLeaderEpochBumpForIsrShrinkIfNeeded: no bump from 3.6 (KAFKA-15021)."""
    record = build(partition([1, 2, 3], leader=1), target_isr=[1, 3])
    assert (record.leader, record.isr) == (NO_LEADER_CHANGE, [1, 3])


def test_isr_expansion_writes_only_isr():
    """PartitionChangeBuilder.build: setIsr when the target ISR differs from the current one."""
    record = build(partition([1, 2, 3], [1], leader=1), target_isr=[1, 2])
    assert record == change(isr=[1, 2])


def test_no_change_builds_no_record():
    """PartitionChangeBuilder.changeRecordIsNoOp: an unchanged partition gives Optional.empty()."""
    assert build(partition([1, 2, 3], leader=1), target_isr=[1, 2, 3], target_replicas=[1, 2, 3]) is None


def test_target_leader_recovery_state_is_written_when_different():
    """PartitionChangeBuilder.build: setLeaderRecoveryState when the target differs."""
    p = partition([1, 2, 3], [1], leader=1, leader_recovery_state=RECOVERING)
    assert build(p, target_leader_recovery_state=RECOVERED) == change(leader_recovery_state=RECOVERED)
    assert build(p, target_leader_recovery_state=RECOVERING) is None


# ---- reassignment -------------------------------------------------------------------------------

REASSIGNING = dict(adding_replicas=(4,), removing_replicas=(1,))


def test_reassignment_completes_when_every_target_replica_is_in_sync():
    """PartitionReassignmentReplicas.maybeCompleteReassignment: removing replicas leave replicas and ISR."""
    p = partition([2, 3, 4, 1], [2, 3, 1], leader=2, **REASSIGNING)
    record = build(p, target_isr=[2, 3, 1, 4])
    assert (record.replicas, record.isr, record.adding_replicas, record.removing_replicas) == (
        [2, 3, 4],
        [2, 3, 4],
        [],
        [],
    )


def test_reassignment_removing_a_replica_bumps_leader_epoch_with_same_leader():
    """PartitionChangeBuilder.triggerLeaderEpochBumpForReplicaReassignmentIfNeeded: leader named again."""
    p = partition([2, 3, 4, 1], [2, 3, 1], leader=2, **REASSIGNING)
    record = build(p, target_isr=[2, 3, 1, 4])
    assert record.leader == 2 and p.merge(record).leader_epoch == 6


def test_reassignment_completion_elects_new_leader_when_leader_is_removed():
    """PartitionChangeBuilder.build: completeReassignmentIfNeeded runs before the election."""
    p = partition([2, 3, 4, 1], [1, 2, 3], leader=1, **REASSIGNING)
    record = build(p, target_isr=[1, 2, 3, 4])
    assert (record.leader, record.isr, record.replicas) == (2, [2, 3, 4], [2, 3, 4])


def test_reassignment_waits_for_adding_replica():
    """PartitionReassignmentReplicas.maybeCompleteReassignment: not while a target is out of sync."""
    p = partition([2, 3, 4, 1], [2, 3, 1], leader=2, **REASSIGNING)
    assert build(p, target_isr=[2, 1]) == change(isr=[2, 1])


def test_reassignment_needs_every_remaining_replica_in_isr_not_only_adding_ones():
    """PartitionReassignmentReplicas.maybeCompleteReassignment: newTargetIsr.containsAll(replicas)."""
    p = partition([2, 3, 4, 1], [2, 1], leader=2, **REASSIGNING)
    assert build(p, target_isr=[2, 1, 4]) == change(isr=[2, 1, 4])


def test_reassignment_does_not_complete_into_an_empty_isr():
    """PartitionReassignmentReplicas.maybeCompleteReassignment: an ISR of only removing replicas waits."""
    p = partition([4, 1], [1], leader=1, adding_replicas=(4,), removing_replicas=(1,))
    assert build(p) is None


# ---- properties ----------------------------------------------------------------------------------


@st.composite
def partitions_and_targets(draw):
    replicas = draw(st.lists(st.integers(1, 5), min_size=1, max_size=4, unique=True))
    isr = draw(st.lists(st.sampled_from(replicas), min_size=1, unique=True))
    leader = draw(st.sampled_from([*isr, NO_LEADER]))
    target_isr = draw(st.lists(st.sampled_from(isr), unique=True))
    acceptable = draw(st.sets(st.integers(1, 5)))
    election = draw(st.sampled_from(list(Election)))
    unclean = draw(st.booleans())
    return partition(replicas, isr, leader), target_isr, acceptable, election, unclean


@given(partitions_and_targets())
def test_elected_leader_is_acceptable_and_in_sync(case):
    """PartitionChangeBuilder.build: the leader is -1 or an acceptable ISR member; the ISR never empties."""
    p, target_isr, acceptable, election, unclean = case
    record = build(p, alive(*acceptable), target_isr=target_isr, election=election, unclean_allowed=unclean)
    after = p if record is None else p.merge(record)
    assert after.isr
    if after.leader != p.leader:
        assert after.leader == NO_LEADER or (after.leader in after.isr and after.leader in acceptable)
    if record is not None and record.isr == [record.leader] and record.leader not in target_isr:
        assert record.leader_recovery_state == RECOVERING  # only an unclean election leaves the ISR
        assert unclean or election is Election.UNCLEAN
    if p.leader in target_isr and p.leader in acceptable and election is not Election.PREFERRED:
        assert after.leader == p.leader and after.leader_epoch == p.leader_epoch
