"""The comparison of ``kconform diff-acls``: what Kafka's authorizer rules give for each probe of the
default set-up (StandardAuthorizer's decisions, through ``reference_broker/security/authorizer.py``),
which (principal, probe) pairs differ between two sides, and which side the verdict names."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kconform.harness.diff.acl_compare import (
    AclDifference,
    Decider,
    Expectation,
    compare_sides,
    deviating_sides,
    kafka_mismatches,
)
from kconform.harness.diff.acl_probes import probe_catalogue
from kconform.harness.diff.acl_setup import load_setup
from kconform.reference_broker.security.authorizer import Authorizer
from kconform.reference_broker.security.principals import KafkaPrincipal

PREFIX = "kc-acl-test-a-"
REFUSED = Expectation("TOPIC_AUTHORIZATION_FAILED", "WRITE on TOPIC t: denied")
PASSES = Expectation(None, "WRITE on TOPIC t: allowed")


@pytest.fixture(scope="module")
def kafka():
    """(principal, probe id) -> what Kafka's rules give, for the default set-up."""
    setup = load_setup(None)
    authorizer = Authorizer.of(setup.bindings(PREFIX), "User:admin", False)
    probes = probe_catalogue(setup, PREFIX)
    found = {}
    for principal in setup.principals:
        decider = Decider(authorizer, KafkaPrincipal("User", principal.user), "127.0.0.1")
        found.update({(principal.user, p.id): p.expect(decider) for p in probes})
    return found


@pytest.mark.parametrize(
    ("user", "probe", "answer"),
    [
        # a principal with only a DENY on a topic gets nothing there (StandardAuthorizerData: no ALLOW)
        ("dave", "fetch orders", "TOPIC_AUTHORIZATION_FAILED"),
        ("dave", "metadata orders", "TOPIC_AUTHORIZATION_FAILED"),
        # the literal DENY WRITE beats the prefixed ALLOW ALL, for WRITE only
        ("bob", "produce pay-audit", "TOPIC_AUTHORIZATION_FAILED"),
        ("bob", "fetch pay-audit", "no authorization failure"),
        ("bob", "produce pay-eu", "no authorization failure"),
        (
            "bob",
            "metadata pay-audit",
            "NONE ops=ALTER,ALTER_CONFIGS,CREATE,DELETE,DESCRIBE,DESCRIBE_CONFIGS,READ",
        ),
        ("bob", "delete-topics pay-eu", "no authorization failure"),
        ("bob", "init-producer-id ledger-tx", "no authorization failure"),
        ("bob", "find-coordinator group billing", "GROUP_AUTHORIZATION_FAILED"),
        # literal ALLOWs: READ implies DESCRIBE (AuthorizerData's implied operations), not DESCRIBE_CONFIGS
        ("alice", "metadata orders", "NONE ops=DESCRIBE,READ,WRITE"),
        ("alice", "list-offsets orders", "no authorization failure"),
        ("alice", "describe-configs orders", "TOPIC_AUTHORIZATION_FAILED"),
        ("alice", "find-coordinator group billing", "no authorization failure"),
        ("alice", "offset-commit billing", "no authorization failure"),
        ("alice", "init-producer-id ledger-tx", "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"),
        # the wildcard topic and the cluster
        ("carol", "metadata pay-eu", "NONE ops=DESCRIBE"),
        ("carol", "produce pay-eu", "TOPIC_AUTHORIZATION_FAILED"),
        ("carol", "describe-cluster operations", "NONE ops=CREATE,DESCRIBE"),
        ("carol", "describe-acls", "no authorization failure"),
        ("carol", "create-topics probe.new-topic", "no authorization failure"),
        ("carol", "delete-topics orders", "TOPIC_AUTHORIZATION_FAILED"),
        # no ACLs at all
        ("erin", "describe-cluster operations", "NONE ops=none"),
        ("erin", "describe-acls", "CLUSTER_AUTHORIZATION_FAILED"),
        ("erin", "join-group billing", "GROUP_AUTHORIZATION_FAILED"),
        ("erin", "find-coordinator transaction ledger-tx", "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"),
    ],
)
def test_kafka_rules_for_the_default_set_up(kafka, user, probe, answer):
    assert kafka[(user, probe)].kafka == answer


def test_every_principal_meets_every_probe_and_the_reason_names_the_resource(kafka):
    setup = load_setup(None)
    probes = {probe for _, probe in kafka}
    assert len(kafka) == len(setup.principals) * len(probes)
    assert all(e.reason for e in kafka.values())
    assert "WRITE on TOPIC kc-acl-test-a-pay-audit: denied" in kafka[("bob", "produce pay-audit")].reason


def test_an_expectation_is_met_by_its_outcome_or_by_any_answer_but_a_refusal():
    assert REFUSED.met_by("TOPIC_AUTHORIZATION_FAILED")
    assert not REFUSED.met_by("NONE")
    assert PASSES.met_by("NONE") and PASSES.met_by("MEMBER_ID_REQUIRED") and PASSES.met_by("UNKNOWN(999)")
    assert not PASSES.met_by("GROUP_AUTHORIZATION_FAILED")
    assert not PASSES.met_by("no answer: closed") and not PASSES.met_by(
        "login failed: SASL_AUTHENTICATION_FAILED"
    )
    assert (REFUSED.kafka, PASSES.kafka) == ("TOPIC_AUTHORIZATION_FAILED", "no authorization failure")


def test_the_side_kafkas_rules_reject_is_named():
    assert deviating_sides("TOPIC_AUTHORIZATION_FAILED", "NONE", REFUSED, REFUSED) == ("b",)
    assert deviating_sides("NONE", "TOPIC_AUTHORIZATION_FAILED", REFUSED, REFUSED) == ("a",)
    assert deviating_sides("NONE", "no answer: closed", REFUSED, REFUSED) == ("a", "b")
    assert deviating_sides("NONE", "UNKNOWN_TOPIC_OR_PARTITION", PASSES, PASSES) is None  # not the ACLs'


def test_differences_carry_principal_probe_both_outcomes_and_the_verdict():
    a = {("bob", "produce pay-audit"): "TOPIC_AUTHORIZATION_FAILED", ("bob", "fetch pay-audit"): "NONE"}
    b = {("bob", "produce pay-audit"): "NONE", ("bob", "fetch pay-audit"): "NONE"}
    expected = {("bob", "produce pay-audit"): REFUSED, ("bob", "fetch pay-audit"): PASSES}
    (difference,) = compare_sides(a, b, expected, expected)
    assert (difference.principal, difference.probe, difference.a, difference.b) == (
        "bob",
        "produce pay-audit",
        "TOPIC_AUTHORIZATION_FAILED",
        "NONE",
    )
    assert difference.sides == ("b",)
    names = ("reference", "reference@planted=x")
    assert (
        difference.verdict(names)
        == "reference@planted=x deviates from Kafka, which answers TOPIC_AUTHORIZATION_FAILED"
    )
    report = difference.to_json(names)
    assert report["deviates"] == ["reference@planted=x"] and report["kafka"] == "TOPIC_AUTHORIZATION_FAILED"
    assert kafka_mismatches(b, expected) == [("bob", "produce pay-audit")]
    assert kafka_mismatches(a, expected) == []


def test_a_difference_the_rules_cannot_judge_says_so():
    unknown = AclDifference("alice", "fetch orders", "NONE", "OFFSET_OUT_OF_RANGE", "x", "x", "", None)
    assert unknown.verdict(("a", "b")).startswith("unknown")
    assert unknown.to_json(("a", "b"))["deviates"] is None


_outcomes = st.sampled_from(
    ["NONE", "TOPIC_AUTHORIZATION_FAILED", "UNKNOWN_TOPIC_OR_PARTITION", "no answer: closed"]
)
_keys = st.tuples(st.sampled_from(["alice", "bob"]), st.sampled_from(["produce t", "fetch t", "metadata t"]))


@given(st.dictionaries(_keys, _outcomes, min_size=1), st.data())
def test_only_the_pairs_whose_outcomes_differ_are_reported(a, data):
    b = dict(a)
    changed = data.draw(st.sets(st.sampled_from(sorted(a))))
    for key in changed:
        b[key] = data.draw(_outcomes.filter(lambda o, key=key: o != a[key]))
    expectations = {key: data.draw(st.sampled_from([REFUSED, PASSES])) for key in a}
    differences = compare_sides(a, b, expectations, expectations)
    assert {(d.principal, d.probe) for d in differences} == changed
    for d in differences:
        wrong = {
            side
            for side, outcome in (("a", d.a), ("b", d.b))
            if not expectations[(d.principal, d.probe)].met_by(outcome)
        }
        assert set(d.sides or ()) == wrong
    assert compare_sides(a, a, expectations, expectations) == []
