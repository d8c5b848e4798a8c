"""The differential campaign between the reference broker and librdkafka's mock cluster, bounded for
CI: every difference it finds, with its exact values, must be listed in known_differences.toml with
evidence of which side matches Apache Kafka (or be fixed in the reference broker), and every entry
there must still be found."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kconform.harness.diff.cases import load_case
from kconform.harness.diff.known import KnownDifference, explain, load_known_differences

KNOWN = Path(__file__).with_name("known_differences.toml")
EXAMPLES = 150
SEED = 11

pytestmark = [pytest.mark.peer, pytest.mark.slow]


def known_differences() -> list[KnownDifference]:
    return load_known_differences(KNOWN)


def test_every_known_difference_names_its_evidence_and_pins_its_values():
    for entry in known_differences():
        assert entry.matches_kafka in ("reference", "rdkafka-mock", "both", "neither"), entry
        assert entry.what and entry.evidence and entry.values, entry
        # a pattern may range over versions, never over fields or kinds: those are what it pins
        assert entry.signature.count("/") == 3 and "*" not in entry.signature.rsplit("/", 1)[1], entry


def test_a_changed_or_stale_entry_fails():
    entries = known_differences()
    found = {"ListOffsets/v3/topics[*].partitions[*].error_code/error_code": [(35, 3)]}
    judged = explain(found, entries)
    assert judged.unexplained == [] and entries[-1] not in judged.stale
    # the mock starts answering something else: no longer the pinned pair
    assert explain({**found, "Metadata/v1/topics[*].error_code/error_code": [(3, 5)]}, entries).unexplained
    # an entry whose difference went away is reported, so the list cannot hide a change
    assert any(e.signature.startswith("Metadata/v*/<trailing") for e in judged.stale)


def test_reference_vs_mock_campaign_finds_only_known_differences(tmp_path):
    """Run as a user runs it, ``kconform diff`` in a process of its own: the same seed then draws the
    same cases wherever the suite runs (inside a pytest worker that had run other Hypothesis suites
    first, the same seed drew other cases from one point on)."""
    command = [
        sys.executable, "-m", "kconform.harness.cli", "diff", "--a", "reference", "--b", "rdkafka-mock",
        "--examples", str(EXAMPLES), "--seed", str(SEED), "--no-shrink", "--out", str(tmp_path),
    ]  # fmt: skip
    # Shrinking is shown by test_planted_difference; here every difference keeps its first case.
    run = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert run.returncode in (0, 1), run.stderr[-2000:]  # 1: differences found, which is expected
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["cases"] == EXAMPLES and summary["pairs_compared"] > EXAMPLES
    found = {d["signature"]: [tuple(pair) for pair in d["value_pairs"]] for d in summary["differences"]}
    judged = explain(found, known_differences())
    assert not judged.unexplained, (
        "differences (signature, reference's value, mock's value) that no entry in known_differences.toml "
        f"covers: fix the reference broker or add the values with evidence: {judged.unexplained}"
    )
    assert not judged.stale, (
        "entries in known_differences.toml that the campaign no longer finds (a fix or a change: "
        f"remove or correct them): {[e.signature for e in judged.stale]}"
    )
    for difference in summary["differences"]:  # every difference comes with a replayable case
        operations, data = load_case(tmp_path / "cases" / f"{difference['case_id']}.json")
        assert operations and data["signature"] == difference["signature"]
