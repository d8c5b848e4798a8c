"""Which anomalies a run may show, decided once: what Kafka does not promise under the workload's
settings, then what the scenario's own promise says on top of that.

``allowed_anomalies(promise, settings)`` is that decision, a pure function; the report counts every other
anomaly it finds as a violation. A promise may be stronger than the settings (acks=1 loses writes only
when a leader moves, so a scenario that moves no leader promises no loss even at acks=1) or weaker (a
measured anomaly the settings would forbid); it names the anomalies it rules out (``forbids``) and those
it only measures (``allows``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ANOMALIES",
    "Promise",
    "PromiseError",
    "WorkloadSettings",
    "allowed_anomalies",
    "settings_allow",
]

ANOMALIES = (
    "lost-write",
    "duplicate",
    "inconsistent-offsets",
    "G1a",
    "future-read",
    "poll-skip",
    "nonmonotonic-poll",
    "int-poll-skip",
    "int-nonmonotonic-poll",
    "nonmonotonic-send",
    "int-nonmonotonic-send",
    "unseen",
    "G0",
    "G1c",
    "double-ownership",
    "committed-offset-backwards",
    "hw-ahead-of-isr",
)


class PromiseError(ValueError):
    """A promise that names an anomaly the checkers do not know, or forbids and allows the same one."""


@dataclass(frozen=True, slots=True)
class WorkloadSettings:
    """What the workload did, in the terms Kafka's promises depend on."""

    workload: str = "produce"  # produce, transactions or group
    acks: str = "all"
    idempotence: bool = True
    retries: bool = True
    max_in_flight: int = 5
    isolation_level: str = "read_committed"
    transactional: bool = False
    complete_reads: bool = False  # a read of every partition to its end once the faults were over

    @classmethod
    def from_client_settings(
        cls, workload: str, settings: Mapping[str, Any], *, complete_reads: bool = True
    ) -> WorkloadSettings:
        """From a scenario's producer settings (Java client names; absent ones at the client's
        defaults). A transactional producer is idempotent whatever it was told."""
        transactional = workload == "transactions"
        return cls(
            workload=workload,
            acks=str(settings.get("acks", "all")),
            idempotence=bool(settings.get("enable.idempotence", True)) or transactional,
            retries=int(settings.get("retries", 1)) > 0,
            max_in_flight=int(settings.get("max.in.flight.requests.per.connection", 5)),
            isolation_level=str(settings.get("isolation.level", "read_committed")),
            transactional=transactional,
            complete_reads=complete_reads,
        )


@dataclass(frozen=True, slots=True)
class Promise:
    text: str
    forbids: frozenset[str] = frozenset()
    allows: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        unknown = (self.forbids | self.allows) - set(ANOMALIES)
        if unknown:
            raise PromiseError(
                f"unknown anomalies {', '.join(sorted(unknown))}; the checkers know {', '.join(ANOMALIES)}"
            )
        both = self.forbids & self.allows
        if both:
            raise PromiseError(f"{', '.join(sorted(both))} both forbidden and allowed")


def settings_allow(settings: WorkloadSettings) -> frozenset[str]:
    """What Kafka does not promise under these settings, so finding it is no violation by itself."""
    allowed = set()
    if settings.acks in ("0", "1"):
        allowed.add("lost-write")  # acks=0 is fire and forget; acks=1 loses what the leader alone had
    if not settings.idempotence and settings.retries:
        allowed.add("duplicate")  # a retried send whose first attempt landed is written twice
        if settings.max_in_flight > 1:
            allowed.add("nonmonotonic-send")  # a retried batch lands after its successors
    if settings.isolation_level == "read_uncommitted" or not settings.transactional:
        allowed.add("G1a")  # a failed (aborted or refused) write may be read uncommitted
    if not settings.complete_reads:
        allowed.add("unseen")  # the run stopped before readers caught up
    if settings.workload == "group":
        # A member that takes a partition over starts at the last committed offset, which may be behind
        # what the previous owner polled (commits can be refused mid-rebalance): Kafka promises
        # at-least-once there, so polls across members may repeat or go back, never skip.
        allowed |= {"nonmonotonic-poll", "int-nonmonotonic-poll"}
    return frozenset(allowed)


def allowed_anomalies(promise: Promise, settings: WorkloadSettings) -> frozenset[str]:
    """The anomalies a run under ``settings`` may show without breaking ``promise``: what the settings
    allow, less what the promise forbids, plus what it only measures."""
    return (settings_allow(settings) - promise.forbids) | promise.allows
