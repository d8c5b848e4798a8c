"""The timers a consumer group's decisions ask for, as plain values: ``kip848_effects`` turns them into the
runtime's ``SetTimer``/``CancelTimer`` once the decision's records are written.

A member on the consumer protocol has a session timeout and, while it must give partitions up, a
rebalance timeout. A member on the classic protocol (it joined with JoinGroup) has a session timeout of
its own length, a join timeout (it was told to rejoin and must, within its rebalance timeout: Kafka's
``scheduleConsumerGroupJoinTimeoutIfAbsent``) and a sync timeout (after its JoinGroup answer it must
SyncGroup within its rebalance timeout: ``scheduleConsumerGroupSyncTimeout``). Every one of them, when it
fires, fences the member."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "CancelJoinTimer",
    "CancelRebalanceTimer",
    "CancelSyncTimer",
    "CancelTimers",
    "JoinTimer",
    "RebalanceTimer",
    "SessionTimer",
    "SyncTimer",
]


@dataclass(frozen=True)
class SessionTimer:
    member_id: str
    timeout_ms: int | None = None  # None: group.consumer.session.timeout.ms; a classic member's own


@dataclass(frozen=True)
class RebalanceTimer:
    member_id: str
    member_epoch: int
    timeout_ms: int


@dataclass(frozen=True)
class CancelRebalanceTimer:
    member_id: str


@dataclass(frozen=True)
class JoinTimer:
    """Set only if the member has none running: the first REBALANCE_IN_PROGRESS starts the clock."""

    member_id: str
    timeout_ms: int


@dataclass(frozen=True)
class CancelJoinTimer:
    member_id: str


@dataclass(frozen=True)
class SyncTimer:
    member_id: str
    timeout_ms: int


@dataclass(frozen=True)
class CancelSyncTimer:
    member_id: str


@dataclass(frozen=True)
class CancelTimers:
    """Every timer of the member (Kafka's ``cancelTimers``): it left or was fenced."""

    member_id: str
