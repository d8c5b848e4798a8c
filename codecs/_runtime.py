"""What the generated message modules stand on: base classes, the schema records they carry, the
entry points that turn their fast-path failures into precise errors, and small shared helpers."""

from __future__ import annotations

from dataclasses import dataclass
from struct import Struct, pack, unpack_from
from struct import error as StructError
from typing import Any, ClassVar
from uuid import UUID

from ._exceptions import DecodeError, EncodeError, UnsupportedVersionError
from ._primitives import read_uvarint, write_uvarint

__all__ = [
    "Message",
    "StructBase",
    "FieldSchema",
    "MessageSchema",
    "ZERO_UUID",
    "EMPTY_LIST",
    "NEW_STRUCT",
]

ZERO_UUID = UUID(int=0)
EMPTY_LIST = "EMPTY_LIST"
NEW_STRUCT = "NEW_STRUCT"

I8 = Struct(">b")
I16 = Struct(">h")
I32 = Struct(">i")
# Precompiled formats for arrays of up to 63 fixed-width elements, by struct format character.
ARRAY_STRUCTS = {c: tuple(Struct(f">{n}{c}") for n in range(64)) for c in "bhHiIqd?"}
# The same indexed by a compact array's length byte (elements + 1); index 0 (null) is never used.
COMPACT_ARRAY_STRUCTS = {c: (None, *formats) for c, formats in ARRAY_STRUCTS.items()}
NULL16 = b"\xff\xff"
NULL32 = b"\xff\xff\xff\xff"
_REEXPORTED = (Struct, pack, unpack_from, read_uvarint, write_uvarint, StructError)  # for generated code


class Short(Exception):
    """The fast path ran off the end of the buffer (the slow path says where)."""


class NotNullable(Exception):
    pass


class TooLong(Exception):
    pass


class TagSize(Exception):
    pass


class non_default(Exception):  # noqa: N801 - raised by generated code with the field name
    pass


@dataclass(frozen=True, slots=True)
class FieldSchema:
    """One field of a generated struct, as the message definition states it."""

    attr: str
    spec_name: str
    type: str  # as in the definitions: "int32", "[]string", "[]TopicData", "records" ...
    versions: tuple[int, int]
    nullable_versions: tuple[int, int] = (1, 0)
    tag: int | None = None
    tagged_versions: tuple[int, int] = (1, 0)
    flexible_versions: tuple[int, int] | None = None
    struct: Any = None
    default: Any = None
    ignorable: bool = False
    map_key: bool = False
    entity_type: str | None = None

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def element_type(self) -> str:
        return self.type[2:] if self.is_array else self.type

    def present(self, version: int) -> bool:
        return self.versions[0] <= version <= self.versions[1]

    def tagged(self, version: int) -> bool:
        return self.tagged_versions[0] <= version <= self.tagged_versions[1]

    def nullable(self, version: int) -> bool:
        return self.nullable_versions[0] <= version <= self.nullable_versions[1]

    def default_value(self) -> Any:
        if self.default == EMPTY_LIST:
            return []
        if self.default == NEW_STRUCT:
            return self.struct()
        return self.default


@dataclass(frozen=True, slots=True)
class MessageSchema:
    name: str
    type: str
    api_key: int | None
    valid_versions: tuple[int, int]
    flexible_versions: tuple[int, int]
    listeners: tuple[str, ...]
    latest_version_unstable: bool
    deprecated_versions: tuple[int, int]

    @property
    def versions(self) -> range:
        return range(self.valid_versions[0], self.valid_versions[1] + 1)

    def flexible(self, version: int) -> bool:
        return self.flexible_versions[0] <= version <= self.flexible_versions[1]


class StructBase:
    """Base of every generated struct; ``_fields_`` lists its schema."""

    __slots__ = ()
    _fields_: ClassVar[tuple[FieldSchema, ...]] = ()


class Message(StructBase):
    """Base of every generated message class: ``encode(version)`` and ``decode(data, version)``."""

    __slots__ = ()
    _message_: ClassVar[MessageSchema]
    _encoders_: ClassVar[dict]
    _decoders_: ClassVar[dict]

    def encode(self, version: int) -> bytes:
        out = bytearray()
        self._encode_into(out, version)
        return bytes(out)

    def encode_into(self, out: bytearray, version: int) -> None:
        """Append the encoding to ``out``: no final copy, for large messages written straight out."""
        self._encode_into(out, version)

    def _encode_into(self, out: bytearray, version: int) -> None:
        cls = type(self)
        try:
            encoder = cls._encoders_[version]
        except KeyError:
            valid = _range_text(cls._message_.valid_versions)
            message = f"{cls.__name__} has no version {version} (valid: {valid})"
            raise UnsupportedVersionError(message) from None
        start = len(out)
        try:
            encoder(out, self)
        except Exception as exc:
            del out[start:]
            from ._interpreter import explain_encode_failure

            raise explain_encode_failure(self, version, exc) from None

    @classmethod
    def decode(cls, data, version: int):
        """Decode exactly one message; leftover bytes are an error."""
        message, end, buf = cls._decode_at(data, 0, version)
        if end != len(buf):
            raise DecodeError(
                cls.__name__, version, f"{len(buf) - end} bytes left over after the message", offset=end
            )
        return message

    @classmethod
    def decode_lenient(cls, data, version: int):
        """Decode one message and return it with any bytes that follow it."""
        message, end, buf = cls._decode_at(data, 0, version)
        return message, bytes(buf[end:])

    @classmethod
    def _decode_at(cls, data, pos: int, version: int):
        buf = data if type(data) is memoryview else memoryview(data)
        if buf.format != "B" or buf.ndim != 1:
            buf = buf.cast("B")
        try:
            decoder = cls._decoders_[version]
        except KeyError:
            raise DecodeError(
                cls.__name__,
                version,
                f"unsupported version (valid: {_range_text(cls._message_.valid_versions)})",
            ) from None
        native = _native_decoder(cls, version)
        if native is not None:
            found = native(buf, pos)
            if found is not None:  # None: the native decoder gave up; the generated one decides
                return found[0], found[1], buf
        try:
            message, end = decoder(buf, pos)
        except Exception as exc:
            from ._interpreter import explain_decode_failure

            raise explain_decode_failure(cls, buf, pos, version, exc) from None
        return message, end, buf

    @classmethod
    def schema(cls) -> MessageSchema:
        return cls._message_


def _native_decoder(cls, version: int):
    from ._native import decoder_for  # late: _native imports this module

    global _native_decoder
    _native_decoder = decoder_for
    return decoder_for(cls, version)


def _range_text(versions: tuple[int, int]) -> str:
    lo, hi = versions
    return f"{lo}-{hi}" if lo != hi else str(lo)


class SplicedBuffer(bytearray):
    """An output buffer that records fields may leave holes in: a ``records`` value that is not
    bytes-like but has a length (a region of a log file) is noted in ``splices`` as (position, value)
    instead of copied, so a server can send the file region itself (sendfile) at that point."""

    __slots__ = ("splices",)

    def __init__(self) -> None:
        super().__init__()
        self.splices: list[tuple[int, object]] = []


def append_records(out: bytearray, value) -> None:
    try:
        out += value
    except TypeError:
        if type(out) is not SplicedBuffer:
            raise
        out.splices.append((len(out), value))


def write_tags(out: bytearray, known: list, unknown: list) -> None:
    """The tagged-field section: known and unknown tags together, ascending, each as tag, size, bytes."""
    tags = known + list(unknown) if unknown else known
    if unknown:
        tags.sort(key=lambda item: item[0])
        seen = set()
        for tag, _payload in tags:
            if tag in seen:
                raise EncodeError(f"tag {tag} given twice (a known field and an unknown tag)")
            seen.add(tag)
    write_uvarint(out, len(tags))
    for tag, payload in tags:
        write_uvarint(out, tag)
        write_uvarint(out, len(payload))
        out += payload
