"""The default differential campaign between the reference broker and librdkafka's mock cluster, bounded
for CI: produce, fetch and offsets steps, classic and KIP-848 group members, idempotent and transactional
producers and admin steps, as ``kconform diff`` draws them. Every cause it finds must have a verdict from
the rules tables (harness/diff/verdicts*.toml, which say what Apache Kafka answers, with the place in
Kafka's source) naming the mock as the side that deviates, with the mock's value pinned there; the
pinned mock values must mostly still be found, so the tables cannot hide a change in the mock; and every
quirk the known-differences file listed when the engine's second version was filed must be found.

Two kinds of cause are held to less. A rule may say Kafka allows both answers, or name the reference as
the side that deviates, or the cause may follow from an earlier write of its case that one target took
and the other refused: those rules are listed in ``NOT_THE_MOCK``, each with why. And the mock crashes
(on a KIP-848 member's first heartbeat, on an empty message set); the harness restarts it empty, so the
steps after the crash in the same case meet a mock without the case's topics, producers and groups. A
cause seen only at or after a step where the mock crashed in its case is the crash's consequence: the
crash is a cause of its own, judged by the built-in rule, and the consequence is left unjudged."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kconform.harness.diff.cases import load_case
from kconform.harness.diff.verdicts import CONSEQUENCE_RULES, load_rules, news

EXAMPLES = 800
SEED = 6
MOCK = "rdkafka-mock"

# Rules whose verdict does not name the mock alone, known and accepted: a cause seen only after an
# earlier step of its case that one target took and the other refused (or crashed on) follows from it.
NOT_THE_MOCK: set[str] = set(CONSEQUENCE_RULES)

# The mock's quirks the known-differences file listed when the differential engine's second version was
# asked for, each as the rules that show it (a quirk shows in either of its rules): every one must be
# found by the CI campaign on its own, every run.
FILED_QUIRKS = {
    "a stray byte after Metadata v9+": {"metadata-trailing-bytes"},
    "controller 0, not a broker": {"metadata-controller-is-a-broker"},
    "Metadata v0-3 create a topic at once": {
        "metadata-v0-3-auto-creation-error",
        "metadata-v0-3-auto-creation-partitions",
    },
    "a topic named twice answered twice": {"metadata-topic-named-twice"},
    "no committed offset answered 3": {
        "offset-fetch-uncommitted-partition",
        "offset-fetch-uncommitted-metadata",
    },
    "Produce v0-2 answered": {"produce-v0-2-refused"},
    "acks=0 answered": {"produce-acks-0-no-response"},
    "a coordinator before the offsets topic": {"find-coordinator-before-offsets-topic"},
    "an empty v2 batch answered 4": {"produce-empty-v2-batch"},
    "a max timestamp before v7 looked up": {"list-offsets-max-timestamp-before-v7"},
}

pytestmark = [pytest.mark.peer, pytest.mark.slow]


def after_a_mock_crash(run_dir) -> set[str]:
    """Ids of the causes seen only at or after the step where the mock crashed, in the same case (the
    journal lists each case's differences and sightings by step). A crash can show first as a closed
    connection, while the mock's process is still ending: a closed connection counts when a crash shows
    on a later step of its case or in the next case."""
    cases = [json.loads(line) for line in (run_dir / "journal.jsonl").read_text().splitlines()]
    fates = [
        [
            (d["op"], d["b"])
            for d in case["differences"]
            if d["signature"].endswith("/<connection>/fate") and d["b"] in ("crashed", "closed")
        ]
        for case in cases
    ]
    crashed = [any(fate == "crashed" for _, fate in case_fates) for case_fates in fates]
    after, elsewhere = set(), set()
    for index, case in enumerate(cases):
        crash_follows = index + 1 < len(cases) and crashed[index + 1]
        lost = [
            op
            for op, fate in fates[index]
            if fate == "crashed" or crash_follows or any(f == "crashed" and o > op for o, f in fates[index])
        ]
        for sighting in case["sightings"]:
            (after if lost and min(lost) <= sighting["op"] else elsewhere).add(sighting["key"])
    return after - elsewhere


def check_campaign(run_dir, examples: int) -> None:
    """The checks on a finished campaign in ``run_dir`` (its summary, journal and stored cases)."""
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["cases"] == examples and summary["pairs_compared"] > examples
    causes = summary["causes"]
    crash_consequences = after_a_mock_crash(run_dir)
    judged = [c for c in causes if c["cause"] not in crash_consequences]
    rules = load_rules()
    new, _ = news(judged, rules, ("reference", MOCK))
    _, stale = news(causes, rules, ("reference", MOCK))  # a crash's consequence shows a pinned value too
    assert not new, f"causes without a verdict, or mock values no rule pins: fix or add a rule: {new}"
    # Not every pinned quirk is found in every run: the default campaign spreads its cases over every
    # family of requests, and a quirk that needs a rarer state (a Fetch v13+ by topic id, acks=2, a
    # corrupt batch, a fenced producer) is met in some bounded runs only; at this size a run finds two
    # thirds of the rules' quirks, give or take a tenth. Most must show; a change in the mock shows as
    # many rules going unfound at once. A rule counts as found when one of its mock values shows.
    pinned = {r.id: set(map(json.dumps, r.seen[MOCK])) for r in rules if r.seen.get(MOCK)}
    missing = {}
    for line in stale:  # "<rule id>: <target kind> <value as JSON>", as news() writes them
        rule_id, _, pin = line.partition(": ")
        kind, _, value = pin.partition(" ")
        if kind == MOCK:
            missing.setdefault(rule_id, set()).add(value)
    unfound = sorted(r for r, values in missing.items() if values == pinned[r])
    assert len(unfound) <= len(pinned) // 2, f"rules none of whose mock values the campaign found: {unfound}"
    missed = sorted(quirk for quirk, shown_by in FILED_QUIRKS.items() if shown_by <= set(unfound))
    assert not missed, f"quirks known when the engine's second version was filed, not found: {missed}"
    # and the mock's crash on an empty v0-2 message set (rdbuf.c), judged by the built-in crash rule
    assert any(c["api_key"] == 0 and "rd_slice_init_full" in c["message"] for c in summary["crashes"])
    for cause in judged:
        if cause["verdict"]["rule"] not in NOT_THE_MOCK:
            assert cause["verdict"]["deviates"] == [MOCK], cause  # the reference matches Kafka
    for cause in causes:
        operations, data = load_case(run_dir / "cases" / f"{cause['case_id']}.json")
        assert operations and data["cause"] == cause["cause"] and data["verdict"] == cause["verdict"]
        if cause["reproduced"]:  # shrunk from its own case; the example comes from that case
            assert cause["shrunk"], cause
            assert cause["example"]["operation"].startswith(cause["api_name"])
    # the goal for shrinking: 90% of shrunk cases hold at most 3 operations (one per cause held
    # more under CI load, where a timing-dependent step could not be dropped). A crash's consequences
    # are not counted: their cases hold the crash and what it lost besides the step that shows them;
    # nor are crashes, which the mock's process shows a moment after the step that kills it, so their
    # cases keep that step and the one in flight when the end was seen.
    sizes = [c["operations"] for c in judged if c["reproduced"] and c["verdict"]["rule"] != "crashed"]
    assert sizes and sum(n <= 3 for n in sizes) >= 0.9 * len(sizes), sorted(sizes)
    # the signatures the traces count all belong to a cause, with that cause's case
    by_id = {c["cause"]: c for c in causes}
    assert all(by_id[d["cause"]]["case_id"] == d["case_id"] for d in summary["differences"])


def test_reference_vs_mock_campaign_finds_the_mock_quirks_and_only_them(tmp_path):
    """Run as a user runs it, ``kconform diff`` in a process of its own: the same seed then draws the
    same cases wherever the suite runs."""
    command = [
        sys.executable, "-m", "kconform.harness.cli", "diff", "--a", "reference", "--b", MOCK,
        "--examples", str(EXAMPLES), "--seed", str(SEED), "--out", str(tmp_path),
    ]  # fmt: skip
    run = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert run.returncode == 1, run.stderr[-2000:]  # 1: differences found, which is expected
    check_campaign(tmp_path, EXAMPLES)
