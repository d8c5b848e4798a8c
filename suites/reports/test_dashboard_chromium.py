"""The dashboard as a person sees it: real runs (a small differential campaign, the reference broker
against librdkafka's mock cluster) rolled up by Spark, rendered by headless Chromium. The DOM the
browser built must hold the grid, the divergence list and drawn charts; the screenshot is kept."""

from __future__ import annotations

import struct
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from kconform.harness.diff.campaign import run_campaign
from kconform.harness.targets.registry import make_target
from kconform.spark_reports.build import build_dashboard

pytestmark = [pytest.mark.slow, pytest.mark.peer]

EXAMPLES = 10
SEED = 5


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


def png_size(path: Path) -> tuple[int, int]:
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", header[16:24])


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


def test_chromium_renders_the_grid_the_divergences_and_the_charts(
    dashboard: Path, chromium: Callable[..., Any], artefacts_dir: Path, tmp_path: Path
):
    screenshot = artefacts_dir / "dashboard-reference-vs-rdkafka-mock.png"
    rendered = chromium(dashboard, screenshot, tmp_path / "chromium-profile")
    print(f"dashboard screenshot: {screenshot}")

    found = _Marks()
    found.feed(rendered.dom)
    assert found.grid_rows > 0, "the conformance grid has no rows"
    # The reference broker and librdkafka's mock always differ somewhere (see known_differences.toml).
    assert found.clusters > 0, "the divergence list is empty"
    assert found.svg_marks > 0, "no chart drew a mark"
    for chart in ("outcomes", "outcomes-by-api", "divergences-by-api", "latency", "history-pass-rate"):
        assert found.charts.get(chart, 0) > 0, f"chart {chart} is missing or empty: {found.charts}"
    assert "kconform repro" in rendered.dom

    assert png_size(screenshot) == (1280, 2400)
    assert screenshot.stat().st_size > 50_000, "the screenshot looks blank"
