"""AlterPartition against Kafka's ReplicationControlManager.alterPartition and validateAlterPartitionData
(metadata/src/main/java/org/apache/kafka/controller/ReplicationControlManager.java)."""

from __future__ import annotations

import uuid

from hypothesis import given
from hypothesis import strategies as st

from kconform.codecs.errors import Errors
from kconform.reference_broker.cluster_metadata import LeaderRecoveryState
from kconform.reference_broker.controller.alter_partition import alter_partition

from .cluster import TOPIC_ID, alter, image_of, partition, shut_down

RECOVERING = LeaderRecoveryState.RECOVERING


def cluster(**extra):
    """Brokers 1-4 at epochs 101-104; t-0 on 1, 2, 3 led by 1 at leader epoch 5, partition epoch 9."""
    p = extra.pop("p", None) or partition([1, 2, 3], leader=1)
    return image_of(brokers=(1, 2, 3, 4), topics={"t": [p]}, **extra)


def answer(image, request, version=3):
    records, response = alter_partition(image, request, version)
    assert response.error_code == Errors.NONE
    (topic,) = response.topics
    (result,) = topic.partitions
    return records, result


def code(image, request, version=3) -> int:
    records, result = answer(image, request, version)
    if result.error_code != Errors.NONE:
        assert records == []
    return result.error_code


def test_stale_sender_epoch_fails_whole_request():
    """ReplicationControlManager.alterPartition: clusterControl.checkBrokerEpoch first, for all topics."""
    records, response = alter_partition(cluster(), alter(1, 999, [1, 2]), 3)
    assert (records, response.error_code, response.topics) == ([], Errors.STALE_BROKER_EPOCH, [])
    records, response = alter_partition(cluster(), alter(9, 101, [1, 2]), 3)
    assert response.error_code == Errors.STALE_BROKER_EPOCH


def test_unknown_topic_id_from_version_2():
    """ReplicationControlManager.alterPartition: requestVersion > 1 looks topics up by id."""
    assert (
        code(cluster(), alter(1, 101, [1, 2], topic_id=uuid.UUID(int=7), version=2), 2)
        == Errors.UNKNOWN_TOPIC_ID
    )


def test_unknown_topic_name_before_version_2():
    """ReplicationControlManager.alterPartition: requestVersion <= 1 looks topics up by name."""
    request = alter(1, 101, [1, 2], name="nope", version=1)
    assert code(cluster(), request, 1) == Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert code(cluster(), alter(1, 101, [1, 2], topic_id=uuid.UUID(int=7), version=1), 1) == Errors.NONE


def test_unknown_partition():
    """validateAlterPartitionData: a null partition is UNKNOWN_TOPIC_OR_PARTITION."""
    assert code(cluster(), alter(1, 101, [1, 2], index=3)) == Errors.UNKNOWN_TOPIC_OR_PARTITION


def test_epochs_ahead_of_controller_are_not_controller():
    """validateAlterPartitionData: a higher leader or partition epoch means NOT_CONTROLLER."""
    assert code(cluster(), alter(1, 101, [1, 2], leader_epoch=6)) == Errors.NOT_CONTROLLER
    assert code(cluster(), alter(1, 101, [1, 2], partition_epoch=10)) == Errors.NOT_CONTROLLER


def test_older_leader_epoch_is_fenced_even_from_non_leader():
    """validateAlterPartitionData: FENCED_LEADER_EPOCH is checked before the sender is the leader."""
    assert code(cluster(), alter(2, 102, [1, 2], leader_epoch=4)) == Errors.FENCED_LEADER_EPOCH


def test_non_leader_is_invalid_request():
    """validateAlterPartitionData: brokerId != partition.leader -> INVALID_REQUEST."""
    assert code(cluster(), alter(2, 102, [1, 2])) == Errors.INVALID_REQUEST


def test_older_partition_epoch_is_invalid_update_version():
    """validateAlterPartitionData: a lower partition epoch -> INVALID_UPDATE_VERSION."""
    assert code(cluster(), alter(1, 101, [1, 2], partition_epoch=8)) == Errors.INVALID_UPDATE_VERSION


def test_isr_must_be_distinct_replicas_including_leader():
    """validateAlterPartitionData: Replicas.validateIsr and Replicas.contains(newIsr, leader)."""
    for isr in ([1, 4], [1, 2, 2], [2, 3], [1, -1]):
        assert code(cluster(), alter(1, 101, isr)) == Errors.INVALID_REQUEST, isr


def test_recovering_leader_rules():
    """validateAlterPartitionData: RECOVERING allows only the leader; RECOVERED never goes back."""
    assert code(cluster(), alter(1, 101, [1], recovery=RECOVERING)) == Errors.INVALID_REQUEST
    recovering = cluster(p=partition([1, 2, 3], [1], leader=1, leader_recovery_state=RECOVERING))
    assert code(recovering, alter(1, 101, [1, 2], recovery=RECOVERING)) == Errors.INVALID_REQUEST
    assert code(recovering, alter(1, 101, [1], recovery=RECOVERING)) == Errors.NONE


def test_fenced_or_shutting_down_member_is_ineligible():
    """ineligibleReplicasForIsr: not registered, in controlled shutdown or fenced -> INELIGIBLE_REPLICA."""
    assert code(cluster(fenced={2}), alter(1, 101, [1, 2])) == Errors.INELIGIBLE_REPLICA
    image = cluster()
    shut_down(image, 3)
    assert code(image, alter(1, 101, [1, 3])) == Errors.INELIGIBLE_REPLICA


def test_leader_is_checked_for_eligibility_like_the_others():
    """ineligibleReplicasForIsr: every BrokerState, the leader's own included."""
    image = cluster()
    shut_down(image, 1)
    assert code(image, alter(1, 101, [1, 2])) == Errors.INELIGIBLE_REPLICA


def test_version_3_broker_epochs_must_match_unless_minus_one():
    """ineligibleReplicasForIsr: brokerEpoch != -1 and != registration.epoch() -> INELIGIBLE_REPLICA."""
    assert code(cluster(), alter(1, 101, [1, 2], isr_epochs={2: 7})) == Errors.INELIGIBLE_REPLICA
    assert code(cluster(), alter(1, 101, [1, 2], isr_epochs={1: 101, 2: 102})) == Errors.NONE
    assert code(cluster(), alter(1, 101, [1, 2], isr_epochs={2: -1})) == Errors.NONE


def test_ineligible_before_version_2_is_operation_not_attempted():
    """validateAlterPartitionData: requestApiVersion <= 1 answers OPERATION_NOT_ATTEMPTED instead."""
    request = alter(1, 101, [1, 2], version=1)
    assert code(cluster(fenced={2}), request, 1) == Errors.OPERATION_NOT_ATTEMPTED


def test_accepted_shrink_echoes_partition_with_new_partition_epoch():
    """ReplicationControlManager.alterPartition: the merged registration is the answer."""
    records, result = answer(cluster(), alter(1, 101, [1, 3]))
    assert [r.isr for r in records] == [[1, 3]] and records[0].leader == -2
    assert (result.error_code, result.leader_id, result.leader_epoch, result.isr, result.partition_epoch) == (
        Errors.NONE,
        1,
        5,
        [1, 3],
        10,
    )


def test_unchanged_isr_writes_nothing_and_echoes_current_state():
    """PartitionChangeBuilder.build returns empty: no record, the partition as it stands."""
    records, result = answer(cluster(), alter(1, 101, [1, 2, 3]))
    assert records == [] and (result.isr, result.leader_epoch, result.partition_epoch) == ([1, 2, 3], 5, 9)


def test_recovered_leader_clears_recovering_state():
    """PartitionChangeBuilder.setTargetLeaderRecoveryState from the request."""
    image = cluster(p=partition([1, 2, 3], [1], leader=1, leader_recovery_state=RECOVERING))
    records, result = answer(image, alter(1, 101, [1, 2]))
    assert (records[0].isr, records[0].leader_recovery_state) == ([1, 2], 0)
    assert result.leader_recovery_state == 0


def test_reassignment_completion_moving_leader_is_new_leader_elected():
    """ReplicationControlManager.alterPartition: change.leader() != brokerId -> NEW_LEADER_ELECTED (v2+)."""
    p = partition([2, 3, 4, 1], [1, 2, 3], leader=1, adding_replicas=(4,), removing_replicas=(1,))
    records, result = answer(cluster(p=p), alter(1, 101, [1, 2, 3, 4]))
    assert result.error_code == Errors.NEW_LEADER_ELECTED
    assert (records[0].leader, records[0].replicas, records[0].isr) == (2, [2, 3, 4], [2, 3, 4])
    _, old = answer(cluster(p=p), alter(1, 101, [1, 2, 3, 4], version=1), 1)
    assert old.error_code == Errors.FENCED_LEADER_EPOCH


def test_reassignment_completion_keeping_leader_succeeds_with_new_leader_epoch():
    """triggerLeaderEpochBumpForReplicaReassignmentIfNeeded: the same leader named again is success."""
    p = partition([2, 3, 4, 1], [2, 3, 1], leader=2, adding_replicas=(4,), removing_replicas=(1,))
    records, result = answer(cluster(p=p), alter(2, 102, [2, 3, 1, 4]))
    assert (result.error_code, result.leader_id, result.leader_epoch, result.isr) == (
        Errors.NONE,
        2,
        6,
        [2, 3, 4],
    )


def test_each_topic_answers_with_the_names_and_ids_it_was_asked_with():
    """ReplicationControlManager.alterPartition: TopicData echoes topicName and topicId."""
    _, response = alter_partition(cluster(), alter(1, 101, [1, 2], name="x"), 3)
    assert (response.topics[0].topic_name, response.topics[0].topic_id) == ("x", TOPIC_ID)


# Kafka's order of the per-partition checks, each with the change to a valid request that breaks it.
ORDER = [
    ("leader_epoch_ahead", Errors.NOT_CONTROLLER),
    ("leader_epoch_behind", Errors.FENCED_LEADER_EPOCH),
    ("not_leader", Errors.INVALID_REQUEST),
    ("partition_epoch_behind", Errors.INVALID_UPDATE_VERSION),
    ("not_a_replica", Errors.INVALID_REQUEST),
    ("ineligible", Errors.INELIGIBLE_REPLICA),
]


@given(
    st.sets(st.sampled_from([name for name, _ in ORDER]), min_size=1).filter(
        lambda broken: not {"leader_epoch_ahead", "leader_epoch_behind"} <= broken  # one epoch, one way
    )
)
def test_first_broken_rule_decides_the_error(broken):
    """validateAlterPartitionData: the checks run in Kafka's order; the first one broken answers."""
    image = cluster(fenced={3})
    sender = 2 if "not_leader" in broken else 1
    isr = [1, 2] + ([4] if "not_a_replica" in broken else []) + ([3] if "ineligible" in broken else [])
    leader_epoch = 4 if "leader_epoch_behind" in broken else 6 if "leader_epoch_ahead" in broken else 5
    partition_epoch = 8 if "partition_epoch_behind" in broken else 9
    request = alter(sender, 100 + sender, isr, leader_epoch=leader_epoch, partition_epoch=partition_epoch)
    expected = next(error for name, error in ORDER if name in broken)
    assert code(image, request) == expected
