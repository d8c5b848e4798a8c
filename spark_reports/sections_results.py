"""The dashboard's result sections: the conformance grid, the divergence clusters and latency (the chaos
verdicts are in ``sections_chaos``). Each function takes rows of the roll-up and returns one
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
    rate_band,
    rate_legend,
    stacked_bar_chart,
)
from .markup import esc, fmt_count, fmt_rate, fmt_us, version_label
from .model import NO_FAULT, DivergenceCluster, GridCell, LatencyRow

__all__ = [
    "OUTCOME_SERIES",
    "cluster_order",
    "divergences_section",
    "empty_note",
    "grid_section",
    "latency_section",
    "outcome_counts",
    "section",
]

OUTCOME_SERIES = tuple(
    Series(name, OUTCOME_COLOURS[name])
    for name in ("pass", "diverge", "error", "timeout", "closed", "skipped")
)
MAX_CHART_ROWS = 24  # beyond this a bar chart stops being glanceable; the tables list everything
MAX_CLUSTERS = 300  # clusters drawn in full; summary.json has them all
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


def _grid_cell(cell: GridCell | None) -> str:
    if cell is None:
        return '<td class="cell" style="color:#a3abb6">–</td>'
    judged = cell.total - cell.skipped
    rate = cell.pass_rate if judged else None
    band = rate_band(rate)
    tooltip = (
        f"{cell.target} {cell.api_name} {version_label(cell.api_version)}: {cell.total:,} exchanges, "
        f"{cell.passed:,} pass, {cell.diverged:,} diverge, {cell.errors:,} error, {cell.timeouts:,} timeout, "
        f"{cell.closed:,} closed, {cell.skipped:,} skipped"
    )
    notes = [f"{fmt_count(cell.total)} ex"]
    notes += [f"{n:,} {word}" for n, word in ((cell.diverged, "div"), (cell.errors, "err")) if n]
    return (
        f'<td class="cell" style="background:{band.background};color:{band.foreground}" '
        f'title="{esc(tooltip)}" data-rate="{"" if rate is None else f"{rate:.6f}"}">'
        f'<div class="rate">{fmt_rate(rate)}</div>'
        f'<div class="counts">{esc(" · ".join(notes))}</div></td>'
    )


def grid_section(cells: Sequence[GridCell]) -> str:
    lead = (
        "Every API version on every target: the share of judged exchanges that passed (skipped ones are "
        "not judged). In a differential run an exchange passes when both targets answer alike, error "
        "codes and closed connections included. Hover a cell for its counts."
    )
    if not cells:
        return section(
            "grid", "Conformance grid", lead, empty_note("No exchanges were judged: nothing to grid.")
        )
    targets = sorted({c.target for c in cells})
    rows: dict[tuple[int, str, int], dict[str, GridCell]] = defaultdict(dict)
    for cell in cells:
        rows[(cell.api_key, cell.api_name, cell.api_version)][cell.target] = cell
    head = "".join(f'<col span="1" class="t-{i}">' for i in range(len(targets)))
    header = "".join(f'<th class="target" scope="col">{esc(t)}</th>' for t in targets)
    body, previous_api = [], None
    for api_key, api_name, version in sorted(rows):
        by_target = rows[(api_key, api_name, version)]
        repeat = " repeat" if api_name == previous_api else ""
        previous_api = api_name
        body.append(
            f'<tr data-row><td class="api{repeat}">{esc(api_name)}<span hidden> {api_key}</span></td>'
            f'<td class="mono">{esc(version_label(version))}</td>'
            + "".join(_grid_cell(by_target.get(t)) for t in targets)
            + "</tr>"
        )
    table = (
        '<div class="tools"><input type="search" placeholder="filter: API, version or target text" '
        'aria-label="filter the grid" data-filter="grid-table">'
        f'<span class="hint">{len(rows):,} API versions × {len(targets)} targets</span></div>'
        '<div class="scroll"><table class="grid" id="grid-table">'
        '<colgroup><col class="api-col"><col class="version-col"></colgroup>'
        f'<colgroup class="targets">{head}</colgroup>'
        f'<thead><tr><th scope="col">API</th><th scope="col">version</th>{header}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>{rate_legend()}"
    )
    chart = outcomes_by(
        cells,
        lambda c: c.api_name,
        chart_id="chart-outcomes-api",
        kind="outcomes-by-api",
        title="Outcomes by API, all targets",
        desc="For each API, the share of its exchanges on every target that passed, diverged, erred, "
        "timed out, were closed or skipped.",
    )
    return section("grid", "Conformance grid", lead, table + chart)


def cluster_order(clusters: Sequence[DivergenceCluster]) -> list[DivergenceCluster]:
    """Most frequent first: the order of the list, and so of its anchors ``divergence-N``."""
    return sorted(clusters, key=lambda d: (-d.exchanges, d.signature))


def _cluster(index: int, d: DivergenceCluster, new: bool) -> str:
    badges = f'<span class="badge">{esc(d.api_name)} {esc(version_label(d.api_version))}</span>'
    badges += '<span class="badge new">new</span>' if new else ""
    facts = [
        f"<span><b>{d.exchanges:,}</b> exchanges</span>",
        f"<span><b>{d.cases:,}</b> cases</span>",
        f"<span>targets <b>{esc(' vs '.join(d.targets))}</b></span>",
        f"<span>runs <span class=mono>{esc(', '.join(d.runs[:4]))}{' …' if len(d.runs) > 4 else ''}"
        "</span></span>",
    ]
    if d.example_case:
        facts.append(f"<span>example <span class=mono>{esc(d.example_case)}</span></span>")
    repro = ""
    if d.repro:
        repro = (
            f'<div class="repro"><pre><code id="repro-{index}">{esc(d.repro)}</code></pre>'
            f'<button type="button" data-copy="repro-{index}" aria-label="copy the repro command">'
            "copy</button></div>"
        )
    else:  # say so, rather than leave a reader looking for a command that is not there
        repro = '<div class="hint">no stored case replays this signature in the runs read</div>'
    return (
        f'<article class="cluster" id="divergence-{index}" data-row>{badges}'
        f'<div class="sig mono">{esc(d.signature)}</div><div class="facts">{"".join(facts)}</div>'
        f"{repro}</article>"
    )


def divergences_section(clusters: Sequence[DivergenceCluster], new_signatures: set[str]) -> str:
    lead = (
        "Differences between targets, clustered by signature (API/version/field path/kind): an exchange "
        "counts once under each field it differs in. Most frequent first; each comes with a case that "
        "replays it."
    )
    if not clusters:
        return section(
            "divergences", "Divergences", lead, empty_note("No divergences: every compared exchange agreed.")
        )
    ordered = cluster_order(clusters)
    per_api: dict[str, int] = defaultdict(int)
    for d in ordered:
        per_api[f"{d.api_name} {version_label(d.api_version)}"] += d.exchanges
    top = sorted(per_api.items(), key=lambda kv: -kv[1])[:MAX_CHART_ROWS]
    title = "Divergent exchanges by API version"
    if len(per_api) > len(top):
        title += f" (the {len(top)} most of {len(per_api)})"
    chart = grouped_bar_chart(
        [BarGroup(label, (float(n),)) for label, n in top],
        [Series("divergent exchanges", OUTCOME_COLOURS["diverge"])],
        chart_id="chart-divergences",
        kind="divergences-by-api",
        title=title,
        desc="For each API version, how many exchanges diverged between targets, across all signatures.",
        axis_title="divergent exchanges",
        fmt=lambda v: f"{v:,.0f}",
    )
    shown = ordered[:MAX_CLUSTERS]
    more = len(ordered) - len(shown)
    new = len(new_signatures & {d.signature for d in ordered})
    tools = (
        '<div class="tools"><input type="search" placeholder="filter: signature, API, target" '
        'aria-label="filter the divergences" data-filter="divergence-list">'
        f'<span class="hint">{len(ordered):,} signatures, {new:,} '
        f"new{f'; the first {len(shown):,} shown, all are in summary.json' if more else ''}</span></div>"
    )
    items = "".join(_cluster(i, d, d.signature in new_signatures) for i, d in enumerate(shown))
    listing = f'<div class="scroll clusters" id="divergence-list">{items}</div>'
    return section("divergences", "Divergences", lead, chart + tools + listing)


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
