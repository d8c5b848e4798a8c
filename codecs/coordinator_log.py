"""How the coordinators frame their records in ``__consumer_offsets`` and ``__transaction_state``.

A record key is an int16 record type followed by the key's layout at that version (the key
definition's versions are the record types it stands for); a value is an int16 version followed by the
value's layout at that version; a null value is a tombstone. The layouts are the generated classes in
``coordinator_records``; this module only adds the leading int16 and the choice of class, as Kafka's
``CoordinatorRecordSerde`` does."""

from __future__ import annotations

import struct

from . import coordinator_records
from ._exceptions import DecodeError

__all__ = [
    "decode_coordinator_key",
    "decode_coordinator_value",
    "encode_coordinator_key",
    "encode_coordinator_value",
]

_I16 = struct.Struct(">h")


def encode_coordinator_key(key, record_type: int) -> bytes:
    return _I16.pack(record_type) + key.encode(record_type)


def encode_coordinator_value(value, version: int) -> bytes:
    return _I16.pack(version) + value.encode(version)


def _leading_version(data, what: str) -> int:
    if len(data) < 2:
        raise DecodeError(what, None, f"{len(data)} bytes: too short for a version")
    return _I16.unpack_from(data, 0)[0]


def decode_coordinator_key(topic: str, data) -> tuple[int, object]:
    """(record type, key) of a key in ``topic``; DecodeError for an unknown type or bad bytes."""
    record_type = _leading_version(data, f"{topic} key")
    classes = coordinator_records.RECORD_TYPES.get(topic, {}).get(record_type)
    if classes is None:
        raise DecodeError(f"{topic} key", record_type, f"record type {record_type} is unknown")
    key_class = getattr(coordinator_records, classes[0])
    return record_type, key_class.decode(memoryview(data)[2:], record_type)


def decode_coordinator_value(value_class, data) -> tuple[int, object]:
    """(version, value) of a value of ``value_class``; DecodeError for an unknown version or bad bytes."""
    version = _leading_version(data, value_class.__name__)
    return version, value_class.decode(memoryview(data)[2:], version)
