"""The classic rebalance (Kafka's ``GroupMetadataManager`` for classic groups): preparing it, the
initial delay of a new group, completing the join, the sync deadline, session and pending-member expiry.
Pure functions of (state, event or group, context) that append effects to ``out``; the request rules
(``classic_rules``) build on them."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from kconform.codecs.errors import Errors

from ..coordinator_runtime import CancelTimer, Effect, Reply, SetTimer, Write
from .classic_group import ClassicGroup, ClassicMember, GroupState
from .classic_log_records import encode_group_metadata_key, encode_group_metadata_value
from .events import (
    GroupContext,
    GroupsState,
    InitialJoinStep,
    JoinDeadline,
    PendingMemberExpired,
    SessionExpired,
    SyncDeadline,
)

__all__ = [
    "NEW_MEMBER_JOIN_TIMEOUT_MS",
    "REBALANCE_RULES",
    "JoinOutcome",
    "SyncOutcome",
    "answer_join",
    "answer_sync",
    "complete_join",
    "join_answer",
    "pending_key",
    "persist_group",
    "prepare_rebalance",
    "remove_member",
    "session_key",
    "session_timer",
    "sync_key",
    "try_complete_join",
]

log = logging.getLogger(__name__)
NEW_MEMBER_JOIN_TIMEOUT_MS = 300_000  # Kafka's classic new-member join timeout


@dataclass
class JoinOutcome:
    error_code: int
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    member_id: str = ""
    members: list[tuple[str, str | None, bytes]] | None = None
    skip_assignment: bool = False


@dataclass
class SyncOutcome:
    error_code: int
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


# ---- timer keys and small helpers ------------------------------------------------------------------


def session_key(group_id: str, member_id: str) -> tuple:
    return ("session", group_id, member_id)


def _join_key(group_id: str) -> tuple:
    return ("join", group_id)


def sync_key(group_id: str) -> tuple:
    return ("sync", group_id)


def pending_key(group_id: str, member_id: str) -> tuple:
    return ("pending", group_id, member_id)


def session_timer(group: ClassicGroup, member: ClassicMember, timeout_ms: int | None = None) -> SetTimer:
    delay = member.session_timeout_ms if timeout_ms is None else timeout_ms
    return SetTimer(
        session_key(group.group_id, member.member_id),
        delay,
        SessionExpired(group.group_id, member.member_id),
    )


def _rebalance_timeout_ms(group: ClassicGroup) -> int:
    return max((m.rebalance_timeout_ms for m in group.members.values()), default=0)


def persist_group(group: ClassicGroup, then: object | None = None) -> Write:
    key = encode_group_metadata_key(group.group_id)
    return Write(group.group_id, ((key, encode_group_metadata_value(group.to_record())),), then=then)


def join_answer(group: ClassicGroup, member: ClassicMember, *, skip_assignment: bool = False) -> JoinOutcome:
    members = None
    if member.member_id == group.leader:
        members = [
            (m.member_id, m.group_instance_id, m.metadata_for(group.protocol)) for m in group.members.values()
        ]
    return JoinOutcome(
        Errors.NONE,
        generation_id=group.generation,
        protocol_type=group.protocol_type,
        protocol_name=group.protocol,
        leader=group.leader or "",
        member_id=member.member_id,
        members=members,
        skip_assignment=skip_assignment,
    )


def answer_join(member: ClassicMember, answer: JoinOutcome, out: list[Effect]) -> None:
    if member.join_waiter is not None:
        out.append(Reply(member.join_waiter, answer))
        member.join_waiter = None


def answer_sync(member: ClassicMember, answer: SyncOutcome, out: list[Effect]) -> None:
    if member.sync_waiter is not None:
        out.append(Reply(member.sync_waiter, answer))
        member.sync_waiter = None


# ---- the rebalance -------------------------------------------------------------------------------------


def remove_member(
    state: GroupsState, group: ClassicGroup, member_id: str, ctx: GroupContext, out: list
) -> None:
    member = group.members.get(member_id)
    if member is None:
        return
    out.append(CancelTimer(session_key(group.group_id, member_id)))
    answer_join(member, JoinOutcome(Errors.UNKNOWN_MEMBER_ID, member_id=member_id), out)
    group.remove(member_id)
    if group.is_in(GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
        prepare_rebalance(state, group, ctx, out)
    elif group.is_in(GroupState.PREPARING_REBALANCE):
        try_complete_join(state, group, ctx, out)


def prepare_rebalance(state: GroupsState, group: ClassicGroup, ctx: GroupContext, out: list) -> None:
    if group.is_in(GroupState.COMPLETING_REBALANCE):
        # Kafka resets assignments and tells members waiting in sync to rejoin.
        for member in group.members.values():
            member.assignment = b""
            answer_sync(member, SyncOutcome(Errors.REBALANCE_IN_PROGRESS), out)
        out.append(CancelTimer(sync_key(group.group_id)))
    was_empty = group.is_in(GroupState.EMPTY)
    group.pending_sync.clear()
    group.transition(GroupState.PREPARING_REBALANCE, ctx.now_ms)
    timeout = _rebalance_timeout_ms(group)
    if was_empty:
        delay = ctx.classic.initial_rebalance_delay_ms
        group.initial_delay = True
        group.new_member_added = False
        step = InitialJoinStep(group.group_id, max(timeout - delay, 0), delay)
        out.append(SetTimer(_join_key(group.group_id), min(delay, timeout), step))
    else:
        group.initial_delay = False
        out.append(SetTimer(_join_key(group.group_id), timeout, JoinDeadline(group.group_id)))
        try_complete_join(state, group, ctx, out)


def _initial_join_step(state: GroupsState, event: InitialJoinStep, ctx: GroupContext) -> list[Effect]:
    """Kafka's ``InitialDelayedJoin``: a new group waits for more members, another step each time
    someone joined during the last one, up to the rebalance timeout."""
    group = state.groups.get(event.group_id)
    if not isinstance(group, ClassicGroup):
        return []
    out: list[Effect] = []
    if group.new_member_added and event.remaining_ms > 0:
        group.new_member_added = False
        step = InitialJoinStep(group.group_id, max(event.remaining_ms - event.step_ms, 0), event.step_ms)
        out.append(SetTimer(_join_key(group.group_id), min(event.step_ms, event.remaining_ms), step))
    else:
        group.initial_delay = False
        complete_join(state, group, ctx, out)
    return out


def try_complete_join(state: GroupsState, group: ClassicGroup, ctx: GroupContext, out: list) -> None:
    if not group.is_in(GroupState.PREPARING_REBALANCE) or group.initial_delay or group.pending_members:
        return
    if all(m.awaiting_join for m in group.members.values()):
        complete_join(state, group, ctx, out)


def complete_join(state: GroupsState, group: ClassicGroup, ctx: GroupContext, out: list) -> None:
    if not group.is_in(GroupState.PREPARING_REBALANCE) or state.groups.get(group.group_id) is not group:
        return
    out.append(CancelTimer(_join_key(group.group_id)))
    for member_id, member in list(group.members.items()):
        if not member.awaiting_join and member.group_instance_id is None:
            out.append(CancelTimer(session_key(group.group_id, member_id)))
            group.remove(member_id)
    group.generation += 1
    if group.is_empty:
        group.protocol = None
        group.transition(GroupState.EMPTY, ctx.now_ms)
        out.append(persist_group(group))
        return
    group.protocol = group.select_protocol()
    if group.leader not in group.members or not group.members[group.leader].awaiting_join:
        group.leader = next((m.member_id for m in group.members.values() if m.awaiting_join), group.leader)
    group.transition(GroupState.COMPLETING_REBALANCE, ctx.now_ms)
    group.pending_sync = set(group.members)
    deadline = SyncDeadline(group.group_id, group.generation)
    out.append(SetTimer(sync_key(group.group_id), _rebalance_timeout_ms(group), deadline))
    for member in group.members.values():
        answer_join(member, join_answer(group, member), out)
        member.is_new = False
        out.append(session_timer(group, member))


def _join_deadline(state: GroupsState, event: JoinDeadline, ctx: GroupContext) -> list[Effect]:
    group = state.groups.get(event.group_id)
    out: list[Effect] = []
    if isinstance(group, ClassicGroup):
        complete_join(state, group, ctx, out)
    return out


def _sync_deadline(state: GroupsState, event: SyncDeadline, ctx: GroupContext) -> list[Effect]:
    """Members that did not sync within the rebalance timeout are removed (Kafka's pending-sync
    expiry), and the group rebalances without them."""
    group = state.groups.get(event.group_id)
    if not isinstance(group, ClassicGroup) or group.generation != event.generation:
        return []
    if not group.is_in(GroupState.COMPLETING_REBALANCE):
        return []
    out: list[Effect] = []
    for member_id in list(group.pending_sync):
        out.append(CancelTimer(session_key(group.group_id, member_id)))
        group.remove(member_id)
    if group.is_empty:
        group.transition(GroupState.PREPARING_REBALANCE, ctx.now_ms)
        complete_join(state, group, ctx, out)
    else:
        prepare_rebalance(state, group, ctx, out)
    return out


def _session_expired(state: GroupsState, event: SessionExpired, ctx: GroupContext) -> list[Effect]:
    group = state.groups.get(event.group_id)
    if not isinstance(group, ClassicGroup):
        return []
    member = group.members.get(event.member_id)
    if member is None:
        return []
    if member.awaiting_join or member.awaiting_sync:
        return [session_timer(group, member)]  # a member waiting on us cannot heartbeat
    log.info("member %s of group %s expired", event.member_id, event.group_id)
    out: list[Effect] = []
    remove_member(state, group, event.member_id, ctx, out)
    return out


def _pending_expired(state: GroupsState, event: PendingMemberExpired, ctx: GroupContext) -> list[Effect]:
    group = state.groups.get(event.group_id)
    out: list[Effect] = []
    if isinstance(group, ClassicGroup) and event.member_id in group.pending_members:
        group.pending_members.discard(event.member_id)
        try_complete_join(state, group, ctx, out)
    return out


REBALANCE_RULES = {
    SessionExpired: _session_expired,
    PendingMemberExpired: _pending_expired,
    JoinDeadline: _join_deadline,
    InitialJoinStep: _initial_join_step,
    SyncDeadline: _sync_deadline,
}
