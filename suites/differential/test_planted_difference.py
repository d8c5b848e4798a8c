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
        result = run_campaign(planted, honest, tmp_path, examples=150, seed=7)
    found = [f for f in result.found.values() if f.api_key == 2]
    assert found, f"the campaign missed the planted ListOffsets difference: {sorted(result.found)}"
    assert all(f.field_path == "topics[*].partitions[*].offset" and f.kind == "value" for f in found)
    assert set(result.found) == {f.signature for f in found}  # nothing else differs
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["cases"] == 150 and {d["signature"] for d in summary["differences"]} == set(result.found)
    smallest = min(found, key=lambda f: len(load_case(tmp_path / "cases" / f"{f.case_id}.json")[0]))
    case_file = tmp_path / "cases" / f"{smallest.case_id}.json"
    operations, data = load_case(case_file)
    assert len(operations) <= 3 and data["signature"] == smallest.signature
    assert type(operations[-1]).__name__ == "ListOffsets" and operations[-1].timestamp == -1
    traces = read_traces(tmp_path)
    assert "diverge" in traces["outcome"].to_pylist()
    assert smallest.signature in traces["signature"].to_pylist()

    replay = CliRunner().invoke(cli, ["repro", str(case_file)])
    assert replay.exit_code == 1, replay.output
    assert smallest.signature in replay.output
    clean = CliRunner().invoke(cli, ["repro", str(case_file), "--a", "reference", "--b", "reference"])
    assert clean.exit_code == 0, clean.output
