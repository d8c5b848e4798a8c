"""Decoded messages as plain trees (dicts, lists, scalars) that normalisation rules can rewrite and
the comparator can walk; record batches become lists of records, so two brokers that store the same
records in different bytes (CRC, compression, batch boundaries) still compare equal where it matters."""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

from kconform.codecs import DecodeError
from kconform.codecs.records import iter_batches

__all__ = ["records_tree", "to_tree"]

_RECORD_FIELDS = ("records",)


_SCALARS = (int, str, bool, float, type(None))
_FIELD_NAMES: dict[type, tuple[str, ...] | None] = {}  # a class's dataclass field names, None if not one


def _field_names(cls: type) -> tuple[str, ...] | None:
    # to_tree runs on every field of every answer, the harness's own hottest path: look fields up once
    # a class, not once a value
    if cls not in _FIELD_NAMES:
        is_message = dataclasses.is_dataclass(cls)
        _FIELD_NAMES[cls] = tuple(f.name for f in dataclasses.fields(cls)) if is_message else None
    return _FIELD_NAMES[cls]


def to_tree(value: Any) -> Any:
    cls = type(value)
    if cls in _SCALARS:
        return value
    names = _field_names(cls)
    if names is not None:
        out = {}
        for name in names:
            item = getattr(value, name)
            if name == "unknown_tagged_fields":
                if item:
                    out[name] = {str(k): bytes(v).hex() for k, v in dict(item).items()}
                continue
            if name in _RECORD_FIELDS and isinstance(item, bytes | bytearray | memoryview):
                out[name] = records_tree(item)
                continue
            out[name] = to_tree(item)
        return out
    if isinstance(value, list | tuple):
        return [to_tree(v) for v in value]
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    if isinstance(value, uuid.UUID):
        return str(value)
    return value


def records_tree(data) -> Any:
    """The records of a records field: one entry per record (offset, timestamp, key, value, headers),
    control records named as such; undecodable bytes become an error marker rather than an exception."""
    if data is None:
        return None
    out = []
    try:
        for batch in iter_batches(bytes(data)):
            for record in batch.records:
                out.append(
                    {
                        "offset": record.offset,
                        # a control record (a transaction marker) is stamped with the broker's clock
                        "timestamp": "<clock>" if batch.is_control else record.timestamp,
                        "key": None if record.key is None else bytes(record.key).hex(),
                        "value": None if record.value is None else bytes(record.value).hex(),
                        "headers": [[k, None if v is None else bytes(v).hex()] for k, v in record.headers],
                        "control": batch.is_control,
                        "transactional": batch.is_transactional,
                    }
                )
    except DecodeError as exc:
        out.append({"undecodable": str(exc).split(":")[0]})
    return out
