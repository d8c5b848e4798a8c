"""kconform.codecs.compression: Kafka's framings, the compatibility cases, and bounded decompression."""

from __future__ import annotations

import os
import struct
import time
import zlib

import cramjam
import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st

from kconform.codecs.compression import (
    MAX_DECOMPRESSED_SIZE,
    Compression,
    DecompressionError,
    compress,
    decompress,
)

# Text-like data compresses; random data does not (exercises LZ4's stored blocks).
TEXTY = b"".join(b"record-%06d:{'user': %d, 'event': 'click'}\n" % (i, i % 97) for i in range(4000))
RANDOM = os.urandom(150_000)
CODEC_MAGICS = [(codec, magic) for codec in Compression for magic in (0, 1, 2) if codec != 4 or magic == 2]
SIZES = [0, 1, 100, 32 * 1024 - 1, 32 * 1024, 32 * 1024 + 1, 64 * 1024, 64 * 1024 + 1, len(TEXTY)]


@pytest.mark.parametrize(("codec", "magic"), CODEC_MAGICS)
@pytest.mark.parametrize("size", SIZES)
def test_round_trip_every_codec_and_magic(codec, magic, size):
    data = TEXTY[:size]
    assert decompress(codec, compress(codec, data, magic=magic), magic=magic) == data
    noise = RANDOM[:size]
    assert decompress(codec, compress(codec, noise, magic=magic), magic=magic) == noise


@pytest.mark.parametrize(("codec", "magic"), CODEC_MAGICS)
@settings(max_examples=40)
@given(data=st.binary(max_size=3000))
def test_round_trip_any_bytes(codec, magic, data):
    assert decompress(codec, compress(codec, data, magic=magic), magic=magic) == data


@pytest.mark.parametrize("codec", [Compression.GZIP, Compression.LZ4, Compression.ZSTD])
def test_levels_round_trip_and_change_output(codec):
    low, high = {Compression.GZIP: (1, 9), Compression.LZ4: (1, 17), Compression.ZSTD: (1, 19)}[codec]
    fast = compress(codec, TEXTY, level=low)
    small = compress(codec, TEXTY, level=high)
    assert decompress(codec, fast) == decompress(codec, small) == TEXTY
    assert len(small) <= len(fast)


@pytest.mark.parametrize(
    ("codec", "level"), [(Compression.GZIP, 10), (Compression.LZ4, 0), (Compression.ZSTD, 23)]
)
def test_out_of_range_level_is_rejected(codec, level):
    with pytest.raises(ValueError):
        compress(codec, b"x", level=level)


def test_memoryview_and_bytearray_inputs():
    for codec in Compression:
        packed = compress(codec, memoryview(TEXTY))
        assert decompress(codec, bytearray(packed)) == TEXTY
        assert decompress(codec, memoryview(packed)) == TEXTY


def test_decompression_error_is_a_value_error():
    assert issubclass(DecompressionError, ValueError)
    with pytest.raises(DecompressionError, match="unknown compression codec 6"):
        decompress(6, b"")


# --- gzip ------------------------------------------------------------------------------------------


def test_gzip_writes_the_jdk_header_and_a_valid_trailer():
    packed = compress(Compression.GZIP, TEXTY)
    assert packed[:10] == b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
    crc, size = struct.unpack("<II", packed[-8:])
    assert crc == zlib.crc32(TEXTY) and size == len(TEXTY)
    assert zlib.decompress(packed, 31) == TEXTY


def test_gzip_concatenated_members_decode_and_trailing_garbage_does_not():
    a, b = compress(Compression.GZIP, b"first "), compress(Compression.GZIP, b"second")
    assert decompress(Compression.GZIP, a + b) == b"first second"
    with pytest.raises(DecompressionError, match="trailing"):
        decompress(Compression.GZIP, a + b"junk")


def test_gzip_truncated_stream_is_an_error():
    packed = compress(Compression.GZIP, TEXTY)
    for cut in (5, 11, len(packed) // 2, len(packed) - 1):
        with pytest.raises(DecompressionError):
            decompress(Compression.GZIP, packed[:cut])


# --- snappy ----------------------------------------------------------------------------------------


def _xerial_blocks(packed: bytes) -> list[bytes]:
    assert packed[:16] == b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
    blocks, pos = [], 16
    while pos < len(packed):
        (size,) = struct.unpack_from(">i", packed, pos)
        blocks.append(packed[pos + 4 : pos + 4 + size])
        pos += 4 + size
    assert pos == len(packed)
    return blocks


@pytest.mark.parametrize("magic", [0, 1, 2])
def test_snappy_writes_xerial_framing_with_32k_blocks_for_every_magic(magic):
    packed = compress(Compression.SNAPPY, TEXTY, magic=magic)
    blocks = _xerial_blocks(packed)
    assert len(blocks) == -(-len(TEXTY) // (32 * 1024))
    assert b"".join(bytes(cramjam.snappy.decompress_raw(block)) for block in blocks) == TEXTY


def test_snappy_decodes_raw_snappy_too():
    assert decompress(Compression.SNAPPY, bytes(cramjam.snappy.compress_raw(TEXTY))) == TEXTY
    assert decompress(Compression.SNAPPY, bytes(cramjam.snappy.compress_raw(b""))) == b""


def test_snappy_xerial_variants():
    block = bytes(cramjam.snappy.compress_raw(b"hello"))
    framed = struct.pack(">i", len(block)) + block
    # version fields written little-endian by some producers are accepted
    little = b"\x82SNAPPY\x00" + struct.pack("<ii", 1, 1) + framed
    assert decompress(Compression.SNAPPY, little) == b"hello"
    # concatenated xerial streams (a second header mid-stream)
    twice = compress(Compression.SNAPPY, b"ab") + compress(Compression.SNAPPY, b"cd")
    assert decompress(Compression.SNAPPY, twice) == b"abcd"
    assert decompress(Compression.SNAPPY, compress(Compression.SNAPPY, b"")) == b""


@pytest.mark.parametrize(
    "mangle",
    [
        lambda p: p[:10],  # header cut short
        lambda p: p[:18],  # block length cut short
        lambda p: p[:-3],  # block cut short
        lambda p: p[:16] + b"\xff\xff\xff\xff" + p[20:],  # negative block length
        lambda p: p[:16] + b"\x7f\xff\xff\xff" + p[20:],  # block length past the end
        lambda p: p[:20] + b"\xff" * 8 + p[28:],  # corrupt snappy block
    ],
)
def test_snappy_malformed_xerial_is_an_error(mangle):
    with pytest.raises(DecompressionError):
        decompress(Compression.SNAPPY, mangle(compress(Compression.SNAPPY, TEXTY)))


# --- lz4 -------------------------------------------------------------------------------------------


def _hc(data: bytes) -> int:
    return (xxhash.xxh32_intdigest(data) >> 8) & 0xFF


@pytest.mark.parametrize("magic", [1, 2])
def test_lz4_frame_header_as_kafka_writes_it(magic):
    packed = compress(Compression.LZ4, TEXTY, magic=magic)
    assert packed[:4] == b"\x04\x22\x4d\x18"  # 0x184D2204 little-endian
    assert packed[4] == 0x60  # version 1, independent blocks, no checksums, no content size
    assert packed[5] == 0x40  # 64 KiB blocks
    assert packed[6] == _hc(packed[4:6])
    assert packed[-4:] == b"\x00\x00\x00\x00"  # end mark, no content checksum


def test_lz4_magic_0_writes_the_broken_header_checksum():
    packed = compress(Compression.LZ4, TEXTY, magic=0)
    assert packed[6] == _hc(packed[0:6])  # hashed over the magic number too (KIP-57)
    assert packed[6] != _hc(packed[4:6])
    assert decompress(Compression.LZ4, packed, magic=0) == TEXTY
    # readers of magic >= 1 insist on the correct checksum, as Java's
    with pytest.raises(DecompressionError, match="descriptor checksum"):
        decompress(Compression.LZ4, packed, magic=1)


def test_lz4_magic_0_reader_accepts_a_correct_checksum_too():
    assert decompress(Compression.LZ4, compress(Compression.LZ4, TEXTY, magic=2), magic=0) == TEXTY


def test_lz4_incompressible_blocks_are_stored():
    packed = compress(Compression.LZ4, RANDOM[:1000])
    (word,) = struct.unpack_from("<I", packed, 7)
    assert word == 1000 | 0x80000000
    assert packed[11:1011] == RANDOM[:1000]


def test_lz4_frames_with_checksums_and_content_size_from_other_writers():
    lz4_frame = pytest.importorskip("lz4.frame")
    for options in (
        {"block_checksum": True},
        {"content_checksum": True},
        {"store_size": True},
        {"block_size": lz4_frame.BLOCKSIZE_MAX4MB, "content_checksum": True},
    ):
        packed = lz4_frame.compress(TEXTY, block_linked=False, **options)
        assert decompress(Compression.LZ4, packed) == TEXTY


def test_lz4_checksum_mismatches_are_errors():
    lz4_frame = pytest.importorskip("lz4.frame")
    packed = bytearray(lz4_frame.compress(TEXTY, block_linked=False, content_checksum=True))
    packed[-1] ^= 0xFF
    with pytest.raises(DecompressionError, match="content checksum"):
        decompress(Compression.LZ4, bytes(packed))
    packed = bytearray(lz4_frame.compress(TEXTY, block_linked=False, block_checksum=True))
    (size,) = struct.unpack_from("<I", packed, 7)
    packed[7 + 4 + (size & 0x7FFFFFFF)] ^= 0xFF
    with pytest.raises(DecompressionError, match="block checksum"):
        decompress(Compression.LZ4, bytes(packed))


def test_lz4_rejects_what_kafka_rejects():
    good = compress(Compression.LZ4, TEXTY)
    linked = bytearray(good)
    linked[4] = 0x40  # dependent blocks
    linked[6] = _hc(bytes(linked[4:6]))
    with pytest.raises(DecompressionError, match="dependent"):
        decompress(Compression.LZ4, bytes(linked))
    with pytest.raises(DecompressionError, match="magic"):
        decompress(Compression.LZ4, b"\x00" * 20)
    with pytest.raises(DecompressionError, match="end mark"):
        decompress(Compression.LZ4, good[:-4])
    with pytest.raises(DecompressionError, match="trailing"):
        decompress(Compression.LZ4, good + b"\x00")


# --- zstd ------------------------------------------------------------------------------------------


def test_zstd_is_magic_2_only():
    with pytest.raises(ValueError):
        compress(Compression.ZSTD, b"x", magic=1)
    with pytest.raises(DecompressionError):
        decompress(Compression.ZSTD, compress(Compression.ZSTD, b"x"), magic=1)


def test_zstd_output_far_larger_than_the_first_guess():
    # 12 MiB of zeros compress to almost nothing, so the output buffer has to grow several times
    big = bytes(12 * 1024 * 1024) + TEXTY
    assert decompress(Compression.ZSTD, compress(Compression.ZSTD, big)) == big


def test_zstd_multiple_frames_and_exact_fit():
    one = compress(Compression.ZSTD, TEXTY)
    assert decompress(Compression.ZSTD, one + one) == TEXTY + TEXTY
    assert decompress(Compression.ZSTD, one, max_size=len(TEXTY)) == TEXTY
    with pytest.raises(DecompressionError, match="exceeds"):
        decompress(Compression.ZSTD, one, max_size=len(TEXTY) - 1)


# --- bounds: bombs and garbage ---------------------------------------------------------------------


@pytest.mark.parametrize("codec", [Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD])
def test_decompression_bombs_stop_at_max_size(codec):
    bomb = compress(codec, bytes(64 * 1024 * 1024))
    started = time.monotonic()
    with pytest.raises(DecompressionError, match="exceeds"):
        decompress(codec, bomb, max_size=1024 * 1024)
    assert time.monotonic() - started < 5
    assert MAX_DECOMPRESSED_SIZE >= 64 * 1024 * 1024  # the default lets real (large) batches through


def test_raw_snappy_declaring_a_huge_length_is_refused_before_allocating():
    lying = b"\xff\xff\xff\xff\x0f" + b"\x00" * 10  # varint preamble says 4 GiB
    with pytest.raises(DecompressionError, match="exceeds"):
        decompress(Compression.SNAPPY, lying)
    lying = b"\x80\x80\x80\x30" + b"\x00" * 10  # 100 MiB, under the limit but not from 10 bytes
    with pytest.raises(DecompressionError, match="cannot expand"):
        decompress(Compression.SNAPPY, lying)


@pytest.mark.parametrize("codec", list(Compression)[1:])
@settings(max_examples=150)
@given(data=st.binary(max_size=400))
def test_garbage_raises_only_decompression_error(codec, data):
    try:
        decompress(codec, data, max_size=1 << 20)
    except DecompressionError:
        pass


@pytest.mark.parametrize("codec", list(Compression)[1:])
@settings(max_examples=100)
@given(position=st.integers(min_value=0), flip=st.integers(min_value=1, max_value=255), cut=st.booleans())
def test_mutated_streams_raise_only_decompression_error(codec, position, flip, cut):
    packed = bytearray(compress(codec, TEXTY[:5000]))
    position %= len(packed)
    if cut:
        del packed[position:]
    else:
        packed[position] ^= flip
    try:
        decompress(codec, bytes(packed), max_size=1 << 20)
    except DecompressionError:
        pass


# --- peers ------------------------------------------------------------------------------------------


def _peer_codecs(module):
    table = {
        Compression.GZIP: (module.gzip_encode, module.gzip_decode, module.has_gzip),
        Compression.SNAPPY: (module.snappy_encode, module.snappy_decode, module.has_snappy),
        Compression.LZ4: (module.lz4_encode, module.lz4_decode, module.has_lz4),
        Compression.ZSTD: (module.zstd_encode, module.zstd_decode, module.has_zstd),
    }
    return table


@pytest.mark.peer
@pytest.mark.parametrize("peer", ["kafka.codec", "aiokafka.codec"])
@pytest.mark.parametrize("codec", list(Compression)[1:])
def test_peer_codecs_read_ours_and_we_read_theirs(peer, codec):
    module = pytest.importorskip(peer)
    encode, decode, available = _peer_codecs(module)[codec]
    if not available():
        pytest.skip(f"{peer} lacks the library for {codec.name}")
    # Empty input is left out for snappy: like snappy-java we write a bare 16-byte xerial header, which
    # both peers misread as raw snappy (they detect xerial framing only when more than 16 bytes follow).
    for data in (TEXTY, RANDOM[:70_000]) if codec == Compression.SNAPPY else (b"", TEXTY, RANDOM[:70_000]):
        assert bytes(decode(compress(codec, data))) == data
        assert decompress(codec, bytes(encode(data))) == data


@pytest.mark.peer
@pytest.mark.parametrize("peer", ["kafka.codec", "aiokafka.codec"])
def test_peer_raw_snappy_decodes(peer):
    module = pytest.importorskip(peer)
    if not module.has_snappy():
        pytest.skip(f"{peer} lacks snappy")
    raw = module.snappy_encode(TEXTY, xerial_compatible=False)
    assert not bytes(raw).startswith(b"\x82SNAPPY")
    assert decompress(Compression.SNAPPY, bytes(raw)) == TEXTY


@pytest.mark.peer
def test_legacy_lz4_broken_checksum_interop_with_kafka_python():
    codec = pytest.importorskip("kafka.codec")
    if not codec.has_lz4():
        pytest.skip("kafka-python lacks lz4")
    theirs = codec.lz4_encode_old_kafka(TEXTY)
    assert theirs[6] == _hc(theirs[0:6])  # they write the broken checksum too
    assert decompress(Compression.LZ4, theirs, magic=0) == TEXTY
    assert codec.lz4_decode_old_kafka(compress(Compression.LZ4, TEXTY, magic=0)) == TEXTY
