"""kconform.codecs.records, legacy message sets and interop: the magic 0/1 layout and compressed
wrappers, what the encoder refuses, walking blobs of mixed magics with partial tails and header-only
reads, and kafka-python and aiokafka reading our bytes and we theirs."""

from __future__ import annotations

import dataclasses
import struct
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kconform.codecs import DecodeError, EncodeError
from kconform.codecs.compression import Compression, compress
from kconform.codecs.records import (
    BatchHeader,
    Record,
    RecordBatch,
    TimestampType,
    decode_batch,
    decode_batch_header,
    encode_batch,
    encode_end_txn_marker_batch,
    iter_batch_headers,
    iter_batches,
    truncated_tail,
)

from ..support.record_samples import (
    MAGIC_CODECS,
    T0,
    as_tuples,
    expected,
    mixed_blob,
    record_strategy,
    sample_records,
)

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
