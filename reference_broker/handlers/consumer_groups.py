"""KIP-848 consumer groups: ConsumerGroupHeartbeat (68) and ConsumerGroupDescribe (69).

The heartbeat follows ``GroupMetadataManager.consumerGroupHeartbeat``: validate the request, find or
create the group and member, fence stale epochs, bump the group epoch when subscriptions or the
subscribed topics' metadata change, recompute the target assignment when the group epoch passes the
assignment epoch, reconcile the member (``ConsumerGroup.reconcile``), and keep its session alive.
Version 1 (regex subscriptions, member ids chosen by the client, KIP-1082) is marked unstable in this
snapshot of the definitions but is the version Kafka 4.0 released and librdkafka requires, so it is
offered."""

from __future__ import annotations

import uuid

from kconform.codecs.errors import Errors
from kconform.codecs.messages import ConsumerGroupDescribeResponse, ConsumerGroupHeartbeatResponse

from ..groups.classic import ClassicGroup, GroupError
from ..groups.consumer_group import ConsumerGroup, ConsumerMember, MemberState
from ..groups.consumer_records import group_records, member_tombstones
from . import handles

LEAVE, LEAVE_TEMPORARILY = -1, -2


def _invalid(message: str) -> GroupError:
    return GroupError(Errors.INVALID_REQUEST, message)


def _validate(request, version: int, assignors: list[str]) -> None:
    """Kafka's ``throwIfConsumerGroupHeartbeatRequestIsInvalid``."""
    if not request.group_id:
        raise _invalid("GroupId can't be empty.")
    if request.instance_id is not None and not request.instance_id:
        raise _invalid("InstanceId can't be empty.")
    if request.member_epoch == 0:
        if request.rebalance_timeout_ms == -1:
            raise _invalid("RebalanceTimeoutMs must be provided in first request.")
        if request.topic_partitions is None or request.topic_partitions:
            raise _invalid("TopicPartitions must be empty when (re-)joining.")
        regex = request.subscribed_topic_regex if version >= 1 else None
        if request.subscribed_topic_names is None and regex is None:
            raise _invalid("SubscribedTopicNames or SubscribedTopicRegex must be set in first request.")
        if version >= 1 and not request.member_id:
            raise _invalid("MemberId can't be empty.")
    elif request.member_epoch == LEAVE_TEMPORARILY:
        if request.instance_id is None:
            raise _invalid("InstanceId can't be null.")
        if not request.member_id:
            raise _invalid("MemberId can't be empty.")
    elif request.member_epoch < LEAVE_TEMPORARILY:
        raise _invalid(f"MemberEpoch is {request.member_epoch}, but must be greater than or equal to -2.")
    elif not request.member_id:
        raise _invalid("MemberId can't be empty.")
    if request.server_assignor is not None and request.server_assignor not in assignors:
        raise GroupError(
            Errors.UNSUPPORTED_ASSIGNOR, f"ServerAssignor {request.server_assignor} is not supported."
        )


def _topics(broker) -> dict[str, tuple[uuid.UUID, int]]:
    return {t.name: (t.topic_id, len(t.partitions)) for t in broker.topics}


def _remove(coordinator, group: ConsumerGroup, member_id: str) -> None:
    member = group.members.pop(member_id, None)
    if member is None:
        return
    if member.instance_id is not None:
        group.static_members.pop(member.instance_id, None)
    group.target.pop(member_id, None)
    coordinator.cancel(("consumer-session", group.group_id, member_id))
    coordinator.cancel(("consumer-rebalance", group.group_id, member_id))
    group.group_epoch += 1
    coordinator.write(group.group_id, member_tombstones(group.group_id, member_id) + group_records(group))


def start_sessions(coordinator) -> None:
    """After a restart every reloaded member gets a fresh session to show it is still there."""
    for group in list(coordinator.groups.values()):
        if isinstance(group, ConsumerGroup):
            for member in list(group.members.values()):
                _schedule(coordinator, group, member)


def _schedule(coordinator, group: ConsumerGroup, member: ConsumerMember) -> None:
    session_ms = int(coordinator.config["group.consumer.session.timeout.ms"])

    def expire() -> None:
        if group.members.get(member.member_id) is member:
            _remove(coordinator, group, member.member_id)

    coordinator.schedule(("consumer-session", group.group_id, member.member_id), session_ms, expire)
    key = ("consumer-rebalance", group.group_id, member.member_id)
    if member.state == MemberState.UNREVOKED_PARTITIONS:
        if not coordinator.scheduled(key):  # the member has this long to give partitions up
            coordinator.schedule(key, member.rebalance_timeout_ms, expire)
    else:
        coordinator.cancel(key)


def _frozen(tp) -> frozenset:
    return frozenset((t, p) for t, parts in tp.items() for p in parts)


def heartbeat(broker, ctx, request) -> ConsumerGroupHeartbeatResponse:
    coordinator = broker.group_coordinator
    config = broker.config
    assignors = list(config["group.consumer.assignors"])
    _validate(request, ctx.api_version, assignors)
    broker.consumer_offsets.ensure()
    group = coordinator.groups.get(request.group_id)
    if isinstance(group, ClassicGroup):
        if not group.is_empty:
            raise GroupError(Errors.GROUP_ID_NOT_FOUND, f"Group {request.group_id} is not a consumer group.")
        group = None  # an empty classic group (or one holding only offsets) becomes a consumer group
    if group is None:
        if request.member_epoch != 0:
            raise GroupError(Errors.UNKNOWN_MEMBER_ID, f"Member {request.member_id} is not in the group.")
        group = ConsumerGroup(request.group_id)
        coordinator.groups[request.group_id] = group

    epoch = request.member_epoch
    if epoch in (LEAVE, LEAVE_TEMPORARILY):
        if request.member_id not in group.members:
            raise GroupError(Errors.UNKNOWN_MEMBER_ID, f"Member {request.member_id} is not in the group.")
        _remove(coordinator, group, request.member_id)
        return ConsumerGroupHeartbeatResponse(
            error_code=Errors.NONE, member_id=request.member_id, member_epoch=epoch, heartbeat_interval_ms=0
        )

    if epoch == 0:
        if request.instance_id is not None and request.instance_id in group.static_members:
            holder = group.static_members[request.instance_id]
            if holder != request.member_id:
                raise GroupError(
                    Errors.UNRELEASED_INSTANCE_ID,
                    f"Static member {holder} with instance id {request.instance_id} is still active.",
                )
        member_id = request.member_id or uuid.uuid4().hex
        if member_id in group.members:
            _remove(coordinator, group, member_id)  # a rejoin starts over
        if len(group.members) >= int(config["group.consumer.max.size"]):
            raise GroupError(
                Errors.GROUP_MAX_SIZE_REACHED, "The consumer group has reached its maximum capacity."
            )
        member = ConsumerMember(member_id, instance_id=request.instance_id)
        group.members[member_id] = member
        if request.instance_id is not None:
            group.static_members[request.instance_id] = member_id
        changed = True
    else:
        changed = False
        member = group.members.get(request.member_id)
        if member is None:
            raise GroupError(Errors.UNKNOWN_MEMBER_ID, f"Member {request.member_id} is not in the group.")
        reported = {tp.topic_id: set(tp.partitions) for tp in request.topic_partitions or []}
        lost_response = epoch == member.previous_member_epoch and all(
            p <= member.assigned.get(t, set()) for t, p in reported.items()
        )
        if epoch != member.member_epoch and not lost_response:
            raise GroupError(
                Errors.FENCED_MEMBER_EPOCH,
                f"The consumer group member has a smaller member epoch ({epoch}) than the one known by the "
                f"group coordinator ({member.member_epoch}). "
                "The member must abandon all its partitions and rejoin.",
            )

    member.client_id, member.client_host = ctx.client_id or "", ctx.peer
    member.rack_id = request.rack_id if request.rack_id is not None else member.rack_id
    if request.rebalance_timeout_ms != -1:
        member.rebalance_timeout_ms = request.rebalance_timeout_ms
    if request.server_assignor is not None:
        member.server_assignor = request.server_assignor
    if request.subscribed_topic_names is not None and sorted(request.subscribed_topic_names) != sorted(
        member.subscribed_topic_names
    ):
        member.subscribed_topic_names = list(request.subscribed_topic_names)
        changed = True
    regex = request.subscribed_topic_regex if ctx.api_version >= 1 else None
    if regex is not None and regex != (member.subscribed_topic_regex or ""):
        member.subscribed_topic_regex = regex or None
        changed = True

    topics = _topics(broker)
    wanted = group.subscribed_topic_names(list(topics))
    metadata = {name: topics[name][1] for name in wanted if name in topics}
    if metadata != group.subscribed_metadata:
        group.subscribed_metadata = metadata
        changed = True
    if changed:  # one bump for whatever changed in this heartbeat, as Kafka's
        group.group_epoch += 1
    if group.group_epoch > group.assignment_epoch:
        group.assignor = member.server_assignor or assignors[0]
        group.compute_target({name: topics[name] for name in wanted if name in topics})
    reported = (
        None
        if request.topic_partitions is None
        else {tp.topic_id: set(tp.partitions) for tp in request.topic_partitions}
    )
    before = (member.member_epoch, member.state, _frozen(member.assigned), _frozen(member.pending_revocation))
    group.reconcile(member, reported)
    after = (member.member_epoch, member.state, _frozen(member.assigned), _frozen(member.pending_revocation))
    if changed or before != after or epoch == 0:
        coordinator.write(group.group_id, group_records(group, member))
    _schedule(coordinator, group, member)
    return ConsumerGroupHeartbeatResponse(
        error_code=Errors.NONE,
        member_id=member.member_id,
        member_epoch=member.member_epoch,
        heartbeat_interval_ms=int(config["group.consumer.heartbeat.interval.ms"]),
        assignment=ConsumerGroupHeartbeatResponse.Assignment(
            topic_partitions=[
                ConsumerGroupHeartbeatResponse.TopicPartitions(topic_id=t, partitions=sorted(p))
                for t, p in sorted(member.assigned.items(), key=lambda kv: str(kv[0]))
            ]
        ),
    )


@handles(68)
async def consumer_group_heartbeat(broker, ctx, request) -> ConsumerGroupHeartbeatResponse:
    try:
        return heartbeat(broker, ctx, request)
    except GroupError as exc:
        return ConsumerGroupHeartbeatResponse(
            error_code=exc.code, error_message=str(exc), member_epoch=-1, heartbeat_interval_ms=0
        )


@handles(69)
async def consumer_group_describe(broker, ctx, request) -> ConsumerGroupDescribeResponse:
    D = ConsumerGroupDescribeResponse  # noqa: N806
    names = {t.topic_id: t.name for t in broker.topics}

    def assignment(tp) -> D.Assignment:
        return D.Assignment(
            topic_partitions=[
                D.TopicPartitions(topic_id=t, topic_name=names.get(t, ""), partitions=sorted(p))
                for t, p in sorted(tp.items(), key=lambda kv: str(kv[0]))
            ]
        )

    described = []
    for group_id in request.group_ids:
        group = broker.group_coordinator.groups.get(group_id)
        if not isinstance(group, ConsumerGroup):
            described.append(
                D.DescribedGroup(
                    error_code=Errors.GROUP_ID_NOT_FOUND,
                    error_message=f"Group {group_id} not found."
                    if group is None
                    else f"Group {group_id} is not a consumer group.",
                    group_id=group_id,
                    group_state="",
                    assignor_name="",
                )
            )
            continue
        described.append(
            D.DescribedGroup(
                error_code=Errors.NONE,
                group_id=group_id,
                group_state=group.state_name,
                group_epoch=group.group_epoch,
                assignment_epoch=group.assignment_epoch,
                assignor_name=group.assignor,
                members=[
                    D.Member(
                        member_id=m.member_id,
                        instance_id=m.instance_id,
                        rack_id=m.rack_id,
                        member_epoch=m.member_epoch,
                        client_id=m.client_id,
                        client_host=m.client_host,
                        subscribed_topic_names=list(m.subscribed_topic_names),
                        subscribed_topic_regex=m.subscribed_topic_regex,
                        assignment=assignment(m.assigned),
                        target_assignment=assignment(group.target.get(m.member_id, {})),
                    )
                    for m in group.members.values()
                ],
                authorized_operations=sum(1 << op for op in (3, 6, 8))
                if request.include_authorized_operations
                else -2147483648,
            )
        )
    return ConsumerGroupDescribeResponse(groups=described)
