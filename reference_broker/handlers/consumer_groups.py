"""KIP-848 consumer groups: ConsumerGroupHeartbeat (68) and ConsumerGroupDescribe (69).

Glue only: the decisions are ``groups.consumer_group``'s. A heartbeat's records are written to the
group's ``__consumer_offsets`` partition first and applied to the group after, so a failed write
changes nothing; then its timers are set (session expiry, and the rebalance timeout of a member that
must give partitions up). Version 1 of the heartbeat (regular expressions in RE2/J's syntax, member ids
chosen by the client) is the one Kafka 4.0 released; it is served in full.

ConsumerGroupDescribe v1 (KIP-1099) adds each member's type, ``ConsumerGroupMember
.asConsumerGroupDescribeMember``: 0 for a member that joined with the classic protocol, 1 for one that
uses the consumer protocol. Classic members do not join consumer groups here (Kafka's upgrade path is
not implemented), so every member is 1."""

from __future__ import annotations

import logging
from uuid import UUID

from kconform.codecs.errors import Errors
from kconform.codecs.messages import ConsumerGroupDescribeResponse, ConsumerGroupHeartbeatResponse

from ..groups.assignors import assignor_names
from ..groups.classic import GroupError
from ..groups.consumer_group import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    CancelRebalanceTimer,
    CancelTimers,
    ConsumerGroup,
    Heartbeat,
    MemberState,
    Outcome,
    RebalanceTimer,
    SessionTimer,
    Settings,
    apply_record,
    fence,
    heartbeat,
    leave,
    rebalance_expired,
    validate_heartbeat,
)
from ..groups.consumer_records import TopicMetadata
from . import handles

log = logging.getLogger(__name__)

_GROUP_OPERATIONS = sum(1 << op for op in (3, 6, 8))  # READ, DELETE, DESCRIBE: all, with no authorizer
_CONSUMER_MEMBER = 1  # ConsumerGroupDescribe v1 MemberType: 0 classic protocol, 1 consumer protocol
_UNSET_OPERATIONS = -(2**31)

# How Kafka's coordinator reports a failed write of the group's records.
_WRITE_ERRORS = {
    Errors.UNKNOWN_TOPIC_OR_PARTITION: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.NOT_ENOUGH_REPLICAS: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.REQUEST_TIMED_OUT: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.NOT_LEADER_OR_FOLLOWER: Errors.NOT_COORDINATOR,
    Errors.KAFKA_STORAGE_ERROR: Errors.NOT_COORDINATOR,
}


def _session_key(group_id: str, member_id: str) -> tuple:
    return ("consumer-session", group_id, member_id)


def _rebalance_key(group_id: str, member_id: str) -> tuple:
    return ("consumer-rebalance", group_id, member_id)


def _settings(broker) -> Settings:
    config = broker.config
    return Settings(
        assignors=tuple(assignor_names(config["group.consumer.assignors"])),
        max_size=int(config["group.consumer.max.size"]),
        heartbeat_interval_ms=int(config["group.consumer.heartbeat.interval.ms"]),
    )


def _topics(broker) -> dict[str, TopicMetadata]:
    return {t.name: TopicMetadata(t.topic_id, t.name, len(t.partitions)) for t in broker.topics}


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


def _commit(coordinator, group_id: str, records: list) -> None:
    """Write the records, then apply them; a write that fails raises GroupError and changes nothing."""
    if not records:
        return
    try:
        coordinator.write(group_id, [r.encode() for r in records])
    except Exception as exc:
        code = getattr(exc, "code", None)
        code = _WRITE_ERRORS.get(code, Errors.UNKNOWN_SERVER_ERROR) if isinstance(code, int) else None
        log.warning("consumer group %s: records not written: %s", group_id, exc)
        raise GroupError(code or Errors.NOT_COORDINATOR, str(exc)) from exc
    for record in records:
        apply_record(coordinator.groups, record)


def _set_timers(broker, group_id: str, timers: list) -> None:
    coordinator = broker.group_coordinator
    session_ms = int(broker.config["group.consumer.session.timeout.ms"])
    for timer in timers:
        if isinstance(timer, SessionTimer):
            coordinator.schedule(
                _session_key(group_id, timer.member_id),
                session_ms,
                lambda m=timer.member_id: _expire_session(broker, group_id, m),
            )
        elif isinstance(timer, RebalanceTimer):
            coordinator.schedule(
                _rebalance_key(group_id, timer.member_id),
                timer.timeout_ms,
                lambda t=timer: _expire_rebalance(broker, group_id, t.member_id, t.member_epoch),
            )
        elif isinstance(timer, CancelRebalanceTimer):
            coordinator.cancel(_rebalance_key(group_id, timer.member_id))
        elif isinstance(timer, CancelTimers):
            coordinator.cancel(_session_key(group_id, timer.member_id))
            coordinator.cancel(_rebalance_key(group_id, timer.member_id))


def _run(broker, group_id: str, outcome: Outcome) -> None:
    _commit(broker.group_coordinator, group_id, outcome.records)
    _set_timers(broker, group_id, outcome.timers)


def _expire_session(broker, group_id: str, member_id: str) -> None:
    group = broker.group_coordinator.groups.get(group_id)
    if isinstance(group, ConsumerGroup) and member_id in group.members:
        log.info("consumer group %s: member %s fenced, its session expired", group_id, member_id)
        _run(broker, group_id, fence(group, member_id, _topics(broker)))


def _expire_rebalance(broker, group_id: str, member_id: str, member_epoch: int) -> None:
    group = broker.group_coordinator.groups.get(group_id)
    if isinstance(group, ConsumerGroup):
        outcome = rebalance_expired(group, member_id, member_epoch, _topics(broker))
        if outcome.records:
            log.info("consumer group %s: member %s fenced, it did not revoke in time", group_id, member_id)
        _run(broker, group_id, outcome)


def start_sessions(coordinator) -> None:
    """After a restart every reloaded member gets a fresh session, and a member that still has
    partitions to give up a fresh rebalance timeout (Kafka's ``onLoaded``)."""
    broker = coordinator.broker
    for group in list(coordinator.groups.values()):
        if not isinstance(group, ConsumerGroup):
            continue
        timers: list = []
        for member in group.members.values():
            timers.append(SessionTimer(member.member_id))
            if member.state == MemberState.UNREVOKED_PARTITIONS:
                timers.append(
                    RebalanceTimer(member.member_id, member.member_epoch, member.rebalance_timeout_ms)
                )
        _set_timers(broker, group.group_id, timers)


@handles(68)
async def consumer_group_heartbeat(broker, ctx, request) -> ConsumerGroupHeartbeatResponse:
    hb = _request(request, ctx)
    try:
        settings = _settings(broker)
        validate_heartbeat(hb, settings.assignors)
        broker.consumer_offsets.ensure()
        existing = broker.group_coordinator.groups.get(hb.group_id)
        topics = _topics(broker)
        if hb.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
            outcome = leave(existing, hb, topics)
        else:
            outcome = heartbeat(existing, hb, topics, settings, broker.clock.now_ms())
        _run(broker, hb.group_id, outcome)
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
                member_type=_CONSUMER_MEMBER,
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
    operations = _GROUP_OPERATIONS if request.include_authorized_operations else _UNSET_OPERATIONS
    invalid, described = [], []
    for group_id in request.group_ids:
        group = broker.group_coordinator.groups.get(group_id)
        if not group_id:
            invalid.append(D.DescribedGroup(error_code=Errors.INVALID_GROUP_ID, group_id=""))
        elif isinstance(group, ConsumerGroup):
            described.append(_described(group, names, group.preferred_assignor(configured), operations))
        else:
            described.append(D.DescribedGroup(error_code=Errors.GROUP_ID_NOT_FOUND, group_id=group_id))
    # Kafka answers the empty ids first, before it asks the partitions' coordinators about the rest.
    return ConsumerGroupDescribeResponse(groups=invalid + described)
