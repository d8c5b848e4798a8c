"""AlterPartition (key 56): a partition leader asks to change its ISR (or its leader recovery state).

Kafka's rules (``ReplicationControlManager.alterPartition`` and ``validateAlterPartitionData``), in
order: a broker epoch that is not the sender's registered one is STALE_BROKER_EPOCH for the whole
request. Per topic, an unknown one is UNKNOWN_TOPIC_ID (v2+, by id) or UNKNOWN_TOPIC_OR_PARTITION (v0-1,
by name) for each of its partitions. Per partition (v0-2 ISRs count as broker epoch -1):
1. unknown partition: UNKNOWN_TOPIC_OR_PARTITION;
2. a leader or partition epoch above the controller's: NOT_CONTROLLER (this controller is behind);
3. a lower leader epoch: FENCED_LEADER_EPOCH;
4. a sender that is not the leader: INVALID_REQUEST;
5. a lower partition epoch: INVALID_UPDATE_VERSION;
6. an ISR with a non-replica, a duplicate or a negative id, or without the leader: INVALID_REQUEST;
7. a RECOVERING leader with more than itself in the ISR, or RECOVERED going back to RECOVERING:
   INVALID_REQUEST;
8. an ISR member not registered, in controlled shutdown, fenced, or (v3) whose broker epoch is not its
   registered one: INELIGIBLE_REPLICA (OPERATION_NOT_ATTEMPTED before v2).
An accepted change is built like any other (UNCLEAN where the topic allows it, the request's leader
recovery state as target); if it completes a reassignment that moves the leadership away the answer
is NEW_LEADER_ELECTED (FENCED_LEADER_EPOCH before v2), else the partition as it now stands."""

from __future__ import annotations

from kconform.codecs.errors import Errors
from kconform.codecs.messages import AlterPartitionResponse

from ..cluster_metadata import NO_LEADER_CHANGE, ClusterImage, LeaderRecoveryState, PartitionInfo
from .brokers import Refused, check_broker_epoch
from .partition_change import PartitionChange, build_partition_change
from .partition_updates import leader_may_be, unclean_allowed

__all__ = ["alter_partition"]

PartitionResult = AlterPartitionResponse.PartitionData


def _error(index: int, code: int) -> PartitionResult:
    return PartitionResult(partition_index=index, error_code=code)


def _valid_isr(replicas: tuple[int, ...], isr: list[int]) -> bool:
    """``Replicas.validateIsr``: members are distinct, non-negative replicas."""
    return len(set(isr)) == len(isr) and all(b >= 0 and b in replicas for b in isr)


def _ineligible(image: ClusterImage, members: list[tuple[int, int]]) -> bool:
    """``ineligibleReplicasForIsr``: every (broker, epoch) must be registered, active and, when the epoch
    is not -1, at that epoch; the leader is checked like the others."""
    for broker_id, epoch in members:
        broker = image.brokers.get(broker_id)
        if broker is None or broker.in_controlled_shutdown or broker.fenced:
            return True
        if epoch != -1 and epoch != broker.epoch:
            return True
    return False


def _validate(image: ClusterImage, partition: PartitionInfo, sender: int, data, members, version) -> int:
    if data.leader_epoch > partition.leader_epoch or data.partition_epoch > partition.partition_epoch:
        return Errors.NOT_CONTROLLER
    if data.leader_epoch < partition.leader_epoch:
        return Errors.FENCED_LEADER_EPOCH
    if sender != partition.leader:
        return Errors.INVALID_REQUEST
    if data.partition_epoch < partition.partition_epoch:
        return Errors.INVALID_UPDATE_VERSION
    new_isr = [broker_id for broker_id, _ in members]
    if not _valid_isr(partition.replicas, new_isr) or partition.leader not in new_isr:
        return Errors.INVALID_REQUEST
    recovering = data.leader_recovery_state == LeaderRecoveryState.RECOVERING
    if recovering and len(new_isr) > 1:
        return Errors.INVALID_REQUEST
    if recovering and partition.leader_recovery_state == LeaderRecoveryState.RECOVERED:
        return Errors.INVALID_REQUEST
    if _ineligible(image, members):
        return Errors.INELIGIBLE_REPLICA if version > 1 else Errors.OPERATION_NOT_ATTEMPTED
    return Errors.NONE


def alter_partition(
    image: ClusterImage, request, version: int, *, unclean_default: bool = False
) -> tuple[list, AlterPartitionResponse]:
    """(records, response). ``unclean_default``: the static unclean.leader.election.enable."""
    try:
        check_broker_epoch(image, request.broker_id, request.broker_epoch)
    except Refused as refused:
        return [], AlterPartitionResponse(error_code=refused.code, topics=[])
    records, topics = [], []
    for topic_data in request.topics:
        topic = image.by_id(topic_data.topic_id) if version > 1 else image.get(topic_data.topic_name)
        results = []
        topics.append(
            AlterPartitionResponse.TopicData(
                topic_name=topic_data.topic_name, topic_id=topic_data.topic_id, partitions=results
            )
        )
        if topic is None:
            code = Errors.UNKNOWN_TOPIC_ID if version > 1 else Errors.UNKNOWN_TOPIC_OR_PARTITION
            results += [_error(data.partition_index, code) for data in topic_data.partitions]
            continue
        for data in topic_data.partitions:
            index = data.partition_index
            if not 0 <= index < len(topic.partitions):
                results.append(_error(index, Errors.UNKNOWN_TOPIC_OR_PARTITION))
                continue
            partition = topic.partitions[index]
            if version >= 3:
                members = [(s.broker_id, s.broker_epoch) for s in data.new_isr_with_epochs]
            else:  # newIsrToSimpleNewIsrWithBrokerEpochs
                members = [(broker_id, -1) for broker_id in data.new_isr]
            code = _validate(image, partition, request.broker_id, data, members, version)
            if code != Errors.NONE:
                results.append(_error(index, code))
                continue
            record = build_partition_change(
                PartitionChange(
                    topic.topic_id,
                    partition,
                    leader_may_be(image),
                    target_isr=[broker_id for broker_id, _ in members],
                    unclean_allowed=unclean_allowed(image, topic, unclean_default),
                    target_leader_recovery_state=data.leader_recovery_state,
                )
            )
            if record is not None:
                records.append(record)
                partition = partition.merge(record)
                if record.leader not in (request.broker_id, NO_LEADER_CHANGE):
                    code = Errors.NEW_LEADER_ELECTED if version > 1 else Errors.FENCED_LEADER_EPOCH
                    results.append(_error(index, code))
                    continue
            results.append(
                PartitionResult(
                    partition_index=index,
                    error_code=Errors.NONE,
                    leader_id=partition.leader,
                    leader_epoch=partition.leader_epoch,
                    isr=list(partition.isr),
                    leader_recovery_state=partition.leader_recovery_state,
                    partition_epoch=partition.partition_epoch,
                )
            )
    return records, AlterPartitionResponse(error_code=Errors.NONE, topics=topics)
