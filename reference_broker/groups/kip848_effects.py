"""KIP-848 heartbeats and timers as the runtime's events: the decisions are ``kip848_rules``' (and
``migration``'s, when a heartbeat upgrades a classic group or a member's departure downgrades the group);
this turns each ``Outcome`` into effects. A decision's records are written first and applied to the
group only once written, so a failed write changes nothing; then its timers are set (session expiry,
the rebalance timeout of a member that must give partitions up, the join and sync timeouts of a member on
the classic protocol) and the member is answered. The classic protocol's requests to consumer groups
(``mixed_rules``) end the same way."""

from __future__ import annotations

import logging

from kconform.codecs.errors import Errors

from ..coordinator_runtime import CancelTimer, Effect, Reply, SetTimer, Write
from .classic_group import ClassicGroup, GroupState
from .classic_rebalance import JoinOutcome, SyncOutcome
from .consumer_timers import (
    CancelJoinTimer,
    CancelRebalanceTimer,
    CancelSyncTimer,
    CancelTimers,
    JoinTimer,
    RebalanceTimer,
    SessionTimer,
    SyncTimer,
)
from .errors import GroupError
from .events import (
    ClassicMemberTimedOut,
    ConsumerHeartbeat,
    ConsumerRebalanceExpired,
    ConsumerRecordsWritten,
    ConsumerSessionExpired,
    GroupContext,
    GroupsState,
)
from .kip848_group import ConsumerGroup, MemberState, apply_record
from .kip848_rules import LEAVE_GROUP_MEMBER_EPOCH, Outcome, heartbeat, leave, validate_heartbeat
from .migration import downgrade_after_fencing, fence_member, install_downgrade, upgrade

__all__ = ["RULES", "carry_out", "failed_answer", "reloaded_sessions"]

log = logging.getLogger(__name__)

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


def _join_key(group_id: str, member_id: str) -> tuple:
    return ("consumer-join", group_id, member_id)


def _sync_key(group_id: str, member_id: str) -> tuple:
    return ("consumer-sync", group_id, member_id)


def _timers(group_id: str, timers: list, ctx: GroupContext) -> list[Effect]:
    out: list[Effect] = []
    for timer in timers:
        if isinstance(timer, SessionTimer):
            expiry = ConsumerSessionExpired(group_id, timer.member_id)
            delay = ctx.consumer_session_timeout_ms if timer.timeout_ms is None else timer.timeout_ms
            out.append(SetTimer(_session_key(group_id, timer.member_id), delay, expiry))
        elif isinstance(timer, JoinTimer):
            expiry = ClassicMemberTimedOut(group_id, timer.member_id, "join")
            key = _join_key(group_id, timer.member_id)
            out.append(SetTimer(key, timer.timeout_ms, expiry, if_absent=True))
        elif isinstance(timer, SyncTimer):
            expiry = ClassicMemberTimedOut(group_id, timer.member_id, "sync")
            out.append(SetTimer(_sync_key(group_id, timer.member_id), timer.timeout_ms, expiry))
        elif isinstance(timer, CancelJoinTimer):
            out.append(CancelTimer(_join_key(group_id, timer.member_id)))
        elif isinstance(timer, CancelSyncTimer):
            out.append(CancelTimer(_sync_key(group_id, timer.member_id)))
        elif isinstance(timer, RebalanceTimer):
            expiry = ConsumerRebalanceExpired(group_id, timer.member_id, timer.member_epoch)
            out.append(SetTimer(_rebalance_key(group_id, timer.member_id), timer.timeout_ms, expiry))
        elif isinstance(timer, CancelRebalanceTimer):
            out.append(CancelTimer(_rebalance_key(group_id, timer.member_id)))
        elif isinstance(timer, CancelTimers):  # Kafka's cancelTimers: all four
            for key in (_session_key, _rebalance_key, _join_key, _sync_key):
                out.append(CancelTimer(key(group_id, timer.member_id)))
    return out


def carry_out(group_id: str, outcome: Outcome, waiter: int | None, state, ctx) -> list[Effect]:
    """Write the decision's records, then (``_records_written``) apply them, set its timers, answer."""
    then = ConsumerRecordsWritten(group_id, waiter, outcome)
    if not outcome.records:
        return _records_written(state, then, ctx)
    return [Write(group_id, tuple(r.encode() for r in outcome.records), then=then)]


def failed_answer(answer: object, code: int) -> object:
    """The error a request hears in the shape of its answer (``handleOperationException``): a
    heartbeat's is a GroupError; JoinGroup, SyncGroup, Heartbeat and LeaveGroup answer their own way."""
    if isinstance(answer, JoinOutcome):
        return JoinOutcome(code)
    if isinstance(answer, SyncOutcome):
        return SyncOutcome(code)
    if isinstance(answer, int):
        return code
    if isinstance(answer, tuple):
        return (code, [])
    return GroupError(code, "the group's records were not written")


def _records_written(state: GroupsState, event: ConsumerRecordsWritten, ctx: GroupContext) -> list[Effect]:
    written, outcome = event.written, event.outcome
    if written is not None and written.failed:
        code = _WRITE_ERRORS.get(written.error, Errors.UNKNOWN_SERVER_ERROR) if written.error else None
        failure = failed_answer(outcome.answer, code or Errors.NOT_COORDINATOR)
        return [] if event.waiter is None else [Reply(event.waiter, failure)]
    out = _timers(event.group_id, outcome.timers, ctx)
    if outcome.downgrade is not None:
        out += install_downgrade(state, outcome.downgrade, ctx)  # the records are not replayed
    else:
        for record in outcome.records:
            apply_record(state.groups, record)
    if event.waiter is not None:
        out.append(Reply(event.waiter, outcome if outcome.answer is None else outcome.answer))
    return out


def _heartbeat(state: GroupsState, event: ConsumerHeartbeat, ctx: GroupContext) -> list[Effect]:
    hb = event.request
    told: list[Effect] = []  # classic members waiting in a group that is upgraded
    try:
        validate_heartbeat(hb, ctx.consumer.assignors)
        existing = state.groups.get(hb.group_id)
        if event.leaving:
            outcome = leave(existing, hb, ctx.topics())
            if hb.member_epoch == LEAVE_GROUP_MEMBER_EPOCH:  # fenced: maybe the last consumer-protocol member
                outcome = downgrade_after_fencing(existing, hb.member_id, ctx) or outcome
        elif (
            hb.member_epoch == 0
            and isinstance(existing, ClassicGroup)
            and not existing.is_in(GroupState.EMPTY)
        ):
            told, converted, records, timers = upgrade(existing, ctx)
            if isinstance(converted, GroupError):
                raise converted
            outcome = heartbeat(converted, hb, ctx.topics(), ctx.consumer, ctx.now_ms)
            outcome.records[:0], outcome.timers[:0] = records, timers
        else:
            outcome = heartbeat(existing, hb, ctx.topics(), ctx.consumer, ctx.now_ms)
    except GroupError as exc:
        return [*told, Reply(event.waiter, exc)]
    return told + carry_out(hb.group_id, outcome, event.waiter, state, ctx)


def fence_by_timer(state: GroupsState, group_id: str, member_id: str, why: str, ctx) -> list[Effect]:
    """``consumerGroupFenceMemberOperation``: a timer of the member fired; nothing if it has gone."""
    group = state.groups.get(group_id)
    if not isinstance(group, ConsumerGroup) or member_id not in group.members:
        return []
    log.info("consumer group %s: member %s fenced, %s", group_id, member_id, why)
    try:
        outcome = fence_member(group, member_id, ctx)
    except GroupError as exc:  # a downgrade that cannot be done: Kafka's operation fails, nothing changes
        log.warning("consumer group %s: member %s not fenced: %s", group_id, member_id, exc)
        return []
    return carry_out(group_id, outcome, None, state, ctx)


def _session_expired(state: GroupsState, event: ConsumerSessionExpired, ctx: GroupContext) -> list[Effect]:
    return fence_by_timer(state, event.group_id, event.member_id, "its session expired", ctx)


def _rebalance_expired(
    state: GroupsState, event: ConsumerRebalanceExpired, ctx: GroupContext
) -> list[Effect]:
    group = state.groups.get(event.group_id)
    member = group.members.get(event.member_id) if isinstance(group, ConsumerGroup) else None
    if member is None or member.member_epoch != event.member_epoch:
        return []  # it moved on from that epoch in time
    return fence_by_timer(state, event.group_id, event.member_id, "it did not revoke in time", ctx)


def reloaded_sessions(state: GroupsState, ctx: GroupContext) -> list[Effect]:
    """After a restart every reloaded member gets a fresh session, and a member that still has
    partitions to give up a fresh rebalance timeout (Kafka's ``onLoaded``)."""
    out: list[Effect] = []
    for group in state.groups.values():
        if not isinstance(group, ConsumerGroup):
            continue
        timers: list = []
        for member in group.members.values():
            timers.append(SessionTimer(member.member_id))
            if member.state == MemberState.UNREVOKED_PARTITIONS:
                timers.append(
                    RebalanceTimer(member.member_id, member.member_epoch, member.rebalance_timeout_ms)
                )
        out.extend(_timers(group.group_id, timers, ctx))
    return out


RULES = {
    ConsumerHeartbeat: _heartbeat,
    ConsumerRecordsWritten: _records_written,
    ConsumerSessionExpired: _session_expired,
    ConsumerRebalanceExpired: _rebalance_expired,
}
