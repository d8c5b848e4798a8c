"""Verdicts: every check's findings, grouped by anomaly, each allowed or not, with the reason. What is
allowed follows from the workload's settings and the scenario's promise (``promises.allowed_anomalies``,
reasons from ``promises.verdict_reasons``); anything else found is a violation."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .checks import Finding, run_checks
from .history import History
from .kafka_checks import KAFKA_CHECKS
from .promises import ANOMALIES, Promise, WorkloadSettings, allowed_anomalies, settings_allow
from .replication_checks import REPLICATION_CHECKS

__all__ = [
    "ANOMALIES",
    "Promise",
    "Verdict",
    "WorkloadSettings",
    "allowed_anomalies",
    "check_history",
    "expected_anomalies",
]


@dataclass(frozen=True, slots=True)
class Verdict:
    anomaly: str
    count: int
    allowed: bool
    example: tuple[int, ...]  # the smallest stretch of history found: op indexes
    detail: str
    reason: str = ""  # "allowed: <setting>" / "forbidden: <settings or promise>", when the caller said

    @property
    def violation(self) -> bool:
        return self.count > 0 and not self.allowed


def expected_anomalies(
    *,
    acks: str = "all",
    idempotence: bool = True,
    retries: bool = True,
    max_in_flight: int = 5,
    isolation_level: str = "read_committed",
    transactional: bool = False,
    complete_reads: bool = False,
    workload: str = "produce",
    min_insync_replicas: int | None = None,
    unclean_leader_election: bool = False,
    replication_factor: int | None = None,
) -> frozenset[str]:
    """What Kafka does not promise under these settings, so finding it is no violation (no scenario
    promise on top: ``allowed_anomalies`` adds one)."""
    return settings_allow(
        WorkloadSettings(
            workload=workload,
            acks=str(acks),
            idempotence=idempotence,
            retries=retries,
            max_in_flight=max_in_flight,
            isolation_level=isolation_level,
            transactional=transactional,
            complete_reads=complete_reads,
            min_insync_replicas=min_insync_replicas,
            unclean_leader_election=unclean_leader_election,
            replication_factor=replication_factor,
        )
    )


def check_history(
    history: History, allowed: frozenset[str] = frozenset(), reasons: Mapping[str, str] | None = None
) -> list[Verdict]:
    """One verdict per anomaly the checkers know; ``reasons`` (``promises.verdict_reasons``) says why
    each is allowed or not."""
    findings: list[Finding] = run_checks(history)
    for check in (*KAFKA_CHECKS, *REPLICATION_CHECKS):
        findings.extend(check(history))
    by_anomaly: dict[str, list[Finding]] = {}
    for finding in findings:
        by_anomaly.setdefault(finding.anomaly, []).append(finding)
    unnamed = by_anomaly.keys() - set(ANOMALIES)
    if unnamed:  # a check's finding no verdict would show
        raise ValueError(f"checks reported anomalies missing from ANOMALIES: {', '.join(sorted(unnamed))}")
    verdicts = []
    for anomaly in ANOMALIES:
        found = by_anomaly.get(anomaly, [])
        smallest = min(found, key=lambda f: (max(f.ops) - min(f.ops), len(f.ops)), default=None)
        verdicts.append(
            Verdict(
                anomaly,
                len(found),
                anomaly in allowed,
                smallest.ops if smallest else (),
                smallest.detail if smallest else "",
                (reasons or {}).get(anomaly, ""),
            )
        )
    return verdicts
