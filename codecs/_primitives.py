"""Variable-length integers and other small building blocks shared by messages and records.

Everything here works on ``bytes``-like input with an explicit position and returns the new position,
so callers never copy the buffer.
"""

from __future__ import annotations

__all__ = [
    "read_uvarint",
    "read_varint",
    "read_varlong",
    "write_uvarint",
    "write_varint",
    "write_varlong",
    "uvarint_bytes",
    "varint_size",
    "MalformedVarint",
]


class MalformedVarint(ValueError):
    """A varint that runs past its maximum length or past the end of the buffer."""


def read_uvarint(buf, pos: int) -> tuple[int, int]:
    """Unsigned LEB128 of at most 5 bytes, as Kafka's ``readUnsignedVarint`` reads it: into a Java int,
    so the fifth byte's top bits fall off and a value from 2**31 reads negative (a compact length
    ``ff ff ff ff 0f`` is -1 before the -1 of the encoding: null)."""
    value, pos = _read_uvarint32(buf, pos)
    return (value - (1 << 32) if value & 0x80000000 else value), pos


def _read_uvarint32(buf, pos: int) -> tuple[int, int]:
    """The low 32 bits of an unsigned LEB128 of at most 5 bytes."""
    b = buf[pos]
    if b < 0x80:
        return b, pos + 1
    value = b & 0x7F
    shift = 7
    while True:
        pos += 1
        b = buf[pos]
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value & 0xFFFFFFFF, pos + 1
        shift += 7
        if shift > 28:
            raise MalformedVarint("unsigned varint longer than 5 bytes")


def _read_uvarlong(buf, pos: int) -> tuple[int, int]:
    """The low 64 bits of an unsigned LEB128 of at most 10 bytes (Kafka's ``readVarlong`` shifts into a
    Java long)."""
    value = 0
    shift = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value & 0xFFFFFFFFFFFFFFFF, pos
        shift += 7
        if shift > 63:
            raise MalformedVarint("varlong longer than 10 bytes")


def read_varint(buf, pos: int) -> tuple[int, int]:
    """Zig-zag signed varint (32 bits)."""
    raw, pos = _read_uvarint32(buf, pos)
    return (raw >> 1) ^ -(raw & 1), pos


def read_varlong(buf, pos: int) -> tuple[int, int]:
    """Zig-zag signed varlong (64 bits)."""
    raw, pos = _read_uvarlong(buf, pos)
    return (raw >> 1) ^ -(raw & 1), pos


def write_uvarint(out: bytearray, value: int) -> None:
    if value < 0x80:
        out.append(value)
        return
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def uvarint_bytes(value: int) -> bytes:
    out = bytearray()
    write_uvarint(out, value)
    return bytes(out)


def write_varint(out: bytearray, value: int) -> None:
    if not -0x80000000 <= value <= 0x7FFFFFFF:
        raise OverflowError(f"varint out of range: {value}")
    write_uvarint(out, ((value << 1) ^ (value >> 31)) & 0xFFFFFFFF)


def write_varlong(out: bytearray, value: int) -> None:
    if not -0x8000000000000000 <= value <= 0x7FFFFFFFFFFFFFFF:
        raise OverflowError(f"varlong out of range: {value}")
    write_uvarint(out, ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF)


def varint_size(value: int) -> int:
    """Encoded size of a zig-zag varint/varlong."""
    raw = (value << 1) ^ (value >> 63)
    raw &= 0xFFFFFFFFFFFFFFFF
    size = 1
    while raw >= 0x80:
        raw >>= 7
        size += 1
    return size
