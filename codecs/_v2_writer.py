"""Writing a magic 2 batch: the records section record by record, then the sealed 61-byte header.

The native encoder (``_native``) writes the records when it is built; the Python encoder here is the
reference it must match byte for byte, and the fallback for whatever the native one declines."""

from __future__ import annotations

import struct

import crc32c as _crc32c

from ._batch_layout import (
    CONTROL_BIT,
    DELETE_HORIZON_BIT,
    TIMESTAMP_TYPE_BIT,
    TRANSACTIONAL_BIT,
    UINT32,
    V2_ATTRIBUTES_OFFSET,
    V2_CRC_OFFSET,
    V2_HEADER,
    V2_MIN_LENGTH,
)
from ._batch_model import Record, TimestampType
from ._exceptions import EncodeError
from ._native import encode_record as _native_record
from ._native import encode_records as _native_encode
from .compression import Compression, compress

__all__ = ["encode_record_v2", "encode_v2", "seal_v2_batch", "v2_body"]


def _varint_bytes(value: int) -> bytes:
    raw = ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while raw >= 0x80:
        out.append((raw & 0x7F) | 0x80)
        raw >>= 7
    out.append(raw)
    return bytes(out)


# Encoded varints for every value that fits in one or two bytes: a dict hit instead of a loop.
_VARINT = {value: _varint_bytes(value) for value in range(-8192, 8192)}
_HEADER_KEYS: dict[str, bytes] = {}
_HEADER_KEY_CACHE_LIMIT = 4096


def _header_key_bytes(key: str) -> bytes:
    raw = key.encode("utf-8")
    encoded = _varint_bytes(len(raw)) + raw
    if len(_HEADER_KEYS) < _HEADER_KEY_CACHE_LIMIT:
        _HEADER_KEYS[key] = encoded
    return encoded


def encode_v2(
    records,
    codec,
    level,
    base_offset,
    producer_id,
    producer_epoch,
    base_sequence,
    is_transactional,
    is_control,
    partition_leader_epoch,
    timestamp_type,
    base_timestamp,
    log_append_time,
    has_delete_horizon,
) -> bytes:
    if type(records) is not list and type(records) is not tuple:
        records = list(records)  # the native encoder may decline, and the Python one then walks them again
    encoded = _native_encode(Record, records, base_offset, base_timestamp)
    if encoded is None:  # no native encoder, or it declined: Python writes the same bytes or raises
        encoded = v2_body(records, base_offset, base_timestamp)
    body, count, last_delta, first_timestamp, max_timestamp = encoded
    if count == 0:
        last_delta = 0
        if first_timestamp is None:
            first_timestamp = -1
        max_timestamp = first_timestamp
    if timestamp_type == TimestampType.LOG_APPEND_TIME and log_append_time is not None:
        max_timestamp = log_append_time
    if codec and count:  # Kafka compresses even when it does not pay; an empty batch stays plain
        body = compress(codec, body, magic=2, level=level)
    elif codec:
        codec = Compression.NONE
    return seal_v2_batch(
        body,
        count=count,
        last_offset_delta=last_delta,
        base_timestamp=first_timestamp,
        max_timestamp=max_timestamp,
        compression=codec,
        base_offset=base_offset,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        is_transactional=is_transactional,
        is_control=is_control,
        partition_leader_epoch=partition_leader_epoch,
        log_append_time=timestamp_type == TimestampType.LOG_APPEND_TIME,
        has_delete_horizon=has_delete_horizon,
    )


def v2_body(records, base_offset: int, base_timestamp: int | None) -> tuple:
    """The records section of a v2 batch in Python: ``(body, count, last_offset_delta, first_timestamp,
    max_timestamp)``, the last three -1, ``base_timestamp`` and -1 when there are no records."""
    body = bytearray()
    encode_record = _encode_record_v2
    first_timestamp = base_timestamp
    max_timestamp = -1
    last_delta = -1
    count = 0
    for record in records:
        offset_delta = record.offset - base_offset
        timestamp = record.timestamp
        if offset_delta <= last_delta:
            raise EncodeError(
                f"offset {record.offset} does not increase on the previous record's "
                f"(base offset {base_offset})"
            )
        last_delta = offset_delta
        if first_timestamp is None:
            first_timestamp = timestamp
        if timestamp > max_timestamp:
            max_timestamp = timestamp
        body += encode_record(
            offset_delta, timestamp - first_timestamp, record.key, record.value, record.headers
        )
        count += 1
    return body, count, last_delta, first_timestamp, max_timestamp


def encode_record_v2(offset_delta: int, timestamp_delta: int, key, value, headers) -> bytes:
    """One record of a v2 batch, length prefix included. A producer appends these to a batch body as
    records arrive (as Kafka's MemoryRecordsBuilder does) and seals the body with ``seal_v2_batch``."""
    encoded = _native_record(offset_delta, timestamp_delta, key, value, headers)
    if encoded is not None:
        return encoded
    return _encode_record_v2(offset_delta, timestamp_delta, key, value, headers)


def _encode_record_v2(offset_delta: int, timestamp_delta: int, key, value, headers) -> bytes:
    """``encode_record_v2`` in Python: the reference the native encoder matches byte for byte."""
    vget = _VARINT.get
    vbytes = _varint_bytes
    if headers:
        hget = _HEADER_KEYS.get
        hbytes = _header_key_bytes
        if len(headers) == 1:
            hkey, hvalue = headers[0]
            if hvalue is None:
                header_bytes = b"\x02%b\x01" % (hget(hkey) or hbytes(hkey),)
            else:
                n = len(hvalue)
                header_bytes = b"\x02%b%b%b" % (hget(hkey) or hbytes(hkey), vget(n) or vbytes(n), hvalue)
        else:
            n = len(headers)
            parts = [vget(n) or vbytes(n)]
            for hkey, hvalue in headers:
                if hvalue is None:
                    parts.append((hget(hkey) or hbytes(hkey)) + b"\x01")
                else:
                    n = len(hvalue)
                    parts.append(b"%b%b%b" % (hget(hkey) or hbytes(hkey), vget(n) or vbytes(n), hvalue))
            header_bytes = b"".join(parts)
    else:
        header_bytes = b"\x00"
    if key is None:
        key_length = b"\x01"
        key = b""
    else:
        n = len(key)
        key_length = vget(n) or vbytes(n)
    if value is None:
        value_length = b"\x01"
        value = b""
    else:
        n = len(value)
        value_length = vget(n) or vbytes(n)
    encoded = b"\x00%b%b%b%b%b%b%b" % (
        vget(timestamp_delta) or vbytes(timestamp_delta),
        vget(offset_delta) or vbytes(offset_delta),
        key_length,
        key,
        value_length,
        value,
        header_bytes,
    )
    n = len(encoded)
    return (vget(n) or vbytes(n)) + encoded


def seal_v2_batch(
    body,
    *,
    count: int,
    last_offset_delta: int,
    base_timestamp: int,
    max_timestamp: int,
    compression: Compression | int = Compression.NONE,
    base_offset: int = 0,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    is_transactional: bool = False,
    is_control: bool = False,
    partition_leader_epoch: int = -1,
    log_append_time: bool = False,
    has_delete_horizon: bool = False,
) -> bytes:
    """A whole v2 batch from its records section ``body`` (already compressed when ``compression`` is
    set): the 61-byte header with the CRC-32C over everything after the CRC field."""
    if last_offset_delta > 0x7FFFFFFF:
        raise EncodeError(f"offset delta {last_offset_delta} does not fit an int32")
    attributes = int(compression) | (TIMESTAMP_TYPE_BIT if log_append_time else 0)
    if is_transactional:
        attributes |= TRANSACTIONAL_BIT
    if is_control:
        attributes |= CONTROL_BIT
    if has_delete_horizon:
        attributes |= DELETE_HORIZON_BIT
    size = len(body) if type(body) is bytes or type(body) is bytearray else memoryview(body).nbytes
    try:
        header = V2_HEADER.pack(
            base_offset,
            V2_MIN_LENGTH + size,
            partition_leader_epoch,
            2,
            0,
            attributes,
            last_offset_delta,
            base_timestamp,
            max_timestamp,
            producer_id,
            producer_epoch,
            base_sequence,
            count,
        )
    except struct.error as exc:
        raise EncodeError(f"a batch header field is out of range: {exc}") from None
    crc = _crc32c.crc32c(body, _crc32c.crc32c(header[V2_ATTRIBUTES_OFFSET:]))  # one pass, no copy first
    return b"".join((header[:V2_CRC_OFFSET], UINT32.pack(crc), header[V2_ATTRIBUTES_OFFSET:], body))
