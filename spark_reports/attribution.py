"""Who owns each difference: the engines' counts joined on the driver with the runs' findings
(``findings.py``). Both engines call these with the same shaped rows, so their roll-ups stay equal.

- A grid cell's diverged exchanges split into those this target deviates in (a verdict names it),
  those it is a suspect in (the verdict is unknown) and the rest, which the other side owns.
- A divergence cluster gets the values, verdict, readable case and compared-pair count.
- Chaos operations are tallied per scenario and target, under a fault or not, by how they ended."""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Iterable

from .findings import advertised_ranges, crashes, diff_runs, replays, signature_facts
from .model import (
    ChaosFelt,
    CrashRow,
    DiffRunFacts,
    DivergenceCluster,
    GridCell,
    OfferedCell,
    ReplayRow,
    Rollup,
)
from .runs import RunDirectory

__all__ = ["BLAME_KEYS", "FELT_KEYS", "attribute", "chaos_felt", "pairs_by_signature"]

BLAME_KEYS = ("target", "api_key", "api_label", "api_version")  # + deviates, unknown (counts)
FELT_KEYS = ("scenario", "target", "faulted", "outcome")  # + n


def pairs_by_signature(rows: Iterable[dict]) -> dict[str, int]:
    """Rows of (signature, run_dir, target, n) -> compared pairs per signature: a pair writes one row
    per target, so a run's pairs are its largest per-target count."""
    most: dict[tuple[str, int], int] = defaultdict(int)
    for row in rows:
        key = (row["signature"], row["run_dir"])
        most[key] = max(most[key], row["n"])
    pairs: dict[str, int] = defaultdict(int)
    for (signature, _), n in most.items():
        pairs[signature] += n
    return dict(pairs)


def _blamed(grid: list[GridCell], blame_counts: Iterable[dict]) -> list[GridCell]:
    counts = {tuple(row[k] for k in BLAME_KEYS): row for row in blame_counts}
    out = []
    for cell in grid:
        row = counts.get((cell.target, cell.api_key, cell.api_name, cell.api_version))
        if row is not None:
            cell = dataclasses.replace(cell, deviates=int(row["deviates"]), unknown=int(row["unknown"]))
        out.append(cell)
    return out


def _annotated(clusters: list[DivergenceCluster], runs: list[RunDirectory], pairs: dict[str, int]):
    facts = signature_facts(runs)
    out = []
    for cluster in clusters:
        found = facts.get(cluster.signature)
        extra: dict = {"pairs": pairs.get(cluster.signature, 0)}
        if found is not None:
            extra |= {
                "sides": found.sides or cluster.targets,
                "values": found.values,
                "verdict": found.verdict,
                "deviates": found.deviates or (cluster.targets if found.verdict == "unknown" else ()),
                "verdict_text": found.verdict_text,
                "evidence": found.evidence,
                "cause": found.cause,
                "steps": found.steps,
                "reproduced": found.reproduced,
            }
            if found.case is not None:
                extra |= {"example_case": str(found.case), "repro": f"kconform repro {found.case}"}
        else:  # no run recorded a verdict: both sides are suspects, and the page says so
            extra |= {"deviates": cluster.targets, "verdict_text": "unknown: no run recorded a verdict"}
        out.append(dataclasses.replace(cluster, **extra))
    return out


def chaos_felt(rows: Iterable[dict]) -> list[ChaosFelt]:
    """Rows of (scenario, target, faulted, outcome, n) for chaos operations -> one row per scenario,
    target and fault state."""
    tally: dict[tuple[str, str, bool], dict[str, int]] = {}
    fields = {"pass": "ok", "error": "errors", "timeout": "timeouts", "closed": "closed"}
    for row in rows:
        key = (row["scenario"], row["target"], bool(row["faulted"]))
        counts = tally.setdefault(key, dict.fromkeys(("operations", *fields.values()), 0))
        counts["operations"] += row["n"]
        if row["outcome"] in fields:
            counts[fields[row["outcome"]]] += row["n"]
    return [ChaosFelt(s, t, f, **counts) for (s, t, f), counts in sorted(tally.items())]


def attribute(
    rollup: Rollup,
    runs: list[RunDirectory],
    *,
    blame_counts: Iterable[dict],
    pair_counts: Iterable[dict],
    felt_counts: Iterable[dict],
) -> None:
    """Fill in the roll-up's attribution from the engine's counts and the runs' findings."""
    rollup.grid = _blamed(rollup.grid, blame_counts)
    rollup.divergences = _annotated(rollup.divergences, runs, pairs_by_signature(pair_counts))
    rollup.chaos_felt = chaos_felt(felt_counts)
    rollup.crashes = [
        CrashRow(
            c.target,
            c.api_key,
            c.api_name,
            c.api_version,
            c.message,
            c.times,
            c.runs,
            example_case=str(c.case) if c.case else None,
            repro=f"kconform repro {c.case}" if c.case else None,
        )
        for c in crashes(runs)
    ]
    rollup.offered = [
        OfferedCell(a.target, a.api_key, a.api_name, a.api_version) for a in advertised_ranges(runs)
    ]
    rollup.replays = [ReplayRow(s, t, shown, case, run_id) for run_id, s, t, shown, case in replays(runs)]
    rollup.diff_runs = [DiffRunFacts(*row) for row in diff_runs(runs)]
