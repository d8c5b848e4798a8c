"""Batch by batch: walking a records blob, decoding one batch and encoding one, each handing the
work to the magic 2 or the legacy code by the batch's magic."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ._batch_layout import INT32, LEGACY_MIN_LENGTH, LOG_OVERHEAD, MAGIC_OFFSET, batch_error
from ._batch_model import BatchHeader, Record, RecordBatch, TimestampType
from ._exceptions import DecodeError, EncodeError
from ._legacy_message_sets import encode_legacy, legacy_full, legacy_header
from ._v2_reader import v2_header, v2_records
from ._v2_stream import v2_record_chunks
from ._v2_writer import encode_v2
from .compression import MAX_DECOMPRESSED_SIZE, Compression

__all__ = [
    "decode_batch",
    "decode_batch_header",
    "encode_batch",
    "iter_batch_headers",
    "iter_batches",
    "iter_record_chunks",
    "truncated_tail",
]


# --- walking a records blob ------------------------------------------------------------------------


def _next_extent(data, pos: int, end: int) -> int:
    """Size of the whole batch at ``pos``, or 0 if only part of one is there (as Java's
    ``ByteBufferLogInputStream.nextBatchSize``: a bad size or magic is corruption, a short tail is not)."""
    remaining = end - pos
    if remaining < LOG_OVERHEAD:
        return 0
    (length,) = INT32.unpack_from(data, pos + 8)
    magic = data[pos + MAGIC_OFFSET] if remaining > MAGIC_OFFSET else 0
    if length < LEGACY_MIN_LENGTH[0]:
        raise batch_error(magic, f"batch length {length} is below the minimum of 14", "batch_length", pos + 8)
    if remaining <= MAGIC_OFFSET:
        return 0
    if magic > 2:
        raise batch_error(magic, f"unknown magic {magic}", "magic", pos + MAGIC_OFFSET)
    if length > remaining - LOG_OVERHEAD:
        return 0
    return length + LOG_OVERHEAD


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
        magic = data[pos + MAGIC_OFFSET] if end - pos > MAGIC_OFFSET else None
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


def iter_record_chunks(
    data, pos: int = 0, *, max_decompressed_size: int = MAX_DECOMPRESSED_SIZE
) -> Iterator[list[Record]]:
    """The records of the magic 2 batch starting at ``pos`` (which must be whole; its CRC is not
    checked), a few thousand at a time, decompressing a piece at a time: for a reader that looks at each
    record once, so a batch that expands a lot is never held whole, as payload or as records. Gives
    the records ``decode_batch`` gives, and fails where it fails with a DecodeError of the same field
    kind: at once for the header, while iterating for the records. Empty lists may come."""
    size = _extent_or_raise(data, pos)
    magic = data[pos + MAGIC_OFFSET]
    if magic < 2:
        raise batch_error(
            magic, "record chunks are read from magic 2 batches only", "magic", pos + MAGIC_OFFSET
        )
    fields = v2_header(data, pos, pos + size, False)
    return v2_record_chunks(data, pos, pos + size, fields, max_decompressed_size)


# --- decoding one batch ----------------------------------------------------------------------------


def _decode_header(data, pos: int, end: int, verify_crc: bool) -> BatchHeader:
    if data[pos + MAGIC_OFFSET] >= 2:
        return BatchHeader(*v2_header(data, pos, end, verify_crc))
    return BatchHeader(*legacy_header(data, pos, end, verify_crc)[0])


def _decode_full(
    buf: bytes, pos: int, end: int, verify_crc: bool, max_size: int, record_class: type = Record
) -> RecordBatch:
    if buf[pos + MAGIC_OFFSET] >= 2:
        fields = v2_header(buf, pos, end, verify_crc)
        return RecordBatch(*fields, v2_records(buf, pos, end, fields, max_size, record_class))
    return legacy_full(buf, pos, end, verify_crc, max_size)


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
        return encode_v2(
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
    return encode_legacy(
        records, magic, codec, compression_level, base_offset, timestamp_type, log_append_time
    )
