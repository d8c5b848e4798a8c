"""Reading a batch's records a piece at a time (``iter_record_chunks``, over ``decompressed_chunks``):
the same records as ``decode_batch``, and the same failures, by field kind, for the same batches; a
bomb is read without ever holding its payload or its records whole."""

from __future__ import annotations

import struct

import crc32c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kconform.codecs import DecodeError
from kconform.codecs._decompress_stream import decompressed_chunks
from kconform.codecs._v2_stream import PIECE_SIZE
from kconform.codecs.compression import Compression, DecompressionError, compress, decompress
from kconform.codecs.records import Record, TimestampType, decode_batch, encode_batch, iter_record_chunks

COMPRESSED = [c for c in Compression if c != Compression.NONE]

records_st = st.lists(
    st.builds(
        lambda ts, key, value, headers: (ts, key, value, headers),
        st.integers(-1, 2**40),
        st.none() | st.binary(max_size=20),
        st.none() | st.binary(max_size=3000),
        st.lists(st.tuples(st.text(max_size=5), st.none() | st.binary(max_size=5)), max_size=3),
    ),
    min_size=1,
    max_size=40,
)


def build(rows, codec, **kwargs) -> bytes:
    return encode_batch(
        [Record(i, ts, key, value, headers) for i, (ts, key, value, headers) in enumerate(rows)],
        compression=codec,
        **kwargs,
    )


def fields(records):
    return [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in records]


def streamed(data: bytes):
    return [r for chunk in iter_record_chunks(data) for r in chunk]


@settings(max_examples=150, deadline=None)
@given(rows=records_st, codec=st.sampled_from(list(Compression)), log_append=st.booleans())
def test_streamed_records_are_the_decoded_records(rows, codec, log_append):
    kwargs = {"timestamp_type": TimestampType.LOG_APPEND_TIME, "log_append_time": 77} if log_append else {}
    data = build(rows, codec, **kwargs)
    assert fields(streamed(data)) == fields(decode_batch(data).records)


def forged(data: bytes, payload=None, **header) -> bytes:
    buf = bytearray(data)
    if payload is not None:
        buf[61:] = payload(bytes(buf[61:]))
        struct.pack_into(">i", buf, 8, len(buf) - 12)
    if "count" in header:
        struct.pack_into(">i", buf, 57, header["count"])
    struct.pack_into(">I", buf, 17, crc32c.crc32c(bytes(buf[21:])))
    return bytes(buf)


def failure_kind(read) -> str | None:
    try:
        read()
    except DecodeError as exc:
        return "records[]" if (exc.field or "").startswith("records[") else exc.field
    return None


@settings(max_examples=300, deadline=None)
@given(
    rows=records_st,
    codec=st.sampled_from(COMPRESSED),
    cut=st.integers(0, 12),
    flip=st.integers(0, 10_000),
    extra=st.integers(0, 3),
    count_change=st.integers(-2, 2),
)
def test_streamed_failures_are_the_decoded_failures(rows, codec, cut, flip, extra, count_change):
    def mutate(payload: bytes) -> bytes:
        payload = payload[: max(0, len(payload) - cut)] + b"\x01" * extra
        if payload and flip % 3 == 0:
            where = flip % len(payload)
            payload = payload[:where] + bytes([payload[where] ^ 0xA5]) + payload[where + 1 :]
        return payload

    data = forged(build(rows, codec), payload=mutate, count=max(0, len(rows) + count_change))
    assert failure_kind(lambda: streamed(data)) == failure_kind(lambda: decode_batch(data))


@pytest.mark.parametrize("codec", COMPRESSED)
def test_decompressed_chunks_are_the_payload_in_bounded_pieces(codec):
    payload = bytes(range(256)) * 3000
    compressed = compress(codec, payload)
    pieces = [bytes(p) for p in decompressed_chunks(codec, compressed, chunk_size=4096)]
    assert b"".join(pieces) == decompress(codec, compressed)
    assert max(len(p) for p in pieces) <= 4096
    with pytest.raises(DecompressionError):
        list(decompressed_chunks(codec, compressed, max_size=len(payload) - 1))


@pytest.mark.parametrize("codec", COMPRESSED)
@pytest.mark.parametrize("damage", ["truncated", "trailing", "empty"])
def test_decompressed_chunks_refuse_what_decompress_refuses(codec, damage):
    compressed = compress(codec, b"some records " * 5000)
    bad = {"truncated": compressed[:-3], "trailing": compressed + b"\x07\x07", "empty": b""}[damage]
    try:
        expected = decompress(codec, bad)
    except DecompressionError:
        with pytest.raises(DecompressionError):
            list(decompressed_chunks(codec, bad))
    else:
        assert b"".join(bytes(p) for p in decompressed_chunks(codec, bad)) == expected


def test_a_bomb_is_read_a_piece_at_a_time():
    # 200 000 empty records: about 1.4 MB of payload in a few KB of zstd
    data = encode_batch([Record(i, 0, None, None, []) for i in range(200_000)], compression=Compression.ZSTD)
    sizes = [len(chunk) for chunk in iter_record_chunks(data)]
    assert sum(sizes) == 200_000
    assert max(sizes) <= PIECE_SIZE  # a record takes one byte at least: a list holds one piece's records
