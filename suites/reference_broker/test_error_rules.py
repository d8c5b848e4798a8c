"""Kafka's error rules, one test per rule, against a reference broker node in this process.

Each test names where Apache Kafka 4.0 makes the decision (class and method in the Kafka source); the
broker must give the same error code in the same place of the response, or close the connection
where Kafka closes it."""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass

import pytest

from kconform.codecs.compression import Compression
from kconform.codecs.errors import Errors
from kconform.codecs.messages import (
    ApiVersionsRequest,
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteTopicsRequest,
    FetchRequest,
    InitProducerIdRequest,
    ListOffsetsRequest,
    MetadataRequest,
    ProduceRequest,
)
from kconform.codecs.records import Record, encode_batch, iter_batches
from kconform.codecs.releases import kafka_release
from kconform.reference_broker.node import BrokerNode

from ..support.rawclient import RawClient

PRODUCE, FETCH, LIST_OFFSETS, METADATA = 0, 1, 2, 3
API_VERSIONS, CREATE_TOPICS, DELETE_TOPICS, INIT_PRODUCER_ID, CREATE_PARTITIONS = 18, 19, 20, 22, 37
PRODUCE_V, FETCH_V, LIST_OFFSETS_V, METADATA_V = 9, 16, 8, 12
EARLIEST, LATEST, MAX_TIMESTAMP = -2, -1, -3
TOPIC = "orders"


# ---- a broker with helpers ----------------------------------------------------------------------


@dataclass
class Broker:
    node: BrokerNode
    host: str
    port: int
    client: RawClient

    async def connect(self) -> RawClient:
        return await RawClient.connect(self.host, self.port)

    async def create_topic(self, name: str = TOPIC, partitions: int = 1, **configs: str) -> uuid.UUID:
        topic = CreateTopicsRequest.CreatableTopic(
            name=name,
            num_partitions=partitions,
            replication_factor=1,
            configs=[CreateTopicsRequest.CreatableTopicConfig(name=k, value=v) for k, v in configs.items()],
        )
        body = await self.client.call(CREATE_TOPICS, 7, CreateTopicsRequest(topics=[topic], timeout_ms=5000))
        result = body.topics[0]
        assert result.error_code == Errors.NONE, result
        return result.topic_id

    async def produce(
        self,
        records: bytes | None,
        *,
        topic: str = TOPIC,
        partition: int = 0,
        acks: int = -1,
        version: int = PRODUCE_V,
        client: RawClient | None = None,
    ):
        """The one partition response of a one-partition Produce request."""
        body = await (client or self.client).call(
            PRODUCE, version, produce_request(topic, partition, records, acks)
        )
        return body.responses[0].partition_responses[0]

    async def fetch(self, topic_id: uuid.UUID, offsets: dict[int, int], **kwargs):
        """A sessionless Fetch at FETCH_V (topics by id) of ``{partition: offset}``; the whole body."""
        version = kwargs.pop("version", FETCH_V)
        client = kwargs.pop("client", self.client)
        return await client.call(FETCH, version, fetch_request(topic_id, offsets, **kwargs))

    async def list_offsets(self, timestamp: int, *, partition: int = 0, version: int = LIST_OFFSETS_V):
        request = ListOffsetsRequest(
            replica_id=-1,
            topics=[
                ListOffsetsRequest.ListOffsetsTopic(
                    name=TOPIC,
                    partitions=[
                        ListOffsetsRequest.ListOffsetsPartition(
                            partition_index=partition, timestamp=timestamp
                        )
                    ],
                )
            ],
        )
        body = await self.client.call(LIST_OFFSETS, version, request)
        return body.topics[0].partitions[0]

    async def metadata(self, *names: str, auto_create: bool = True):
        request = MetadataRequest(
            topics=[MetadataRequest.MetadataRequestTopic(name=n) for n in names],
            allow_auto_topic_creation=auto_create,
        )
        return await self.client.call(METADATA, METADATA_V, request)

    async def init_producer_id(self) -> tuple[int, int]:
        body = await self.client.call(
            INIT_PRODUCER_ID, 4, InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000)
        )
        assert body.error_code == Errors.NONE
        return body.producer_id, body.producer_epoch


def run(tmp_path, scenario, *, kafka_version: str | None = None, **overrides: str):
    """Start a node on a free loopback port (answering as ``kafka_version``, default the newest release
    the codecs cover), run ``scenario(broker)`` with one connection open, stop."""

    async def main():
        props = {"node.id": "1", "log.dirs": str(tmp_path / "data")}
        props.update(overrides)
        release = kafka_release(kafka_version) if kafka_version else None
        node = BrokerNode.from_config_file(None, props, kafka_release=release)
        host, port = await node.start("127.0.0.1", 0)
        client = await RawClient.connect(host, port)
        try:
            return await scenario(Broker(node, host, port, client))
        finally:
            await client.close()
            await node.stop()

    return asyncio.run(asyncio.wait_for(main(), 60))


def produce_request(topic: str, partition: int, records: bytes | None, acks: int = -1) -> ProduceRequest:
    return ProduceRequest(
        transactional_id=None,
        acks=acks,
        timeout_ms=5000,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name=topic,
                partition_data=[ProduceRequest.PartitionProduceData(index=partition, records=records)],
            )
        ],
    )


def fetch_request(
    topic_id: uuid.UUID,
    offsets: dict[int, int],
    *,
    max_wait_ms: int = 0,
    min_bytes: int = 1,
    max_bytes: int = 1 << 20,
    partition_max_bytes: int = 1 << 20,
    session_id: int = 0,
    session_epoch: int = -1,
    leader_epoch: int = -1,
) -> FetchRequest:
    partitions = [
        FetchRequest.FetchPartition(
            partition=index,
            current_leader_epoch=leader_epoch,
            fetch_offset=offset,
            log_start_offset=-1,
            partition_max_bytes=partition_max_bytes,
        )
        for index, offset in offsets.items()
    ]
    return FetchRequest(
        max_wait_ms=max_wait_ms,
        min_bytes=min_bytes,
        max_bytes=max_bytes,
        session_id=session_id,
        session_epoch=session_epoch,
        topics=[FetchRequest.FetchTopic(topic_id=topic_id, partitions=partitions)] if partitions else [],
    )


def now_ms() -> int:
    return int(time.time() * 1000)


def batch(
    count: int = 3, *, timestamps: list[int] | None = None, key: bytes | None = b"k", size: int = 10, **kwargs
) -> bytes:
    """One magic 2 batch as a producer sends it (base offset 0)."""
    stamps = timestamps if timestamps is not None else [now_ms()] * count
    return encode_batch(
        [Record(i, ts, key, bytes([97 + i % 26]) * size) for i, ts in enumerate(stamps)], **kwargs
    )


def fetched_records(partition_data) -> list[Record]:
    data = partition_data.records
    raw = data.read() if hasattr(data, "read") else bytes(data or b"")
    return [record for b in iter_batches(raw) for record in b.records]


def partitions_of(fetch_body) -> dict[int, object]:
    return {p.partition_index: p for t in fetch_body.responses for p in t.partitions}


# ---- Produce --------------------------------------------------------------------------------------


def test_produce_acks_outside_minus_one_zero_one_is_invalid_required_acks(tmp_path):
    # ReplicaManager.appendRecords: !isValidRequiredAcks -> sendInvalidRequiredAcksResponse, nothing appended.
    async def scenario(broker: Broker):
        await broker.create_topic()
        answers = [await broker.produce(batch(), acks=acks) for acks in (2, -2, 5)]
        latest = await broker.list_offsets(LATEST)
        return answers, latest

    answers, latest = run(tmp_path, scenario)
    assert [a.error_code for a in answers] == [Errors.INVALID_REQUIRED_ACKS] * 3
    assert all(a.base_offset == -1 for a in answers)
    assert latest.offset == 0


def test_produce_invalid_acks_is_judged_after_topic_and_record_checks(tmp_path):
    # KafkaApis.handleProduceRequest answers unknown partitions (metadataCache.contains) and
    # ProduceRequest.validateRecords failures itself; only what is left reaches
    # ReplicaManager.appendRecords, where the acks check is.
    async def scenario(broker: Broker):
        await broker.create_topic()
        unknown = await broker.produce(batch(), topic="nowhere", acks=2)
        two_batches = await broker.produce(batch() + batch(), acks=2)
        return unknown, two_batches

    unknown, two_batches = run(tmp_path, scenario)
    assert unknown.error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert two_batches.error_code == Errors.INVALID_RECORD


def test_produce_to_unknown_topic_or_partition(tmp_path):
    # KafkaApis.handleProduceRequest: !metadataCache.contains(topicPartition) -> UNKNOWN_TOPIC_OR_PARTITION.
    async def scenario(broker: Broker):
        await broker.create_topic(partitions=2)
        return [
            await broker.produce(batch(), topic="nowhere"),
            await broker.produce(batch(), partition=2),
            await broker.produce(batch(), partition=-1),
        ]

    answers = run(tmp_path, scenario)
    assert [a.error_code for a in answers] == [Errors.UNKNOWN_TOPIC_OR_PARTITION] * 3


def test_produce_corrupt_crc_is_corrupt_message(tmp_path):
    # UnifiedLog.analyzeAndValidateRecords: batch.ensureValid() -> CorruptRecordException.
    async def scenario(broker: Broker):
        await broker.create_topic()
        corrupt = bytearray(batch())
        corrupt[-1] ^= 0xFF  # a value byte: covered by the CRC-32C, which now fails
        answer = await broker.produce(bytes(corrupt))
        return answer, await broker.list_offsets(LATEST)

    answer, latest = run(tmp_path, scenario)
    assert answer.error_code == Errors.CORRUPT_MESSAGE
    assert latest.offset == 0


def test_produce_batch_over_max_message_bytes_is_message_too_large(tmp_path):
    # UnifiedLog.analyzeAndValidateRecords: batchSize > config.maxMessageSize -> RecordTooLargeException.
    async def scenario(broker: Broker):
        await broker.create_topic(**{"max.message.bytes": "1000"})
        small = await broker.produce(batch(1, size=100))
        large = await broker.produce(batch(4, size=400))
        return small, large

    small, large = run(tmp_path, scenario)
    assert small.error_code == Errors.NONE
    assert large.error_code == Errors.MESSAGE_TOO_LARGE


@pytest.mark.parametrize("magic", [0, 1])
def test_produce_legacy_magic_at_v3_plus_is_invalid_record(tmp_path, magic):
    # ProduceRequest.validateRecords (v3+): only magic 2 batches.
    async def scenario(broker: Broker):
        await broker.create_topic()
        stamp = -1 if magic == 0 else now_ms()
        legacy = encode_batch([Record(0, stamp, b"k", b"v")], magic=magic)
        return [await broker.produce(legacy, version=v) for v in (3, PRODUCE_V)]

    answers = run(tmp_path, scenario)
    assert [a.error_code for a in answers] == [Errors.INVALID_RECORD] * 2


def test_produce_two_batches_at_v3_plus_is_invalid_record(tmp_path):
    # ProduceRequest.validateRecords (v3+): exactly one record batch per partition.
    async def scenario(broker: Broker):
        await broker.create_topic()
        answer = await broker.produce(batch(2) + batch(2))
        return answer, await broker.list_offsets(LATEST)

    answer, latest = run(tmp_path, scenario)
    assert answer.error_code == Errors.INVALID_RECORD
    assert latest.offset == 0


def test_produce_zstd_below_v7_is_unsupported_compression_type(tmp_path):
    # ProduceRequest.validateRecords: ZStandard needs Produce v7 (KIP-110).
    async def scenario(broker: Broker):
        await broker.create_topic()
        zstd = batch(compression=Compression.ZSTD)
        return await broker.produce(zstd, version=6), await broker.produce(zstd, version=7)

    v6, v7 = run(tmp_path, scenario)
    assert v6.error_code == Errors.UNSUPPORTED_COMPRESSION_TYPE
    assert v7.error_code == Errors.NONE and v7.base_offset == 0


def test_produce_create_time_too_far_ahead_is_invalid_timestamp_with_record_errors(tmp_path):
    # LogValidator.validateTimestamp: CreateTime beyond now + message.timestamp.after.max.ms is a
    # record error; processRecordErrors throws RecordValidationException(InvalidTimestampException),
    # reported with record_errors (Produce v8+) and the exception's message (ReplicaManager
    # appendToLocalLog, hasCustomErrorMessage).
    async def scenario(broker: Broker):
        await broker.create_topic(**{"message.timestamp.after.max.ms": "60000"})
        now = now_ms()
        answer = await broker.produce(batch(timestamps=[now, now + 3_600_000, now, now + 7_200_000]))
        return answer, await broker.list_offsets(LATEST)

    answer, latest = run(tmp_path, scenario)
    assert answer.error_code == Errors.INVALID_TIMESTAMP
    assert [e.batch_index for e in answer.record_errors] == [1, 3]
    assert all(e.batch_index_error_message.startswith("Timestamp ") for e in answer.record_errors)
    assert answer.error_message == "One or more records have been rejected due to invalid timestamp"
    assert latest.offset == 0  # the whole batch is refused


def test_produce_null_key_to_compacted_topic_is_invalid_record_with_record_errors(tmp_path):
    # LogValidator.validateKey: a compacted topic refuses records without a key (record error
    # INVALID_RECORD); processRecordErrors throws RecordValidationException(InvalidRecordException).
    async def scenario(broker: Broker):
        await broker.create_topic(**{"cleanup.policy": "compact"})
        now = now_ms()
        records = [Record(0, now, b"a", b"1"), Record(1, now, None, b"2"), Record(2, now, b"c", b"3")]
        return await broker.produce(encode_batch(records))

    answer = run(tmp_path, scenario)
    assert answer.error_code == Errors.INVALID_RECORD
    assert [e.batch_index for e in answer.record_errors] == [1]
    assert (
        "Compacted topic cannot accept message without key"
        in answer.record_errors[0].batch_index_error_message
    )


def test_idempotent_duplicate_batch_gets_the_original_offsets_and_no_new_data(tmp_path):
    # UnifiedLog.append: analyzeAndValidateProducerState finds the duplicate among the producer's
    # last five batches; the response carries its first offset (and, as logAppendTime, the batch's
    # max timestamp from the producer state's BatchMetadata) and nothing is appended.
    async def scenario(broker: Broker):
        await broker.create_topic()
        pid, epoch = await broker.init_producer_id()
        stamp = now_ms() - 1000
        first = batch(3, timestamps=[stamp] * 3, producer_id=pid, producer_epoch=epoch, base_sequence=0)
        second = batch(2, producer_id=pid, producer_epoch=epoch, base_sequence=3)
        answers = [await broker.produce(first), await broker.produce(second), await broker.produce(first)]
        return answers, stamp, await broker.list_offsets(LATEST)

    (one, two, again), stamp, latest = run(tmp_path, scenario)
    assert (one.error_code, one.base_offset) == (Errors.NONE, 0)
    assert (two.error_code, two.base_offset) == (Errors.NONE, 3)
    assert (again.error_code, again.base_offset) == (Errors.NONE, 0)
    assert again.log_append_time_ms == stamp
    assert latest.offset == 5


def test_idempotent_sequence_gap_is_out_of_order_sequence_number(tmp_path):
    # ProducerAppendInfo.checkSequence: same epoch, firstSeq != lastSeq + 1 -> OutOfOrderSequenceException.
    async def scenario(broker: Broker):
        await broker.create_topic()
        pid, epoch = await broker.init_producer_id()
        ok = await broker.produce(batch(2, producer_id=pid, producer_epoch=epoch, base_sequence=0))
        gap = await broker.produce(batch(2, producer_id=pid, producer_epoch=epoch, base_sequence=5))
        return ok, gap, await broker.list_offsets(LATEST)

    ok, gap, latest = run(tmp_path, scenario)
    assert ok.error_code == Errors.NONE
    assert gap.error_code == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert latest.offset == 2


def test_idempotent_stale_producer_epoch_is_invalid_producer_epoch(tmp_path):
    # ProducerAppendInfo.checkProducerEpoch: an epoch below the last one seen, from a client, is
    # InvalidProducerEpochException (since 2.7, in place of ProducerFenced).
    async def scenario(broker: Broker):
        await broker.create_topic()
        pid, _ = await broker.init_producer_id()
        newer = await broker.produce(batch(2, producer_id=pid, producer_epoch=3, base_sequence=0))
        stale = await broker.produce(batch(2, producer_id=pid, producer_epoch=2, base_sequence=2))
        return newer, stale

    newer, stale = run(tmp_path, scenario)
    assert newer.error_code == Errors.NONE
    assert stale.error_code == Errors.INVALID_PRODUCER_EPOCH


def test_acks_zero_with_an_error_closes_the_connection(tmp_path):
    # KafkaApis.handleProduceRequest, sendResponseCallback: acks=0 and any partition failed ->
    # requestChannel.closeConnection; acks=0 without errors sends nothing and keeps the connection.
    async def scenario(broker: Broker):
        await broker.create_topic()
        quiet = await broker.connect()
        await quiet.send(
            PRODUCE, PRODUCE_V, produce_request(TOPIC, 0, batch(), acks=0), expect_response=False
        )
        after_ok = await quiet.call(API_VERSIONS, 0, ApiVersionsRequest())
        await quiet.close()
        noisy = await broker.connect()
        await noisy.send(
            PRODUCE, PRODUCE_V, produce_request("nowhere", 0, batch(), acks=0), expect_response=False
        )
        fate = await noisy.wait_closed(5)
        await noisy.close()
        return after_ok, fate, await broker.list_offsets(LATEST)

    after_ok, fate, latest = run(tmp_path, scenario)
    assert after_ok.error_code == Errors.NONE
    assert fate.closed
    assert latest.offset == 3  # the good acks=0 produce landed


def test_acks_all_counts_min_insync_replicas_only_up_to_the_replication_factor(tmp_path):
    # Partition.appendRecordsToLeader refuses acks=-1 with NOT_ENOUGH_REPLICAS when the ISR is below
    # effectiveMinIsr = min(min.insync.replicas, replicas) (KAFKA-15583): a one-replica topic with
    # min.insync.replicas=2 takes acks=all, as Kafka 4.0 does.
    async def scenario(broker: Broker):
        await broker.create_topic()
        all_acks = await broker.produce(batch(), acks=-1)
        leader_ack = await broker.produce(batch(), acks=1)
        return all_acks, leader_ack, await broker.list_offsets(LATEST)

    all_acks, leader_ack, latest = run(tmp_path, scenario, **{"min.insync.replicas": "2"})
    assert (all_acks.error_code, all_acks.base_offset) == (Errors.NONE, 0)
    assert (leader_ack.error_code, leader_ack.base_offset) == (Errors.NONE, 3)
    assert latest.offset == 6


def test_corrupt_first_batch_in_any_partition_fails_the_whole_request(tmp_path):
    # KafkaApis.handleProduceRequest starts with RequestUtils.hasTransactionalRecords, which reads the
    # first batch of every partition: a batch size below the record overhead throws
    # CorruptRecordException out of the handler, so KafkaApis.handleError answers every partition
    # with CORRUPT_MESSAGE and appends nothing.
    async def scenario(broker: Broker):
        await broker.create_topic(partitions=2)
        request = ProduceRequest(
            transactional_id=None,
            acks=1,
            timeout_ms=5000,
            topic_data=[
                ProduceRequest.TopicProduceData(
                    name=TOPIC,
                    partition_data=[
                        ProduceRequest.PartitionProduceData(index=0, records=batch()),
                        ProduceRequest.PartitionProduceData(
                            index=1, records=bytes(8) + (5).to_bytes(4, "big")
                        ),
                    ],
                )
            ],
        )
        body = await broker.client.call(PRODUCE, PRODUCE_V, request)
        return body.responses[0].partition_responses, await broker.list_offsets(LATEST)

    answers, latest = run(tmp_path, scenario)
    assert [a.error_code for a in answers] == [Errors.CORRUPT_MESSAGE] * 2
    assert latest.offset == 0


# ---- Fetch ----------------------------------------------------------------------------------------


def test_fetch_past_the_log_end_is_offset_out_of_range(tmp_path):
    # Fetch past the log end: UnifiedLog.read throws OffsetOutOfRangeException and
    # ReplicaManager.readFromLocalLog answers with createLogReadResult(e), which carries
    # UnifiedLog.UnknownOffset (-1) as high watermark and log start offset, and no last stable offset.
    async def scenario(broker: Broker):
        topic_id = await broker.create_topic()
        await broker.produce(batch(3))
        return await broker.fetch(topic_id, {0: 10})

    body = run(tmp_path, scenario)
    data = partitions_of(body)[0]
    assert data.error_code == Errors.OFFSET_OUT_OF_RANGE
    assert (data.high_watermark, data.last_stable_offset, data.log_start_offset) == (-1, -1, -1)
    assert not fetched_records(data)


def test_fetch_by_unknown_topic_id_is_unknown_topic_id(tmp_path):
    # KafkaApis.handleFetchRequest (v13+): a topic id the metadata cache cannot name -> UNKNOWN_TOPIC_ID;
    # before v13 an unknown name is UNKNOWN_TOPIC_OR_PARTITION.
    async def scenario(broker: Broker):
        await broker.create_topic()
        by_id = await broker.fetch(uuid.uuid4(), {0: 0}, version=13)
        by_name = await broker.client.call(
            FETCH,
            12,
            FetchRequest(
                max_wait_ms=0,
                min_bytes=1,
                max_bytes=1 << 20,
                topics=[
                    FetchRequest.FetchTopic(
                        topic="nowhere",
                        partitions=[FetchRequest.FetchPartition(partition=0, partition_max_bytes=1 << 20)],
                    )
                ],
            ),
        )
        return by_id, by_name

    by_id, by_name = run(tmp_path, scenario)
    assert partitions_of(by_id)[0].error_code == Errors.UNKNOWN_TOPIC_ID
    assert partitions_of(by_name)[0].error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION


def test_fetch_current_leader_epoch_fenced_and_unknown(tmp_path):
    # Partition.checkCurrentLeaderEpoch: older than the leader's -> FENCED_LEADER_EPOCH, newer ->
    # UNKNOWN_LEADER_EPOCH, -1 unchecked. KafkaApis.handleFetchRequest (v16+, KIP-951) adds the
    # current leader and its endpoint to FENCED_LEADER_EPOCH answers.
    async def scenario(broker: Broker):
        topic_id = await broker.create_topic()
        await broker.produce(batch(1))
        # A leader election as the controller would make it: the partition's leader epoch moves to 3.
        broker.node.topics.get(TOPIC).partitions[0].leader_epoch = 3
        return [await broker.fetch(topic_id, {0: 0}, leader_epoch=epoch) for epoch in (2, 4, 3, -1)]

    older, newer, same, unchecked = run(tmp_path, scenario)
    fenced = partitions_of(older)[0]
    assert fenced.error_code == Errors.FENCED_LEADER_EPOCH
    assert (fenced.current_leader.leader_id, fenced.current_leader.leader_epoch) == (1, 3)
    assert [n.node_id for n in older.node_endpoints] == [1]
    assert partitions_of(newer)[0].error_code == Errors.UNKNOWN_LEADER_EPOCH
    assert partitions_of(same)[0].error_code == Errors.NONE
    assert partitions_of(unchecked)[0].error_code == Errors.NONE


def test_fetch_unknown_session_id_is_fetch_session_id_not_found(tmp_path):
    # FetchManager.newContext: an incremental fetch (epoch > 0) naming no cached session ->
    # SessionErrorContext(FETCH_SESSION_ID_NOT_FOUND): top-level error, no partitions, session id 0.
    async def scenario(broker: Broker):
        topic_id = await broker.create_topic()
        return await broker.fetch(topic_id, {0: 0}, session_id=12345, session_epoch=1)

    body = run(tmp_path, scenario)
    assert body.error_code == Errors.FETCH_SESSION_ID_NOT_FOUND
    assert body.session_id == 0 and body.responses == []


def test_fetch_wrong_session_epoch_is_invalid_fetch_session_epoch(tmp_path):
    # FetchManager.newContext: a cached session whose next epoch is not the request's ->
    # INVALID_FETCH_SESSION_EPOCH.
    async def scenario(broker: Broker):
        topic_id = await broker.create_topic()
        full = await broker.fetch(topic_id, {0: 0}, session_epoch=0)
        wrong = await broker.fetch(topic_id, {}, session_id=full.session_id, session_epoch=5)
        return full, wrong

    full, wrong = run(tmp_path, scenario)
    assert full.error_code == Errors.NONE and full.session_id > 0
    assert wrong.error_code == Errors.INVALID_FETCH_SESSION_EPOCH
    assert wrong.responses == []


@pytest.mark.parametrize("version", [3, FETCH_V])
def test_fetch_returns_a_first_batch_larger_than_max_bytes(tmp_path, version):
    # ReplicaManager.readFromLocalLog (v3+: hardMaxBytesLimit false): minOneMessage for the first
    # partition, so a batch larger than max_bytes and partition_max_bytes comes back whole.
    async def scenario(broker: Broker):
        topic_id = await broker.create_topic()
        await broker.produce(batch(4, size=1000))
        if version >= 13:
            return await broker.fetch(topic_id, {0: 0}, max_bytes=100, partition_max_bytes=100)
        request = FetchRequest(
            max_wait_ms=0,
            min_bytes=1,
            max_bytes=100,
            topics=[
                FetchRequest.FetchTopic(
                    topic=TOPIC,
                    partitions=[FetchRequest.FetchPartition(partition=0, partition_max_bytes=100)],
                )
            ],
        )
        return await broker.client.call(FETCH, version, request)

    body = run(tmp_path, scenario, kafka_version="3.9" if version <= 3 else None)  # v3: Kafka 3.x
    data = partitions_of(body)[0]
    assert data.error_code == Errors.NONE
    assert [r.offset for r in fetched_records(data)] == [0, 1, 2, 3]


def test_fetch_long_poll_waits_for_max_wait_without_data(tmp_path):
    # DelayedFetch: fewer than min_bytes available and no error -> wait max_wait_ms.
    async def scenario(broker: Broker):
        topic_id = await broker.create_topic()
        loop = asyncio.get_running_loop()
        start = loop.time()
        body = await broker.fetch(topic_id, {0: 0}, max_wait_ms=500, min_bytes=1)
        return body, loop.time() - start

    body, waited = run(tmp_path, scenario)
    assert partitions_of(body)[0].error_code == Errors.NONE
    assert not fetched_records(partitions_of(body)[0])
    assert 0.45 <= waited < 5


def test_fetch_long_poll_returns_early_when_data_arrives(tmp_path):
    # DelayedFetch.tryComplete: an append that brings min_bytes completes the waiting fetch at once.
    async def scenario(broker: Broker):
        topic_id = await broker.create_topic()
        producer = await broker.connect()
        loop = asyncio.get_running_loop()
        start = loop.time()
        poll = asyncio.create_task(broker.fetch(topic_id, {0: 0}, max_wait_ms=20_000, min_bytes=1))
        await asyncio.sleep(0.3)
        await broker.produce(batch(2), client=producer)
        body = await poll
        await producer.close()
        return body, loop.time() - start

    body, waited = run(tmp_path, scenario)
    assert [r.offset for r in fetched_records(partitions_of(body)[0])] == [0, 1]
    assert 0.25 <= waited < 5


def test_incremental_fetch_session_omits_unchanged_partitions(tmp_path):
    # IncrementalFetchContext.updateAndGenerateResponseData: only partitions with new records, a new
    # high watermark or log start offset, or an error go into the response.
    async def scenario(broker: Broker):
        topic_id = await broker.create_topic(partitions=3)
        full = await broker.fetch(topic_id, {0: 0, 1: 0, 2: 0}, session_epoch=0)
        await broker.produce(batch(2), partition=1)
        first = await broker.fetch(topic_id, {}, session_id=full.session_id, session_epoch=1)
        quiet = await broker.fetch(topic_id, {1: 2}, session_id=full.session_id, session_epoch=2)
        return full, first, quiet

    full, first, quiet = run(tmp_path, scenario)
    assert full.session_id > 0 and sorted(partitions_of(full)) == [0, 1, 2]
    assert list(partitions_of(first)) == [1]
    assert [r.offset for r in fetched_records(partitions_of(first)[1])] == [0, 1]
    assert quiet.error_code == Errors.NONE and partitions_of(quiet) == {}


def test_fetch_negative_max_bytes_is_a_partition_error(tmp_path):
    # ReplicaManager.readFromLocalLog: LogSegment.read refuses a negative max size with
    # IllegalArgumentException, which the per-partition catch-all turns into UNKNOWN_SERVER_ERROR;
    # the request is answered and the connection stays (v5 has no top-level error field).
    async def scenario(broker: Broker):
        await broker.create_topic()
        await broker.produce(batch(2))
        request = FetchRequest(
            max_wait_ms=0,
            min_bytes=1,
            max_bytes=1 << 20,
            topics=[
                FetchRequest.FetchTopic(
                    topic=TOPIC,
                    partitions=[
                        FetchRequest.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=-5)
                    ],
                )
            ],
        )
        v5 = await broker.client.call(FETCH, 5, request)
        v16 = await broker.fetch(broker.node.topics.get(TOPIC).topic_id, {0: 0}, partition_max_bytes=-5)
        after = await broker.client.call(API_VERSIONS, 0, ApiVersionsRequest())
        return v5, v16, after

    v5, v16, after = run(tmp_path, scenario)
    for body in (v5, v16):
        data = partitions_of(body)[0]
        assert (data.error_code, data.high_watermark) == (Errors.UNKNOWN_SERVER_ERROR, -1)
    assert v16.error_code == Errors.NONE
    assert after.error_code == Errors.NONE


# ---- ListOffsets ----------------------------------------------------------------------------------


def test_list_offsets_earliest_latest_max_timestamp_and_by_timestamp(tmp_path):
    # Partition.fetchOffsetForTimestamp / UnifiedLog.fetchOffsetByTimestamp: -2 the log start offset,
    # -1 the high watermark (both without timestamp), -3 the record with the largest timestamp
    # (batch.offsetOfMaxTimestamp), a timestamp the first record at or after it; none -> -1/-1.
    async def scenario(broker: Broker):
        await broker.create_topic()
        base = now_ms() - 100_000
        await broker.produce(batch(3, timestamps=[base, base + 50, base + 10]))
        await broker.produce(batch(2, timestamps=[base + 20, base + 30]))
        found = {}
        for name, ts in [
            ("earliest", EARLIEST),
            ("latest", LATEST),
            ("max", MAX_TIMESTAMP),
            ("at_start", base),
            ("at_10", base + 10),
            ("after_30", base + 31),
            ("too_late", base + 51),
        ]:
            found[name] = await broker.list_offsets(ts)
        return base, found

    base, found = run(tmp_path, scenario)
    got = {name: (p.error_code, p.offset, p.timestamp) for name, p in found.items()}
    assert got == {
        "earliest": (0, 0, -1),
        "latest": (0, 5, -1),
        "max": (0, 1, base + 50),
        "at_start": (0, 0, base),
        "at_10": (0, 1, base + 50),
        "after_30": (0, 1, base + 50),
        "too_late": (0, -1, -1),
    }


def test_list_offsets_latest_carries_the_partitions_leader_epoch(tmp_path):
    # Partition.fetchOffsetForTimestamp, LATEST_TIMESTAMP: TimestampAndOffset(NO_TIMESTAMP,
    # lastFetchableOffset, Optional.of(leaderEpoch)): the partition's current leader epoch, whether
    # the log is empty or its last batch was written under an older epoch.
    async def scenario(broker: Broker):
        await broker.create_topic()
        empty = await broker.list_offsets(LATEST)
        await broker.produce(batch(2))
        broker.node.topics.get(TOPIC).partitions[0].leader_epoch = 3  # a leader election, no new writes
        return empty, await broker.list_offsets(LATEST)

    empty, after_election = run(tmp_path, scenario)
    assert (empty.error_code, empty.offset, empty.leader_epoch) == (0, 0, 0)
    assert (after_election.error_code, after_election.offset, after_election.leader_epoch) == (0, 2, 3)


def test_list_offsets_duplicate_partition_is_invalid_request(tmp_path):
    # ReplicaManager.fetchOffset (v1+): partitions named twice (ListOffsetsRequest.duplicatePartitions)
    # -> INVALID_REQUEST for each; the others are answered normally.
    async def scenario(broker: Broker):
        await broker.create_topic(partitions=2)
        wanted = [0, 0, 1]
        request = ListOffsetsRequest(
            replica_id=-1,
            topics=[
                ListOffsetsRequest.ListOffsetsTopic(
                    name=TOPIC,
                    partitions=[
                        ListOffsetsRequest.ListOffsetsPartition(partition_index=i, timestamp=LATEST)
                        for i in wanted
                    ],
                )
            ],
        )
        body = await broker.client.call(LIST_OFFSETS, LIST_OFFSETS_V, request)
        return body.topics[0].partitions

    partitions = run(tmp_path, scenario)
    assert sorted((p.partition_index, p.error_code) for p in partitions) == [
        (0, Errors.INVALID_REQUEST),
        (0, Errors.INVALID_REQUEST),
        (1, Errors.NONE),
    ]


# ---- Metadata -------------------------------------------------------------------------------------


def test_metadata_auto_creates_an_unknown_topic(tmp_path):
    # KafkaApis.getTopicMetadata -> AutoTopicCreationManager.createTopics: a KRaft broker forwards a
    # CreateTopics to the controller (sendCreateTopicRequest) and answers UNKNOWN_TOPIC_OR_PARTITION
    # for now; the next Metadata request finds the topic.
    async def scenario(broker: Broker):
        first = await broker.metadata("fresh")
        second = await broker.metadata("fresh")
        return first.topics[0], second.topics[0]

    first, second = run(tmp_path, scenario)
    assert (first.name, first.error_code, first.partitions) == (
        "fresh",
        Errors.UNKNOWN_TOPIC_OR_PARTITION,
        [],
    )
    assert (second.name, second.error_code) == ("fresh", Errors.NONE)
    assert [p.partition_index for p in second.partitions] == [0]


@pytest.mark.parametrize("auto_create", [True, False])
def test_metadata_illegal_topic_name_is_invalid_topic_exception(tmp_path, auto_create):
    # AutoTopicCreationManager.filterCreatableTopics / KafkaApis.getTopicMetadata: Topic.validate fails.
    async def scenario(broker: Broker):
        body = await broker.metadata("bad name!", "x" * 250, "..", auto_create=auto_create)
        return body.topics, len(broker.node.topics)

    topics, created = run(tmp_path, scenario)
    assert [t.error_code for t in topics] == [Errors.INVALID_TOPIC_EXCEPTION] * 3
    assert created == 0


def test_metadata_without_auto_creation_is_unknown_topic_or_partition(tmp_path):
    # KafkaApis.getTopicMetadata: allowAutoTopicCreation false -> UNKNOWN_TOPIC_OR_PARTITION, nothing made.
    async def scenario(broker: Broker):
        body = await broker.metadata("absent", auto_create=False)
        again = await broker.metadata("absent", auto_create=False)
        return body.topics[0], again.topics[0]

    first, again = run(tmp_path, scenario)
    assert first.error_code == again.error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION


@pytest.mark.parametrize("version", [10, 11])
def test_metadata_topic_ids_below_v12_are_invalid_request(tmp_path, version):
    # KafkaApis.handleTopicMetadataRequest: before v12 a null topic name, or a topic id, throws
    # InvalidRequestException; MetadataRequest.getErrorResponse answers every topic asked for with
    # INVALID_REQUEST (a null name as ""), and no brokers.
    async def scenario(broker: Broker):
        topic_id = await broker.create_topic()
        request = MetadataRequest(
            topics=[
                MetadataRequest.MetadataRequestTopic(name=None, topic_id=topic_id),
                MetadataRequest.MetadataRequestTopic(name=TOPIC),
            ],
            allow_auto_topic_creation=False,
        )
        body = await broker.client.call(METADATA, version, request)
        return body, topic_id

    body, topic_id = run(tmp_path, scenario)
    assert [(t.error_code, t.name, t.topic_id) for t in body.topics] == [
        (Errors.INVALID_REQUEST, "", topic_id),
        (Errors.INVALID_REQUEST, TOPIC, uuid.UUID(int=0)),
    ]
    assert body.brokers == []


def test_metadata_by_topic_id_at_v12(tmp_path):
    # KafkaApis.handleTopicMetadataRequest (v12+): topics asked for by id; unknown ids UNKNOWN_TOPIC_ID.
    async def scenario(broker: Broker):
        topic_id = await broker.create_topic()
        missing = uuid.uuid4()
        request = MetadataRequest(
            topics=[MetadataRequest.MetadataRequestTopic(name=None, topic_id=i) for i in (topic_id, missing)],
            allow_auto_topic_creation=False,
        )
        return await broker.client.call(METADATA, 12, request), topic_id, missing

    body, topic_id, missing = run(tmp_path, scenario)
    found = {t.topic_id: (t.error_code, t.name) for t in body.topics}
    assert found == {topic_id: (Errors.NONE, TOPIC), missing: (Errors.UNKNOWN_TOPIC_ID, None)}


# ---- CreateTopics, DeleteTopics, CreatePartitions ----------------------------------------------


async def create_topics(broker: Broker, *topics, validate_only: bool = False):
    request = CreateTopicsRequest(topics=list(topics), timeout_ms=5000, validate_only=validate_only)
    return (await broker.client.call(CREATE_TOPICS, 7, request)).topics


def new_topic(name: str, partitions: int = 1, factor: int = 1, **configs: str):
    return CreateTopicsRequest.CreatableTopic(
        name=name,
        num_partitions=partitions,
        replication_factor=factor,
        configs=[CreateTopicsRequest.CreatableTopicConfig(name=k, value=v) for k, v in configs.items()],
    )


def test_create_topics_error_rules(tmp_path):
    # ReplicationControlManager.createTopic: TOPIC_ALREADY_EXISTS; numPartitions 0 or below -1
    # INVALID_PARTITIONS; a replication factor above the registered brokers INVALID_REPLICATION_FACTOR;
    # ConfigurationControlManager.validate: unknown or malformed configs INVALID_CONFIG.
    async def scenario(broker: Broker):
        await broker.create_topic("taken")
        return {
            "exists": await create_topics(broker, new_topic("taken")),
            "zero": await create_topics(broker, new_topic("t1", partitions=0)),
            "negative": await create_topics(broker, new_topic("t2", partitions=-5)),
            "factor": await create_topics(broker, new_topic("t3", factor=3)),
            "bad_value": await create_topics(broker, new_topic("t4", **{"cleanup.policy": "shred"})),
            "unknown_name": await create_topics(broker, new_topic("t5", **{"no.such.config": "1"})),
        }, sorted(t.name for t in broker.node.topics)

    results, existing = run(tmp_path, scenario)
    codes = {name: [r.error_code for r in rs] for name, rs in results.items()}
    assert codes == {
        "exists": [Errors.TOPIC_ALREADY_EXISTS],
        "zero": [Errors.INVALID_PARTITIONS],
        "negative": [Errors.INVALID_PARTITIONS],
        "factor": [Errors.INVALID_REPLICATION_FACTOR],
        "bad_value": [Errors.INVALID_CONFIG],
        "unknown_name": [Errors.INVALID_CONFIG],
    }
    assert existing == ["taken"]


def test_create_topics_validate_only_creates_nothing(tmp_path):
    # ControllerApis.createTopics / ReplicationControlManager: validateOnly runs every check and
    # writes no records.
    async def scenario(broker: Broker):
        results = await create_topics(broker, new_topic("dry", partitions=3), validate_only=True)
        meta = await broker.metadata("dry", auto_create=False)
        return results[0], meta.topics[0], len(broker.node.topics)

    result, meta, count = run(tmp_path, scenario)
    assert (result.error_code, result.num_partitions, result.replication_factor) == (Errors.NONE, 3, 1)
    assert meta.error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert count == 0


def test_delete_unknown_topic_is_unknown_topic_or_partition(tmp_path):
    # ReplicationControlManager.deleteTopics (via ControllerApis.deleteTopics): no such name ->
    # UNKNOWN_TOPIC_OR_PARTITION.
    async def scenario(broker: Broker):
        body = await broker.client.call(
            DELETE_TOPICS,
            6,
            DeleteTopicsRequest(
                topics=[DeleteTopicsRequest.DeleteTopicState(name="nowhere")], timeout_ms=5000
            ),
        )
        return body.responses[0]

    result = run(tmp_path, scenario)
    assert result.error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION


def test_create_partitions_decrease_is_invalid_partitions(tmp_path):
    # ReplicationControlManager.createPartitions: a count below (or equal to) the current one is
    # INVALID_PARTITIONS.
    async def scenario(broker: Broker):
        await broker.create_topic(partitions=3)
        results = []
        for count in (2, 3):
            request = CreatePartitionsRequest(
                topics=[
                    CreatePartitionsRequest.CreatePartitionsTopic(name=TOPIC, count=count, assignments=None)
                ],
                timeout_ms=5000,
            )
            results.append((await broker.client.call(CREATE_PARTITIONS, 3, request)).results[0])
        return results, len(broker.node.topics.get(TOPIC).partitions)

    (decrease, same), count = run(tmp_path, scenario)
    assert decrease.error_code == same.error_code == Errors.INVALID_PARTITIONS
    assert count == 3


# ---- ApiVersions and the connection ---------------------------------------------------------------


def test_api_versions_unknown_version_answers_v0_unsupported_version(tmp_path):
    # RequestContext.parseRequest keeps an ApiVersions request of an unknown version;
    # KafkaApis.handleApiVersionsRequest answers ApiVersionsRequest.getErrorResponse at version 0:
    # UNSUPPORTED_VERSION with the versions of ApiVersions itself (KIP-511).
    async def scenario(broker: Broker):
        await broker.client.send_raw(API_VERSIONS, 99, b"\x00\x00\x00", response_version=0)
        return await broker.client.receive()

    reply = run(tmp_path, scenario)
    assert reply.answered
    assert reply.body.error_code == Errors.UNSUPPORTED_VERSION
    assert [(k.api_key, k.min_version, k.max_version) for k in reply.body.api_keys] == [(API_VERSIONS, 0, 4)]


def test_api_versions_bad_client_software_name_is_invalid_request(tmp_path):
    # KafkaApis.handleApiVersionsRequest: !apiVersionRequest.isValid (v3+ name and version must match
    # [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?) -> INVALID_REQUEST.
    async def scenario(broker: Broker):
        bad = ApiVersionsRequest(client_software_name="bad name!", client_software_version="1.0")
        good = ApiVersionsRequest(client_software_name="kconform", client_software_version="1.0")
        return await broker.client.call(API_VERSIONS, 3, bad), await broker.client.call(API_VERSIONS, 3, good)

    bad, good = run(tmp_path, scenario)
    assert bad.error_code == Errors.INVALID_REQUEST and bad.api_keys == []
    assert good.error_code == Errors.NONE and good.api_keys


def test_unsupported_version_of_another_api_closes_the_connection(tmp_path):
    # SocketServer.Processor.parseRequestHeader: a version apiVersionManager.isApiEnabled refuses
    # (ApiVersions excepted) throws InvalidRequestException and the channel is closed.
    async def scenario(broker: Broker):
        await broker.client.send_raw(METADATA, 99, b"\x00")
        return await broker.client.receive(5)

    assert run(tmp_path, scenario).closed


def test_unknown_api_key_closes_the_connection(tmp_path):
    # RequestHeader.parse / SocketServer: an API key Kafka does not know -> InvalidRequestException,
    # the channel is closed.
    async def scenario(broker: Broker):
        await broker.client.send_raw(999, 0, b"")
        return await broker.client.receive(5)

    assert run(tmp_path, scenario).closed


def test_create_topics_beyond_one_controller_operation_is_policy_violation(tmp_path):
    # ReplicationControlManager.createTopics: at most 10,000 records (topic + partitions) per operation;
    # more fails the request with POLICY_VIOLATION and creates nothing.
    async def scenario(broker: Broker):
        request = CreateTopicsRequest(
            topics=[
                CreateTopicsRequest.CreatableTopic(name="huge", num_partitions=20_000, replication_factor=1)
            ],
            timeout_ms=5000,
        )
        created = await broker.client.call(19, 7, request)
        described = await broker.client.call(3, 12, MetadataRequest(topics=None))
        return created, described

    created, described = run(tmp_path, scenario)
    assert [(t.name, t.error_code) for t in created.topics] == [("huge", Errors.POLICY_VIOLATION)]
    assert "huge" not in {t.name for t in described.topics}
