"""The conformance catalogue itself: every rule carries its facts (id, API, versions, Kafka source, text);
the runner tells a pass from a failure, an error and a rule that does not apply; outcomes are held
against what is known of each peer; the reference broker passes every rule that applies to it, on one
node and on a three-broker cluster; librdkafka's mock and Tansu fail only where they are known to; and
``kconform conform`` exits 0, 1 or 2 as documented."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import pytest

from kconform.harness.conform.catalogue import CatalogueError, Rule, RuleFailed, catalogue, validate
from kconform.harness.conform.expected import Expected, expected_for, surprises
from kconform.harness.conform.ledger import ledger
from kconform.harness.conform.run import run_conformance
from kconform.harness.conform.runner import Outcome, run_rules
from kconform.harness.conform.session import SetupFailed
from kconform.harness.targets.registry import make_target
from kconform.spark_reports.build import build_dashboard

RULES = catalogue()
FLOOR = 600  # rules in the catalogue


def test_every_rule_carries_its_facts():
    assert len(RULES) >= FLOOR
    for one in RULES.values():
        validate(one)  # the id, the API and its versions, Class.method in Kafka's source, the text
        assert one.id == one.id.lower() and one.family
    assert len({r.id for r in RULES.values()}) == len(RULES)


async def _noop(session, version):
    return None


@pytest.mark.parametrize(
    ("change", "complaint"),
    [
        ({"id": "Bad Id"}, "lower-case words"),
        ({"api": 999}, "API key 999"),
        ({"versions": (3, 1)}, "not a range"),
        ({"versions": (0, 40)}, "outside Produce's"),
        ({"source": "somewhere in the broker"}, "Class.method"),
        ({"text": "short"}, "docstring"),
        ({"family": ""}, "no family"),
        ({"since": "9.9"}, "not a Kafka release"),
        ({"needs": frozenset({"a-wish"})}, "needs ['a-wish']"),
    ],
)
def test_a_rule_without_its_facts_is_refused(change, complaint):
    facts = {
        "id": "produce.example",
        "api": 0,
        "versions": (3, 9),
        "source": "KafkaApis.handleProduceRequest",
        "text": "An example rule that says what Kafka does.",
        "check": _noop,
        "family": "produce",
    }
    validate(Rule(**facts))
    with pytest.raises(CatalogueError, match=complaint.replace("[", r"\[").replace("(", r"\(")):
        validate(Rule(**{**facts, **change}))


def _rule(rule_id, check, **kw):
    facts = {"api": 18, "versions": (0, 4), "source": "KafkaApis.handleApiVersionsRequest", "family": "t"}
    return Rule(id=rule_id, text="A rule made up for this test only.", check=check, **{**facts, **kw})


def test_the_runner_tells_pass_fail_error_and_not_applicable_apart():
    async def passes(session, version):
        return None

    async def fails_at_three(session, version):
        if version == 3:
            raise RuleFailed("error_code", "NONE", "INVALID_REQUEST")

    async def cannot_set_up(session, version):
        raise SetupFailed("creating topic x: no")

    async def breaks(session, version):
        raise KeyError("oops")

    rules = [
        _rule("a.passes", passes),
        _rule("b.fails", fails_at_three),
        _rule("c.setup", cannot_set_up, once=True),
        _rule("d.breaks", breaks, once=True),
        _rule("e.unserved", passes, api=0, versions=(3, 9)),
        _rule("f.needs", passes, needs=frozenset({"restart"})),
    ]
    served = {18: (2, 3)}  # no Produce at all
    outcomes = asyncio.run(run_rules(rules, target="t", bootstrap="127.0.0.1:1", served=served))
    seen = [(o.rule, o.version, o.outcome) for o in outcomes]
    assert seen == [
        ("a.passes", 2, "pass"),
        ("a.passes", 3, "pass"),
        ("b.fails", 2, "pass"),
        ("b.fails", 3, "fail"),
        ("c.setup", 3, "error"),  # once: the newest version both serve
        ("d.breaks", 3, "error"),
        ("e.unserved", -1, "not-applicable"),
        ("f.needs", -1, "not-applicable"),
    ]
    failed = outcomes[3]
    assert (failed.field, failed.expected, failed.got) == ("error_code", "NONE", "INVALID_REQUEST")
    assert "KeyError" in outcomes[5].detail and "restart" in outcomes[7].detail
    ends = asyncio.run(
        run_rules([rules[0]], target="t", bootstrap="127.0.0.1:1", served={18: (0, 4)}, pick="ends")
    )
    assert [o.version for o in ends] == [0, 4]
    book = ledger(outcomes, target="t", served=served)
    row = book["apis"]["ApiVersions"]
    assert (row["passed"], row["failed"], row["errors"], row["semantics"]) == (3, 1, 2, "partial")
    assert book["apis"]["Produce"]["routed"] is False and book["apis"]["Produce"]["semantics"] == "untested"


def test_a_budgeted_run_takes_families_in_turn_and_marks_what_it_could_not_start():
    """The clock passes the deadline once two tests have started: with one test at a time, those two
    are the first of two different families, and every other test is not-run (never news)."""
    started: list[str] = []

    async def passes(session, version):
        started.append(session.name())

    rules = [_rule(f"{family}.{n}", passes, family=family, once=True) for family in "ab" for n in range(3)]
    ticks = iter(range(100))
    outcomes = asyncio.run(
        run_rules(
            rules, target="t", bootstrap="127.0.0.1:1", served={18: (0, 4)}, side_by_side=1,
            deadline=2, clock=lambda: next(ticks),
        )
    )  # fmt: skip
    seen = {(o.rule, o.outcome) for o in outcomes}
    assert seen == {("a.0", "pass"), ("b.0", "pass")} | {
        (f"{f}.{n}", "not-run") for f in "ab" for n in (1, 2)
    }, "one of each family first"
    assert len(started) == 2
    assert surprises(outcomes, {"a.1": Expected("a.1", "fail", "r", "k")}) == []


def _outcome(rule, version, outcome):
    return Outcome(rule, "ApiVersions", 18, "t", version, "peer", outcome)


def test_outcomes_are_held_against_what_is_known_of_a_peer():
    known = {
        "a.known": Expected("a.known", "fail", "why", "KafkaApis.x"),
        "b.some-versions": Expected("b.some-versions", "fail", "why", "KafkaApis.x", versions=(3,)),
        "e.sometimes": Expected("e.sometimes", "fail", "why", "KafkaApis.x", sometimes=True),
    }
    outcomes = [
        _outcome("a.known", 1, "fail"),  # as known
        _outcome("b.some-versions", 3, "pass"),  # known to fail at v3, passed: news
        _outcome("b.some-versions", 2, "fail"),  # v2 is not known to fail: news
        _outcome("c.new", 0, "error"),  # not known: news
        _outcome("d.unserved", -1, "not-applicable"),  # not news
        _outcome("e.sometimes", 1, "pass"),  # fails only some of the time: not news either way
        _outcome("e.sometimes", 2, "fail"),
        _outcome("e.sometimes", 3, "error"),  # but not something else
    ]
    news = [(s.outcome.rule, s.outcome.version, s.expected) for s in surprises(outcomes, known)]
    assert news == [
        ("b.some-versions", 3, "fail"),
        ("b.some-versions", 2, "pass"),
        ("c.new", 0, "pass"),
        ("e.sometimes", 3, "fail"),
    ]


@pytest.mark.parametrize("kind", ["rdkafka-mock", "tansu"])
def test_every_known_outcome_names_a_rule_of_the_catalogue_a_reason_and_a_source(kind):
    known = expected_for(kind, set(RULES))  # raises on an unknown rule, a missing reason or source
    assert known
    assert expected_for("reference") == {}  # the reference broker is held to passing everything


@pytest.mark.slow
def test_a_three_broker_reference_cluster_passes_every_rule_that_applies(tmp_path):
    """The single node runs every rule at every version in test_rules.py; the cluster runs each at the
    lowest and the highest version (partition requests go to their leaders, group and transaction
    requests to their coordinators)."""
    spec = "reference:3"
    with make_target(spec) as target:
        result = run_conformance(target, out=tmp_path, pick="ends")
    counts = {o.outcome for o in result.outcomes}
    assert counts <= {"pass", "not-applicable"}, [s.describe() for s in result.surprises]
    ran = [o for o in result.outcomes if o.outcome == "pass"]
    assert len(ran) >= 40
    rows = [json.loads(line) for line in (tmp_path / "outcomes.jsonl").read_text().splitlines()]
    assert len(rows) == len(result.outcomes) and rows[0]["target"] == spec
    book = json.loads((tmp_path / "ledger.json").read_text())
    assert book["passed"] == len(ran) and book["apis"]["ApiVersions"]["semantics"] == "full"


@pytest.mark.slow
@pytest.mark.peer
@pytest.mark.parametrize("spec", ["rdkafka-mock", "tansu"])
def test_a_peer_fails_only_where_it_is_known_to(spec, tmp_path):
    with make_target(spec) as target:
        result = run_conformance(target, out=tmp_path, pick="ends")
    assert not result.surprises, [s.describe() for s in result.surprises]
    assert any(o.outcome == "pass" for o in result.outcomes)
    # the run's rows make the dashboard page: the rules grid and the ledger with this target's column
    page = build_dashboard([tmp_path], tmp_path / "report", engine="duckdb").read_text()
    grid = page.split('id="rules-grid"')[1].split("</table>")[0]
    assert f"<th>{spec}</th>" in grid and 'id="ledger-table"' in page
    summary = json.loads((tmp_path / "report" / "summary.json").read_text())
    assert summary["totals"]["rule_surprises"] == 0
    assert summary["totals"]["rule_tests"] == len(result.outcomes)


def _kconform(*args):
    return subprocess.run(
        [sys.executable, "-m", "kconform.harness.cli", "conform", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_conform_command_lists_runs_and_exits_as_documented(tmp_path):
    listed = _kconform("--list")
    assert listed.returncode == 0 and "protocol.unknown-api-key-closes" in listed.stdout
    usage = _kconform("--rule", "no-such-rule")
    assert usage.returncode == 2 and "Traceback" not in usage.stderr
    unreachable = _kconform("--target", "bootstrap:127.0.0.1:1")
    assert unreachable.returncode == 2 and "Traceback" not in unreachable.stderr
    bad = _kconform("--rule", "api-versions", "--previous", str(tmp_path / "none"), "--out", str(tmp_path))
    assert bad.returncode == 2 and "--previous" in bad.stderr and not (tmp_path / "rules").exists()
    ran = _kconform(
        "--target", "reference", "--rule", "api-versions", "--out", str(tmp_path), "--engine", "duckdb"
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert json.loads((tmp_path / "ledger.json").read_text())["apis"]["ApiVersions"]["failed"] == 0
    assert (tmp_path / "rules" / "part-000000.parquet").is_file() and (tmp_path / "conform.json").is_file()
    page = (tmp_path / "report" / "index.html").read_text()
    assert 'id="rules-grid"' in page and "ApiVersions" in page.split('id="rules-grid"')[1]


def test_set_up_steps_stay_at_versions_the_target_answers_decodably():
    """A rule reads its writes back by name below Fetch v13 when the topic's id is unknown (the mock
    gives none), and set-up Metadata stays under a target's known-bad versions (the mock's v9+)."""
    import uuid

    from kconform.harness.conform.session import RuleSession

    served = {1: (4, 17), 3: (0, 13)}
    plain = RuleSession("127.0.0.1:1", "x", served)
    assert plain.read_back_version(uuid.uuid4()) == 17
    assert plain.read_back_version(None) == 12
    assert plain.setup_version(3, 12) == 12
    capped = RuleSession("127.0.0.1:1", "x", served, setup_caps={3: 8})
    assert capped.setup_version(3, 12) == 8 and capped.setup_version(1, 12) == 12
