"""Rules of the Produce request itself: acks, unknown topics and partitions, request-wide failures,
topic ids (v13), idempotent producers' sequences and epochs, and
min.insync.replicas. What the log validator decides about the records is in rules_records.py."""

from __future__ import annotations

import asyncio
import uuid

from kconform.codecs import CodecError
from kconform.codecs.errors import Errors
from kconform.codecs.messages import ApiVersionsRequest, InitProducerIdRequest, ProduceRequest
from kconform.codecs.records import iter_batches

from ..client.raw import UnexpectedReply
from .catalogue import RuleFailed, rule
from .requests import (
    LATEST,
    batch,
    fetch_request,
    list_offsets_request,
    produce_request,
)
from .session import RuleSession, SetupFailed, expect, expect_error

PRODUCE, FETCH, LIST_OFFSETS, API_VERSIONS, INIT_PRODUCER_ID = 0, 1, 2, 18, 22
_CLOSE_WAIT_S = 5.0


# ---- helpers shared with rules_records ---------------------------------------------------------------


async def new_topic(s: RuleSession, partitions: int = 1, **configs: str):
    """A topic of the test's own whose partitions' leaders already serve them: in a cluster a new
    partition's leader may answer UNKNOWN_TOPIC_OR_PARTITION for a moment after the metadata shows it."""
    topic, topic_id = await s.create_topic(partitions, **configs)
    version = s.versions[LIST_OFFSETS][1]
    for partition in range(partitions):
        client = await s.leader(topic, partition)
        request = list_offsets_request(topic, LATEST, partition=partition)
        for _ in range(50):
            body = await s.call(client, LIST_OFFSETS, version, request)
            if body.topics[0].partitions[0].error_code == Errors.NONE:
                break
            await asyncio.sleep(0.1)
        else:
            raise SetupFailed(f"{topic}-{partition}: its leader does not serve it")
    return topic, topic_id


async def produce_one(s: RuleSession, client, version: int, topic: str, topic_id, records, **kw):
    """The one partition response of a one-partition Produce."""
    body = await s.call(client, PRODUCE, version, produce_request(topic, records, topic_id=topic_id, **kw))
    return body.responses[0].partition_responses[0]


async def _fetch_partition(s: RuleSession, client, topic: str, topic_id, offset: int, partition: int = 0):
    """One partition of a consumer Fetch at the newest version the target serves (below v13 when the
    topic's id is not known: FetchRequest.Builder's rule, fetch by name). The short wait lets a broker
    that answers only once data is read have its say; Kafka answers at once when data is there."""
    version = s.read_back_version(topic_id)
    request = fetch_request(topic, topic_id, {partition: offset}, max_wait_ms=300)
    body = await s.call(client, FETCH, version, request)
    parts = [p for t in body.responses for p in t.partitions if p.partition_index == partition]
    if not parts:
        raise RuleFailed("fetch responses", f"partition {partition}", "none")
    expect_error("fetch error_code", parts[0].error_code, Errors.NONE)
    return parts[0]


async def latest_offset(s: RuleSession, client, topic: str, topic_id, partition: int = 0) -> int:
    """The partition's high watermark, as a Fetch answers it: after acks=-1 Produces, the offset the
    next record gets."""
    return (await _fetch_partition(s, client, topic, topic_id, 0, partition)).high_watermark


async def fetch_batches(s: RuleSession, client, topic: str, topic_id, offset: int = 0) -> list:
    """The batches a consumer reads from ``offset`` (partition 0)."""
    raw = await fetch_raw(s, client, topic, topic_id, offset)
    try:
        return list(iter_batches(raw))
    except CodecError as exc:  # what the broker wrote does not read back (a CRC that no longer holds)
        raise RuleFailed("fetched batches", "valid batches", str(exc)) from None


async def fetch_raw(s: RuleSession, client, topic: str, topic_id, offset: int = 0) -> bytes:
    """The record bytes a consumer reads from ``offset`` (partition 0), as the broker sent them."""
    data = (await _fetch_partition(s, client, topic, topic_id, offset)).records
    return data.read() if hasattr(data, "read") else bytes(data or b"")


async def init_producer_id(s: RuleSession) -> tuple[int, int]:
    """A fresh idempotent producer id and epoch (InitProducerId without a transactional id)."""
    client = await s.raw()
    version = s.versions[INIT_PRODUCER_ID][1]
    body = await s.call(
        client,
        INIT_PRODUCER_ID,
        version,
        InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000),
    )
    if body.error_code != Errors.NONE:
        raise SetupFailed(f"InitProducerId answered error {body.error_code}")
    return body.producer_id, body.producer_epoch


def _by_id(version: int) -> bool:
    return version >= 13  # Produce v13 names topics by id only (KIP-516)


# ---- acks --------------------------------------------------------------------------------------------


@rule(
    "produce.acks-outside-minus-one-zero-one",
    api=PRODUCE,
    versions=(3, 13),
    family="produce",
    source="ReplicaManager.appendRecords isValidRequiredAcks",
)
async def invalid_acks(s: RuleSession, version: int) -> None:
    """A Produce with acks other than -1, 0 or 1 is refused with INVALID_REQUIRED_ACKS, base offset -1,
    and appends nothing."""
    topic, topic_id = await new_topic(s)
    leader = await s.leader(topic)
    for acks in (2, -2, 5):
        part = await produce_one(s, leader, version, topic, topic_id, batch(), acks=acks)
        expect_error(f"error_code (acks={acks})", part.error_code, Errors.INVALID_REQUIRED_ACKS)
        expect(f"base_offset (acks={acks})", part.base_offset, -1)
    expect("log end offset", await latest_offset(s, leader, topic, topic_id), 0)


@rule(
    "produce.invalid-acks-judged-after-unknown-topic",
    api=PRODUCE,
    versions=(3, 12),
    family="produce",
    source="KafkaApis.handleProduceRequest metadataCache.contains before appendRecords",
)
async def invalid_acks_after_unknown_topic(s: RuleSession, version: int) -> None:
    """An unknown topic is answered UNKNOWN_TOPIC_OR_PARTITION even when acks is invalid: the topic is
    checked before the acks."""
    await new_topic(s)
    client = await s.raw()
    part = await produce_one(s, client, version, s.name("absent"), None, batch(), acks=2)
    expect_error("error_code", part.error_code, Errors.UNKNOWN_TOPIC_OR_PARTITION)


@rule(
    "produce.invalid-acks-judged-after-record-checks",
    api=PRODUCE,
    versions=(3, 13),
    family="produce",
    source="KafkaApis.handleProduceRequest ProduceRequest.validateRecords before appendRecords",
)
async def invalid_acks_after_records(s: RuleSession, version: int) -> None:
    """Two batches for one partition are answered INVALID_RECORD even when acks is invalid: the v3+
    record checks come before the acks check."""
    topic, topic_id = await new_topic(s)
    leader = await s.leader(topic)
    part = await produce_one(s, leader, version, topic, topic_id, batch() + batch(), acks=2)
    expect_error("error_code", part.error_code, Errors.INVALID_RECORD)


@rule(
    "produce.acks-one-answers-with-offsets",
    api=PRODUCE,
    versions=(3, 13),
    family="produce",
    source="ReplicaManager.appendRecords appendToLocalLog",
)
async def acks_one(s: RuleSession, version: int) -> None:
    """acks=1 is answered once the leader has appended: NONE and the batch's first offset, counting
    on from the previous batch."""
    topic, topic_id = await new_topic(s)
    leader = await s.leader(topic)
    first = await produce_one(s, leader, version, topic, topic_id, batch(3), acks=1)
    second = await produce_one(s, leader, version, topic, topic_id, batch(2), acks=1)
    expect("first (error_code, base_offset)", (first.error_code, first.base_offset), (0, 0))
    expect("second (error_code, base_offset)", (second.error_code, second.base_offset), (0, 3))
    expect("log end offset", await latest_offset(s, leader, topic, topic_id), 5)


@rule(
    "produce.acks-zero-sends-no-response",
    api=PRODUCE,
    versions=(3, 13),
    family="produce",
    source="KafkaApis.handleProduceRequest sendResponseCallback sendNoOpResponseExemptThrottle",
)
async def acks_zero_no_response(s: RuleSession, version: int) -> None:
    """A successful acks=0 Produce gets no response, keeps the connection open and appends the batch."""
    topic, topic_id = await new_topic(s)
    leader = await s.leader(topic)
    request = produce_request(topic, batch(), topic_id=topic_id, acks=0)
    await leader.send(PRODUCE, version, request, expect_response=False)
    # the next answer on the connection is the ApiVersions one, not a Produce response
    try:
        body = await s.call(leader, API_VERSIONS, 0, ApiVersionsRequest())
    except UnexpectedReply as exc:  # a frame for the Produce came first
        raise RuleFailed("Produce acks=0 response", "none", str(exc)) from None
    expect_error("ApiVersions error_code after acks=0", body.error_code, Errors.NONE)
    expect("log end offset", await latest_offset(s, leader, topic, topic_id), 3)


@rule(
    "produce.acks-zero-error-closes-connection",
    api=PRODUCE,
    versions=(3, 12),
    family="produce",
    source="KafkaApis.handleProduceRequest sendResponseCallback closeConnection",
)
async def acks_zero_error_closes(s: RuleSession, version: int) -> None:
    """An acks=0 Produce that fails for any partition (here an unknown topic) closes the connection, so
    that the producer learns of the failure by refreshing its metadata."""
    await new_topic(s)
    client = await s.raw()
    request = produce_request(s.name("absent"), batch(), acks=0)
    await client.send(PRODUCE, version, request, expect_response=False)
    reply = await client.wait_closed(_CLOSE_WAIT_S)
    expect("fate", reply.fate.value, "closed")


# ---- topics and partitions ----------------------------------------------------------------------------


@rule(
    "produce.unknown-topic",
    api=PRODUCE,
    versions=(3, 12),
    family="produce",
    source="KafkaApis.handleProduceRequest metadataCache.contains",
)
async def unknown_topic(s: RuleSession, version: int) -> None:
    """A Produce to a topic the cluster does not have is answered UNKNOWN_TOPIC_OR_PARTITION, base
    offset -1."""
    client = await s.raw()
    part = await produce_one(s, client, version, s.name("absent"), None, batch())
    expect_error("error_code", part.error_code, Errors.UNKNOWN_TOPIC_OR_PARTITION)
    expect("base_offset", part.base_offset, -1)


@rule(
    "produce.partition-beyond-topic",
    api=PRODUCE,
    versions=(3, 13),
    family="produce",
    source="KafkaApis.handleProduceRequest metadataCache.contains",
)
async def partition_beyond_topic(s: RuleSession, version: int) -> None:
    """A Produce to a partition index the topic does not have (equal to its partition count) is
    answered UNKNOWN_TOPIC_OR_PARTITION."""
    topic, topic_id = await new_topic(s, partitions=2)
    client = await s.leader(topic)
    part = await produce_one(s, client, version, topic, topic_id, batch(), partition=2)
    expect_error("error_code", part.error_code, Errors.UNKNOWN_TOPIC_OR_PARTITION)


@rule(
    "produce.negative-partition",
    api=PRODUCE,
    versions=(3, 13),
    family="produce",
    source="KafkaApis.handleProduceRequest metadataCache.contains",
)
async def negative_partition(s: RuleSession, version: int) -> None:
    """A Produce to partition -1 is answered UNKNOWN_TOPIC_OR_PARTITION."""
    topic, topic_id = await new_topic(s)
    client = await s.leader(topic)
    part = await produce_one(s, client, version, topic, topic_id, batch(), partition=-1)
    expect_error("error_code", part.error_code, Errors.UNKNOWN_TOPIC_OR_PARTITION)


@rule(
    "produce.partition-errors-stay-with-their-partition",
    api=PRODUCE,
    versions=(3, 13),
    family="produce",
    source="KafkaApis.handleProduceRequest nonExistingTopicResponses",
)
async def partition_errors_are_per_partition(s: RuleSession, version: int) -> None:
    """In one Produce, a partition the topic lacks fails alone: the other partition is appended and
    answered NONE."""
    topic, topic_id = await new_topic(s)
    leader = await s.leader(topic)
    request = produce_request(topic, batch(), topic_id=topic_id)
    request.topic_data[0].partition_data.append(ProduceRequest.PartitionProduceData(index=5, records=batch()))
    body = await s.call(leader, PRODUCE, version, request)
    got = {p.index: p.error_code for t in body.responses for p in t.partition_responses}
    expect("error_code by partition", got, {0: Errors.NONE, 5: Errors.UNKNOWN_TOPIC_OR_PARTITION})
    expect("log end offset", await latest_offset(s, leader, topic, topic_id), 3)


@rule(
    "produce.unknown-topic-id",
    api=PRODUCE,
    versions=(13, 13),
    family="produce",
    since="4.1",
    source="KafkaApis.handleProduceRequest metadataCache.getTopicName",
)
async def unknown_topic_id(s: RuleSession, version: int) -> None:
    """A v13 Produce naming a topic id the cluster does not know is answered UNKNOWN_TOPIC_ID, base
    offset -1."""
    await new_topic(s)
    client = await s.raw()
    part = await produce_one(s, client, version, "", uuid.uuid4(), batch())
    expect_error("error_code", part.error_code, Errors.UNKNOWN_TOPIC_ID)
    expect("base_offset", part.base_offset, -1)


@rule(
    "produce.answers-topic-by-id",
    api=PRODUCE,
    versions=(13, 13),
    family="produce",
    since="4.1",
    source="ProduceResponse.toData",
)
async def answers_topic_by_id(s: RuleSession, version: int) -> None:
    """A v13 Produce is answered with the topic's id, and the records land in the partition the id
    names."""
    topic, topic_id = await new_topic(s)
    leader = await s.leader(topic)
    body = await s.call(leader, PRODUCE, version, produce_request(topic, batch(), topic_id=topic_id))
    expect("responses[0].topic_id", body.responses[0].topic_id, topic_id)
    expect_error("error_code", body.responses[0].partition_responses[0].error_code, Errors.NONE)
    expect("log end offset", await latest_offset(s, leader, topic, topic_id), 3)


# ---- request-wide failures -------------------------------------------------------------------------------


@rule(
    "produce.bad-first-batch-size-fails-every-partition",
    api=PRODUCE,
    versions=(3, 13),
    family="produce",
    source="KafkaApis.handleProduceRequest RequestUtils.hasTransactionalRecords",
)
async def bad_first_batch_fails_request(s: RuleSession, version: int) -> None:
    """A partition whose first batch declares a size below the record overhead makes the whole request
    fail: every partition is answered CORRUPT_MESSAGE and nothing is appended."""
    topic, topic_id = await new_topic(s, partitions=2)
    leader = await s.leader(topic)
    request = produce_request(topic, batch(), topic_id=topic_id, acks=1)
    bad = bytes(8) + (5).to_bytes(4, "big")
    request.topic_data[0].partition_data.append(ProduceRequest.PartitionProduceData(index=1, records=bad))
    body = await s.call(leader, PRODUCE, version, request)
    got = sorted((p.index, p.error_code) for t in body.responses for p in t.partition_responses)
    expect("error_code by partition", got, [(0, Errors.CORRUPT_MESSAGE), (1, Errors.CORRUPT_MESSAGE)])
    expect("log end offset", await latest_offset(s, leader, topic, topic_id), 0)


# ---- min.insync.replicas ---------------------------------------------------------------------------------


@rule(
    "produce.min-insync-replicas-capped-by-replicas",
    api=PRODUCE,
    versions=(3, 13),
    family="produce",
    since="3.7",
    source="Partition.appendRecordsToLeader effectiveMinIsr",
)
async def min_insync_capped(s: RuleSession, version: int) -> None:
    """acks=-1 counts min.insync.replicas only up to the partition's replication factor: a topic whose
    min.insync.replicas exceeds its replicas still takes acks=-1 with every replica in sync."""
    topic, topic_id = await new_topic(s, **{"min.insync.replicas": "4"})
    leader = await s.leader(topic)
    part = await produce_one(s, leader, version, topic, topic_id, batch(), acks=-1)
    expect("(error_code, base_offset)", (part.error_code, part.base_offset), (Errors.NONE, 0))


# ---- what an answer carries ----------------------------------------------------------------------------


@rule(
    "produce.answers-log-start-offset",
    api=PRODUCE,
    versions=(5, 13),
    family="produce",
    source="ReplicaManager.appendToLocalLog LogAppendInfo.logStartOffset",
)
async def answers_log_start_offset(s: RuleSession, version: int) -> None:
    """From v5 a successful Produce answer carries the partition's log start offset (0 for a new
    topic)."""
    topic, topic_id = await new_topic(s)
    leader = await s.leader(topic)
    part = await produce_one(s, leader, version, topic, topic_id, batch())
    expect("(error_code, log_start_offset)", (part.error_code, part.log_start_offset), (Errors.NONE, 0))


@rule(
    "produce.does-not-create-topics",
    api=PRODUCE,
    versions=(3, 12),
    family="produce",
    source="KafkaApis.handleProduceRequest nonExistingTopicResponses",
)
async def does_not_create_topics(s: RuleSession, version: int) -> None:
    """A Produce to an unknown topic does not create it (only Metadata may, when asked to): the same
    Produce again is refused alike."""
    client = await s.raw()
    name = s.name("absent")
    for attempt in ("first", "second"):
        part = await produce_one(s, client, version, name, None, batch())
        expect_error(f"{attempt} error_code", part.error_code, Errors.UNKNOWN_TOPIC_OR_PARTITION)


@rule(
    "produce.whole-request-failure-answers-topics-by-id",
    api=PRODUCE,
    versions=(13, 13),
    family="produce",
    since="4.1",
    source="ProduceRequest.getErrorResponse",
)
async def whole_request_failure_by_id(s: RuleSession, version: int) -> None:
    """At v13, a request failed as a whole (a first batch too short to be one) is answered under the
    topic id the request named, every partition CORRUPT_MESSAGE."""
    topic, topic_id = await new_topic(s)
    leader = await s.leader(topic)
    bad = bytes(8) + (5).to_bytes(4, "big")
    body = await s.call(leader, PRODUCE, version, produce_request(topic, bad, topic_id=topic_id))
    expect("responses[0].topic_id", body.responses[0].topic_id, topic_id)
    expect_error("error_code", body.responses[0].partition_responses[0].error_code, Errors.CORRUPT_MESSAGE)
