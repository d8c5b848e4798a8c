"""The classic protocol's requests to a consumer group (KIP-848's mixed groups), as Kafka's
``GroupMetadataManager`` takes them: a consumer still on JoinGroup/SyncGroup/Heartbeat/LeaveGroup is a
member of the consumer group like any other, assigned by the group's server-side assignor.

- JoinGroup (``classicGroupJoinToConsumerGroup``): the subscription is read from the first protocol's
  ``ConsumerProtocolSubscription`` metadata and the member moves one reconciliation step, as a
  heartbeat would; the answer's generation is its member epoch, its protocol the first one it offered.
  A dynamic member without an id is first sent away with MEMBER_ID_REQUIRED (v4+).
- SyncGroup (``classicGroupSyncToConsumerGroup``): the member's assigned partitions, serialised as a
  ``ConsumerProtocolAssignment`` at the version of its subscription.
- Heartbeat (``classicGroupHeartbeatToConsumerGroup``): REBALANCE_IN_PROGRESS while the member has to
  rejoin to move on (a newer group epoch, partitions to revoke, or partitions now free to take).
- LeaveGroup (``classicGroupLeaveToConsumerGroup``): the members leave; the group epoch is bumped.

Their generation is checked against the member epoch (ILLEGAL_GENERATION); a member on the consumer
protocol is UNKNOWN_MEMBER_ID to them. Each answer comes with the member's timers: its session (of its
own length), a join timeout when it is told to rejoin and a sync timeout after a join; any of them
fences it. Requests to other groups go to ``classic_rules``; this table takes their place in ``rules``."""

from __future__ import annotations

from dataclasses import replace

from kconform.codecs.errors import Errors

from ..coordinator_runtime import Effect, Reply
from . import classic_rules
from .classic_rebalance import JoinOutcome, SyncOutcome
from .consumer_protocol import (
    EmbeddedProtocolError,
    owned_partitions,
    parse_subscription,
    protocol_version,
    serialize_assignment,
)
from .consumer_timers import (
    CancelJoinTimer,
    CancelSyncTimer,
    CancelTimers,
    JoinTimer,
    SessionTimer,
    SyncTimer,
)
from .errors import GroupError
from .events import (
    ClassicHeartbeat,
    ClassicMemberTimedOut,
    GroupContext,
    GroupsState,
    JoinGroup,
    LeaveGroup,
    SyncGroup,
)
from .kip848_assignment import _subscription_metadata, move_toward_target
from .kip848_effects import carry_out, fence_by_timer
from .kip848_group import ConsumerGroup, ConsumerMember, MemberState
from .kip848_log_records import (
    ClassicMemberMetadata,
    CurrentAssignment,
    GroupEpoch,
    MemberSubscription,
    SubscriptionMetadata,
    TargetMember,
)
from .kip848_rules import Outcome, replace_static_member
from .migration import downgrade_on_replacement

__all__ = ["RULES"]


def _consumer_group(state: GroupsState, group_id: str) -> ConsumerGroup | None:
    group = state.groups.get(group_id)
    return group if isinstance(group, ConsumerGroup) else None


def _classic_member(group: ConsumerGroup, member_id: str, instance_id: str | None) -> ConsumerMember:
    """``validateConsumerGroupMember`` then ``throwIfMemberDoesNotUseClassicProtocol``."""
    if instance_id is None:
        member = group.members.get(member_id)
        if member is None:
            raise GroupError(Errors.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group.")
    else:
        member = group.static_member(instance_id)
        if member is None:
            raise GroupError(Errors.UNKNOWN_MEMBER_ID, f"Member with instance id {instance_id} is unknown.")
        if member.member_id != member_id:
            raise GroupError(Errors.FENCED_INSTANCE_ID, f"Instance id {instance_id} was fenced.")
    if not member.uses_classic_protocol:
        raise GroupError(
            Errors.UNKNOWN_MEMBER_ID, f"Member {member.member_id} does not use the classic protocol."
        )
    return member


def _generation_member(group: ConsumerGroup, event: SyncGroup | ClassicHeartbeat) -> ConsumerMember:
    member = _classic_member(group, event.member_id, event.instance_id)
    if event.generation != member.member_epoch:  # throwIfGenerationIdUnmatched
        raise GroupError(Errors.ILLEGAL_GENERATION)
    return member


# ---- JoinGroup ---------------------------------------------------------------------------------------


def _join_group(state: GroupsState, event: JoinGroup, ctx: GroupContext) -> list[Effect]:
    """``classicGroupJoin``: a consumer group with members takes the join; an empty one gives way to a
    classic group, as does everything else (``classic_rules`` also answers an empty group id and a
    session timeout out of bounds, which Kafka checks before the group is looked at)."""
    group = _consumer_group(state, event.group_id)
    settings = ctx.classic
    in_bounds = settings.min_session_timeout_ms <= event.session_timeout_ms <= settings.max_session_timeout_ms
    if group is None or group.is_empty or not event.group_id or not in_bounds:
        return classic_rules.RULES[JoinGroup](state, event, ctx)
    try:
        return _join_consumer_group(state, group, event, ctx)
    except GroupError as exc:  # an exception out of the operation: only the code is answered
        return [Reply(event.waiter, JoinOutcome(exc.code))]


def _join_consumer_group(
    state: GroupsState, group: ConsumerGroup, event: JoinGroup, ctx: GroupContext
) -> list[Effect]:
    gid = group.group_id
    member_id = event.member_id or event.consumer_member_id or event.new_member_id
    if len(group.members) >= ctx.consumer.max_size and member_id not in group.members:
        raise GroupError(Errors.GROUP_MAX_SIZE_REACHED)  # throwIfConsumerGroupIsFull
    if not group.supports_classic_protocols(event.protocol_type, (name for name, _ in event.protocols)):
        raise GroupError(Errors.INCONSISTENT_GROUP_PROTOCOL)  # throwIfClassicProtocolIsNotSupported
    if not event.member_id and event.instance_id is None and event.require_known_member_id:
        return [Reply(event.waiter, JoinOutcome(Errors.MEMBER_ID_REQUIRED, member_id=member_id))]
    records: list = []
    member, replaced_id = _member_to_join(group, event, member_id, records)
    try:  # deserializeSubscription: every protocol carries the same subscription; the first is read
        subscription = parse_subscription(event.protocols[0][1])
    except EmbeddedProtocolError:
        raise GroupError(Errors.UNKNOWN_SERVER_ERROR) from None  # Kafka's IllegalStateException
    updated = replace(
        member,
        instance_id=event.instance_id if event.instance_id is not None else member.instance_id,
        rack_id=subscription.rack_id or member.rack_id,
        rebalance_timeout_ms=(
            event.rebalance_timeout_ms if event.rebalance_timeout_ms != -1 else member.rebalance_timeout_ms
        ),
        subscribed_topic_names=frozenset(subscription.topics),
        client_id=event.client_id,
        client_host=event.client_host,
        classic=ClassicMemberMetadata(event.session_timeout_ms, tuple(event.protocols)),
    )
    bump = False
    if updated != member:
        records.append(updated.subscription_record(gid))
        bump = updated.subscribed_topic_names != member.subscribed_topic_names
    members = {mid: m for mid, m in group.members.items() if mid not in (replaced_id, member_id)}
    members[member_id] = updated
    topics = ctx.topics()
    owned = owned_partitions(subscription, {name: t.topic_id for name, t in topics.items()})
    reconciled, step_records = move_toward_target(
        group,
        members,
        updated,
        replaced_id,
        group.resolved_regexes,
        topics,
        bump,
        ctx.consumer.assignors,
        owned,
    )
    records += step_records
    answer = JoinOutcome(
        Errors.NONE,
        generation_id=reconciled.member_epoch,
        protocol_type="consumer",
        protocol_name=event.protocols[0][0],
        member_id=member_id,
    )
    # The last member on the consumer protocol, replaced by this static member: the group turns classic.
    static_id = group.static_members.get(event.instance_id) if event.instance_id is not None else None
    downgraded = None if static_id is None else downgrade_on_replacement(group, static_id, reconciled, ctx)
    if downgraded is not None:
        downgrade_records, downgrade = downgraded
        timers = [CancelTimers(mid) for mid in dict.fromkeys([*group.members, member_id])]
        outcome = Outcome(
            member_id, reconciled.member_epoch, records=records + downgrade_records, timers=timers
        )
        outcome.answer, outcome.downgrade = answer, downgrade
        return carry_out(gid, outcome, event.waiter, state, ctx)
    timers = [
        CancelJoinTimer(member_id),
        SessionTimer(member_id, event.session_timeout_ms),
        SyncTimer(member_id, event.rebalance_timeout_ms),  # it must SyncGroup within its rebalance timeout
    ]
    outcome = Outcome(member_id, reconciled.member_epoch, records=records, timers=timers, answer=answer)
    return carry_out(gid, outcome, event.waiter, state, ctx)


def _member_to_join(
    group: ConsumerGroup, event: JoinGroup, member_id: str, records: list
) -> tuple[ConsumerMember, str | None]:
    """``getOrMaybeSubscribeDynamicConsumerGroupMember`` / ``...StaticConsumerGroupMember`` for the
    classic protocol: a dynamic member is created if it is not there (no epoch to check); a static
    member without an id takes over its instance's place, whatever protocol that one used."""
    if event.instance_id is None:
        return group.members.get(member_id) or ConsumerMember(member_id), None
    existing = group.static_member(event.instance_id)
    if not event.member_id:
        if existing is None:
            return group.members.get(member_id) or ConsumerMember(member_id), None
        return replace_static_member(group, existing, member_id, records), existing.member_id
    if existing is None:
        raise GroupError(Errors.UNKNOWN_MEMBER_ID, f"Instance id {event.instance_id} is unknown.")
    if existing.member_id != member_id:
        raise GroupError(Errors.FENCED_INSTANCE_ID)
    return existing, None


# ---- SyncGroup and Heartbeat -------------------------------------------------------------------------


def _sync_group(state: GroupsState, event: SyncGroup, ctx: GroupContext) -> list[Effect]:
    """``classicGroupSync``: an empty group is UNKNOWN_MEMBER_ID whatever its type."""
    group = _consumer_group(state, event.group_id)
    if group is None:
        return classic_rules.RULES[SyncGroup](state, event, ctx)
    if group.is_empty:
        return [Reply(event.waiter, SyncOutcome(Errors.UNKNOWN_MEMBER_ID))]
    timers: list = []
    try:
        member = _generation_member(group, event)
        protocol_name, metadata = member.classic.protocols[0]
        if (event.protocol_type is not None and event.protocol_type != "consumer") or (
            event.protocol_name is not None and event.protocol_name != protocol_name
        ):
            raise GroupError(Errors.INCONSISTENT_GROUP_PROTOCOL)  # throwIfClassicProtocolUnmatched
        # throwIfRebalanceInProgress: behind the group epoch, it must rejoin first; one that is giving
        # partitions up rejoins on its own once it has.
        if group.group_epoch > member.member_epoch and member.state != MemberState.UNREVOKED_PARTITIONS:
            timers.append(JoinTimer(member.member_id, member.rebalance_timeout_ms))
            raise GroupError(Errors.REBALANCE_IN_PROGRESS)
        names = {t.topic_id: name for name, t in ctx.topics().items()}
        try:
            assignment = serialize_assignment(member.assigned, names, protocol_version(metadata))
        except EmbeddedProtocolError:
            raise GroupError(Errors.UNKNOWN_SERVER_ERROR) from None  # Kafka's IllegalStateException
    except GroupError as exc:
        outcome = Outcome(event.member_id, -1, timers=timers, answer=SyncOutcome(exc.code))
        return carry_out(group.group_id, outcome, event.waiter, state, ctx)
    timers = [
        CancelSyncTimer(event.member_id),
        SessionTimer(event.member_id, member.classic.session_timeout_ms),
    ]
    answer = SyncOutcome(Errors.NONE, event.protocol_type, event.protocol_name, assignment)
    outcome = Outcome(event.member_id, member.member_epoch, timers=timers, answer=answer)
    return carry_out(group.group_id, outcome, event.waiter, state, ctx)


def _heartbeat(state: GroupsState, event: ClassicHeartbeat, ctx: GroupContext) -> list[Effect]:
    group = _consumer_group(state, event.group_id)
    if group is None:
        return classic_rules.RULES[ClassicHeartbeat](state, event, ctx)
    try:
        member = _generation_member(group, event)
    except GroupError as exc:
        return [Reply(event.waiter, exc.code)]
    timers: list = [SessionTimer(event.member_id, member.classic.session_timeout_ms)]
    code = Errors.NONE
    # It rejoins to catch up with the group epoch, to confirm a revocation, or to take partitions that
    # have been released to it.
    if (
        member.member_epoch < group.group_epoch
        or member.state == MemberState.UNREVOKED_PARTITIONS
        or (
            member.state == MemberState.UNRELEASED_PARTITIONS
            and not group.waiting_on_unreleased_partition(member)
        )
    ):
        code = Errors.REBALANCE_IN_PROGRESS
        timers.append(JoinTimer(event.member_id, member.rebalance_timeout_ms))
    outcome = Outcome(event.member_id, member.member_epoch, timers=timers, answer=code)
    return carry_out(group.group_id, outcome, event.waiter, state, ctx)


# ---- LeaveGroup and the timeouts ---------------------------------------------------------------------


def _leave_group(state: GroupsState, event: LeaveGroup, ctx: GroupContext) -> list[Effect]:
    """Answers (top-level error, one error per member, the member id Kafka reports for each: a static
    member named by instance id alone is reported under its member id)."""
    group = _consumer_group(state, event.group_id)
    if group is None:
        return classic_rules.RULES[LeaveGroup](state, event, ctx)
    gid = group.group_id
    records: list = []
    timers: list = []
    results: list[int] = []
    reported: list[str] = []
    left: set[str] = set()
    for member_id, instance_id in event.leaving:
        try:
            if instance_id is None:
                member = _classic_member(group, member_id, None)
            else:
                member = group.static_member(instance_id)
                if member is None:
                    raise GroupError(Errors.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
                # An administrator removes static members by instance id alone.
                member = _classic_member(group, member_id or member.member_id, instance_id)
        except GroupError as exc:
            results.append(exc.code)
            reported.append(member_id)
            continue
        member_id = member.member_id
        records += [
            CurrentAssignment(gid, member_id, None),
            TargetMember(gid, member_id, None),
            MemberSubscription(gid, member_id, None),
        ]
        timers.append(CancelTimers(member_id))
        left.add(member_id)
        results.append(Errors.NONE)
        reported.append(member_id)
    if records:
        remaining = [m for mid, m in group.members.items() if mid not in left]
        metadata = _subscription_metadata(remaining, group.resolved_regexes, ctx.topics())
        if metadata != group.subscription_metadata:
            records.append(SubscriptionMetadata(gid, tuple(sorted(metadata.values(), key=lambda t: t.name))))
        records.append(GroupEpoch(gid, group.group_epoch + 1))
    answer = (Errors.NONE, results, reported)
    return carry_out(
        gid, Outcome(None, -1, records=records, timers=timers, answer=answer), event.waiter, state, ctx
    )


def _timed_out(state: GroupsState, event: ClassicMemberTimedOut, ctx: GroupContext) -> list[Effect]:
    why = "it did not rejoin in time" if event.timeout == "join" else "it did not sync in time"
    return fence_by_timer(state, event.group_id, event.member_id, why, ctx)


RULES = {
    JoinGroup: _join_group,
    SyncGroup: _sync_group,
    ClassicHeartbeat: _heartbeat,
    LeaveGroup: _leave_group,
    ClassicMemberTimedOut: _timed_out,
}
