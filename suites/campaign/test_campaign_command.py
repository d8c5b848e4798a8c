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
            self.grid_rows = self.divergences = self.repro_buttons = self.crashes = 0
            self.ids: set[str] = set()
            self.page: dict[str, str] = {}  # the <html> attributes
            self.charts: dict[str, dict[str, str]] = {}  # data-chart -> the figure's attributes
            self.cards: list[dict] = []  # per divergence card: its verdict, values shown, repro command
            self.cells: dict[tuple[str, int, int], str] = {}  # grid (target, API key, version) -> state
            self.chaos_cells: list[dict] = []  # per chaos cell: scenario, target, faults felt shown
            self.tiles: dict[str, dict[str, str]] = {}  # headline key -> its attributes

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
            if where == "grid" and tag == "td" and "data-state" in a:
                self.cells[(a["data-target"], int(a["data-api-key"]), int(a["data-version"]))] = a[
                    "data-state"
                ]
            if where == "divergences" and tag == "article" and "cluster" in a.get("class", ""):
                self.divergences += 1
                self.cards.append({"verdict": a.get("data-verdict"), "values": 0, "repro": ""})
            if where == "divergences" and self.cards:
                if "data-values" in a:
                    self.cards[-1]["values"] = int(a["data-values"])
                if "data-repro" in a:
                    self.cards[-1]["repro"] = a["data-repro"]
            if where == "divergences" and "data-copy" in a:
                self.repro_buttons += 1
            if where == "crashes" and tag == "article":
                self.crashes += 1
            if where == "chaos" and tag == "td" and "data-scenario" in a:
                ran = "title" in a  # a cell of a scenario not run on that target has none
                self.chaos_cells.append({"scenario": a["data-scenario"], "ran": ran, "felt": 0})
            if where == "chaos" and "data-felt" in a and self.chaos_cells:
                self.chaos_cells[-1]["felt"] = 1
            if tag == "div" and a.get("data-tile"):
                self.tiles[a["data-tile"]] = a
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
    report = out / "report"
    rolled = json.loads((report / "summary.json").read_text())
    diff_runs = [json.loads(p.read_text()) for p in sorted(out.glob("diff-*/summary.json"))]
    # every card: both values, a verdict, a repro command naming a case inside the report
    assert len(census.cards) == len(rolled["divergences"])
    for card in census.cards:
        assert card["verdict"] in ("deviates", "unknown", "allowed", "consequence"), card
        assert card["values"] >= 1, card
        assert card["repro"].startswith("kconform repro cases/"), card
        assert (report / card["repro"].split()[-1]).is_file(), card
    # the grid: a cell for every (API, version) either target of each pair advertised
    for summary in diff_runs:
        for target, ranges in summary["coverage"]["advertised"].items():
            for key, _name, low, high in ranges:
                missing = [v for v in range(low, high + 1) if (target, key, v) not in census.cells]
                assert not missing, f"{target}: API {key} versions {missing} have no grid cell"
    assert {"exercised", "not-exercised"} <= set(census.cells.values())
    # crashes and chaos results are on the page
    assert census.crashes == len(rolled["crashes"])
    assert sum(c["times"] for c in rolled["crashes"]) == sum(len(s["crashes"]) for s in diff_runs)
    ran = [c for c in census.chaos_cells if c["ran"]]
    assert len(ran) == len({(v["scenario"], v["target"]) for v in rolled["chaos"]}) > 0
    assert all(c["felt"] for c in ran), "every chaos result says how its faults were felt"
    # every headline number equals its recomputation from summary.json
    tiles = {key: [int(a[k]) for k in sorted(a) if k.startswith("data-n")] for key, a in census.tiles.items()}
    runs = rolled["runs"]
    by_kind = {kind: sum(r["exchanges"] for r in runs if r["kind"] == kind) for kind in ("diff", "chaos")}
    assert by_kind["diff"] == 2 * sum(s["pairs_compared"] for s in diff_runs)  # a pair: both targets' rows
    assert tiles["exchanges"] == [rolled["exchanges"], by_kind["diff"], by_kind["chaos"], 0]
    assert rolled["exchanges"] == sum(r["exchanges"] for r in runs)
    grid = rolled["grid"]
    assert tiles["agreement"] == [
        sum(c["passed"] for c in grid),
        sum(c["total"] - c["skipped"] for c in grid),
    ]
    apis = {(d["api_name"], d["api_version"]) for d in rolled["divergences"]}
    assert tiles["divergences"] == [len(rolled["divergences"]), len(apis)]
    assert tiles["crashes"] == [sum(c["times"] for c in rolled["crashes"]), len(rolled["crashes"])]
    violations = sum(v["verdict"] == "violation" for v in rolled["chaos"])
    assert tiles["chaos"] == [violations, len(rolled["chaos"])]
    assert tiles["rules"] == [
        sum(c["passed"] for c in rolled["rules"]),
        sum(c["passed"] + c["failed"] for c in rolled["rules"]),
    ]
    # a repro works from a copy of the report in another directory: the case travels with it
    moved = tmp_path / "elsewhere" / "report-copy"
    shutil.copytree(report, moved)
    deviating = [c for c in census.cards if c["verdict"] == "deviates"]
    outcomes = []
    for card in deviating[:3]:
        replayed = subprocess.run(
            [sys.executable, "-m", "kconform.harness.cli", *card["repro"].split()[1:]],
            cwd=moved, capture_output=True, text=True, timeout=180,
        )  # fmt: skip
        assert replayed.returncode in (0, 1), replayed.stdout[-2000:] + replayed.stderr[-2000:]
        outcomes.append(replayed.returncode)
        if replayed.returncode == 1:
            break
    assert 1 in outcomes, "no stored case replayed its difference from the moved report"
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
