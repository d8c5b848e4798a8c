"""Which anomalies a run may show, decided once: what Kafka does not promise under the workload's
settings, then what the scenario's own promise says on top of that.

``allowed_anomalies(promise, settings)`` is that decision, a pure function; the report counts every other
anomaly it finds as a violation. A promise may be stronger than the settings (acks=1 loses writes only
when a leader moves, so a scenario that moves no leader promises no loss even at acks=1) or weaker (a
measured anomaly the settings would forbid); it names the anomalies it rules out (``forbids``) and those
it only measures (``allows``).

``verdict_reasons(promise, settings)`` says why, per anomaly, naming the setting or the promise that
decided: "allowed: acks=1 loses writes the leader alone had when it changes", "forbidden: acks=all,
min.insync.replicas=2, unclean election off: ...". Replication settings (min.insync.replicas,
unclean.leader.election.enable, replication.factor) are the topic's, over the brokers' defaults
(``WorkloadSettings.from_scenario_settings``)."""

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
    "settings_reasons",
    "verdict_reasons",
]

ANOMALIES = (
    "lost-write",
    "lost-write-leader-change",
    "lost-write-unclean",
    "vanished-read",
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
    "hw-backwards",
    "split-brain",
    "stale-leader-write",
    "replica-divergence",
    "lagging-replica-in-isr",
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
    min_insync_replicas: int | None = None  # None: not a replicated topic, or not said
    unclean_leader_election: bool = False
    replication_factor: int | None = None

    @classmethod
    def from_client_settings(
        cls, workload: str, settings: Mapping[str, Any], *, complete_reads: bool = True
    ) -> WorkloadSettings:
        """From a scenario's producer settings (Java client names; absent ones at the client's
        defaults), and the topic's replication settings if it names them (Kafka's config names). A
        transactional producer is idempotent whatever it was told."""
        transactional = workload == "transactions"
        min_insync = settings.get("min.insync.replicas")
        replication_factor = settings.get("replication.factor")
        return cls(
            workload=workload,
            acks=str(settings.get("acks", "all")),
            idempotence=bool(settings.get("enable.idempotence", True)) or transactional,
            retries=int(settings.get("retries", 1)) > 0,
            max_in_flight=int(settings.get("max.in.flight.requests.per.connection", 5)),
            isolation_level=str(settings.get("isolation.level", "read_committed")),
            transactional=transactional,
            complete_reads=complete_reads,
            min_insync_replicas=None if min_insync is None else int(min_insync),
            unclean_leader_election=_flag(settings.get("unclean.leader.election.enable", False)),
            replication_factor=None if replication_factor is None else int(replication_factor),
        )

    @classmethod
    def from_scenario_settings(
        cls,
        workload: str,
        settings: Mapping[str, Any],
        *,
        topic: Mapping[str, Any] | None = None,
        broker: Mapping[str, Any] | None = None,
        complete_reads: bool = True,
    ) -> WorkloadSettings:
        """A scenario's client settings with its topic's settings over its brokers' (a topic config
        overrides the broker default of the same name, as in Kafka)."""
        merged = {**(broker or {}), **(topic or {}), **settings}
        return cls.from_client_settings(workload, merged, complete_reads=complete_reads)

    @property
    def durability(self) -> str:
        """The settings an acknowledged write's survival rests on: ``acks=all, min.insync.replicas=2,
        unclean election off``."""
        parts = [f"acks={self.acks}"]
        if self.min_insync_replicas is not None:
            parts.append(f"min.insync.replicas={self.min_insync_replicas}")
        if self.replication_factor is not None or self.min_insync_replicas is not None:
            parts.append("unclean election on" if self.unclean_leader_election else "unclean election off")
        return ", ".join(parts)


def _flag(value: Any) -> bool:
    """A config flag given as TOML (true) or as Kafka's text ("true")."""
    return value.strip().lower() == "true" if isinstance(value, str) else bool(value)


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


def settings_reasons(settings: WorkloadSettings) -> dict[str, str]:
    """What Kafka does not promise under these settings, each with the setting that lets it happen."""
    reasons = {}
    if settings.acks == "0":
        loses = "acks=0 is fire and forget: no answer says a write landed"
    elif settings.acks == "1":
        loses = "acks=1 loses writes the leader alone had when it changes"
    else:
        loses = ""
    if loses:
        for anomaly in ("lost-write", "lost-write-leader-change", "lost-write-unclean"):
            reasons[anomaly] = loses
    if settings.unclean_leader_election:
        unclean = "unclean.leader.election.enable=true lets a replica outside the ISR lead without"
        reasons.setdefault("lost-write-unclean", f"{unclean} writes the ISR acknowledged")
        reasons["vanished-read"] = f"{unclean} records consumers already read"
        reasons["hw-backwards"] = f"{unclean} the log up to the old high watermark"
        reasons["replica-divergence"] = f"{unclean} records other replicas hold below their high watermarks"
    if not settings.idempotence and settings.retries:
        retried = "enable.idempotence=false with retries: a retried send whose first attempt landed"
        reasons["duplicate"] = f"{retried} is written twice"
        if settings.max_in_flight > 1:
            reasons["nonmonotonic-send"] = (
                f"{retried} lands after its successors "
                f"(max.in.flight.requests.per.connection={settings.max_in_flight})"
            )
    if settings.isolation_level == "read_uncommitted":
        reasons["G1a"] = "isolation.level=read_uncommitted reads transactional writes before they commit"
    elif not settings.transactional:
        reasons["G1a"] = "a non-transactional send the client gave up on may still have landed"
    if not settings.complete_reads:
        reasons["unseen"] = "no complete read at the end: the run stopped before readers caught up"
    if settings.workload == "group":
        # A member that takes a partition over starts at the last committed offset, which may be behind
        # what the previous owner polled (commits can be refused mid-rebalance): Kafka promises
        # at-least-once there, so polls across members may repeat or go back, never skip.
        takeover = "a group member that takes a partition over starts at the last committed offset"
        reasons["nonmonotonic-poll"] = reasons["int-nonmonotonic-poll"] = takeover
    return reasons


def settings_allow(settings: WorkloadSettings) -> frozenset[str]:
    """What Kafka does not promise under these settings, so finding it is no violation by itself."""
    return frozenset(settings_reasons(settings))


def _forbidding(anomaly: str, settings: WorkloadSettings) -> str:
    """Why Kafka promises the anomaly never happens under these settings."""
    durable = settings.durability
    if anomaly == "duplicate":
        if settings.idempotence:
            return "enable.idempotence=true: the broker drops a retried batch it already has"
        return "retries=0: no send is tried twice"
    return {
        "lost-write": f"{durable}: an acknowledged write is on every in-sync replica",
        "lost-write-leader-change": f"{durable}: a clean leader came from the ISR, so it had every "
        "acknowledged write",
        "lost-write-unclean": "unclean.leader.election.enable=false: no replica outside the ISR may lead",
        "vanished-read": "unclean election off: consumers read only below the high watermark, which "
        "every in-sync replica has",
        "hw-backwards": "the high watermark only grows while the leader stays",
        "split-brain": "one leader per leader epoch, whatever the settings",
        "stale-leader-write": "a broker that knows a newer leader answers NOT_LEADER_OR_FOLLOWER, whatever "
        "the settings",
        "replica-divergence": "unclean election off: a follower truncates to its leader's log before it "
        "fetches, so records below the high watermark are the same on every replica",
        "lagging-replica-in-isr": "a follower that has not caught up for replica.lag.time.max.ms leaves "
        "the ISR, so acks=all waits only for replicas that keep up",
        "nonmonotonic-send": "idempotence or one request in flight or no retries: sends land in order",
        "G1a": "isolation.level=read_committed with a transactional producer: aborted writes are never read",
        "unseen": "the run ends with a complete read of every partition",
        "nonmonotonic-poll": "a consumer reads each partition in offset order",
        "int-nonmonotonic-poll": "a consumer reads each partition in offset order",
    }.get(anomaly, "Kafka promises it whatever the settings")


def verdict_reasons(promise: Promise, settings: WorkloadSettings) -> dict[str, str]:
    """Every anomaly's ruling with its reason, as ``allowed_anomalies`` decides it: "allowed: <the
    setting that allows it>" or "forbidden: <the settings or the promise that rule it out>"."""
    allowing = settings_reasons(settings)
    out = {}
    for anomaly in ANOMALIES:
        if anomaly in promise.allows:
            out[anomaly] = f"allowed: {allowing.get(anomaly, 'the scenario only measures it')}"
        elif anomaly in allowing and anomaly not in promise.forbids:
            out[anomaly] = f"allowed: {allowing[anomaly]}"
        elif anomaly in allowing:
            out[anomaly] = f"forbidden: the promise rules it out ({promise.text}), though {allowing[anomaly]}"
        else:
            out[anomaly] = f"forbidden: {_forbidding(anomaly, settings)}"
    return out


def allowed_anomalies(promise: Promise, settings: WorkloadSettings) -> frozenset[str]:
    """The anomalies a run under ``settings`` may show without breaking ``promise``: what the settings
    allow, less what the promise forbids, plus what it only measures."""
    return (settings_allow(settings) - promise.forbids) | promise.allows
