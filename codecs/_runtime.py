"""What the generated message modules stand on: base classes, the schema records they carry, the
entry points that turn their fast-path failures into precise errors, and small shared helpers.

``Message`` is where the engines meet: it tries the native decoder, then the generated code, and asks
the interpreter to explain a failure. The engines themselves know only ``_schema``, below this."""

from __future__ import annotations

from struct import Struct, pack, unpack_from
from struct import error as StructError
from typing import ClassVar

from ._exceptions import DecodeError, EncodeError, UnsupportedVersionError
from ._interpreter import explain_decode_failure, explain_encode_failure
from ._native import decoder_for as _native_decoder
from ._primitives import read_uvarint, write_uvarint
from ._schema import EMPTY_LIST, NEW_STRUCT, ZERO_UUID, FieldSchema, MessageSchema, StructBase

__all__ = [
    "Message",
    "StructBase",
    "FieldSchema",
    "MessageSchema",
    "ZERO_UUID",
    "EMPTY_LIST",
    "NEW_STRUCT",
]

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
            raise explain_decode_failure(cls, buf, pos, version, exc) from None
        return message, end, buf

    @classmethod
    def schema(cls) -> MessageSchema:
        return cls._message_


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
