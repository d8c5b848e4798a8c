"""kconform.codecs.records, record batches v2: round trips over every magic and codec, the v2 header and
record layout as Java's MemoryRecordsBuilder writes it, control records and transactional fields,
decoded batches as plain values, and the broker-side helpers (``iter_batch_extents``,
``set_batch_max_timestamp``)."""

from __future__ import annotations

import struct

import crc32c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kconform.codecs import DecodeError
from kconform.codecs.compression import Compression, compress
from kconform.codecs.records import (
    BatchExtent,
    BatchFramingError,
    BatchHeader,
    ControlRecordType,
    EndTransactionMarker,
    Record,
    RecordBatch,
    TimestampType,
    decode_batch,
    decode_batch_header,
    decode_control_key,
    decode_end_txn_marker,
    encode_batch,
    encode_control_key,
    encode_end_txn_marker,
    encode_end_txn_marker_batch,
    iter_batch_extents,
    iter_batch_headers,
    iter_batches,
    patch_batch_header,
    set_batch_max_timestamp,
    truncated_tail,
)
from kconform.codecs.strategies import record_batches

from ..support.record_samples import (
    MAGIC_CODECS,
    T0,
    as_tuples,
    expected,
    record_strategy,
    sample_records,
)

# --- round trips -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("magic", "codec"), MAGIC_CODECS)
def test_round_trip_every_magic_and_codec(magic, codec):
    records = sample_records(magic, base_offset=100)
    data = encode_batch(records, magic=magic, compression=codec, base_offset=100)
    assert as_tuples(data) == expected(records, magic)
    assert truncated_tail(data) == 0
    batches = list(iter_batches(data))
    assert sum(b.size_in_bytes for b in batches) == len(data)
    for batch in batches:
        assert batch.magic == magic
        assert batch.compression == codec
    if codec or magic == 2:
        assert len(batches) == 1  # one v2 batch, or one compressed legacy wrapper
        assert batches[0].last_offset == 105
    else:
        assert len(batches) == len(records)  # an uncompressed legacy set is one entry per message


@pytest.mark.parametrize(("magic", "codec"), MAGIC_CODECS)
@settings(max_examples=25)
@given(
    rows=st.lists(record_strategy, max_size=20),
    base_offset=st.integers(min_value=0, max_value=1 << 50),
    gaps=st.lists(st.integers(min_value=1, max_value=1000), min_size=20, max_size=20),
)
def test_round_trip_any_records(magic, codec, rows, base_offset, gaps):
    records, offset = [], base_offset
    for (timestamp, key, value, headers), gap in zip(rows, gaps, strict=False):
        records.append(Record(offset, timestamp, key, value, headers if magic == 2 else []))
        offset += gap
    data = encode_batch(records, magic=magic, compression=codec, base_offset=base_offset)
    assert as_tuples(data) == expected(records, magic)


def test_record_defaults_and_equality():
    assert Record(1, 2, b"k", b"v") == Record(1, 2, b"k", b"v", [])
    assert eval(repr(Record(1, 2, None, b"v", [("a", None)]))) == Record(1, 2, None, b"v", [("a", None)])


def test_inputs_as_bytes_bytearray_memoryview_agree():
    data = encode_batch(sample_records(2)) + encode_batch(
        sample_records(1, 6), magic=1, compression=1, base_offset=6
    )
    want = list(iter_batches(data))
    assert list(iter_batches(bytearray(data))) == want
    assert list(iter_batches(memoryview(data))) == want
    assert list(iter_batch_headers(memoryview(data))) == list(iter_batch_headers(data))
    assert decode_batch(memoryview(data)) == want[0]
    second = want[0].size_in_bytes
    assert decode_batch(memoryview(data), second) == decode_batch(data, second) == want[1]


# --- the v2 layout, as Java's MemoryRecordsBuilder writes it ----------------------------------------


def test_v2_header_fields_are_computed_as_java_does():
    records = [
        Record(50, T0 + 30, b"a", b"1"),
        Record(51, T0 + 10, b"b", b"2"),  # out-of-order timestamps: max, not last
        Record(53, T0 + 20, b"c", b"3"),  # an offset gap (as after compaction)
    ]
    data = encode_batch(
        records,
        base_offset=50,
        producer_id=7_000_000_000,
        producer_epoch=3,
        base_sequence=41,
        is_transactional=True,
        partition_leader_epoch=9,
    )
    (base, length, epoch, magic, crc, attributes, lod, first_ts, max_ts, pid, pepoch, seq, count) = (
        struct.unpack_from(">qiibIhiqqqhii", data)
    )
    assert (base, length, epoch, magic) == (50, len(data) - 12, 9, 2)
    assert crc == crc32c.crc32c(data[21:])
    assert attributes == 0x10  # transactional, create time, no compression
    assert (lod, first_ts, max_ts) == (3, T0 + 30, T0 + 30)
    assert (pid, pepoch, seq, count) == (7_000_000_000, 3, 41, 3)

    batch = decode_batch(data)
    assert batch.is_transactional and not batch.is_control
    assert batch.timestamp_type == TimestampType.CREATE_TIME
    assert (batch.last_offset, batch.next_offset) == (53, 54)
    assert [r.offset for r in batch.records] == [50, 51, 53]
    assert [r.timestamp for r in batch.records] == [T0 + 30, T0 + 10, T0 + 20]


def test_v2_record_bytes_match_the_spec_byte_for_byte():
    data = encode_batch([Record(0, T0, b"k", b"vv", [("h", None)]), Record(1, T0 - 1, None, None)])
    body = data[61:]
    first = bytes([0x00, 0x00, 0x00, 0x02, ord("k"), 0x04]) + b"vv" + bytes([0x02, 0x02, ord("h"), 0x01])
    second = bytes([0x00, 0x01, 0x02, 0x01, 0x01, 0x00])  # ts delta -1, offset delta 1, nulls, no headers
    assert body == bytes([len(first) * 2]) + first + bytes([len(second) * 2]) + second


def test_v2_compressed_batch_compresses_only_the_records():
    records = sample_records(2, n=50)
    plain = encode_batch(records)
    packed = encode_batch(records, compression=Compression.LZ4)
    assert packed[22] & 0x07 == 3
    assert packed[61:] == compress(Compression.LZ4, plain[61:])
    assert struct.unpack_from(">i", packed, 57) == struct.unpack_from(">i", plain, 57)  # count stays outside


def test_v2_base_timestamp_override_and_delete_horizon():
    data = encode_batch([Record(0, T0 + 100, b"k", None)], base_timestamp=T0, has_delete_horizon=True)
    batch = decode_batch(data)
    assert batch.has_delete_horizon and batch.base_timestamp == T0
    assert batch.records[0].timestamp == T0 + 100


def test_v2_log_append_time():
    records = [Record(0, T0, b"a", b"1"), Record(1, T0 + 5, b"b", b"2")]
    batch = decode_batch(
        encode_batch(records, timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=T0 + 99)
    )
    assert batch.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert batch.max_timestamp == T0 + 99
    assert [r.timestamp for r in batch.records] == [T0 + 99, T0 + 99]  # readers use the batch's max


def test_v2_empty_batch_keeps_producer_state():
    data = encode_batch([], base_offset=10, producer_id=5, producer_epoch=1, base_sequence=3, compression=2)
    batch = decode_batch(data)
    assert len(data) == 61
    assert (batch.record_count, batch.records, batch.compression) == (0, [], Compression.NONE)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (5, 1, 3)
    assert batch.last_offset == 10


def test_patch_batch_header_in_place():
    buf = bytearray(encode_batch(sample_records(2)))
    patch_batch_header(buf, base_offset=1000, partition_leader_epoch=4)  # outside the CRC
    batch = decode_batch(bytes(buf))
    assert batch.base_offset == 1000 and batch.partition_leader_epoch == 4
    assert [r.offset for r in batch.records] == list(range(1000, 1006))
    patch_batch_header(buf, log_append_time=T0 + 12345)  # inside the CRC: recomputed
    batch = decode_batch(bytes(buf))
    assert batch.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert {r.timestamp for r in batch.records} == {T0 + 12345}


# --- control records and transactional fields --------------------------------------------------------


@pytest.mark.parametrize("commit", [True, False])
def test_end_transaction_marker_batch(commit):
    data = encode_end_txn_marker_batch(
        producer_id=77, producer_epoch=2, commit=commit, coordinator_epoch=15, timestamp=T0, base_offset=40
    )
    batch = decode_batch(data)
    assert batch.is_control and batch.is_transactional
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (77, 2, -1)
    assert batch.attributes == 0x30
    (record,) = batch.records
    assert record.offset == 40 and record.timestamp == T0 and record.headers == []
    assert record.key == struct.pack(">hh", 0, 1 if commit else 0)
    assert record.value == struct.pack(">hi", 0, 15)
    marker = decode_end_txn_marker(record)
    expected_type = ControlRecordType.COMMIT if commit else ControlRecordType.ABORT
    assert marker == EndTransactionMarker(expected_type, 15, 0)
    assert marker.committed is commit


def test_control_key_helpers():
    assert encode_control_key(ControlRecordType.LEADER_CHANGE) == b"\x00\x00\x00\x02"
    assert decode_control_key(b"\x00\x00\x00\x01") == (0, ControlRecordType.COMMIT)
    assert decode_control_key(b"\x00\x01\x00\x63") == (1, 99)  # unknown types pass through as ints
    assert encode_end_txn_marker(7) == b"\x00\x00\x00\x00\x00\x07"
    for bad in (None, b"\x00\x00\x00", b"\xff\xff\x00\x00"):
        with pytest.raises(DecodeError):
            decode_control_key(bad)
    with pytest.raises(DecodeError):
        decode_end_txn_marker(Record(0, 0, encode_control_key(3), b"\x00\x00\x00\x00\x00\x01"))
    with pytest.raises(DecodeError):
        decode_end_txn_marker(Record(0, 0, encode_control_key(1), b"\x00\x00"))


def test_idempotent_non_transactional_batch():
    batch = decode_batch(encode_batch(sample_records(2), producer_id=3, producer_epoch=0, base_sequence=0))
    assert not batch.is_transactional and (batch.producer_id, batch.base_sequence) == (3, 0)


def test_decoded_batches_are_plain_values():
    batch = decode_batch(encode_batch(sample_records(2)))
    assert isinstance(batch, RecordBatch) and isinstance(batch, BatchHeader)
    assert eval(repr(batch), {**globals(), "Record": Record, "RecordBatch": RecordBatch}) == batch


@settings(max_examples=100)
@given(batch=record_batches())
def test_record_batch_strategy_round_trips(batch):
    encoded, drawn = batch
    decoded = [r for b in iter_batches(encoded) for r in b.records]
    assert [(r.offset, r.key, r.value, list(r.headers)) for r in decoded] == [
        (r.offset, r.key, r.value, list(r.headers)) for r in drawn
    ]


# --- broker-side helpers: iter_batch_extents, set_batch_max_timestamp ----------------------------


def test_batch_extents_walk_every_magic_and_stop_before_a_partial_tail():
    v2 = encode_batch(sample_records(2, base_offset=7), compression=Compression.GZIP, base_offset=7)
    messages = sample_records(1, n=2)
    first_message = encode_batch(messages[:1], magic=1)
    legacy = first_message + encode_batch(messages[1:], magic=1, base_offset=1)  # two uncompressed messages
    v0 = encode_batch(
        sample_records(0, base_offset=3, n=1), magic=0, compression=Compression.SNAPPY, base_offset=3
    )
    data = v2 + legacy + v0
    extents = list(iter_batch_extents(data + v2[:40]))
    positions = [0, len(v2), len(v2) + len(first_message), len(v2) + len(legacy)]
    assert [e.position for e in extents] == positions
    assert sum(e.size for e in extents) == len(data)
    assert [e.magic for e in extents] == [2, 1, 1, 0]
    assert extents[0] == BatchExtent(0, len(v2), 2, 7, Compression.GZIP)
    assert [e.compression_id for e in extents] == [1, 0, 0, 2]
    assert [e.base_offset for e in extents][1:] == [0, 1, 3]
    for cut in (11, len(v2) - 1, len(v2) + 16, len(data) - 1):  # before a magic, or short of the size
        whole = [e.position for e in extents if e.position + e.size <= cut]
        assert [e.position for e in iter_batch_extents(data[:cut])] == whole


def test_batch_extents_raise_at_a_bad_size_or_magic_after_the_good_batches():
    good = encode_batch(sample_records(2))
    bad_size = bytearray(good)
    struct.pack_into(">i", bad_size, 8, 13)
    walk = iter_batch_extents(good + bytes(bad_size))
    assert next(walk).position == 0
    with pytest.raises(BatchFramingError) as info:
        next(walk)
    assert (info.value.batch_length, info.value.magic, info.value.offset) == (13, None, len(good) + 8)
    assert isinstance(info.value, DecodeError)
    bad_size_short = bytes(bad_size[:12])  # the size is checked before the magic byte is there
    with pytest.raises(BatchFramingError):
        list(iter_batch_extents(bad_size_short))
    for magic, signed in ((3, 3), (0x80, -128), (0xFF, -1)):
        bad_magic = bytearray(good)
        bad_magic[16] = magic
        with pytest.raises(BatchFramingError) as info:
            list(iter_batch_extents(bytes(bad_magic)))
        assert (info.value.magic, info.value.batch_length) == (signed, len(good) - 12)
    assert pickle_round_trip(info.value).magic == -1


def pickle_round_trip(value):
    import pickle

    return pickle.loads(pickle.dumps(value))


def test_set_batch_max_timestamp_as_kafka_default_record_batch():
    data = bytearray(
        encode_batch(
            sample_records(2), compression=Compression.LZ4, producer_id=3, producer_epoch=1, base_sequence=0
        )
    )
    header = decode_batch_header(data)
    untouched = bytes(data)
    assert not set_batch_max_timestamp(
        data, timestamp_type=TimestampType.CREATE_TIME, max_timestamp=header.max_timestamp
    )
    assert bytes(data) == untouched
    assert set_batch_max_timestamp(data, timestamp_type=TimestampType.LOG_APPEND_TIME, max_timestamp=T0 + 999)
    batch = decode_batch(bytes(data))  # CRC recomputed
    assert batch.timestamp_type == TimestampType.LOG_APPEND_TIME and batch.max_timestamp == T0 + 999
    assert batch.compression == Compression.LZ4 and batch.producer_id == 3
    assert {r.timestamp for r in batch.records} == {T0 + 999}
    assert set_batch_max_timestamp(data, timestamp_type=TimestampType.CREATE_TIME, max_timestamp=T0)
    batch = decode_batch(bytes(data))
    assert batch.timestamp_type == TimestampType.CREATE_TIME and batch.max_timestamp == T0
    assert [r.timestamp for r in batch.records] == [r.timestamp for r in sample_records(2)]


def test_set_batch_max_timestamp_keeps_known_flags_and_drops_unknown_bits():
    data = bytearray(
        encode_batch(
            sample_records(2),
            compression=Compression.GZIP,
            producer_id=3,
            producer_epoch=1,
            base_sequence=0,
            is_transactional=True,
            has_delete_horizon=True,
            base_timestamp=T0 - 5,
        )
    )
    struct.pack_into(">h", data, 21, struct.unpack_from(">h", data, 21)[0] | 0x0180)  # bits Kafka never sets
    struct.pack_into(">I", data, 17, crc32c.crc32c(bytes(data[21:])))
    set_batch_max_timestamp(data, timestamp_type=TimestampType.LOG_APPEND_TIME, max_timestamp=T0)
    header = decode_batch_header(bytes(data))
    assert header.attributes == Compression.GZIP | 0x08 | 0x10 | 0x40
    assert header.is_transactional and header.has_delete_horizon and header.base_timestamp == T0 - 5
    with pytest.raises(ValueError):
        set_batch_max_timestamp(
            bytearray(encode_batch(sample_records(1), magic=1)), timestamp_type=0, max_timestamp=1
        )
    with pytest.raises(ValueError):
        set_batch_max_timestamp(data, timestamp_type=TimestampType.NO_TIMESTAMP_TYPE, max_timestamp=1)
