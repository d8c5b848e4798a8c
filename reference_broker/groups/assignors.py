"""The server-side assignors of KIP-848 consumer groups, as pure functions.

Input: each member's subscribed topics and current assignment, and each topic's partition count (by
topic id). Output: the target assignment, member id -> topic id -> partitions.

``uniform`` balances every member's partition count to within one, keeping as many of a member's
current partitions as balance allows (sticky); ``range`` gives each topic's members contiguous ranges
of its partitions, in member id order, so that co-partitioned topics line up."""

from __future__ import annotations

from collections.abc import Mapping
from uuid import UUID

__all__ = ["ASSIGNORS", "range_assign", "uniform_assign"]

Assignment = dict[str, dict[UUID, set[int]]]


def uniform_assign(
    subscriptions: Mapping[str, set[UUID]],
    current: Mapping[str, Mapping[UUID, set[int]]],
    partitions: Mapping[UUID, int],
) -> Assignment:
    members = sorted(subscriptions)
    result: Assignment = {m: {} for m in members}
    if not members:
        return result
    counts = dict.fromkeys(members, 0)
    # Each topic's partitions go among its subscribers; quotas are computed per topic so that members
    # with different subscriptions still balance over what they share.
    for topic in sorted(partitions, key=str):
        subscribers = [m for m in members if topic in subscriptions[m]]
        if not subscribers:
            continue
        total = partitions[topic]
        base, extra = divmod(total, len(subscribers))
        quota = {
            m: base + (1 if i < extra else 0)
            for i, m in enumerate(sorted(subscribers, key=lambda m: (counts[m], m)))
        }
        taken: set[int] = set()
        for m in subscribers:  # keep current partitions up to the quota
            kept = sorted(p for p in current.get(m, {}).get(topic, set()) if p < total and p not in taken)
            kept = kept[: quota[m]]
            if kept:
                result[m][topic] = set(kept)
                taken.update(kept)
        free = [p for p in range(total) if p not in taken]
        for m in sorted(subscribers, key=lambda m: (len(result[m].get(topic, ())) - quota[m], m)):
            need = quota[m] - len(result[m].get(topic, ()))
            if need > 0:
                give, free = free[:need], free[need:]
                result[m].setdefault(topic, set()).update(give)
        for m in subscribers:
            counts[m] += len(result[m].get(topic, ()))
    return result


def range_assign(
    subscriptions: Mapping[str, set[UUID]],
    current: Mapping[str, Mapping[UUID, set[int]]],
    partitions: Mapping[UUID, int],
) -> Assignment:
    result: Assignment = {m: {} for m in subscriptions}
    for topic, total in partitions.items():
        subscribers = sorted(m for m, topics in subscriptions.items() if topic in topics)
        if not subscribers:
            continue
        base, extra = divmod(total, len(subscribers))
        start = 0
        for i, m in enumerate(subscribers):
            size = base + (1 if i < extra else 0)
            if size:
                result[m][topic] = set(range(start, start + size))
            start += size
    return result


ASSIGNORS = {"uniform": uniform_assign, "range": range_assign}
