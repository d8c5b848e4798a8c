"""KIP-848 consumer groups: ConsumerGroupHeartbeat (68) and ConsumerGroupDescribe (69).

Glue only: the decisions are the group coordinator's (``groups.kip848_rules``, carried out by
``groups.kip848_effects``). Version 1 of the heartbeat (regular expressions in RE2/J's syntax, member
ids chosen by the client) is the one Kafka 4.0 released; it is served in full.

ConsumerGroupDescribe v1 (KIP-1099) adds each member's type, ``ConsumerGroupMember
.asConsumerGroupDescribeMember``: 0 for a member that joined with the classic protocol (JoinGroup, in a
mixed group: ``groups.mixed_rules``), 1 for one that uses the consumer protocol."""

from __future__ import annotations

from uuid import UUID

from kconform.codecs.errors import Errors
from kconform.codecs.messages import ConsumerGroupDescribeResponse, ConsumerGroupHeartbeatResponse

from ..groups.errors import GroupError
from ..groups.kip848_group import ConsumerGroup
from ..groups.kip848_rules import LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH, Heartbeat
from ..groups.server_assignors import assignor_names
from ..security.acls import Operation, ResourceType
from ..security.authorization import allowed, authorized_operations
from . import handles

_CLASSIC_MEMBER, _CONSUMER_MEMBER = 0, 1  # ConsumerGroupDescribe v1 MemberType
_UNSET_OPERATIONS = -(2**31)


def _client_host(peer: str) -> str:
    # Kafka reports the address as Java prints an InetAddress: a slash, then the host.
    return "/" + peer.rsplit(":", 1)[0]


def _request(request, ctx) -> Heartbeat:
    owned = None
    if request.topic_partitions is not None:
        merged: dict[UUID, set[int]] = {}
        for tp in request.topic_partitions:
            merged.setdefault(tp.topic_id, set()).update(tp.partitions)
        owned = {t: frozenset(p) for t, p in merged.items()}
    names = request.subscribed_topic_names
    return Heartbeat(
        group_id=request.group_id,
        member_id=request.member_id,
        member_epoch=request.member_epoch,
        instance_id=request.instance_id,
        rack_id=request.rack_id,
        rebalance_timeout_ms=request.rebalance_timeout_ms,
        subscribed_topic_names=None if names is None else tuple(names),
        subscribed_topic_regex=request.subscribed_topic_regex if ctx.api_version >= 1 else None,
        server_assignor=request.server_assignor,
        owned=owned,
        client_id=ctx.client_id or "",
        client_host=_client_host(ctx.peer),
        api_version=ctx.api_version,
    )


@handles(68)
async def consumer_group_heartbeat(broker, ctx, request) -> ConsumerGroupHeartbeatResponse:
    # KafkaApis.handleConsumerGroupHeartbeat: READ on the group
    if not allowed(broker, ctx, Operation.READ, ResourceType.GROUP, request.group_id):
        return ConsumerGroupHeartbeatResponse(error_code=Errors.GROUP_AUTHORIZATION_FAILED)
    hb = _request(request, ctx)
    leaving = hb.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH)
    try:
        outcome = await broker.group_coordinator.consumer_heartbeat(hb, leaving=leaving)
    except GroupError as exc:
        return ConsumerGroupHeartbeatResponse(error_code=exc.code, error_message=str(exc))
    R = ConsumerGroupHeartbeatResponse  # noqa: N806
    assignment = None
    if outcome.assignment is not None:
        assignment = R.Assignment(
            topic_partitions=[
                R.TopicPartitions(topic_id=t, partitions=sorted(p))
                for t, p in sorted(outcome.assignment.items(), key=lambda kv: str(kv[0]))
            ]
        )
    return R(
        error_code=Errors.NONE,
        member_id=outcome.member_id,
        member_epoch=outcome.member_epoch,
        heartbeat_interval_ms=outcome.heartbeat_interval_ms,
        assignment=assignment,
    )


def _described(group: ConsumerGroup, names: dict[UUID, str], assignor: str, operations: int):
    D = ConsumerGroupDescribeResponse  # noqa: N806

    def assignment(tp) -> D.Assignment:
        # Partitions of topics that no longer exist are left out, as Kafka does.
        return D.Assignment(
            topic_partitions=[
                D.TopicPartitions(topic_id=t, topic_name=names[t], partitions=sorted(p))
                for t, p in sorted(tp.items(), key=lambda kv: str(kv[0]))
                if t in names
            ]
        )

    return D.DescribedGroup(
        error_code=Errors.NONE,
        group_id=group.group_id,
        group_state=group.state_name,
        group_epoch=group.group_epoch,
        assignment_epoch=group.assignment_epoch,
        assignor_name=assignor,
        members=[
            D.Member(
                member_id=m.member_id,
                instance_id=m.instance_id,
                rack_id=m.rack_id,
                member_epoch=m.member_epoch,
                client_id=m.client_id,
                client_host=m.client_host,
                subscribed_topic_names=sorted(m.subscribed_topic_names),
                subscribed_topic_regex=m.subscribed_topic_regex,
                assignment=assignment(m.assigned),
                target_assignment=assignment(group.target.get(m.member_id, {})),
                member_type=_CLASSIC_MEMBER if m.uses_classic_protocol else _CONSUMER_MEMBER,
            )
            for m in group.members.values()
        ],
        authorized_operations=operations,
    )


@handles(69)
async def consumer_group_describe(broker, ctx, request) -> ConsumerGroupDescribeResponse:
    D = ConsumerGroupDescribeResponse  # noqa: N806
    names = {t.topic_id: t.name for t in broker.topics}
    configured = assignor_names(broker.config["group.consumer.assignors"])
    refused, invalid, described = [], [], []
    for group_id in request.group_ids:
        group = broker.group_coordinator.groups.get(group_id)
        operations = _UNSET_OPERATIONS
        if request.include_authorized_operations:
            operations = authorized_operations(broker, ctx, ResourceType.GROUP, group_id)
        if not allowed(broker, ctx, Operation.DESCRIBE, ResourceType.GROUP, group_id):
            # KafkaApis.handleConsumerGroupDescribe: refused before the coordinator sees the rest
            refused.append(D.DescribedGroup(error_code=Errors.GROUP_AUTHORIZATION_FAILED, group_id=group_id))
        elif not group_id:
            invalid.append(D.DescribedGroup(error_code=Errors.INVALID_GROUP_ID, group_id=""))
        elif isinstance(group, ConsumerGroup):
            described.append(_described(group, names, group.preferred_assignor(configured), operations))
        else:
            described.append(D.DescribedGroup(error_code=Errors.GROUP_ID_NOT_FOUND, group_id=group_id))
    # Kafka answers the empty ids first, before it asks the partitions' coordinators about the rest.
    return ConsumerGroupDescribeResponse(groups=refused + invalid + described)
