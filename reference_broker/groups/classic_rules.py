"""The classic group protocol's rules (JoinGroup, SyncGroup, Heartbeat, LeaveGroup and their timers), as
Kafka's ``GroupMetadataManager`` takes them for classic groups: pure functions of (state, event,
context) that change the state and return the effects for the runtime (``coordinator_runtime``).

A member's JoinGroup waits while the group is PreparingRebalance; its request number is kept on the
member (``join_waiter``) and answered by whichever event completes the join: the last expected member's
join, a leave, a session expiry or the rebalance timeout. SyncGroup waits the same way for the leader's
assignment, which is answered only once the group's record is written (``GroupPersisted``)."""

from __future__ import annotations

import logging

from kconform.codecs.errors import Errors

from ..coordinator_runtime import CancelTimer, Effect, Reply, SetTimer, Write
from .classic_group import ClassicGroup, ClassicMember, GroupState
from .classic_rebalance import (
    NEW_MEMBER_JOIN_TIMEOUT_MS,
    REBALANCE_RULES,
    JoinOutcome,
    SyncOutcome,
    answer_join,
    answer_sync,
    join_answer,
    pending_key,
    persist_group,
    prepare_rebalance,
    remove_member,
    session_key,
    session_timer,
    sync_key,
    try_complete_join,
)
from .errors import GroupError
from .events import (
    ClassicHeartbeat,
    GroupContext,
    GroupPersisted,
    GroupsState,
    JoinGroup,
    LeaveGroup,
    PendingMemberExpired,
    SyncGroup,
)

__all__ = ["RULES", "JoinOutcome", "SyncOutcome", "reloaded_sessions"]

log = logging.getLogger(__name__)


# ---- JoinGroup ---------------------------------------------------------------------------------------


def _join_group(state: GroupsState, event: JoinGroup, ctx: GroupContext) -> list[Effect]:
    def fail(code: int) -> list[Effect]:
        return [Reply(event.waiter, JoinOutcome(code, member_id=event.member_id))]

    if not event.group_id:
        return fail(Errors.INVALID_GROUP_ID)
    settings = ctx.classic
    if not settings.min_session_timeout_ms <= event.session_timeout_ms <= settings.max_session_timeout_ms:
        return fail(Errors.INVALID_SESSION_TIMEOUT)
    out: list[Effect] = []
    existing = state.groups.get(event.group_id)
    if existing is not None and not isinstance(existing, ClassicGroup):
        # A consumer group with members takes the join (mixed_rules); an empty one is erased
        # (maybeDeleteEmptyConsumerGroup), after which a known member id finds no group to join.
        if not getattr(existing, "is_empty", False):
            return fail(Errors.INCONSISTENT_GROUP_PROTOCOL)
        if event.member_id:
            return fail(Errors.UNKNOWN_MEMBER_ID)
        out.append(Write(event.group_id, tuple(existing.tombstones())))
        del state.groups[event.group_id]
    group = state.groups.get(event.group_id)
    if group is None:
        if event.member_id:
            return out + fail(Errors.UNKNOWN_MEMBER_ID)
        group = ClassicGroup(event.group_id)
        state.groups[event.group_id] = group
    if group.is_in(GroupState.DEAD):
        return out + fail(Errors.COORDINATOR_NOT_AVAILABLE)
    if not group.supports_protocols(event.protocol_type, [name for name, _ in event.protocols]):
        return out + fail(Errors.INCONSISTENT_GROUP_PROTOCOL)
    if not event.member_id:
        _join_new_member(state, group, event, ctx, out)
    else:
        _join_known_member(state, group, event, ctx, out)
    return out


def _join_new_member(
    state: GroupsState, group: ClassicGroup, event: JoinGroup, ctx: GroupContext, out
) -> None:
    if event.instance_id is not None:
        old_id = group.static_member_id(event.instance_id)
        if old_id is not None:
            _rejoin_static_member(state, group, old_id, event, ctx, out)
            return
    if len(group.members) + len(group.pending_members) >= ctx.classic.max_size:
        out.append(Reply(event.waiter, JoinOutcome(Errors.GROUP_MAX_SIZE_REACHED, member_id="")))
        return
    new_id = event.new_member_id
    if event.instance_id is None and event.require_known_member_id:
        # KIP-394: the member must come back with this id; until then it only holds a place.
        group.pending_members.add(new_id)
        expiry = PendingMemberExpired(group.group_id, new_id)
        out.append(SetTimer(pending_key(group.group_id, new_id), event.session_timeout_ms, expiry))
        out.append(Reply(event.waiter, JoinOutcome(Errors.MEMBER_ID_REQUIRED, member_id=new_id)))
        return
    _add_member_and_rebalance(state, group, new_id, event, ctx, out)


def _add_member_and_rebalance(
    state: GroupsState, group: ClassicGroup, member_id: str, event: JoinGroup, ctx: GroupContext, out
) -> None:
    out.append(CancelTimer(pending_key(group.group_id, member_id)))
    member = ClassicMember(
        member_id,
        event.instance_id,
        event.client_id,
        event.client_host,
        event.rebalance_timeout_ms,
        event.session_timeout_ms,
        event.protocol_type,
        list(event.protocols),
        is_new=True,
    )
    member.join_waiter = event.waiter
    group.add(member)
    if group.is_in(GroupState.PREPARING_REBALANCE) and group.initial_delay:
        group.new_member_added = True
    out.append(session_timer(group, member, NEW_MEMBER_JOIN_TIMEOUT_MS))
    if group.is_in(GroupState.PREPARING_REBALANCE):
        try_complete_join(state, group, ctx, out)
    else:
        prepare_rebalance(state, group, ctx, out)


def _rejoin_static_member(
    state: GroupsState, group: ClassicGroup, old_id: str, event: JoinGroup, ctx: GroupContext, out
) -> None:
    out.append(CancelTimer(session_key(group.group_id, old_id)))
    old_protocols = group.members[old_id].protocols
    member, old_join, old_sync = group.replace_static_member(event.instance_id, old_id, event.new_member_id)
    # Kafka's replaceStaticMember answers the old member's waiting requests: it has been fenced.
    if old_join is not None:
        out.append(Reply(old_join, JoinOutcome(Errors.FENCED_INSTANCE_ID)))
    if old_sync is not None:
        out.append(Reply(old_sync, SyncOutcome(Errors.FENCED_INSTANCE_ID)))
    member.protocols = list(event.protocols)
    member.session_timeout_ms = event.session_timeout_ms
    member.rebalance_timeout_ms = event.rebalance_timeout_ms
    if group.is_in(GroupState.STABLE):
        if group.select_protocol() == group.protocol and old_protocols == member.protocols:
            # Kafka's static rejoin without a change: the current generation, no rebalance; the
            # leader is told to skip assignment (v9+) since nothing changed.
            out.append(session_timer(group, member))
            skip = member.member_id == group.leader
            out.append(Reply(event.waiter, join_answer(group, member, skip_assignment=skip)))
            return
        prepare_rebalance(state, group, ctx, out)
    elif group.is_in(GroupState.COMPLETING_REBALANCE):
        prepare_rebalance(state, group, ctx, out)
    member.join_waiter = event.waiter
    out.append(session_timer(group, member))
    try_complete_join(state, group, ctx, out)


def _join_known_member(
    state: GroupsState, group: ClassicGroup, event: JoinGroup, ctx: GroupContext, out
) -> None:
    member_id = event.member_id
    if member_id in group.pending_members:
        _add_member_and_rebalance(state, group, member_id, event, ctx, out)
        return
    try:
        group.validate_member(member_id, event.instance_id, "JoinGroup")
    except GroupError as exc:
        out.append(Reply(event.waiter, JoinOutcome(exc.code, member_id=member_id)))
        return
    member = group.members[member_id]
    protocols = list(event.protocols)
    if group.is_in(GroupState.EMPTY, GroupState.DEAD):
        out.append(Reply(event.waiter, JoinOutcome(Errors.UNKNOWN_MEMBER_ID, member_id=member_id)))
        return
    if group.is_in(GroupState.COMPLETING_REBALANCE) and member.same_protocols(protocols):
        out.append(Reply(event.waiter, join_answer(group, member)))  # a retried join of this generation
        return
    if group.is_in(GroupState.STABLE) and member_id != group.leader and member.same_protocols(protocols):
        out.append(Reply(event.waiter, join_answer(group, member)))
        return
    member.protocols = protocols
    member.session_timeout_ms = event.session_timeout_ms
    member.rebalance_timeout_ms = event.rebalance_timeout_ms
    member.client_id, member.client_host = event.client_id, event.client_host
    # a second join while the first waits replaces the first
    answer_join(member, JoinOutcome(Errors.REBALANCE_IN_PROGRESS, member_id=member_id), out)
    member.join_waiter = event.waiter
    out.append(session_timer(group, member))
    if group.is_in(GroupState.PREPARING_REBALANCE):
        try_complete_join(state, group, ctx, out)
    else:
        prepare_rebalance(state, group, ctx, out)


# ---- SyncGroup -----------------------------------------------------------------------------------------


def _live_group(state: GroupsState, group_id: str) -> ClassicGroup:
    """The classic group a SyncGroup, Heartbeat or LeaveGroup names; raises GroupError with the code to
    answer when there is none (or a KIP-848 group has that id) or it is Dead."""
    group = state.groups.get(group_id)
    if group is None:
        raise GroupError(Errors.UNKNOWN_MEMBER_ID)
    if not isinstance(group, ClassicGroup):
        raise GroupError(Errors.UNKNOWN_MEMBER_ID, f"group {group_id} is not a classic group")
    if group.is_in(GroupState.DEAD):
        raise GroupError(Errors.COORDINATOR_NOT_AVAILABLE)
    return group


def _generation_member(
    state: GroupsState, event: SyncGroup | ClassicHeartbeat, operation: str
) -> ClassicGroup:
    """Kafka's checks before a SyncGroup or Heartbeat: a live group, a known member (a static one by its
    instance id first), of the group's current generation. Raises GroupError with the code to answer."""
    group = _live_group(state, event.group_id)
    group.validate_member(event.member_id, event.instance_id, operation)
    if event.generation != group.generation:
        raise GroupError(Errors.ILLEGAL_GENERATION)
    return group


def _sync_group(state: GroupsState, event: SyncGroup, ctx: GroupContext) -> list[Effect]:
    def answer(code: int) -> list[Effect]:
        return [Reply(event.waiter, SyncOutcome(code))]

    try:
        group = _generation_member(state, event, "SyncGroup")
    except GroupError as exc:
        return answer(exc.code)
    if (event.protocol_type is not None and event.protocol_type != group.protocol_type) or (
        event.protocol_name is not None and event.protocol_name != group.protocol
    ):
        return answer(Errors.INCONSISTENT_GROUP_PROTOCOL)
    member = group.members[event.member_id]
    if group.is_in(GroupState.EMPTY):
        return answer(Errors.UNKNOWN_MEMBER_ID)
    if group.is_in(GroupState.PREPARING_REBALANCE):
        return answer(Errors.REBALANCE_IN_PROGRESS)
    group.pending_sync.discard(event.member_id)
    out: list[Effect] = [session_timer(group, member)]
    if group.is_in(GroupState.STABLE):
        out.append(
            Reply(
                event.waiter, SyncOutcome(Errors.NONE, group.protocol_type, group.protocol, member.assignment)
            )
        )
        return out
    # CompletingRebalance: the leader's assignment completes everyone's sync, once it is written.
    member.sync_waiter = event.waiter
    if event.member_id == group.leader:
        given = dict(event.assignments)
        for m in group.members.values():
            m.assignment = given.get(m.member_id, b"")
        group.transition(GroupState.STABLE, ctx.now_ms)
        out.append(CancelTimer(sync_key(group.group_id)))
        out.append(persist_group(group, then=GroupPersisted(group.group_id, group.generation, event.waiter)))
    return out


def _group_persisted(state: GroupsState, event: GroupPersisted, ctx: GroupContext) -> list[Effect]:
    group = state.groups.get(event.group_id)
    if not isinstance(group, ClassicGroup) or group.generation != event.generation:
        return []
    out: list[Effect] = []
    if event.written.failed:
        # Kafka's resetAndPropagateAssignmentWithError, then a new rebalance.
        log.warning("group %s: its metadata could not be written", event.group_id)
        for m in group.members.values():
            m.assignment = b""
            answer_sync(m, SyncOutcome(Errors.COORDINATOR_NOT_AVAILABLE), out)
        if group.is_in(GroupState.STABLE):
            prepare_rebalance(state, group, ctx, out)
        return out
    for m in group.members.values():
        answer_sync(m, SyncOutcome(Errors.NONE, group.protocol_type, group.protocol, m.assignment), out)
    return out


# ---- Heartbeat and LeaveGroup ---------------------------------------------------------------------------


def _heartbeat(state: GroupsState, event: ClassicHeartbeat, ctx: GroupContext) -> list[Effect]:
    def answer(code: int, *effects: Effect) -> list[Effect]:
        return [*effects, Reply(event.waiter, code)]

    try:
        group = _generation_member(state, event, "Heartbeat")
    except GroupError as exc:
        return answer(exc.code)
    if group.is_in(GroupState.EMPTY):
        return answer(Errors.UNKNOWN_MEMBER_ID)
    session = session_timer(group, group.members[event.member_id])
    if group.is_in(GroupState.PREPARING_REBALANCE):
        return answer(Errors.REBALANCE_IN_PROGRESS, session)
    return answer(Errors.NONE, session)


def _leave_group(state: GroupsState, event: LeaveGroup, ctx: GroupContext) -> list[Effect]:
    """Answers (top-level error, one error per leaving member)."""
    try:
        group = _live_group(state, event.group_id)
    except GroupError as exc:
        return [Reply(event.waiter, (exc.code, []))]
    out: list[Effect] = []
    results = []
    for member_id, instance_id in event.leaving:
        if not member_id and instance_id is not None:
            target = group.static_member_id(instance_id)
            if target is None:
                results.append(Errors.UNKNOWN_MEMBER_ID)
                continue
            member_id = target
        elif member_id in group.pending_members:
            group.pending_members.discard(member_id)
            out.append(CancelTimer(pending_key(group.group_id, member_id)))
            try_complete_join(state, group, ctx, out)
            results.append(Errors.NONE)
            continue
        try:
            group.validate_member(member_id, instance_id, "LeaveGroup")
        except GroupError as exc:
            results.append(exc.code)
            continue
        remove_member(state, group, member_id, ctx, out)
        results.append(Errors.NONE)
    out.append(Reply(event.waiter, (Errors.NONE, results)))
    return out


def reloaded_sessions(state: GroupsState) -> list[Effect]:
    """Members reloaded with a stable group get a fresh session to prove they are alive."""
    return [
        session_timer(group, member)
        for group in state.groups.values()
        if isinstance(group, ClassicGroup)
        for member in group.members.values()
    ]


RULES = {
    JoinGroup: _join_group,
    SyncGroup: _sync_group,
    ClassicHeartbeat: _heartbeat,
    LeaveGroup: _leave_group,
    GroupPersisted: _group_persisted,
    **REBALANCE_RULES,
}
