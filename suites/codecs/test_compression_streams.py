"""Payloads read and written a piece at a time, as the broker reads compression bombs: the streaming
readers give the bytes and the records the whole-payload readers give, refuse what they refuse with the
same message, and the streaming writer writes the batch ``encode_batch`` writes.

lz4 and snappy go a block at a time, as Kafka's ``Lz4BlockInputStream`` and snappy-java's xerial
``SnappyInputStream`` (which Kafka's ``SnappyFactory`` wraps) read them."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kconform.codecs import DecodeError
from kconform.codecs._decompress_stream import decompressed_chunks
from kconform.codecs._v2_build_stream import StreamedV2Batch
from kconform.codecs.compression import Compression, DecompressionError, compress, decompress
from kconform.codecs.records import Record, TimestampType, decode_batch, encode_batch, iter_record_chunks

COMPRESSED = [c for c in Compression if c != Compression.NONE]
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def whole(codec, data, magic: int, limit: int):
    try:
        return bytes(decompress(codec, data, magic=magic, max_size=limit))
    except DecompressionError as exc:
        return ("refused", str(exc))


def streamed(codec, data, magic: int, limit: int, chunk_size: int):
    try:
        chunks = [
            bytes(c)
            for c in decompressed_chunks(codec, data, magic=magic, max_size=limit, chunk_size=chunk_size)
        ]
    except DecompressionError as exc:
        return ("refused", str(exc))
    assert all(len(c) <= chunk_size for c in chunks)
    return b"".join(chunks)


@st.composite
def payloads(draw):
    """Compressible payloads, sometimes large enough for several lz4 (64 KiB) or snappy (32 KiB)
    blocks, compressed with any codec and then maybe cut, flipped or extended."""
    codec = draw(st.sampled_from(COMPRESSED))
    magic = 2 if codec == Compression.ZSTD else draw(st.sampled_from([0, 1, 2]))
    unit = draw(st.binary(min_size=1, max_size=64))
    payload = unit * draw(st.integers(0, 6000)) + draw(st.binary(max_size=300))
    data = compress(codec, payload, magic=magic)
    damage = draw(st.sampled_from(["none", "none", "cut", "flip", "extend"]))
    if damage == "cut":
        data = data[: draw(st.integers(0, max(0, len(data) - 1)))]
    elif damage == "flip" and data:
        at = draw(st.integers(0, len(data) - 1))
        data = data[:at] + bytes([data[at] ^ draw(st.integers(1, 255))]) + data[at + 1 :]
    elif damage == "extend":
        data += draw(st.binary(min_size=1, max_size=9))
    limit = draw(st.sampled_from([128 << 20, len(payload), max(0, len(payload) - 1)]))
    return codec, magic, payload, data, limit


@SETTINGS
@given(case=payloads(), chunk_size=st.sampled_from([1, 7, 1000, 64 * 1024]))
def test_streamed_decompression_matches_the_whole_payload(case, chunk_size):
    codec, magic, _, data, limit = case
    got, expected = streamed(codec, data, magic, limit, chunk_size), whole(codec, data, magic, limit)
    if codec == Compression.ZSTD and isinstance(expected, tuple):
        assert got[0] == "refused"  # zstd's frame walk may name the fault in other words than cramjam
    else:
        assert got == expected


@pytest.mark.parametrize("codec", [Compression.LZ4, Compression.SNAPPY])
def test_lz4_and_snappy_bombs_are_handed_out_a_block_at_a_time(codec):
    bomb = compress(codec, bytes(20 * 1024 * 1024))
    chunks = decompressed_chunks(codec, bomb, chunk_size=16 * 1024)
    first = next(chunks)  # the first block's pieces come before the rest is decompressed
    assert len(first) == 16 * 1024 and sum(len(c) for c in chunks) == 20 * 1024 * 1024 - len(first)
    with pytest.raises(DecompressionError, match="exceeds 1048576 bytes"):
        for _ in decompressed_chunks(codec, bomb, max_size=1 << 20):
            pass


@pytest.mark.parametrize("codec", [Compression.LZ4, Compression.SNAPPY])
@pytest.mark.parametrize("cut", [1, 5, 17, 100])
def test_a_truncated_lz4_or_snappy_stream_is_refused_as_the_whole_reader_refuses_it(codec, cut):
    data = compress(codec, bytes(range(256)) * 2000)[:-cut]
    refusal = whole(codec, data, 2, 128 << 20)
    assert refusal[0] == "refused"
    assert streamed(codec, data, 2, 128 << 20, 4096) == refusal


# --- the records -------------------------------------------------------------------------------------


@st.composite
def batches(draw):
    n = draw(st.integers(1, 400))
    codec = draw(st.sampled_from(list(Compression)))
    records = [
        Record(
            i,
            draw(st.sampled_from([-1, 0, 1_700_000_000_000 + i])),
            draw(st.one_of(st.none(), st.binary(max_size=20))),
            draw(st.one_of(st.none(), st.binary(max_size=3000))),
            [("h", b"x")] if i % 3 else [],
        )
        for i in range(n)
    ]
    return codec, records


@SETTINGS
@given(case=batches())
def test_record_chunks_give_the_records_the_whole_batch_reader_gives(case):
    codec, records = case
    data = encode_batch(records, compression=codec)
    chunked = [r for chunk in iter_record_chunks(data) for r in chunk]
    assert chunked == decode_batch(data).records == records


@SETTINGS
@given(case=batches(), cut=st.integers(1, 40))
def test_a_damaged_batch_fails_chunked_where_it_fails_whole(case, cut):
    codec, records = case
    data = bytearray(encode_batch(records, compression=codec))
    data[-cut] ^= 0x5A

    def failure(read):
        try:
            read()
        except DecodeError as exc:
            return (exc.field or "").split("[")[0]
        return None

    whole_field = failure(lambda: decode_batch(bytes(data), verify_crc=False))
    chunked_field = failure(lambda: [r for chunk in iter_record_chunks(bytes(data)) for r in chunk])
    assert chunked_field == whole_field


@SETTINGS
@given(case=batches(), cuts=st.lists(st.integers(1, 150), min_size=1, max_size=5), log_append=st.booleans())
def test_a_batch_written_a_piece_at_a_time_is_the_batch_encode_batch_writes(case, cuts, log_append):
    codec, records = case
    built = StreamedV2Batch(codec)
    start = 0
    for cut in [*cuts, len(records)]:
        built.add(records[start : start + cut])
        start += cut
    sealed = built.seal(
        base_offset=40,
        producer_id=7,
        producer_epoch=1,
        base_sequence=3,
        is_transactional=False,
        partition_leader_epoch=2,
        log_append_time=99 if log_append else None,
    )
    reference = encode_batch(
        [Record(40 + r.offset, r.timestamp, r.key, r.value, r.headers) for r in records],
        compression=codec,
        base_offset=40,
        producer_id=7,
        producer_epoch=1,
        base_sequence=3,
        partition_leader_epoch=2,
        timestamp_type=TimestampType.LOG_APPEND_TIME if log_append else TimestampType.CREATE_TIME,
        log_append_time=99 if log_append else None,
    )
    assert len(sealed) == built.size
    if codec == Compression.ZSTD:  # one streamed frame: same records, no content size in its header
        ours, theirs = decode_batch(sealed), decode_batch(reference)
        assert ours.records == theirs.records
        fields = ("base_offset", "last_offset_delta", "base_timestamp", "max_timestamp", "attributes")
        assert [getattr(ours, f) for f in fields] == [getattr(theirs, f) for f in fields]
    else:
        assert sealed == reference


def test_a_batch_past_its_keep_limit_is_counted_not_kept():
    records = [Record(i, 0, None, bytes(range(256)), []) for i in range(2000)]
    built = StreamedV2Batch(Compression.NONE, keep_limit=100_000)
    built.add(records)
    sealed = built.seal(
        base_offset=0,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        is_transactional=False,
        partition_leader_epoch=0,
        log_append_time=None,
    )
    assert sealed is None and built.size == len(encode_batch(records))
