"""Charts drawn by hand as inline SVG, so the dashboard needs no chart library and no network.

Every chart is a ``<figure data-chart=KIND data-marks=N>``: N is the number of data marks drawn
(bars, bar segments, points), each an element with class ``mark`` and a ``<title>`` that states
its value, so a test (or a curious reader) can tell an empty chart from a drawn one. The SVG has a
``<title>`` and ``<desc>`` it is labelled by, for screen readers; the legend is HTML beside it.
All text is escaped: labels come from traces."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .markup import esc

__all__ = [
    "OUTCOME_COLOURS",
    "RATE_BANDS",
    "BarGroup",
    "LinePoint",
    "RateBand",
    "Series",
    "StackedBar",
    "grouped_bar_chart",
    "line_chart",
    "rate_band",
    "rate_legend",
    "stacked_bar_chart",
]

WIDTH = 1000  # viewBox units; the SVG scales to its container
LABEL_W = 230  # room for the category labels left of the plot
RIGHT_W = 90  # room for a total or end value right of the plot
AXIS_H = 42  # tick labels and axis title under the plot
FONT = 12

OUTCOME_COLOURS = {
    "pass": "#3a9a5b",
    "diverge": "#e8870e",
    "error": "#d1343b",
    "timeout": "#8a4fbf",
    "closed": "#5f7a8c",
    "skipped": "#c4c9cf",
}


@dataclass(frozen=True, slots=True)
class Series:
    name: str
    colour: str


@dataclass(frozen=True, slots=True)
class BarGroup:
    label: str
    values: tuple[float | None, ...]  # one per series; None draws nothing
    sublabel: str = ""  # a second, quieter line under the label (e.g. the active fault)


@dataclass(frozen=True, slots=True)
class StackedBar:
    label: str
    counts: tuple[int, ...]  # one per series


@dataclass(frozen=True, slots=True)
class LinePoint:
    label: str  # the x-axis label of this point
    values: tuple[float | None, ...]  # one per series; None leaves a gap


@dataclass(frozen=True, slots=True)
class RateBand:
    floor: float  # the lowest pass rate in the band
    background: str
    foreground: str
    label: str


# Pass rates in a conformance run sit near 100%, so the bands are narrow at the top: 99.5% and 100%
# must not look alike.
RATE_BANDS = (
    RateBand(1.0, "#cfead6", "#14532d", "100%"),
    RateBand(0.99, "#e6f2c2", "#3f5212", "≥ 99%"),
    RateBand(0.95, "#fbeeb8", "#5c4606", "≥ 95%"),
    RateBand(0.8, "#fbd5a8", "#6b3300", "≥ 80%"),
    RateBand(0.0, "#f6b9b9", "#7a1016", "< 80%"),
)
NO_RATE = RateBand(0.0, "#eef0f3", "#56606b", "nothing judged")


def rate_band(rate: float | None) -> RateBand:
    if rate is None:
        return NO_RATE
    return next(band for band in RATE_BANDS if rate >= band.floor)


def rate_legend() -> str:
    items = "".join(
        f'<li><span class="swatch" style="background:{b.background}"></span>{esc(b.label)}</li>'
        for b in (*RATE_BANDS, NO_RATE)
    )
    return f'<ul class="legend" aria-label="pass rate colours">{items}</ul>'


def _legend(series: Sequence[Series]) -> str:
    items = "".join(
        f'<li><span class="swatch" style="background:{s.colour}"></span>{esc(s.name)}</li>' for s in series
    )
    return f'<ul class="legend">{items}</ul>'


def _figure(
    kind: str,
    chart_id: str,
    marks: int,
    size: tuple[float, float],
    title: str,
    desc: str,
    body: str,
    legend: str,
) -> str:
    """The shared frame: figure, caption, labelled SVG, legend."""
    return (
        f'<figure class="chart" data-chart="{esc(kind)}" data-marks="{marks}" id="{esc(chart_id)}">'
        f"<figcaption>{esc(title)}</figcaption>"
        f'<svg viewBox="0 0 {size[0]:.0f} {size[1]:.0f}" role="img" preserveAspectRatio="xMinYMin meet" '
        f'aria-labelledby="{esc(chart_id)}-title {esc(chart_id)}-desc" font-size="{FONT}">'
        f'<title id="{esc(chart_id)}-title">{esc(title)}</title>'
        f'<desc id="{esc(chart_id)}-desc">{esc(desc)}</desc>'
        f"{body}</svg>{legend}</figure>"
    )


def _clip(text: str, limit: int = 34) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _nice_step(span: float, ticks: int = 6) -> float:
    """The smallest step of 1, 2 or 5 times a power of ten that cuts ``span`` into at most ``ticks``
    parts, so the axis ends close above the largest value."""
    raw = span / max(ticks, 1)
    power = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw)


def _linear_ticks(top: float) -> tuple[float, list[float]]:
    """The axis top (a tick) and every tick from 0, for data up to ``top``."""
    if top <= 0:
        return 1.0, [0.0, 1.0]
    step = _nice_step(top)
    count = math.ceil(top / step - 1e-9)
    return count * step, [i * step for i in range(count + 1)]


class _Scale:
    """Maps a value to a position in [0, length], linear from 0 or logarithmic by decades."""

    def __init__(self, values: Sequence[float], length: float, log: bool) -> None:
        self.length, self.log = length, log
        positive = [v for v in values if v > 0]
        if log and positive:
            self.low = math.floor(math.log10(min(positive)))
            self.high = max(math.ceil(math.log10(max(positive))), self.low + 1)
            self.ticks = [10.0**e for e in range(self.low, self.high + 1)]
        else:
            self.log = False
            self.top, self.ticks = _linear_ticks(max(values, default=0.0))

    def __call__(self, value: float) -> float:
        if self.log:
            exponent = math.log10(value) if value > 0 else self.low
            return (min(max(exponent, self.low), self.high) - self.low) / (self.high - self.low) * self.length
        return min(max(value, 0.0), self.top) / self.top * self.length


def _x_axis(scale: _Scale, x0: float, y_top: float, y_bottom: float, fmt: Callable, title: str) -> str:
    """Vertical grid lines with tick labels below, and the axis title."""
    parts = []
    for tick in scale.ticks:
        x = x0 + scale(tick)
        parts.append(f'<line class="grid" x1="{x:.1f}" y1="{y_top:.1f}" x2="{x:.1f}" y2="{y_bottom:.1f}"/>')
        parts.append(f'<text class="tick" x="{x:.1f}" y="{y_bottom + 15:.1f}" text-anchor="middle">')
        parts.append(f"{esc(fmt(tick))}</text>")
    middle = x0 + scale.length / 2
    parts.append(
        f'<text class="axis-title" x="{middle:.1f}" y="{y_bottom + 34:.1f}" text-anchor="middle">'
        f"{esc(title)}</text>"
    )
    return "".join(parts)


def _bar_label(group: BarGroup, y: float, height: float) -> str:
    """The category label left of a group, with its sublabel under it when it has one."""
    full = f"{group.label} ({group.sublabel})" if group.sublabel else group.label
    if not group.sublabel:
        return (
            f'<text class="label" x="{LABEL_W - 8}" y="{y + height / 2 + 4:.1f}" text-anchor="end">'
            f"<title>{esc(full)}</title>{esc(_clip(group.label))}</text>"
        )
    return (
        f'<text class="label" x="{LABEL_W - 8}" y="{y + height / 2 - 2:.1f}" text-anchor="end">'
        f"<title>{esc(full)}</title>{esc(_clip(group.label))}"
        f'<tspan class="sublabel" x="{LABEL_W - 8}" dy="13">{esc(_clip(group.sublabel, 31))}</tspan></text>'
    )


def grouped_bar_chart(
    groups: Sequence[BarGroup],
    series: Sequence[Series],
    *,
    chart_id: str,
    kind: str,
    title: str,
    desc: str,
    axis_title: str,
    fmt: Callable[[float], str] = str,
    log_scale: bool = False,
) -> str:
    """Horizontal bars, one group per category and one bar per series in each (e.g. p50, p99 and
    p99.9 of one target and API)."""
    bar_h = 14.0 if len(series) == 1 else 8.0
    gap, top = 10.0, 8.0
    group_h = max(bar_h * len(series), 26.0 if any(g.sublabel for g in groups) else 0.0) + gap
    plot_w = WIDTH - LABEL_W - RIGHT_W
    height = top + group_h * len(groups) + AXIS_H
    values = [v for g in groups for v in g.values if v is not None]
    scale = _Scale(values, plot_w, log_scale)
    body = [_x_axis(scale, LABEL_W, top, height - AXIS_H, fmt, axis_title)]
    marks = 0
    for i, group in enumerate(groups):
        y = top + i * group_h + gap / 2
        body.append(_bar_label(group, y, group_h - gap))
        for j, (s, value) in enumerate(zip(series, group.values, strict=True)):
            if value is None:
                continue
            width = max(scale(value), 1.0)  # a bar at the axis minimum still shows
            body.append(
                f'<rect class="mark" x="{LABEL_W}" y="{y + j * bar_h:.1f}" width="{width:.1f}" '
                f'height="{bar_h - 1:.1f}" fill="{s.colour}"><title>{esc(group.label)}, {esc(s.name)}: '
                f"{esc(fmt(value))}</title></rect>"
            )
            marks += 1
        if group.values and group.values[-1] is not None:  # the largest series, printed at the end
            end = LABEL_W + max(scale(group.values[-1]), 1.0) + 6
            body.append(
                f'<text class="value" x="{end:.1f}" y="{y + bar_h * len(series) - 2:.1f}">'
                f"{esc(fmt(group.values[-1]))}</text>"
            )
    return _figure(kind, chart_id, marks, (WIDTH, height), title, desc, "".join(body), _legend(series))


def stacked_bar_chart(
    bars: Sequence[StackedBar],
    series: Sequence[Series],
    *,
    chart_id: str,
    kind: str,
    title: str,
    desc: str,
    axis_title: str = "share of exchanges",
) -> str:
    """Horizontal bars of 100%, one per category, cut into one segment per series: how each
    target's (or API's) exchanges ended. The total is printed at the end of each bar."""
    bar_h, gap, top = 18.0, 8.0, 8.0
    plot_w = WIDTH - LABEL_W - RIGHT_W
    height = top + (bar_h + gap) * len(bars) + AXIS_H
    scale = _Scale([1.0], plot_w, log=False)
    body = [_x_axis(scale, LABEL_W, top, height - AXIS_H, lambda v: f"{v * 100:.0f}%", axis_title)]
    marks = 0
    for i, bar in enumerate(bars):
        y = top + i * (bar_h + gap) + gap / 2
        total = sum(bar.counts)
        body.append(
            f'<text class="label" x="{LABEL_W - 8}" y="{y + bar_h / 2 + 4:.1f}" text-anchor="end">'
            f"<title>{esc(bar.label)}</title>{esc(_clip(bar.label))}</text>"
        )
        x = float(LABEL_W)
        for s, count in zip(series, bar.counts, strict=True):
            if not count:
                continue
            # A rare outcome is the one a reader looks for: never let it vanish below a pixel.
            width = max(count / total * plot_w, 2.0)
            share = count / total * 100
            body.append(
                f'<rect class="mark" x="{x:.1f}" y="{y:.1f}" width="{width:.1f}" height="{bar_h:.1f}" '
                f'fill="{s.colour}"><title>{esc(bar.label)}: {count:,} {esc(s.name)} ({share:.2f}%)'
                f"</title></rect>"
            )
            x += width
            marks += 1
        body.append(
            f'<text class="value" x="{LABEL_W + plot_w + 8}" y="{y + bar_h / 2 + 4:.1f}">{total:,}</text>'
        )
    return _figure(kind, chart_id, marks, (WIDTH, height), title, desc, "".join(body), _legend(series))


def line_chart(
    points: Sequence[LinePoint],
    series: Sequence[Series],
    *,
    chart_id: str,
    kind: str,
    title: str,
    desc: str,
    axis_title: str,
    fmt: Callable[[float], str] = str,
    y_max: float | None = None,
    width: float = WIDTH,
    height: float = 240.0,
) -> str:
    """Values over an ordered x axis (runs, oldest first): a line per series with a point per value.
    ``y_max`` fixes the top of the axis (1.0 for a rate); otherwise it fits the data. A chart meant
    for half the page takes a smaller ``width``, so its text keeps its size."""
    left, right, top, inset = 56.0, 16.0, 14.0, 40.0  # inset: the first and last point clear the edges
    plot_w, plot_h = width - left - right, height - top - AXIS_H
    values = [v for p in points for v in p.values if v is not None]
    axis_top, ticks = _linear_ticks(y_max if y_max is not None else max(values, default=0.0))
    step = (plot_w - 2 * inset) / max(len(points) - 1, 1)

    def xy(i: int, value: float) -> tuple[float, float]:
        x = left + (inset + i * step if len(points) > 1 else plot_w / 2)
        return x, top + plot_h - min(value, axis_top) / axis_top * plot_h

    body = []
    for tick in ticks:
        y = top + plot_h - tick / axis_top * plot_h
        body.append(f'<line class="grid" x1="{left}" y1="{y:.1f}" x2="{left + plot_w}" y2="{y:.1f}"/>')
        body.append(f'<text class="tick" x="{left - 8}" y="{y + 4:.1f}" text-anchor="end">')
        body.append(f"{esc(fmt(tick))}</text>")
    # Evenly spaced x labels, first and last included, about one per 110 units so they never overlap.
    shown = min(len(points), max(2, int(plot_w // 110)))
    labelled = {round(k * (len(points) - 1) / max(shown - 1, 1)) for k in range(shown)}
    for i in sorted(labelled):
        x, _ = xy(i, 0)
        body.append(
            f'<text class="tick" x="{x:.1f}" y="{top + plot_h + 16:.1f}" text-anchor="middle">'
            f"{esc(_clip(points[i].label, 18))}</text>"
        )
    body.append(
        f'<text class="axis-title" x="{left + plot_w / 2:.1f}" y="{height - 6:.1f}" text-anchor="middle">'
        f"{esc(axis_title)}</text>"
    )
    marks = 0
    for j, s in enumerate(series):
        coords = [(i, xy(i, p.values[j])) for i, p in enumerate(points) if p.values[j] is not None]
        if len(coords) > 1:
            path = "M" + " L".join(f"{x:.1f},{y:.1f}" for _, (x, y) in coords)
            body.append(f'<path class="line" d="{path}" stroke="{s.colour}"/>')
        for i, (x, y) in coords:
            value = fmt(points[i].values[j])
            body.append(
                f'<circle class="mark" cx="{x:.1f}" cy="{y:.1f}" r="4" fill="{s.colour}">'
                f"<title>{esc(points[i].label)}, {esc(s.name)}: {esc(value)}</title></circle>"
            )
            marks += 1
    return _figure(kind, chart_id, marks, (width, height), title, desc, "".join(body), _legend(series))
