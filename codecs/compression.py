"""Kafka's record compression codecs, byte-compatible with what the Java client writes.

``compress`` frames each codec's output as Kafka's Java client does; ``decompress`` also accepts the
framings other real producers write (raw snappy, the broken LZ4 header checksum of magic 0) and never
produces more than ``max_size`` bytes, so a decompression bomb or garbage ends in
``DecompressionError`` quickly instead of exhausting memory.
"""

from __future__ import annotations

import struct
import zlib
from enum import IntEnum

import cramjam
import xxhash

from ._decompression_error import DecompressionError
from ._lz4_frame import LZ4_MAGIC, LZ4_RAW_BIT, lz4_blocks
from ._xerial_frame import XERIAL_MAGIC, xerial_blocks

__all__ = [
    "Compression",
    "DecompressionError",
    "MAX_DECOMPRESSED_SIZE",
    "compress",
    "decompress",
]

# Default ceiling on one decompressed payload. Kafka's own limits apply to compressed sizes only, so
# this is ours: generous for real batches, small enough that a bomb cannot take the process down.
MAX_DECOMPRESSED_SIZE = 128 * 1024 * 1024


class Compression(IntEnum):
    """The codec id carried in bits 0-2 of a batch's (or legacy message's) attributes."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


_XXH32 = xxhash.xxh32_intdigest
_U32LE = struct.Struct("<I")
_I32BE = struct.Struct(">i")

# --- gzip -----------------------------------------------------------------------------------------
# java.util.zip.GZIPOutputStream's fixed header: no name, no mtime, XFL 0, OS 255 (current JDKs).
_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
_GZIP_DEFAULT_LEVEL = 6  # Deflater.DEFAULT_COMPRESSION, Kafka's default compression.gzip.level


def _gzip_compress(data, level: int | None) -> bytes:
    if level is None:
        level = _GZIP_DEFAULT_LEVEL
    elif not (1 <= level <= 9 or level == -1):
        raise ValueError(f"gzip level must be 1..9 (or -1 for the default), got {level}")
    deflater = zlib.compressobj(level, zlib.DEFLATED, -15)
    body = deflater.compress(data) + deflater.flush()
    trailer = struct.pack("<II", zlib.crc32(data), len(data) & 0xFFFFFFFF)
    return b"".join((_GZIP_HEADER, body, trailer))


def _gzip_decompress(data, limit: int) -> bytes:
    out = bytearray()
    rest = data
    while True:
        inflater = zlib.decompressobj(31)  # gzip wrapper only, as GZIPInputStream
        pending = rest
        try:
            while not inflater.eof:
                chunk = inflater.decompress(pending, limit - len(out) + 1)
                out += chunk
                if len(out) > limit:
                    raise DecompressionError(f"gzip: output exceeds {limit} bytes")
                pending = inflater.unconsumed_tail
                if not chunk and not pending and not inflater.eof:
                    raise DecompressionError("gzip: stream is truncated")
        except zlib.error as exc:
            raise DecompressionError(f"gzip: {exc}") from None
        rest = inflater.unused_data
        if not rest:
            return bytes(out)
        # Concatenated members are legal gzip (GZIPInputStream reads them); anything else is not.
        if rest[:2] != b"\x1f\x8b":
            raise DecompressionError(f"gzip: {len(rest)} bytes of trailing data after the stream")


# --- snappy ---------------------------------------------------------------------------------------
# snappy-java's SnappyOutputStream framing, which the Java client writes for every magic.
_XERIAL_HEADER = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024  # SnappyOutputStream's default block size


def _snappy_compress(data) -> bytes:
    view = memoryview(data)
    parts = [_XERIAL_HEADER]
    compress_raw = cramjam.snappy.compress_raw
    pack = _I32BE.pack
    for start in range(0, len(view), _XERIAL_BLOCK):
        block = bytes(compress_raw(view[start : start + _XERIAL_BLOCK]))
        parts.append(pack(len(block)))
        parts.append(block)
    return b"".join(parts)


def _snappy_raw(block, limit: int, out: bytearray) -> None:
    try:
        size = cramjam.snappy.decompress_raw_len(block)
        if size > limit - len(out):
            raise DecompressionError(f"snappy: output exceeds {limit} bytes")
        # A snappy copy tag of 3 bytes yields at most 64 bytes, so a larger claim is a lie: refuse it
        # before allocating the buffer it asks for.
        if size > 22 * len(block) + 64:
            raise DecompressionError(f"snappy: {len(block)} bytes cannot expand to the {size} they declare")
        target = bytearray(size)
        written = cramjam.snappy.decompress_raw_into(block, target)
    except cramjam.DecompressionError as exc:
        raise DecompressionError(f"snappy: {exc}") from None
    if written != size:
        raise DecompressionError("snappy: block shorter than its declared length")
    out += target


def _snappy_decompress(data, limit: int) -> bytes:
    view = memoryview(data)
    out = bytearray()
    if view[:8] != XERIAL_MAGIC:
        # Raw snappy (librdkafka and others); snappy-java's SnappyInputStream falls back the same way.
        _snappy_raw(view, limit, out)
        return bytes(out)
    for block in xerial_blocks(view):
        _snappy_raw(block, limit, out)
    return bytes(out)


# --- lz4 ------------------------------------------------------------------------------------------
# LZ4 frame as Kafka's Lz4BlockOutputStream writes it: version 1, independent blocks, no checksums,
# no content size, 64 KiB blocks, incompressible blocks stored raw.
_LZ4_MAGIC_BYTES = _U32LE.pack(LZ4_MAGIC)
_LZ4_FLG = 0x60
_LZ4_BD = 0x40
_LZ4_BLOCK = 64 * 1024
_LZ4_DEFAULT_LEVEL = 9  # Kafka's default compression.lz4.level, which means lz4's fast compressor


def _lz4_header(magic: int) -> bytes:
    descriptor = _LZ4_MAGIC_BYTES + bytes((_LZ4_FLG, _LZ4_BD))
    # KIP-57: magic 0 keeps Kafka's historic bug of hashing the magic number into the header checksum.
    hashed = descriptor if magic == 0 else descriptor[4:]
    return descriptor + bytes(((_XXH32(hashed) >> 8) & 0xFF,))


def _lz4_compress(data, magic: int, level: int | None) -> bytes:
    if level is None:
        level = _LZ4_DEFAULT_LEVEL
    elif not 1 <= level <= 17:
        raise ValueError(f"lz4 level must be 1..17, got {level}")
    if level == _LZ4_DEFAULT_LEVEL:
        options: dict = {}
    else:
        options = {"mode": "high_compression", "compression": level}
    compress_block = cramjam.lz4.compress_block
    pack = _U32LE.pack
    view = memoryview(data)
    parts = [_lz4_header(magic)]
    for start in range(0, len(view), _LZ4_BLOCK):
        chunk = view[start : start + _LZ4_BLOCK]
        block = bytes(compress_block(chunk, store_size=False, **options))
        if len(block) >= len(chunk):
            parts.append(pack(len(chunk) | LZ4_RAW_BIT))
            parts.append(bytes(chunk))
        else:
            parts.append(pack(len(block)))
            parts.append(block)
    parts.append(b"\x00\x00\x00\x00")  # end mark
    return b"".join(parts)


def _lz4_decompress(data, magic: int, limit: int) -> bytes:
    out = bytearray()
    for block in lz4_blocks(data, magic, limit):
        out += block
    return bytes(out)


# --- zstd -----------------------------------------------------------------------------------------
_ZSTD_DEFAULT_LEVEL = 3  # Kafka's default compression.zstd.level
_ZSTD_FIRST_GUESS = 256 * 1024


def _zstd_compress(data, level: int | None) -> bytes:
    if level is None:
        level = _ZSTD_DEFAULT_LEVEL
    elif not -131072 <= level <= 22:
        raise ValueError(f"zstd level must be -131072..22, got {level}")
    return bytes(cramjam.zstd.compress(data, level=level))


def _zstd_decompress(data, limit: int) -> bytes:
    # cramjam cannot cap its own output, but decompress_into stops at the end of the buffer it is
    # given; grow the buffer geometrically up to the limit, so total work stays within twice the
    # final output even for a bomb.
    size = min(limit, max(_ZSTD_FIRST_GUESS, 8 * len(data)))
    while True:
        target = bytearray(size + 1)  # one spare byte tells "fits exactly" from "cut short"
        try:
            written = cramjam.zstd.decompress_into(data, target)
        except cramjam.DecompressionError as exc:
            if "whole buffer" not in str(exc):
                raise DecompressionError(f"zstd: {exc}") from None
            written = size + 1
        if written <= size:
            del target[written:]
            return bytes(target)
        if size >= limit:
            raise DecompressionError(f"zstd: output exceeds {limit} bytes")
        size = min(limit, size * 4)


# --- entry points ---------------------------------------------------------------------------------


def compress(codec: Compression | int, data, *, magic: int = 2, level: int | None = None) -> bytes:
    """Compress ``data`` (any bytes-like) as Kafka's Java client does for a batch of ``magic``.

    ``level`` is the codec's compression level (Kafka's ``compression.<codec>.level``); ``None`` means
    Kafka's default. Snappy has no levels and ignores it.
    """
    codec = Compression(codec)
    if codec is Compression.NONE:
        return bytes(data)
    if codec is Compression.GZIP:
        return _gzip_compress(data, level)
    if codec is Compression.SNAPPY:
        return _snappy_compress(data)
    if codec is Compression.LZ4:
        return _lz4_compress(data, magic, level)
    if magic < 2:
        raise ValueError("zstd requires magic 2 (record batches); legacy message sets cannot carry it")
    return _zstd_compress(data, level)


def decompress(
    codec: Compression | int, data, *, magic: int = 2, max_size: int = MAX_DECOMPRESSED_SIZE
) -> bytes:
    """Decompress ``data`` written with ``codec`` inside a batch of ``magic``.

    Raises ``DecompressionError`` for malformed or truncated input, or output beyond ``max_size``.
    """
    try:
        codec = Compression(codec)
    except ValueError:
        raise DecompressionError(f"unknown compression codec {codec}") from None
    try:
        return _decompress(codec, data, magic, max_size)
    except DecompressionError:
        raise
    except Exception as exc:  # the codec libraries' own error types: one boundary, one exception type
        raise DecompressionError(f"{codec.name.lower()}: {type(exc).__name__}: {exc}") from None


def _decompress(codec: Compression, data, magic: int, max_size: int) -> bytes:
    if codec is Compression.NONE:
        if len(data) > max_size:
            raise DecompressionError(f"payload exceeds {max_size} bytes")
        return bytes(data)
    if codec is Compression.GZIP:
        return _gzip_decompress(data, max_size)
    if codec is Compression.SNAPPY:
        return _snappy_decompress(data, max_size)
    if codec is Compression.LZ4:
        return _lz4_decompress(data, magic, max_size)
    if magic < 2:
        raise DecompressionError("zstd requires magic 2; legacy message sets cannot carry it")
    return _zstd_decompress(data, max_size)
