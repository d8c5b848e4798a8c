"""``kconform bench broker`` runs end to end on a small load and prints well-formed comparisons."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from kconform.harness.cli import cli

pytestmark = [pytest.mark.peer, pytest.mark.slow]


def test_bench_broker_small_load():
    result = CliRunner().invoke(cli, ["bench", "broker", "--records", "3000", "--json"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    metrics = {(r["case"].split()[0], r["metric"]) for r in rows}
    for acks in ("acks=1", "acks=all"):
        for metric in ("produce records/s", "consume records/s", "produce p99 latency ms", "produce MB/s"):
            assert (acks, metric) in metrics
    assert all(r["peer"] == "rdkafka-mock" and r["ours"] > 0 and r["peer_value"] > 0 for r in rows)
