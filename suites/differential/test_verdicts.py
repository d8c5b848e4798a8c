"""The rules table that says who deviates from Apache Kafka: every rule is complete and points into
Kafka's source, a cause gets the verdict its values call for between any pair of targets, and a peer
whose answer changes shows up as news."""

from __future__ import annotations

import re

from kconform.harness.diff.causes import Cause, sightings
from kconform.harness.diff.compare import Difference
from kconform.harness.diff.verdicts import judge, load_rules, news

_SOURCE = re.compile(r"[\w/*-]+\.(scala|java|json)\b")


def test_every_rule_names_kafka_answer_and_where_kafka_decides_it():
    rules = load_rules()
    assert len(rules) >= 10 and len({r.id for r in rules}) == len(rules)
    for rule in rules:
        assert (rule.kafka or rule.never) and rule.what, rule
        assert _SOURCE.search(rule.evidence), f"{rule.id}: evidence names no file of Kafka's source"
        # a pattern may range over versions, never over fields or kinds: those are what it pins
        assert rule.signature.count("/") == 3 and "*" not in rule.signature.rsplit("/", 1)[1], rule
        for kind, values in rule.seen.items():
            assert not set(values) & set(rule.kafka), f"{rule.id}: {kind} is pinned to Kafka's own answer"
            assert rule.kafka or set(values) <= set(rule.never), f"{rule.id}: {kind} pins a value it allows"


def _cause(api_name, shape, differences, versions=(3,)) -> Cause:
    (sighting,) = sightings(api_name, shape, differences)
    cause = Cause(sighting.key, 0, api_name, sighting.shape, sighting.facets, 0)
    for version in versions:
        cause.add(sighting, version, "c0")
    return cause


UNCOMMITTED = Difference("topics[0].partitions[0].error_code", "error_code", 0, 3)


def test_the_side_whose_value_kafka_does_not_give_deviates_whichever_side_it_is():
    rules = load_rules()
    cause = _cause("OffsetFetch", "OffsetFetch(unknown topic)", [UNCOMMITTED])
    verdict = judge(cause, rules, ("reference", "rdkafka-mock"))
    assert verdict["deviates"] == ["rdkafka-mock"] and verdict["rule"] == "offset-fetch-uncommitted-partition"
    flipped = _cause("OffsetFetch", "OffsetFetch()", [Difference(UNCOMMITTED.path, "error_code", 3, 0)])
    assert judge(flipped, rules, ("tansu", "reference"))["deviates"] == ["tansu"]
    both = _cause("OffsetFetch", "OffsetFetch()", [Difference(UNCOMMITTED.path, "error_code", 3, 5)])
    assert judge(both, rules, ("x", "y"))["sides"] == ["a", "b"]


def test_no_rule_means_unknown_and_a_crash_is_always_the_crashing_side():
    rules = load_rules()
    strange = _cause("Heartbeat", "Heartbeat()", [Difference("no_such_field", "value", 0, 1)])
    assert judge(strange, rules, ("a", "b"))["deviates"] is None
    crash = _cause("Fetch", "", [Difference("<connection>", "fate", "answered", "crashed")])
    assert judge(crash, rules, ("reference", "mock"))["deviates"] == ["mock"]


def test_a_rule_covers_only_its_request_shape():
    rules = load_rules()
    acks = Difference("responses[0].partition_responses[0].error_code", "error_code", 21, 0)
    verdict = judge(_cause("Produce", "Produce(acks=2)", [acks], versions=(9,)), rules, ("r", "m"))
    assert verdict["rule"] == "produce-invalid-required-acks" and verdict["deviates"] == ["m"]
    other = judge(
        _cause("Produce", "Produce(a shape no rule names)", [acks], versions=(9,)), rules, ("r", "m")
    )
    assert other["deviates"] is None  # no rule for this shape: unknown, not borrowed from another


def test_news_reports_an_unpinned_value_and_a_pinned_value_not_seen():
    rules = load_rules()
    cause = _cause("OffsetFetch", "OffsetFetch(unknown topic)", [UNCOMMITTED])
    cause.verdict = judge(cause, rules, ("reference", "rdkafka-mock"))
    as_json = [cause.to_json("reference", "rdkafka-mock")]
    new, stale = news(as_json, rules, ("reference", "rdkafka-mock"))
    assert new == [] and not any(s.startswith("offset-fetch-uncommitted-partition") for s in stale)
    assert any(s.startswith("metadata-trailing-bytes") for s in stale)  # not in this "run"
    changed = _cause(
        "OffsetFetch", "OffsetFetch(unknown topic)", [Difference(UNCOMMITTED.path, "error_code", 0, 9)]
    )
    changed.verdict = judge(changed, rules, ("reference", "rdkafka-mock"))
    new, _ = news([changed.to_json("reference", "rdkafka-mock")], rules, ("reference", "rdkafka-mock"))
    assert len(new) == 1 and "does not pin" in new[0]


HEARTBEAT = Difference("error_code", "error_code", 0, 27)


def test_a_one_member_rule_does_not_judge_a_member_with_another_in_its_group():
    rules = load_rules()
    alone = judge(_cause("Heartbeat", "Heartbeat()", [HEARTBEAT]), rules, ("r", "m"))
    assert alone["rule"] == "heartbeat-one-member-group-is-not-rebalancing" and alone["deviates"] == ["m"]
    # With another member, 27 is Kafka's answer while the group waits for that member to rejoin.
    shared = _cause("Heartbeat", "Heartbeat(with another member)", [HEARTBEAT])
    assert judge(shared, rules, ("r", "m"))["deviates"] is None
    # A join naming a protocol the other member lacks: 23 before MEMBER_ID_REQUIRED, at any version.
    join = Difference("error_code", "error_code", 23, 0)
    shape = "JoinGroup(new member,a protocol another member lacks,with another member)"
    verdict = judge(_cause("JoinGroup", shape, [join], versions=(5,)), rules, ("r", "m"))
    assert verdict["rule"] == "join-group-protocol-another-member-lacks" and verdict["deviates"] == ["m"]


def test_a_step_after_a_crash_or_another_members_differing_step_is_a_consequence():
    rules = load_rules()
    for part, rule in [
        ("after a crash", "after-a-crash"),
        ("after another member's differing step", "after-another-members-differing-step"),
        ("after a differing write", "after-a-differing-write"),
    ]:
        verdict = judge(_cause("Heartbeat", f"Heartbeat({part})", [HEARTBEAT]), rules, ("r", "m"))
        assert verdict["rule"] == rule and verdict["deviates"] == [], verdict
    # a crash itself is never a consequence: the crashing side deviates
    crash = Difference("<connection>", "fate", "answered", "crashed")
    assert judge(_cause("Heartbeat", "Heartbeat(after a crash)", [crash]), rules, ("r", "m"))["deviates"] == [
        "m"
    ]
