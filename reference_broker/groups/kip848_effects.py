"""KIP-848 heartbeats and timers as the runtime's events: the decisions are ``kip848_rules``'; this turns
each ``Outcome`` into effects. A heartbeat's records are written first and applied to the group only
once written, so a failed write changes nothing; then its timers are set (session expiry, and the
rebalance timeout of a member that must give partitions up) and the member is answered."""

from __future__ import annotations

import logging

from kconform.codecs.errors import Errors

from ..coordinator_runtime import CancelTimer, Effect, Reply, SetTimer, Write
from .errors import GroupError
from .events import (
    ConsumerHeartbeat,
    ConsumerRebalanceExpired,
    ConsumerRecordsWritten,
    ConsumerSessionExpired,
    GroupContext,
    GroupsState,
)
from .kip848_group import ConsumerGroup, MemberState, apply_record
from .kip848_rules import (
    CancelRebalanceTimer,
    CancelTimers,
    Outcome,
    RebalanceTimer,
    SessionTimer,
    fence,
    heartbeat,
    leave,
    rebalance_expired,
    validate_heartbeat,
)

__all__ = ["RULES", "reloaded_sessions"]

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


def _timers(group_id: str, timers: list, ctx: GroupContext) -> list[Effect]:
    out: list[Effect] = []
    for timer in timers:
        if isinstance(timer, SessionTimer):
            expiry = ConsumerSessionExpired(group_id, timer.member_id)
            out.append(
                SetTimer(_session_key(group_id, timer.member_id), ctx.consumer_session_timeout_ms, expiry)
            )
        elif isinstance(timer, RebalanceTimer):
            expiry = ConsumerRebalanceExpired(group_id, timer.member_id, timer.member_epoch)
            out.append(SetTimer(_rebalance_key(group_id, timer.member_id), timer.timeout_ms, expiry))
        elif isinstance(timer, CancelRebalanceTimer):
            out.append(CancelTimer(_rebalance_key(group_id, timer.member_id)))
        elif isinstance(timer, CancelTimers):
            out.append(CancelTimer(_session_key(group_id, timer.member_id)))
            out.append(CancelTimer(_rebalance_key(group_id, timer.member_id)))
    return out


def _carry_out(group_id: str, outcome: Outcome, waiter: int | None, state, ctx) -> list[Effect]:
    then = ConsumerRecordsWritten(group_id, waiter, outcome)
    if not outcome.records:
        return _records_written(state, then, ctx)
    return [Write(group_id, tuple(r.encode() for r in outcome.records), then=then)]


def _records_written(state: GroupsState, event: ConsumerRecordsWritten, ctx: GroupContext) -> list[Effect]:
    written = event.written
    if written is not None and written.failed:
        code = _WRITE_ERRORS.get(written.error, Errors.UNKNOWN_SERVER_ERROR) if written.error else None
        failure = GroupError(code or Errors.NOT_COORDINATOR, "the group's records were not written")
        return [] if event.waiter is None else [Reply(event.waiter, failure)]
    for record in event.outcome.records:
        apply_record(state.groups, record)
    out = _timers(event.group_id, event.outcome.timers, ctx)
    if event.waiter is not None:
        out.append(Reply(event.waiter, event.outcome))
    return out


def _heartbeat(state: GroupsState, event: ConsumerHeartbeat, ctx: GroupContext) -> list[Effect]:
    hb = event.request
    try:
        validate_heartbeat(hb, ctx.consumer.assignors)
        existing = state.groups.get(hb.group_id)
        if event.leaving:
            outcome = leave(existing, hb, ctx.topics())
        else:
            outcome = heartbeat(existing, hb, ctx.topics(), ctx.consumer, ctx.now_ms)
    except GroupError as exc:
        return [Reply(event.waiter, exc)]
    return _carry_out(hb.group_id, outcome, event.waiter, state, ctx)


def _session_expired(state: GroupsState, event: ConsumerSessionExpired, ctx: GroupContext) -> list[Effect]:
    group = state.groups.get(event.group_id)
    if not isinstance(group, ConsumerGroup) or event.member_id not in group.members:
        return []
    log.info("consumer group %s: member %s fenced, its session expired", event.group_id, event.member_id)
    return _carry_out(event.group_id, fence(group, event.member_id, ctx.topics()), None, state, ctx)


def _rebalance_expired(
    state: GroupsState, event: ConsumerRebalanceExpired, ctx: GroupContext
) -> list[Effect]:
    group = state.groups.get(event.group_id)
    if not isinstance(group, ConsumerGroup):
        return []
    outcome = rebalance_expired(group, event.member_id, event.member_epoch, ctx.topics())
    if outcome.records:
        log.info(
            "consumer group %s: member %s fenced, it did not revoke in time", event.group_id, event.member_id
        )
    return _carry_out(event.group_id, outcome, None, state, ctx)


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
