"""lz4 and snappy payloads decompressed a block at a time, for ``_decompress_stream``.

Both of Kafka's framings are sequences of independently compressed blocks: the LZ4 frame Kafka's
``Lz4BlockInputStream`` reads (64 KiB blocks, a zero end mark) and snappy-java's xerial stream that
``SnappyInputStream`` reads (a magic header, then length-prefixed blocks). Kafka holds one block's
output at a time; so do these generators. They accept and refuse what ``compression.decompress``
accepts and refuses, with its messages, but only when the stream gets there: some pieces may have been
handed out before an error. Raw (unframed) snappy is one block, decompressed whole as before (at most
22 times its input: the same bound ``compression`` applies)."""

from __future__ import annotations

from collections.abc import Iterator

import cramjam

from ._lz4_frame import lz4_blocks
from ._xerial_frame import XERIAL_MAGIC, xerial_blocks
from .compression import DecompressionError, decompress

__all__ = ["lz4_chunks", "snappy_chunks"]

_SNAPPY_MAX_RATIO = 22  # the most a snappy block can expand, plus 64 bytes (see compression._snappy_raw)


def _pieces(view, chunk_size: int) -> Iterator[memoryview]:
    for start in range(0, len(view), chunk_size):
        yield view[start : start + chunk_size]


def lz4_chunks(data, magic: int, limit: int, chunk_size: int) -> Iterator[memoryview | bytes]:
    """The LZ4 frame ``data`` decompressed one block at a time (each block in pieces of at most
    ``chunk_size``), with the frame checks ``compression.decompress`` makes (``_lz4_frame``)."""
    for block in lz4_blocks(data, magic, limit):
        yield from _pieces(block, chunk_size)  # handed out before the next block reuses its buffer


def snappy_chunks(data, limit: int, chunk_size: int) -> Iterator[memoryview | bytes]:
    """The snappy payload ``data`` decompressed one xerial block at a time, in pieces of at most
    ``chunk_size``; the checks of ``compression._snappy_decompress``."""
    view = memoryview(data)
    if view[:8] != XERIAL_MAGIC:  # raw snappy: one block
        yield from _pieces(memoryview(decompress(2, view, max_size=limit)), chunk_size)
        return
    total = 0
    for compressed in xerial_blocks(view):
        block = _snappy_block(compressed, limit, total)
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
