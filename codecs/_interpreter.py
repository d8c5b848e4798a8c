"""A schema-walking encoder and decoder, slow and exact.

The generated code is the fast path and does not track where it is. When it fails, the same input is
walked again here, field by field, to say which field at which byte offset is wrong. The interpreter is a
second, independent reading of the schema, so the tests also check that both paths agree."""

from __future__ import annotations

import struct
from uuid import UUID

from ._exceptions import DecodeError, EncodeError
from ._primitives import MalformedVarint, read_uvarint, write_uvarint
from ._schema import FieldSchema

__all__ = [
    "decode_message",
    "encode_message",
    "explain_decode_failure",
    "explain_encode_failure",
    "walk_fields",
]

_FIXED = {
    "bool": struct.Struct(">?"),
    "int8": struct.Struct(">b"),
    "int16": struct.Struct(">h"),
    "uint16": struct.Struct(">H"),
    "int32": struct.Struct(">i"),
    "uint32": struct.Struct(">I"),
    "int64": struct.Struct(">q"),
    "float64": struct.Struct(">d"),
}


class _Failure(Exception):
    def __init__(self, path: str, offset: int, reason: str) -> None:
        super().__init__(reason)
        self.path = path
        self.offset = offset
        self.reason = reason


# ---- decoding ---------------------------------------------------------------------------------------


class _Reader:
    def __init__(self, buf: memoryview, pos: int, on_field=None) -> None:
        self.buf = buf
        self.pos = pos
        self.on_field = on_field  # called as each field is read: (field, path, start, end, compact)

    def take(self, n: int, path: str) -> memoryview:
        if n < 0 or self.pos + n > len(self.buf):
            raise _Failure(path, self.pos, f"needs {n} bytes, {len(self.buf) - self.pos} left")
        chunk = self.buf[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def fixed(self, kind: str, path: str):
        if kind == "uuid":
            return UUID(bytes=bytes(self.take(16, path)))
        fmt = _FIXED[kind]
        return fmt.unpack(self.take(fmt.size, path))[0]

    def uvarint(self, path: str) -> int:
        try:
            value, self.pos = read_uvarint(self.buf, self.pos)
        except (IndexError, MalformedVarint) as exc:
            raise _Failure(path, self.pos, f"bad unsigned varint ({exc or 'truncated'})") from None
        return value


def decode_message(cls, data, version: int):
    """Decode ``data`` as ``cls`` at ``version`` with the interpreter; returns (message, end)."""
    buf = memoryview(data).cast("B") if not isinstance(data, memoryview) else data
    reader = _Reader(buf, 0)
    try:
        message = _decode_struct(cls, reader, version, cls._message_.flexible(version), cls.__name__)
    except _Failure as failure:
        raise DecodeError(
            cls.__name__, version, failure.reason, field=failure.path, offset=failure.offset
        ) from None
    return message, reader.pos


def walk_fields(cls, data, version: int, on_field) -> int:
    """Decode ``data`` as ``cls`` at ``version``, calling ``on_field(field, path, start, end, compact)``
    for every field read (nested fields before the field that holds them); returns where the message
    ends. Bad bytes raise DecodeError, as ``decode_message``."""
    buf = memoryview(data).cast("B") if not isinstance(data, memoryview) else data
    reader = _Reader(buf, 0, on_field)
    try:
        _decode_struct(cls, reader, version, cls._message_.flexible(version), "")
    except _Failure as failure:
        path = failure.path.lstrip(".") or None
        raise DecodeError(cls.__name__, version, failure.reason, field=path, offset=failure.offset) from None
    return reader.pos


def explain_decode_failure(cls, buf: memoryview, pos: int, version: int, exc: Exception) -> DecodeError:
    reader = _Reader(buf, pos)
    try:
        _decode_struct(cls, reader, version, cls._message_.flexible(version), "")
    except _Failure as failure:
        return DecodeError(
            cls.__name__,
            version,
            failure.reason,
            field=failure.path.lstrip(".") or None,
            offset=failure.offset,
        )
    except Exception as slow_exc:  # the interpreter must never be less careful than the fast path
        return DecodeError(cls.__name__, version, f"undecodable ({type(slow_exc).__name__}: {slow_exc})")
    return DecodeError(cls.__name__, version, f"undecodable ({type(exc).__name__}: {exc})", offset=pos)


def _decode_struct(cls, reader: _Reader, version: int, flexible: bool, path: str):
    values = {}
    tagged: dict[int, FieldSchema] = {}
    for f in cls._fields_:
        if f.tag is not None and f.tagged(version):
            tagged[f.tag] = f
            values[f.attr] = f.default_value()
        elif f.present(version):
            values[f.attr] = _decode_field(f, reader, version, flexible, f"{path}.{f.attr}")
        else:
            values[f.attr] = f.default_value()
    unknown = []
    if flexible:
        count = reader.uvarint(f"{path}.<tagged fields>")
        for _ in range(count):
            tag_path = f"{path}.<tagged fields>"
            tag = reader.uvarint(tag_path)
            size = reader.uvarint(tag_path)
            start = reader.pos
            if start + size > len(reader.buf):
                raise _Failure(
                    tag_path, start, f"tag {tag} claims {size} bytes, {len(reader.buf) - start} left"
                )
            f = tagged.get(tag)
            if f is None:
                unknown.append((tag, bytes(reader.take(size, tag_path))))
                continue
            field_path = f"{path}.{f.attr}"
            values[f.attr] = _decode_field(f, reader, version, flexible, field_path)
            if reader.pos != start + size:
                raise _Failure(
                    field_path, start, f"tagged field is {size} bytes but its value took {reader.pos - start}"
                )
    if "unknown_tagged_fields" in cls.__dataclass_fields__:
        values["unknown_tagged_fields"] = tuple(unknown)
    return cls(**values)


def _compact(f: FieldSchema, version: int, flexible: bool) -> bool:
    if f.flexible_versions is not None:
        return f.flexible_versions[0] <= version <= f.flexible_versions[1]
    return flexible


def _read_length(reader: _Reader, compact: bool, wide: bool, path: str) -> int:
    if compact:
        return reader.uvarint(path) - 1
    return reader.fixed("int32" if wide else "int16", path)


def _decode_field(f: FieldSchema, reader: _Reader, version: int, flexible: bool, path: str):
    if reader.on_field is None:
        return _read_field(f, reader, version, flexible, path)
    start = reader.pos
    value = _read_field(f, reader, version, flexible, path)
    reader.on_field(f, path.lstrip("."), start, reader.pos, _compact(f, version, flexible))
    return value


def _read_field(f: FieldSchema, reader: _Reader, version: int, flexible: bool, path: str):
    compact = _compact(f, version, flexible)
    nullable = f.nullable(version)
    kind = f.element_type
    start = reader.pos
    if f.is_array:
        n = _read_length(reader, compact, True, path)
        if n < 0:
            if not nullable:
                raise _Failure(path, start, "null array in a version where it is not nullable")
            return None
        if n > len(reader.buf) - reader.pos:
            raise _Failure(
                path, start, f"array of {n} elements but only {len(reader.buf) - reader.pos} bytes left"
            )
        return [
            _decode_one(f, kind, reader, version, flexible, compact, False, f"{path}[{i}]") for i in range(n)
        ]
    return _decode_one(f, kind, reader, version, flexible, compact, nullable, path)


def _decode_one(f, kind, reader: _Reader, version, flexible, compact, nullable, path):
    start = reader.pos
    if kind in _FIXED or kind == "uuid":
        return reader.fixed(kind, path)
    if kind in ("string", "bytes", "records"):
        n = _read_length(reader, compact, kind != "string", path)
        if n < 0:
            if not nullable:
                raise _Failure(path, start, f"null {kind} in a version where it is not nullable")
            return None
        if kind == "string" and n > 0x7FFF:
            raise _Failure(path, start, f"string length {n} is over 32767")
        chunk = reader.take(n, path)
        if kind == "string":
            try:
                return str(chunk, "utf-8")
            except UnicodeDecodeError as exc:
                raise _Failure(path, start, f"string is not UTF-8 ({exc.reason})") from None
        return bytes(chunk) if kind == "bytes" else chunk
    if nullable:
        if reader.fixed("int8", path) < 0:
            return None
    return _decode_struct(f.struct, reader, version, flexible, path)


# ---- encoding ---------------------------------------------------------------------------------------


def encode_message(message, version: int) -> bytes:
    """Encode with the interpreter (the slow reference path)."""
    out = bytearray()
    cls = type(message)
    try:
        _encode_struct(message, out, version, cls._message_.flexible(version), cls.__name__)
    except _Failure as failure:
        raise EncodeError(f"{cls.__name__} v{version} field {failure.path}: {failure.reason}") from None
    return bytes(out)


def explain_encode_failure(message, version: int, exc: Exception) -> EncodeError:
    cls = type(message)
    try:
        _encode_struct(message, bytearray(), version, cls._message_.flexible(version), "")
    except _Failure as failure:
        return EncodeError(f"{cls.__name__} v{version} field {failure.path.lstrip('.')}: {failure.reason}")
    except Exception as slow_exc:
        return EncodeError(
            f"{cls.__name__} v{version}: cannot encode ({type(slow_exc).__name__}: {slow_exc})"
        )
    return EncodeError(f"{cls.__name__} v{version}: cannot encode ({type(exc).__name__}: {exc})")


def _encode_struct(obj, out: bytearray, version: int, flexible: bool, path: str) -> None:
    known_tags = []
    for f in type(obj)._fields_:
        value = getattr(obj, f.attr)
        field_path = f"{path}.{f.attr}"
        if f.tag is not None and f.tagged(version):
            if value != f.default_value():
                payload = bytearray()
                _encode_field(f, value, payload, version, flexible, field_path)
                known_tags.append((f.tag, bytes(payload)))
        elif f.present(version):
            _encode_field(f, value, out, version, flexible, field_path)
        elif not f.ignorable and value != f.default_value():
            raise _Failure(
                field_path, len(out), f"has a non-default value {value!r} but version {version} lacks it"
            )
    if flexible:
        unknown = list(getattr(obj, "unknown_tagged_fields", ()))
        tags = sorted(known_tags + unknown, key=lambda item: item[0])
        if len({tag for tag, _ in tags}) != len(tags):
            raise _Failure(f"{path}.unknown_tagged_fields", len(out), "a tag is given twice")
        write_uvarint(out, len(tags))
        for tag, payload in tags:
            write_uvarint(out, tag)
            write_uvarint(out, len(payload))
            out += payload


def _write_length(out: bytearray, n: int, compact: bool, wide: bool) -> None:
    if compact:
        write_uvarint(out, n + 1)
    else:
        out += (_FIXED["int32"] if wide else _FIXED["int16"]).pack(n)


def _encode_field(f: FieldSchema, value, out: bytearray, version: int, flexible: bool, path: str) -> None:
    compact = _compact(f, version, flexible)
    nullable = f.nullable(version)
    if f.is_array:
        if value is None:
            if not nullable:
                raise _Failure(path, len(out), "is None but not nullable at this version")
            _write_length(out, -1, compact, True)
            return
        if not isinstance(value, list | tuple):
            raise _Failure(path, len(out), f"expected a list, got {type(value).__name__}")
        _write_length(out, len(value), compact, True)
        for i, item in enumerate(value):
            _encode_one(f, f.element_type, item, out, version, flexible, compact, False, f"{path}[{i}]")
        return
    _encode_one(f, f.element_type, value, out, version, flexible, compact, nullable, path)


def _encode_one(f, kind, value, out, version, flexible, compact, nullable, path) -> None:
    if kind in _FIXED:
        try:
            out += _FIXED[kind].pack(value)
        except struct.error as exc:
            raise _Failure(path, len(out), f"{value!r} does not fit {kind} ({exc})") from None
        return
    if kind == "uuid":
        if not isinstance(value, UUID):
            raise _Failure(path, len(out), f"expected a UUID, got {type(value).__name__}")
        out += value.bytes
        return
    if value is None:
        if not nullable:
            raise _Failure(path, len(out), "is None but not nullable at this version")
        if kind in ("string", "bytes", "records"):
            _write_length(out, -1, compact, kind != "string")
        else:
            out += b"\xff"
        return
    if kind == "string":
        if not isinstance(value, str):
            raise _Failure(path, len(out), f"expected a str, got {type(value).__name__}")
        data = value.encode()
        if len(data) > 0x7FFF:
            raise _Failure(path, len(out), f"string of {len(data)} bytes is over 32767")
        _write_length(out, len(data), compact, False)
        out += data
        return
    if kind in ("bytes", "records"):
        if not isinstance(value, bytes | bytearray | memoryview):
            raise _Failure(path, len(out), f"expected bytes, got {type(value).__name__}")
        _write_length(out, len(value), compact, True)
        out += value
        return
    if not isinstance(value, f.struct):
        raise _Failure(path, len(out), f"expected {f.struct.__qualname__}, got {type(value).__name__}")
    if nullable:
        out += b"\x01"
    _encode_struct(value, out, version, flexible, path)
