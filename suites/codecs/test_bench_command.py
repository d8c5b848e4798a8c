"""``kconform bench codecs`` runs end to end and prints one well-formed JSON object per comparison.
(The figures themselves are the benchmark's business, not a test's.)"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from kconform.harness.cli import cli


@pytest.mark.peer
def test_bench_codecs_prints_json_comparisons():
    result = CliRunner().invoke(cli, ["bench", "codecs", "--quick", "--json"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    cases = {(r["case"], r["peer"]) for r in rows}
    assert ("MetadataResponse v12 100x10 decode", "kafka-python") in cases
    assert ("FetchResponse v18 10x64KiB decode", "kio") in cases
    assert ("RecordBatch v2 1000 records lz4 decode", "aiokafka") in cases
    for row in rows:
        assert set(row) == {"bench", "case", "metric", "ours", "peer", "peer_value", "ratio"}
        assert row["ours"] > 0 and row["peer_value"] > 0 and row["ratio"] > 0
        lower_is_better = row["metric"] == "ms"
        expected = row["peer_value"] / row["ours"] if lower_is_better else row["ours"] / row["peer_value"]
        assert row["ratio"] == pytest.approx(expected, rel=1e-2)
    assert "differ" not in result.stderr  # every peer encodes the same bytes as ours


def test_selfcheck_json_summary():
    result = CliRunner().invoke(cli, ["codecs", "selfcheck", "--examples", "1", "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["api_keys"] == 93 and summary["request_response_pairs"] == 700
    assert summary["failures"] == 0 and summary["all_pairs"] >= 700


def test_decode_command_reports_bad_frames():
    result = CliRunner().invoke(cli, ["codecs", "decode", "0012"])
    assert result.exit_code != 0 and "too short" in result.output
