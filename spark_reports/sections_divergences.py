"""The dashboard's divergence cards and its crashes.

A card is one field signature: each side's values, the verdict on who deviates from Apache Kafka with
the place in Kafka's source that decides it, the stored case as readable steps, and the command that
replays it from the report's own folder (the case is copied there). Counts are compared pairs: a
request sent to both targets, whose two answers differ in this field."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from .charts import OUTCOME_COLOURS, BarGroup, Series, grouped_bar_chart
from .markup import esc, version_label
from .model import CrashRow, DivergenceCluster, GridCell
from .sections_results import MAX_CHART_ROWS, empty_note, section

__all__ = ["MAX_CLUSTERS", "cluster_order", "crashes_section", "divergences_section", "verdict_badge"]

MAX_CLUSTERS = 300  # cards drawn in full; summary.json has them all
VERDICT_BADGE = {
    "deviates": "v-violation",
    "unknown": "v-inconclusive",
    "allowed": "v-pass",
    "consequence": "",
}


def cluster_order(clusters: Sequence[DivergenceCluster]) -> list[DivergenceCluster]:
    """Most frequent first: the order of the list, and so of its anchors ``divergence-N``."""
    return sorted(clusters, key=lambda d: (-d.pairs, -d.exchanges, d.signature))


def verdict_badge(d: DivergenceCluster) -> str:
    if d.verdict == "deviates":
        text = f"{' and '.join(d.deviates)} deviate{'s' if len(d.deviates) == 1 else ''} from Kafka"
    elif d.verdict == "unknown":
        text = "verdict unknown: both suspect"
    elif d.verdict == "allowed":
        text = "Kafka allows both"
    else:
        text = "a consequence of an earlier step"
    cls = VERDICT_BADGE.get(d.verdict, "")
    return f'<span class="badge {cls}" data-verdict="{esc(d.verdict)}">{esc(text)}</span>'


def _values(d: DivergenceCluster) -> str:
    if not d.values:
        return '<div class="hint" data-values="0">the runs read recorded no values for this signature</div>'
    marked = " <span class=hint>(deviates)</span>"
    head = "".join(
        f"<th>{esc(side)}{marked if side in d.deviates and d.verdict == 'deviates' else ''}</th>"
        for side in d.sides
    )
    rows = "".join(
        f'<tr><td class="mono">{esc(a)}</td><td class="mono">{esc(b)}</td></tr>' for a, b in d.values
    )
    return (
        f'<table class="values" data-values="{len(d.values)}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{rows}</tbody></table>"
    )


def _repro(index: int, d: DivergenceCluster | CrashRow, what: str) -> str:
    if not d.repro:  # say so, rather than leave a reader looking for a command that is not there
        return f'<div class="hint" data-repro="">no stored case replays this {what} in the runs read</div>'
    return (
        f'<div class="repro" data-repro="{esc(d.repro)}">'
        f'<pre><code id="repro-{index}">{esc(d.repro)}</code></pre>'
        f'<button type="button" data-copy="repro-{index}" aria-label="copy the repro command">copy</button>'
        '</div><div class="hint">run it in this report\'s folder: the case is in <code>cases/</code> beside '
        "this page</div>"
    )


def _cluster(index: int, d: DivergenceCluster, new: bool) -> str:
    badges = f'<span class="badge">{esc(d.api_name)} {esc(version_label(d.api_version))}</span>'
    badges += verdict_badge(d) + ('<span class="badge new">new</span>' if new else "")
    facts = [
        f"<span><b>{d.pairs:,}</b> compared pair{'s' if d.pairs != 1 else ''} differ</span>",
        f"<span>in <b>{d.cases:,}</b> case{'s' if d.cases != 1 else ''}</span>",
        f"<span>targets <b>{esc(' vs '.join(d.sides or d.targets))}</b></span>",
        f"<span>runs <span class=mono>{esc(', '.join(d.runs[:4]))}{' …' if len(d.runs) > 4 else ''}"
        "</span></span>",
    ]
    why = f'<p class="why">{esc(d.verdict_text)}'
    why += (
        f' <span class="hint">Kafka: <span class="mono">{esc(d.evidence)}</span></span>' if d.evidence else ""
    )
    why += "</p>"
    steps = ""
    if d.steps:
        items = "".join(f'<li class="mono">{esc(step)}</li>' for step in d.steps)
        steps = f'<ol class="steps" data-steps="{len(d.steps)}">{items}</ol>'
    return (
        f'<article class="cluster" id="divergence-{index}" data-row data-verdict="{esc(d.verdict)}" '
        f'data-deviates="{esc(",".join(d.deviates))}">{badges}'
        f'<div class="sig mono">{esc(d.signature)}</div><div class="facts">{"".join(facts)}</div>'
        f"{_values(d)}{why}{steps}{_repro(index, d, 'signature')}</article>"
    )


def _pairs_by_api(grid: Sequence[GridCell]) -> dict[str, int]:
    """Diverged compared pairs per API version: a pair writes one diverged row per target."""
    rows: dict[str, int] = defaultdict(int)
    for cell in grid:
        if cell.diverged:
            rows[f"{cell.api_name} {version_label(cell.api_version)}"] += cell.diverged
    return {label: n // 2 for label, n in rows.items()}


def divergences_section(
    clusters: Sequence[DivergenceCluster], new_signatures: set[str], grid: Sequence[GridCell] = ()
) -> str:
    lead = (
        "Differences between targets, one card per signature (API/version/field path/kind): each side's "
        "values, who deviates from Apache Kafka and where Kafka's source decides it, the stored case "
        "step by step, and the command that replays it. A compared pair that differs in two fields is on "
        "two cards; the chart counts each pair once."
    )
    if not clusters:
        return section(
            "divergences", "Divergences", lead, empty_note("No divergences: every compared exchange agreed.")
        )
    ordered = cluster_order(clusters)
    per_api = _pairs_by_api(grid)
    top = sorted(per_api.items(), key=lambda kv: -kv[1])[:MAX_CHART_ROWS]
    title = "Compared pairs that differ, by API version"
    if len(per_api) > len(top):
        title += f" (the {len(top)} most of {len(per_api)})"
    chart = (
        grouped_bar_chart(
            [BarGroup(label, (float(n),)) for label, n in top],
            [Series("differing compared pairs", OUTCOME_COLOURS["diverge"])],
            chart_id="chart-divergences",
            kind="divergences-by-api",
            title=title,
            desc="For each API version, how many requests sent to both targets got answers that differ "
            "in any field.",
            axis_title="differing compared pairs",
            fmt=lambda v: f"{v:,.0f}",
        )
        if top
        else ""
    )
    shown = ordered[:MAX_CLUSTERS]
    more = len(ordered) - len(shown)
    new = len(new_signatures & {d.signature for d in ordered})
    tools = (
        '<div class="tools"><input type="search" placeholder="filter: signature, API, target, verdict" '
        'aria-label="filter the divergences" data-filter="divergence-list">'
        f'<span class="hint">{len(ordered):,} signatures, {new:,} '
        f"new{f'; the first {len(shown):,} shown, all are in summary.json' if more else ''}</span></div>"
    )
    items = "".join(_cluster(i, d, d.signature in new_signatures) for i, d in enumerate(shown))
    listing = f'<div class="scroll clusters" id="divergence-list">{items}</div>'
    return section("divergences", "Divergences", lead, chart + tools + listing)


def crashes_section(crashes: Sequence[CrashRow]) -> str:
    lead = (
        "Target processes that ended while answering a request, each with its last words and a case that "
        "crashes it again. Kafka never ends on a request: every failure is caught and answered "
        "(<span class=mono>KafkaApis.handle</span>)."
    )
    if not crashes:
        return section("crashes", "Crashes", lead, empty_note("No target crashed in the runs read."))
    cards = "".join(
        f'<article class="cluster crash" id="crash-{i}" data-row data-target="{esc(c.target)}">'
        f'<span class="badge">{esc(c.api_name)} {esc(version_label(c.api_version))}</span>'
        f'<span class="badge v-violation">{esc(c.target)} crashed {c.times:,} '
        f"time{'s' if c.times != 1 else ''}</span>"
        f'<pre class="message">{esc(c.message or "no last words recorded")}</pre>'
        f'<div class="facts"><span>runs <span class=mono>{esc(", ".join(c.runs))}</span></span></div>'
        f"{_repro(10_000 + i, c, 'crash')}</article>"
        for i, c in enumerate(crashes)
    )
    return section("crashes", "Crashes", lead, f'<div class="clusters">{cards}</div>')
