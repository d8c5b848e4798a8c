"""The difference from the previous report, and the history over runs.

The previous report is its ``summary.json`` (see ``outputs.summary_json``), so a comparison needs no
traces from earlier runs. A divergence counts as fixed only when its stored case, replayed on the
current targets (a campaign does this, ``harness/diff/replays.py``), no longer shows it; one seen
again on replay is still there, one not replayed is neither, and one whose API version did not run
again is "not retested". A divergence counts as new only when the previous report's run drew the case
that shows it now (same targets, same seed, so the same case) and did not see it, and its own stored
case shows it again; one first shown by a case the previous run never drew is "first found", new to
the report but no change in behaviour, and one its case does not show again, or a request meeting a
crash the previous report already had, is "unconfirmed".
The history is the previous report's history carried forward plus this roll-up's runs, one point per
run id, oldest first."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from .model import DiffRunFacts, DivergenceCluster, Rollup, RuleRun, RunRow
from .timeline import ApiPoint, CauseSpan, api_trend, cause_spans

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
    # seen now, not before, in a case the previous report's run also drew (same pair, same seed): a
    # change in behaviour (or, where a previous report says nothing of its drawing, not knowable)
    new_divergences: list[DivergenceCluster] = field(default_factory=list)
    # seen now, not before, but first in a case the previous run never drew: new to the report only
    first_found: list[DivergenceCluster] = field(default_factory=list)
    # seen now, not before, in a case the previous run drew, but its own stored case does not show it
    # again: a sighting that depends on timing (a crash seen by whichever request was in flight), which
    # cannot tell a change
    unconfirmed: list[DivergenceCluster] = field(default_factory=list)
    # seen before, not now, and its stored case replayed on the current targets no longer shows it
    fixed_divergences: list[FormerDivergence] = field(default_factory=list)
    # seen before, not drawn now, but its stored case replayed on the current targets still shows it
    still_there: list[FormerDivergence] = field(default_factory=list)
    # seen before, not now; its API version ran, but its case was not replayed: neither fixed nor not
    not_replayed: list[FormerDivergence] = field(default_factory=list)
    not_retested: list[FormerDivergence] = field(default_factory=list)
    verdict_changes: list[VerdictChange] = field(default_factory=list)
    pass_rate: float | None = None
    previous_pass_rate: float | None = None
    judged: int = 0  # the pass rates' denominators: judged exchanges, now and in the previous report
    previous_judged: int = 0
    history: list[HistoryPoint] = field(default_factory=list)
    rule_changes: list[RuleChange] = field(default_factory=list)
    rule_history: list[RuleRun] = field(default_factory=list)  # every conformance run, oldest first
    cause_history: list[CauseSpan] = field(default_factory=list)  # every signature over the reports
    api_trend: list[ApiPoint] = field(default_factory=list)  # agreement per API and target over reports

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
            "first_found": [d.signature for d in self.first_found],
            "unconfirmed": [d.signature for d in self.unconfirmed],
            "fixed_divergences": [asdict(d) for d in self.fixed_divergences],
            "still_there": [asdict(d) for d in self.still_there],
            "not_replayed": [asdict(d) for d in self.not_replayed],
            "not_retested": [asdict(d) for d in self.not_retested],
            "verdict_changes": [asdict(c) for c in self.verdict_changes],
            "pass_rate": self.pass_rate,
            "previous_pass_rate": self.previous_pass_rate,
            "judged": self.judged,
            "previous_judged": self.previous_judged,
            "pass_rate_change": self.pass_rate_change,
            "rule_changes": [asdict(c) for c in self.rule_changes],
        }


def judged_count(grid: list[dict[str, Any]] | Rollup) -> int:
    """Judged (everything but skipped) exchanges across the whole grid: the pass rate's denominator."""
    cells = [asdict(c) for c in grid.grid] if isinstance(grid, Rollup) else grid
    return sum(int(c["total"]) - int(c["skipped"]) for c in cells)


def overall_pass_rate(grid: list[dict[str, Any]] | Rollup) -> float | None:
    """Passed over judged (everything but skipped) exchanges, across the whole grid."""
    cells = [asdict(c) for c in grid.grid] if isinstance(grid, Rollup) else grid
    passed = sum(int(c["passed"]) for c in cells)
    judged = judged_count(grid)
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


def _drawn_before(previous: dict[str, Any]) -> dict[tuple[tuple[str, ...], int], int] | None:
    """(targets, seed) -> how many cases the previous report's runs drew with that seed on that pair;
    None when the previous report does not say (one written before it recorded its drawing)."""
    runs = previous.get("diff_runs")
    if not isinstance(runs, list):
        return None
    drew: dict[tuple[tuple[str, ...], int], int] = {}
    for run in runs:
        if isinstance(run, dict) and isinstance(run.get("seed"), int) and isinstance(run.get("drawn"), int):
            key = (tuple(run.get("targets") or ()), run["seed"])
            drew[key] = max(drew.get(key, 0), run["drawn"])
    return drew


def _drawn_by_previous(
    d: DivergenceCluster, runs: list[DiffRunFacts], drew: dict[tuple[tuple[str, ...], int], int]
) -> bool:
    """Did the previous report's runs draw a case that shows ``d`` now? Drawing is a function of the
    seed, so case n of a seed is the same case in every run that drew that far."""
    for run in runs:
        first = run.first_seen.get(d.signature)
        if first is not None and run.seed is not None and first < drew.get((run.targets, run.seed), 0):
            return True
    return False


def _known_crash(d: DivergenceCluster, current: Rollup, previous: dict[str, Any]) -> bool:
    """Is ``d`` a request meeting a crash the previous report already had (same target, same last
    words)? A target that dies of one request is seen dead by whichever request is in flight, so which
    signature shows a crash depends on timing; the crash itself is what is new or not."""
    if not any('"crashed"' in pair for pair in d.values):
        return False
    before = {
        (c.get("target"), c.get("message")) for c in previous.get("crashes") or [] if isinstance(c, dict)
    }
    met = [c for c in current.crashes if (c.api_name, c.api_version) == (d.api_name, d.api_version)]
    return bool(met) and all((c.target, c.message) in before for c in met)


def _crash_still_had(former: dict[str, Any], previous: dict[str, Any], current: Rollup) -> bool:
    """Was ``former`` a request meeting a crash that the targets still have (same target, same last
    words, met by any request now)? Then a replay that met no crash proves only the timing changed."""
    if not any('"crashed"' in str(text) for pair in former.get("values") or [] for text in pair):
        return False
    had = {
        (c.get("target"), c.get("message"))
        for c in previous.get("crashes") or []
        if isinstance(c, dict)
        and (c.get("api_name"), c.get("api_version")) == (former.get("api_name"), former.get("api_version"))
    }
    return bool(had) and bool(had & {(c.target, c.message) for c in current.crashes})


def compare(current: Rollup, previous_summary: dict[str, Any] | None, *, now: str = "") -> Comparison:
    """What changed since the report whose summary is ``previous_summary`` (None: no previous); ``now``
    is this report's time, which the history across reports is kept by."""
    comparison = _compare(current, previous_summary)
    fixed = {d.signature for d in comparison.fixed_divergences}
    comparison.cause_history = cause_spans(current, previous_summary, fixed, now)
    comparison.api_trend = api_trend(current, previous_summary, now)
    return comparison


def _compare(current: Rollup, previous_summary: dict[str, Any] | None) -> Comparison:
    comparison = Comparison(
        pass_rate=overall_pass_rate(current),
        judged=judged_count(current),
        history=_history(current, previous_summary),
        rule_history=_rule_history(current, previous_summary),
    )
    if previous_summary is None:
        return comparison
    comparison.rule_changes = _rule_changes(current, previous_summary)
    comparison.has_previous = True
    comparison.previous_generated_at = previous_summary.get("generated_at")
    comparison.previous_pass_rate = overall_pass_rate(previous_summary.get("grid", []))
    comparison.previous_judged = judged_count(previous_summary.get("grid", []))

    before = {d["signature"]: d for d in previous_summary.get("divergences", [])}
    now = {d.signature for d in current.divergences}
    drew = _drawn_before(previous_summary)
    for d in current.divergences:
        if d.signature in before:
            continue
        if drew is not None and not _drawn_by_previous(d, current.diff_runs, drew):
            comparison.first_found.append(d)
        elif drew is not None and (not d.reproduced or _known_crash(d, current, previous_summary)):
            comparison.unconfirmed.append(d)
        else:
            comparison.new_divergences.append(d)
    exercised = _exercised(current)
    replayed = {r.signature: r.shown for r in current.replays if r.shown is not None}
    for signature in sorted(before.keys() - now):
        d = before[signature]
        former = FormerDivergence(signature, d["api_name"], int(d["api_version"]), tuple(d["targets"]))
        if signature in replayed:
            still = replayed[signature] or _crash_still_had(d, previous_summary, current)
            (comparison.still_there if still else comparison.fixed_divergences).append(former)
        elif all((former.api_name, former.api_version, t) in exercised for t in former.targets):
            comparison.not_replayed.append(former)
        else:
            comparison.not_retested.append(former)

    verdicts = {(v["scenario"], v["target"]): v["verdict"] for v in previous_summary.get("chaos", [])}
    comparison.verdict_changes = [
        VerdictChange(v.scenario, v.target, verdicts[(v.scenario, v.target)], v.verdict)
        for v in current.chaos
        if (v.scenario, v.target) in verdicts and verdicts[(v.scenario, v.target)] != v.verdict
    ]
    return comparison
