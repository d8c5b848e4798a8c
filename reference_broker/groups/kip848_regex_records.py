"""Record type 16 of ``__consumer_offsets``, ConsumerGroupRegularExpression, laid out by hand: the 2024
definitions the coordinator-record codecs are generated from predate it. Key: int16 record type, then
GroupId and RegularExpression as int16-length strings; value version 0 (flexible): compact array of
topic names, int64 Version, int64 Timestamp, an empty tagged-field section. Every bad or missing byte is a
``RecordFormatError``."""

from __future__ import annotations

import struct

from .classic_log_records import RecordFormatError

__all__ = ["REGULAR_EXPRESSION", "read_regex_key", "read_regex_value", "regex_key", "regex_value"]

REGULAR_EXPRESSION = 16
_VALUE_VERSION = 0  # the version Kafka 4.0 writes
_I16, _I64 = struct.Struct(">h"), struct.Struct(">q")


def _put_uvarint(out: bytearray, n: int) -> None:
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)


def regex_key(group_id: str, regex: str) -> bytes:
    out = bytearray(_I16.pack(REGULAR_EXPRESSION))
    for text in (group_id, regex):
        data = text.encode()
        out += _I16.pack(len(data)) + data
    return bytes(out)


def regex_value(topics: frozenset[str], version: int, timestamp: int) -> bytes:
    out = bytearray(_I16.pack(_VALUE_VERSION))
    _put_uvarint(out, len(topics) + 1)
    for name in sorted(topics):
        data = name.encode()
        _put_uvarint(out, len(data) + 1)
        out += data
    out += _I64.pack(version) + _I64.pack(timestamp)
    out.append(0)  # no tagged fields
    return bytes(out)


class _RegexReader:
    """Reads record type 16's key or value whole; any bad or missing byte is a RecordFormatError."""

    def __init__(self, data: bytes, what: str) -> None:
        self.data, self.pos, self.what = memoryview(data), 0, what

    def fail(self, reason: str) -> RecordFormatError:
        return RecordFormatError(f"{self.what}: {reason} at byte {self.pos}")

    def take(self, n: int) -> memoryview:
        if n < 0 or self.pos + n > len(self.data):
            raise self.fail(f"{n} bytes run past the end")
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def int16(self) -> int:
        return _I16.unpack(self.take(2))[0]

    def int64(self) -> int:
        return _I64.unpack(self.take(8))[0]

    def uvarint(self) -> int:
        value = 0
        for shift in range(0, 35, 7):
            byte = self.take(1)[0]
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                return value
        raise self.fail("a varint longer than 5 bytes")

    def text(self, *, compact: bool) -> str:
        n = self.uvarint() - 1 if compact else self.int16()
        if n < 0:
            raise self.fail("a null where a string is required")
        try:
            return str(self.take(n), "utf-8")
        except UnicodeDecodeError:
            raise self.fail("a string that is not UTF-8") from None

    def count(self) -> int:
        n = self.uvarint() - 1
        if n > len(self.data) - self.pos:
            raise self.fail(f"an array of {n} entries cannot fit")
        return max(n, 0)

    def tags(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()
            self.take(self.uvarint())

    def end(self) -> None:
        if self.pos != len(self.data):
            raise self.fail(f"{len(self.data) - self.pos} bytes left over")


def read_regex_key(data: bytes) -> tuple[str, str]:
    k = _RegexReader(data, "consumer group regular expression key")
    k.int16()
    group_id, regex = k.text(compact=False), k.text(compact=False)
    k.end()
    return group_id, regex


def read_regex_value(data: bytes) -> tuple[frozenset[str], int, int]:
    v = _RegexReader(data, "consumer group regular expression value")
    version = v.int16()
    if version != _VALUE_VERSION:
        raise v.fail(f"value version {version} is not one Kafka defines")
    topics = frozenset(v.text(compact=True) for _ in range(v.count()))
    resolved, timestamp = v.int64(), v.int64()
    v.tags()
    v.end()
    return topics, resolved, timestamp
