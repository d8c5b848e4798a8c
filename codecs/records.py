"""Record batches (magic 2) and legacy message sets (magic 0 and 1), sans I/O.

Reading takes the ``records`` bytes of a Fetch or Produce partition and walks it batch by batch:
``iter_batch_headers`` only parses and checks each batch header (cheap, for brokers), ``iter_batches``
decodes the records too. Both stop quietly before a partial trailing batch, as Kafka's own readers do
(a fetch response may end in one); ``truncated_tail`` says how many bytes that tail holds.

Any bad input raises ``DecodeError`` (message ``"RecordBatch"`` or ``"LegacyMessageSet"``, version =
magic); no other exception escapes decoding, and every loop and allocation is bounded by the input size
(plus ``max_decompressed_size`` for compressed batches).

Writing (``encode_batch``) lays bytes out exactly as Kafka's Java ``MemoryRecordsBuilder`` does. The
v2 records are written by the native encoder when it is built (``_native``); the Python encoder here is
the reference it must match byte for byte, and the fallback for whatever the native one declines.

The record loops are deliberately written out long-hand (inlined varints, local aliases, lookup tables):
decoding a batch is the hottest path of every consumer and broker built on this module.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from enum import IntEnum

import crc32c as _crc32c

from ._exceptions import DecodeError, EncodeError
from ._native import encode_record as _native_record
from ._native import encode_records as _native_encode
from ._native import read_records as _native_records
from ._primitives import read_varint, read_varlong
from .compression import MAX_DECOMPRESSED_SIZE, Compression, DecompressionError, compress, decompress

__all__ = [
    "BatchExtent",
    "BatchFramingError",
    "BatchHeader",
    "ControlRecordType",
    "EndTransactionMarker",
    "Record",
    "RecordBatch",
    "TimestampType",
    "decode_batch",
    "decode_batch_header",
    "decode_control_key",
    "decode_end_txn_marker",
    "encode_batch",
    "encode_control_key",
    "encode_end_txn_marker",
    "encode_end_txn_marker_batch",
    "encode_record_v2",
    "iter_batch_extents",
    "iter_batch_headers",
    "iter_batches",
    "patch_batch_header",
    "seal_v2_batch",
    "set_batch_max_timestamp",
    "truncated_tail",
]

Headers = list[tuple[str, bytes | None]]


class TimestampType(IntEnum):
    NO_TIMESTAMP_TYPE = -1  # magic 0 carries no timestamps
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


class ControlRecordType(IntEnum):
    """The ``type`` in a control record's key."""

    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6


@dataclass(slots=True)
class Record:
    """One record. ``offset`` is absolute; ``timestamp`` is -1 where the format has none (magic 0)."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: Headers = field(default_factory=list)


_COMPRESSION_MASK = 0x07
_TIMESTAMP_TYPE_BIT = 0x08
_TRANSACTIONAL_BIT = 0x10
_CONTROL_BIT = 0x20
_DELETE_HORIZON_BIT = 0x40


@dataclass(slots=True)
class BatchHeader:
    """The header fields of one batch, as on the wire.

    For magic 0 and 1 (one legacy message, possibly a compressed wrapper) the fields that format lacks
    hold Kafka's "none" values (-1), ``batch_length`` is the message size, ``crc`` its CRC-32, both
    timestamps the message's timestamp (-1 for magic 0), ``base_offset`` the entry's offset field (for
    a compressed wrapper Kafka puts the offset of its *last* inner message there) and
    ``last_offset_delta`` 0, so ``last_offset`` holds for every magic. ``record_count`` is -1 for a
    legacy compressed wrapper until its records are decoded.
    """

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    @property
    def compression(self) -> Compression:
        return Compression(self.attributes & _COMPRESSION_MASK)

    @property
    def timestamp_type(self) -> TimestampType:
        if self.magic == 0:
            return TimestampType.NO_TIMESTAMP_TYPE
        return TimestampType((self.attributes & _TIMESTAMP_TYPE_BIT) >> 3)

    @property
    def is_transactional(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & _TRANSACTIONAL_BIT)

    @property
    def is_control(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & _CONTROL_BIT)

    @property
    def has_delete_horizon(self) -> bool:
        """KIP-534: ``base_timestamp`` holds the delete horizon set by log compaction."""
        return self.magic >= 2 and bool(self.attributes & _DELETE_HORIZON_BIT)

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def size_in_bytes(self) -> int:
        """Bytes the whole batch occupies, from its base offset to its end."""
        return self.batch_length + _LOG_OVERHEAD


@dataclass(slots=True)
class RecordBatch(BatchHeader):
    """A batch with its records decoded (decompressed, absolute offsets and timestamps)."""

    records: list[Record] = field(default_factory=list)


# --- layout ----------------------------------------------------------------------------------------
_LOG_OVERHEAD = 12  # offset int64 + size int32, common to every magic
_MAGIC_OFFSET = 16  # v2: after partition leader epoch; legacy: after crc
_V2_HEADER = struct.Struct(">qiibIhiqqqhii")
_V2_HEADER_SIZE = _V2_HEADER.size  # 61
_V2_MIN_LENGTH = _V2_HEADER_SIZE - _LOG_OVERHEAD  # 49
_V2_CRC_OFFSET = 17
_V2_ATTRIBUTES_OFFSET = 21
_V2_MIN_RECORD = 6  # attributes, timestamp delta, offset delta, key, value, header count: a byte each
_LEGACY_V0 = struct.Struct(">qiIbb")
_LEGACY_V1 = struct.Struct(">qiIbbq")
_LEGACY_MIN_LENGTH = (14, 22)  # crc, magic, attributes, [timestamp], key length, value length
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
_UINT32 = struct.Struct(">I")
_INT16_INT16 = struct.Struct(">hh")
_INT16_INT32 = struct.Struct(">hi")

# Zig-zag values of every varint payload up to 14 bits; index by the byte for one-byte varints.
_ZIGZAG = tuple((raw >> 1) ^ -(raw & 1) for raw in range(1 << 14))
# The same for two-byte varints indexed by their two bytes as a big-endian uint16 (first byte >= 0x80),
# which saves the masking and shifting in the hottest loop.
_ZIGZAG2 = tuple(
    _ZIGZAG[((i >> 8) & 0x7F) | ((i & 0xFF) << 7)] if i >= 0x8000 and i & 0xFF < 0x80 else 0
    for i in range(1 << 16)
)


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


def _error(magic: int, reason: str, field: str | None = None, offset: int | None = None) -> DecodeError:
    message = "RecordBatch" if magic >= 2 else "LegacyMessageSet"
    return DecodeError(message, magic, reason, field=field, offset=offset)


# --- walking a records blob ------------------------------------------------------------------------


def _next_extent(data, pos: int, end: int) -> int:
    """Size of the whole batch at ``pos``, or 0 if only part of one is there (as Java's
    ``ByteBufferLogInputStream.nextBatchSize``: a bad size or magic is corruption, a short tail is not)."""
    remaining = end - pos
    if remaining < _LOG_OVERHEAD:
        return 0
    (length,) = _INT32.unpack_from(data, pos + 8)
    magic = data[pos + _MAGIC_OFFSET] if remaining > _MAGIC_OFFSET else 0
    if length < _LEGACY_MIN_LENGTH[0]:
        raise _error(magic, f"batch length {length} is below the minimum of 14", "batch_length", pos + 8)
    if remaining <= _MAGIC_OFFSET:
        return 0
    if magic > 2:
        raise _error(magic, f"unknown magic {magic}", "magic", pos + _MAGIC_OFFSET)
    if length > remaining - _LOG_OVERHEAD:
        return 0
    return length + _LOG_OVERHEAD


def truncated_tail(data) -> int:
    """Number of bytes at the end of ``data`` that do not form a whole batch (0 if none).

    Brokers may cut the last batch of a fetch response short; a consumer then fetches again from the
    offset after the last whole batch. Raises ``DecodeError`` if a batch size or magic is corrupt.
    """
    pos = 0
    end = len(data)
    while True:
        size = _next_extent(data, pos, end)
        if not size:
            return end - pos
        pos += size


def iter_batch_headers(data, *, verify_crc: bool = True) -> Iterator[BatchHeader]:
    """Parse and check the header of each whole batch in ``data`` without touching its records.

    With ``verify_crc`` the CRC (CRC-32C for magic 2, CRC-32 for 0/1) is checked too; it covers the
    records, so this is still far cheaper than decoding them. Batch ``i`` starts at the sum of the
    ``size_in_bytes`` of the batches before it.
    """
    pos = 0
    end = len(data)
    while True:
        size = _next_extent(data, pos, end)
        if not size:
            return
        yield _decode_header(data, pos, pos + size, verify_crc)
        pos += size


def iter_batches(
    data,
    *,
    verify_crc: bool = True,
    max_decompressed_size: int = MAX_DECOMPRESSED_SIZE,
    record_class: type = Record,
) -> Iterator[RecordBatch]:
    """Decode each whole batch in ``data`` (bytes, bytearray or memoryview), records included.

    ``record_class`` makes the v2 records instances of a class of the caller's: it must define
    ``__slots__`` named offset, timestamp, key, value and headers (a consumer puts its own fields,
    such as the topic, on the class), and is built without calling ``__init__``."""
    buf = data if type(data) is bytes else bytes(data)  # one copy; slicing bytes is what makes keys
    pos = 0
    end = len(buf)
    while True:
        size = _next_extent(buf, pos, end)
        if not size:
            return
        yield _decode_full(buf, pos, pos + size, verify_crc, max_decompressed_size, record_class)
        pos += size


def _extent_or_raise(data, pos: int) -> int:
    end = len(data)
    if pos < 0 or pos > end:
        raise DecodeError("RecordBatch", None, f"position {pos} is outside the {end}-byte input")
    size = _next_extent(data, pos, end)
    if not size:
        magic = data[pos + _MAGIC_OFFSET] if end - pos > _MAGIC_OFFSET else None
        message = "RecordBatch" if magic is None or magic >= 2 else "LegacyMessageSet"
        raise DecodeError(message, magic, f"batch is truncated ({end - pos} bytes available)", offset=pos)
    return size


def decode_batch_header(data, pos: int = 0, *, verify_crc: bool = True) -> BatchHeader:
    """The header of the batch starting at ``pos`` (which must be whole); later bytes are ignored."""
    size = _extent_or_raise(data, pos)
    return _decode_header(data, pos, pos + size, verify_crc)


def decode_batch(
    data, pos: int = 0, *, verify_crc: bool = True, max_decompressed_size: int = MAX_DECOMPRESSED_SIZE
) -> RecordBatch:
    """Decode the batch starting at ``pos`` (which must be whole); later bytes are ignored."""
    size = _extent_or_raise(data, pos)
    if type(data) is bytes:
        return _decode_full(data, pos, pos + size, verify_crc, max_decompressed_size)
    try:  # copy just this batch, then report error offsets relative to the caller's input again
        return _decode_full(
            bytes(memoryview(data)[pos : pos + size]), 0, size, verify_crc, max_decompressed_size
        )
    except DecodeError as exc:
        offset = None if exc.offset is None else exc.offset + pos
        raise DecodeError(exc.message, exc.version, exc.reason, field=exc.field, offset=offset) from None


# --- decoding one batch ----------------------------------------------------------------------------


def _decode_header(data, pos: int, end: int, verify_crc: bool) -> BatchHeader:
    if data[pos + _MAGIC_OFFSET] >= 2:
        return BatchHeader(*_v2_header(data, pos, end, verify_crc))
    return BatchHeader(*_legacy_header(data, pos, end, verify_crc)[0])


def _decode_full(
    buf: bytes, pos: int, end: int, verify_crc: bool, max_size: int, record_class: type = Record
) -> RecordBatch:
    if buf[pos + _MAGIC_OFFSET] >= 2:
        fields = _v2_header(buf, pos, end, verify_crc)
        return RecordBatch(*fields, _v2_records(buf, pos, end, fields, max_size, record_class))
    return _legacy_full(buf, pos, end, verify_crc, max_size)


def _v2_header(data, pos: int, end: int, verify_crc: bool) -> tuple:
    if end - pos < _V2_HEADER_SIZE:
        raise _error(
            2,
            f"batch length {end - pos - _LOG_OVERHEAD} is below the minimum of {_V2_MIN_LENGTH}",
            "batch_length",
            pos + 8,
        )
    fields = _V2_HEADER.unpack_from(data, pos)
    if verify_crc:
        actual = _crc32c.crc32c(memoryview(data)[pos + _V2_ATTRIBUTES_OFFSET : end])
        if actual != fields[4]:
            raise _error(
                2,
                f"CRC-32C mismatch: header says {fields[4]:#010x}, bytes give {actual:#010x}",
                "crc",
                pos + _V2_CRC_OFFSET,
            )
    if fields[12] < 0:
        raise _error(2, f"negative record count {fields[12]}", "record_count", pos + 57)
    if fields[5] & _COMPRESSION_MASK > 4:
        codec = fields[5] & _COMPRESSION_MASK
        raise _error(2, f"unknown compression codec {codec}", "attributes", pos + _V2_ATTRIBUTES_OFFSET)
    return fields


def _v2_records(
    buf: bytes, pos: int, end: int, fields: tuple, max_size: int, record_class: type = Record
) -> list[Record]:
    attributes = fields[5]
    count = fields[12]
    codec = attributes & _COMPRESSION_MASK
    if codec:
        try:
            payload = decompress(
                codec, memoryview(buf)[pos + _V2_HEADER_SIZE : end], magic=2, max_size=max_size
            )
        except DecompressionError as exc:
            raise _error(2, str(exc), "records", pos + _V2_HEADER_SIZE) from None
        records = _read_v2_records(
            payload, 0, len(payload), count, fields[0], fields[7], pos + _V2_HEADER_SIZE, record_class
        )
    else:
        records = _read_v2_records(
            buf, pos + _V2_HEADER_SIZE, end, count, fields[0], fields[7], None, record_class
        )
    if attributes & _TIMESTAMP_TYPE_BIT:
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
        raise _error(
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
            raise _error(2, f"{reason} (decompressed byte {p})", where, compressed_at) from None
        raise _error(2, reason, where, p) from None
    if p != end:
        how = f"{end - p} bytes left after" if p < end else f"{p - end} bytes past the batch end in"
        reason = f"{how} the last record"
        if compressed_at is not None:
            raise _error(2, reason + " (decompressed)", f"records[{count - 1}]", compressed_at)
        raise _error(2, reason, f"records[{count - 1}]", p)
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


def _legacy_message(data, pos: int, end: int, magic: int, verify_crc: bool, where: str):
    """Parse the legacy message at ``pos`` ending at ``end``: (offset, crc, attributes, timestamp,
    key, value). ``where`` prefixes field names in errors."""
    if end - pos < _LOG_OVERHEAD + _LEGACY_MIN_LENGTH[magic]:
        raise _error(
            magic,
            f"message size {end - pos - _LOG_OVERHEAD} is below the minimum of {_LEGACY_MIN_LENGTH[magic]}",
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
        actual = zlib.crc32(memoryview(data)[pos + _MAGIC_OFFSET : end])
        if actual != crc:
            raise _error(
                magic,
                f"CRC-32 mismatch: message says {crc:#010x}, bytes give {actual:#010x}",
                where + "crc",
                pos + 12,
            )
    (n,) = _INT32.unpack_from(data, p)
    p += 4
    if n == -1:
        key = None
    elif n < 0 or n > end - p - 4:
        raise _error(magic, f"key length {n} does not fit the message", where + "key", p - 4)
    else:
        key = data[p : p + n]  # bytes when decoding; a memoryview slice (no copy) for headers only
        p += n
    (n,) = _INT32.unpack_from(data, p)
    p += 4
    if n == -1:
        value = None
    elif n < 0 or n > end - p:
        raise _error(magic, f"value length {n} does not fit the message", where + "value", p - 4)
    else:
        value = data[p : p + n]
        p += n
    if p != end:
        raise _error(magic, f"{end - p} bytes left after the value", where + "value", p)
    return offset, crc, attributes, timestamp, key, value


def _legacy_header(data, pos: int, end: int, verify_crc: bool):
    magic = data[pos + _MAGIC_OFFSET]
    offset, crc, attributes, timestamp, key, value = _legacy_message(data, pos, end, magic, verify_crc, "")
    codec = attributes & _COMPRESSION_MASK
    if codec > 3:
        # zstd (4) needs magic 2; 5-7 do not exist (AbstractLegacyRecordBatch rejects both)
        raise _error(
            magic, f"compression codec {codec} is not valid for magic {magic}", "attributes", pos + 17
        )
    if codec and value is None:
        raise _error(magic, "compressed wrapper message has a null value", "value", pos)
    header = (
        offset,
        end - pos - _LOG_OVERHEAD,
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


def _legacy_full(buf: bytes, pos: int, end: int, verify_crc: bool, max_size: int) -> RecordBatch:
    header, key, value = _legacy_header(buf, pos, end, verify_crc)
    wrapper_offset = header[0]
    magic = header[3]
    attributes = header[5]
    wrapper_timestamp = header[7]
    codec = attributes & _COMPRESSION_MASK
    if not codec:
        return RecordBatch(*header, [Record(wrapper_offset, wrapper_timestamp, key, value, [])])
    try:
        inner = decompress(codec, value, magic=magic, max_size=max_size)
    except DecompressionError as exc:
        raise _error(magic, str(exc), "value", pos) from None
    records: list[Record] = []
    p = 0
    inner_end = len(inner)
    log_append = magic == 1 and attributes & _TIMESTAMP_TYPE_BIT
    while p < inner_end:
        where = f"value.messages[{len(records)}]."
        if inner_end - p < _LOG_OVERHEAD + 5:
            raise _error(magic, "inner message is truncated", where[:-1], pos)
        (size,) = _INT32.unpack_from(inner, p + 8)
        inner_magic = inner[p + _MAGIC_OFFSET]
        if inner_magic > 1:
            raise _error(magic, f"inner message has magic {inner_magic}", where + "magic", pos)
        if size < 0 or size > inner_end - p - _LOG_OVERHEAD:
            raise _error(
                magic,
                f"inner message size {size} overruns the decompressed data",
                where + "message_size",
                pos,
            )
        next_p = p + _LOG_OVERHEAD + size
        try:
            offset, _, inner_attributes, timestamp, ikey, ivalue = _legacy_message(
                inner, p, next_p, inner_magic, verify_crc, where
            )
        except DecodeError as exc:
            raise _error(magic, exc.reason + " (in decompressed data)", exc.field, pos) from None
        if inner_attributes & _COMPRESSION_MASK:
            raise _error(magic, "inner messages must not be compressed", where + "attributes", pos)
        if log_append:
            timestamp = wrapper_timestamp
        records.append(Record(offset, timestamp, ikey, ivalue, []))
        p = next_p
    if not records:
        raise _error(magic, "compressed wrapper holds no messages", "value", pos)
    if magic == 1:
        # Inner offsets are relative; the wrapper carries the absolute offset of the last one. A zero
        # wrapper offset (some librdkafka versions) means "relative to 0" (AbstractLegacyRecordBatch).
        last_inner = records[-1].offset
        if wrapper_offset != 0:
            if wrapper_offset < last_inner:
                raise _error(
                    magic,
                    f"wrapper offset {wrapper_offset} is below the last inner offset {last_inner}",
                    "offset",
                    pos,
                )
            base = wrapper_offset - last_inner
            for record in records:
                record.offset += base
    return RecordBatch(*header[:12], len(records), records)


# --- encoding --------------------------------------------------------------------------------------


def encode_batch(
    records: Iterable[Record],
    *,
    magic: int = 2,
    compression: Compression | int = Compression.NONE,
    base_offset: int = 0,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    is_transactional: bool = False,
    is_control: bool = False,
    partition_leader_epoch: int = -1,
    timestamp_type: TimestampType | int = TimestampType.CREATE_TIME,
    base_timestamp: int | None = None,
    log_append_time: int | None = None,
    has_delete_horizon: bool = False,
    compression_level: int | None = None,
) -> bytes:
    """Encode ``records`` as one batch (magic 2), or as a legacy message set (magic 0/1: one entry per
    record, or one compressed wrapper), laid out as Kafka's Java ``MemoryRecordsBuilder`` writes it.

    ``Record.offset`` is absolute; offsets must increase and not be below ``base_offset``. The batch's
    ``base_timestamp`` is the first record's timestamp unless given (compaction puts the delete horizon
    there, with ``has_delete_horizon``). With ``timestamp_type=LOG_APPEND_TIME`` the max timestamp (and,
    for magic 0/1, every message timestamp) is ``log_append_time``, defaulting to the records' maximum.
    Producer-state rules (e.g. transactional needs a producer id) are left to the caller, so that
    deliberately invalid batches can be built; fields a magic does not have raise ``EncodeError``.
    An empty ``records`` gives an empty batch for magic 2 (count 0, as Kafka's compaction writes to
    keep producer state) and no bytes for magic 0/1.
    """
    codec = Compression(compression)
    timestamp_type = TimestampType(timestamp_type)
    if magic == 2:
        return _encode_v2(
            records,
            codec,
            compression_level,
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
        )
    if magic not in (0, 1):
        raise EncodeError(f"unknown magic {magic}")
    if is_transactional or is_control or producer_id != -1 or has_delete_horizon:
        raise EncodeError(f"magic {magic} has no producer state, transactions, control or delete horizon")
    if partition_leader_epoch != -1 or base_sequence != -1 or producer_epoch != -1:
        raise EncodeError(f"magic {magic} has no partition leader epoch, producer epoch or sequence")
    if codec is Compression.ZSTD:
        raise EncodeError("zstd requires magic 2")
    return _encode_legacy(
        records, magic, codec, compression_level, base_offset, timestamp_type, log_append_time
    )


def _encode_v2(
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
        encoded = _v2_body(records, base_offset, base_timestamp)
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


def _v2_body(records, base_offset: int, base_timestamp: int | None) -> tuple:
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
    attributes = int(compression) | (_TIMESTAMP_TYPE_BIT if log_append_time else 0)
    if is_transactional:
        attributes |= _TRANSACTIONAL_BIT
    if is_control:
        attributes |= _CONTROL_BIT
    if has_delete_horizon:
        attributes |= _DELETE_HORIZON_BIT
    size = len(body) if type(body) is bytes or type(body) is bytearray else memoryview(body).nbytes
    try:
        header = _V2_HEADER.pack(
            base_offset,
            _V2_MIN_LENGTH + size,
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
    crc = _crc32c.crc32c(body, _crc32c.crc32c(header[_V2_ATTRIBUTES_OFFSET:]))  # one pass, no copy first
    return b"".join((header[:_V2_CRC_OFFSET], _UINT32.pack(crc), header[_V2_ATTRIBUTES_OFFSET:], body))


def _legacy_entry(magic: int, offset: int, attributes: int, timestamp: int, key, value) -> bytes:
    key_part = b"\xff\xff\xff\xff" if key is None else _INT32.pack(len(key)) + key
    value_part = b"\xff\xff\xff\xff" if value is None else _INT32.pack(len(value)) + value
    if magic:
        body = b"\x01%b%b%b%b" % (bytes((attributes,)), _INT64.pack(timestamp), key_part, value_part)
    else:
        body = b"\x00%b%b%b" % (bytes((attributes,)), key_part, value_part)
    crc = zlib.crc32(body)
    return b"%b%b%b" % (struct.pack(">qi", offset, len(body) + 4), _UINT32.pack(crc), body)


def _encode_legacy(records, magic, codec, level, base_offset, timestamp_type, log_append_time) -> bytes:
    log_append = magic == 1 and timestamp_type == TimestampType.LOG_APPEND_TIME
    ts_bit = _TIMESTAMP_TYPE_BIT if log_append else 0
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


def patch_batch_header(
    buf: bytearray,
    pos: int = 0,
    *,
    base_offset: int | None = None,
    partition_leader_epoch: int | None = None,
    log_append_time: int | None = None,
) -> None:
    """Rewrite fields of the magic 2 batch at ``buf[pos]`` in place, as a broker does on append.

    Base offset and partition leader epoch sit outside the CRC; ``log_append_time`` switches the batch
    to LogAppendTime with that max timestamp and recomputes the CRC.
    """
    if buf[pos + _MAGIC_OFFSET] != 2:
        raise ValueError("only magic 2 batch headers can be patched")
    if base_offset is not None:
        _INT64.pack_into(buf, pos, base_offset)
    if partition_leader_epoch is not None:
        _INT32.pack_into(buf, pos + 12, partition_leader_epoch)
    if log_append_time is not None:
        (length,) = _INT32.unpack_from(buf, pos + 8)
        (attributes,) = struct.unpack_from(">h", buf, pos + _V2_ATTRIBUTES_OFFSET)
        struct.pack_into(">h", buf, pos + _V2_ATTRIBUTES_OFFSET, attributes | _TIMESTAMP_TYPE_BIT)
        _INT64.pack_into(buf, pos + 35, log_append_time)
        crc = _crc32c.crc32c(memoryview(buf)[pos + _V2_ATTRIBUTES_OFFSET : pos + _LOG_OVERHEAD + length])
        _UINT32.pack_into(buf, pos + _V2_CRC_OFFSET, crc)


# --- control records -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EndTransactionMarker:
    """The commit or abort marker a transaction coordinator writes into each partition."""

    type: ControlRecordType
    coordinator_epoch: int
    version: int = 0

    @property
    def committed(self) -> bool:
        return self.type == ControlRecordType.COMMIT


def encode_control_key(type: ControlRecordType | int, version: int = 0) -> bytes:
    """A control record key: version int16, type int16."""
    return _INT16_INT16.pack(version, type)


def decode_control_key(key: bytes | None) -> tuple[int, int]:
    """``(version, type)`` of a control record key (unknown types are returned as plain ints)."""
    if key is None or len(key) < 4:
        raise DecodeError("ControlRecordKey", None, "control record key is shorter than 4 bytes", field="key")
    version, type_ = _INT16_INT16.unpack_from(key, 0)
    if version < 0:
        raise DecodeError("ControlRecordKey", version, "negative control record key version", field="version")
    try:
        return version, ControlRecordType(type_)
    except ValueError:
        return version, type_


def encode_end_txn_marker(coordinator_epoch: int, version: int = 0) -> bytes:
    """An end-transaction marker value: version int16, coordinator epoch int32."""
    return _INT16_INT32.pack(version, coordinator_epoch)


def decode_end_txn_marker(record: Record) -> EndTransactionMarker:
    """The marker carried by a control record of type ABORT or COMMIT."""
    _, type_ = decode_control_key(record.key)
    if type_ not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        raise DecodeError(
            "EndTxnMarker", None, f"control record type {type_} is not a transaction marker", field="key"
        )
    value = record.value
    if value is None or len(value) < 6:
        raise DecodeError("EndTxnMarker", None, "marker value is shorter than 6 bytes", field="value")
    version, coordinator_epoch = _INT16_INT32.unpack_from(value, 0)
    if version < 0:
        raise DecodeError("EndTxnMarker", version, "negative marker version", field="version")
    return EndTransactionMarker(type_, coordinator_epoch, version)


def encode_end_txn_marker_batch(
    *,
    producer_id: int,
    producer_epoch: int,
    commit: bool,
    coordinator_epoch: int,
    timestamp: int,
    base_offset: int = 0,
    partition_leader_epoch: int = -1,
) -> bytes:
    """A control batch holding one commit/abort marker, as ``MemoryRecords.withEndTransactionMarker``."""
    type_ = ControlRecordType.COMMIT if commit else ControlRecordType.ABORT
    marker = Record(
        base_offset, timestamp, encode_control_key(type_), encode_end_txn_marker(coordinator_epoch)
    )
    return encode_batch(
        [marker],
        base_offset=base_offset,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=-1,
        is_transactional=True,
        is_control=True,
        partition_leader_epoch=partition_leader_epoch,
    )


# --- broker-side batch access: extents and max timestamp -------------------------------------------
# Added for the reference broker's log validation. Kept apart from the readers above: these follow
# Kafka's broker classes (ByteBufferLogInputStream, DefaultRecordBatch.setMaxTimestamp) step by step,
# so that a broker built on them fails exactly where Kafka's does.


@dataclass(frozen=True, slots=True)
class BatchExtent:
    """Where one whole batch lies in a records blob, with the fields every magic keeps in its first
    23 bytes (readable for any batch the framing accepts). Nothing else is parsed or checked.

    ``base_offset`` is the first int64: the base offset for magic 2, the entry's offset for 0/1.
    ``attributes`` is the int16 attributes field for magic 2 and the attributes byte for 0/1.
    """

    position: int
    size: int
    magic: int
    base_offset: int
    attributes: int

    @property
    def compression_id(self) -> int:
        """The codec id bits, which may name no codec (5-7) since nothing is checked here."""
        return self.attributes & _COMPRESSION_MASK


class BatchFramingError(DecodeError):
    """A batch whose size field or magic makes the rest of a records blob unreadable: ``batch_length``
    is the size field and ``magic`` the (signed) magic byte, or None when the size was already bad."""

    def __init__(self, reason: str, *, batch_length: int, magic: int | None, offset: int) -> None:
        field_name = "batch_length" if magic is None else "magic"
        super().__init__(
            "RecordBatch" if magic is None or magic >= 2 else "LegacyMessageSet",
            magic,
            reason,
            field=field_name,
            offset=offset,
        )
        self.batch_length = batch_length
        self.magic = magic

    def __reduce__(self):
        return (_rebuild_framing_error, (self.reason, self.batch_length, self.magic, self.offset))


def _rebuild_framing_error(reason, batch_length, magic, offset):
    return BatchFramingError(reason, batch_length=batch_length, magic=magic, offset=offset)


_INT8 = struct.Struct(">b")
_INT16 = struct.Struct(">h")
_LEGACY_ATTRIBUTES_OFFSET = 17
_V2_MAX_TIMESTAMP_OFFSET = 35
_V2_KNOWN_ATTRIBUTES = _COMPRESSION_MASK | _TRANSACTIONAL_BIT | _CONTROL_BIT | _DELETE_HORIZON_BIT


def iter_batch_extents(data) -> Iterator[BatchExtent]:
    """Walk ``data`` batch by batch as Kafka's ``ByteBufferLogInputStream`` does.

    Stops quietly before a partial trailing batch (fewer than 12 bytes, fewer than the 17 that reach the
    magic byte, or fewer than the size field says). A size field below 14 (the smallest legacy
    message), or a magic outside 0..2, raises ``BatchFramingError`` when the walk reaches that batch,
    after yielding the batches before it; Kafka throws ``CorruptRecordException`` there.
    """
    pos = 0
    end = len(data)
    while True:
        remaining = end - pos
        if remaining < _LOG_OVERHEAD:
            return
        (length,) = _INT32.unpack_from(data, pos + 8)
        if length < _LEGACY_MIN_LENGTH[0]:
            raise BatchFramingError(
                f"batch length {length} is below the minimum of {_LEGACY_MIN_LENGTH[0]}",
                batch_length=length,
                magic=None,
                offset=pos + 8,
            )
        if remaining <= _MAGIC_OFFSET:
            return
        (magic,) = _INT8.unpack_from(data, pos + _MAGIC_OFFSET)
        if magic < 0 or magic > 2:
            raise BatchFramingError(
                f"unknown magic {magic}", batch_length=length, magic=magic, offset=pos + _MAGIC_OFFSET
            )
        size = length + _LOG_OVERHEAD
        if size > remaining:
            return
        (base_offset,) = _INT64.unpack_from(data, pos)
        if magic == 2:
            (attributes,) = _INT16.unpack_from(data, pos + _V2_ATTRIBUTES_OFFSET)
        else:
            attributes = data[pos + _LEGACY_ATTRIBUTES_OFFSET]
        yield BatchExtent(pos, size, magic, base_offset, attributes)
        pos += size


def set_batch_max_timestamp(
    buf: bytearray, pos: int = 0, *, timestamp_type: TimestampType | int, max_timestamp: int
) -> bool:
    """Set the timestamp type and max timestamp of the magic 2 batch at ``buf[pos]``, as Kafka's
    ``DefaultRecordBatch.setMaxTimestamp`` does on append.

    When both already hold, nothing changes. Otherwise the attributes are rewritten from the flags
    Kafka knows (codec, timestamp type, transactional, control, delete horizon: any other bit is
    cleared, as Kafka's ``computeAttributes`` drops it), the max timestamp is written, and the CRC is
    recomputed. Returns whether the bytes changed.
    """
    if buf[pos + _MAGIC_OFFSET] != 2:
        raise ValueError("only magic 2 batches carry a max timestamp to set")
    timestamp_type = TimestampType(timestamp_type)
    if timestamp_type == TimestampType.NO_TIMESTAMP_TYPE:
        raise ValueError("a magic 2 batch needs CreateTime or LogAppendTime")
    (attributes,) = _INT16.unpack_from(buf, pos + _V2_ATTRIBUTES_OFFSET)
    (current_max,) = _INT64.unpack_from(buf, pos + _V2_MAX_TIMESTAMP_OFFSET)
    current_type = (
        TimestampType.LOG_APPEND_TIME if attributes & _TIMESTAMP_TYPE_BIT else TimestampType.CREATE_TIME
    )
    if current_type == timestamp_type and current_max == max_timestamp:
        return False
    attributes &= _V2_KNOWN_ATTRIBUTES
    if timestamp_type == TimestampType.LOG_APPEND_TIME:
        attributes |= _TIMESTAMP_TYPE_BIT
    (length,) = _INT32.unpack_from(buf, pos + 8)
    _INT16.pack_into(buf, pos + _V2_ATTRIBUTES_OFFSET, attributes)
    _INT64.pack_into(buf, pos + _V2_MAX_TIMESTAMP_OFFSET, max_timestamp)
    crc = _crc32c.crc32c(memoryview(buf)[pos + _V2_ATTRIBUTES_OFFSET : pos + _LOG_OVERHEAD + length])
    _UINT32.pack_into(buf, pos + _V2_CRC_OFFSET, crc)
    return True
