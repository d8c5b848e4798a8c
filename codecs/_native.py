"""The optional native codec (``_speedups``, a C extension built at install when a compiler is there).

Programs for it are compiled here from the generated schema, the same facts the interpreter walks, so
the generator stays the only source of message layouts. ``decoder_for(cls, version)`` gives a function
``(buffer, pos) -> (object, end) | None``; None (the decoder gave up) sends the input down the
pure-Python path, which decodes it or raises its exact DecodeError. The v2 record encoders work the
same way: None sends the input to the pure-Python encoder, which writes the same bytes or raises.
``KCONFORM_PURE_CODECS=1`` turns the native path off."""

from __future__ import annotations

import importlib.util
import os
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from ._schema import EMPTY_LIST, NEW_STRUCT, ZERO_UUID, FieldSchema

__all__ = ["AVAILABLE", "decoder_for", "encode_record", "encode_records", "pure_python", "read_records"]


def _load_speedups():
    """The extension, or None. ``KCONFORM_SPEEDUPS=PATH`` loads a build from elsewhere instead (the
    sanitizer run, ``ci/sanitizers.sh``, points it at an AddressSanitizer/UBSan build)."""
    if os.environ.get("KCONFORM_PURE_CODECS"):
        return None
    path = os.environ.get("KCONFORM_SPEEDUPS")
    if path:
        spec = importlib.util.spec_from_file_location(f"{__package__}._speedups", path)
        if spec is None or spec.loader is None:
            raise ImportError(f"KCONFORM_SPEEDUPS={path} is not a loadable extension module")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    try:  # by full name: ``from . import`` would go through the package ``__init__``, which sits above us
        return importlib.import_module(f"{__package__}._speedups")
    except ImportError:
        return None


_speedups = _load_speedups()

AVAILABLE = _speedups is not None
_enabled = AVAILABLE
# A stale build (compiled from an older _speedups.c) may lack the encoders: then they stay pure Python.
_ENCODES = AVAILABLE and hasattr(_speedups, "encode_records") and hasattr(_speedups, "encode_record")

_KINDS = {
    "bool": 1,
    "int8": 2,
    "int16": 3,
    "uint16": 4,
    "int32": 5,
    "uint32": 6,
    "int64": 7,
    "float64": 8,
    "uuid": 9,
    "string": 10,
    "bytes": 11,
    "records": 12,
}
_STRUCT = 13
_CONST, _LIST, _CALL = 0, 1, 2
_cache: dict[tuple[type, int], Callable | None] = {}

if AVAILABLE:
    _speedups.configure(
        uuid.UUID, ZERO_UUID, uuid.SafeUUID.unknown, uuid.UUID.__dict__["int"], uuid.UUID.__dict__["is_safe"]
    )


def _compact(f: FieldSchema, version: int, flexible: bool) -> bool:
    if f.flexible_versions is not None:
        return f.flexible_versions[0] <= version <= f.flexible_versions[1]
    return flexible


def _default(f: FieldSchema) -> tuple[int, object]:
    if f.default == EMPTY_LIST:
        return _LIST, None
    if f.default == NEW_STRUCT:
        return _CALL, f.struct
    return _CONST, f.default


def _op(cls: type, f: FieldSchema, version: int, flexible: bool) -> tuple:
    kind = _KINDS.get(f.element_type)
    sub = None
    if kind is None:
        kind = _STRUCT
        sub = _struct_spec(f.struct, version, flexible)
    return (
        kind,
        int(f.is_array),
        int(f.nullable(version)),
        int(_compact(f, version, flexible)),
        f.tag if f.tag is not None else -1,
        cls.__dict__[f.attr],
        sub,
    )


def _struct_spec(cls: type, version: int, flexible: bool) -> tuple:
    ops, tagged, defaults = [], [], []
    for f in cls._fields_:
        if f.tag is not None and f.tagged(version):
            if flexible:
                tagged.append(_op(cls, f, version, flexible))
            defaults.append((cls.__dict__[f.attr], *_default(f)))
        elif f.present(version):
            ops.append(_op(cls, f, version, flexible))
        else:
            defaults.append((cls.__dict__[f.attr], *_default(f)))
    unknown = (
        cls.__dict__["unknown_tagged_fields"] if "unknown_tagged_fields" in cls.__dataclass_fields__ else None
    )
    return (cls, int(flexible), tuple(ops), tuple(tagged), tuple(defaults), unknown)


def decoder_for(cls: type, version: int) -> Callable | None:
    """The native decoder of ``cls`` at ``version``, or None without the extension."""
    if not _enabled:
        return None
    key = (cls, version)
    try:
        return _cache[key]
    except KeyError:
        pass
    decoder = None
    if AVAILABLE:
        flexible = cls._message_.flexible(version)
        program = _speedups.compile_program(_struct_spec(cls, version, flexible))
        decode = _speedups.decode

        def decoder(buf, pos, _program=program, _decode=decode):
            return _decode(_program, buf, pos)

    _cache[key] = decoder
    return decoder


def read_records(
    record_class: type, buf, pos: int, end: int, count: int, base_offset: int, base_timestamp: int
):
    """The records of a v2 batch decoded natively, or None (no extension, or let the pure path decide)."""
    if not _enabled:
        return None
    return _speedups.read_records(
        record_class, buf, pos, end, count, base_offset, base_timestamp, _record_slots(record_class)
    )


def encode_records(record_class: type, records, base_offset: int, base_timestamp: int | None):
    """The records section of a v2 batch encoded natively, with what the batch header needs from it:
    ``(body, count, last_offset_delta, first_timestamp, max_timestamp)``; or None (no extension, or
    let the pure path decide). It declines anything but a list or tuple of exactly ``record_class``."""
    if not (_enabled and _ENCODES):
        return None
    return _speedups.encode_records(
        records, record_class, _record_slots(record_class), base_offset, base_timestamp
    )


def encode_record(offset_delta: int, timestamp_delta: int, key, value, headers) -> bytes | None:
    """One v2 record (length prefix included) encoded natively, or None (let the pure path decide)."""
    if not (_enabled and _ENCODES):
        return None
    return _speedups.encode_record(offset_delta, timestamp_delta, key, value, headers)


_slots: dict[type, tuple] = {}


def _record_slots(record_class: type) -> tuple:
    found = _slots.get(record_class)
    if found is None:
        found = tuple(record_class.__dict__[n] for n in ("offset", "timestamp", "key", "value", "headers"))
        _slots[record_class] = found
    return found


@contextmanager
def pure_python() -> Iterator[None]:
    """Decode and encode with Python only, inside the block (benchmarks show both paths)."""
    global _enabled
    saved, _enabled = _enabled, False
    try:
        yield
    finally:
        _enabled = saved
