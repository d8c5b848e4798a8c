"""``kconform campaign`` end to end, bounded: the reference broker against librdkafka's mock cluster,
a differential campaign and one chaos scenario on each, rolled up by Spark into the dashboard, which
headless Chromium then renders. The screenshot is kept in ``$KCONFORM_ARTEFACTS``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.peer]

BUDGET_S = 150


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
    report = out / "report"
    for name in ("index.html", "summary.json", "junit.xml"):
        assert (report / name).stat().st_size > 0
    assert str(report / "index.html") in output.replace("\n", "")
    rolled = json.loads((report / "summary.json").read_text())
    assert rolled["schema"] == 1
    # the whole campaign keeps to its budget, give or take the targets' start and the JVM's
    assert elapsed < BUDGET_S + 90, f"{elapsed:.0f}s for a {BUDGET_S}s budget"


def test_the_dashboard_renders_in_chromium_with_grid_divergences_and_plots(campaign_dir, tmp_path):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("chromium is not installed (ci/install-tools.sh installs it)")
    out, _, _ = campaign_dir
    page = (out / "report" / "index.html").resolve().as_uri()
    flags = [
        chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}",
    ]  # fmt: skip
    dom = subprocess.run(
        [*flags, "--dump-dom", page], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    from html.parser import HTMLParser

    class Census(HTMLParser):
        """Counts what the rendered page holds in each section."""

        def __init__(self) -> None:
            super().__init__()
            self.section: list[str] = []
            self.grid_rows = self.divergences = self.repro_buttons = self.chart_marks = 0
            self.ids: set[str] = set()

        def handle_starttag(self, tag, attrs):
            a = dict(attrs)
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
            if a.get("data-chart") and a.get("data-marks"):  # a chart and how many marks it drew
                self.chart_marks += int(a["data-marks"])

        def handle_endtag(self, tag):
            if tag == "section" and self.section:
                self.section.pop()

    census = Census()
    census.feed(dom)
    assert {"grid", "divergences", "latency", "chaos", "history"} <= census.ids
    assert census.grid_rows > 2, "the grid has a header and rows"
    assert census.divergences > 0
    assert census.repro_buttons == census.divergences, "every divergence comes with its repro command"
    assert census.chart_marks > 0
    artefacts = Path(os.environ.get("KCONFORM_ARTEFACTS", tmp_path / "artefacts"))
    artefacts.mkdir(parents=True, exist_ok=True)
    shot = artefacts / "campaign-dashboard.png"
    subprocess.run(
        [*flags, f"--screenshot={shot}", "--window-size=1280,2400", page],
        capture_output=True, timeout=120, check=True,
    )  # fmt: skip
    assert shot.stat().st_size > 10_000, "a blank page compresses to almost nothing"
    print(f"dashboard screenshot: {shot}")
