"""Verdicts: every check's findings, grouped by anomaly, each allowed or not by what the workload's
settings let Kafka promise (acks, idempotence, isolation level, transactions)."""

from __future__ import annotations

from dataclasses import dataclass

from .checks import Finding, run_checks
from .history import History
from .kafka_checks import KAFKA_CHECKS

__all__ = ["ANOMALIES", "Verdict", "check_history", "expected_anomalies"]

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


@dataclass(frozen=True, slots=True)
class Verdict:
    anomaly: str
    count: int
    allowed: bool
    example: tuple[int, ...]  # the smallest stretch of history found: op indexes
    detail: str

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
) -> frozenset[str]:
    """What Kafka does not promise under these settings, so finding it is no violation."""
    allowed = set()
    if str(acks) in ("0", "1"):
        allowed.add("lost-write")  # acks=0 is fire and forget; acks=1 loses what the leader alone had
    if not idempotence and retries:
        allowed.add("duplicate")  # a retried send whose first attempt landed is written twice
        if max_in_flight > 1:
            allowed.add("nonmonotonic-send")  # a retried batch lands after its successors
    if isolation_level == "read_uncommitted" or not transactional:
        allowed.add("G1a")  # a failed (aborted or refused) write may be read uncommitted
    if not complete_reads:
        allowed.add("unseen")  # the run stopped before readers caught up
    return frozenset(allowed)


def check_history(history: History, allowed: frozenset[str] = frozenset()) -> list[Verdict]:
    findings: list[Finding] = run_checks(history)
    for check in KAFKA_CHECKS:
        findings.extend(check(history))
    by_anomaly: dict[str, list[Finding]] = {}
    for finding in findings:
        by_anomaly.setdefault(finding.anomaly, []).append(finding)
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
            )
        )
    return verdicts
