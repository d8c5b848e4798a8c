"""The dashboard's shared section parts and its latency section (the grid, the divergences and the chaos
verdicts have modules of their own). Each function takes rows of the roll-up and returns one
``<section>``; every piece of text from a trace is escaped on the way in."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from .charts import (
    OUTCOME_COLOURS,
    BarGroup,
    Series,
    StackedBar,
    grouped_bar_chart,
    stacked_bar_chart,
)
from .markup import esc, fmt_us
from .model import NO_FAULT, GridCell, LatencyRow

__all__ = ["MAX_CHART_ROWS", "OUTCOME_SERIES", "empty_note", "latency_section", "outcome_counts", "section"]

OUTCOME_SERIES = tuple(
    Series(name, OUTCOME_COLOURS[name])
    for name in ("pass", "diverge", "error", "timeout", "closed", "skipped")
)
MAX_CHART_ROWS = 24  # beyond this a bar chart stops being glanceable; the tables list everything
LATENCY_SERIES = (Series("p50", "#9cc3ea"), Series("p99", "#3b7dd8"), Series("p99.9", "#173f7a"))


def section(section_id: str, title: str, lead: str, body: str) -> str:
    return (
        f'<section class="panel" id="{section_id}" aria-labelledby="{section_id}-h">'
        f'<h2 id="{section_id}-h">{esc(title)}</h2><p class="lead">{lead}</p>{body}</section>'
    )


def empty_note(text: str) -> str:
    return f'<p class="empty">{esc(text)}</p>'


def outcome_counts(cell: GridCell) -> tuple[int, ...]:
    """A cell's counts in the order of ``OUTCOME_SERIES``."""
    return (cell.passed, cell.diverged, cell.errors, cell.timeouts, cell.closed, cell.skipped)


def _summed(cells: Sequence[GridCell]) -> tuple[int, ...]:
    return tuple(map(sum, zip(*(outcome_counts(c) for c in cells), strict=True))) if cells else (0,) * 6


def _rate(counts: tuple[int, ...]) -> float | None:
    judged = sum(counts) - counts[-1]
    return counts[0] / judged if judged else None


def outcomes_by(cells: Sequence[GridCell], key, *, chart_id: str, kind: str, title: str, desc: str) -> str:
    """A stacked bar of outcomes per group of cells (per target, per API)."""
    groups: dict[str, list[GridCell]] = defaultdict(list)
    for cell in cells:
        groups[key(cell)].append(cell)
    bars = [StackedBar(label, _summed(members)) for label, members in groups.items()]
    if len(bars) > MAX_CHART_ROWS:  # keep the ones a reader should look at: the lowest pass rates
        bars = sorted(bars, key=lambda b: (_rate(b.counts) or 0.0, b.label))[:MAX_CHART_ROWS]
        title += f" (the {MAX_CHART_ROWS} lowest of {len(groups)})"
    return stacked_bar_chart(
        sorted(bars, key=lambda b: b.label),
        OUTCOME_SERIES,
        chart_id=chart_id,
        kind=kind,
        title=title,
        desc=desc,
    )


def _latency_chart(rows: Sequence[LatencyRow], *, chart_id: str, kind: str, title: str, desc: str) -> str:
    """p50, p99 and p99.9 per target and API, with the fault under the label when there is one."""
    chosen = sorted(rows, key=lambda r: -r.p99_us)[:MAX_CHART_ROWS]
    if len(rows) > len(chosen):
        title += f" (the {len(chosen)} slowest at p99 of {len(rows)})"
    groups = [
        BarGroup(
            f"{r.target} · {r.api_name}",
            (r.p50_us, r.p99_us, r.p999_us),
            sublabel="" if r.fault == NO_FAULT else r.fault,
        )
        for r in sorted(chosen, key=lambda r: (r.target, r.api_name, r.fault))
    ]
    return grouped_bar_chart(
        groups,
        LATENCY_SERIES,
        chart_id=chart_id,
        kind=kind,
        title=title,
        desc=desc,
        axis_title="latency (log scale)",
        fmt=fmt_us,
        log_scale=True,
    )


def latency_section(rows: Sequence[LatencyRow]) -> str:
    lead = "Percentiles of exchange latency by target and API, in calm and under each active fault."
    if not rows:
        return section("latency", "Latency", lead, empty_note("No latencies were recorded."))
    calm = [r for r in rows if r.fault == NO_FAULT]
    faulted = [r for r in rows if r.fault != NO_FAULT]
    charts = []
    if calm:
        charts.append(
            _latency_chart(
                calm,
                chart_id="chart-latency",
                kind="latency",
                title="Latency with no fault active: p50, p99, p99.9",
                desc="For each target and API, the 50th, 99th and 99.9th percentile of exchange latency "
                "while no fault was active, on a logarithmic axis.",
            )
        )
    if faulted:
        charts.append(
            _latency_chart(
                faulted,
                chart_id="chart-latency-faults",
                kind="latency-faults",
                title="Latency under faults: p50, p99, p99.9",
                desc="For each target, API and active fault, the 50th, 99th and 99.9th percentile of "
                "exchange latency, on a logarithmic axis.",
            )
        )
    body = "".join(
        f'<tr data-row><td>{esc(r.target)}</td><td>{esc(r.api_name)}</td><td class="mono">{esc(r.fault)}</td>'
        f'<td class="num">{r.exchanges:,}</td><td class="num">{fmt_us(r.p50_us)}</td>'
        f'<td class="num">{fmt_us(r.p99_us)}</td><td class="num">{fmt_us(r.p999_us)}</td></tr>'
        for r in sorted(rows, key=lambda r: (r.target, r.api_name, r.fault != NO_FAULT, r.fault))
    )
    table = (
        '<div class="tools"><input type="search" placeholder="filter: target, API, fault" '
        'aria-label="filter latencies" data-filter="latency-table"></div>'
        '<div class="scroll"><table id="latency-table"><thead><tr><th>target</th><th>API</th><th>fault</th>'
        '<th class="num">exchanges</th><th class="num">p50</th><th class="num">p99</th>'
        f'<th class="num">p99.9</th></tr></thead><tbody>{body}</tbody></table></div>'
    )
    return section("latency", "Latency", lead, "".join(charts) + table)
