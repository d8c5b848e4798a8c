"""The xerial framing snappy-java's ``SnappyOutputStream`` writes (a magic header, then big-endian
length-prefixed blocks, possibly whole streams concatenated): the one walk over it behind both
``compression.decompress`` and the paced stream reader. It checks the framing only; each block is
raw snappy for the caller to decompress."""

from __future__ import annotations

import struct
from collections.abc import Iterator

from ._decompression_error import DecompressionError

__all__ = ["XERIAL_MAGIC", "xerial_blocks"]

XERIAL_MAGIC = b"\x82SNAPPY\x00"
_HEADER_SIZE = (
    16  # the magic, then two int32 version fields (not checked: some producers write them little-endian)
)
_I32BE = struct.Struct(">i")


def xerial_blocks(view: memoryview) -> Iterator[memoryview]:
    """Each compressed block of a xerial stream that starts with ``XERIAL_MAGIC``."""
    end = len(view)
    if end < _HEADER_SIZE:
        raise DecompressionError("snappy: xerial header is truncated")
    pos = _HEADER_SIZE
    while pos < end:
        if view[pos : pos + 8] == XERIAL_MAGIC:  # a concatenated stream starts again with a header
            if end - pos < _HEADER_SIZE:
                raise DecompressionError("snappy: xerial header is truncated")
            pos += _HEADER_SIZE
            continue
        if end - pos < 4:
            raise DecompressionError("snappy: xerial block length is truncated")
        (size,) = _I32BE.unpack_from(view, pos)
        pos += 4
        if size < 0 or size > end - pos:
            raise DecompressionError(f"snappy: xerial block of {size} bytes at {pos - 4} overruns the input")
        yield view[pos : pos + size]
        pos += size
