"""lz4 and snappy payloads decompressed a block at a time, for ``_decompress_stream``.

Both of Kafka's framings are sequences of independently compressed blocks: the LZ4 frame Kafka's
``Lz4BlockInputStream`` reads (64 KiB blocks, a zero end mark) and snappy-java's xerial stream that
``SnappyInputStream`` reads (a magic header, then length-prefixed blocks). Kafka holds one block's
output at a time; so do these generators. They accept and refuse what ``compression.decompress``
accepts and refuses, with its messages, but only when the stream gets there: some pieces may have been
handed out before an error. Raw (unframed) snappy is one block, decompressed whole as before (at most
22 times its input: the same bound ``compression`` applies)."""

from __future__ import annotations

import struct
from collections.abc import Iterator

import cramjam
import xxhash

from .compression import DecompressionError, decompress

__all__ = ["lz4_chunks", "snappy_chunks"]

_U32LE = struct.Struct("<I")
_I32BE = struct.Struct(">i")
_LZ4_MAGIC = 0x184D2204
_LZ4_RAW_BIT = 0x80000000
_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER_SIZE = 16
_SNAPPY_MAX_RATIO = 22  # the most a snappy block can expand, plus 64 bytes (see compression._snappy_raw)


def _pieces(view, chunk_size: int) -> Iterator[memoryview]:
    for start in range(0, len(view), chunk_size):
        yield view[start : start + chunk_size]


def lz4_chunks(data, magic: int, limit: int, chunk_size: int) -> Iterator[memoryview | bytes]:
    """The LZ4 frame ``data`` decompressed one block at a time (each block in pieces of at most
    ``chunk_size``); the frame checks of ``compression._lz4_decompress``."""
    view = memoryview(data)
    end = len(view)
    pos, flg, max_block, content_size = _lz4_frame_header(view, magic, limit)
    content_hash = xxhash.xxh32() if flg & 0x04 else None
    scratch = bytearray(max_block)
    total = 0
    while True:
        if end - pos < 4:
            raise DecompressionError("lz4: frame is truncated (no end mark)")
        (word,) = _U32LE.unpack_from(view, pos)
        pos += 4
        if word == 0:
            break
        size = word & ~_LZ4_RAW_BIT
        if size > max_block:
            raise DecompressionError(f"lz4: block of {size} bytes exceeds the frame's maximum {max_block}")
        if size > end - pos:
            raise DecompressionError("lz4: block is truncated")
        block = view[pos : pos + size]
        pos += size
        if flg & 0x10:
            if end - pos < 4:
                raise DecompressionError("lz4: block checksum is truncated")
            if _U32LE.unpack_from(view, pos)[0] != xxhash.xxh32_intdigest(block):
                raise DecompressionError("lz4: block checksum mismatch")
            pos += 4
        if word & _LZ4_RAW_BIT:
            piece = block
        else:
            try:
                written = cramjam.lz4.decompress_block_into(block, scratch)
            except cramjam.DecompressionError as exc:
                raise DecompressionError(f"lz4: {exc}") from None
            piece = memoryview(scratch)[:written]
        total += len(piece)
        if total > limit:
            raise DecompressionError(f"lz4: output exceeds {limit} bytes")
        if content_hash is not None:
            content_hash.update(piece)
        yield from _pieces(piece, chunk_size)  # handed out before ``scratch`` is reused
    if content_hash is not None:
        if end - pos < 4:
            raise DecompressionError("lz4: content checksum is truncated")
        if _U32LE.unpack_from(view, pos)[0] != content_hash.intdigest():
            raise DecompressionError("lz4: content checksum mismatch")
        pos += 4
    if content_size is not None and content_size != total:
        raise DecompressionError(f"lz4: frame declares {content_size} bytes but holds {total}")
    if pos != end:
        raise DecompressionError(f"lz4: {end - pos} bytes of trailing data after the frame")


def _lz4_frame_header(view: memoryview, magic: int, limit: int) -> tuple[int, int, int, int | None]:
    """The frame descriptor's checks: where the blocks start, FLG, the block size and content size."""
    end = len(view)
    if end < 7:
        raise DecompressionError("lz4: frame header is truncated")
    if _U32LE.unpack_from(view, 0)[0] != _LZ4_MAGIC:
        raise DecompressionError("lz4: not an LZ4 frame (bad magic number)")
    flg, bd = view[4], view[5]
    if flg >> 6 != 1:
        raise DecompressionError(f"lz4: unsupported frame version {flg >> 6}")
    if flg & 0x03:
        raise DecompressionError("lz4: reserved FLG bits set (dictionary ids are not supported)")
    if not flg & 0x20:
        raise DecompressionError("lz4: dependent blocks are not supported by Kafka")
    if bd & 0x8F or not 4 <= (bd >> 4) & 7 <= 7:
        raise DecompressionError(f"lz4: invalid block descriptor 0x{bd:02x}")
    max_block = 1 << (2 * ((bd >> 4) & 7) + 8)
    pos = 6
    content_size = None
    if flg & 0x08:
        if end < 15:
            raise DecompressionError("lz4: frame header is truncated")
        content_size = struct.unpack_from("<Q", view, 6)[0]
        if content_size > limit:
            raise DecompressionError(f"lz4: declared content size {content_size} exceeds {limit} bytes")
        pos = 14
    # KIP-57: Kafka ignores the header checksum of magic 0, whose old writers hashed the magic into it
    if magic != 0 and view[pos] != (xxhash.xxh32_intdigest(view[4:pos]) >> 8) & 0xFF:
        raise DecompressionError("lz4: frame descriptor checksum mismatch")
    return pos + 1, flg, max_block, content_size


def snappy_chunks(data, limit: int, chunk_size: int) -> Iterator[memoryview | bytes]:
    """The snappy payload ``data`` decompressed one xerial block at a time, in pieces of at most
    ``chunk_size``; the checks of ``compression._snappy_decompress``."""
    view = memoryview(data)
    if view[:8] != _XERIAL_MAGIC:  # raw snappy: one block
        yield from _pieces(memoryview(decompress(2, view, max_size=limit)), chunk_size)
        return
    end = len(view)
    if end < _XERIAL_HEADER_SIZE:
        raise DecompressionError("snappy: xerial header is truncated")
    pos = _XERIAL_HEADER_SIZE
    total = 0
    while pos < end:
        if view[pos : pos + 8] == _XERIAL_MAGIC:  # a concatenated stream starts again with a header
            if end - pos < _XERIAL_HEADER_SIZE:
                raise DecompressionError("snappy: xerial header is truncated")
            pos += _XERIAL_HEADER_SIZE
            continue
        if end - pos < 4:
            raise DecompressionError("snappy: xerial block length is truncated")
        (size,) = _I32BE.unpack_from(view, pos)
        pos += 4
        if size < 0 or size > end - pos:
            raise DecompressionError(f"snappy: xerial block of {size} bytes at {pos - 4} overruns the input")
        block = _snappy_block(view[pos : pos + size], limit, total)
        pos += size
        total += len(block)
        yield from _pieces(memoryview(block), chunk_size)


def _snappy_block(block: memoryview, limit: int, total: int) -> bytearray:
    try:
        size = cramjam.snappy.decompress_raw_len(block)
        if size > limit - total:
            raise DecompressionError(f"snappy: output exceeds {limit} bytes")
        if size > _SNAPPY_MAX_RATIO * len(block) + 64:  # a lie: refuse before allocating for it
            raise DecompressionError(f"snappy: {len(block)} bytes cannot expand to the {size} they declare")
        target = bytearray(size)
        written = cramjam.snappy.decompress_raw_into(block, target)
    except cramjam.DecompressionError as exc:
        raise DecompressionError(f"snappy: {exc}") from None
    if written != size:
        raise DecompressionError("snappy: block shorter than its declared length")
    return target
