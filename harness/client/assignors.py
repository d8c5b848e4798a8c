"""The classic protocol's client-side assignors, run by the group leader: ``range``, ``roundrobin``,
``sticky`` and ``cooperative-sticky``, as pure functions.

Input: each member's subscribed topics and the partitions it owns now (what its subscription metadata
reports), and each topic's partition count. Output: member id -> topic -> sorted partitions.

``sticky`` balances members to within one partition and, among balanced assignments, moves as few
partitions as possible: a member keeps what it owns up to its quota, and the members that own the most
get the larger quotas. ``cooperative-sticky`` computes the same target but leaves out, for now, every
partition that another member still owns (KIP-429): that owner revokes it and rejoins, and the next
rebalance hands it over, so no partition is ever owned twice."""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["ASSIGNORS", "cooperative_sticky", "range_assign", "round_robin", "sticky"]

Owned = Mapping[str, Mapping[str, list[int]]]
Assignment = dict[str, dict[str, list[int]]]


def _empty(members) -> Assignment:
    return {m: {} for m in members}


def _sorted(result: dict[str, dict[str, set[int]]]) -> Assignment:
    return {m: {t: sorted(p) for t, p in tps.items() if p} for m, tps in result.items()}


def range_assign(
    subscriptions: Mapping[str, set[str]], partitions: Mapping[str, int], owned: Owned | None = None
) -> Assignment:
    """Kafka's ``RangeAssignor``: per topic, members in id order take contiguous ranges, the first
    ``partitions % members`` of them one more."""
    result = _empty(subscriptions)
    for topic in sorted(partitions):
        members = sorted(m for m, topics in subscriptions.items() if topic in topics)
        if not members:
            continue
        base, extra = divmod(partitions[topic], len(members))
        start = 0
        for i, m in enumerate(members):
            size = base + (1 if i < extra else 0)
            if size:
                result[m][topic] = list(range(start, start + size))
            start += size
    return result


def round_robin(
    subscriptions: Mapping[str, set[str]], partitions: Mapping[str, int], owned: Owned | None = None
) -> Assignment:
    """Kafka's ``RoundRobinAssignor``: all topic-partitions in order, dealt to members in id order,
    skipping members not subscribed to the partition's topic."""
    result: dict[str, dict[str, set[int]]] = {m: {} for m in subscriptions}
    members = sorted(subscriptions)
    if not members:
        return {}
    turn = 0
    for topic in sorted(partitions):
        if not any(topic in subscriptions[m] for m in members):
            continue
        for p in range(partitions[topic]):
            while topic not in subscriptions[members[turn % len(members)]]:
                turn += 1
            result[members[turn % len(members)]].setdefault(topic, set()).add(p)
            turn += 1
    return _sorted(result)


def sticky(
    subscriptions: Mapping[str, set[str]], partitions: Mapping[str, int], owned: Owned | None = None
) -> Assignment:
    owned = owned or {}
    members = sorted(subscriptions)
    result: dict[str, dict[str, set[int]]] = {m: {} for m in members}
    if not members:
        return {}
    everything = [(t, p) for t in sorted(partitions) for p in range(partitions[t])]
    eligible = {tp: [m for m in members if tp[0] in subscriptions[m]] for tp in everything}
    # What each member may keep: partitions that still exist, that it still subscribes to, and that
    # no other member claims as well (a double claim after a lost rebalance goes to neither).
    claims: dict[tuple[str, int], list[str]] = {}
    for m in members:
        for t, parts in owned.get(m, {}).items():
            for p in parts:
                if t in subscriptions[m] and 0 <= p < partitions.get(t, 0):
                    claims.setdefault((t, p), []).append(m)
    keep = {m: [tp for tp, who in claims.items() if who == [m]] for m in members}
    assignable = [tp for tp in everything if eligible[tp]]
    # Quotas: balanced to within one; the larger quotas go to the members that own the most, which is
    # what keeps the number of moved partitions minimal.
    base, extra = divmod(len(assignable), len(members))
    by_owned = sorted(members, key=lambda m: (-len(keep[m]), m))
    quota = {m: base + (1 if i < extra else 0) for i, m in enumerate(by_owned)}
    taken: set[tuple[str, int]] = set()
    count = dict.fromkeys(members, 0)
    for m in members:
        for tp in sorted(keep[m])[: quota[m]]:
            result[m].setdefault(tp[0], set()).add(tp[1])
            taken.add(tp)
            count[m] += 1
    for tp in assignable:
        if tp in taken:
            continue
        candidates = [m for m in eligible[tp] if count[m] < quota[m]] or eligible[tp]
        target = min(candidates, key=lambda m: (count[m] - quota[m], count[m], m))
        result[target].setdefault(tp[0], set()).add(tp[1])
        count[target] += 1
    return _sorted(result)


def cooperative_sticky(
    subscriptions: Mapping[str, set[str]], partitions: Mapping[str, int], owned: Owned | None = None
) -> Assignment:
    owned = owned or {}
    target = sticky(subscriptions, partitions, owned)
    owner = {(t, p): m for m, tps in owned.items() for t, parts in tps.items() for p in parts}
    withheld = {
        (t, p)
        for m, tps in target.items()
        for t, parts in tps.items()
        for p in parts
        if owner.get((t, p), m) != m and owner[(t, p)] in subscriptions
    }
    return {
        m: {
            t: [p for p in parts if (t, p) not in withheld]
            for t, parts in tps.items()
            if any((t, p) not in withheld for p in parts)
        }
        for m, tps in target.items()
    }


ASSIGNORS = {
    "range": range_assign,
    "roundrobin": round_robin,
    "sticky": sticky,
    "cooperative-sticky": cooperative_sticky,
}
