"""Request bodies read the way Toxiproxy reads them: Go's ``encoding/json`` decoding into a struct.

Toxiproxy decodes each body with ``json.NewDecoder(body).Decode(&value)`` (api.go ``ProxyCreate``,
``ProxyUpdate``; proxy_collection.go ``PopulateJson``; toxic_collection.go ``AddToxicJson``,
``UpdateToxicJson``) and answers any decoding error as ``joinError(err, ErrBadRequestBody)``: 400,
``bad request body: <Go's message>``. What that decoder does, and so what this module does:

- only the first JSON value counts (a ``Decoder`` stops there); an empty body is ``EOF``;
- ``null``, for an object or a field, leaves the defaults as they were;
- object keys match struct fields exactly, else case-insensitively; other keys are ignored;
- a value of the wrong JSON type is an error; an integer field takes only an integer literal
  (``5.0`` and ``5e2`` are refused), within its range; a ``float32`` field takes any number in range.

The messages follow Go's wording; clients (and the tests) rely on the status and the
``bad request body: `` prefix, never on Go's text after it."""

from __future__ import annotations

import json
import struct
from typing import Any

from .errors import BAD_REQUEST_BODY, ApiError

__all__ = [
    "bad_body",
    "decode_body",
    "float32",
    "go_bool",
    "go_float32",
    "go_int",
    "go_string",
    "go_value",
    "struct_fields",
]

_JSON_TYPES = {dict: "object", list: "array", str: "string", bool: "bool", int: "number", float: "number"}
_INT64 = (-(1 << 63), (1 << 63) - 1)
_FLOAT32_MAX = 3.4028234663852886e38


def bad_body(reason: str) -> ApiError:
    """``joinError(err, ErrBadRequestBody)`` (api.go)."""
    return BAD_REQUEST_BODY.join(reason)


def decode_body(raw: bytes) -> Any:
    """The first JSON value of a request body, as ``json.Decoder.Decode`` reads it."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise bad_body("invalid character looking for beginning of value") from None
    start = len(text) - len(text.lstrip(" \t\r\n"))
    if start == len(text):
        raise bad_body("EOF")
    try:
        value, _ = json.JSONDecoder().raw_decode(text, start)
    except json.JSONDecodeError as exc:
        raise bad_body(f"invalid JSON: {exc.msg} (offset {exc.pos})") from None
    return value


def json_kind(value: Any) -> str:
    return _JSON_TYPES.get(type(value), "value")


def struct_fields(value: Any, go_type: str) -> dict[str, Any]:
    """A JSON object decoded into a struct: ``null`` changes nothing; anything else not an object fails."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise bad_body(f"json: cannot unmarshal {json_kind(value)} into Go value of type {go_type}")
    return value


_ABSENT = object()


def _field(obj: dict[str, Any], key: str) -> Any:
    """The value Go stores in the field tagged ``key``: every matching key is applied in order, an
    exact match or a case-insensitive one, so the last one wins; ``_ABSENT`` when none matches."""
    found = _ABSENT
    for name, value in obj.items():
        if name == key or name.lower() == key.lower():
            found = value
    return found


def go_value(obj: dict[str, Any], key: str) -> Any:
    """The raw value for a field decoded later (``attributes``); None when absent or null."""
    value = _field(obj, key)
    return None if value is _ABSENT else value


def _type_error(value: Any, where: str, go_type: str) -> ApiError:
    return bad_body(
        f"json: cannot unmarshal {json_kind(value)} into Go struct field {where} of type {go_type}"
    )


def go_string(obj: dict[str, Any], key: str, default: str, where: str) -> str:
    value = _field(obj, key)
    if value is _ABSENT or value is None:
        return default
    if not isinstance(value, str):
        raise _type_error(value, where, "string")
    return value


def go_bool(obj: dict[str, Any], key: str, default: bool, where: str) -> bool:
    value = _field(obj, key)
    if value is _ABSENT or value is None:
        return default
    if not isinstance(value, bool):
        raise _type_error(value, where, "bool")
    return value


def go_int(obj: dict[str, Any], key: str, default: int, where: str) -> int:
    """An ``int64`` (or, on 64-bit Go, ``int``) field."""
    value = _field(obj, key)
    if value is _ABSENT or value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _type_error(value, where, "int64")
    if isinstance(value, float) or not _INT64[0] <= value <= _INT64[1]:
        raise bad_body(f"json: cannot unmarshal number {value} into Go struct field {where} of type int64")
    return value


def go_float32(obj: dict[str, Any], key: str, default: float, where: str) -> float:
    """A ``float32`` field, kept as Go keeps it (rounded to 32 bits) and written back as Go writes it
    (the shortest decimal that reads back as the same ``float32``)."""
    value = _field(obj, key)
    if value is _ABSENT or value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _type_error(value, where, "float32")
    if abs(value) > _FLOAT32_MAX:
        raise bad_body(f"json: cannot unmarshal number {value} into Go struct field {where} of type float32")
    return float32(value)


def float32(value: float) -> float:
    (single,) = struct.unpack("<f", struct.pack("<f", value))
    for digits in range(1, 10):
        short = float(f"{single:.{digits}g}")
        if struct.unpack("<f", struct.pack("<f", short))[0] == single:
            return short
    return single
