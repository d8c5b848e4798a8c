"""The classic protocol's assignors: Kafka's documented examples for range and round-robin, every
partition to exactly one subscriber for all four, and the sticky assignor's promise over random
membership changes: balanced within one partition, and no more partitions moved than balance needs.
Cooperative-sticky never hands a partition to a member while another still owns it."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kconform.harness.client.assignors import ASSIGNORS, cooperative_sticky, range_assign, round_robin, sticky

TOPICS = {"t0": 3, "t1": 3}


def test_range_and_round_robin_match_kafkas_examples():
    subs = {"C0": {"t0", "t1"}, "C1": {"t0", "t1"}}
    assert range_assign(subs, TOPICS) == {"C0": {"t0": [0, 1], "t1": [0, 1]}, "C1": {"t0": [2], "t1": [2]}}
    assert round_robin(subs, TOPICS) == {"C0": {"t0": [0, 2], "t1": [1]}, "C1": {"t0": [1], "t1": [0, 2]}}


subscriptions = st.dictionaries(
    st.sampled_from([f"m{i}" for i in range(6)]),
    st.sets(st.sampled_from(["a", "b", "c"]), min_size=1),
    min_size=1,
)
counts = st.fixed_dictionaries({t: st.integers(0, 9) for t in "abc"})


@given(subscriptions, counts, st.sampled_from(sorted(ASSIGNORS)))
def test_every_partition_goes_to_exactly_one_subscriber(subs, partitions, name):
    result = ASSIGNORS[name](subs, partitions)
    for topic, n in partitions.items():
        owners = [(m, p) for m, tps in result.items() for p in tps.get(topic, [])]
        assert sorted(p for _, p in owners) == (
            list(range(n)) if any(topic in s for s in subs.values()) else []
        )
        assert all(topic in subs[m] for m, _ in owners)


def _flat(assignment) -> dict[tuple[str, int], str]:
    return {(t, p): m for m, tps in assignment.items() for t, parts in tps.items() for p in parts}


@settings(max_examples=150)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 7)), min_size=1, max_size=25), st.integers(1, 30))
def test_sticky_stays_balanced_and_moves_no_more_than_needed(changes, partition_count):
    partitions = {"t": partition_count}
    members: set[str] = {"m0"}
    current = sticky({"m0": {"t"}}, partitions)
    for joins, n in changes:
        member = f"m{n}"
        if joins:
            members.add(member)
        elif len(members) > 1:
            members.discard(member)
        subs = {m: {"t"} for m in members}
        owned = {m: current.get(m, {}) for m in members}
        new = sticky(subs, partitions, owned)
        sizes = [sum(len(p) for p in new[m].values()) for m in members]
        assert max(sizes) - min(sizes) <= 1
        before, after = _flat(owned), _flat(new)
        moved = sum(1 for tp, m in before.items() if after.get(tp) != m)
        # The fewest moves any balanced assignment needs: the larger quotas to the biggest owners.
        base, extra = divmod(partition_count, len(members))
        held = sorted((sum(len(p) for p in owned[m].values()) for m in members), reverse=True)
        needed = sum(max(0, h - (base + (1 if i < extra else 0))) for i, h in enumerate(held))
        assert moved == needed
        current = new


@settings(max_examples=150)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 5)), min_size=1, max_size=20), st.integers(1, 20))
def test_cooperative_sticky_never_gives_a_partition_still_owned_elsewhere(changes, partition_count):
    partitions = {"t": partition_count}
    members = {"m0"}
    current = cooperative_sticky({"m0": {"t"}}, partitions)
    for joins, n in changes:
        if joins:
            members.add(f"m{n}")
        elif len(members) > 1:
            members.discard(f"m{n}")
        subs = {m: {"t"} for m in members}
        owned = {m: current.get(m, {}) for m in members}
        first = cooperative_sticky(subs, partitions, owned)
        owner = _flat(owned)
        for tp, m in _flat(first).items():
            assert owner.get(tp, m) == m, f"{tp} given to {m} while {owner[tp]} still owns it"
        # Owners revoke what they lost, rejoin, and the second round reaches the sticky target.
        revoked = {
            m: {t: [p for p in parts if _flat(first).get((t, p)) == m] for t, parts in owned[m].items()}
            for m in members
        }
        second = cooperative_sticky(subs, partitions, revoked)
        assert second == sticky(subs, partitions, revoked)
        current = second
