"""The differential campaign between the reference broker and librdkafka's mock cluster, bounded for
CI: every difference it finds must be listed in known_differences.toml with evidence of which side
matches Apache Kafka (or be fixed in the reference broker)."""

from __future__ import annotations

import fnmatch
import json
import tomllib
from pathlib import Path

import pytest

from kconform.harness.diff.campaign import load_case, run_campaign
from kconform.harness.targets.registry import make_target

KNOWN = Path(__file__).with_name("known_differences.toml")
EXAMPLES = 150
SEED = 11

pytestmark = [pytest.mark.peer, pytest.mark.slow]


def matches(signature: str, pattern: str) -> bool:
    """fnmatch, with ``[*]`` in a pattern meaning the literal ``[*]`` of generalised list indexes."""
    return fnmatch.fnmatchcase(signature, pattern.replace("[*]", "[[][*][]]"))


def known_differences() -> list[dict]:
    return tomllib.loads(KNOWN.read_text())["difference"]


def test_every_known_difference_names_its_evidence():
    for entry in known_differences():
        assert entry["matches_kafka"] in ("reference", "rdkafka-mock", "both", "neither"), entry
        assert entry["what"] and entry["evidence"], entry


def test_reference_vs_mock_campaign_finds_only_known_differences(tmp_path):
    with make_target("reference") as reference, make_target("rdkafka-mock") as mock:
        # Shrinking is shown by test_planted_difference; here every difference keeps its first case.
        result = run_campaign(reference, mock, tmp_path, examples=EXAMPLES, seed=SEED, shrink=False)
    assert result.cases == EXAMPLES and result.pairs_compared > EXAMPLES
    patterns = [entry["signature"] for entry in known_differences()]
    unexplained = [sig for sig in result.found if not any(matches(sig, p) for p in patterns)]
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert not unexplained, (
        "differences without an entry in known_differences.toml (fix the reference broker or add an entry "
        f"with evidence): {unexplained}\n" + json.dumps(summary["differences"], indent=1)[:4000]
    )
    for found in result.found.values():  # every difference comes with a replayable case
        operations, data = load_case(tmp_path / "cases" / f"{found.case_id}.json")
        assert operations and data["signature"] == found.signature
