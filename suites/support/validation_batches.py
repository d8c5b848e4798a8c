"""What the produce-path validation suites (``reference_broker/test_validation_*.py``) share: the
clock and topic constants, batch builders, ``validate``/``rejected`` over
``validate_produce_records``, ``forge`` (rewrites header fields of a built batch; ``FIELDS`` names
the ones it knows) and ``assert_partition_error``."""

from __future__ import annotations

import struct

import crc32c
import pytest

from kconform.codecs.records import (
    Record,
    encode_batch,
    iter_batches,
)
from kconform.reference_broker.validation import (
    LogValidationConfig,
    RecordsRejected,
    RejectionScope,
    ValidatedAppend,
    validate_produce_records,
)

__all__ = [
    "FIELDS",
    "LONG_MAX",
    "NOW",
    "T0",
    "TP",
    "assert_partition_error",
    "batch",
    "decoded",
    "forge",
    "make_records",
    "rejected",
    "validate",
]


T0 = 1_700_000_000_000
NOW = T0 + 60_000
TP = "orders-3"
LONG_MAX = 2**63 - 1


def make_records(
    n: int = 3, *, base_offset: int = 0, timestamp: int = T0, keyed: bool = True
) -> list[Record]:
    return [
        Record(
            base_offset + i,
            timestamp + i,
            b"key-%d" % i if keyed else None,
            b"value-%d" % i * 8,
            [("h", b"%d" % i)] if i % 2 else [],
        )
        for i in range(n)
    ]


def batch(n: int = 3, **kwargs) -> bytes:
    keyed = kwargs.pop("keyed", True)
    timestamp = kwargs.pop("timestamp", T0)
    offsets = kwargs.pop("offsets", None)
    records = make_records(n, timestamp=timestamp, keyed=keyed)
    if kwargs.get("magic", 2) < 2:
        records = [Record(r.offset, r.timestamp, r.key, r.value) for r in records]
    if offsets is not None:
        records = [
            Record(o, r.timestamp, r.key, r.value, r.headers) for o, r in zip(offsets, records, strict=True)
        ]
    return encode_batch(records, **kwargs)


def validate(data, *, version: int = 9, first_offset: int = 100, epoch: int = 5, now: int = NOW, **config):
    return validate_produce_records(
        data,
        produce_version=version,
        config=LogValidationConfig(**config),
        now_ms=now,
        first_offset=first_offset,
        partition_leader_epoch=epoch,
        topic_partition=TP,
    )


def rejected(data, **kwargs) -> RecordsRejected:
    with pytest.raises(RecordsRejected) as info:
        validate(data, **kwargs)
    return info.value


def decoded(result: ValidatedAppend):
    batches = list(iter_batches(bytes(result.records)))
    assert sum(b.size_in_bytes for b in batches) == len(result.records)
    return batches


# Kafka's DefaultRecordBatch field offsets, used only to forge hostile batches (as suites/codecs does).
FIELDS = {
    "base_offset": (0, ">q"),
    "batch_length": (8, ">i"),
    "magic": (16, ">b"),
    "attributes": (21, ">h"),
    "last_offset_delta": (23, ">i"),
    "max_timestamp": (35, ">q"),
    "record_count": (57, ">i"),
}


def forge(data: bytes, *, fix_crc: bool = True, payload=None, **fields) -> bytes:
    """``data`` (one magic 2 batch) with header fields overwritten and/or the bytes after the header
    replaced by ``payload(old)``, the CRC made valid again unless ``fix_crc`` is False."""
    buf = bytearray(data)
    if payload is not None:
        buf[61:] = payload(bytes(buf[61:]))
        struct.pack_into(">i", buf, 8, len(buf) - 12)
    for name, value in fields.items():
        where, fmt = FIELDS[name]
        struct.pack_into(fmt, buf, where, value)
    if fix_crc:
        struct.pack_into(">I", buf, 17, crc32c.crc32c(bytes(buf[21:])))
    return bytes(buf)


def assert_partition_error(exc: RecordsRejected, code: int, *, log_start: bool) -> None:
    assert exc.error_code == code, exc
    assert exc.scope == RejectionScope.PARTITION
    assert exc.error_message is None and exc.record_errors == []
    assert exc.reports_log_start_offset is log_start
