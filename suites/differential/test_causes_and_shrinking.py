"""Root causes and shrinking, without a broker: the differences of an exchange group into the causes
the engine reports, and the shrinker finds the smallest case that still shows a cause."""

from __future__ import annotations

import asyncio

from hypothesis import given
from hypothesis import strategies as st

from kconform.harness.diff import operations as ops
from kconform.harness.diff import shrinking
from kconform.harness.diff.causes import error_beside, sightings
from kconform.harness.diff.compare import Difference, diff_trees


def shrink_case(case, shows, **kw):
    """The shrinker over a plain predicate (a replay is awaited; here it is a function of the case)."""

    async def replay(candidate):
        return shows(candidate)

    return asyncio.run(shrinking.shrink_case(case, replay, **kw))


def test_one_rule_across_versions_and_fields_is_one_cause():
    """An unknown topic empties every field of the answer: the error code is the cause, the rest are
    its consequences, and the same pair at another version is the same cause."""
    a = {"responses": [{"partitions": [{"error_code": 3, "high_watermark": -1, "records": []}]}]}
    b = {"responses": [{"partitions": [{"error_code": 0, "high_watermark": 4, "records": [1]}]}]}
    (first,) = sightings("Fetch", "Fetch(unknown topic)", diff_trees(a, b))
    assert [f.path for f in first.facets] == ["responses[*].partitions[*].error_code"]
    assert set(first.consequences) == {
        "responses[*].partitions[*].high_watermark",
        "responses[*].partitions[*].records",
    }
    (again,) = sightings("Fetch", "Fetch(unknown topic)", diff_trees(a, b))
    assert again.key == first.key
    (other_shape,) = sightings("Fetch", "Fetch(partition out of range)", diff_trees(a, b))
    assert other_shape.key != first.key  # the same error pair for another request is another cause


def test_a_fate_names_what_each_side_did_and_values_split_causes():
    (fate,) = sightings(
        "Produce", "Produce(acks=0)", [Difference("<connection>", "fate", "closed", "answered")]
    )
    assert fate.shape == ""  # who closed decides it, whatever the request held
    values = [Difference("controller_id", "value", 0, 1), Difference("controller_id", "value", 0, 2)]
    assert len({s.key for v in values for s in sightings("Metadata", "", [v])}) == 2


def test_a_field_that_differs_under_an_agreed_error_is_told_apart_by_it():
    tree = {"responses": [{"partitions": [{"error_code": 1, "high_watermark": -1}]}]}
    assert error_beside(tree, "responses[0].partitions[0].high_watermark") == 1
    assert error_beside(tree, "responses[0].topic_id") == 0 and error_beside(tree, "nowhere[3].x") == 0
    difference = Difference("responses[0].partitions[0].high_watermark", "value", -1, 0)
    (under,) = sightings("Fetch", "Fetch()", [difference], lambda path: 1)
    (plain,) = sightings("Fetch", "Fetch()", [difference], lambda path: 0)
    assert under.shape == "under error 1" and plain.shape == "" and under.key != plain.key


def _case(n: int) -> list:
    return [ops.Produce(i, topic=i % 3, values=(b"x",) * (i % 4 + 1), acks=1) for i in range(n)]


@given(st.integers(1, 12), st.data())
def test_shrinking_keeps_exactly_what_the_cause_needs(n, data):
    case = _case(n)
    needed = data.draw(st.sets(st.sampled_from(range(n)), min_size=1, max_size=min(3, n)))
    wanted = [case[i] for i in sorted(needed)]

    def shows(candidate):  # the cause needs these operations, in order, with their topics
        picks = [(op.version_pick, op.topic) for op in candidate]
        return all((op.version_pick, op.topic) in picks for op in wanted)

    result = shrink_case(case, shows)
    assert result.finished and shows(result.case)
    assert [op.version_pick for op in result.case] == [op.version_pick for op in wanted]
    assert all(len(op.values) == 1 and op.acks == 0 for op in result.case)  # fields moved to simpler values


def test_shrinking_stops_at_its_budget_and_keeps_what_it_has():
    case = _case(10)
    calls = []

    def shows(candidate):  # the cause needs the first operation, so many replays are wanted
        calls.append(1)
        return case[0] in candidate

    result = shrink_case(case, shows, max_replays=3)
    assert not result.finished and len(calls) == 3 and len(result.case) < len(case)
    ticks = iter(range(100))
    timed = shrink_case(case, shows, deadline=2, clock=lambda: next(ticks))
    assert not timed.finished and timed.replays <= 3


def test_shrinking_without_simplifying_drops_operations_and_keeps_fields():
    case = _case(6)
    wanted = case[2]
    result = shrink_case(case, lambda candidate: wanted in candidate, simplify=False)
    assert result.finished and result.case == [wanted]  # the same operation, its fields untouched


def test_a_field_the_cause_needs_stays_and_the_others_still_simplify():
    """Simplifying an operation's fields all at once fails when one of them matters; then they are
    tried one at a time, and only the one that matters keeps its value."""
    case = [ops.Produce(2, topic=1, values=(b"x", b"y"), acks=1)]
    result = shrink_case(case, lambda candidate: candidate[0].acks == 1)
    assert result.finished and result.case == [ops.Produce(0, topic=0, values=(b"x",), acks=1)]
    all_at_once = shrink_case(case, lambda candidate: True)
    assert all_at_once.case == [ops.Produce(0, topic=0, values=(b"x",), acks=0)]
    assert all_at_once.replays == 2  # the lowest version, then every other field at once


def test_a_cause_that_needs_fewer_steps_at_a_lower_version_loses_them():
    """A state that takes three steps at the drawn versions and one at the lowest (a JoinGroup from v4
    answers MEMBER_ID_REQUIRED first, and the member joins with a second one): the case is tried at the
    lowest version, and what that frees is dropped."""
    case = [ops.Produce(pick, topic=0, values=(b"x",), acks=0) for pick in (3, 4, 5, 6)]

    def shows(candidate):
        return len(candidate) >= 3 or all(op.version_pick == 0 for op in candidate)

    result = shrink_case(case, shows)
    assert result.finished and result.case == [ops.Produce(0, topic=0, values=(b"x",), acks=0)]
    # a cause the lowest version does not show keeps the versions drawn
    needs_them = shrink_case(case, lambda candidate: len(candidate) >= 3 and candidate[0].version_pick)
    assert needs_them.finished and [op.version_pick for op in needs_them.case] == [4, 5, 6]


def test_an_operation_a_simpler_field_frees_is_dropped_at_the_end():
    """A produce by a transactional producer needs its partition added first; once the producer is
    made idempotent (a field moved to its simpler value) the AddPartitionsToTxn is needed no more and
    the last pass drops it."""
    from kconform.harness.diff import operations_txn as txn

    case = [
        ops.CreateTopic(0, topic=0, partitions=1),
        txn.InitProducerId(0, producer=1, transactional=True),
        txn.AddPartitionsToTxn(0, producer=1),
        txn.ProducerProduce(0, producer=1, transactional=False),
    ]

    def shows(candidate):
        kinds = [type(op) for op in candidate]
        if txn.ProducerProduce not in kinds or txn.InitProducerId not in kinds:
            return False
        init = next(op for op in candidate if isinstance(op, txn.InitProducerId))
        return not init.transactional or txn.AddPartitionsToTxn in kinds

    result = shrink_case(case, shows)
    assert result.finished
    assert [type(op) for op in result.case] == [txn.InitProducerId, txn.ProducerProduce]
    assert not result.case[0].transactional
