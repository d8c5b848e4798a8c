"""kconform.reference_broker.validation, what Kafka's produce path refuses, one test per rule with the
error code Kafka gives (Kafka source named in each): request-wide failures, ProduceRequest's v3+
checks, UnifiedLog's and LogValidator's batch and record errors, and the limits met when rebuilding."""

from __future__ import annotations

import pytest

from kconform.codecs.compression import Compression
from kconform.codecs.errors import Errors
from kconform.codecs.records import (
    Record,
    TimestampType,
    encode_batch,
)
from kconform.reference_broker.validation import (
    RecordsRejected,
    RejectionScope,
    check_partition_records,
    check_request_records,
)

from ..support.validation_batches import (
    LONG_MAX,
    NOW,
    T0,
    TP,
    assert_partition_error,
    batch,
    decoded,
    forge,
    make_records,
    rejected,
    validate,
)

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
