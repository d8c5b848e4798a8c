"""The dashboard's conformance grid: a row for every (API, version) any target of a differential run
advertised, a column per target.

A cell that was exercised shows the share of its exchanges that agreed with the other target, and is
coloured by the share in which this target is neither known nor suspected to deviate from Kafka: a
difference the verdicts lay on the other side leaves this side's cell unmarked. A cell with an unknown
verdict is marked on both sides and says so. A pair a target advertised but no case reached says "not
exercised"; one it does not offer says which targets do."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from .charts import NO_RATE, rate_band, rate_legend
from .markup import esc, fmt_count, fmt_rate, version_label
from .model import GridCell, OfferedCell
from .sections_results import empty_note, outcomes_by, section

__all__ = ["cell_state", "grid_rows", "grid_section"]

Row = tuple[int, str, int]  # api key, api name, version


def grid_rows(cells: Sequence[GridCell], offered: Sequence[OfferedCell]) -> tuple[list[Row], list[str]]:
    """Every (API, version) exercised or advertised, and every target, both sorted."""
    rows = {(c.api_key, c.api_name, c.api_version) for c in cells}
    rows |= {(o.api_key, o.api_name, o.api_version) for o in offered}
    # an exercised row and an advertised one may name an API differently (a trace without a name)
    by_key = {
        (k, v): (k, n, v) for k, n, v in sorted(rows, key=lambda r: r[1].startswith("api-"), reverse=True)
    }
    targets = sorted({c.target for c in cells} | {o.target for o in offered})
    return sorted(by_key.values()), targets


def cell_state(cell: GridCell) -> str:
    """Who a cell's differences count against: ``deviates`` (a verdict names this target), ``unknown``
    (no verdict: both are suspects), ``matches`` (they differed, and the other side deviates) or
    ``agrees`` (nothing differed)."""
    if cell.deviates:
        return "deviates"
    if cell.unknown:
        return "unknown"
    return "matches" if cell.diverged else "agrees"


_STATE_NOTE = {
    "deviates": "deviates from Kafka in {n:,}",
    "unknown": "verdict unknown for {n:,}",
    "matches": "matches Kafka; the other side deviates",
    "agrees": "",
}


def _exercised(cell: GridCell) -> str:
    judged = cell.total - cell.skipped
    state = cell_state(cell)
    band = rate_band(cell.kafka_rate if judged else None)
    n = cell.deviates if state == "deviates" else cell.unknown
    note = _STATE_NOTE[state].format(n=n)
    tooltip = (
        f"{cell.target} {cell.api_name} {version_label(cell.api_version)}: {cell.total:,} exchanges, "
        f"{cell.passed:,} agreed, {cell.diverged:,} differed ({cell.deviates:,} deviating from Kafka, "
        f"{cell.unknown:,} with an unknown verdict), {cell.errors:,} error, {cell.timeouts:,} timeout, "
        f"{cell.closed:,} closed, {cell.skipped:,} skipped"
    )
    counts = [f"{fmt_count(cell.total)} ex"] + ([note] if note else [])
    rate = cell.pass_rate if judged else None
    return (
        f'<td class="cell" {_where(cell.target, cell.api_key, cell.api_version)} data-state="exercised" '
        f'data-blame="{state}" '
        f'style="background:{band.background};color:{band.foreground}" title="{esc(tooltip)}" '
        f'data-rate="{"" if rate is None else f"{rate:.6f}"}">'
        f'<div class="rate">{fmt_rate(rate)}</div><div class="counts">{esc(" · ".join(counts))}</div></td>'
    )


def _where(target: str, api_key: int, version: int) -> str:
    return f'data-target="{esc(target)}" data-api-key="{api_key}" data-version="{version}"'


def _not_exercised(target: str, offered_by: list[str], row: Row) -> str:
    what = f"{row[1]} {version_label(row[2])}"
    if target in offered_by:
        text, state = "not exercised", "not-exercised"
        tooltip = f"{target} advertises {what}; no case of the runs read reached it"
    elif offered_by:
        text, state = f"only on {', '.join(t for t in offered_by if t != target)}", "not-offered"
        tooltip = f"{target} does not advertise {what}"
    else:
        text, state = "–", "unknown"
        tooltip = f"the runs read do not say whether {target} advertises {what}"
    return (
        f'<td class="cell" {_where(target, row[0], row[2])} data-state="{state}" '
        f'style="background:{NO_RATE.background};'
        f'color:{NO_RATE.foreground}" title="{esc(tooltip)}"><div class="counts">{esc(text)}</div></td>'
    )


def grid_section(cells: Sequence[GridCell], offered: Sequence[OfferedCell] = ()) -> str:
    lead = (
        "Every API version any target advertised, on every target. A number is the share of that "
        "target's judged exchanges that agreed with the other target (errors and closed connections "
        "count as answers). The colour is Kafka's view: a difference whose verdict names the other side "
        "does not mark this one, an unknown verdict marks both and says so. Pairs no case reached say "
        "<b>not exercised</b>; pairs a target does not offer say which do. Hover a cell for its counts."
    )
    if not cells and not offered:
        return section(
            "grid", "Conformance grid", lead, empty_note("No exchanges were judged: nothing to grid.")
        )
    rows, targets = grid_rows(cells, offered)
    by_cell = {(c.api_key, c.api_version, c.target): c for c in cells}
    offered_by: dict[tuple[int, int], list[str]] = defaultdict(list)
    for o in offered:
        offered_by[(o.api_key, o.api_version)].append(o.target)
    head = "".join(f'<col span="1" class="t-{i}">' for i in range(len(targets)))
    header = "".join(f'<th class="target" scope="col">{esc(t)}</th>' for t in targets)
    body, previous_api, exercised = [], None, 0
    for row in rows:
        api_key, api_name, version = row
        tds = []
        for target in targets:
            cell = by_cell.get((api_key, version, target))
            tds.append(
                _exercised(cell)
                if cell is not None
                else _not_exercised(target, sorted(offered_by.get((api_key, version), [])), row)
            )
            exercised += cell is not None
        repeat = " repeat" if api_name == previous_api else ""
        previous_api = api_name
        body.append(
            f'<tr data-row><td class="api{repeat}">{esc(api_name)}<span hidden> {api_key}</span></td>'
            f'<td class="mono">{esc(version_label(version))}</td>{"".join(tds)}</tr>'
        )
    table = (
        '<div class="tools"><input type="search" placeholder="filter: API, version or target text" '
        'aria-label="filter the grid" data-filter="grid-table">'
        f'<span class="hint">{len(rows):,} API versions × {len(targets)} targets: {exercised:,} of '
        f"{len(rows) * len(targets):,} cells exercised</span></div>"
        '<div class="scroll"><table class="grid" id="grid-table">'
        '<colgroup><col class="api-col"><col class="version-col"></colgroup>'
        f'<colgroup class="targets">{head}</colgroup>'
        f'<thead><tr><th scope="col">API</th><th scope="col">version</th>{header}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>{rate_legend()}"
    )
    chart = ""
    if cells:
        chart = outcomes_by(
            cells,
            lambda c: c.api_name,
            chart_id="chart-outcomes-api",
            kind="outcomes-by-api",
            title="Outcomes by API, all targets",
            desc="For each API, the share of its exchanges on every target that agreed, differed, erred, "
            "timed out, were closed or skipped.",
        )
    return section("grid", "Conformance grid", lead, table + chart)
