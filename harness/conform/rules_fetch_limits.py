"""Rules of how much one Fetch answer holds and how long a Fetch waits: max_bytes, partition_max_bytes,
min_bytes and max_wait_ms."""

from __future__ import annotations

import asyncio

from kconform.codecs.errors import Errors

from .catalogue import Rule, RuleFailed, add, rule
from .requests import (
    FETCH,
    batch,
)
from .rules_fetch import (
    ALL,
    FAMILY,
    create_topic,
    fetch,
    offsets_of,
    one_partition,
    partitions_of,
    produce,
    records_bytes,
    topic_with,
)
from .session import RuleSession, expect, expect_error

# ---- how much one answer holds ---------------------------------------------------------------------


def _size_check(max_bytes: int, partition_max_bytes: int):
    async def check(s: RuleSession, version: int) -> None:
        topic, topic_id, leader = await topic_with(s, batch(4, size=1000))
        body = await fetch(
            s,
            leader,
            version,
            topic,
            topic_id,
            {0: 0},
            max_bytes=max_bytes,
            partition_max_bytes=partition_max_bytes,
        )
        part = one_partition(body)
        expect_error("error_code", part.error_code, Errors.NONE)
        expect("offsets", offsets_of(part), [0, 1, 2, 3])

    return check


# ReplicaManager.readFromLocalLog reads the first partition with minOneMessage (v3+: hardMaxBytesLimit
# false), so a first batch bigger than either limit still comes back whole.
for _which, _max, _part in (("max-bytes", 100, 1 << 20), ("partition-max-bytes", 1 << 20, 100)):
    add(
        Rule(
            id=f"fetch.first-batch-larger-than-{_which}-returned-whole",
            api=FETCH,
            versions=ALL,
            source="ReplicaManager.readFromLocalLog minOneMessage",
            text="The first batch of a Fetch comes back whole even when it is larger than "
            f"{_which.replace('-', '_')}.",
            check=_size_check(_max, _part),
            family=FAMILY,
        )
    )


@rule(
    "fetch.partition-max-bytes-bounds-the-records",
    api=FETCH,
    versions=ALL,
    source="LogSegment.read adjustedMaxSize",
    family=FAMILY,
)
async def partition_max_bytes_bound(s: RuleSession, version: int) -> None:
    """Once the first batch fits, a partition's records take at most partition_max_bytes."""
    topic, topic_id, leader = await topic_with(s, *[batch(2, size=200) for _ in range(6)])
    limit = 1000
    part = one_partition(await fetch(s, leader, version, topic, topic_id, {0: 0}, partition_max_bytes=limit))
    got = len(records_bytes(part))
    if not 0 < got <= limit:
        raise RuleFailed("len(records)", f"1..{limit}", got)
    expect("first offsets", offsets_of(part)[:2], [0, 1])


@rule(
    "fetch.max-bytes-bounds-the-response",
    api=FETCH,
    versions=ALL,
    source="ReplicaManager.readFromLocalLog limitBytes",
    family=FAMILY,
)
async def max_bytes_bound(s: RuleSession, version: int) -> None:
    """Once the first batch fits, the records of all partitions together take at most max_bytes."""
    topic, topic_id = await create_topic(s, 1)
    for _ in range(6):
        await produce(s, topic, topic_id, batch(2, size=200))
    leader = await s.leader(topic)
    limit = 1000
    body = await fetch(s, leader, version, topic, topic_id, {0: 0}, max_bytes=limit)
    got = sum(len(records_bytes(p)) for p in partitions_of(body).values())
    if not 0 < got <= limit:
        raise RuleFailed("total len(records)", f"1..{limit}", got)


# ---- long polls ------------------------------------------------------------------------------------


async def _timed(coro):
    loop = asyncio.get_running_loop()
    start = loop.time()
    result = await coro
    return result, loop.time() - start


@rule(
    "fetch.waits-max-wait-without-data",
    api=FETCH,
    versions=ALL,
    source="DelayedFetch.onExpiration",
    family=FAMILY,
)
async def waits_without_data(s: RuleSession, version: int) -> None:
    """With fewer than min_bytes available a Fetch is answered only when max_wait_ms has passed, NONE
    and empty."""
    topic, topic_id, leader = await topic_with(s)
    body, waited = await _timed(fetch(s, leader, version, topic, topic_id, {0: 0}, max_wait_ms=600))
    part = one_partition(body)
    expect_error("error_code", part.error_code, Errors.NONE)
    if not 0.5 <= waited < 5:
        raise RuleFailed("seconds before the answer", "0.6 (max_wait_ms)", round(waited, 2))


@rule(
    "fetch.min-bytes-met-answers-at-once",
    api=FETCH,
    versions=ALL,
    source="ReplicaManager.fetchMessages",
    family=FAMILY,
)
async def answers_at_once(s: RuleSession, version: int) -> None:
    """A Fetch that finds min_bytes at once is answered at once, not after max_wait_ms."""
    topic, topic_id, leader = await topic_with(s, batch(3))
    body, waited = await _timed(fetch(s, leader, version, topic, topic_id, {0: 0}, max_wait_ms=8000))
    expect("offsets", offsets_of(one_partition(body)), [0, 1, 2])
    if waited >= 4:
        raise RuleFailed("seconds before the answer", "well under max_wait_ms (8)", round(waited, 2))


@rule(
    "fetch.min-bytes-unmet-waits-then-returns-what-there-is",
    api=FETCH,
    versions=ALL,
    source="DelayedFetch.onComplete",
    family=FAMILY,
)
async def min_bytes_unmet(s: RuleSession, version: int) -> None:
    """With some records but fewer than min_bytes, a Fetch waits max_wait_ms and then returns them."""
    topic, topic_id, leader = await topic_with(s, batch(2))
    body, waited = await _timed(
        fetch(s, leader, version, topic, topic_id, {0: 0}, max_wait_ms=600, min_bytes=1 << 20)
    )
    expect("offsets", offsets_of(one_partition(body)), [0, 1])
    if not 0.5 <= waited < 5:
        raise RuleFailed("seconds before the answer", "0.6 (max_wait_ms)", round(waited, 2))


@rule(
    "fetch.long-poll-returns-when-data-arrives",
    api=FETCH,
    versions=ALL,
    source="DelayedFetch.tryComplete",
    family=FAMILY,
)
async def returns_when_data_arrives(s: RuleSession, version: int) -> None:
    """A waiting Fetch is answered as soon as an append brings min_bytes, long before max_wait_ms."""
    topic, topic_id, leader = await topic_with(s)
    poll = asyncio.ensure_future(
        _timed(fetch(s, leader, version, topic, topic_id, {0: 0}, max_wait_ms=20_000))
    )
    await asyncio.sleep(0.3)
    await produce(s, topic, topic_id, batch(2))
    body, waited = await poll
    expect("offsets", offsets_of(one_partition(body)), [0, 1])
    if waited >= 8:
        raise RuleFailed("seconds before the answer", "soon after the append", round(waited, 2))
