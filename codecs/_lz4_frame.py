"""Reading the LZ4 frame Kafka writes (``Lz4BlockOutputStream``, KIP-57) one block at a time: the one
reader behind both ``compression.decompress`` (which joins the blocks) and the paced stream reader
(which hands them out as they come). It accepts and refuses what Kafka's ``Lz4BlockInputStream``
accepts and refuses: independent blocks only, no dictionary ids, block and content checksums checked,
the declared content size held to, nothing after the end mark; and never more than ``limit`` bytes out."""

from __future__ import annotations

import struct
from collections.abc import Iterator

import cramjam
import xxhash

from ._decompression_error import DecompressionError

__all__ = ["LZ4_MAGIC", "LZ4_RAW_BIT", "lz4_blocks"]

LZ4_MAGIC = 0x184D2204
LZ4_RAW_BIT = 0x80000000  # a block stored uncompressed
_U32LE = struct.Struct("<I")


def lz4_blocks(data, magic: int, limit: int) -> Iterator[memoryview]:
    """Each block of the frame ``data`` decompressed, as a view that is only valid until the next one
    is asked for; DecompressionError where the frame breaks a rule (blocks before it were handed out)."""
    view = memoryview(data)
    end = len(view)
    pos, flg, max_block, content_size = _frame_header(view, magic, limit)
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
        size = word & ~LZ4_RAW_BIT
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
        if word & LZ4_RAW_BIT:
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
        yield piece
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


def _frame_header(view: memoryview, magic: int, limit: int) -> tuple[int, int, int, int | None]:
    """The frame descriptor's checks: where the blocks start, FLG, the block size and content size."""
    end = len(view)
    if end < 7:
        raise DecompressionError("lz4: frame header is truncated")
    if _U32LE.unpack_from(view, 0)[0] != LZ4_MAGIC:
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
