"""kconform.reference_broker.validation: Kafka's produce-path record validation, one test per rule with
the error code Kafka gives (Kafka source named in each), the happy paths, and properties over generated
and mutated batches."""

from __future__ import annotations

import asyncio
import struct
import sys
from collections import Counter
from types import SimpleNamespace

import crc32c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kconform.codecs import records as codec_records
from kconform.codecs.compression import Compression
from kconform.codecs.errors import Errors
from kconform.codecs.messages import ProduceRequest
from kconform.codecs.records import (
    Record,
    TimestampType,
    decode_batch_header,
    encode_batch,
    iter_batches,
    patch_batch_header,
)
from kconform.codecs.strategies import record_batches
from kconform.reference_broker.handlers.produce import produce
from kconform.reference_broker.node import BrokerNode
from kconform.reference_broker.validation import (
    LogValidationConfig,
    RecordsRejected,
    RejectionScope,
    ValidatedAppend,
    check_partition_records,
    check_request_records,
    validate_produce_records,
)

T0 = 1_700_000_000_000
NOW = T0 + 60_000
TP = "orders-3"
LONG_MAX = 2**63 - 1


def make_records(
    n: int = 3, *, base_offset: int = 0, timestamp: int = T0, keyed: bool = True
) -> list[Record]:
    return [
        Record(
            base_offset + i,
            timestamp + i,
            b"key-%d" % i if keyed else None,
            b"value-%d" % i * 8,
            [("h", b"%d" % i)] if i % 2 else [],
        )
        for i in range(n)
    ]


def batch(n: int = 3, **kwargs) -> bytes:
    keyed = kwargs.pop("keyed", True)
    timestamp = kwargs.pop("timestamp", T0)
    offsets = kwargs.pop("offsets", None)
    records = make_records(n, timestamp=timestamp, keyed=keyed)
    if kwargs.get("magic", 2) < 2:
        records = [Record(r.offset, r.timestamp, r.key, r.value) for r in records]
    if offsets is not None:
        records = [
            Record(o, r.timestamp, r.key, r.value, r.headers) for o, r in zip(offsets, records, strict=True)
        ]
    return encode_batch(records, **kwargs)


def validate(data, *, version: int = 9, first_offset: int = 100, epoch: int = 5, now: int = NOW, **config):
    return validate_produce_records(
        data,
        produce_version=version,
        config=LogValidationConfig(**config),
        now_ms=now,
        first_offset=first_offset,
        partition_leader_epoch=epoch,
        topic_partition=TP,
    )


def rejected(data, **kwargs) -> RecordsRejected:
    with pytest.raises(RecordsRejected) as info:
        validate(data, **kwargs)
    return info.value


def decoded(result: ValidatedAppend):
    batches = list(iter_batches(bytes(result.records)))
    assert sum(b.size_in_bytes for b in batches) == len(result.records)
    return batches


# Kafka's DefaultRecordBatch field offsets, used only to forge hostile batches (as suites/codecs does).
_FIELDS = {
    "base_offset": (0, ">q"),
    "batch_length": (8, ">i"),
    "magic": (16, ">b"),
    "attributes": (21, ">h"),
    "last_offset_delta": (23, ">i"),
    "max_timestamp": (35, ">q"),
    "record_count": (57, ">i"),
}


def forge(data: bytes, *, fix_crc: bool = True, payload=None, **fields) -> bytes:
    """``data`` (one magic 2 batch) with header fields overwritten and/or the bytes after the header
    replaced by ``payload(old)``, the CRC made valid again unless ``fix_crc`` is False."""
    buf = bytearray(data)
    if payload is not None:
        buf[61:] = payload(bytes(buf[61:]))
        struct.pack_into(">i", buf, 8, len(buf) - 12)
    for name, value in fields.items():
        where, fmt = _FIELDS[name]
        struct.pack_into(fmt, buf, where, value)
    if fix_crc:
        struct.pack_into(">I", buf, 17, crc32c.crc32c(bytes(buf[21:])))
    return bytes(buf)


def assert_partition_error(exc: RecordsRejected, code: int, *, log_start: bool) -> None:
    assert exc.error_code == code, exc
    assert exc.scope == RejectionScope.PARTITION
    assert exc.error_message is None and exc.record_errors == []
    assert exc.reports_log_start_offset is log_start


# --- request-wide failures (KafkaApis.handleProduceRequest, ReplicaManager.handleProduceAppend) -----


@pytest.mark.parametrize("version", [0, 2, 3, 9, 11])
def test_first_batch_with_a_bad_size_fails_the_whole_request(version):
    # RequestUtils.hasTransactionalRecords -> ByteBufferLogInputStream.nextBatchSize: CorruptRecordException
    data = forge(batch(), batch_length=13, fix_crc=False)
    exc = rejected(data, version=version)
    assert exc.error_code == Errors.CORRUPT_MESSAGE == 2
    assert exc.scope == RejectionScope.REQUEST
    assert exc.error_message == "Record size 13 is less than the minimum record overhead (14)"
    with pytest.raises(RecordsRejected):
        check_request_records(data[:12])  # the size is read before the magic byte is there


@pytest.mark.parametrize(("magic", "shown"), [(3, "3"), (-1, "-1"), (-128, "-128")])
def test_first_batch_with_a_bad_magic_fails_the_whole_request(magic, shown):
    exc = rejected(forge(batch(), magic=magic, fix_crc=False))
    assert (exc.error_code, exc.scope) == (Errors.CORRUPT_MESSAGE, RejectionScope.REQUEST)
    assert exc.error_message == f"Invalid magic found in record: {shown}"


def test_null_records_get_no_response():
    # validateRecords skips null; handleProduceAppend and then the error path dereference it (NPE)
    check_request_records(None)
    exc = rejected(None)
    assert (exc.error_code, exc.scope) == (Errors.UNKNOWN_SERVER_ERROR, RejectionScope.NO_RESPONSE)


def test_v2_batch_too_short_for_its_producer_id_fails_the_whole_request():
    # handleProduceAppend reads producerId (bytes 43..50): IndexOutOfBoundsException -> UNKNOWN_SERVER_ERROR
    short = forge(batch()[:50], batch_length=38, fix_crc=False)
    exc = rejected(short)
    assert (exc.error_code, exc.scope, exc.error_message) == (-1, RejectionScope.REQUEST, None)
    # long enough for the producer id but not the 61-byte header: DefaultRecordBatch.isValid is false
    exc = rejected(forge(batch()[:55], batch_length=43, fix_crc=False))
    assert_partition_error(exc, Errors.CORRUPT_MESSAGE, log_start=False)


def test_later_bad_framing_below_v3_fails_the_whole_request():
    # v0-2 skip validateRecords; handleProduceAppend walks every batch and throws CorruptRecordException
    data = batch() + forge(batch(), batch_length=2, fix_crc=False)
    exc = rejected(data, version=2)
    assert (exc.error_code, exc.scope) == (Errors.CORRUPT_MESSAGE, RejectionScope.REQUEST)
    assert exc.error_message == "Record size 2 is less than the minimum record overhead (14)"
    # from v3 validateRecords meets it first, and the error stays with the partition
    assert_partition_error(rejected(data, version=3), Errors.CORRUPT_MESSAGE, log_start=False)


# --- ProduceRequest.validateRecords (v3+): partition errors without a message ------------------------


@pytest.mark.parametrize("data", [b"", b"\x00" * 11, batch()[:40]], ids=["empty", "short", "partial"])
def test_v3_needs_a_batch(data):
    assert_partition_error(rejected(data, version=3), Errors.INVALID_RECORD, log_start=False)


def test_empty_records_below_v3_append_nothing():
    # UnifiedLog.append returns early when no whole batch is there: offset -1, no error
    for data in (b"", batch()[:30]):
        result = validate(data, version=2)
        assert result.records == bytearray() and result.record_count == 0
        assert (result.first_offset, result.last_offset, result.log_append_time_ms) == (-1, -1, -1)


@pytest.mark.parametrize("magic", [0, 1])
def test_v3_needs_magic_2(magic):
    data = batch(magic=magic, compression=Compression.GZIP)
    assert_partition_error(rejected(data, version=3), Errors.INVALID_RECORD, log_start=False)


def test_v3_needs_exactly_one_batch():
    assert_partition_error(rejected(batch() + batch(), version=11), Errors.INVALID_RECORD, log_start=False)


@pytest.mark.parametrize("version", [3, 4, 5, 6])
def test_zstd_needs_v7(version):
    data = batch(compression=Compression.ZSTD)
    exc = rejected(data, version=version)
    assert_partition_error(exc, Errors.UNSUPPORTED_COMPRESSION_TYPE, log_start=False)
    assert exc.error_code == 76
    assert validate(data, version=7).in_place


def test_unknown_codec_id():
    data = forge(batch(), attributes=5)
    # below v7 validateRecords calls CompressionType.forId: IllegalArgumentException escapes the handler
    exc = rejected(data, version=6)
    assert (exc.error_code, exc.scope) == (Errors.UNKNOWN_SERVER_ERROR, RejectionScope.REQUEST)
    # from v7 analyzeAndValidateRecords calls it after the CRC check, per partition
    assert_partition_error(rejected(data, version=7), Errors.UNKNOWN_SERVER_ERROR, log_start=True)
    # a bad CRC is reported first
    bad_crc = forge(batch(), attributes=5, fix_crc=False)
    assert_partition_error(rejected(bad_crc, version=7), Errors.CORRUPT_MESSAGE, log_start=False)


def test_trailing_partial_batch_is_trimmed():
    whole = batch()
    assert validate(whole + whole[:30]).records == validate(whole).records
    check_partition_records(whole + whole[:30], produce_version=9)


# --- UnifiedLog.analyzeAndValidateRecords -----------------------------------------------------------


def test_client_batch_base_offset_must_be_0():
    data = batch(offsets=[5, 6, 7], base_offset=5)
    assert_partition_error(rejected(data), Errors.INVALID_RECORD, log_start=True)


def test_batch_above_max_message_bytes():
    data = batch()
    exc = rejected(data, max_message_bytes=len(data) - 1)
    assert_partition_error(exc, Errors.MESSAGE_TOO_LARGE, log_start=False)
    assert exc.error_code == 10
    assert validate(data, max_message_bytes=len(data)).record_count == 3


@pytest.mark.parametrize("codec", list(Compression))
def test_bad_crc(codec):
    data = bytearray(batch(compression=codec))
    data[-1] ^= 0x01
    assert_partition_error(rejected(bytes(data)), Errors.CORRUPT_MESSAGE, log_start=False)


# --- LogValidator.validateBatch: INVALID_RECORD, no message, log start offset ---------------------


def test_last_offset_delta_must_match_the_record_count():
    data = batch(offsets=[0, 1, 3])  # lastOffsetDelta 3, count 3
    assert_partition_error(rejected(data), Errors.INVALID_RECORD, log_start=True)
    for delta in (-3, 0, 15):  # LogValidatorTest.testInconsistentCountAndOffset
        assert_partition_error(
            rejected(forge(batch(), last_offset_delta=delta)), Errors.INVALID_RECORD, log_start=True
        )


@pytest.mark.parametrize("count", [0, -1, -(2**31)])
def test_record_count_must_be_positive(count):
    data = forge(batch(), record_count=count)
    assert_partition_error(rejected(data), Errors.INVALID_RECORD, log_start=True)


@pytest.mark.parametrize("source", list(Compression))
@pytest.mark.parametrize("topic", ["producer", "uncompressed", "gzip"])
def test_batch_without_records_is_refused(source, topic):
    # LogValidatorTest.testBatchWithoutRecordsNotAllowed
    empty = forge(encode_batch([], producer_id=1, producer_epoch=1, base_sequence=0), attributes=source)
    assert_partition_error(rejected(empty, compression_type=topic), Errors.INVALID_RECORD, log_start=True)


@pytest.mark.parametrize(("last_offset_delta", "count"), [(5, 6), (1, 2)])
def test_declared_count_must_match_the_records(last_offset_delta, count):
    # LogValidatorTest.testUnmatchedNumberOfRecords: the record iterator throws InvalidRecordException
    for codec in (Compression.NONE, Compression.SNAPPY):
        data = forge(batch(compression=codec), last_offset_delta=last_offset_delta, record_count=count)
        assert_partition_error(rejected(data), Errors.INVALID_RECORD, log_start=True)


def test_clients_cannot_write_control_batches():
    data = encode_batch(
        make_records(1), is_control=True, is_transactional=True, producer_id=7, producer_epoch=0
    )
    assert_partition_error(rejected(data), Errors.INVALID_RECORD, log_start=True)


def test_producer_id_needs_a_base_sequence():
    data = batch(producer_id=7, producer_epoch=0, base_sequence=-1)
    assert_partition_error(rejected(data), Errors.INVALID_RECORD, log_start=True)
    assert validate(batch(producer_id=-5, producer_epoch=0, base_sequence=-1)).in_place  # no producer id


def test_malformed_record_with_a_valid_crc():
    # DefaultRecord.readFrom: InvalidRecordException("Found invalid record structure")
    data = forge(batch(), payload=lambda old: old[:-3])
    assert_partition_error(rejected(data), Errors.INVALID_RECORD, log_start=True)


def test_undecompressable_payload_with_a_valid_crc():
    # StreamRecordIterator: IOException -> KafkaException, which is no ApiException
    data = forge(batch(compression=Compression.GZIP), payload=lambda old: b"\x1f\x8b" + bytes(len(old)))
    assert_partition_error(rejected(data), Errors.UNKNOWN_SERVER_ERROR, log_start=True)


# --- LogValidator.validateRecord: record errors reach the client --------------------------------------


def test_compacted_topic_needs_keys():
    data = batch(keyed=False)
    exc = rejected(data, compacted=True)
    assert (exc.error_code, exc.scope, exc.reports_log_start_offset) == (87, RejectionScope.PARTITION, True)
    message = f"Compacted topic cannot accept message without key in topic partition {TP}"
    assert exc.record_errors == [(0, message), (1, message), (2, message)]
    shown = ", ".join(f"RecordError(batchIndex={i}, message='{message}')" for i in range(3))
    assert exc.error_message == (
        "One or more records have been rejected due to 3 record errors in total, and only showing the first "
        f"three errors at most: [{shown}]"
    )
    assert validate(batch(), compacted=True).record_count == 3


def test_record_errors_summary_shows_three():
    exc = rejected(batch(5, keyed=False, compression=Compression.LZ4), compacted=True)
    assert [i for i, _ in exc.record_errors] == [0, 1, 2, 3, 4]
    assert "due to 5 record errors in total" in exc.error_message
    assert exc.error_message.count("RecordError(") == 3


@pytest.mark.parametrize("codec", [Compression.NONE, Compression.ZSTD])
def test_create_time_bounds(codec):
    before, after = 1000, 500
    bounds = dict(timestamp_before_max_ms=before, timestamp_after_max_ms=after)
    assert validate(batch(1, timestamp=NOW - before, compression=codec), **bounds).record_count == 1
    assert validate(batch(1, timestamp=NOW + after, compression=codec), **bounds).record_count == 1
    for timestamp in (NOW - before - 1, NOW + after + 1):
        exc = rejected(batch(1, timestamp=timestamp, compression=codec), **bounds)
        assert (exc.error_code, exc.reports_log_start_offset) == (Errors.INVALID_TIMESTAMP, True)
        assert exc.error_code == 32
        assert exc.error_message == "One or more records have been rejected due to invalid timestamp"
        assert exc.record_errors == [
            (
                0,
                f"Timestamp {timestamp} of message with offset 0 is out of range. The timestamp should be "
                f"within [{NOW - before}, {NOW + after}]",
            )
        ]


def test_create_time_bound_text_wraps_like_java():
    exc = rejected(batch(1, timestamp=NOW - 1), timestamp_before_max_ms=0, timestamp_after_max_ms=LONG_MAX)
    high = NOW + LONG_MAX - 2**64  # now + Long.MAX_VALUE overflows in Java
    assert exc.record_errors[0][1].endswith(f"should be within [{NOW}, {high}]")


def test_records_without_timestamps_skip_the_bounds():
    data = encode_batch([Record(i, -1, b"k", b"v") for i in range(2)])
    result = validate(data, timestamp_before_max_ms=0, timestamp_after_max_ms=0)
    assert (result.max_timestamp, result.offset_of_max_timestamp) == (-1, -1)


def test_invalid_timestamp_wins_over_invalid_record():
    # LogValidatorTest.testBatchWithInvalidRecordsAndInvalidTimestamp
    records = make_records(3, keyed=False)
    records[1].key = b"k"
    records[1].timestamp = 5
    exc = rejected(encode_batch(records), compacted=True, timestamp_before_max_ms=10_000_000)
    assert exc.error_code == Errors.INVALID_TIMESTAMP
    assert [i for i, _ in exc.record_errors] == [0, 1, 2]
    assert exc.record_errors[1][1].startswith("Timestamp 5 of message with offset 1 is out of range")


def test_producer_must_not_send_log_append_time_to_a_log_append_time_topic():
    data = batch(1, timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=T0)
    exc = rejected(data, timestamp_type="LogAppendTime")
    assert exc.error_code == Errors.INVALID_TIMESTAMP
    assert exc.record_errors == [
        (
            0,
            f"Invalid timestamp type in message DefaultRecord(offset=0, timestamp={T0}, key=5 bytes, "
            "value=56 bytes). Producer should not set timestamp type to LogAppendTime.",
        )
    ]
    # a compressed batch kept in place is read by Kafka's partial reader, which shows a null key as -1
    data = encode_batch(
        [Record(0, T0, None, b"v")],
        compression=Compression.GZIP,
        timestamp_type=TimestampType.LOG_APPEND_TIME,
        log_append_time=T0,
    )
    exc = rejected(data, timestamp_type="LogAppendTime")
    partial = f"PartialDefaultRecord(offset=0, timestamp={T0}, key=-1 bytes, value=1 bytes)"
    assert exc.record_errors[0][1].startswith(f"Invalid timestamp type in message {partial}")


def test_create_time_topic_takes_a_log_append_time_batch_as_create_time():
    data = batch(2, timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=T0 + 7)
    result = validate(data)
    (out,) = decoded(result)
    assert out.timestamp_type == TimestampType.CREATE_TIME and out.max_timestamp == T0 + 7
    assert result.max_timestamp == T0 + 7 and result.in_place


# --- rebuilding (MemoryRecordsBuilder) ----------------------------------------------------------------


def test_rebuild_refuses_negative_timestamps_but_in_place_keeps_them():
    records = [Record(0, -5, b"k", b"v"), Record(1, T0, b"k", b"v")]
    kept = validate(encode_batch(records))
    assert [r.timestamp for r in decoded(kept)[0].records] == [-5, T0]
    exc = rejected(
        encode_batch(records), compression_type="gzip"
    )  # appendWithOffset: IllegalArgumentException
    assert_partition_error(exc, Errors.UNKNOWN_SERVER_ERROR, log_start=True)


def test_rebuild_refuses_a_transactional_batch_without_producer_id():
    data = batch(is_transactional=True)  # producer id -1: LogValidator lets it through...
    assert validate(data).batches[0].is_transactional
    exc = rejected(
        data, compression_type="snappy"
    )  # ...but MemoryRecordsBuilder.validateProducerState does not
    assert_partition_error(exc, Errors.UNKNOWN_SERVER_ERROR, log_start=True)


def test_rebuilt_batch_above_max_message_bytes():
    data = encode_batch([Record(0, T0, b"k", b"x" * 5000)], compression=Compression.GZIP)
    assert len(data) < 1000
    exc = rejected(data, compression_type="uncompressed", max_message_bytes=1000)
    assert_partition_error(exc, Errors.MESSAGE_TOO_LARGE, log_start=False)


def test_append_above_segment_bytes():
    data = batch()
    exc = rejected(data, segment_bytes=len(data) - 1)
    assert_partition_error(exc, Errors.RECORD_LIST_TOO_LARGE, log_start=False)
    assert exc.error_code == 18
    assert validate(data, segment_bytes=len(data)).record_count == 3


# --- happy paths ----------------------------------------------------------------------------------------


def test_uncompressed_batch_is_kept_in_place():
    data = batch(producer_id=42, producer_epoch=3, base_sequence=10)
    result = validate(data, first_offset=1000, epoch=9)
    assert result.in_place
    out = bytes(result.records)
    assert out[8:12] == data[8:12] and out[16:] == data[16:]  # only base offset and leader epoch changed
    (b,) = decoded(result)
    assert (b.base_offset, b.partition_leader_epoch, b.last_offset) == (1000, 9, 1002)
    assert [r.offset for r in b.records] == [1000, 1001, 1002]
    assert [(r.key, r.value, r.headers) for r in b.records] == [
        (r.key, r.value, r.headers) for r in make_records()
    ]
    assert (result.first_offset, result.last_offset, result.record_count) == (1000, 1002, 3)
    assert (result.max_timestamp, result.offset_of_max_timestamp, result.log_append_time_ms) == (
        T0 + 2,
        1002,
        -1,
    )
    (info,) = result.batches
    assert (info.first_offset, info.last_offset, info.record_count) == (1000, 1002, 3)
    assert (info.producer_id, info.producer_epoch, info.base_sequence, info.last_sequence) == (42, 3, 10, 12)
    assert not info.is_transactional and not info.is_control and info.has_producer_id


@pytest.mark.parametrize("codec", [c for c in Compression if c])
def test_compressed_batch_is_kept_in_place(codec):
    data = batch(4, compression=codec)
    result = validate(data, compression_type="producer")
    assert result.in_place
    assert bytes(result.records)[61:] == data[61:]  # the producer's compressed bytes
    (b,) = decoded(result)
    assert b.compression == codec and b.base_offset == 100 and b.partition_leader_epoch == 5
    assert result.offset_of_max_timestamp == 103 and result.max_timestamp == T0 + 3
    # LogValidatorTest.testDifferentLevelDoesNotCauseRecompression: only the codec type counts
    levels = {Compression.GZIP: "compression_gzip_level", Compression.LZ4: "compression_lz4_level"}
    level = {levels[codec]: 1} if codec in levels else {}
    same_codec_topic = validate(data, compression_type=codec.name.lower(), **level)
    assert same_codec_topic.in_place and same_codec_topic.records == result.records


@pytest.mark.parametrize(
    ("source", "topic", "target"),
    [
        (Compression.NONE, "lz4", Compression.LZ4),
        (Compression.GZIP, "zstd", Compression.ZSTD),
        (Compression.SNAPPY, "uncompressed", Compression.NONE),
        (Compression.ZSTD, "gzip", Compression.GZIP),
    ],
)
def test_recompression_to_the_topic_codec(source, topic, target):
    data = batch(
        5, compression=source, producer_id=9, producer_epoch=2, base_sequence=40, is_transactional=True
    )
    result = validate(data, compression_type=topic, compression_gzip_level=9)
    assert not result.in_place
    (b,) = decoded(result)
    assert b.compression == target and b.base_offset == 100 and b.partition_leader_epoch == 5
    assert (b.producer_id, b.producer_epoch, b.base_sequence, b.is_transactional) == (9, 2, 40, True)
    expected = make_records(5)
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in b.records] == [
        (100 + i, r.timestamp, r.key, r.value, r.headers) for i, r in enumerate(expected)
    ]
    assert (result.max_timestamp, result.offset_of_max_timestamp) == (T0 + 4, 104)
    assert result.batches[0].last_sequence == 44


@pytest.mark.parametrize("topic", ["producer", "uncompressed", "gzip"])
@pytest.mark.parametrize("codec", [Compression.NONE, Compression.GZIP])
def test_log_append_time(topic, codec):
    data = batch(3, compression=codec)
    result = validate(data, timestamp_type="LogAppendTime", compression_type=topic)
    (b,) = decoded(result)
    assert b.timestamp_type == TimestampType.LOG_APPEND_TIME and b.max_timestamp == NOW
    assert {r.timestamp for r in b.records} == {NOW}
    assert (result.log_append_time_ms, result.max_timestamp, result.offset_of_max_timestamp) == (
        NOW,
        NOW,
        102,
    )
    assert result.batches[0].max_timestamp == NOW


def test_max_timestamp_and_its_offset_as_kafka_computes_them():
    records = [Record(0, T0 + 50, b"k", b"v"), Record(1, T0 + 90, b"k", b"v"), Record(2, T0 + 10, b"k", b"v")]
    for codec in (Compression.NONE, Compression.LZ4):
        result = validate(encode_batch(records, compression=codec))
        assert (result.max_timestamp, result.offset_of_max_timestamp) == (
            T0 + 90,
            102,
        )  # the batch's last offset
        assert decoded(result)[0].max_timestamp == T0 + 90
    no_timestamps = [Record(i, -1, b"k", b"v") for i in range(2)]
    in_place = validate(encode_batch(no_timestamps))
    assert (in_place.max_timestamp, in_place.offset_of_max_timestamp) == (-1, -1)
    compressed = validate(encode_batch(no_timestamps, compression=Compression.GZIP))
    assert (compressed.max_timestamp, compressed.offset_of_max_timestamp) == (-1, 101)  # in place compressed
    rebuilt = validate(encode_batch(no_timestamps, compression=Compression.GZIP), compression_type="lz4")
    assert (rebuilt.max_timestamp, rebuilt.offset_of_max_timestamp) == (-1, -1)  # MemoryRecordsBuilder.info


def test_stale_max_timestamp_is_rewritten_with_a_fresh_crc():
    data = forge(batch(), max_timestamp=T0 - 1000)
    (b,) = decoded(validate(data))  # iter_batches checks the CRC
    assert b.max_timestamp == T0 + 2


def test_non_consecutive_inner_offsets():
    # v2 inner offsets are not checked when kept in place uncompressed; compressed, Kafka rebuilds the batch
    uncompressed = forge(batch(offsets=[0, 1, 3]), last_offset_delta=2)
    result = validate(uncompressed)
    assert result.in_place and [r.offset for r in decoded(result)[0].records] == [100, 101, 103]
    compressed = forge(batch(offsets=[0, 1, 3], compression=Compression.GZIP), last_offset_delta=2)
    result = validate(compressed)
    assert not result.in_place
    (b,) = decoded(result)
    assert [r.offset for r in b.records] == [100, 101, 102] and b.compression == Compression.GZIP


def test_last_sequence_wraps():
    result = validate(batch(3, producer_id=1, producer_epoch=0, base_sequence=2**31 - 2))
    assert result.batches[0].last_sequence == 0


# --- legacy input (Produce v0-2): converted to magic 2 ----------------------------------------------------


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", [Compression.NONE, Compression.GZIP, Compression.LZ4])
def test_legacy_messages_are_converted(magic, codec):
    records = [Record(i, T0 + i, b"k%d" % i, b"v%d" % i) for i in range(3)]
    data = encode_batch(records, magic=magic, compression=codec)
    result = validate(data, version=2)
    assert not result.in_place
    (b,) = decoded(result)
    assert (b.magic, b.compression, b.base_offset, b.partition_leader_epoch) == (2, codec, 100, 5)
    assert [(r.offset, r.key, r.value) for r in b.records] == [
        (100 + i, r.key, r.value) for i, r in enumerate(records)
    ]
    expected_max = T0 + 2 if magic else -1
    assert [r.timestamp for r in b.records] == ([T0, T0 + 1, T0 + 2] if magic else [-1, -1, -1])
    assert (result.max_timestamp, result.offset_of_max_timestamp) == (expected_max, 102 if magic else -1)
    assert result.batches[0].producer_id == -1


def test_legacy_messages_follow_the_topic_codec_and_log_append_time():
    data = encode_batch(make_records(2, keyed=True)[:1], magic=1)
    result = validate(data, version=1, compression_type="zstd", timestamp_type="LogAppendTime")
    (b,) = decoded(result)
    assert b.compression == Compression.ZSTD and b.max_timestamp == NOW and result.log_append_time_ms == NOW


def test_legacy_mixed_with_magic_2_is_refused():
    data = encode_batch(make_records(1), magic=1) + batch()
    assert_partition_error(rejected(data, version=2), Errors.INVALID_RECORD, log_start=True)


def test_v2_batch_is_accepted_below_v3():
    assert validate(batch(), version=0).in_place  # Kafka does not check the magic below v3


# --- properties ------------------------------------------------------------------------------------------

CONFIGS = st.builds(
    LogValidationConfig,
    compression_type=st.sampled_from(["producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"]),
    timestamp_type=st.sampled_from(["CreateTime", "LogAppendTime"]),
    timestamp_after_max_ms=st.just(LONG_MAX),  # generated timestamps reach 2039
)


@settings(max_examples=200)
@given(drawn=record_batches(magics=(2,)), config=CONFIGS, first_offset=st.integers(0, 2**40))
def test_any_valid_batch_validates_and_reads_back(drawn, config, first_offset):
    encoded, records = drawn
    data = bytearray(encoded)
    patch_batch_header(data, base_offset=0)  # a producer always sends base offset 0
    result = validate_produce_records(
        bytes(data),
        produce_version=11,
        config=config,
        now_ms=NOW,
        first_offset=first_offset,
        partition_leader_epoch=3,
    )
    (b,) = decoded(result)
    assert [r.offset for r in b.records] == list(range(first_offset, first_offset + len(records)))
    assert [(r.key, r.value, r.headers) for r in b.records] == [(r.key, r.value, r.headers) for r in records]
    assert (result.first_offset, result.last_offset) == (first_offset, first_offset + len(records) - 1)
    assert b.partition_leader_epoch == 3 and b.base_offset == first_offset
    if config.timestamp_type == "LogAppendTime":
        assert {r.timestamp for r in b.records} == {NOW}
    else:
        assert [r.timestamp for r in b.records] == [r.timestamp for r in records]
        assert result.max_timestamp == max(r.timestamp for r in records) == b.max_timestamp
    header = decode_batch_header(encoded)
    assert (b.producer_id, b.base_sequence, b.is_transactional) == (
        header.producer_id,
        header.base_sequence,
        header.is_transactional,
    )
    # the header handed to the log append, derived rather than read back, is the appended batch's
    assert result.batches[0].header == decode_batch_header(bytes(result.records))


def _mutate(data: bytes, draw) -> bytes:
    kind = draw(st.sampled_from(["flip", "truncate", "insert", "field", "payload"]))
    buf = bytearray(data)
    if kind == "flip" and buf:
        at = draw(st.integers(0, len(buf) - 1))
        buf[at] ^= draw(st.integers(1, 255))
    elif kind == "truncate":
        del buf[draw(st.integers(0, len(buf))) :]
    elif kind == "insert":
        at = draw(st.integers(0, len(buf)))
        buf[at:at] = draw(st.binary(min_size=1, max_size=8))
    elif kind == "field" and len(buf) >= 61 and buf[16] == 2:  # a header field, CRC made valid again
        name = draw(st.sampled_from(sorted(_FIELDS)))
        where, fmt = _FIELDS[name]
        value = draw(
            st.integers(*{"q": (-(2**63), 2**63 - 1), "i": (-(2**31), 2**31 - 1)}.get(fmt[-1], (-128, 127)))
        )
        if fmt[-1] == "h":
            value = draw(st.integers(-(2**15), 2**15 - 1))
        return forge(bytes(buf), **{name: value})
    elif kind == "payload" and len(buf) > 61 and buf[16] == 2:  # record bytes, CRC made valid again
        at = draw(st.integers(61, len(buf) - 1))
        buf[at] ^= draw(st.integers(1, 255))
        return forge(bytes(buf))
    return bytes(buf)


@settings(max_examples=400)
@given(
    drawn=record_batches(),
    config=CONFIGS,
    version=st.integers(0, 11),
    compacted=st.booleans(),
    data=st.data(),
)
def test_mutated_batches_only_ever_get_records_rejected(drawn, config, version, compacted, data):
    encoded, _ = drawn
    buf = bytearray(encoded)
    if buf[16] == 2:
        patch_batch_header(buf, base_offset=0)
    mutated = bytes(buf)
    for _ in range(data.draw(st.integers(1, 3))):
        mutated = _mutate(mutated, data.draw)
    config = LogValidationConfig(
        compression_type=config.compression_type,
        timestamp_type=config.timestamp_type,
        compacted=compacted,
        timestamp_before_max_ms=data.draw(st.sampled_from([LONG_MAX, 10**12])),
        timestamp_after_max_ms=data.draw(st.sampled_from([LONG_MAX, 3_600_000])),
    )
    try:
        result = validate_produce_records(
            mutated,
            produce_version=version,
            config=config,
            now_ms=NOW,
            first_offset=7,
            partition_leader_epoch=1,
        )
    except RecordsRejected as exc:
        assert isinstance(exc.error_code, int) and exc.scope in RejectionScope
        return
    assert isinstance(result, ValidatedAppend)
    if result.record_count:
        (b,) = decoded(result)
        assert b.base_offset == 7 and len(b.records) == result.record_count
        assert result.batches[0].header == decode_batch_header(bytes(result.records))


def test_rejections_are_plain_values():
    exc = rejected(batch(keyed=False), compacted=True)
    again = eval(repr(exc), {"RecordsRejected": RecordsRejected})
    assert (again.error_code, again.record_errors, again.error_message, again.scope) == (
        exc.error_code,
        exc.record_errors,
        exc.error_message,
        exc.scope,
    )
    import pickle

    assert pickle.loads(pickle.dumps(exc)).record_errors == exc.record_errors


def test_config_is_checked_when_built():
    assert LogValidationConfig(compression_type="GZIP").compression_type == "gzip"
    assert LogValidationConfig().timestamp_after_max_ms == 3_600_000  # Kafka 4.0's default (KIP-1030)
    assert rejected(batch(1, timestamp=NOW + 3_600_001)).error_code == Errors.INVALID_TIMESTAMP
    for bad in (
        dict(compression_type="brotli"),
        dict(timestamp_type="create_time"),
        dict(compression_gzip_level=10),
        dict(compression_zstd_level=23),
        dict(max_message_bytes=-1),
        dict(segment_bytes=13),
        dict(timestamp_after_max_ms=-1),
    ):
        with pytest.raises(ValueError):
            LogValidationConfig(**bad)


# --- the produce path reads each batch's framing once ----------------------------------------------

FRAMING_READERS = ("iter_batch_extents", "iter_batch_headers", "decode_batch_header")


def count_calls(monkeypatch, names) -> Counter:
    """Count calls of the codecs functions ``names`` from anywhere in the reference broker."""
    counts: Counter = Counter()

    def counted(name, original):
        def wrapper(*args, **kwargs):
            counts[name] += 1
            return original(*args, **kwargs)

        return wrapper

    for name in names:
        original = getattr(codec_records, name)
        for module in list(sys.modules.values()):
            holder = getattr(module, "__name__", "")
            if holder.startswith("kconform.reference_broker.") and getattr(module, name, None) is original:
                monkeypatch.setattr(module, name, counted(name, original))
    return counts


@pytest.mark.parametrize(
    "records",
    [
        pytest.param(dict(), id="plain"),
        pytest.param(dict(producer_id=7, producer_epoch=0, base_sequence=0), id="idempotent"),
        pytest.param(dict(compression=Compression.GZIP), id="compressed-in-place"),
    ],
)
def test_one_produce_reads_its_batch_framing_once(tmp_path, monkeypatch, records):
    """Handler, validation and log append share one framing: the batch's header is read once (and its
    records once, by validation), where the handler once read it twice, validation twice more and the
    log once again."""

    def request(batch_bytes: bytes) -> ProduceRequest:
        data = ProduceRequest.PartitionProduceData(index=0, records=batch_bytes)
        topic = ProduceRequest.TopicProduceData(name="orders", partition_data=[data])
        return ProduceRequest(transactional_id=None, acks=1, timeout_ms=5000, topic_data=[topic])

    async def main():
        node = BrokerNode.from_config_file(None, {"node.id": "1", "log.dirs": str(tmp_path / "data")})
        await node.start("127.0.0.1", 0)
        try:
            node.create_topic("orders", node.assign_replicas(1, 1), {})
            ctx = SimpleNamespace(api_version=9)
            first = await produce(node, ctx, request(batch(3, **records)))  # the segment's first batch
            counts = count_calls(monkeypatch, (*FRAMING_READERS, "decode_batch"))
            more = dict(records, base_sequence=3) if "producer_id" in records else records
            second = await produce(node, ctx, request(batch(3, **more)))
            return first, second, counts
        finally:
            await node.stop()

    first, second, counts = asyncio.run(asyncio.wait_for(main(), 60))
    answers = [r.responses[0].partition_responses[0] for r in (first, second)]
    assert [(a.error_code, a.base_offset) for a in answers] == [(0, 0), (0, 3)]
    assert {name: counts[name] for name in FRAMING_READERS} == {
        "iter_batch_extents": 1,  # the handler's walk over the partition's records
        "iter_batch_headers": 0,  # the log append takes the validated batch's header
        "decode_batch_header": 1,  # the batch's header, CRC checked, in that same walk
    }
    assert counts["decode_batch"] == 1  # validation reads the records
