"""The conformance catalogue as a pytest suite, one test per rule, on whatever ``--kafka-target`` names
(the reference broker by default):

    pytest suites/conformance/test_rules.py --kafka-target tansu

A rule fails the test when the target does not do what Kafka does, unless the target's kind is known to
fail it (``harness/conform/expected/<kind>/``); a known failure that passes fails too (news). On the
reference broker, whose APIs are known before it starts, only the rules that apply to it are collected
(``kconform conform`` lists the others as not applicable); on any other target a rule it cannot run (an
API it does not serve at the rule's versions) is skipped, never passed."""

from __future__ import annotations

import asyncio

import pytest

from kconform.harness.conform.catalogue import catalogue
from kconform.harness.conform.expected import expected_for, surprises
from kconform.harness.conform.runner import reference_served, run_rules, runs_on

RULES = catalogue()


def pytest_generate_tests(metafunc):
    if "rule_id" not in metafunc.fixturenames:
        return
    spec = metafunc.config.getoption("--kafka-target")
    base, _, options = spec.partition("@")
    ids = list(RULES)
    if base == "reference":
        version = dict(o.partition("=")[::2] for o in options.split(",") if o).get("kafka")
        served = reference_served(version)
        ids = [rule_id for rule_id in ids if runs_on(RULES[rule_id], served)]
    metafunc.parametrize("rule_id", ids)


@pytest.fixture(scope="module")
def served(kafka_target):
    return kafka_target.api_versions(refresh=True)


@pytest.fixture(scope="module")
def expected(kafka_target):
    return expected_for(kafka_target.kind, set(RULES))


def test_rule(rule_id, kafka_target, served, expected):
    outcomes = asyncio.run(
        run_rules([RULES[rule_id]], target=kafka_target.name, bootstrap=kafka_target.bootstrap, served=served)
    )
    news = surprises(outcomes, expected)
    assert not news, "\n".join(s.describe() for s in news)
    if all(o.outcome == "not-applicable" for o in outcomes):
        pytest.skip(f"not applicable on this target: {outcomes[0].detail}")
