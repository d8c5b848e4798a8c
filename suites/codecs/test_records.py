"""kconform.codecs.records: record batches v2 and legacy message sets, checked against the wire layout,
against kafka-python and aiokafka in both directions, and against hostile input."""

from __future__ import annotations

import dataclasses
import struct
import time
import zlib

import crc32c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kconform.codecs import DecodeError, EncodeError
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

MAGIC_CODECS = [(magic, codec) for magic in (0, 1, 2) for codec in Compression if codec != 4 or magic == 2]
T0 = 1_700_000_000_000


def sample_records(magic: int, base_offset: int = 0, n: int = 6) -> list[Record]:
    records = []
    for i in range(n):
        key = None if i == 1 else (b"" if i == 4 else b"key-%d" % i)
        value = None if i == 2 else (b"" if i == 5 else b"value-%d-" % i * 20)
        headers = [] if magic < 2 or i % 3 == 0 else [("trace", b"t%d" % i), ("null", None), ("ünï", b"")]
        records.append(Record(base_offset + i, T0 + 5 * i, key, value, headers))
    return records


def expected(records: list[Record], magic: int) -> list[tuple]:
    return [(r.offset, r.timestamp if magic else -1, r.key, r.value, r.headers) for r in records]


def as_tuples(data) -> list[tuple]:
    return [(r.offset, r.timestamp, r.key, r.value, r.headers) for b in iter_batches(data) for r in b.records]


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


record_strategy = st.tuples(
    st.integers(min_value=0, max_value=1 << 40),
    st.none() | st.binary(max_size=300),
    st.none() | st.binary(max_size=300),
    st.lists(st.tuples(st.text(max_size=10), st.none() | st.binary(max_size=20)), max_size=3),
)


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


# --- legacy message sets -------------------------------------------------------------------------------


@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_uncompressed_layout(magic):
    data = encode_batch([Record(7, T0, b"k", None)], magic=magic, base_offset=7)
    offset, size, crc, got_magic, attributes = struct.unpack_from(">qiIbb", data)
    assert (offset, size, got_magic, attributes) == (7, len(data) - 12, magic, 0)
    assert crc == zlib.crc32(data[16:])
    rest = data[18:]
    if magic:
        assert struct.unpack_from(">q", rest)[0] == T0
        rest = rest[8:]
    assert rest == b"\x00\x00\x00\x01k\xff\xff\xff\xff"


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", [1, 2, 3])
def test_legacy_compressed_wrapper_as_java_writes_it(magic, codec):
    records = [
        Record(200, T0 + 9, b"a", b"1"),
        Record(201, T0 + 30, b"b", b"2"),
        Record(202, T0 + 3, None, b"3"),
    ]
    data = encode_batch(records, magic=magic, compression=codec, base_offset=200)
    wrapper = decode_batch_header(data)
    assert wrapper.base_offset == 202  # the wrapper carries the last offset
    assert wrapper.compression == codec and wrapper.record_count == -1
    assert wrapper.max_timestamp == (T0 + 30 if magic else -1)
    key_at = 26 if magic else 18
    assert data[key_at : key_at + 4] == b"\xff\xff\xff\xff"  # null key
    inner = iter_batches(_inner_message_set(data, magic))
    inner_offsets = [b.base_offset for b in inner]
    assert inner_offsets == ([0, 1, 2] if magic else [200, 201, 202])  # relative for magic 1 only
    full = decode_batch(data)
    assert full.record_count == 3 and [r.offset for r in full.records] == [200, 201, 202]


def _inner_message_set(data: bytes, magic: int) -> bytes:
    from kconform.codecs.compression import decompress

    value_at = (26 if magic else 18) + 4
    (size,) = struct.unpack_from(">i", data, value_at)
    return decompress(data[17] & 7, data[value_at + 4 : value_at + 4 + size], magic=magic)


def test_legacy_magic_1_log_append_time():
    records = [Record(0, T0, b"a", b"1"), Record(1, T0 + 1, b"b", b"2")]
    for codec in (0, 1):
        data = encode_batch(
            records,
            magic=1,
            compression=codec,
            timestamp_type=TimestampType.LOG_APPEND_TIME,
            log_append_time=T0 + 50,
        )
        batches = list(iter_batches(data))
        assert all(b.timestamp_type == TimestampType.LOG_APPEND_TIME for b in batches)
        assert [r.timestamp for b in batches for r in b.records] == [T0 + 50, T0 + 50]


def _legacy_wrapper(magic: int, offset: int, inner: bytes, codec: int = 1) -> bytes:
    value = compress(codec, inner, magic=magic)
    body = bytes([magic, codec]) + (struct.pack(">q", T0) if magic else b"")
    body += b"\xff\xff\xff\xff" + struct.pack(">i", len(value)) + value
    return struct.pack(">qiI", offset, len(body) + 4, zlib.crc32(body)) + body


def test_legacy_magic_1_wrapper_offset_zero_means_relative_to_zero():
    # Some librdkafka versions send offset 0 on the wrapper; Java reads the inner offsets as they are.
    inner = encode_batch([Record(i, T0, b"k", b"v") for i in range(3)], magic=1)
    assert [r.offset for r in decode_batch(_legacy_wrapper(1, 0, inner)).records] == [0, 1, 2]
    with pytest.raises(DecodeError, match="below the last inner offset"):
        decode_batch(_legacy_wrapper(1, 1, inner))


def test_legacy_wrapper_rejects_nested_compression_empty_sets_and_zstd():
    inner = encode_batch([Record(0, T0, b"k", b"v")], magic=1, compression=1)
    with pytest.raises(DecodeError, match="must not be compressed"):
        decode_batch(_legacy_wrapper(1, 0, inner))
    with pytest.raises(DecodeError, match="no messages"):
        decode_batch(_legacy_wrapper(1, 0, b""))
    zstd_wrapper = bytearray(_legacy_wrapper(1, 0, encode_batch([Record(0, T0, b"k", b"v")], magic=1)))
    zstd_wrapper[17] = 4
    zstd_wrapper[12:16] = struct.pack(">I", zlib.crc32(zstd_wrapper[16:]))
    with pytest.raises(DecodeError, match="not valid for magic 1"):
        decode_batch(bytes(zstd_wrapper))


def test_encode_rejects_what_the_format_cannot_carry():
    with pytest.raises(EncodeError, match="headers"):
        encode_batch([Record(0, T0, b"k", b"v", [("h", b"x")])], magic=1)
    for options in ({"is_transactional": True}, {"is_control": True}, {"producer_id": 1}, {"compression": 4}):
        with pytest.raises(EncodeError):
            encode_batch([Record(0, T0, b"k", b"v")], magic=0, **options)
    for magic in (0, 1, 2):
        with pytest.raises(EncodeError, match="increase"):
            encode_batch([Record(1, T0, None, None), Record(1, T0, None, None)], magic=magic)
        with pytest.raises(EncodeError):
            encode_batch([Record(0, T0, None, None)], magic=magic, base_offset=5)
    with pytest.raises(EncodeError, match="int32"):
        encode_batch([Record(0, T0, None, None), Record(1 << 31, T0, None, None)])
    with pytest.raises(EncodeError):
        encode_batch([Record(0, T0, None, None)], producer_epoch=1 << 15)
    with pytest.raises(EncodeError):
        encode_batch([], magic=3)


# --- walking blobs: mixed magics, partial tails, header-only reads ----------------------------------------


def mixed_blob() -> bytes:
    return b"".join(
        [
            encode_batch(sample_records(0, 0, 2), magic=0),
            encode_batch(sample_records(1, 2, 3), magic=1, compression=Compression.SNAPPY, base_offset=2),
            encode_batch(sample_records(2, 5, 4), compression=Compression.ZSTD, base_offset=5),
            encode_batch(sample_records(1, 9, 2), magic=1, base_offset=9),
            encode_batch(sample_records(2, 11, 3), base_offset=11),
        ]
    )


def _header_of(batch: RecordBatch) -> BatchHeader:
    return BatchHeader(*[getattr(batch, f.name) for f in dataclasses.fields(BatchHeader)])


def test_mixed_magics_in_one_blob():
    blob = mixed_blob()
    batches = list(iter_batches(blob))
    assert [b.magic for b in batches] == [0, 0, 1, 2, 1, 1, 2]
    assert [r.offset for b in batches for r in b.records] == list(range(14))
    headers = list(iter_batch_headers(blob))
    # a header-only read cannot count a legacy wrapper's records (-1); everything else agrees
    decoded = [
        dataclasses.replace(_header_of(b), record_count=h.record_count)
        for b, h in zip(batches, headers, strict=True)
    ]
    assert decoded == headers
    assert [h.last_offset for h in headers] == [b.last_offset for b in batches]
    assert [h.record_count for h in headers] == [1, 1, -1, 4, 1, 1, 3]


def test_partial_trailing_batch_is_skipped_and_reported():
    blob = mixed_blob()
    sizes = [h.size_in_bytes for h in iter_batch_headers(blob)]
    boundaries = [sum(sizes[:i]) for i in range(len(sizes) + 1)]
    for cut in range(len(blob) + 1):
        whole = max(b for b in boundaries if b <= cut)
        prefix = blob[:cut]
        assert truncated_tail(prefix) == cut - whole
        assert sum(b.size_in_bytes for b in iter_batches(prefix)) == whole
        assert sum(h.size_in_bytes for h in iter_batch_headers(prefix)) == whole


def test_trailing_data_after_a_batch_is_ignored_by_decode_batch():
    data = encode_batch(sample_records(2))
    assert decode_batch(data + b"\x00" * 7) == decode_batch(data)
    assert decode_batch(b"junk" + data, 4) == decode_batch(data)


def test_decode_batch_requires_a_whole_batch():
    data = encode_batch(sample_records(2))
    for cut in (0, 5, 12, 17, 60, len(data) - 1):
        with pytest.raises(DecodeError, match="truncated"):
            decode_batch(data[:cut])
    with pytest.raises(DecodeError):
        decode_batch(data, len(data) + 1)


def test_header_only_read_skips_records():
    records = sample_records(2, n=30)
    data = bytearray(encode_batch(records, compression=Compression.GZIP))
    header = decode_batch_header(bytes(data))
    assert header == _header_of(decode_batch(bytes(data)))
    # With the CRC check off, a header read never looks inside the records.
    data[80] ^= 0xFF  # inside the deflate stream
    assert decode_batch_header(bytes(data), verify_crc=False).record_count == 30
    with pytest.raises(DecodeError):
        decode_batch(bytes(data), verify_crc=False)


# --- corruption ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("magic", "codec"), MAGIC_CODECS)
def test_corrupted_crc_is_a_decode_error(magic, codec):
    data = bytearray(encode_batch(sample_records(magic), magic=magic, compression=codec))
    data[-1] ^= 0x01
    with pytest.raises(DecodeError) as info:
        list(iter_batches(bytes(data)))
    assert info.value.field == "crc"
    assert info.value.message == ("RecordBatch" if magic == 2 else "LegacyMessageSet")
    assert info.value.version == magic
    with pytest.raises(DecodeError):
        list(iter_batch_headers(bytes(data)))


def test_error_offsets_are_relative_to_the_callers_input():
    data = bytearray(encode_batch(sample_records(2)))
    data[-1] ^= 0x01
    blob = b"\x00" * 5 + bytes(data)
    for given_input in (blob, memoryview(blob), bytearray(blob)):
        with pytest.raises(DecodeError) as info:
            decode_batch(given_input, 5)
        assert (info.value.field, info.value.offset) == ("crc", 5 + 17)
        assert "at byte 22" in str(info.value)


def test_corrupt_sizes_and_magic_are_errors_not_truncations():
    data = bytearray(encode_batch(sample_records(2)))
    small = bytearray(data)
    small[8:12] = struct.pack(">i", 13)
    with pytest.raises(DecodeError, match="minimum"):
        truncated_tail(bytes(small))
    bad_magic = bytearray(data)
    bad_magic[16] = 3
    with pytest.raises(DecodeError, match="magic"):
        list(iter_batches(bytes(bad_magic)))
    short_v2 = bytearray(data[:60])
    short_v2[8:12] = struct.pack(">i", 48)
    with pytest.raises(DecodeError, match="minimum of 49"):
        list(iter_batches(bytes(short_v2)))


def _v2_with_body(body: bytes, count: int, codec: int = 0) -> bytes:
    out = bytearray(61) + body
    struct.pack_into(
        ">qiibIhiqqqhii",
        out,
        0,
        0,
        len(out) - 12,
        -1,
        2,
        0,
        codec,
        max(count - 1, 0),
        T0,
        T0,
        -1,
        -1,
        -1,
        count,
    )
    struct.pack_into(">I", out, 17, crc32c.crc32c(out[21:]))
    return bytes(out)


@pytest.mark.parametrize(
    ("body", "count", "match"),
    [
        (b"\x0c\x00\x00\x00\x01\x01\x00", 1, None),  # a good one-record body, as a control
        (b"\x0c\x00\x00\x00\x01\x01\x00", 2, "cannot fit"),  # count says more records than bytes allow
        (b"\x0c\x00\x00\x00\x01\x01\x00\x00", 1, "left after"),  # stray byte after the last record
        (b"\x0e\x00\x00\x00\x01\x01\x00\x00", 1, "length says"),  # length claims one byte more than parsed
        (b"\x0c\x00\x00\x00\x03\x01\x00", 1, "negative key length"),
        (b"\x0c\x00\x00\x00\x01\x05\x00", 1, "negative value length"),
        (b"\x0c\x00\x00\x00\x01\x01\x01", 1, "header count"),  # header count -1
        (b"\x0c\x00\x00\x00\x01\x01\xfe\xff\xff\xff\x0f", 1, "header count"),  # huge header count
        (b"\x10\x00\x00\x00\x01\x01\x02\x01\x00", 1, "negative header key"),
        (b"\x12\x00\x00\x00\x01\x01\x02\x02\xff\x01", 1, "utf-8"),  # header key not UTF-8
        (b"\x0c\x00\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x00", 1, "varlong"),  # 11-byte varlong
        (b"\x0c\x00\x00\xff\xff\xff\xff\xff", 1, "varint"),  # 6-byte varint
        (b"\x0c\x00\x00", 1, "cannot fit"),
    ],
)
def test_malformed_records_raise_decode_error_with_a_reason(body, count, match):
    data = _v2_with_body(body, count)
    if match is None:
        assert decode_batch(data).records == [Record(0, T0, None, None, [])]
        return
    with pytest.raises(DecodeError, match=match) as info:
        decode_batch(data)
    assert info.value.message == "RecordBatch" and info.value.version == 2


def test_hostile_counts_fail_fast():
    started = time.monotonic()
    for count in ((1 << 31) - 1, 10_000_000):
        with pytest.raises(DecodeError):
            decode_batch(_v2_with_body(b"\x00" * 1000, count))
    packed = compress(Compression.ZSTD, b"\x00" * 1_000_000)
    with pytest.raises(DecodeError, match="exceeds"):
        decode_batch(_v2_with_body(packed, 5, codec=4), max_decompressed_size=100_000)
    assert time.monotonic() - started < 5


valid_blobs = [
    encode_batch(sample_records(magic), magic=magic, compression=codec) for magic, codec in MAGIC_CODECS
] + [mixed_blob()]


def _decode_everything(data: bytes) -> None:
    for batch in iter_batches(data):
        assert batch.records is not None
    for header in iter_batch_headers(data):
        assert header.size_in_bytes > 0
    truncated_tail(data)
    try:
        decode_batch(data)
    except DecodeError:
        pass
    for verify in (True, False):
        list(iter_batches(data, verify_crc=verify))


@settings(max_examples=300)
@given(
    blob=st.sampled_from(valid_blobs),
    edits=st.lists(st.tuples(st.integers(min_value=0), st.integers(min_value=0, max_value=255)), max_size=4),
    cut=st.none() | st.integers(min_value=0),
)
def test_fuzz_mutations_and_truncations_raise_only_decode_error(blob, edits, cut):
    data = bytearray(blob)
    for position, byte in edits:
        data[position % len(data)] = byte
    if cut is not None:
        del data[cut % (len(data) + 1) :]
    try:
        _decode_everything(bytes(data))
    except DecodeError:
        pass


@settings(max_examples=300)
@given(
    magic=st.sampled_from([0, 1, 2]),
    tail=st.binary(max_size=200),
    length=st.integers(min_value=-5, max_value=300),
)
def test_fuzz_random_bodies_raise_only_decode_error(magic, tail, length):
    data = struct.pack(">qi", 0, length) + b"\x00\x00\x00\x00" + bytes([magic]) + tail
    try:
        _decode_everything(data)
    except DecodeError:
        pass


@settings(max_examples=200)
@given(data=st.binary(max_size=120))
def test_fuzz_arbitrary_bytes_raise_only_decode_error(data):
    try:
        _decode_everything(data)
    except DecodeError:
        pass


def test_fuzz_v2_records_with_valid_crc():
    # Mutations above mostly trip the CRC; here the CRC is fixed up so the record parser itself is fuzzed.
    @settings(max_examples=400)
    @given(
        blob=st.sampled_from([encode_batch(sample_records(2), compression=c) for c in Compression]),
        edits=st.lists(
            st.tuples(st.integers(min_value=61), st.integers(min_value=0, max_value=255)), max_size=3
        ),
        cut=st.integers(min_value=61),
    )
    def check(blob, edits, cut):
        data = bytearray(blob)
        for position, byte in edits:
            data[position % len(data)] = byte
        del data[max(61, cut % (len(data) + 1)) :]
        struct.pack_into(">i", data, 8, len(data) - 12)
        struct.pack_into(">I", data, 17, crc32c.crc32c(data[21:]))
        try:
            decode_batch(bytes(data))
        except DecodeError:
            pass

    check()


# --- peers: kafka-python and aiokafka, both ways ------------------------------------------------------------


def _norm(timestamp):
    return -1 if timestamp is None else timestamp


def _peer_read(memory_records_class, data: bytes) -> list[tuple]:
    out = []
    records = memory_records_class(bytes(data))
    while records.has_next():
        for r in records.next_batch():
            out.append((r.offset, _norm(r.timestamp), r.key, r.value, list(r.headers)))
    return out


def _peer_supports(peer: str, magic: int, codec: int) -> None:
    if peer == "kafka-python":
        codecs = pytest.importorskip("kafka.codec")
    else:
        codecs = pytest.importorskip("aiokafka.codec")
    available = {1: codecs.has_gzip, 2: codecs.has_snappy, 3: codecs.has_lz4, 4: codecs.has_zstd}
    if codec and not available[codec]():
        pytest.skip(f"{peer} lacks the library for codec {codec}")


def _lacks_lz4_for_magic_0(peer: str, magic: int, codec: int) -> bool:
    """aiokafka refuses LZ4 in magic 0 message sets both ways ("LZ4 is not supported for broker version
    0.8/0.9", ``legacy_records.py``); kafka-python reads and writes them. The cases it refuses assert
    that it still does, so a release that adds it turns the cross-check on instead of hiding it."""
    return peer == "aiokafka" and magic == 0 and codec == Compression.LZ4


def _peer_refuses(action) -> None:
    from aiokafka.errors import UnsupportedCodecError

    with pytest.raises(UnsupportedCodecError, match="LZ4 is not supported for broker version 0.8/0.9"):
        action()


def _peer_memory_records(peer: str):
    if peer == "kafka-python":
        return pytest.importorskip("kafka.record.memory_records").MemoryRecords
    return pytest.importorskip("aiokafka.record.memory_records").MemoryRecords


def _peer_write(peer: str, magic: int, codec: int, records: list[Record]) -> bytes:
    """The peer's bytes for ``records`` (offsets 0..n-1, as producers write them)."""
    if peer == "kafka-python":
        from kafka.record.memory_records import MemoryRecordsBuilder

        builder = MemoryRecordsBuilder(magic, int(codec), 1 << 24)
        for r in records:
            builder.append(r.timestamp, r.key, r.value, r.headers)
        builder.close()
        return bytes(builder.buffer())
    if magic == 2:
        from aiokafka.record.default_records import DefaultRecordBatchBuilder

        builder = DefaultRecordBatchBuilder(2, int(codec), 0, -1, -1, -1, 1 << 24)
        for i, r in enumerate(records):
            builder.append(i, timestamp=r.timestamp, key=r.key, value=r.value, headers=r.headers)
    else:
        from aiokafka.record.legacy_records import LegacyRecordBatchBuilder

        builder = LegacyRecordBatchBuilder(magic, int(codec), 1 << 24)
        for i, r in enumerate(records):
            builder.append(i, timestamp=r.timestamp, key=r.key, value=r.value)
    return bytes(builder.build())


PEERS = ["kafka-python", "aiokafka"]


@pytest.mark.peer
@pytest.mark.parametrize("peer", PEERS)
@pytest.mark.parametrize(("magic", "codec"), MAGIC_CODECS)
def test_peer_reads_our_bytes(peer, magic, codec):
    _peer_supports(peer, magic, codec)
    records = sample_records(magic, base_offset=1000, n=40)
    data = encode_batch(records, magic=magic, compression=codec, base_offset=1000)
    if _lacks_lz4_for_magic_0(peer, magic, codec):
        _peer_refuses(lambda: _peer_read(_peer_memory_records(peer), data))
        return
    assert _peer_read(_peer_memory_records(peer), data) == expected(records, magic)


@pytest.mark.peer
@pytest.mark.parametrize("peer", PEERS)
@pytest.mark.parametrize(("magic", "codec"), MAGIC_CODECS)
def test_we_read_peer_bytes(peer, magic, codec):
    _peer_supports(peer, magic, codec)
    records = sample_records(magic, n=40)
    if _lacks_lz4_for_magic_0(peer, magic, codec):
        _peer_refuses(lambda: _peer_write(peer, magic, codec, records))
        return
    data = _peer_write(peer, magic, codec, records)
    assert as_tuples(data) == expected(records, magic)
    assert truncated_tail(data) == 0
    assert _peer_read(_peer_memory_records(peer), data) == expected(records, magic)  # the peer agrees


@pytest.mark.peer
@pytest.mark.parametrize("peer", PEERS)
@settings(max_examples=30)
@given(rows=st.lists(record_strategy, min_size=1, max_size=15), codec=st.sampled_from(list(Compression)))
def test_peer_agreement_on_any_v2_records(peer, rows, codec):
    _peer_supports(peer, 2, codec)
    records = [Record(i, ts, k, v, [(hk, hv) for hk, hv in h]) for i, (ts, k, v, h) in enumerate(rows)]
    ours = encode_batch(records, compression=codec)
    assert _peer_read(_peer_memory_records(peer), ours) == expected(records, 2)
    assert as_tuples(_peer_write(peer, 2, codec, records)) == expected(records, 2)


@pytest.mark.peer
def test_legacy_lz4_magic_0_interop_with_kafka_python():
    _peer_supports("kafka-python", 0, Compression.LZ4)
    records = sample_records(0, n=10)
    ours = encode_batch(records, magic=0, compression=Compression.LZ4)
    theirs = _peer_write("kafka-python", 0, Compression.LZ4, records)
    for data in (ours, theirs):
        value_at = 18 + 4 + 4
        lz4_frame = data[value_at:]
        broken = (__import__("xxhash").xxh32_intdigest(lz4_frame[:6]) >> 8) & 0xFF
        assert lz4_frame[6] == broken  # both write the broken header checksum
        assert as_tuples(data) == expected(records, 0)
        assert _peer_read(_peer_memory_records("kafka-python"), data) == expected(records, 0)


@pytest.mark.peer
@pytest.mark.parametrize("peer", PEERS)
def test_peer_transactional_and_control_fields(peer):
    _peer_supports(peer, 2, 0)
    if peer == "kafka-python":
        from kafka.record.default_records import DefaultRecordBatch
    else:
        from aiokafka.record.default_records import DefaultRecordBatch
    data = encode_batch(
        sample_records(2), producer_id=99, producer_epoch=4, base_sequence=12, is_transactional=True
    )
    theirs = DefaultRecordBatch(data)
    assert theirs.is_transactional and not theirs.is_control_batch
    assert (theirs.producer_id, theirs.producer_epoch, theirs.base_sequence) == (99, 4, 12)
    assert theirs.validate_crc()
    marker = DefaultRecordBatch(
        encode_end_txn_marker_batch(
            producer_id=99, producer_epoch=4, commit=True, coordinator_epoch=1, timestamp=T0
        )
    )
    assert marker.is_control_batch and marker.is_transactional and marker.validate_crc()


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
