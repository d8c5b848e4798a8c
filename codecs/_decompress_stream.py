"""Decompressing a payload in bounded pieces, so a small batch that expands a lot is read a piece at a
time and never held whole (Kafka reads compressed records through a stream with a fixed-size buffer:
``ChunkedBytesStream`` over the codec's input stream, buffers from ``BufferSupplier``).

``decompressed_chunks`` gives the bytes ``compression.decompress`` gives, in pieces of at most
``chunk_size``, and fails on the same inputs with ``DecompressionError``: when the stream gets there,
possibly after some pieces were handed out. gzip and zstd (when the ``zstandard`` package is installed)
stream; lz4 and snappy go a block at a time (``_block_streams``); legacy zstd, which Kafka never
reads, is decompressed whole (bounded by ``max_size``) and handed out in pieces. Empty pieces may come:
they only mark a point where a caller may pause."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator

from ._block_streams import lz4_chunks, snappy_chunks
from .compression import MAX_DECOMPRESSED_SIZE, Compression, DecompressionError, decompress

try:
    import zstandard as _zstandard
except ImportError:  # an optional dependency: without it zstd is decompressed whole
    _zstandard = None

__all__ = ["CHUNK_SIZE", "decompressed_chunks"]

CHUNK_SIZE = 64 * 1024  # the largest piece handed out
_U32LE = struct.Struct("<I")
_GZIP_MAGIC = b"\x1f\x8b"
_ZSTD_MAGIC = 0xFD2FB528
_ZSTD_SKIPPABLE = range(0x184D2A50, 0x184D2A60)
_ZSTD_WALK_PAUSE = 4096  # blocks walked between pause points


def decompressed_chunks(
    codec: Compression | int,
    data,
    *,
    magic: int = 2,
    max_size: int = MAX_DECOMPRESSED_SIZE,
    chunk_size: int = CHUNK_SIZE,
) -> Iterator[bytes | memoryview]:
    """The decompressed bytes of ``data`` (written with ``codec`` in a batch of ``magic``), in pieces."""
    try:
        codec = Compression(codec)
    except ValueError:
        raise DecompressionError(f"unknown compression codec {codec}") from None
    if codec is Compression.GZIP:
        return _gzip_chunks(data, max_size, chunk_size)
    if codec is Compression.ZSTD and magic >= 2 and _zstandard is not None:
        return _zstd_chunks(data, max_size, chunk_size)
    if codec is Compression.LZ4:
        return _one_error_type(codec, lz4_chunks(data, magic, max_size, chunk_size))
    if codec is Compression.SNAPPY:
        return _one_error_type(codec, snappy_chunks(data, max_size, chunk_size))
    return _pieces(decompress(codec, data, magic=magic, max_size=max_size), chunk_size)


def _one_error_type(codec: Compression, chunks: Iterator) -> Iterator:
    """``chunks``, with the codec library's own errors turned into ``DecompressionError`` as
    ``compression.decompress`` turns them."""
    try:
        yield from chunks
    except DecompressionError:
        raise
    except Exception as exc:
        raise DecompressionError(f"{codec.name.lower()}: {type(exc).__name__}: {exc}") from None


def _pieces(payload: bytes, chunk_size: int) -> Iterator[memoryview]:
    view = memoryview(payload)
    for start in range(0, len(view), chunk_size):
        yield view[start : start + chunk_size]


def _gzip_chunks(data, limit: int, chunk_size: int) -> Iterator[bytes]:
    """compression._gzip_decompress, a piece at a time: the same members, checks and messages."""
    rest = data
    total = 0
    while True:
        inflater = zlib.decompressobj(31)
        pending = rest
        while not inflater.eof:
            try:
                # never more than one byte past the limit, as the whole reader asks: a stream that
                # overflows is refused for that before its trailer is checked, whatever the piece size
                chunk = inflater.decompress(pending, min(chunk_size, limit - total + 1))
            except zlib.error as exc:
                raise DecompressionError(f"gzip: {exc}") from None
            total += len(chunk)
            if total > limit:
                raise DecompressionError(f"gzip: output exceeds {limit} bytes")
            pending = inflater.unconsumed_tail
            if not chunk and not pending and not inflater.eof:
                raise DecompressionError("gzip: stream is truncated")
            yield chunk
        rest = inflater.unused_data
        if not rest:
            return
        if rest[:2] != _GZIP_MAGIC:
            raise DecompressionError(f"gzip: {len(rest)} bytes of trailing data after the stream")


def _zstd_chunks(data, limit: int, chunk_size: int) -> Iterator[bytes]:
    # zstandard's stream reader ends quietly where a frame is cut short, which cramjam (the whole-payload
    # path) refuses: walk the frames' block headers first, so both refuse the same inputs.
    yield from _walk_zstd_frames(memoryview(data))
    reader = _zstandard.ZstdDecompressor().stream_reader(data, read_across_frames=True)
    total = 0
    try:
        while chunk := reader.read(chunk_size):
            total += len(chunk)
            if total > limit:
                raise DecompressionError(f"zstd: output exceeds {limit} bytes")
            yield chunk
    except _zstandard.ZstdError as exc:
        raise DecompressionError(f"zstd: {exc}") from None


def _walk_zstd_frames(view: memoryview) -> Iterator[bytes]:
    """Check that ``view`` is whole zstd frames (RFC 8878 section 3.1): each frame's header and block
    headers lie within it, and every frame ends. Block contents are left to the decompressor."""
    end = len(view)
    if not end:
        raise DecompressionError("zstd: incomplete frame")  # as cramjam: no frame at all
    p = 0
    blocks = 0
    while p < end:
        if end - p < 4:
            raise DecompressionError("zstd: incomplete frame")
        (frame_magic,) = _U32LE.unpack_from(view, p)
        if frame_magic in _ZSTD_SKIPPABLE:
            if end - p < 8:
                raise DecompressionError("zstd: incomplete frame")
            p += 8 + _U32LE.unpack_from(view, p + 4)[0]
            continue
        if frame_magic != _ZSTD_MAGIC:
            raise DecompressionError("zstd: Unknown frame descriptor")
        if end - p < 5:
            raise DecompressionError("zstd: incomplete frame")
        descriptor = view[p + 4]
        single_segment = descriptor >> 5 & 1
        content_size_bytes = (single_segment, 2, 4, 8)[descriptor >> 6]
        p += 5 + (1 - single_segment) + (0, 1, 2, 4)[descriptor & 3] + content_size_bytes
        while True:
            if end - p < 3:
                raise DecompressionError("zstd: incomplete frame")
            block = view[p] | view[p + 1] << 8 | view[p + 2] << 16
            kind = block >> 1 & 3
            if kind == 3:
                raise DecompressionError("zstd: Corrupted block detected")
            p += 3 + (1 if kind == 1 else block >> 3)  # an RLE block holds one byte
            blocks += 1
            if blocks % _ZSTD_WALK_PAUSE == 0:
                yield b""
            if block & 1:  # the frame's last block
                break
        p += 4 * (descriptor >> 2 & 1)  # the content checksum
        if p > end:
            raise DecompressionError("zstd: incomplete frame")
