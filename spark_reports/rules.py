"""The conformance rules' part of a roll-up, from counts either engine makes.

An engine reads every conformance run's rule rows (``rules/part-*.parquet``) and gives two lists:
counts by (run, target, family, API, rule, outcome, surprise), and the rows of tests that did not pass.
Everything else is decided here, once for both engines:
- the grid, the ledger, each rule's status and the list of tests that did not pass come from each
  target's newest conformance run (by its start, then run id): they say where a target stands now;
- every run is one point of the rules' history.

A rule's status on a target is its worst outcome over the versions it ran at: fail, then error, then
pass; not-applicable only when it applies at none, not-run when a run's budget ended before it."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from kconform.traces.rules import semantics_grade

from .model import LedgerRow, RuleCell, RuleResult, RuleRun, utc_iso
from .runs import RunDirectory

__all__ = ["COUNT_KEYS", "RESULT_COLUMNS", "RulesPart", "rules_part"]

COUNT_KEYS = (
    "run_dir",
    "run_id",
    "target",
    "family",
    "api_key",
    "api_name",
    "rule_id",
    "outcome",
    "surprise",
)
RESULT_COLUMNS = (
    "run_dir",
    "run_id",
    "target",
    "rule_id",
    "api_name",
    "api_version",
    "outcome",
    "expected_outcome",
    "surprise",
    "field",
    "kafka_value",
    "target_value",
    "detail",
    "kafka_source",
)
_WORST_FIRST = ("fail", "error", "pass", "not-applicable", "not-run")


@dataclass(slots=True)
class RulesPart:
    cells: list[RuleCell] = field(default_factory=list)
    ledger: list[LedgerRow] = field(default_factory=list)
    results: list[RuleResult] = field(default_factory=list)
    runs: list[RuleRun] = field(default_factory=list)
    status: dict[str, dict[str, str]] = field(default_factory=dict)


def rules_part(counts: list[dict], results: list[dict], runs: list[RunDirectory]) -> RulesPart:
    """``counts``: dicts with COUNT_KEYS, ``n`` and ``first_us`` (the earliest row's start, microseconds);
    ``results``: dicts with RESULT_COLUMNS for tests whose outcome was fail or error."""
    part = RulesPart(runs=_runs(counts, runs))
    newest = {}
    for run in sorted(part.runs, key=lambda r: (r.started_at, r.run_id)):
        newest[run.target] = run.run_id
    current = [row for row in counts if newest.get(row["target"]) == row["run_id"]]
    part.cells = _cells(current)
    part.status = _status(current)
    part.ledger = _ledger(current, runs, newest)
    part.results = sorted(
        (
            RuleResult(**{k: row[k] for k in RESULT_COLUMNS if k != "run_dir"})
            for row in results
            if newest.get(row["target"]) == row["run_id"]
        ),
        key=lambda r: (r.target, r.rule_id, r.api_version),
    )
    return part


def _runs(counts: list[dict], runs: list[RunDirectory]) -> list[RuleRun]:
    tallies: dict[tuple[int, str, str], Counter] = defaultdict(Counter)
    first: dict[tuple[int, str, str], int] = {}
    for row in counts:
        key = (row["run_dir"], row["run_id"], row["target"])
        tallies[key][row["outcome"]] += row["n"]
        tallies[key]["surprises"] += row["n"] if row["surprise"] else 0
        first[key] = min(first.get(key, row["first_us"]), row["first_us"])
    rows = []
    for (index, run_id, target), tally in tallies.items():
        conform = runs[index].conform or {}
        started = conform.get("started_at") if isinstance(conform.get("started_at"), str) else None
        rows.append(
            RuleRun(
                run_id=run_id,
                target=target,
                started_at=started or utc_iso(first[index, run_id, target]),
                **_counted(tally),
                surprises=tally["surprises"],
                directory=str(runs[index].path),
            )
        )
    return sorted(rows, key=lambda r: (r.started_at, r.run_id, r.target))


def _counted(tally: Counter) -> dict[str, int]:
    """A tally of outcomes as the rows' count fields: every test, then each outcome."""
    return {
        "tests": sum(tally[o] for o in _WORST_FIRST),
        "passed": tally["pass"],
        "failed": tally["fail"],
        "errors": tally["error"],
        "not_applicable": tally["not-applicable"],
        "not_run": tally["not-run"],
    }


def _cells(counts: list[dict]) -> list[RuleCell]:
    tallies: dict[tuple[str, int, str, str], Counter] = defaultdict(Counter)
    for row in counts:
        tally = tallies[row["family"], row["api_key"], row["api_name"], row["target"]]
        tally[row["outcome"]] += row["n"]
        tally["surprises"] += row["n"] if row["surprise"] else 0
    return [
        RuleCell(
            family=family,
            api_key=key,
            api_name=name,
            target=target,
            **_counted(t),
            surprises=t["surprises"],
        )
        for (family, key, name, target), t in sorted(tallies.items())
    ]


def _status(counts: list[dict]) -> dict[str, dict[str, str]]:
    seen: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for row in counts:
        seen[row["target"]][row["rule_id"]].add(row["outcome"])
    return {
        target: {rule: _worst(outcomes) for rule, outcomes in sorted(rules.items())}
        for target, rules in sorted(seen.items())
    }


def _worst(outcomes: set[str]) -> str:
    return next(o for o in _WORST_FIRST if o in outcomes)


def _ledger(counts: list[dict], runs: list[RunDirectory], newest: dict[str, str]) -> list[LedgerRow]:
    tallies: dict[tuple[str, int], Counter] = defaultdict(Counter)
    names: dict[int, str] = {}
    rules: dict[tuple[str, int], set[str]] = defaultdict(set)
    served: dict[str, dict[int, tuple[str, str]]] = defaultdict(dict)  # target -> key -> (name, versions)
    for row in counts:
        tallies[row["target"], row["api_key"]][row["outcome"]] += row["n"]
        rules[row["target"], row["api_key"]].add(row["rule_id"])
        names[row["api_key"]] = row["api_name"]
        conform = runs[row["run_dir"]].conform or {}
        for api in conform.get("apis") or ():
            low, high = api["versions"]
            served[row["target"]][int(api["api_key"])] = (str(api["api_name"]), f"{low}-{high}")
    rows = []
    for target in sorted(newest):
        keys = {k for t, k in tallies if t == target} | set(served[target])
        for key in sorted(keys):
            t = tallies[target, key]
            name, versions = served[target].get(key, (names.get(key, f"api-{key}"), ""))
            rows.append(
                LedgerRow(
                    target=target,
                    api_key=key,
                    api_name=name,
                    routed=key in served[target],
                    versions=versions,
                    rules=len(rules[target, key]),
                    **_counted(t),
                    semantics=semantics_grade(t["pass"], t["fail"]),
                )
            )
    return rows
