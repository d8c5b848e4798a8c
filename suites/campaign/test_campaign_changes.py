"""Two campaigns on unchanged code report no change: no new and no fixed difference.

A difference counts as fixed only when its stored case, replayed on the current targets, no longer shows
it, and as new only when the previous campaign drew the case that shows it now (same seed: the same
case) and its stored case shows it again. Anything else (a case the previous run never drew, a sighting
that depends on timing) is named for what it is, and is no change."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.peer]

BUDGET = "100s"  # the least a differential part takes; the campaign ends in about a quarter of it


def campaign(out: Path) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "kconform.harness.cli", "campaign", "--targets", "reference,rdkafka-mock",
         "--no-chaos", "--no-conform", "--duration", BUDGET, "--engine", "duckdb", "--out", str(out)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads((out / "report" / "summary.json").read_text())


def test_two_campaigns_on_unchanged_code_report_no_new_and_no_fixed_difference(tmp_path: Path):
    first = campaign(tmp_path / "campaign-1")
    assert first["divergences"] and not first["comparison"]["has_previous"]
    second = campaign(tmp_path / "campaign-2")  # finds the first beside it as its previous report
    change = second["comparison"]
    assert change["has_previous"]
    assert change["new_divergences"] == [], change
    assert change["fixed_divergences"] == [], change
    # the evidence was gathered, not assumed: what the second did not draw again was replayed
    replays = json.loads(
        (tmp_path / "campaign-2" / "diff-reference-vs-rdkafka-mock" / "replays.json").read_text()
    )
    missing = {d["signature"] for d in first["divergences"]} - {d["signature"] for d in second["divergences"]}
    replayed = {r["signature"] for r in replays["replays"]}
    reproducible = {d["signature"] for d in first["divergences"] if d["reproduced"]}
    assert missing & reproducible <= replayed
    shown = {r["signature"] for r in replays["replays"] if r["shown"]}
    still = {d["signature"] for d in change["still_there"]}
    assert shown <= still
    # the rest met a crash the targets still have: a replay that met none shows only that timing changed
    crashed = {
        d["signature"]
        for d in first["divergences"]
        if any('"crashed"' in str(text) for pair in d.get("values") or [] for text in pair)
    }
    assert still - shown <= crashed, still - shown
    # both drew the seed's cases from the start: every signature of the second is in the first, found
    # past where the first stopped, or a timing-dependent sighting its own case does not show again
    accounted = (
        set(change["first_found"])
        | set(change["unconfirmed"])
        | {d["signature"] for d in first["divergences"]}
    )
    assert {d["signature"] for d in second["divergences"]} <= accounted
