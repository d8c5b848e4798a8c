"""Rules of Fetch as a consumer sees it: offsets out of range, unknown topics and partitions, the
offsets every answer carries (high watermark, last stable offset, log start offset), how much one
answer holds (max_bytes, partition_max_bytes, the first batch whole), long polls (min_bytes and
max_wait_ms, bounded), fetch sessions (KIP-227) and leader epochs (KIP-320)."""

from __future__ import annotations

import asyncio

from kconform.codecs.errors import Errors
from kconform.codecs.records import iter_batches

from .catalogue import RuleFailed, rule
from .requests import (
    FETCH,
    LIST_OFFSETS,
    METADATA,
    PRODUCE,
    batch,
    fetch_request,
    list_offsets_request,
    metadata_request,
    produce_request,
)
from .session import RuleSession, SetupFailed, expect, expect_error

FAMILY = "fetch"
CREATE_TOPICS = 19
WAIT_MS = 100  # Kafka answers at once with data or an error; some brokers answer nothing at 0
ALL = (4, 18)  # Kafka 4.0 serves Fetch from v4; the runner keeps what the target advertises
SESSIONS = (7, 18)  # session id and epoch, KIP-227
EPOCHS = (9, 18)  # current_leader_epoch, KIP-320
TOPIC_IDS = (13, 18)  # topics by id, KIP-516


# ---- set-up shared with rules_offsets_lookup -----------------------------------------------------


async def produce(s: RuleSession, topic: str, topic_id, records: bytes, partition: int = 0) -> int:
    """Append ``records`` (acks=-1) through the partition's leader; the base offset."""
    leader = await s.leader(topic, partition)
    version = s.versions[PRODUCE][1]
    body = await s.call(
        leader, PRODUCE, version, produce_request(topic, records, partition=partition, topic_id=topic_id)
    )
    part = body.responses[0].partition_responses[0]
    if part.error_code != Errors.NONE:
        raise SetupFailed(f"producing to {topic}-{partition}: error {part.error_code}")
    return part.base_offset


async def leader_epoch(s: RuleSession, topic: str, partition: int = 0) -> int:
    """The partition's leader epoch as Metadata (v7+) tells it."""
    version = min(s.versions[METADATA][1], 8)
    if version < 7:
        raise SetupFailed("Metadata below v7 carries no leader epoch")
    body = await s.call(await s.raw(), METADATA, version, metadata_request(topic))
    for part in body.topics[0].partitions:
        if part.partition_index == partition:
            return part.leader_epoch
    raise SetupFailed(f"Metadata names no partition {partition} of {topic}")


def partitions_of(body) -> dict[int, object]:
    return {p.partition_index: p for t in body.responses for p in t.partitions}


def one_partition(body, index: int = 0):
    found = partitions_of(body)
    if index not in found:
        raise RuleFailed(f"responses[partition {index}]", "present", sorted(found))
    return found[index]


def records_bytes(part) -> bytes:
    data = part.records
    return data.read() if hasattr(data, "read") else bytes(data or b"")


def offsets_of(part) -> list[int]:
    return [r.offset for b in iter_batches(records_bytes(part)) for r in b.records]


async def same_leader(s: RuleSession, count: int):
    """A fresh topic and ``count`` of its partitions led by one broker (a cluster of up to three
    spreads leadership, so the topic gets three times as many partitions); that broker's connection."""
    topic, topic_id = await create_topic(s, count * 3 if CREATE_TOPICS in s.versions else count)
    await s.leader(topic)  # every broker knows the topic
    body = await s.call(await s.raw(), METADATA, min(s.versions[METADATA][1], 8), metadata_request(topic))
    by_leader: dict[int, list[int]] = {}
    for part in sorted(body.topics[0].partitions, key=lambda p: p.partition_index):
        by_leader.setdefault(part.leader_id, []).append(part.partition_index)
    node, parts = max(by_leader.items(), key=lambda kv: len(kv[1]))
    if len(parts) < count:
        raise SetupFailed(f"no broker leads {count} partitions of {topic}")
    return topic, topic_id, await s.raw(node), parts[:count]


async def fetch(
    s: RuleSession, client, version: int, topic: str, topic_id, offsets: dict[int, int], **kwargs
):
    kwargs.setdefault("max_wait_ms", WAIT_MS)
    return await s.call(client, FETCH, version, fetch_request(topic, topic_id, offsets, **kwargs))


async def create_topic(s: RuleSession, partitions: int = 1, **configs: str):
    """A fresh topic (name, id) with at least ``partitions`` partitions. A target without CreateTopics
    (librdkafka's mock cluster) gets it auto-created by a Metadata request, with its default count."""
    if CREATE_TOPICS in s.versions or configs:
        topic, topic_id = await s.create_topic(partitions, **configs)
        await _served_by_leaders(s, topic, partitions)
        return topic, topic_id
    name = s.name("t")
    version = min(s.versions[METADATA][1], 4)
    body = await s.call(await s.raw(), METADATA, version, metadata_request(name, auto_create=True))
    made = body.topics[0] if body.topics else None
    if made is None or made.error_code != Errors.NONE or len(made.partitions) < partitions:
        raise SetupFailed(f"auto-creating {name} with {partitions} partitions: {made}")
    await s.leader(name)
    return name, made.topic_id  # the zero UUID where Metadata carries no topic ids


async def _served_by_leaders(s: RuleSession, topic: str, partitions: int) -> None:
    """Wait until each partition's leader answers for it: in a cluster the leader may learn of a new
    topic a moment after the client's broker does (set-up only; Kafka has the same propagation)."""
    version = s.versions[LIST_OFFSETS][1]
    for partition in range(partitions):
        leader = await s.leader(topic, partition)
        for _ in range(50):
            request = list_offsets_request(topic, -1, partition=partition)
            body = await s.call(leader, LIST_OFFSETS, version, request)
            if body.topics[0].partitions[0].error_code == Errors.NONE:
                break
            await asyncio.sleep(0.1)
        else:
            raise SetupFailed(f"the leader of {topic}-{partition} does not serve it")


async def topic_with(s: RuleSession, *batches: bytes, partitions: int = 1, **configs: str):
    """A fresh topic with ``batches`` appended to partition 0; name, id and the leader's connection."""
    topic, topic_id = await create_topic(s, partitions, **configs)
    for records in batches:
        await produce(s, topic, topic_id, records)
    return topic, topic_id, await s.leader(topic)


# ---- offsets out of range --------------------------------------------------------------------------


@rule(
    "fetch.offset-past-log-end-is-out-of-range",
    api=FETCH,
    versions=ALL,
    source="LocalLog.read OffsetOutOfRangeException",
    family=FAMILY,
)
async def past_log_end(s: RuleSession, version: int) -> None:
    """A Fetch from an offset past the log end offset is answered OFFSET_OUT_OF_RANGE with no records."""
    topic, topic_id, leader = await topic_with(s, batch(3))
    part = one_partition(await fetch(s, leader, version, topic, topic_id, {0: 10}))
    expect_error("error_code", part.error_code, Errors.OFFSET_OUT_OF_RANGE)
    expect("records", offsets_of(part), [])


@rule(
    "fetch.out-of-range-answers-unknown-offsets",
    api=FETCH,
    versions=(5, 18),
    source="ReplicaManager.readFromLocalLog createLogReadResult UnknownOffset",
    family=FAMILY,
)
async def out_of_range_offsets(s: RuleSession, version: int) -> None:
    """An OFFSET_OUT_OF_RANGE partition carries -1 as its high watermark, last stable offset and log
    start offset."""
    topic, topic_id, leader = await topic_with(s, batch(3))
    part = one_partition(await fetch(s, leader, version, topic, topic_id, {0: 10}))
    expect_error("error_code", part.error_code, Errors.OFFSET_OUT_OF_RANGE)
    got = (part.high_watermark, part.last_stable_offset, part.log_start_offset)
    expect("(high_watermark, last_stable_offset, log_start_offset)", got, (-1, -1, -1))


@rule(
    "fetch.negative-offset-is-out-of-range",
    api=FETCH,
    versions=ALL,
    source="UnifiedLog.checkLogStartOffset",
    family=FAMILY,
)
async def negative_offset(s: RuleSession, version: int) -> None:
    """A Fetch from a negative offset (below the log start offset) is answered OFFSET_OUT_OF_RANGE."""
    topic, topic_id, leader = await topic_with(s, batch(3))
    part = one_partition(await fetch(s, leader, version, topic, topic_id, {0: -1}))
    expect_error("error_code", part.error_code, Errors.OFFSET_OUT_OF_RANGE)


@rule(
    "fetch.at-log-end-is-empty",
    api=FETCH,
    versions=ALL,
    source="LocalLog.read emptyFetchDataInfo",
    family=FAMILY,
)
async def at_log_end(s: RuleSession, version: int) -> None:
    """A Fetch from exactly the log end offset is answered NONE with no records and the high watermark."""
    topic, topic_id, leader = await topic_with(s, batch(3))
    part = one_partition(await fetch(s, leader, version, topic, topic_id, {0: 3}))
    expect_error("error_code", part.error_code, Errors.NONE)
    expect("records", offsets_of(part), [])
    expect("high_watermark", part.high_watermark, 3)


@rule(
    "fetch.empty-log-from-zero-is-empty",
    api=FETCH,
    versions=ALL,
    source="LocalLog.read emptyFetchDataInfo",
    family=FAMILY,
)
async def empty_log(s: RuleSession, version: int) -> None:
    """A Fetch from offset 0 of an empty partition is answered NONE, no records, high watermark 0."""
    topic, topic_id, leader = await topic_with(s)
    part = one_partition(await fetch(s, leader, version, topic, topic_id, {0: 0}))
    expect_error("error_code", part.error_code, Errors.NONE)
    expect("records", offsets_of(part), [])
    expect("high_watermark", part.high_watermark, 0)


# ---- unknown topics and partitions -----------------------------------------------------------------


@rule(
    "fetch.unknown-topic-id",
    api=FETCH,
    versions=TOPIC_IDS,
    source="KafkaApis.handleFetchRequest UNKNOWN_TOPIC_ID",
    family=FAMILY,
)
async def unknown_topic_id(s: RuleSession, version: int) -> None:
    """From v13 a topic id the broker does not know is answered UNKNOWN_TOPIC_ID for its partitions."""
    import uuid

    topic, _, leader = await topic_with(s)
    part = one_partition(await fetch(s, leader, version, topic, uuid.uuid4(), {0: 0}))
    expect_error("error_code", part.error_code, Errors.UNKNOWN_TOPIC_ID)


@rule(
    "fetch.unknown-topic-name",
    api=FETCH,
    versions=(4, 12),
    source="KafkaApis.handleFetchRequest UNKNOWN_TOPIC_OR_PARTITION",
    family=FAMILY,
)
async def unknown_topic_name(s: RuleSession, version: int) -> None:
    """Before v13 a topic name the broker does not know is answered UNKNOWN_TOPIC_OR_PARTITION."""
    client = await s.raw()
    part = one_partition(await fetch(s, client, version, s.name("missing"), None, {0: 0}))
    expect_error("error_code", part.error_code, Errors.UNKNOWN_TOPIC_OR_PARTITION)


@rule(
    "fetch.unknown-partition",
    api=FETCH,
    versions=ALL,
    source="ReplicaManager.readFromLocalLog getPartitionOrException",
    family=FAMILY,
)
async def unknown_partition(s: RuleSession, version: int) -> None:
    """A partition the topic does not have is answered UNKNOWN_TOPIC_OR_PARTITION, by name or by id."""
    topic, topic_id, leader = await topic_with(s)
    part = one_partition(await fetch(s, leader, version, topic, topic_id, {7: 0}), 7)
    expect_error("error_code", part.error_code, Errors.UNKNOWN_TOPIC_OR_PARTITION)


@rule(
    "fetch.answers-each-partition-asked",
    api=FETCH,
    versions=ALL,
    source="KafkaApis.handleFetchRequest processResponseCallback",
    family=FAMILY,
)
async def each_partition(s: RuleSession, version: int) -> None:
    """A sessionless Fetch answers every partition it names, each under its own index."""
    topic, topic_id, leader, parts = await same_leader(s, 3)
    await produce(s, topic, topic_id, batch(2), partition=parts[1])
    body = await fetch(s, leader, version, topic, topic_id, dict.fromkeys(parts, 0))
    expect("partitions answered", sorted(partitions_of(body)), sorted(parts))
    expect("offsets", offsets_of(partitions_of(body)[parts[1]]), [0, 1])


@rule(
    "fetch.answers-topic-as-asked",
    api=FETCH,
    versions=ALL,
    source="FetchResponse.toMessage",
    family=FAMILY,
)
async def topic_as_asked(s: RuleSession, version: int) -> None:
    """The answer names the topic as the request did: by name before v13, by topic id from v13."""
    topic, topic_id, leader = await topic_with(s, batch(1))
    body = await fetch(s, leader, version, topic, topic_id, {0: 0})
    expect("responses", len(body.responses), 1)
    if version >= 13:
        expect("responses[0].topic_id", body.responses[0].topic_id, topic_id)
    else:
        expect("responses[0].topic", body.responses[0].topic, topic)


@rule(
    "fetch.zero-max-wait-answers-every-partition",
    api=FETCH,
    versions=ALL,
    source="ReplicaManager.fetchMessages maxWaitMs",
    family=FAMILY,
)
async def zero_max_wait(s: RuleSession, version: int) -> None:
    """A Fetch with max_wait_ms 0 is answered at once, with every partition it names even when none has
    records to return."""
    topic, topic_id, leader = await topic_with(s)
    body = await fetch(s, leader, version, topic, topic_id, {0: 0}, max_wait_ms=0)
    part = one_partition(body)
    expect_error("error_code", part.error_code, Errors.NONE)
    expect("high_watermark", part.high_watermark, 0)


# ---- offsets every answer carries ----------------------------------------------------------------


@rule(
    "fetch.high-watermark-is-the-committed-end",
    api=FETCH,
    versions=ALL,
    source="ReplicaManager.readFromLocalLog LogReadResult.highWatermark",
    family=FAMILY,
)
async def high_watermark(s: RuleSession, version: int) -> None:
    """After appends acknowledged with acks=-1 the high watermark is the number of records appended."""
    topic, topic_id, leader = await topic_with(s, batch(3), batch(2))
    part = one_partition(await fetch(s, leader, version, topic, topic_id, {0: 0}))
    expect("high_watermark", part.high_watermark, 5)


@rule(
    "fetch.last-stable-offset-without-transactions",
    api=FETCH,
    versions=ALL,
    source="UnifiedLog.lastStableOffset",
    family=FAMILY,
)
async def last_stable_offset(s: RuleSession, version: int) -> None:
    """Without open transactions the last stable offset equals the high watermark."""
    topic, topic_id, leader = await topic_with(s, batch(3))
    part = one_partition(await fetch(s, leader, version, topic, topic_id, {0: 0}))
    expect("last_stable_offset", part.last_stable_offset, part.high_watermark)
    expect("high_watermark", part.high_watermark, 3)


@rule(
    "fetch.log-start-offset-of-a-new-log",
    api=FETCH,
    versions=(5, 18),
    source="ReplicaManager.readFromLocalLog LogReadResult.leaderLogStartOffset",
    family=FAMILY,
)
async def log_start_offset(s: RuleSession, version: int) -> None:
    """From v5 a partition answer carries the log start offset, 0 for a log nothing was deleted from."""
    topic, topic_id, leader = await topic_with(s, batch(3))
    part = one_partition(await fetch(s, leader, version, topic, topic_id, {0: 0}))
    expect("log_start_offset", part.log_start_offset, 0)


@rule(
    "fetch.returns-records-from-the-offset",
    api=FETCH,
    versions=ALL,
    source="LocalLog.read",
    family=FAMILY,
)
async def records_from_offset(s: RuleSession, version: int) -> None:
    """A Fetch from the base offset of the second batch returns that batch and the ones after, not
    the batches before."""
    topic, topic_id, leader = await topic_with(s, batch(2), batch(3))
    part = one_partition(await fetch(s, leader, version, topic, topic_id, {0: 2}))
    expect("offsets", offsets_of(part), [2, 3, 4])


@rule(
    "fetch.mid-batch-returns-the-whole-batch",
    api=FETCH,
    versions=ALL,
    source="LogSegment.read translateOffset",
    family=FAMILY,
)
async def mid_batch(s: RuleSession, version: int) -> None:
    """A Fetch from an offset inside a batch returns the whole batch from its base offset (the
    consumer skips the records before its offset)."""
    topic, topic_id, leader = await topic_with(s, batch(4))
    part = one_partition(await fetch(s, leader, version, topic, topic_id, {0: 2}))
    expect("offsets", offsets_of(part), [0, 1, 2, 3])


@rule(
    "fetch.preferred-read-replica-none",
    api=FETCH,
    versions=(11, 18),
    source="ReplicaManager.findPreferredReadReplica replicaSelectorPlugin",
    family=FAMILY,
)
async def preferred_read_replica(s: RuleSession, version: int) -> None:
    """Without a replica selector configured (the default) the preferred read replica is -1."""
    topic, topic_id, leader = await topic_with(s, batch(1))
    part = one_partition(await fetch(s, leader, version, topic, topic_id, {0: 0}))
    expect("preferred_read_replica", part.preferred_read_replica, -1)


@rule(
    "fetch.read-uncommitted-aborted-transactions-null",
    api=FETCH,
    versions=ALL,
    source="KafkaApis.handleFetchRequest setAbortedTransactions",
    family=FAMILY,
)
async def aborted_null(s: RuleSession, version: int) -> None:
    """A READ_UNCOMMITTED fetch carries a null aborted transactions list."""
    topic, topic_id, leader = await topic_with(s, batch(1))
    part = one_partition(await fetch(s, leader, version, topic, topic_id, {0: 0}))
    expect("aborted_transactions", part.aborted_transactions, None)


@rule(
    "fetch.read-committed-aborted-transactions-empty",
    api=FETCH,
    versions=ALL,
    source="LocalLog.addAbortedTransactions",
    family=FAMILY,
)
async def aborted_empty(s: RuleSession, version: int) -> None:
    """A READ_COMMITTED fetch over records no aborted transaction touches carries an empty (not null)
    aborted transactions list and the same records as READ_UNCOMMITTED."""
    topic, topic_id, leader = await topic_with(s, batch(3))
    part = one_partition(await fetch(s, leader, version, topic, topic_id, {0: 0}, isolation_level=1))
    expect_error("error_code", part.error_code, Errors.NONE)
    expect("aborted_transactions", part.aborted_transactions, [])
    expect("offsets", offsets_of(part), [0, 1, 2])


@rule(
    "fetch.negative-partition-max-bytes-is-a-partition-error",
    api=FETCH,
    versions=ALL,
    source="ReplicaManager.readFromLocalLog LogSegment.read IllegalArgumentException",
    family=FAMILY,
)
async def negative_partition_max_bytes(s: RuleSession, version: int) -> None:
    """A negative partition_max_bytes makes the read fail for that partition: UNKNOWN_SERVER_ERROR with
    high watermark -1, the request answered and the connection kept."""
    topic, topic_id, leader = await topic_with(s, batch(2))
    body = await fetch(s, leader, version, topic, topic_id, {0: 0}, partition_max_bytes=-5)
    part = one_partition(body)
    expect_error("error_code", part.error_code, Errors.UNKNOWN_SERVER_ERROR)
    expect("high_watermark", part.high_watermark, -1)
    after = one_partition(await fetch(s, leader, version, topic, topic_id, {0: 0}))
    expect_error("error_code (next fetch, same connection)", after.error_code, Errors.NONE)
