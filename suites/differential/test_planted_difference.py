"""The engine's own test: a difference planted in the reference broker (ListOffsets for the latest
offset answers one past the end) is found by a generated campaign, shrunk to a few operations, stored,
and replayed by ``kconform repro``; the same case on two unmodified brokers shows nothing."""

from __future__ import annotations

import json

from click.testing import CliRunner

from kconform.harness.cli import cli
from kconform.harness.diff.cases import load_case, run_campaign
from kconform.harness.targets.registry import make_target
from kconform.traces import read_traces

PLANTED = "reference@planted=list-offsets-latest-off-by-one"


def test_a_planted_difference_is_found_shrunk_and_replayed(tmp_path):
    with make_target(PLANTED) as planted, make_target("reference") as honest:
        # the log's APIs only (Produce, Fetch, ListOffsets, Metadata, CreateTopics), so that 150 cases
        # reach the planted state whatever else the drawing learns to send
        result = run_campaign(planted, honest, tmp_path, examples=150, seed=0, apis={0, 1, 2, 3, 19})
    # one cause: the latest offset, whatever the version it was asked at
    assert len(result.causes) == 1, [c.title(*result.targets) for c in result.causes.values()]
    (cause,) = result.causes.values()
    assert cause.api_name == "ListOffsets" and [f.path for f in cause.facets] == [
        "topics[*].partitions[*].offset"
    ]
    assert cause.shrunk and cause.reproduced
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["cases"] == 150 and [c["cause"] for c in summary["causes"]] == [cause.id]
    assert {d["cause"] for d in summary["differences"]} == {cause.id}
    case_file = tmp_path / "cases" / f"{cause.case_file}.json"
    operations, data = load_case(case_file)
    assert len(operations) <= 3 and data["cause"] == cause.id
    assert type(operations[-1]).__name__ == "ListOffsets" and operations[-1].timestamp == -1
    assert cause.example["operation"].startswith("ListOffsets v")  # from the stored case's own replay
    assert cause.verdict["deviates"] is None  # no rule pins a log's end: unknown, and says so
    traces = read_traces(tmp_path)
    assert "diverge" in traces["outcome"].to_pylist()
    assert set(cause.signatures) <= set(traces["signature"].to_pylist())
    smallest = data

    replay = CliRunner().invoke(cli, ["repro", str(case_file)])
    assert replay.exit_code == 1, replay.output
    assert smallest["signature"] in replay.output
    clean = CliRunner().invoke(cli, ["repro", str(case_file), "--a", "reference", "--b", "reference"])
    assert clean.exit_code == 0, clean.output
