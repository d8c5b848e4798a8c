"""The dashboard as a person sees it: real runs (a small differential campaign, the reference broker
against librdkafka's mock cluster) rolled up by Spark, rendered by headless Chromium. The screenshot is
kept.

What is asserted is what only a browser produces, so none of it would pass without one:
- the page's own script ran: ``<html data-ready="true">`` (set at its end, once the page has loaded)
  and ``data-errors="0"`` (set by its first lines, which then count every uncaught exception, failed
  load and ``console.error``); Chromium's console log (``--enable-logging=stderr``) must show no
  uncaught error either, which holds even if the recorder itself were broken;
- each chart was laid out: the size the browser gave its drawing (``getBoundingClientRect``), which
  must be non-zero, fit the window and keep the SVG's viewBox proportions, and its marks with a
  non-empty box;
- the screenshot has pixels: many colours over the page, and inside each chart's box on screen.
The DOM recorder is the primary error check because it tells errors from ordinary console output and
sees failed loads, which the console log does not; the console log backs it up. Each check is shown
failing on a copy of the page broken in the way it guards against (script removed, error planted,
charts collapsed, marks hidden, charts or page blanked)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from kconform.harness.diff.cases import run_campaign
from kconform.harness.targets.registry import make_target
from kconform.spark_reports.build import build_dashboard

from ..support.png import colours, png_rows

pytestmark = [pytest.mark.slow, pytest.mark.peer]

EXAMPLES = 10
SEED = 5
WINDOW = (1280, 2400)  # as conftest.py renders the screenshot
CHARTS = ("outcomes", "outcomes-by-api", "divergences-by-api", "latency", "history-pass-rate")
# as conftest.py's CHROMIUM_FLAGS (a test module cannot import a conftest), plus the console log
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    f"--window-size={WINDOW[0]},{WINDOW[1]}",
    "--enable-logging=stderr",
    "--v=0",
)


class _Marks(HTMLParser):
    """Counts what a reader would look for: grid rows, divergence entries, drawn chart marks."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []  # ids of the open elements that have one
        self.grid_rows = 0
        self.clusters = 0
        self.svg_marks = 0
        self.charts: dict[str, int] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        classes = (a.get("class") or "").split()
        if tag == "tr" and "data-row" in a and "grid-table" in self.stack:
            self.grid_rows += 1
        if tag == "article" and "cluster" in classes:
            self.clusters += 1
        if "mark" in classes and tag in ("rect", "circle"):
            self.svg_marks += 1
        if "data-chart" in a:
            self.charts[a["data-chart"] or ""] = int(a.get("data-marks") or 0)
        if tag == "table" and a.get("id"):
            self.stack.append(a["id"] or "")

    def handle_endtag(self, tag: str) -> None:
        if tag == "table" and self.stack:
            self.stack.pop()


@dataclass
class Drawn:
    """What the page's script reported about itself after Chromium ran it."""

    page: dict[str, str | None] = field(default_factory=dict)  # the <html> attributes
    charts: dict[str, dict[str, str | None]] = field(default_factory=dict)  # data-chart -> attributes
    view_boxes: dict[str, str] = field(default_factory=dict)  # data-chart -> its svg's viewBox


class _DrawnParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.drawn = Drawn()
        self.chart: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "html":
            self.drawn.page = a
        elif tag == "figure" and a.get("data-chart"):
            self.chart = a["data-chart"] or ""
            self.drawn.charts[self.chart] = a
        elif tag == "svg" and self.chart is not None and self.chart not in self.drawn.view_boxes:
            self.drawn.view_boxes[self.chart] = a.get("viewbox") or ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "figure":
            self.chart = None


def drawn(dom: str) -> Drawn:
    parser = _DrawnParser()
    parser.feed(dom)
    return parser.drawn


def chromium_dom(page: Path, profile: Path) -> tuple[str, str]:
    """The DOM after the page's scripts ran, at the screenshot's window size, and Chromium's log."""
    binary = "/usr/bin/chromium" if os.access("/usr/bin/chromium", os.X_OK) else shutil.which("chromium")
    assert binary, "chromium is not installed: run ci/install-tools.sh"
    done = subprocess.run(
        [binary, *FLAGS, f"--user-data-dir={profile}", "--dump-dom", page.resolve().as_uri()],
        capture_output=True,
        text=True,
        timeout=90,
        check=True,
    )
    return done.stdout, done.stderr


def _number(attrs: dict[str, str | None], name: str) -> int | None:
    value = attrs.get(name)
    return int(value) if value is not None and value.lstrip("-").isdigit() else None


def browser_problems(dom: str, console: str, charts: tuple[str, ...] = CHARTS) -> list[str]:
    """Everything about the rendered page that says the browser did not do its part; [] if it did."""
    seen = drawn(dom)
    problems = []
    if seen.page.get("data-ready") != "true":
        problems.append("not ready: the page's script did not run to its end (no data-ready on <html>)")
    errors = seen.page.get("data-errors")
    if errors is None:
        problems.append("no error count: the page's error recorder did not run (no data-errors on <html>)")
    elif errors != "0":
        problems.append(f"page errors: {errors}: {seen.page.get('data-error-list')}")
    uncaught = [line for line in console.splitlines() if ":CONSOLE" in line and "Uncaught" in line]
    if uncaught:
        problems.append(f"console errors: {uncaught}")
    for chart in charts:
        attrs = seen.charts.get(chart)
        if attrs is None:
            problems.append(f"{chart}: no such chart")
            continue
        width, height = _number(attrs, "data-rendered-width"), _number(attrs, "data-rendered-height")
        if width is None or height is None:
            problems.append(f"{chart}: not measured (no data-rendered-width/height)")
            continue
        if not (200 <= width <= WINDOW[0] and 40 <= height <= 4 * WINDOW[1]):
            problems.append(f"{chart}: implausible size {width}x{height}")
        else:
            _, _, view_w, view_h = (float(v) for v in seen.view_boxes[chart].split())
            if abs(height / width - view_h / view_w) > 0.02 * (view_h / view_w) + 2 / width:
                problems.append(
                    f"{chart}: {width}x{height} is not the viewBox's shape {view_w:.0f}x{view_h:.0f}"
                )
        drawn_marks, marks = _number(attrs, "data-rendered-marks"), _number(attrs, "data-marks") or 0
        if not drawn_marks or drawn_marks > marks:
            problems.append(f"{chart}: {drawn_marks} of its {marks} marks laid out")
    return problems


def pixel_problems(screenshot: Path, dom: str, charts: tuple[str, ...] = CHARTS) -> list[str]:
    """Whether the screenshot shows a page: many colours, much that is not background, and each chart
    that lies on screen (where the DOM says the browser put it) drawn with several colours."""
    width, height, bpp, rows = png_rows(screenshot)
    problems = []
    if (width, height) != WINDOW:
        problems.append(f"the screenshot is {width}x{height}, not {WINDOW[0]}x{WINDOW[1]}")
    everywhere = colours(rows, bpp)
    background = everywhere.most_common(1)[0][1]
    if len(everywhere) < 64 or background > 0.9 * width * height:
        problems.append(
            f"blank page: {len(everywhere)} colours, {background / (width * height):.0%} background"
        )
    on_screen = 0
    for chart, attrs in drawn(dom).charts.items():
        box = [_number(attrs, f"data-rendered-{k}") for k in ("x", "y", "width", "height")]
        if chart not in charts or None in box or box[2] <= 0 or box[3] <= 0:
            continue  # browser_problems reports it
        x, y, w, h = box
        if x < 0 or y < 0 or x + w > width or y + h > height:
            continue  # below the fold
        on_screen += 1
        inside = colours(rows, bpp, (x, y, w, h))
        ink = w * h - inside.most_common(1)[0][1]
        if len(inside) < 4 or ink < 0.01 * w * h:
            problems.append(f"{chart}: blank on screen ({len(inside)} colours, {ink} pixels of ink)")
    if not on_screen:
        problems.append("no chart lies inside the screenshot")
    return problems


@pytest.fixture(scope="module")
def dashboard(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("runs") / "diff-reference-vs-rdkafka-mock"
    with make_target("reference") as reference, make_target("rdkafka-mock") as mock:
        result = run_campaign(reference, mock, run, examples=EXAMPLES, seed=SEED, shrink=False)
    assert result.cases == EXAMPLES
    steps: list[str] = []
    page = build_dashboard([run], tmp_path_factory.mktemp("report"), engine="spark", progress=steps.append)
    assert steps[-1] == "done" and any("Spark" in s for s in steps), steps
    return page


@pytest.fixture(scope="module")
def rendered_dom(dashboard: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    return chromium_dom(dashboard, tmp_path_factory.mktemp("chromium-profile"))


def broken_copy(dashboard: Path, folder: Path, edit: Callable[[str], str]) -> Path:
    """A copy of the dashboard page in ``folder``, changed by ``edit``."""
    folder.mkdir(parents=True, exist_ok=True)
    page = folder / "index.html"
    page.write_text(edit(dashboard.read_text()))
    assert page.read_text() != dashboard.read_text(), "the edit changed nothing"
    return page


def without_scripts(html: str) -> str:
    kept, rest = [], html
    while "<script>" in rest:
        before, _, after = rest.partition("<script>")
        kept.append(before)
        rest = after.partition("</script>")[2]
    return "".join(kept) + rest


def test_chromium_renders_the_grid_the_divergences_and_the_charts(
    dashboard: Path,
    rendered_dom: tuple[str, str],
    chromium: Callable[..., Any],
    artefacts_dir: Path,
    tmp_path: Path,
):
    screenshot = artefacts_dir / "dashboard-reference-vs-rdkafka-mock.png"
    rendered = chromium(dashboard, screenshot, tmp_path / "chromium-profile")
    print(f"dashboard screenshot: {screenshot}")

    dom, console = rendered_dom
    assert browser_problems(dom, console) == []
    assert pixel_problems(screenshot, dom) == []

    # what the page holds (written by Python, read back from the browser's DOM)
    found = _Marks()
    found.feed(rendered.dom)
    assert found.grid_rows > 0, "the conformance grid has no rows"
    # The reference broker and librdkafka's mock always differ somewhere (see known_differences.toml).
    assert found.clusters > 0, "the divergence list is empty"
    assert found.svg_marks > 0, "no chart drew a mark"
    for chart in CHARTS:
        assert found.charts.get(chart, 0) > 0, f"chart {chart} is missing or empty: {found.charts}"
    assert "kconform repro" in rendered.dom


def test_without_its_script_the_page_is_neither_ready_nor_measured(
    dashboard: Path, chromium: Callable[..., Any], tmp_path: Path
):
    # (--blink-settings=scriptEnabled=false cannot show it: --dump-dom then prints nothing at all)
    page = broken_copy(dashboard, tmp_path / "page", without_scripts)
    dom, console = chromium_dom(page, tmp_path / "profile")
    problems = browser_problems(dom, console)
    assert problems[:2] == [
        "not ready: the page's script did not run to its end (no data-ready on <html>)",
        "no error count: the page's error recorder did not run (no data-errors on <html>)",
    ]
    assert problems[2:] == [f"{c}: not measured (no data-rendered-width/height)" for c in CHARTS]


def test_a_page_error_is_counted_and_logged(dashboard: Path, chromium: Callable[..., Any], tmp_path: Path):
    planted = '<img src="no-such-image.png" alt=""><script>kconformNoSuchFunction();</script></body>'
    page = broken_copy(dashboard, tmp_path / "page", lambda html: html.replace("</body>", planted))
    dom, console = chromium_dom(page, tmp_path / "profile")
    problems = browser_problems(dom, console)
    assert [p.split(":")[0] for p in problems] == ["page errors", "console errors"], problems
    assert problems[0].startswith("page errors: 2: ") and "kconformNoSuchFunction" in problems[0]
    assert "no-such-image.png" in problems[0]  # a failed load, which the console log does not show
    assert "Uncaught ReferenceError: kconformNoSuchFunction" in problems[1]


def test_collapsed_charts_are_caught_by_their_size(
    dashboard: Path, chromium: Callable[..., Any], tmp_path: Path
):
    squash = "<style>figure.chart svg { height: 10px !important; }</style></head>"
    page = broken_copy(dashboard, tmp_path / "page", lambda html: html.replace("</head>", squash, 1))
    dom, console = chromium_dom(page, tmp_path / "profile")
    problems = browser_problems(dom, console)
    assert [p.split(":")[0] for p in problems] == list(CHARTS), problems
    assert all("implausible size" in p for p in problems), problems


def test_marks_the_browser_did_not_lay_out_are_caught(
    dashboard: Path, chromium: Callable[..., Any], tmp_path: Path
):
    hide = "<style>svg .mark { display: none; }</style></head>"
    page = broken_copy(dashboard, tmp_path / "page", lambda html: html.replace("</head>", hide, 1))
    dom, console = chromium_dom(page, tmp_path / "profile")
    problems = browser_problems(dom, console)
    assert [p.split(":")[0] for p in problems] == list(CHARTS), problems
    assert all(" 0 of its " in p for p in problems), problems


def test_a_blank_screenshot_or_blank_charts_are_caught_by_their_pixels(
    dashboard: Path, rendered_dom: tuple[str, str], chromium: Callable[..., Any], tmp_path: Path
):
    dom, _ = rendered_dom
    hide = "<style>figure.chart svg { visibility: hidden; }</style></head>"
    page = broken_copy(dashboard, tmp_path / "charts", lambda html: html.replace("</head>", hide, 1))
    chromium(page, tmp_path / "charts.png", tmp_path / "profile-charts")
    problems = pixel_problems(tmp_path / "charts.png", dom)
    assert problems and all(p.split(":")[0] in CHARTS and "blank on screen" in p for p in problems), problems
    blank = "<style>body { visibility: hidden; }</style></head>"
    page = broken_copy(dashboard, tmp_path / "page", lambda html: html.replace("</head>", blank, 1))
    chromium(page, tmp_path / "page.png", tmp_path / "profile-page")
    problems = pixel_problems(tmp_path / "page.png", dom)
    assert problems[0].startswith("blank page: "), problems
    assert all("blank on screen" in p for p in problems[1:]), problems
