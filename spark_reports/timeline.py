"""History across reports, the way wpt.fyi keeps it: for every divergence signature, when it was first
and last seen and when a report judged it fixed, with the targets it counts against; for every API and
target, the agreement rate at each report. Each report carries both forward in its summary.json from
the previous one, so the history grows however many reports there are, and no report needs the traces
of another."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass, replace
from typing import Any

from .model import Rollup

__all__ = ["MAX_TREND_POINTS", "ApiPoint", "CauseSpan", "api_trend", "cause_spans"]

MAX_TREND_POINTS = 12  # reports kept per API and target: a trend, not an archive


@dataclass(frozen=True, slots=True)
class CauseSpan:
    """One signature over the reports: seen from ``first_seen`` to ``last_seen`` (report times), fixed
    at ``fixed_at`` when a report's replay showed it gone (None while it is not known to be)."""

    signature: str
    api_name: str
    api_version: int
    deviates: tuple[str, ...]  # the targets it counts against (both sides when its verdict is unknown)
    first_seen: str
    last_seen: str
    reports: int  # reports that saw it
    fixed_at: str | None = None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CauseSpan:
        return cls(
            str(data["signature"]),
            str(data.get("api_name", "")),
            int(data.get("api_version", -1)),
            tuple(str(t) for t in data.get("deviates") or ()),
            str(data.get("first_seen", "")),
            str(data.get("last_seen", "")),
            int(data.get("reports", 1)),
            data.get("fixed_at") if isinstance(data.get("fixed_at"), str) else None,
        )

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class ApiPoint:
    """One API on one target in one report: judged exchanges, and how many agreed."""

    generated_at: str
    target: str
    api_name: str
    passed: int
    judged: int

    @property
    def rate(self) -> float | None:
        return self.passed / self.judged if self.judged else None


def _read(previous: dict[str, Any] | None, key: str, reader) -> list:
    rows = []
    for data in (previous or {}).get(key) or []:
        try:
            rows.append(reader(data))
        except (KeyError, TypeError, ValueError):  # a row an older report wrote differently: skipped
            continue
    return rows


def cause_spans(
    current: Rollup, previous: dict[str, Any] | None, fixed: set[str], now: str
) -> list[CauseSpan]:
    """The previous report's spans carried forward: each signature seen now extends its span (a fixed
    one seen again is open again), each ``fixed`` one is closed now, a new one starts now."""
    spans = {s.signature: s for s in _read(previous, "cause_history", CauseSpan.from_json)}
    for d in current.divergences:
        known = spans.get(d.signature)
        if known is None:
            spans[d.signature] = CauseSpan(d.signature, d.api_name, d.api_version, d.deviates, now, now, 1)
        else:
            spans[d.signature] = replace(
                known, deviates=d.deviates, last_seen=now, reports=known.reports + 1, fixed_at=None
            )
    for signature in fixed:
        if signature in spans:
            spans[signature] = replace(spans[signature], fixed_at=now)
    return sorted(spans.values(), key=lambda s: (s.api_name, s.api_version, s.signature))


def api_trend(current: Rollup, previous: dict[str, Any] | None, now: str) -> list[ApiPoint]:
    """The previous report's points and this report's (one per API and target it judged), the newest
    ``MAX_TREND_POINTS`` per API and target, oldest first."""
    points = _read(previous, "api_trend", lambda data: ApiPoint(**data))
    tally: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for cell in current.grid:
        tally[(cell.target, cell.api_name)][0] += cell.passed
        tally[(cell.target, cell.api_name)][1] += cell.total - cell.skipped
    points += [ApiPoint(now, t, api, p, j) for (t, api), (p, j) in sorted(tally.items()) if j]
    by_series: dict[tuple[str, str], list[ApiPoint]] = defaultdict(list)
    for point in points:
        by_series[(point.target, point.api_name)].append(point)
    kept = [p for series in by_series.values() for p in series[-MAX_TREND_POINTS:]]
    return sorted(kept, key=lambda p: (p.api_name, p.target, p.generated_at))
