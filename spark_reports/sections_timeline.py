"""The history section's tables across reports: each signature's span (when it appeared, when it was last
seen, when a replay showed it fixed), filterable by the target it counts against, and each API's
agreement rate on each target over the last reports."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from .markup import esc, fmt_rate, version_label
from .timeline import ApiPoint, CauseSpan

__all__ = ["api_trend_table", "cause_table"]


def _when(text: str) -> str:
    return text[:16] or "–"


def _span_row(s: CauseSpan) -> str:
    return (
        f'<tr data-row data-signature="{esc(s.signature)}"><td class="mono">{esc(s.signature)}</td>'
        f"<td>{esc(s.api_name)} {esc(version_label(s.api_version))}</td>"
        f"<td>{esc(', '.join(s.deviates) or '–')}</td>"
        f'<td class="mono">{esc(_when(s.first_seen))}</td><td class="mono">{esc(_when(s.last_seen))}</td>'
        f'<td class="num">{s.reports:,}</td><td class="mono">{esc(_when(s.fixed_at or ""))}</td></tr>'
    )


def cause_table(spans: Sequence[CauseSpan]) -> str:
    """Open spans first, then the fixed ones."""
    if not spans:
        return ""
    rows = "".join(_span_row(s) for s in sorted(spans, key=lambda s: (s.fixed_at is not None, s.signature)))
    fixed = sum(1 for s in spans if s.fixed_at)
    return (
        f"<h3>Causes over time ({len(spans):,} signatures, {fixed:,} fixed)</h3>"
        '<p class="lead">Every signature any report up to this one saw: when it first appeared, when it was '
        "last seen, in how many reports, and when a campaign's replay of its stored case showed it gone. "
        "Filter by target to see what counts against it.</p>"
        '<div class="tools"><input type="search" placeholder="filter: signature, API, target" '
        'aria-label="filter the causes over time" data-filter="cause-history"></div>'
        '<div class="scroll"><table id="cause-history"><thead><tr><th>signature</th><th>API</th>'
        "<th>counts against</th><th>first seen</th><th>last seen</th><th class=num>reports</th>"
        f"<th>fixed</th></tr></thead><tbody>{rows}</tbody></table></div>"
    )


def api_trend_table(points: Sequence[ApiPoint]) -> str:
    if not points:
        return ""
    series: dict[tuple[str, str], list[ApiPoint]] = defaultdict(list)
    for point in points:
        series[(point.api_name, point.target)].append(point)
    rows = "".join(
        f'<tr data-row><td>{esc(api)}</td><td>{esc(target)}</td><td class="mono">'
        + esc(" → ".join(fmt_rate(p.rate) for p in kept))
        + f'</td><td class="num">{kept[-1].passed:,} / {kept[-1].judged:,}</td></tr>'
        for (api, target), kept in sorted(series.items())
    )
    return (
        "<h3>Agreement by API over reports</h3>"
        '<p class="lead">For each API and target, the share of judged exchanges that agreed, at each report '
        "(oldest first, the last twelve); the count is the newest report's. Reports draw different cases, "
        "so a rate moves with the sample as well as with behaviour.</p>"
        '<div class="scroll"><table id="api-trend"><thead><tr><th>API</th><th>target</th>'
        f"<th>agreement, oldest → newest</th><th class=num>newest</th></tr></thead><tbody>{rows}</tbody>"
        "</table></div>"
    )
