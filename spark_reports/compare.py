"""The difference from the previous report, and the history over runs.

The previous report is its ``summary.json`` (see ``outputs.summary_json``), so a comparison needs no
traces from earlier runs. A divergence counts as fixed only when this report exercised the same API
version on every target that showed it; one that was simply not run again is "not retested", never
"fixed". The history is the previous report's history carried forward plus this roll-up's runs,
one point per run id, oldest first."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from .model import DivergenceCluster, Rollup, RuleRun, RunRow

__all__ = [
    "Comparison",
    "FormerDivergence",
    "HistoryPoint",
    "RuleChange",
    "VerdictChange",
    "compare",
    "overall_pass_rate",
]


@dataclass(frozen=True, slots=True)
class HistoryPoint:
    run_id: str
    started_at: str
    kind: str
    exchanges: int
    passed: int
    diverged: int
    errors: int
    signatures: int  # distinct divergence signatures seen in the run

    @property
    def pass_rate(self) -> float | None:
        judged = self.passed + self.diverged + self.errors
        return self.passed / judged if judged else None

    def to_json(self) -> dict[str, Any]:
        return asdict(self) | {"pass_rate": None if self.pass_rate is None else round(self.pass_rate, 6)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> HistoryPoint:
        return cls(
            run_id=str(data["run_id"]),
            started_at=str(data.get("started_at", "")),
            kind=str(data.get("kind", "")),
            exchanges=int(data.get("exchanges", 0)),
            passed=int(data.get("passed", 0)),
            diverged=int(data.get("diverged", 0)),
            errors=int(data.get("errors", 0)),
            signatures=int(data.get("signatures", 0)),
        )


@dataclass(frozen=True, slots=True)
class FormerDivergence:
    """A divergence of the previous report that this one did not see."""

    signature: str
    api_name: str
    api_version: int
    targets: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class VerdictChange:
    scenario: str
    target: str
    before: str
    after: str


@dataclass(frozen=True, slots=True)
class RuleChange:
    """A rule whose status on a target (its worst outcome over versions) is not what it was."""

    rule_id: str
    target: str
    before: str
    after: str


@dataclass(slots=True)
class Comparison:
    has_previous: bool = False
    previous_generated_at: str | None = None
    new_divergences: list[DivergenceCluster] = field(default_factory=list)
    fixed_divergences: list[FormerDivergence] = field(default_factory=list)
    not_retested: list[FormerDivergence] = field(default_factory=list)
    verdict_changes: list[VerdictChange] = field(default_factory=list)
    pass_rate: float | None = None
    previous_pass_rate: float | None = None
    history: list[HistoryPoint] = field(default_factory=list)
    rule_changes: list[RuleChange] = field(default_factory=list)
    rule_history: list[RuleRun] = field(default_factory=list)  # every conformance run, oldest first

    @property
    def pass_rate_change(self) -> float | None:
        if self.pass_rate is None or self.previous_pass_rate is None:
            return None
        return self.pass_rate - self.previous_pass_rate

    def to_json(self) -> dict[str, Any]:
        return {
            "has_previous": self.has_previous,
            "previous_generated_at": self.previous_generated_at,
            "new_divergences": [d.signature for d in self.new_divergences],
            "fixed_divergences": [asdict(d) for d in self.fixed_divergences],
            "not_retested": [asdict(d) for d in self.not_retested],
            "verdict_changes": [asdict(c) for c in self.verdict_changes],
            "pass_rate": self.pass_rate,
            "previous_pass_rate": self.previous_pass_rate,
            "pass_rate_change": self.pass_rate_change,
            "rule_changes": [asdict(c) for c in self.rule_changes],
        }


def overall_pass_rate(grid: list[dict[str, Any]] | Rollup) -> float | None:
    """Passed over judged (everything but skipped) exchanges, across the whole grid."""
    cells = [asdict(c) for c in grid.grid] if isinstance(grid, Rollup) else grid
    passed = sum(int(c["passed"]) for c in cells)
    judged = sum(int(c["total"]) - int(c["skipped"]) for c in cells)
    return passed / judged if judged else None


def _history_of(rollup: Rollup) -> list[HistoryPoint]:
    per_run = Counter(run for d in rollup.divergences for run in d.runs)
    return [_point(run, per_run[run.run_id]) for run in rollup.runs]


def _point(run: RunRow, signatures: int) -> HistoryPoint:
    return HistoryPoint(
        run.run_id, run.started_at, run.kind, run.exchanges, run.passed, run.diverged, run.errors, signatures
    )


def _history(rollup: Rollup, previous: dict[str, Any] | None) -> list[HistoryPoint]:
    points = {p.run_id: p for p in map(HistoryPoint.from_json, (previous or {}).get("history", []))}
    points.update((p.run_id, p) for p in _history_of(rollup))  # a run read again counts as read now
    return sorted(points.values(), key=lambda p: (p.started_at, p.run_id))


def _exercised(rollup: Rollup) -> set[tuple[str, int, str]]:
    """(API name, version, target) that this roll-up judged at least one exchange of."""
    return {(c.api_name, c.api_version, c.target) for c in rollup.grid if c.total > c.skipped}


def _rule_history(rollup: Rollup, previous: dict[str, Any] | None) -> list[RuleRun]:
    runs = {}
    for data in (previous or {}).get("rule_history", []):
        try:
            run = RuleRun(**{name: data[name] for name in RuleRun.__slots__})
        except (KeyError, TypeError):  # a point an older report wrote differently: history goes on without it
            continue
        runs[run.run_id, run.target] = run
    runs.update(((r.run_id, r.target), r) for r in rollup.rule_runs)
    return sorted(runs.values(), key=lambda r: (r.started_at, r.run_id, r.target))


def _rule_changes(current: Rollup, previous: dict[str, Any]) -> list[RuleChange]:
    """Rules whose status changed on a target both reports ran; a rule one of them lacks, or did not get
    to run within its budget, is no change."""
    before = previous.get("rule_status") or {}
    changes = []
    for target, now in sorted(current.rule_status.items()):
        then = before.get(target) if isinstance(before, dict) else None
        if not isinstance(then, dict):
            continue
        changes += [
            RuleChange(rule, target, str(then[rule]), status)
            for rule, status in now.items()
            if rule in then and then[rule] != status and "not-run" not in (then[rule], status)
        ]
    return changes


def compare(current: Rollup, previous_summary: dict[str, Any] | None) -> Comparison:
    """What changed since the report whose summary is ``previous_summary`` (None: no previous)."""
    comparison = Comparison(
        pass_rate=overall_pass_rate(current),
        history=_history(current, previous_summary),
        rule_history=_rule_history(current, previous_summary),
    )
    if previous_summary is None:
        return comparison
    comparison.rule_changes = _rule_changes(current, previous_summary)
    comparison.has_previous = True
    comparison.previous_generated_at = previous_summary.get("generated_at")
    comparison.previous_pass_rate = overall_pass_rate(previous_summary.get("grid", []))

    before = {d["signature"]: d for d in previous_summary.get("divergences", [])}
    now = {d.signature for d in current.divergences}
    comparison.new_divergences = [d for d in current.divergences if d.signature not in before]
    exercised = _exercised(current)
    for signature in sorted(before.keys() - now):
        d = before[signature]
        former = FormerDivergence(signature, d["api_name"], int(d["api_version"]), tuple(d["targets"]))
        retested = all((former.api_name, former.api_version, t) in exercised for t in former.targets)
        (comparison.fixed_divergences if retested else comparison.not_retested).append(former)

    verdicts = {(v["scenario"], v["target"]): v["verdict"] for v in previous_summary.get("chaos", [])}
    comparison.verdict_changes = [
        VerdictChange(v.scenario, v.target, verdicts[(v.scenario, v.target)], v.verdict)
        for v in current.chaos
        if (v.scenario, v.target) in verdicts and verdicts[(v.scenario, v.target)] != v.verdict
    ]
    return comparison
