"""The dashboard's chaos section: a matrix of scenario x target. A cell holds the verdict of each run of
that scenario on that target, the operations they completed, every anomaly that broke the promise and
every anomaly the settings allow, each with its measured count. A count always says what it is counted
among: the acknowledged operations of the cell's runs, or only the runs when a result (from an older
``chaos.json``) does not split its operations by outcome. Violations follow, with the history that shows
each."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence

from .markup import esc
from .model import ChaosFelt, ChaosVerdict, count_basis, runs_text
from .sections_results import empty_note, section

__all__ = ["chaos_section"]

VERDICT_CLASS = {"pass": "v-pass", "violation": "v-violation", "error": "v-error"}
NOT_RUN = '<span class="hint">–</span>'


def _summed(counts: Iterable[dict[str, int]]) -> dict[str, int]:
    total: Counter[str] = Counter()
    for count in counts:
        total.update(count)  # keeps zero counts: an allowed anomaly measured at 0 is still shown
    return dict(sorted(total.items()))


def _operations(runs: Sequence[ChaosVerdict]) -> str:
    completed = sum(v.operations for v in runs)
    if all(v.acknowledged is not None for v in runs):
        acknowledged = sum(v.acknowledged or 0 for v in runs)
        several = f" in {runs_text(len(runs))}" if len(runs) > 1 else ""
        return f"{acknowledged:,} acknowledged of {completed:,} operations{several}"
    return f"{completed:,} operations in {runs_text(len(runs))}"


def _verdict_badge(verdict: str) -> str:
    cls = VERDICT_CLASS.get(verdict, "v-inconclusive")
    return f'<span class="badge {cls}">{esc(verdict)}</span>'


def _verdicts(runs: Sequence[ChaosVerdict]) -> str:
    if len(runs) == 1:
        return _verdict_badge(runs[0].verdict)
    tally = Counter(v.verdict for v in runs)
    return "".join(
        f'{_verdict_badge(verdict)}<span class="of-runs">{n:,} of {runs_text(len(runs))}</span> '
        for verdict, n in sorted(tally.items())
    ).strip()


def _anomalies(runs: Sequence[ChaosVerdict]) -> str:
    """The cell's broken promises, then what the settings allow: seen ones each with its count, the
    ones never seen together at 0."""
    basis = count_basis(runs)
    reasons: dict[str, str] = {}
    for v in runs:
        reasons = v.reasons | reasons  # the first run's reason wins
    items = [
        _item("violation", f"violation {name}: {n:,} {basis}", reasons.get(name, ""))
        for name, n in _summed(v.violations for v in runs).items()
    ]
    allowed = _summed(v.allowed for v in runs)
    items += [
        _item("allowed", f"allowed {name}: {n:,} {basis}", reasons.get(name, ""))
        for name, n in allowed.items()
        if n
    ]
    unseen = [name for name, n in allowed.items() if not n]
    if unseen:
        items.append(_item("unseen", f"allowed, 0 {basis}: {', '.join(unseen)}", ""))
    return f"<ul>{''.join(items)}</ul>" if items else ""


def _item(cls: str, text: str, reason: str) -> str:
    title = f' title="{esc(reason)}"' if reason else ""
    return f'<li class="{cls}"{title}>{esc(text)}</li>'


def _felt(rows: Sequence[ChaosFelt]) -> str:
    """How the faults were felt: the client operations traced while a fault was active and while none
    was, and how many of each did not end well (an error, a timeout, a closed connection)."""
    parts = []
    for faulted, label in ((True, "under faults"), (False, "calm")):
        picked = [r for r in rows if r.faulted is faulted]
        if picked:
            total = sum(r.operations for r in picked)
            bad = sum(r.errors + r.timeouts + r.closed for r in picked)
            parts.append(f"{label}: {bad:,} of {total:,} traced operations failed")
    if not parts:
        return ""
    return f'<div class="counts felt" data-felt>{esc("; ".join(parts))}</div>'


def _cell(scenario: str, target: str, runs: Sequence[ChaosVerdict], felt: Sequence[ChaosFelt]) -> str:
    where = f'data-scenario="{esc(scenario)}" data-target="{esc(target)}"'
    if not runs:
        return f'<td class="chaos-cell" {where}>{NOT_RUN}</td>'
    title = "; ".join(f"run {v.run_id}: {v.verdict}, {v.operations:,} operations" for v in runs)
    return (
        f'<td class="chaos-cell" {where} title="{esc(title)}">{_verdicts(runs)}'
        f'<div class="counts">{esc(_operations(runs))}</div>{_felt(felt)}{_anomalies(runs)}</td>'
    )


def _excerpt_text(lines: list) -> str:
    return "\n".join(line if isinstance(line, str) else json.dumps(line, default=str) for line in lines)


def _violation(v: ChaosVerdict) -> str:
    basis = count_basis([v])
    broken = ", ".join(f"{name}: {n:,} {basis}" for name, n in sorted(v.violations.items()))
    excerpts = "".join(
        f"<h3>{esc(name)}</h3><pre>{esc(_excerpt_text(v.excerpts.get(name, [])) or 'no excerpt recorded')}"
        "</pre>"
        for name in sorted(v.violations or v.excerpts)
    )
    return (
        f'<details class="violation"><summary>{esc(v.scenario)} on {esc(v.target)}: {esc(v.promise)} '
        f"— {esc(broken or 'a broken promise')} <span class=mono>(run {esc(v.run_id)})</span></summary>"
        f"{excerpts}</details>"
    )


def _matrix(verdicts: Sequence[ChaosVerdict], felt: Sequence[ChaosFelt]) -> str:
    targets = sorted({v.target for v in verdicts})
    cells: dict[tuple[str, str], list[ChaosVerdict]] = defaultdict(list)
    for v in verdicts:
        cells[(v.scenario, v.target)].append(v)
    felt_in: dict[tuple[str, str], list[ChaosFelt]] = defaultdict(list)
    for row in felt:
        felt_in[(row.scenario, row.target)].append(row)
    rows = []
    for scenario in sorted({v.scenario for v in verdicts}):
        promise = next(v.promise for v in verdicts if v.scenario == scenario)
        tds = "".join(
            _cell(scenario, t, cells.get((scenario, t), []), felt_in.get((scenario, t), [])) for t in targets
        )
        rows.append(f'<tr data-row><td class="mono">{esc(scenario)}</td><td>{esc(promise)}</td>{tds}</tr>')
    header = "".join(f"<th>{esc(t)}</th>" for t in targets)
    return (
        '<div class="scroll"><table class="chaos" id="chaos-table"><thead><tr><th>scenario</th>'
        f"<th>promise</th>{header}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
    )


def chaos_section(verdicts: Sequence[ChaosVerdict], felt: Sequence[ChaosFelt] = ()) -> str:
    lead = (
        "Each chaos scenario's verdict on each target: whether the promise it tests (acks, idempotence, "
        "group exclusivity ...) held while faults were injected. A cell counts the operations its runs "
        "completed, how the faults were felt (traced client operations that failed while a fault was "
        "active, and while none was: failures are expected under faults, a broken promise is not), "
        "every anomaly that broke the promise, and every anomaly the scenario's settings allow, as "
        "measured. Open a violation for the history that shows it."
    )
    if not verdicts:
        return section("chaos", "Chaos verdicts", lead, empty_note("No chaos scenarios were run."))
    broken = [v for v in verdicts if v.verdict == "violation"]
    errors = [v for v in verdicts if v.verdict == "error"]
    details = ""
    if broken:
        details += "<h3>Violations</h3>" + "".join(_violation(v) for v in broken)
    if errors:
        details += "<h3>Scenarios that could not run</h3><ul class=plain>" + "".join(
            f"<li><span class=mono>{esc(v.scenario)}</span> on {esc(v.target)}: "
            f"{esc(v.error or 'error')}</li>"
            for v in errors
        )
        details += "</ul>"
    return section("chaos", "Chaos verdicts", lead, _matrix(verdicts, felt) + details)
