"""A PNG reader for screenshot checks, by zlib alone: 8-bit, non-interlaced RGB or RGBA, as headless
Chromium writes them."""

from __future__ import annotations

import collections
import struct
import zlib
from pathlib import Path


def png_rows(path: Path) -> tuple[int, int, int, list[bytes]]:
    """(width, height, bytes per pixel, rows of pixels) of an 8-bit RGB or RGBA PNG, by zlib alone."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    pos, idat, header = 8, [], b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat.append(body)
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert depth == 8 and colour in (2, 6) and interlace == 0, f"{path}: an unexpected PNG layout"
    bpp = 3 if colour == 2 else 4
    stride = width * bpp
    raw = zlib.decompress(b"".join(idat))
    rows, prev = [], bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        if kind == 1:  # Sub
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 255
        elif kind == 2:  # Up
            line = bytearray(map(lambda a, b: (a + b) & 255, line, prev))
        elif kind == 3:  # Average
            for i in range(stride):
                line[i] = (line[i] + (((line[i - bpp] if i >= bpp else 0) + prev[i]) >> 1)) & 255
        elif kind == 4:  # Paeth
            for i in range(stride):
                a, c = (line[i - bpp], prev[i - bpp]) if i >= bpp else (0, 0)
                b = prev[i]
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, bpp, rows


def colours(rows: list[bytes], bpp: int, box: tuple[int, int, int, int] | None = None) -> collections.Counter:
    """How many pixels of each RGB colour, in ``box`` (x, y, width, height) or everywhere."""
    x, y, w, h = box or (0, 0, len(rows[0]) // bpp, len(rows))
    counts: collections.Counter = collections.Counter()
    for row in rows[y : y + h]:
        counts.update(row[i : i + 3] for i in range(x * bpp, (x + w) * bpp, bpp))
    return counts


def png_colours(path: Path) -> collections.Counter:
    """How many pixels of each RGB colour the whole picture holds."""
    _, _, bpp, rows = png_rows(path)
    return colours(rows, bpp)
