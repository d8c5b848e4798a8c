"""Where each field of an encoded message sits: the byte span of every field, at any depth, and for a
length-prefixed field (string, bytes, records, array) where its length or count prefix ends.

For tools that damage messages on purpose (a truncation at a field boundary, a bad length prefix) and
must not learn the wire layout themselves. The spans come from the interpreter's walk of the schema, so
they are exactly what a decoder reads::

    spans = field_spans(MetadataRequest, MetadataRequest(topics=None).encode(12), 12)
    spans[0]  # FieldSpan(path='topics', start=0, end=1, prefix_end=1, compact=True, nullable=True, ...)
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from ._interpreter import walk_fields
from ._primitives import read_uvarint, uvarint_bytes

__all__ = ["FieldSpan", "field_spans"]

_LENGTH_PREFIXED = ("string", "bytes", "records")
_INT16, _INT32 = struct.Struct(">h"), struct.Struct(">i")


@dataclass(frozen=True, slots=True)
class FieldSpan:
    path: str  # "topics[0].name": the field's name, with the array indices that lead to it
    start: int
    end: int
    prefix_end: int | None  # where the length (or count) prefix ends; None for fields without one
    compact: bool  # read in the flexible encoding: a length prefix is an unsigned varint of length + 1
    nullable: bool  # the field may be null at this version
    kind: str  # "array", "struct", "string", "bytes", "records" or the scalar type ("int32", ...)
    tagged: bool  # a tagged field (its span is the value, after its tag and size)

    @property
    def length_prefixed(self) -> bool:
        return self.prefix_end is not None

    def prefix_for(self, length: int) -> bytes:
        """The length (or count) prefix this field would carry for ``length`` as a Java reader computes
        it (-1: null). A compact prefix is the unsigned varint of ``length + 1`` taken modulo 2**32, as
        Kafka's ``readUnsignedVarint`` returns an ``int``: ``prefix_for(-3)`` is ``fe ff ff ff 0f``."""
        if self.prefix_end is None:
            raise ValueError(f"{self.path} ({self.kind}) has no length prefix")
        if self.compact:
            return uvarint_bytes((length + 1) & 0xFFFFFFFF)
        return (_INT16 if self.kind == "string" else _INT32).pack(length)


def field_spans(cls: type, data, version: int) -> list[FieldSpan]:
    """Every field of ``data`` (an encoded ``cls`` at ``version``) in wire order; a field that holds
    others comes before them. Bad bytes raise DecodeError."""
    buf = memoryview(data).cast("B") if not isinstance(data, memoryview) else data
    found: list[FieldSpan] = []

    def on_field(field, path: str, start: int, end: int, compact: bool) -> None:
        kind = "array" if field.is_array else field.element_type
        if field.struct is not None and not field.is_array:
            kind = "struct"
        prefix_end = None
        if field.is_array or kind in _LENGTH_PREFIXED:
            if compact:
                prefix_end = read_uvarint(buf, start)[1]
            else:
                prefix_end = start + (2 if kind == "string" else 4)
        tagged = field.tag is not None and field.tagged(version)
        nullable = field.nullable(version)
        found.append(FieldSpan(path, start, end, prefix_end, compact, nullable, kind, tagged))

    walk_fields(cls, buf, version, on_field)
    found.sort(key=lambda span: (span.start, -span.end))
    return found
