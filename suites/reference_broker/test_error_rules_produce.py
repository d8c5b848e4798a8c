"""Kafka's Produce error rules, one test per rule, against a reference broker node in this process:
acks, unknown partitions, corrupt, oversized and invalid batches, timestamps, compacted topics,
idempotent sequences and epochs, min.insync.replicas.

Each test names where Apache Kafka 4.0 makes the decision (class and method in the Kafka source); the
broker must give the same error code in the same place of the response, or close the connection
where Kafka closes it."""

from __future__ import annotations

import pytest

from kconform.codecs.compression import Compression
from kconform.codecs.errors import Errors
from kconform.codecs.messages import (
    ApiVersionsRequest,
    ProduceRequest,
)
from kconform.codecs.records import Record, encode_batch

from ..support.error_rules_broker import (
    API_VERSIONS,
    LATEST,
    PRODUCE,
    PRODUCE_V,
    TOPIC,
    Broker,
    batch,
    now_ms,
    produce_request,
    run,
)

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
