"""No false positives, and deep states: two unmodified reference brokers give no cause of difference over
a thousand drawn cases of every family (log, classic and KIP-848 groups, transactions, admin), and the
stories reach the states that matter: a member synced, offsets committed inside a transaction, a
transaction ended, a KIP-848 member given an epoch."""

from __future__ import annotations

import json

import pytest

from kconform.harness.diff.cases import run_campaign
from kconform.harness.targets.registry import make_target
from kconform.traces import read_traces

pytestmark = pytest.mark.slow


def test_two_reference_brokers_never_differ_and_the_stories_go_deep(tmp_path):
    with make_target("reference") as a, make_target("reference") as b:
        result = run_campaign(a, b, tmp_path, examples=1000, seed=5)
    assert result.cases == 1000 and result.causes == {}, [c.title("a", "b") for c in result.causes.values()]
    traces = read_traces(tmp_path)
    succeeded = {
        name
        for name, codes in zip(traces["api_name"].to_pylist(), traces["error_codes"].to_pylist(), strict=True)
        if codes and not any(codes)
    }
    deep = {"SyncGroup", "Heartbeat", "LeaveGroup", "ConsumerGroupHeartbeat", "AddPartitionsToTxn",
            "AddOffsetsToTxn", "TxnOffsetCommit", "EndTxn", "CreatePartitions", "DeleteTopics"}  # fmt: skip
    assert deep <= succeeded, f"never answered without error: {sorted(deep - succeeded)}"
    coverage = json.loads((tmp_path / "summary.json").read_text())["coverage"]
    assert coverage["exercised"] >= 0.8 * coverage["offered_by_both"]
    assert all(entry["why"] for entry in coverage["not_exercised"])
