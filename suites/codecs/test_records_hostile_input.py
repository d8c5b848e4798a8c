"""kconform.codecs.records against hostile input: corrupted CRCs, sizes and magics, malformed records
with a valid CRC, hostile counts, and fuzzed mutations, truncations and random bytes, all of which
must raise only ``DecodeError``."""

from __future__ import annotations

import struct
import time

import crc32c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kconform.codecs import DecodeError
from kconform.codecs.compression import Compression, compress
from kconform.codecs.records import (
    Record,
    decode_batch,
    encode_batch,
    iter_batch_headers,
    iter_batches,
    truncated_tail,
)

from ..support.record_samples import (
    MAGIC_CODECS,
    T0,
    mixed_blob,
    sample_records,
)

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
