"""``kconform campaign`` end to end, bounded: the reference broker against librdkafka's mock cluster,
the conformance catalogue on each (within its share), a differential campaign and one chaos scenario
on each, rolled up by Spark into the dashboard, which headless Chromium then renders. The screenshot
is kept in ``$KCONFORM_ARTEFACTS``."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ..support.png import png_colours

pytestmark = [pytest.mark.slow, pytest.mark.peer]

BUDGET_S = 200  # the least in which every part runs: conformance needs 10 s a target


@pytest.fixture(scope="module")
def campaign_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("campaign") / "campaign-1"
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "kconform.harness.cli", "campaign", "--duration", f"{BUDGET_S}s",
         "--scenario", "acks1-latency", "--out", str(out)],
        capture_output=True, text=True, timeout=BUDGET_S * 3,
    )  # fmt: skip
    elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out, done.stdout + done.stderr, elapsed


def test_the_campaign_runs_every_part_and_leaves_a_dashboard(campaign_dir):
    out, output, elapsed = campaign_dir
    diff = out / "diff-reference-vs-rdkafka-mock"
    summary = json.loads((diff / "summary.json").read_text())
    assert summary["cases"] > 0 and summary["pairs_compared"] > 0
    assert summary["differences"], "reference vs the mock always differs somewhere"
    for target in ("reference", "rdkafka-mock"):
        chaos = json.loads((out / f"chaos-{target}" / "chaos.json").read_text())
        assert [r["scenario"] for r in chaos["results"]] == ["acks1-latency"]
        assert chaos["results"][0]["verdict"] == "pass", chaos["results"][0]
        judged = {a["anomaly"]: a for a in chaos["results"][0]["anomalies"]}
        assert not judged["lost-write"]["allowed"], "acks1-latency's promise forbids loss, even at acks=1"
    report = out / "report"
    for name in ("index.html", "summary.json", "junit.xml"):
        assert (report / name).stat().st_size > 0
    assert str(report / "index.html") in output.replace("\n", "")
    rolled = json.loads((report / "summary.json").read_text())
    assert rolled["schema"] == 1
    # the conformance part of every target, rolled up next to the differential and chaos results
    runs = {r["target"]: r for r in rolled["rule_runs"]}
    assert set(runs) == {"reference", "rdkafka-mock"}
    for target, run in runs.items():
        conform = json.loads((out / f"conform-{target}" / "conform.json").read_text())
        assert conform["run_id"] == run["run_id"] and conform["budget_s"] > 0
        assert run["passed"] > 0 and run["tests"] == sum(
            run[k] for k in ("passed", "failed", "errors", "not_applicable", "not_run")
        )
        assert rolled["rule_status"][target], target
    assert runs["reference"]["failed"] == runs["reference"]["surprises"] == 0, "the reference passes all"
    page = (report / "index.html").read_text()
    assert 'id="rules"' in page and 'id="rules-grid"' in page and 'id="ledger-table"' in page
    for target in ("reference", "rdkafka-mock"):
        row = page.split(f'<tr data-target="{target}">')[1].split("</tr>")[0]
        shares = [re.search(rf"\d / [1-9][\d,]* {n}<", row) for n in ("tests", "exchanges", "scenario runs")]
        assert all(shares), f"{target}: rules, diff and chaos side by side, each of a count: {row}"
    # the whole campaign keeps to its budget, give or take the targets' start and the JVM's
    assert elapsed < BUDGET_S + 90, f"{elapsed:.0f}s for a {BUDGET_S}s budget"


def test_the_dashboard_renders_in_chromium_with_grid_divergences_and_plots(campaign_dir, tmp_path):
    """What only a browser produces: the page's script ran to its end (``data-ready``) and met no error
    (``data-errors``, and none in Chromium's console log), every chart was laid out at a plausible size
    with its marks drawn, and the screenshot is a page of many colours (suites/spark_reports/
    test_dashboard_chromium.py shows each of these checks failing on a broken page)."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("chromium is not installed (ci/install-tools.sh installs it)")
    out, _, _ = campaign_dir
    page = (out / "report" / "index.html").resolve().as_uri()
    flags = [
        chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1280,2400",
    ]  # fmt: skip
    dumped = subprocess.run(
        [*flags, "--enable-logging=stderr", "--v=0", "--dump-dom", page],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    dom = dumped.stdout
    from html.parser import HTMLParser

    class Census(HTMLParser):
        """Counts what the rendered page holds in each section, and what its script reported."""

        def __init__(self) -> None:
            super().__init__()
            self.section: list[str] = []
            self.grid_rows = self.divergences = self.repro_buttons = 0
            self.ids: set[str] = set()
            self.page: dict[str, str] = {}  # the <html> attributes
            self.charts: dict[str, dict[str, str]] = {}  # data-chart -> the figure's attributes

        def handle_starttag(self, tag, attrs):
            a = dict(attrs)
            if tag == "html":
                self.page = a
            if a.get("id"):
                self.ids.add(a["id"])
            if tag == "section":
                self.section.append(a.get("id", ""))
            where = self.section[-1] if self.section else ""
            if where == "grid" and tag == "tr":
                self.grid_rows += 1
            if where == "divergences" and tag == "article" and "cluster" in a.get("class", ""):
                self.divergences += 1
            if where == "divergences" and "data-copy" in a:
                self.repro_buttons += 1
            if tag == "figure" and a.get("data-chart"):
                self.charts[a["data-chart"]] = a

        def handle_endtag(self, tag):
            if tag == "section" and self.section:
                self.section.pop()

    census = Census()
    census.feed(dom)
    assert {"grid", "divergences", "latency", "chaos", "history"} <= census.ids
    assert census.grid_rows > 2, "the grid has a header and rows"
    assert census.divergences > 0
    assert census.repro_buttons == census.divergences, "every divergence comes with its repro command"
    # the browser's part
    assert census.page.get("data-ready") == "true", "the page's script did not run to its end"
    assert census.page.get("data-errors") == "0", census.page.get("data-error-list", "no error recorder ran")
    uncaught = [line for line in dumped.stderr.splitlines() if ":CONSOLE" in line and "Uncaught" in line]
    assert not uncaught, uncaught
    assert census.charts, "no chart on the page"
    for chart, a in census.charts.items():
        width, height = int(a.get("data-rendered-width", 0)), int(a.get("data-rendered-height", 0))
        assert 200 <= width <= 1280 and 40 <= height <= 9600, f"{chart} laid out at {width}x{height}"
        assert int(a.get("data-rendered-marks", -1)) <= int(a["data-marks"]), (chart, a)
    assert sum(int(a["data-rendered-marks"]) for a in census.charts.values()) > 0, "no mark drawn"
    artefacts = Path(os.environ.get("KCONFORM_ARTEFACTS", tmp_path / "artefacts"))
    artefacts.mkdir(parents=True, exist_ok=True)
    shot = artefacts / "campaign-dashboard.png"
    subprocess.run([*flags, f"--screenshot={shot}", page], capture_output=True, timeout=120, check=True)
    print(f"dashboard screenshot: {shot}")
    pixels = png_colours(shot)
    background = pixels.most_common(1)[0][1] / pixels.total()
    assert len(pixels) >= 64 and background <= 0.9, (
        f"a blank screenshot: {len(pixels)} colours, {background:.0%}"
    )
