"""The dashboard's overview sections: the verdict at a glance, what changed since the previous report,
the history over runs and the run directories read."""

from __future__ import annotations

from .charts import OUTCOME_COLOURS, LinePoint, Series, line_chart
from .compare import Comparison, FormerDivergence
from .markup import esc, fmt_count, fmt_rate
from .model import Rollup
from .sections_divergences import cluster_order
from .sections_results import outcomes_by, section
from .sections_timeline import api_trend_table, cause_table

__all__ = [
    "changes_section",
    "exchange_split",
    "history_section",
    "judged_exchanges",
    "runs_section",
    "summary_section",
]

HALF_WIDTH = 560  # viewBox width of a chart drawn in half the page, so its text stays readable


def _plural(n: int, word: str, plural: str | None = None) -> str:
    return f"{n:,} {word if n == 1 else plural or word + 's'}"


def _verdict(rollup: Rollup) -> tuple[str, str]:
    """The one sentence a reader takes away, and how it should look (good, warn, bad, none)."""
    violations = [v for v in rollup.chaos if v.verdict == "violation"]
    failed = [v for v in rollup.chaos if v.verdict == "error"]
    apis = {(d.api_name, d.api_version) for d in rollup.divergences}
    errors = sum(c.errors for c in rollup.grid if c.api_version >= 0)
    surprises = sum(c.surprises for c in rollup.rules)
    if not rollup.exchanges and not rollup.chaos and not rollup.rules:
        return "Nothing to report: the runs read hold no exchanges, chaos results or rule tests.", "none"
    findings = []
    if surprises:
        findings.append(f"{_plural(surprises, 'conformance test')} ended other than known")
    if violations:
        findings.append(f"{_plural(len(violations), 'broken promise')} under chaos")
    if rollup.divergences:
        signatures = _plural(len(rollup.divergences), "divergence signature")
        findings.append(f"{signatures} in {_plural(len(apis), 'API version')}")
    if errors:
        findings.append(f"{_plural(errors, 'exchange')} ended in error")
    if failed:
        findings.append(f"{_plural(len(failed), 'chaos scenario')} could not run")
    if findings:
        return "; ".join(findings) + ".", "bad" if violations else "warn"
    judged = sum(c.total - c.skipped for c in rollup.grid)
    parts = [f"all {fmt_count(judged)} judged exchanges conform"] if rollup.grid else []
    if rollup.rules:
        tests = sum(c.tests for c in rollup.rules)
        parts.append(f"all {fmt_count(tests)} conformance tests ended as known for their targets")
    if rollup.chaos:
        parts.append(f"all {_plural(len(rollup.chaos), 'chaos scenario')} kept their promise")
    text = "; ".join(parts)
    return text[0].upper() + text[1:] + ".", "good"


def _tile(label: str, value: str, note: str = "", *, key: str = "", numbers: tuple = ()) -> str:
    """A headline figure. ``numbers`` (its value and denominator) are written as data attributes, so
    a test can recompute each from summary.json."""
    data = f' data-tile="{key}"' if key else ""
    data += "".join(f' data-n{i}="{n}"' for i, n in enumerate(numbers))
    return (
        f'<div class="tile"{data}><div class="label">{esc(label)}</div><div class="value">{value}</div>'
        f'<div class="note">{note}</div></div>'
    )


def exchange_split(rollup: Rollup) -> dict[str, int]:
    """The exchanges read, by what they are: compared (both targets' rows of a differential run's
    pairs), chaos client operations, and others (traces of a dissect, say)."""
    split = {"diff": 0, "chaos": 0, "other": 0}
    for run in rollup.runs:
        split[run.kind if run.kind in split else "other"] += run.exchanges
    return split


def judged_exchanges(rollup: Rollup) -> int:
    """The pass rate's denominator: every grid exchange but the skipped ones."""
    return sum(c.total - c.skipped for c in rollup.grid)


def _change(comparison: Comparison) -> str:
    """The pass rate's change since the previous report, with both denominators: two campaigns draw
    different cases, so a change in rate is a change in sample as much as in behaviour (the changes
    section judges causes, which is what tells)."""
    delta = comparison.pass_rate_change
    if delta is None:
        return "no previous report"
    samples = f" (of {comparison.judged:,} judged exchanges, then {comparison.previous_judged:,})"
    if abs(delta) < 5e-5:
        return "unchanged since previous" + samples
    cls, sign = ("up", "+") if delta > 0 else ("down", "−")
    return f'<span class="{cls}">{sign}{abs(delta) * 100:.2f} pts</span> since previous' + samples


def summary_section(rollup: Rollup, comparison: Comparison) -> str:
    sentence, look = _verdict(rollup)
    targets = rollup.targets()
    violations = sum(1 for v in rollup.chaos if v.verdict == "violation")
    new, fixed = len(comparison.new_divergences), len(comparison.fixed_divergences)
    divergence_note = f"{new:,} new, {fixed:,} fixed" if comparison.has_previous else "no previous report"
    split = exchange_split(rollup)
    judged = judged_exchanges(rollup)
    passed = sum(c.passed for c in rollup.grid)
    apis = len({(d.api_name, d.api_version) for d in rollup.divergences})
    deviating = sum(1 for d in rollup.divergences if d.verdict in ("deviates", "unknown"))
    ops = sum(v.operations for v in rollup.chaos)
    crashed = sum(c.times for c in rollup.crashes)
    rules_passed, rules_ran = sum(c.passed for c in rollup.rules), sum(c.ran for c in rollup.rules)
    tiles = "".join(
        (
            _tile(
                "Exchanges",
                fmt_count(rollup.exchanges),
                esc(
                    f"{split['diff'] // 2:,} compared pairs ({split['diff']:,} exchanges), "
                    f"{split['chaos']:,} chaos client operations, {split['other']:,} other; "
                    f"in {_plural(len(rollup.runs), 'run')}"
                ),
                key="exchanges",
                numbers=(rollup.exchanges, split["diff"], split["chaos"], split["other"]),
            ),
            _tile(
                "Agreement",
                fmt_rate(comparison.pass_rate),
                f"{passed:,} of {judged:,} judged compared exchanges agreed; " + _change(comparison),
                key="agreement",
                numbers=(passed, judged),
            ),
            _tile(
                "Divergences",
                fmt_count(len(rollup.divergences)),
                esc(
                    f"signatures in {_plural(apis, 'API version')}; {deviating:,} laid on a target or "
                    f"unknown; {divergence_note}"
                ),
                key="divergences",
                numbers=(len(rollup.divergences), apis),
            ),
            _tile(
                "Crashes",
                fmt_count(crashed),
                esc(f"target crashes, {_plural(len(rollup.crashes), 'distinct message')}"),
                key="crashes",
                numbers=(crashed, len(rollup.crashes)),
            ),
            _tile(
                "Chaos",
                f"{violations:,} / {len(rollup.chaos):,}",
                esc(f"violations / scenario results, over {ops:,} client operations"),
                key="chaos",
                numbers=(violations, len(rollup.chaos)),
            ),
            _tile(
                "Rules",
                f"{rules_passed:,} / {rules_ran:,}",
                "conformance tests passed / ran",
                key="rules",
                numbers=(rules_passed, rules_ran),
            ),
            _tile("Targets", str(len(targets)), esc(", ".join(targets)) or "none", key="targets"),
        )
    )
    body = f'<div class="verdict {look}" role="status"><span class="dot"></span>{esc(sentence)}</div>'
    body += f'<div class="tiles">{tiles}</div>'
    if rollup.grid:
        body += outcomes_by(
            rollup.grid,
            lambda c: c.target,
            chart_id="chart-outcomes",
            kind="outcomes",
            title="Outcomes by target",
            desc="For each target, the share of its exchanges that passed, diverged, erred, timed out, "
            "were closed or skipped; the total is printed at the right.",
        )
    return section("summary", "Summary", "The verdict at a glance.", body)


def _former(items: list[FormerDivergence], badge: str) -> str:
    return "".join(
        f'<li><span class="badge {badge}">{esc(d.api_name)} v{d.api_version}</span>'
        f'<span class="mono">{esc(d.signature)}</span> '
        f'<span class="hint">({esc(" vs ".join(d.targets))})</span></li>'
        for d in items
    )


def changes_section(rollup: Rollup, comparison: Comparison) -> str:
    title = "Changes since the previous report"
    if not comparison.has_previous:
        lead = "Give an earlier report with <code>--previous DIR</code> to see what changed."
        return section("changes", title, lead, '<p class="empty">No previous report to compare with.</p>')
    when = comparison.previous_generated_at or "an earlier report"
    lead = (
        f"Compared with the report of {esc(when)}: pass rate {fmt_rate(comparison.previous_pass_rate)} → "
        f"{fmt_rate(comparison.pass_rate)} ({_change(comparison)})."
    )
    index = {d.signature: i for i, d in enumerate(cluster_order(rollup.divergences))}

    def current(items, badge: str) -> str:
        return "".join(
            f'<li><span class="badge {badge}">{badge}</span><a class="mono" '
            f'href="#divergence-{index[d.signature]}">{esc(d.signature)}</a> '
            f"<span class=hint>({esc(' vs '.join(d.targets))})</span></li>"
            for d in items
        )

    none = "<li class=hint>none</li>"
    columns = (
        f'<div data-change="new"><h3>New divergences ({len(comparison.new_divergences):,})</h3>'
        '<p class="hint">not seen before, although the previous report\'s run drew the very case that shows '
        "them now (same targets, same seed): a change in behaviour</p>"
        f'<ul class="plain">{current(comparison.new_divergences, "new") or none}</ul></div>'
        f'<div data-change="fixed"><h3>Fixed divergences ({len(comparison.fixed_divergences):,})</h3>'
        '<p class="hint">seen before, not seen this time, and their stored case, replayed on the current '
        "targets, no longer shows them</p>"
        f'<ul class="plain">{_former(comparison.fixed_divergences, "fixed") or none}</ul></div>'
    )
    body = f'<div class="changes">{columns}</div>'
    parts = (
        ("first-found", "First found", comparison.first_found, "shown first by a case the previous report's "
         "run never drew (it stopped drawing sooner): new to the report, not a change in behaviour"),
        ("unconfirmed", "Unconfirmed", comparison.unconfirmed, "seen in a case the previous report's run "
         "drew too, but their own stored case does not show them again, or they are a request meeting a "
         "crash the previous report already had (same last words): sightings that depend on timing, "
         "which cannot tell a change"),
        ("still-there", "Still there on replay", comparison.still_there, "not drawn this time, but their "
         "stored case, replayed on the current targets, still shows them: not fixed"),
        ("not-replayed", "Not seen, not replayed", comparison.not_replayed, "not seen this time although "
         "their API version ran; their case was not replayed (no campaign, or out of time), so neither "
         "fixed nor known to remain"),
        ("not-retested", "Not retested", comparison.not_retested, "seen last time, but this report did not "
         "exercise that API version on those targets, so they are neither fixed nor still there"),
    )  # fmt: skip
    for key, title, items, why in parts:
        if not items:
            continue
        listed = current(items, key) if key in ("first-found", "unconfirmed") else _former(items, "")
        body += (
            f'<div data-change="{key}"><h3>{title} ({len(items):,})</h3><p class=lead>{esc(why)}.</p>'
            f'<ul class="plain">{listed}</ul></div>'
        )
    if comparison.verdict_changes:
        rows = "".join(
            f'<tr><td class="mono">{esc(c.scenario)}</td><td>{esc(c.target)}</td><td>{esc(c.before)}</td>'
            f"<td>{esc(c.after)}</td></tr>"
            for c in comparison.verdict_changes
        )
        body += (
            "<h3>Chaos verdicts that changed</h3><table><thead><tr><th>scenario</th><th>target</th>"
            f"<th>before</th><th>now</th></tr></thead><tbody>{rows}</tbody></table>"
        )
    return section("changes", title, lead, body)


def history_section(comparison: Comparison) -> str:
    # Pass rate and signatures are what a differential run measures; a chaos run's exchanges are a
    # workload's operations under faults, judged by its verdicts, so plotting them here would mix scales.
    points = [p for p in comparison.history if p.kind == "diff"]
    lead = (
        "Every differential run read by this report and those carried forward from previous reports, "
        "oldest first (chaos runs are judged by their verdicts, above)."
    )
    if not points:
        return section("history", "History over runs", lead, '<p class="empty">No differential runs yet.</p>')
    labels = [f"{p.started_at[5:16].replace('T', ' ')}" or p.run_id[:8] for p in points]
    rates = line_chart(
        [LinePoint(label, (p.pass_rate,)) for label, p in zip(labels, points, strict=True)],
        [Series("pass rate", OUTCOME_COLOURS["pass"])],
        chart_id="chart-history-pass",
        kind="history-pass-rate",
        title="Pass rate by run",
        desc="The share of each run's judged exchanges that passed, one point per run, oldest first.",
        axis_title="run start (UTC)",
        fmt=lambda v: f"{v * 100:.0f}%",
        y_max=1.0,
        width=HALF_WIDTH,
    )
    divergences = line_chart(
        [LinePoint(label, (float(p.signatures),)) for label, p in zip(labels, points, strict=True)],
        [Series("divergence signatures", OUTCOME_COLOURS["diverge"])],
        chart_id="chart-history-divergences",
        kind="history-divergences",
        title="Divergence signatures by run",
        desc="How many distinct divergence signatures each run showed, one point per run, oldest first.",
        axis_title="run start (UTC)",
        fmt=lambda v: f"{v:,.0f}",
        width=HALF_WIDTH,
    )
    tables = cause_table(comparison.cause_history) + api_trend_table(comparison.api_trend)
    return section(
        "history", "History over runs", lead, f'<div class="charts-2">{rates}{divergences}</div>{tables}'
    )


def _when(iso: str) -> str:
    """``2026-01-01T00:00:00.000184Z`` -> ``2026-01-01 00:00:00``: seconds are enough to read."""
    return iso[:19].replace("T", " ")


def runs_section(rollup: Rollup) -> str:
    lead = (
        "The run directories this report read. A differential run's exchanges are both targets' answers "
        "to each compared request (two per pair); a chaos run's are its workload's client operations, "
        "and its errors are operations that failed while faults were injected, which the chaos verdicts "
        "judge, not this table."
    )
    if not rollup.runs:
        return section("runs", "Runs", lead, '<p class="empty">No runs were read.</p>')
    rows = "".join(
        f'<tr data-row><td class="mono">{esc(r.run_id)}</td><td>{esc(r.kind)}</td>'
        f"<td>{esc(', '.join(r.targets))}</td><td class=mono>{esc(_when(r.started_at))}</td>"
        f'<td class="num">{r.exchanges:,}</td><td class="num">{r.passed:,}</td>'
        f'<td class="num">{r.diverged:,}</td>'
        f'<td class="num">{r.errors:,}</td><td class="mono">{esc(r.directory)}</td></tr>'
        for r in sorted(rollup.runs, key=lambda r: (r.started_at, r.run_id))
    )
    table = (
        '<div class="scroll"><table id="runs-table"><thead><tr><th>run</th><th>kind</th><th>targets</th>'
        '<th>started (UTC)</th><th class="num">exchanges</th><th class="num">pass</th>'
        '<th class="num">diverge</th><th class="num">error</th><th>directory</th></tr></thead>'
        f"<tbody>{rows}</tbody></table></div>"
    )
    return section("runs", "Runs", lead, table)
