"""The dashboard, summary.json and JUnit XML from roll-ups built by hand: no Spark, no browser.

The roll-up below has a known content (two targets, a divergence whose signature carries markup, a
chaos violation with its history excerpt), so each section can be checked for what it must show."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner

from kconform.harness.cli import cli
from kconform.spark_reports.build import load_previous
from kconform.spark_reports.compare import compare
from kconform.spark_reports.dashboard import SECTION_IDS, render_dashboard
from kconform.spark_reports.model import (
    NO_FAULT,
    ChaosVerdict,
    CrashRow,
    DiffRunFacts,
    DivergenceCluster,
    GridCell,
    LatencyRow,
    ReplayRow,
    Rollup,
    RunRow,
)
from kconform.spark_reports.outputs import junit_xml, write_junit, write_summary_json
from kconform.spark_reports.runs import ReportInputError

HOSTILE = 'Produce/v9/<script>alert("x")</script>/value'
BOTH = ("reference", "rdkafka-mock")  # who deviates when no verdict tells: both are suspects


def cell(
    api: str, key: int, version: int, target: str, passed: int, diverged: int = 0, errors: int = 0
) -> GridCell:
    total = passed + diverged + errors
    return GridCell(key, api, version, target, total, passed, diverged, errors, 0, 0, 0)


def cluster(
    signature: str,
    api: str = "Produce",
    version: int = 9,
    run: str = "run-2",
    deviates: tuple = ("rdkafka-mock",),
) -> DivergenceCluster:
    """A cluster of 12 differing pairs; ``deviates`` of both sides means an unknown verdict."""
    unknown = len(deviates) == 2
    return DivergenceCluster(
        signature=signature,
        api_key=0,
        api_name=api,
        api_version=version,
        exchanges=24,
        cases=3,
        targets=("rdkafka-mock", "reference"),
        runs=(run,),
        example_case="cases/r2/case-007.json",
        repro="kconform repro cases/r2/case-007.json",
        pairs=12,
        sides=("reference", "rdkafka-mock"),
        values=(("1", "2"), ("1", "<b>3</b>")),
        verdict="unknown" if unknown else "deviates",
        deviates=deviates,
        verdict_text="unknown: no rule says what Kafka answers" if unknown else "rdkafka-mock deviates: why",
        evidence="" if unknown else "core/src/main/scala/kafka/server/KafkaApis.scala",
        cause="c1",
        steps=("Produce v9 (acks=-1)", "Metadata v12"),
        reproduced=True,
    )


def sample_rollup() -> Rollup:
    grid = [
        cell("Produce", 0, 9, "reference", passed=88, diverged=12),
        replace(cell("Produce", 0, 9, "rdkafka-mock", passed=88, diverged=12), deviates=12),
        cell("Metadata", 3, 12, "reference", passed=50),
        cell("Metadata", 3, 12, "rdkafka-mock", passed=47, errors=3),
    ]
    latency = [
        LatencyRow("reference", "Produce", NO_FAULT, 100, 410.0, 2900.0, 8100.0),
        LatencyRow("rdkafka-mock", "Produce", NO_FAULT, 100, 120.0, 900.0, 1500.0),
        LatencyRow("reference", "Produce", "latency@*(latency=100)", 40, 101_000.0, 140_000.0, 151_000.0),
    ]
    runs = [
        RunRow(
            "run-1",
            "diff",
            ("rdkafka-mock", "reference"),
            200,
            176,
            24,
            0,
            "2026-01-01T10:00:00Z",
            "/runs/r1",
        ),
        RunRow("run-2", "chaos", ("reference",), 100, 97, 0, 3, "2026-01-02T10:00:00Z", "/runs/r2"),
    ]
    chaos = [
        ChaosVerdict(
            scenario="idempotent-reset-peer",
            target="reference",
            verdict="violation",
            promise="zero duplicates and zero losses of acknowledged writes",
            operations=500,
            violations={"duplicate": 2},
            excerpts={"duplicate": [{"op": "send", "value": 41}, "ack 41 offset 7", "ack 41 offset 8 <dup>"]},
            run_id="run-2",
        ),
        ChaosVerdict(
            "acks1-latency", "reference", "pass", "no acknowledged write lost", 300, {}, {}, "run-2"
        ),
    ]
    return Rollup(
        grid=grid,
        divergences=[
            cluster(HOSTILE),
            cluster(
                "Metadata/v12/brokers[*].rack/value", "Metadata", 12, deviates=("reference", "rdkafka-mock")
            ),
        ],
        latency=latency,
        runs=runs,
        chaos=chaos,
        exchanges=300,
    )


class _Elements(HTMLParser):
    """Every element's tag and attributes, and the page's text; enough to check structure."""

    def __init__(self) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(page: str) -> _Elements:
    parser = _Elements()
    parser.feed(page)
    return parser


def render(rollup: Rollup, previous: dict | None = None) -> str:
    return render_dashboard(rollup, compare(rollup, previous), title="test <report>", generated_at="now")


def test_every_section_is_there_and_shows_its_content():
    page = render(sample_rollup())
    parsed = parse(page)
    ids = {attrs.get("id") for _, attrs in parsed.elements}
    assert set(SECTION_IDS) <= ids
    grid_rows = re.search(r'<table class="grid" id="grid-table">.*?</table>', page, re.S).group(0)
    assert grid_rows.count("<tr data-row>") == 2  # Produce v9 and Metadata v12, a column per target
    assert grid_rows.count('class="cell"') == 4
    assert page.count('class="cluster"') == 2
    assert "kconform repro cases/r2/case-007.json" in page
    assert "<details" in page and "ack 41 offset 8 &lt;dup&gt;" in page  # the violation's excerpt
    assert "test &lt;report&gt;" in page


def test_charts_carry_their_marks():
    parsed = parse(render(sample_rollup()))
    charts = {
        attrs["data-chart"]: int(attrs["data-marks"]) for _, attrs in parsed.elements if "data-chart" in attrs
    }
    assert {"outcomes", "outcomes-by-api", "divergences-by-api", "latency", "latency-faults"} <= charts.keys()
    assert {"history-pass-rate", "history-divergences"} <= charts.keys()
    assert all(marks > 0 for marks in charts.values()), charts
    assert charts["latency"] == 2 * 3  # two targets, three percentiles each
    assert charts["history-pass-rate"] == 1  # run-1 only: a chaos run is judged by its verdicts
    svgs = [attrs for tag, attrs in parsed.elements if tag == "svg"]
    assert svgs and all(a.get("role") == "img" and a.get("aria-labelledby") for a in svgs)


def test_trace_text_is_escaped_and_nothing_is_loaded_from_elsewhere():
    page = render(sample_rollup())
    assert "<script>alert" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    assert page.count("<script>") == 1  # the page's own filter script, nothing else
    assert not re.search(r'(src|href)="(https?:)?//', page)
    assert "@import" not in page and "url(" not in page


def test_an_empty_rollup_renders_and_says_there_is_nothing():
    page = render(Rollup())
    ids = {attrs.get("id") for _, attrs in parse(page).elements}
    assert set(SECTION_IDS) <= ids
    assert "Nothing to report" in page
    assert "nothing to grid" in page and "No divergences" in page and "No chaos scenarios" in page


def test_compare_finds_new_fixed_and_not_retested_divergences():
    rollup = sample_rollup()
    previous = {
        "schema": 1,
        "generated_at": "yesterday",
        "grid": [
            {"passed": 90, "total": 100, "skipped": 0},
        ],
        "divergences": [
            {
                "signature": HOSTILE,
                "api_name": "Produce",
                "api_version": 9,
                "targets": ["rdkafka-mock", "reference"],
            },
            {
                "signature": "Metadata/v12/old",
                "api_name": "Metadata",
                "api_version": 12,
                "targets": ["reference"],
            },
            {"signature": "Fetch/v4/gone?", "api_name": "Fetch", "api_version": 4, "targets": ["reference"]},
            {"signature": "Metadata/v12/kept", "api_name": "Metadata", "api_version": 12,
             "targets": ["reference"]},
            {"signature": "Metadata/v12/unknown", "api_name": "Metadata", "api_version": 12,
             "targets": ["reference"]},
        ],
        "chaos": [{"scenario": "idempotent-reset-peer", "target": "reference", "verdict": "pass"}],
    }  # fmt: skip
    # the campaign replayed the stored cases of three it did not see again; "unknown" was not replayed
    pair = ("reference", "rdkafka-mock")
    rollup.replays = [
        ReplayRow("Metadata/v12/old", pair, False, "c1.json", "run-1"),
        ReplayRow("Metadata/v12/kept", pair, True, "c2.json", "run-1"),
        ReplayRow("Fetch/v4/gone?", pair, None, "c3.json", "run-1"),  # could not be replayed
    ]
    comparison = compare(rollup, previous)
    # the previous report says nothing of its drawing: what it did not list counts as new
    assert [d.signature for d in comparison.new_divergences] == ["Metadata/v12/brokers[*].rack/value"]
    assert [d.signature for d in comparison.fixed_divergences] == ["Metadata/v12/old"]  # its replay is clean
    assert [d.signature for d in comparison.still_there] == ["Metadata/v12/kept"]
    assert [d.signature for d in comparison.not_replayed] == ["Metadata/v12/unknown"]
    assert [d.signature for d in comparison.not_retested] == ["Fetch/v4/gone?"]  # Fetch v4 was not run
    assert [(c.before, c.after) for c in comparison.verdict_changes] == [("pass", "violation")]
    assert comparison.previous_pass_rate == 0.9
    assert comparison.pass_rate_change == pytest.approx(273 / 300 - 0.9)
    page = render_dashboard(rollup, comparison, title="t", generated_at="now")
    changes = re.search(r'<section class="panel" id="changes".*?</section>', page, re.S).group(0)
    assert "Metadata/v12/brokers[*].rack/value" in changes and "Metadata/v12/old" in changes


def test_a_difference_is_new_only_when_the_previous_run_drew_the_case_that_shows_it():
    """Same seed, same targets: case n is the same case in both runs. A signature first shown by a case
    the previous run drew is new; one first shown past where it stopped is only first found."""
    rollup = sample_rollup()
    pair = ("reference", "rdkafka-mock")
    rack = "Metadata/v12/brokers[*].rack/value"
    rollup.diff_runs = [DiffRunFacts("run-1", pair, 0, 80, {HOSTILE: 12, rack: 60})]
    previous = {"grid": [], "divergences": [], "diff_runs": [{"targets": list(pair), "seed": 0, "drawn": 50}]}
    comparison = compare(rollup, previous)
    assert [d.signature for d in comparison.new_divergences] == [HOSTILE]
    assert [d.signature for d in comparison.first_found] == [rack]
    # another seed draws other cases: nothing the previous run drew says anything of them
    rollup.diff_runs = [DiffRunFacts("run-1", pair, 7, 80, {HOSTILE: 12, rack: 60})]
    assert not compare(rollup, previous).new_divergences
    page = render_dashboard(rollup, compare(rollup, previous), title="t", generated_at="now")
    assert 'data-change="first-found"' in page and 'data-change="new"' in page
    # a target that dies is seen dead by whichever request is in flight: a request meeting a crash the
    # previous report had (same target, same last words) is no new difference, and neither is one whose
    # own stored case does not show it again
    met = "EndTxn/v1/<connection>/fate"
    crashed = replace(cluster(met, "EndTxn", 1), values=(('"answered"', '"crashed"'),))
    flaky = replace(cluster("Fetch/v4/error_code/error_code", "Fetch", 4), reproduced=False)
    rollup.divergences = [crashed, flaky]
    rollup.crashes = [CrashRow("rdkafka-mock", 26, "EndTxn", 1, "assertion failed", 1, ("run-1",))]
    rollup.diff_runs = [DiffRunFacts("run-1", pair, 0, 80, {met: 3, flaky.signature: 4})]
    known = previous | {"crashes": [{"target": "rdkafka-mock", "message": "assertion failed"}]}
    assert [d.signature for d in compare(rollup, known).unconfirmed] == [met, flaky.signature]
    assert [d.signature for d in compare(rollup, previous).new_divergences] == [met]  # a crash not had before
    # and the other way: a request that met a crash before, whose case met none on replay, is not fixed
    # while the target still has that crash
    rollup.divergences = []
    rollup.replays = [ReplayRow(met, pair, False, "c.json", "run-1")]
    former = {"signature": met, "api_name": "EndTxn", "api_version": 1, "targets": list(pair),
              "values": [['"answered"', '"crashed"']]}  # fmt: skip
    had = {
        "divergences": [former],
        "grid": [],
        "crashes": [
            {"target": "rdkafka-mock", "api_name": "EndTxn", "api_version": 1, "message": "assertion failed"}
        ],
    }
    assert [d.signature for d in compare(rollup, had).still_there] == [met]
    rollup.crashes = []
    assert [d.signature for d in compare(rollup, had).fixed_divergences] == [met]


def test_summary_json_round_trips_as_the_previous_report(tmp_path: Path):
    first = sample_rollup()
    first_comparison = compare(first, None, now="t1")
    write_summary_json(tmp_path / "summary.json", first, first_comparison, generated_at="t1", title="r")
    previous = load_previous(tmp_path)  # the folder, as --previous takes it
    assert previous["schema"] == 1 and previous["totals"]["divergence_signatures"] == 2
    assert [p["run_id"] for p in previous["history"]] == ["run-1", "run-2"]

    # The next report: one divergence fixed, a new run; the history keeps the runs read before.
    later = sample_rollup()
    later.divergences = later.divergences[1:]
    later.runs = [RunRow("run-3", "diff", ("reference",), 10, 10, 0, 0, "2026-01-03T10:00:00Z", "/runs/r3")]
    later.replays = [
        ReplayRow(HOSTILE, ("reference", "rdkafka-mock"), False, "cases/r2/case-007.json", "run-3")
    ]
    comparison = compare(later, previous, now="t2")
    assert [d.signature for d in comparison.fixed_divergences] == [HOSTILE]
    assert not comparison.new_divergences
    assert [p.run_id for p in comparison.history] == ["run-1", "run-2", "run-3"]
    # each signature's span across the reports: when it appeared, was last seen, was fixed
    spans = {
        s.signature: (s.first_seen, s.last_seen, s.reports, s.fixed_at) for s in comparison.cause_history
    }
    assert spans == {
        HOSTILE: ("t1", "t1", 1, "t2"),
        "Metadata/v12/brokers[*].rack/value": ("t1", "t2", 2, None),
    }
    # and each API's agreement on each target at each report, oldest first
    trend = [(p.generated_at, p.passed, p.judged) for p in comparison.api_trend if p.api_name == "Produce"]
    assert trend == [("t1", 88, 100), ("t2", 88, 100)] * 2  # the mock's, then the reference's
    page = render_dashboard(later, comparison, title="t", generated_at="t2")
    history = re.search(r'<section class="panel" id="history".*?</section>', page, re.S).group(0)
    assert 'id="cause-history"' in history and "88% → 88%" in history.replace("88.0%", "88%")
    assert not list(tmp_path.glob(".*tmp"))  # written atomically, nothing left behind


def test_a_previous_report_that_is_not_one_is_refused(tmp_path: Path):
    with pytest.raises(ReportInputError, match="no summary.json"):
        load_previous(tmp_path)
    (tmp_path / "summary.json").write_text('{"schema": 99}')
    with pytest.raises(ReportInputError, match="schema 99"):
        load_previous(tmp_path)


def test_junit_has_a_testcase_per_cell_and_scenario_failing_where_it_should(tmp_path: Path):
    write_junit(tmp_path / "junit.xml", sample_rollup())
    root = ET.parse(tmp_path / "junit.xml").getroot()
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    grid = suites["kconform.grid"]
    assert len(grid.findall("testcase")) == 4
    failing = {
        (c.get("classname"), c.get("name")) for c in grid.findall("testcase") if c.find("failure") is not None
    }
    # both differed in Produce v9, but the verdict lays it on the mock: the reference's cell passes
    assert failing == {("kconform.grid.rdkafka-mock", "Produce v9")}
    # the mock's Metadata v12 cell has error answers but no divergence: it passes
    assert not [c for c in grid.findall("testcase") if c.find("error") is not None]
    chaos = suites["kconform.chaos"].findall("testcase")
    assert [(c.get("name"), c.find("failure") is not None) for c in chaos] == [
        ("idempotent-reset-peer", True),
        ("acks1-latency", False),
    ]
    assert "ack 41 offset 8 <dup>" in chaos[0].find("failure").text
    divergences = suites["kconform.divergences"].findall("testcase")
    failed = sorted((c.get("classname"), c.find("failure") is not None) for c in divergences)
    # a testcase per signature and side: the known deviation fails the mock only, the unknown both
    assert failed == [
        ("kconform.divergences.rdkafka-mock.Metadata", True),
        ("kconform.divergences.rdkafka-mock.Produce", True),
        ("kconform.divergences.reference.Metadata", True),
        ("kconform.divergences.reference.Produce", False),
    ]
    assert root.get("failures") == str(1 + 1 + 3)  # grid cells, chaos, divergences
    assert int(root.get("tests")) == 4 + 2 + 4


def test_junit_stays_valid_xml_whatever_the_traces_hold():
    rollup = Rollup(divergences=[cluster("Produce/v9/\x00\x1b[31m/value & <more>")])
    ET.fromstring(junit_xml(rollup))


def test_report_command_on_a_bad_path_exits_2_with_a_message(tmp_path: Path):
    result = CliRunner().invoke(
        cli, ["report", str(tmp_path / "no-such-run"), "--out", str(tmp_path / "out")]
    )
    assert result.exit_code == 2, result.output
    assert "error:" in result.output and "no-such-run" in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "out" / "index.html").exists()


# --- the chaos matrix, from chaos.json files as kconform chaos writes them --------------------------------


def anomaly(name: str, count: int, allowed: bool, reason: str = "", excerpt: tuple = ()) -> dict:
    verdict = "ok" if not count else "allowed" if allowed else "violation"
    return {"anomaly": name, "count": count, "allowed": allowed, "verdict": verdict, "reason": reason,
            "excerpt": list(excerpt)}  # fmt: skip


def result(scenario: str, target: str, verdict: str, operations, anomalies=(), promise: str = "") -> dict:
    return {
        "scenario": scenario,
        "target": target,
        "verdict": verdict,
        "promise": promise or f"the promise of {scenario}",
        "operations": operations,
        "violations": {a["anomaly"]: a["count"] for a in anomalies if a["verdict"] == "violation"},
        "measured": {a["anomaly"]: a["count"] for a in anomalies if a["verdict"] == "allowed"},
        "anomalies": list(anomalies),
    }


LOSS_REASON = "allowed: acks=1 loses writes the leader alone had when it changes"
CHAOS_RUNS = {
    # two runs of one scenario on the single broker, and a violation
    ("chaos-1", "reference"): [
        result("acks1-latency", "reference", "pass", {"ok": 300, "fail": 4, "info": 1}, [
            anomaly("lost-write-leader-change", 0, True, LOSS_REASON), anomaly("G1a", 0, True),
            anomaly("lost-write", 0, False),
        ]),
        result("idempotent-reset-peer", "reference", "violation", {"ok": 500, "fail": 0, "info": 0}, [
            anomaly("duplicate", 2, False, "forbidden: enable.idempotence=true", ("ack 41 offset 8 <dup>",)),
            anomaly("G1a", 0, True),
        ]),
    ],
    ("chaos-2", "reference"): [
        result("acks1-latency", "reference", "pass", {"ok": 200, "fail": 0, "info": 0}, [
            anomaly("lost-write-leader-change", 1, True, LOSS_REASON), anomaly("G1a", 0, True),
            anomaly("lost-write", 0, False),
        ]),
    ],
    # the replication catalogue on a cluster (reference:3): a loss the settings allow, measured
    ("chaos-3", "reference:3"): [
        result("acks1-leader-isolated", "cluster", "pass", {"ok": 1204, "fail": 7, "info": 3}, [
            anomaly("lost-write-leader-change", 3, True, LOSS_REASON), anomaly("lost-write", 0, True),
            anomaly("G1a", 0, True), anomaly("duplicate", 0, False, "forbidden: retries=0"),
        ]),
        {"scenario": "leader-killed", "target": "cluster", "verdict": "pass", "promise": "p",
         "operations": 900},  # as an older chaos.json has it: one total, no anomalies' flags
    ],
}  # fmt: skip


def chaos_runs(root: Path) -> list:
    """The chaos.json files above, each in a run directory, read as the report reads them."""
    import json

    from kconform.spark_reports.runs import chaos_verdicts, find_runs

    for (run_id, target), results in CHAOS_RUNS.items():
        (root / run_id / "traces").mkdir(parents=True)
        document = {"schema": 1, "run_id": run_id, "target": target, "results": results}
        (root / run_id / "chaos.json").write_text(json.dumps(document))
    return chaos_verdicts(find_runs([root]))


def chaos_cells(page: str) -> dict[tuple[str, str], str]:
    """(scenario, target) -> the cell's text, spaces collapsed."""
    import html

    found = re.findall(
        r'<td class="chaos-cell" data-scenario="([^"]*)" data-target="([^"]*)"[^>]*>(.*?)</td>', page, re.S
    )
    return {(s, t): " ".join(html.unescape(re.sub("<[^>]+>", " ", body)).split()) for s, t, body in found}


def test_the_chaos_matrix_has_a_cell_per_scenario_and_target_with_counts_and_denominators(tmp_path: Path):
    verdicts = chaos_runs(tmp_path)
    page = render(Rollup(chaos=verdicts))
    table = re.search(r'<table class="chaos" id="chaos-table">.*?</table>', page, re.S).group(0)
    assert re.findall(r"<th>([^<]*)</th>", table) == ["scenario", "promise", "cluster", "reference"]
    assert table.count("<tr data-row>") == 4  # four scenarios, whichever targets ran them
    cells = chaos_cells(page)
    assert len(cells) == 4 * 2
    assert cells[("acks1-leader-isolated", "cluster")] == (
        "pass 1,204 acknowledged of 1,214 operations "
        "allowed lost-write-leader-change: 3 of 1,204 acknowledged operations "
        "allowed, 0 of 1,204 acknowledged operations: G1a, lost-write"
    )
    assert cells[("acks1-latency", "reference")] == (
        "pass 2 of 2 runs 500 acknowledged of 505 operations in 2 runs "
        "allowed lost-write-leader-change: 1 of 500 acknowledged operations in 2 runs "
        "allowed, 0 of 500 acknowledged operations in 2 runs: G1a"
    )
    assert cells[("idempotent-reset-peer", "reference")] == (
        "violation 500 acknowledged of 500 operations "
        "violation duplicate: 2 of 500 acknowledged operations "
        "allowed, 0 of 500 acknowledged operations: G1a"
    )
    assert cells[("leader-killed", "cluster")] == "pass 900 operations in 1 run"  # no split: runs only
    assert cells[("acks1-latency", "cluster")] == cells[("leader-killed", "reference")] == "–"
    # the promise beside the row, the reasons on the counts, the violation's count in its detail
    assert "<td>the promise of acks1-leader-isolated</td>" in table
    assert f'<li class="allowed" title="{LOSS_REASON}">allowed lost-write-leader-change: 3 ' in table
    assert 'title="forbidden: enable.idempotence=true">violation duplicate: 2 of 500' in table
    violation = re.search(r'<details class="violation">.*?</details>', page, re.S).group(0)
    assert "duplicate: 2 of 500 acknowledged operations" in violation
    assert "ack 41 offset 8 &lt;dup&gt;" in violation


def test_junit_and_summary_carry_the_measured_allowed_anomalies(tmp_path: Path):
    rollup = Rollup(chaos=chaos_runs(tmp_path / "runs"))
    root = ET.fromstring(junit_xml(rollup))
    out = {case.get("name"): case.find("system-out").text for case in root.iter("testcase")
           if case.get("classname") == "kconform.chaos.cluster"}  # fmt: skip
    assert "1204 acknowledged of 1214 operations" in out["acks1-leader-isolated"]
    assert "G1a 0 of 1,204 acknowledged operations" in out["acks1-leader-isolated"]
    assert "lost-write-leader-change 3 of 1,204 acknowledged operations" in out["acks1-leader-isolated"]
    assert "900 operations; allowed anomalies measured: none" in out["leader-killed"]
    write_summary_json(tmp_path / "summary.json", rollup, compare(rollup, None), generated_at="t", title="r")
    [cluster] = [v for v in load_previous(tmp_path)["chaos"] if v["scenario"] == "acks1-leader-isolated"]
    assert cluster["acknowledged"] == 1204 and cluster["allowed"]["lost-write-leader-change"] == 3
