"""The dashboard's conformance rules section: every target side by side, the rules next to its
differential exchanges and chaos scenarios; the rules grid (rule family and API x target); the per-API
ledger; what changed since the previous report and each target's runs over time; the tests that did not
pass. Every share is printed with its denominator."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from .charts import rate_band, rate_legend
from .compare import Comparison
from .markup import esc, fmt_rate, version_label
from .model import LedgerRow, Rollup, RuleCell, RuleResult
from .sections_results import empty_note, section

__all__ = ["MAX_RESULTS", "rules_section"]

MAX_RESULTS = 300  # tests listed in full (news first); summary.json has them all
_SEMANTICS_CLASS = {"full": "v-pass", "partial": "v-inconclusive", "none": "v-violation"}


def _share(passed: int, of: int, what: str) -> str:
    rate = passed / of if of else None
    band = rate_band(rate)
    return (
        f'<td class="cell" style="background:{band.background};color:{band.foreground}" '
        f'data-rate="{"" if rate is None else f"{rate:.6f}"}"><div class="rate">{fmt_rate(rate)}</div>'
        f'<div class="counts">{passed:,} / {of:,} {esc(what)}</div></td>'
    )


def _targets_table(rollup: Rollup) -> str:
    """One row per target: rules, differential exchanges and chaos scenarios, each as passed / judged."""
    rows = []
    for target in rollup.targets():
        cells = [c for c in rollup.rules if c.target == target]
        grid = [c for c in rollup.grid if c.target == target and c.api_version >= 0]
        chaos = [v for v in rollup.chaos if v.target == target]
        rules = _share(sum(c.passed for c in cells), sum(c.ran for c in cells), "tests") if cells else _none()
        news = sum(c.surprises for c in cells)
        extra = (
            sum(c.errors for c in cells),
            sum(c.not_applicable for c in cells),
            sum(c.not_run for c in cells),
        )
        exchanges = (
            _share(sum(c.passed for c in grid), sum(c.total - c.skipped for c in grid), "exchanges")
            if grid
            else _none()
        )
        scenarios = (
            _share(sum(v.verdict == "pass" for v in chaos), len(chaos), "scenario runs") if chaos else _none()
        )
        rows.append(
            f'<tr data-target="{esc(target)}"><th scope="row">{esc(target)}</th>{rules}'
            f'<td class="num">{news:,}</td><td class="num">{extra[0]:,}</td><td class="num">{extra[1]:,}</td>'
            f'<td class="num">{extra[2]:,}</td>{exchanges}{scenarios}</tr>'
        )
    return (
        '<div class="scroll"><table id="targets-table"><thead><tr><th>target</th>'
        "<th>rules: passed / ran</th><th class=num>news</th><th class=num>rule errors</th>"
        "<th class=num>not applicable</th><th class=num>not run (budget)</th>"
        "<th>differential: passed / judged</th>"
        f"<th>chaos: passed / run</th></tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
    )


def _none() -> str:
    return '<td class="cell" style="color:#a3abb6">–</td>'


def _rules_grid(cells: Sequence[RuleCell], targets: list[str]) -> str:
    rows: dict[tuple[str, str], dict[str, RuleCell]] = defaultdict(dict)
    for cell in cells:
        rows[cell.family, cell.api_name][cell.target] = cell
    head = "".join(f"<th>{esc(t)}</th>" for t in targets)
    body = []
    for (family, api), by_target in sorted(rows.items()):
        tds = []
        for target in targets:
            cell = by_target.get(target)
            if cell is None:
                tds.append(_none())
                continue
            band = rate_band(cell.pass_rate)
            tooltip = (
                f"{family} / {api} on {target}: {cell.tests:,} tests, {cell.passed:,} passed, "
                f"{cell.failed:,} failed, {cell.errors:,} errors, {cell.not_applicable:,} not applicable, "
                f"{cell.not_run:,} not run, "
                f"{cell.surprises:,} not as known"
            )
            notes = [f"{cell.passed:,} / {cell.ran:,}"]
            extras = ((cell.errors, "err"), (cell.not_run, "not run"), (cell.surprises, "news"))
            notes += [f"{n:,} {w}" for n, w in extras if n]
            if not cell.ran:  # nothing to share: say why
                notes = [f"{n:,} {w}" for n, w in ((cell.not_applicable, "n/a"), *extras) if n]
            tds.append(
                f'<td class="cell" style="background:{band.background};color:{band.foreground}" '
                f'title="{esc(tooltip)}"><div class="rate">{fmt_rate(cell.pass_rate)}</div>'
                f'<div class="counts">{esc(" · ".join(notes))}</div></td>'
            )
        body.append(f'<tr><td class="mono">{esc(family)}</td><td>{esc(api)}</td>{"".join(tds)}</tr>')
    return (
        '<div class="scroll"><table class="grid" id="rules-grid"><thead><tr><th>rule family</th><th>API</th>'
        f"{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
    )


def _ledger(rows: Sequence[LedgerRow], targets: list[str]) -> str:
    by_api: dict[tuple[int, str], dict[str, LedgerRow]] = defaultdict(dict)
    for row in rows:
        by_api[row.api_key, row.api_name][row.target] = row
    head = "".join(f"<th>{esc(t)}</th>" for t in targets)
    body = []
    for (key, name), by_target in sorted(by_api.items()):
        tds = []
        for target in targets:
            row = by_target.get(target)
            if row is None:
                tds.append("<td class=hint>–</td>")
                continue
            route = f"v{row.versions}" if row.routed else "not routed"
            badge = _SEMANTICS_CLASS.get(row.semantics, "")
            ran = row.passed + row.failed
            tds.append(
                f'<td><span class="badge {badge}">{esc(row.semantics)}</span> '
                f'<span class="mono">{row.passed:,} / {ran:,}</span> '
                f'<span class="hint">{esc(route)}</span></td>'
            )
        body.append(f'<tr><td class="num">{key}</td><td>{esc(name)}</td>{"".join(tds)}</tr>')
    return (
        '<div class="scroll"><table id="ledger-table"><thead><tr><th class="num">key</th><th>API</th>'
        f"{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
    )


def _changes(comparison: Comparison) -> str:
    if not comparison.has_previous:
        return ""
    if not comparison.rule_changes:
        return "<h3>Changes since the previous report</h3><p class=hint>No rule changed its status.</p>"
    rows = "".join(
        f'<tr><td class="mono">{esc(c.rule_id)}</td><td>{esc(c.target)}</td><td>{esc(c.before)}</td>'
        f"<td>{esc(c.after)}</td></tr>"
        for c in comparison.rule_changes
    )
    return (
        f"<h3>Changes since the previous report ({len(comparison.rule_changes):,} rules)</h3>"
        '<table id="rule-changes"><thead><tr><th>rule</th><th>target</th><th>before</th><th>now</th></tr>'
        f"</thead><tbody>{rows}</tbody></table>"
    )


def _history(comparison: Comparison) -> str:
    runs = comparison.rule_history
    if not runs:
        return ""
    rows = "".join(
        f'<tr><td class="mono">{esc(r.run_id)}</td><td>{esc(r.target)}</td>'
        f"<td class=mono>{esc(r.started_at[:19].replace('T', ' '))}</td>"
        f'<td class="num">{fmt_rate(r.pass_rate)}</td>'
        f'<td class="num">{r.passed:,} / {r.passed + r.failed:,}</td>'
        f'<td class="num">{r.errors:,}</td><td class="num">{r.not_applicable:,}</td>'
        f'<td class="num">{r.not_run:,}</td><td class="num">{r.surprises:,}</td></tr>'
        for r in runs
    )
    return (
        f"<h3>Conformance runs over time ({len(runs):,})</h3><p class=hint>This report's runs and those "
        "carried forward from previous reports, oldest first.</p>"
        '<div class="scroll"><table id="rule-history"><thead><tr><th>run</th><th>target</th>'
        '<th>started (UTC)</th><th class="num">passed</th><th class="num">passed / ran</th>'
        '<th class="num">errors</th><th class="num">n/a</th><th class="num">not run</th>'
        '<th class="num">news</th></tr></thead>'
        f"<tbody>{rows}</tbody></table></div>"
    )


def _results(results: Sequence[RuleResult]) -> str:
    if not results:
        return "<h3>Tests that did not pass</h3><p class=hint>none</p>"
    ordered = sorted(results, key=lambda r: (not r.surprise, r.target, r.rule_id, r.api_version))
    shown = ordered[:MAX_RESULTS]
    rows = "".join(
        f'<tr class="{"news" if r.surprise else "known"}"><td class="mono">{esc(r.rule_id)}</td>'
        f"<td>{esc(r.target)}</td><td>{esc(version_label(r.api_version))}</td><td>{esc(r.outcome)}</td>"
        f"<td>{'news' if r.surprise else 'known'}</td><td class=mono>{esc(r.field or '')}</td>"
        f"<td class=mono>{esc(r.kafka_value or '')}</td><td class=mono>{esc(r.target_value or '')}</td>"
        f'<td class="hint">{esc(r.detail or "")}</td><td class="mono">{esc(r.kafka_source)}</td></tr>'
        for r in shown
    )
    news = sum(r.surprise for r in results)
    heading = f"Tests that did not pass ({len(results):,}, {news:,} of them news)"
    if len(shown) < len(results):
        heading += f": the first {len(shown):,} of {len(results):,}, news first (summary.json has all)"
    return (
        f"<h3>{esc(heading)}</h3>"
        '<div class="scroll"><table id="rule-results"><thead><tr><th>rule</th><th>target</th><th>version</th>'
        "<th>outcome</th><th>known?</th><th>field</th><th>Kafka gives</th><th>target gave</th><th>detail</th>"
        f"<th>Kafka source</th></tr></thead><tbody>{rows}</tbody></table></div>"
    )


def rules_section(rollup: Rollup, comparison: Comparison) -> str:
    lead = (
        "Kafka's rules as tests (<code>kconform conform</code>), from each target's newest conformance "
        "run. A share is passed / ran, where ran is passed plus failed; a test that could not be set up "
        "(an error) or does not apply to the target is counted apart. <em>News</em> is an outcome other "
        "than the one known for that kind of target. Each target's differential exchanges and chaos "
        "scenarios stand beside its rules."
    )
    if not rollup.rules:
        body = empty_note("No conformance runs were read: run kconform conform, or a campaign.")
        if rollup.grid or rollup.chaos:
            body = _targets_table(rollup) + body
        return section("rules", "Conformance rules", lead, body)
    targets = sorted(rollup.rule_status)
    body = (
        _targets_table(rollup)
        + "<h3>Rules grid</h3>"
        + rate_legend()
        + _rules_grid(rollup.rules, targets)
        + "<h3>Per-API ledger</h3><p class=hint>Semantics: full when every test that ran passed, partial, "
        "none when none did, untested when none ran; passed / ran; the versions the target routes.</p>"
        + _ledger(rollup.ledger, targets)
        + _changes(comparison)
        + _history(comparison)
        + _results(rollup.rule_results)
    )
    return section("rules", "Conformance rules", lead, body)
