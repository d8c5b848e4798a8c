"""Reading a magic 2 batch: its 61-byte header, then its records (decompressed first if need be).

The record loop is deliberately written out long-hand (inlined varints, local aliases, lookup tables):
decoding a batch is the hottest path of every consumer and broker built on these codecs. The native
reader (``_native``) takes the records first when it is built; this one is the reference it matches,
and decides whatever the native one gives up on."""

from __future__ import annotations

import crc32c as _crc32c

from ._batch_layout import (
    COMPRESSION_MASK,
    LOG_OVERHEAD,
    TIMESTAMP_TYPE_BIT,
    V2_ATTRIBUTES_OFFSET,
    V2_CRC_OFFSET,
    V2_HEADER,
    V2_HEADER_SIZE,
    V2_MIN_LENGTH,
    batch_error,
)
from ._batch_model import Headers, Record
from ._native import read_records as _native_records
from ._primitives import read_varint, read_varlong
from .compression import DecompressionError, decompress

__all__ = ["v2_header", "v2_records"]

_V2_MIN_RECORD = 6  # attributes, timestamp delta, offset delta, key, value, header count: a byte each

# Zig-zag values of every varint payload up to 14 bits; index by the byte for one-byte varints.
_ZIGZAG = tuple((raw >> 1) ^ -(raw & 1) for raw in range(1 << 14))
# The same for two-byte varints indexed by their two bytes as a big-endian uint16 (first byte >= 0x80),
# which saves the masking and shifting in the hottest loop.
_ZIGZAG2 = tuple(
    _ZIGZAG[((i >> 8) & 0x7F) | ((i & 0xFF) << 7)] if i >= 0x8000 and i & 0xFF < 0x80 else 0
    for i in range(1 << 16)
)


def v2_header(data, pos: int, end: int, verify_crc: bool) -> tuple:
    if end - pos < V2_HEADER_SIZE:
        raise batch_error(
            2,
            f"batch length {end - pos - LOG_OVERHEAD} is below the minimum of {V2_MIN_LENGTH}",
            "batch_length",
            pos + 8,
        )
    fields = V2_HEADER.unpack_from(data, pos)
    if verify_crc:
        actual = _crc32c.crc32c(memoryview(data)[pos + V2_ATTRIBUTES_OFFSET : end])
        if actual != fields[4]:
            raise batch_error(
                2,
                f"CRC-32C mismatch: header says {fields[4]:#010x}, bytes give {actual:#010x}",
                "crc",
                pos + V2_CRC_OFFSET,
            )
    if fields[12] < 0:
        raise batch_error(2, f"negative record count {fields[12]}", "record_count", pos + 57)
    if fields[5] & COMPRESSION_MASK > 4:
        codec = fields[5] & COMPRESSION_MASK
        raise batch_error(2, f"unknown compression codec {codec}", "attributes", pos + V2_ATTRIBUTES_OFFSET)
    return fields


def v2_records(
    buf: bytes, pos: int, end: int, fields: tuple, max_size: int, record_class: type = Record
) -> list[Record]:
    attributes = fields[5]
    count = fields[12]
    codec = attributes & COMPRESSION_MASK
    if codec:
        try:
            payload = decompress(
                codec, memoryview(buf)[pos + V2_HEADER_SIZE : end], magic=2, max_size=max_size
            )
        except DecompressionError as exc:
            raise batch_error(2, str(exc), "records", pos + V2_HEADER_SIZE) from None
        records = _read_v2_records(
            payload, 0, len(payload), count, fields[0], fields[7], pos + V2_HEADER_SIZE, record_class
        )
    else:
        records = _read_v2_records(
            buf, pos + V2_HEADER_SIZE, end, count, fields[0], fields[7], None, record_class
        )
    if attributes & TIMESTAMP_TYPE_BIT:
        # LogAppendTime: every record's timestamp is the batch's max timestamp (DefaultRecord.readFrom).
        max_timestamp = fields[8]
        for record in records:
            record.timestamp = max_timestamp
    return records


def _read_v2_records(
    buf: bytes,
    p: int,
    end: int,
    count: int,
    base_offset: int,
    base_timestamp: int,
    compressed_at: int | None,
    record_class: type = Record,
) -> list[Record]:
    """Parse ``count`` records from ``buf[p:end]``. ``compressed_at`` is the batch position of the
    compressed payload (for error messages), or None when ``buf`` is the batch itself.

    Bounds are checked once per record (its parsed body must end exactly where its length says) and
    once at the end (the last record must end exactly at ``end``), not per field: a record that
    reads past its end, or into the next batch, fails one of those two checks, and ``buf`` bounds
    every slice and index meanwhile.
    """
    if count > (end - p) // (_V2_MIN_RECORD + 1):
        raise batch_error(
            2,
            f"record count {count} cannot fit in {end - p} bytes",
            "record_count",
            compressed_at if compressed_at is not None else p - 4,
        )
    native = _native_records(record_class, buf, p, end, count, base_offset, base_timestamp)
    if native is not None:  # None: no native decoder, or it gave up and the reader below decides
        return native
    zz = _ZIGZAG
    zz2 = _ZIGZAG2
    alloc = object.__new__
    records: list[Record] = []
    append = records.append
    try:
        for _ in range(count):
            # Each varint: one byte (x < 0x80), two bytes (table lookup), else the general reader.
            # record length
            x = buf[p]
            if x < 0x80:
                p += 1
                rec_end = p + zz[x]
            else:
                y = buf[p + 1]
                if y < 0x80:
                    p += 2
                    rec_end = p + zz2[(x << 8) | y]
                else:
                    size, p = read_varint(buf, p)
                    rec_end = p + size
            # attributes (unused by Kafka, skipped), then timestamp delta (varlong)
            x = buf[p + 1]
            if x < 0x80:
                ts_delta = zz[x]
                p += 2
            else:
                y = buf[p + 2]
                if y < 0x80:
                    ts_delta = zz2[(x << 8) | y]
                    p += 3
                else:
                    ts_delta, p = read_varlong(buf, p + 1)
            # offset delta
            x = buf[p]
            if x < 0x80:
                offset_delta = zz[x]
                p += 1
            else:
                y = buf[p + 1]
                if y < 0x80:
                    offset_delta = zz2[(x << 8) | y]
                    p += 2
                else:
                    offset_delta, p = read_varint(buf, p)
            # key
            x = buf[p]
            if x < 0x80:
                n = zz[x]
                p += 1
            else:
                y = buf[p + 1]
                if y < 0x80:
                    n = zz2[(x << 8) | y]
                    p += 2
                else:
                    n, p = read_varint(buf, p)
            if n >= 0:
                key = buf[p : (p := p + n)]
            elif n == -1:
                key = None
            else:
                raise ValueError(f"negative key length {n}")
            # value
            x = buf[p]
            if x < 0x80:
                n = zz[x]
                p += 1
            else:
                y = buf[p + 1]
                if y < 0x80:
                    n = zz2[(x << 8) | y]
                    p += 2
                else:
                    n, p = read_varint(buf, p)
            if n >= 0:
                value = buf[p : (p := p + n)]
            elif n == -1:
                value = None
            else:
                raise ValueError(f"negative value length {n}")
            # headers: none and exactly one are the common cases, so they get their own paths
            x = buf[p]
            if x == 0:
                headers = []
                p += 1
            elif x == 2:
                x = buf[p + 1]
                if x < 0x80:
                    n = zz[x]
                    p += 2
                else:
                    n, p = read_varint(buf, p + 1)
                if n < 0:
                    raise ValueError(f"negative header key length {n}")
                hkey = buf[p : (p := p + n)].decode()
                x = buf[p]
                if x < 0x80:
                    n = zz[x]
                    p += 1
                else:
                    n, p = read_varint(buf, p)
                if n >= 0:
                    headers = [(hkey, buf[p : (p := p + n)])]
                elif n == -1:
                    headers = [(hkey, None)]
                else:
                    raise ValueError(f"negative header value length {n}")
            else:
                headers, p = _read_headers(buf, p, rec_end)
            if p != rec_end:
                raise ValueError(f"record body ends {p - rec_end:+} bytes away from where its length says")
            # Filling the slots of a bare instance skips the Python-level __init__ call (~1/3 faster).
            record = alloc(record_class)
            record.offset = base_offset + offset_delta
            record.timestamp = base_timestamp + ts_delta
            record.key = key
            record.value = value
            record.headers = headers
            append(record)
    except (IndexError, ValueError) as exc:  # IndexError: ran off the buffer; ValueError: varint, utf-8
        reason = str(exc) if not isinstance(exc, IndexError) else "record runs past the end of the data"
        where = f"records[{len(records)}]"
        if compressed_at is not None:
            raise batch_error(2, f"{reason} (decompressed byte {p})", where, compressed_at) from None
        raise batch_error(2, reason, where, p) from None
    if p != end:
        how = f"{end - p} bytes left after" if p < end else f"{p - end} bytes past the batch end in"
        reason = f"{how} the last record"
        if compressed_at is not None:
            raise batch_error(2, reason + " (decompressed)", f"records[{count - 1}]", compressed_at)
        raise batch_error(2, reason, f"records[{count - 1}]", p)
    return records


def _read_headers(buf: bytes, p: int, rec_end: int) -> tuple[Headers, int]:
    """General case of a record's headers (count varint at ``p``)."""
    count, p = read_varint(buf, p)
    if count < 0 or 2 * count > rec_end - p:  # each header takes at least two bytes
        raise ValueError(f"header count {count} does not fit the record")
    headers: Headers = []
    for _ in range(count):
        n, p = read_varint(buf, p)
        if n < 0:
            raise ValueError(f"negative header key length {n}")
        hkey = buf[p : (p := p + n)].decode()
        n, p = read_varint(buf, p)
        if n >= 0:
            headers.append((hkey, buf[p : (p := p + n)]))
        elif n == -1:
            headers.append((hkey, None))
        else:
            raise ValueError(f"negative header value length {n}")
    return headers, p
