"""Replaying an earlier report's cases: which cases are picked, and how a replay is judged, with an engine
that answers from a table (no targets)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from kconform.harness.diff.replays import REPLAYS_FILE, cases_to_replay, replay_cases, write_replays

PAIR = ("reference", "rdkafka-mock")


def card(signature: str, case: str | None, *, sides=PAIR, reproduced: bool | None = True) -> dict:
    found = {"signature": signature, "example_case": case, "sides": list(sides)}
    return found if reproduced is None else found | {"reproduced": reproduced}


def case_file(report: Path, name: str, signature: str, signatures: list[str], targets=PAIR) -> str:
    path = report / "cases" / "run" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    document = {"signature": signature, "signatures": signatures, "targets": list(targets),
                "operations": [{"op": "Metadata", "version_pick": 0}]}  # fmt: skip
    path.write_text(json.dumps(document))
    return f"cases/run/{name}"


def test_only_unseen_reproducible_cases_of_the_same_pair_are_replayed(tmp_path: Path):
    report = tmp_path / "report"
    one = case_file(report, "case-000.json", "A/v1/x/value", ["A/v1/x/value", "A/v2/x/value"])
    two = case_file(report, "case-001.json", "B/v0/y/value", ["B/v0/y/value"])
    other = case_file(report, "case-002.json", "C/v0/z/value", ["C/v0/z/value"], ("reference", "tansu"))
    older = case_file(report, "case-003.json", "D/v0/w/value", ["D/v0/w/value"])
    divergences = [
        card("A/v1/x/value", one),
        card("A/v2/x/value", one),  # another version of the same cause: the same case
        card("B/v0/y/value", two),  # seen again this time: nothing to replay
        card("C/v0/z/value", other, sides=("reference", "tansu")),  # another pair
        card("E/v0/q/value", two, reproduced=False),  # its case never showed it again: proves nothing
        card("F/v0/r/value", None),  # no stored case
        # an older report: no sides and no reproduced flag; the case file names its targets
        {"signature": "D/v0/w/value", "example_case": str(report / older)},
    ]
    report.mkdir(exist_ok=True)
    (report / "summary.json").write_text(json.dumps({"divergences": divergences}))
    picked = cases_to_replay(report, PAIR, seen={"B/v0/y/value"})
    assert picked == {
        report / one: ["A/v1/x/value", "A/v2/x/value"],
        report / older: ["D/v0/w/value"],
    }
    assert cases_to_replay(tmp_path / "not-a-report", PAIR, seen=()) == {}


@dataclass
class Answer:
    signatures: set[str]


@dataclass
class TableEngine:
    """Answers a replay with the signatures the table gives for the case's first operation's name."""

    shows: list[set[str]]
    closed: bool = False
    runs: list[str] = field(default_factory=list)

    async def run_case(self, operations, case_id, namespace=None):
        self.runs.append(namespace)
        return Answer(self.shows[len(self.runs) - 1])

    async def close(self):
        self.closed = True


def test_a_replay_still_shows_its_cause_by_any_of_the_causes_signatures(tmp_path: Path):
    report = tmp_path / "report"
    first = report / case_file(report, "case-000.json", "A/v1/x/value", ["A/v1/x/value", "A/v2/x/value"])
    second = report / case_file(report, "case-001.json", "B/v0/y/value", ["B/v0/y/value"])
    cases = {first: ["A/v2/x/value"], second: ["B/v0/y/value"]}
    # the first case still shows its cause at the version it picks (v1), though not the v2 asked about;
    # the second shows nothing of its cause any more
    engine = TableEngine([{"A/v1/x/value"}, {"Z/v0/other/value"}])
    replays = replay_cases(lambda: engine, cases, PAIR, deadline=float("inf"))
    assert [(r.signature, r.shown) for r in replays] == [("A/v2/x/value", True), ("B/v0/y/value", False)]
    assert engine.closed and len(set(engine.runs)) == 2, "each replay in a namespace of its own"
    write_replays(tmp_path, report, replays)
    written = json.loads((tmp_path / REPLAYS_FILE).read_text())
    assert [r["shown"] for r in written["replays"]] == [True, False]


def test_replays_stop_at_the_deadline_and_a_bad_case_is_not_judged(tmp_path: Path):
    report = tmp_path / "report"
    good = report / case_file(report, "case-000.json", "A/v1/x/value", ["A/v1/x/value"])
    bad = report / "cases" / "run" / "case-001-bad.json"  # replayed between the other two
    bad.write_text("{not json")
    times = iter([0.0, 0.0, 10.0])  # the deadline passes before the third case
    later = report / case_file(report, "case-009.json", "C/v0/z/value", ["C/v0/z/value"])
    engine = TableEngine([{"A/v1/x/value"}])
    replays = replay_cases(
        lambda: engine, {good: ["A/v1/x/value"], bad: ["B"], later: ["C/v0/z/value"]}, PAIR,
        deadline=5.0, clock=lambda: next(times),
    )  # fmt: skip
    assert [(r.signature, r.shown) for r in replays] == [("A/v1/x/value", True), ("B", None)]
    assert "not a kconform case file" in replays[1].error
    assert engine.closed
    assert replay_cases(lambda: 1 / 0, {}, PAIR, deadline=1.0) == [], "nothing to replay starts no engine"
