"""The conformance rules in the report: rule rows written as ``kconform conform`` writes them, rolled up by
both engines into the rules grid, the per-API ledger, each rule's status, the tests that did not pass and
the runs over time; every number below is worked out by hand from the rows. Then what a report does with
them: the comparison with a previous report, the JUnit suite, the page, and bad input."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kconform.spark_reports.build import build_dashboard
from kconform.spark_reports.compare import RuleChange, compare
from kconform.spark_reports.dashboard import render_dashboard
from kconform.spark_reports.duck import duckdb_rollup
from kconform.spark_reports.model import LedgerRow, RuleCell
from kconform.spark_reports.outputs import junit_xml, summary_json
from kconform.spark_reports.runs import ReportInputError, find_runs
from kconform.traces.rules import RuleRow, write_rule_rows

T0_US = 1_790_000_000_000_000
PRODUCE, FETCH, API_VERSIONS = (0, "Produce"), (1, "Fetch"), (18, "ApiVersions")
APIS = [
    {"api_key": 0, "api_name": "Produce", "versions": [3, 12]},
    {"api_key": 1, "api_name": "Fetch", "versions": [4, 17]},
    {"api_key": 18, "api_name": "ApiVersions", "versions": [0, 4]},
]


def row(target, rule, family, api, version, outcome, *, expected="pass", surprise=False, at=0, **more):
    return RuleRow(
        target=target, rule_id=rule, family=family, api_key=api[0], api_name=api[1], api_version=version,
        outcome=outcome, expected_outcome=expected, surprise=surprise, kafka_source=f"Kafka.{rule}",
        duration_us=1000, started_at_us=T0_US + at, **more,
    )  # fmt: skip


def conform_run(directory: Path, run_id: str, target: str, started: str, rows: list[RuleRow], apis=APIS):
    write_rule_rows(directory, run_id, rows)
    conform = {"schema": 1, "run_id": run_id, "target": target, "started_at": started, "apis": apis}
    (directory / "conform.json").write_text(json.dumps(conform))
    return directory


@pytest.fixture
def runs(tmp_path):
    """An older and a newer run of ``peer`` (only the newer one is where it stands), one of ``reference``."""
    conform_run(tmp_path / "old-peer", "r-old", "peer", "2026-11-01T00:00:00Z", [
        row("peer", "produce.a", "produce", PRODUCE, 3, "fail", surprise=True, field="x", kafka_value="1",
            target_value="2"),
        row("peer", "produce.b", "produce", PRODUCE, 3, "pass"),
    ])  # fmt: skip
    conform_run(tmp_path / "new-peer", "r-new", "peer", "2026-11-02T00:00:00Z", [
        row("peer", "produce.a", "produce", PRODUCE, 3, "pass"),
        row("peer", "produce.a", "produce", PRODUCE, 12, "fail", expected="fail", field="error_code",
            kafka_value="NONE", target_value="CORRUPT_MESSAGE"),
        row("peer", "produce.b", "produce", PRODUCE, 3, "pass"),
        row("peer", "produce.b", "produce", PRODUCE, 12, "error", surprise=True, detail="set-up failed"),
        row("peer", "fetch.c", "fetch", FETCH, 4, "pass"),
        row("peer", "fetch.c", "fetch", FETCH, 17, "pass"),
        row("peer", "fetch.d", "fetch-sessions", FETCH, -1, "not-applicable", expected="not-applicable"),
        row("peer", "fetch.e", "fetch-sessions", FETCH, 17, "not-run", expected="not-run"),
    ], apis=APIS[:2])  # fmt: skip
    conform_run(tmp_path / "ref", "r-ref", "reference", "2026-11-02T00:00:05Z", [
        row("reference", "produce.a", "produce", PRODUCE, 3, "pass"),
        row("reference", "produce.a", "produce", PRODUCE, 12, "pass"),
        row("reference", "api-versions.f", "protocol", API_VERSIONS, 4, "pass"),
    ])  # fmt: skip
    return find_runs([tmp_path])


def cell(family, api, target, *counts):
    return RuleCell(family, api[0], api[1], target, *counts)


def test_both_engines_roll_the_rules_up_to_the_hand_counted_rows(runs, spark):
    from kconform.spark_reports.rollup import spark_rollup

    duck = duckdb_rollup(runs)
    assert [r.kind for r in runs] == ["conform"] * 3
    # (tests, passed, failed, errors, not applicable, not run, surprises), the newer peer run only
    assert duck.rules == [
        cell("fetch", FETCH, "peer", 2, 2, 0, 0, 0, 0, 0),
        cell("fetch-sessions", FETCH, "peer", 2, 0, 0, 0, 1, 1, 0),
        cell("produce", PRODUCE, "peer", 4, 2, 1, 1, 0, 0, 1),
        cell("produce", PRODUCE, "reference", 2, 2, 0, 0, 0, 0, 0),
        cell("protocol", API_VERSIONS, "reference", 1, 1, 0, 0, 0, 0, 0),
    ]
    assert duck.rule_status == {
        "peer": {"fetch.c": "pass", "fetch.d": "not-applicable", "fetch.e": "not-run", "produce.a": "fail",
                 "produce.b": "error"},
        "reference": {"api-versions.f": "pass", "produce.a": "pass"},
    }  # fmt: skip
    # the peer's newer run advertised no ApiVersions: not routed, no versions, untested
    assert duck.ledger == [
        LedgerRow("peer", 0, "Produce", True, "3-12", 2, 4, 2, 1, 1, 0, 0, "partial"),
        LedgerRow("peer", 1, "Fetch", True, "4-17", 3, 4, 2, 0, 0, 1, 1, "full"),
        LedgerRow("reference", 0, "Produce", True, "3-12", 1, 2, 2, 0, 0, 0, 0, "full"),
        LedgerRow("reference", 1, "Fetch", True, "4-17", 0, 0, 0, 0, 0, 0, 0, "untested"),
        LedgerRow("reference", 18, "ApiVersions", True, "0-4", 1, 1, 1, 0, 0, 0, 0, "full"),
    ]
    assert [(r.target, r.rule_id, r.api_version, r.outcome, r.surprise) for r in duck.rule_results] == [
        ("peer", "produce.a", 12, "fail", False),
        ("peer", "produce.b", 12, "error", True),
    ], "the older run's failure is history, not where the peer stands"
    assert duck.rule_results[0].target_value == "CORRUPT_MESSAGE"
    assert [(r.run_id, r.target, r.tests, r.passed, r.failed, r.surprises) for r in duck.rule_runs] == [
        ("r-old", "peer", 2, 1, 1, 1),
        ("r-new", "peer", 8, 4, 1, 1),
        ("r-ref", "reference", 3, 3, 0, 0),
    ]
    assert duck.exchanges == 0 and duck.grid == []
    assert spark_rollup(runs, spark) == duck


def test_a_later_report_names_the_rules_that_changed_and_carries_the_history(runs, tmp_path):
    rollup = duckdb_rollup(runs)
    previous = summary_json(rollup, compare(rollup, None))
    previous["rule_status"]["peer"] |= {"produce.a": "pass", "fetch.c": "fail", "fetch.e": "pass"}
    previous["rule_history"] = [dict(previous["rule_history"][0], run_id="r-earlier", started_at="2026-10")]
    comparison = compare(rollup, previous)
    assert comparison.rule_changes == [
        RuleChange("fetch.c", "peer", "fail", "pass"),
        RuleChange("produce.a", "peer", "pass", "fail"),
    ], "fetch.e did not run this time (budget): no change either way"
    assert [r.run_id for r in comparison.rule_history] == ["r-earlier", "r-old", "r-new", "r-ref"]


def test_junit_fails_a_rule_only_on_news_and_skips_known_failures(runs):
    root = ET.fromstring(junit_xml(duckdb_rollup(runs)).split("\n", 1)[1])
    suite = root.find("testsuite[@name='kconform.rules']")
    assert {k: suite.get(k) for k in ("tests", "failures", "errors", "skipped")} == {
        "tests": "7", "failures": "0", "errors": "1", "skipped": "3"
    }  # fmt: skip
    verdicts = {
        (case.get("classname"), case.get("name")): [(e.tag, e.get("message")) for e in case] for case in suite
    }
    assert verdicts[("kconform.rules.peer", "produce.b")] == [("error", "v12 (Kafka.produce.b)")]
    assert verdicts[("kconform.rules.peer", "produce.a")] == [
        ("skipped", "known fail on this kind of target")
    ]
    assert verdicts[("kconform.rules.peer", "fetch.e")] == [("skipped", "not run: budget spent")]
    assert verdicts[("kconform.rules.reference", "produce.a")] == []


def test_the_page_shows_the_rules_grid_the_ledger_and_each_share_with_its_denominator(runs):
    rollup = duckdb_rollup(runs)
    page = render_dashboard(rollup, compare(rollup, None), title="t", generated_at="now")
    rules = page.split('id="rules"')[1].split("</section>")[0]
    peer = rules.split('<tr data-target="peer">')[1].split("</tr>")[0]
    assert "4 / 5 tests" in peer, "passed / ran (passed + failed), errors apart"
    assert "1 of them news" in rules and "produce.b" in rules
    grid = rules.split('id="rules-grid"')[1].split("</table>")[0]
    assert "fetch-sessions" in grid and "1 not run" in grid and "2 / 3" in grid
    ledger = rules.split('id="ledger-table"')[1].split("</table>")[0]
    assert 'partial</span> <span class="mono">2 / 3</span>' in ledger
    assert "Nothing to report" not in page


def test_a_conformance_run_alone_makes_a_report(runs, tmp_path):
    page = build_dashboard([r.path for r in runs], tmp_path / "report", engine="duckdb")
    summary = json.loads((tmp_path / "report" / "summary.json").read_text())
    assert summary["totals"]["rule_tests_ran"] == 8 and summary["totals"]["rule_surprises"] == 1
    assert 'id="rules-grid"' in page.read_text()


def test_a_rules_file_that_is_not_one_is_refused_naming_it(tmp_path):
    run = conform_run(tmp_path / "run", "r", "peer", "2026-11-01T00:00:00Z", [])
    bad = run / "rules" / "part-000000.parquet"
    pq.write_table(pa.table({"rule_id": ["x"]}), bad)
    with pytest.raises(ReportInputError, match=r"part-000000.parquet: column run_id is missing"):
        find_runs([run])
    bad.write_bytes(b"PAR1 not really")
    with pytest.raises(ReportInputError, match="not a readable Parquet rules file"):
        find_runs([run])
    (run / "rules" / "part-000000.parquet").unlink()
    (run / "conform.json").write_text(json.dumps({"run_id": "r", "apis": [{"api_key": "x"}]}))
    with pytest.raises(ReportInputError, match="conform.json: 'apis' should be"):
        find_runs([run])


def test_rule_rows_refuse_an_outcome_they_do_not_know(tmp_path):
    with pytest.raises(ValueError, match="maybe"):
        write_rule_rows(tmp_path, "r", [row("t", "r", "f", PRODUCE, 3, "maybe")])
    assert not (tmp_path / "rules").exists()
