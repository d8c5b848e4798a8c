"""Legacy message sets (magic 0 and 1): one message per entry, or one compressed wrapper message
whose value holds the inner messages; read into the same ``BatchHeader`` and ``RecordBatch`` values
as magic 2, and written as Kafka's Java ``MemoryRecordsBuilder`` writes them."""

from __future__ import annotations

import struct
import zlib

from ._batch_layout import (
    COMPRESSION_MASK,
    INT32,
    INT64,
    LEGACY_MIN_LENGTH,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    TIMESTAMP_TYPE_BIT,
    UINT32,
    batch_error,
)
from ._batch_model import Record, RecordBatch, TimestampType
from ._exceptions import DecodeError, EncodeError
from .compression import DecompressionError, compress, decompress

__all__ = ["encode_legacy", "legacy_full", "legacy_header"]

_LEGACY_V0 = struct.Struct(">qiIbb")
_LEGACY_V1 = struct.Struct(">qiIbbq")


# --- reading ---------------------------------------------------------------------------------------


def _legacy_message(data, pos: int, end: int, magic: int, verify_crc: bool, where: str):
    """Parse the legacy message at ``pos`` ending at ``end``: (offset, crc, attributes, timestamp,
    key, value). ``where`` prefixes field names in errors."""
    if end - pos < LOG_OVERHEAD + LEGACY_MIN_LENGTH[magic]:
        raise batch_error(
            magic,
            f"message size {end - pos - LOG_OVERHEAD} is below the minimum of {LEGACY_MIN_LENGTH[magic]}",
            where + "message_size",
            pos + 8,
        )
    if magic:
        offset, _, crc, _, attributes, timestamp = _LEGACY_V1.unpack_from(data, pos)
        p = pos + 26
    else:
        offset, _, crc, _, attributes = _LEGACY_V0.unpack_from(data, pos)
        timestamp = -1
        p = pos + 18
    if verify_crc:
        actual = zlib.crc32(memoryview(data)[pos + MAGIC_OFFSET : end])
        if actual != crc:
            raise batch_error(
                magic,
                f"CRC-32 mismatch: message says {crc:#010x}, bytes give {actual:#010x}",
                where + "crc",
                pos + 12,
            )
    (n,) = INT32.unpack_from(data, p)
    p += 4
    if n == -1:
        key = None
    elif n < 0 or n > end - p - 4:
        raise batch_error(magic, f"key length {n} does not fit the message", where + "key", p - 4)
    else:
        key = data[p : p + n]  # bytes when decoding; a memoryview slice (no copy) for headers only
        p += n
    (n,) = INT32.unpack_from(data, p)
    p += 4
    if n == -1:
        value = None
    elif n < 0 or n > end - p:
        raise batch_error(magic, f"value length {n} does not fit the message", where + "value", p - 4)
    else:
        value = data[p : p + n]
        p += n
    if p != end:
        raise batch_error(magic, f"{end - p} bytes left after the value", where + "value", p)
    return offset, crc, attributes, timestamp, key, value


def legacy_header(data, pos: int, end: int, verify_crc: bool):
    magic = data[pos + MAGIC_OFFSET]
    offset, crc, attributes, timestamp, key, value = _legacy_message(data, pos, end, magic, verify_crc, "")
    codec = attributes & COMPRESSION_MASK
    if codec > 3:
        # zstd (4) needs magic 2; 5-7 do not exist (AbstractLegacyRecordBatch rejects both)
        raise batch_error(
            magic, f"compression codec {codec} is not valid for magic {magic}", "attributes", pos + 17
        )
    if codec and value is None:
        raise batch_error(magic, "compressed wrapper message has a null value", "value", pos)
    header = (
        offset,
        end - pos - LOG_OVERHEAD,
        -1,
        magic,
        crc,
        attributes,
        0,
        timestamp,
        timestamp,
        -1,
        -1,
        -1,
        -1 if codec else 1,
    )
    return header, key, value


def legacy_full(buf: bytes, pos: int, end: int, verify_crc: bool, max_size: int) -> RecordBatch:
    header, key, value = legacy_header(buf, pos, end, verify_crc)
    wrapper_offset = header[0]
    magic = header[3]
    attributes = header[5]
    wrapper_timestamp = header[7]
    codec = attributes & COMPRESSION_MASK
    if not codec:
        return RecordBatch(*header, [Record(wrapper_offset, wrapper_timestamp, key, value, [])])
    try:
        inner = decompress(codec, value, magic=magic, max_size=max_size)
    except DecompressionError as exc:
        raise batch_error(magic, str(exc), "value", pos) from None
    records: list[Record] = []
    p = 0
    inner_end = len(inner)
    log_append = magic == 1 and attributes & TIMESTAMP_TYPE_BIT
    while p < inner_end:
        where = f"value.messages[{len(records)}]."
        if inner_end - p < LOG_OVERHEAD + 5:
            raise batch_error(magic, "inner message is truncated", where[:-1], pos)
        (size,) = INT32.unpack_from(inner, p + 8)
        inner_magic = inner[p + MAGIC_OFFSET]
        if inner_magic > 1:
            raise batch_error(magic, f"inner message has magic {inner_magic}", where + "magic", pos)
        if size < 0 or size > inner_end - p - LOG_OVERHEAD:
            raise batch_error(
                magic,
                f"inner message size {size} overruns the decompressed data",
                where + "message_size",
                pos,
            )
        next_p = p + LOG_OVERHEAD + size
        try:
            offset, _, inner_attributes, timestamp, ikey, ivalue = _legacy_message(
                inner, p, next_p, inner_magic, verify_crc, where
            )
        except DecodeError as exc:
            raise batch_error(magic, exc.reason + " (in decompressed data)", exc.field, pos) from None
        if inner_attributes & COMPRESSION_MASK:
            raise batch_error(magic, "inner messages must not be compressed", where + "attributes", pos)
        if log_append:
            timestamp = wrapper_timestamp
        records.append(Record(offset, timestamp, ikey, ivalue, []))
        p = next_p
    if not records:
        raise batch_error(magic, "compressed wrapper holds no messages", "value", pos)
    if magic == 1:
        # Inner offsets are relative; the wrapper carries the absolute offset of the last one. A zero
        # wrapper offset (some librdkafka versions) means "relative to 0" (AbstractLegacyRecordBatch).
        last_inner = records[-1].offset
        if wrapper_offset != 0:
            if wrapper_offset < last_inner:
                raise batch_error(
                    magic,
                    f"wrapper offset {wrapper_offset} is below the last inner offset {last_inner}",
                    "offset",
                    pos,
                )
            base = wrapper_offset - last_inner
            for record in records:
                record.offset += base
    return RecordBatch(*header[:12], len(records), records)


# --- writing ---------------------------------------------------------------------------------------


def _legacy_entry(magic: int, offset: int, attributes: int, timestamp: int, key, value) -> bytes:
    key_part = b"\xff\xff\xff\xff" if key is None else INT32.pack(len(key)) + key
    value_part = b"\xff\xff\xff\xff" if value is None else INT32.pack(len(value)) + value
    if magic:
        body = b"\x01%b%b%b%b" % (bytes((attributes,)), INT64.pack(timestamp), key_part, value_part)
    else:
        body = b"\x00%b%b%b" % (bytes((attributes,)), key_part, value_part)
    crc = zlib.crc32(body)
    return b"%b%b%b" % (struct.pack(">qi", offset, len(body) + 4), UINT32.pack(crc), body)


def encode_legacy(records, magic, codec, level, base_offset, timestamp_type, log_append_time) -> bytes:
    log_append = magic == 1 and timestamp_type == TimestampType.LOG_APPEND_TIME
    ts_bit = TIMESTAMP_TYPE_BIT if log_append else 0
    records = list(records)
    if log_append and log_append_time is None:
        log_append_time = max((r.timestamp for r in records), default=-1)
    entries = []
    last_offset = None
    max_timestamp = -1
    try:
        for record in records:
            if record.headers:
                raise EncodeError(f"magic {magic} cannot carry record headers")
            offset = record.offset
            if offset < base_offset or (last_offset is not None and offset <= last_offset):
                raise EncodeError(f"offset {offset} does not increase (base offset {base_offset})")
            last_offset = offset
            timestamp = log_append_time if log_append else (record.timestamp if magic else -1)
            if timestamp > max_timestamp:
                max_timestamp = timestamp
            # Inside a magic 1 wrapper offsets are relative to the first; magic 0 keeps them absolute.
            inner_offset = offset - base_offset if codec and magic else offset
            entries.append(_legacy_entry(magic, inner_offset, ts_bit, timestamp, record.key, record.value))
    except struct.error as exc:
        raise EncodeError(f"a message field is out of range: {exc}") from None
    if not codec or not entries:
        return b"".join(entries)
    wrapped = compress(codec, b"".join(entries), magic=magic, level=level)
    wrapper_timestamp = log_append_time if log_append else max_timestamp
    try:
        return _legacy_entry(magic, last_offset, codec | ts_bit, wrapper_timestamp, None, wrapped)
    except struct.error as exc:
        raise EncodeError(f"a message field is out of range: {exc}") from None
