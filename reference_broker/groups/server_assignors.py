"""The server-side assignors of KIP-848 consumer groups, as pure functions (Kafka's ``UniformAssignor``
and ``RangeAssignor``).

Input: each member's subscribed topic ids, each member's current target assignment (the stickiness
base, as Kafka's ``TargetAssignmentBuilder`` passes it), each topic's partition count, and optionally
each member's instance id. Output: member id -> topic id -> partitions, with an entry for every member.

``uniform`` gives every member a partition count within one of the others when all subscribe to the
same topics, and otherwise never leaves a member holding two or more partitions more than another
member subscribed to the same topic; either way it keeps a member's current partitions wherever that
balance allows. ``range`` gives each topic's subscribers contiguous ranges in a fixed member order
(static members by instance id first, then the others by member id), so that co-partitioned topics
line up; it is not sticky, as in Kafka."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from uuid import UUID

__all__ = ["ASSIGNORS", "assignor_names", "range_assign", "uniform_assign"]

Assignment = dict[str, dict[UUID, set[int]]]
Assignor = Callable[..., Assignment]
TopicPartition = tuple[UUID, int]

# Kafka accepts the assignors' class names in group.consumer.assignors as well as their names.
_CLASS_NAMES = {
    "org.apache.kafka.coordinator.group.assignor.UniformAssignor": "uniform",
    "org.apache.kafka.coordinator.group.assignor.RangeAssignor": "range",
}


def assignor_names(configured: Iterable[str]) -> list[str]:
    """The names of the configured assignors that this broker has, in the configured order."""
    names = [_CLASS_NAMES.get(c.strip(), c.strip()) for c in configured]
    return [n for n in names if n in ASSIGNORS] or ["uniform"]


def _as_map(partitions: Iterable[TopicPartition]) -> dict[UUID, set[int]]:
    result: dict[UUID, set[int]] = {}
    for topic, p in partitions:
        result.setdefault(topic, set()).add(p)
    return result


def _kept(
    members: list[str],
    subscriptions: Mapping[str, set[UUID]],
    current: Mapping[str, Mapping[UUID, Iterable[int]]],
    partitions: Mapping[UUID, int],
) -> dict[str, list[TopicPartition]]:
    """Each member's current partitions that it may keep: on a topic it still subscribes to, still
    existing, and not already kept by a member earlier in the order."""
    claimed: set[TopicPartition] = set()
    kept: dict[str, list[TopicPartition]] = {}
    for m in members:
        mine = sorted(
            (topic, p)
            for topic, parts in current.get(m, {}).items()
            if topic in subscriptions[m] and topic in partitions
            for p in parts
            if 0 <= p < partitions[topic] and (topic, p) not in claimed
        )
        kept[m] = mine
        claimed.update(mine)
    return kept


def uniform_assign(
    subscriptions: Mapping[str, set[UUID]],
    current: Mapping[str, Mapping[UUID, Iterable[int]]],
    partitions: Mapping[UUID, int],
    instance_ids: Mapping[str, str | None] | None = None,
) -> Assignment:
    members = sorted(subscriptions)
    if not members:
        return {}
    subs = {m: {t for t in subscriptions[m] if t in partitions} for m in members}
    if all(subs[m] == subs[members[0]] for m in members):
        return _uniform_homogeneous(members, subs[members[0]], current, partitions)
    return _uniform_heterogeneous(members, subs, current, partitions)


def _uniform_homogeneous(
    members: list[str],
    topics: set[UUID],
    current: Mapping[str, Mapping[UUID, Iterable[int]]],
    partitions: Mapping[UUID, int],
) -> Assignment:
    """Kafka's ``UniformHomogeneousAssignmentBuilder``: a quota of total/members each, the remainder one
    each to some members; members keep what fits their quota and the rest is handed out in order."""
    if not topics:
        return {m: {} for m in members}
    kept = _kept(members, {m: topics for m in members}, current, partitions)
    total = sum(partitions[t] for t in topics)
    base, extra = divmod(total, len(members))
    # The extra partitions go to the members that already hold the most, so that fewer of them move.
    by_holding = sorted(members, key=lambda m: (-len(kept[m]), m))
    quota = {m: base + (1 if i < extra else 0) for i, m in enumerate(by_holding)}
    held = {tp for m in members for tp in kept[m]}
    unassigned = [(t, p) for t in sorted(topics, key=str) for p in range(partitions[t]) if (t, p) not in held]
    result: dict[str, list[TopicPartition]] = {}
    for m in members:
        result[m] = kept[m][: quota[m]]
        unassigned.extend(kept[m][quota[m] :])  # over quota: given to members with room
    start = 0
    for m in members:
        need = quota[m] - len(result[m])
        result[m] += unassigned[start : start + need]
        start += need
    return {m: _as_map(result[m]) for m in members}


def _uniform_heterogeneous(
    members: list[str],
    subs: dict[str, set[UUID]],
    current: Mapping[str, Mapping[UUID, Iterable[int]]],
    partitions: Mapping[UUID, int],
) -> Assignment:
    """Members subscribe to different topics: keep what is still valid, give each free partition to its
    least loaded subscriber (topics with the fewest subscribers first), then move partitions from a
    member to another subscriber of the same topic while their loads differ by two or more."""
    kept = _kept(members, subs, current, partitions)
    owned: dict[str, set[TopicPartition]] = {m: set(kept[m]) for m in members}
    held = {tp for m in members for tp in kept[m]}
    subscribers = {t: [m for m in members if t in subs[m]] for t in partitions}
    topics = sorted((t for t in partitions if subscribers[t]), key=lambda t: (len(subscribers[t]), str(t)))
    for topic in topics:
        for p in range(partitions[topic]):
            if (topic, p) not in held:
                target = min(subscribers[topic], key=lambda m: (len(owned[m]), m))
                owned[target].add((topic, p))
    moved = True
    while moved:  # each move lowers the sum of squared loads, so this ends
        moved = False
        for topic in topics:
            holders = [m for m in subscribers[topic] if any(t == topic for t, _ in owned[m])]
            if not holders:
                continue
            giver = max(holders, key=lambda m: (len(owned[m]), m))
            taker = min(subscribers[topic], key=lambda m: (len(owned[m]), m))
            if len(owned[giver]) - len(owned[taker]) >= 2:
                tp = max(tp for tp in owned[giver] if tp[0] == topic)
                owned[giver].remove(tp)
                owned[taker].add(tp)
                moved = True
    return {m: _as_map(owned[m]) for m in members}


def range_assign(
    subscriptions: Mapping[str, set[UUID]],
    current: Mapping[str, Mapping[UUID, Iterable[int]]],
    partitions: Mapping[UUID, int],
    instance_ids: Mapping[str, str | None] | None = None,
) -> Assignment:
    ids = instance_ids or {}

    def order(m: str) -> tuple:
        instance = ids.get(m)
        return (0, instance, m) if instance is not None else (1, "", m)

    members = sorted(subscriptions, key=order)
    result: Assignment = {m: {} for m in members}
    for topic in sorted({t for m in members for t in subscriptions[m] if t in partitions}, key=str):
        subscribed = [m for m in members if topic in subscriptions[m]]
        base, extra = divmod(partitions[topic], len(subscribed))
        start = 0
        for i, m in enumerate(subscribed):
            size = base + (1 if i < extra else 0)
            if size:
                result[m][topic] = set(range(start, start + size))
            start += size
    return result


ASSIGNORS: dict[str, Assignor] = {"uniform": uniform_assign, "range": range_assign}
