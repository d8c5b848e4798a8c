"""Broker-side batch access: where each batch lies, and rewriting a header in place on append.

Added for the reference broker's log and its validation. Kept apart from the readers: these follow
Kafka's broker classes (ByteBufferLogInputStream, DefaultRecordBatch.setMaxTimestamp) step by step,
so that a broker built on them fails exactly where Kafka's does."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

import crc32c as _crc32c

from ._batch_layout import (
    COMPRESSION_MASK,
    CONTROL_BIT,
    DELETE_HORIZON_BIT,
    INT32,
    INT64,
    LEGACY_MIN_LENGTH,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    TIMESTAMP_TYPE_BIT,
    TRANSACTIONAL_BIT,
    UINT32,
    V2_ATTRIBUTES_OFFSET,
    V2_CRC_OFFSET,
)
from ._batch_model import TimestampType
from ._exceptions import DecodeError

__all__ = [
    "BatchExtent",
    "BatchFramingError",
    "iter_batch_extents",
    "patch_batch_header",
    "set_batch_max_timestamp",
]


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
        return self.attributes & COMPRESSION_MASK


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
_V2_KNOWN_ATTRIBUTES = COMPRESSION_MASK | TRANSACTIONAL_BIT | CONTROL_BIT | DELETE_HORIZON_BIT


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
        if remaining < LOG_OVERHEAD:
            return
        (length,) = INT32.unpack_from(data, pos + 8)
        if length < LEGACY_MIN_LENGTH[0]:
            raise BatchFramingError(
                f"batch length {length} is below the minimum of {LEGACY_MIN_LENGTH[0]}",
                batch_length=length,
                magic=None,
                offset=pos + 8,
            )
        if remaining <= MAGIC_OFFSET:
            return
        (magic,) = _INT8.unpack_from(data, pos + MAGIC_OFFSET)
        if magic < 0 or magic > 2:
            raise BatchFramingError(
                f"unknown magic {magic}", batch_length=length, magic=magic, offset=pos + MAGIC_OFFSET
            )
        size = length + LOG_OVERHEAD
        if size > remaining:
            return
        (base_offset,) = INT64.unpack_from(data, pos)
        if magic == 2:
            (attributes,) = _INT16.unpack_from(data, pos + V2_ATTRIBUTES_OFFSET)
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
    if buf[pos + MAGIC_OFFSET] != 2:
        raise ValueError("only magic 2 batches carry a max timestamp to set")
    timestamp_type = TimestampType(timestamp_type)
    if timestamp_type == TimestampType.NO_TIMESTAMP_TYPE:
        raise ValueError("a magic 2 batch needs CreateTime or LogAppendTime")
    (attributes,) = _INT16.unpack_from(buf, pos + V2_ATTRIBUTES_OFFSET)
    (current_max,) = INT64.unpack_from(buf, pos + _V2_MAX_TIMESTAMP_OFFSET)
    current_type = (
        TimestampType.LOG_APPEND_TIME if attributes & TIMESTAMP_TYPE_BIT else TimestampType.CREATE_TIME
    )
    if current_type == timestamp_type and current_max == max_timestamp:
        return False
    attributes &= _V2_KNOWN_ATTRIBUTES
    if timestamp_type == TimestampType.LOG_APPEND_TIME:
        attributes |= TIMESTAMP_TYPE_BIT
    (length,) = INT32.unpack_from(buf, pos + 8)
    _INT16.pack_into(buf, pos + V2_ATTRIBUTES_OFFSET, attributes)
    INT64.pack_into(buf, pos + _V2_MAX_TIMESTAMP_OFFSET, max_timestamp)
    crc = _crc32c.crc32c(memoryview(buf)[pos + V2_ATTRIBUTES_OFFSET : pos + LOG_OVERHEAD + length])
    UINT32.pack_into(buf, pos + V2_CRC_OFFSET, crc)
    return True


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
    if buf[pos + MAGIC_OFFSET] != 2:
        raise ValueError("only magic 2 batch headers can be patched")
    if base_offset is not None:
        INT64.pack_into(buf, pos, base_offset)
    if partition_leader_epoch is not None:
        INT32.pack_into(buf, pos + 12, partition_leader_epoch)
    if log_append_time is not None:
        (length,) = INT32.unpack_from(buf, pos + 8)
        (attributes,) = struct.unpack_from(">h", buf, pos + V2_ATTRIBUTES_OFFSET)
        struct.pack_into(">h", buf, pos + V2_ATTRIBUTES_OFFSET, attributes | TIMESTAMP_TYPE_BIT)
        INT64.pack_into(buf, pos + 35, log_append_time)
        crc = _crc32c.crc32c(memoryview(buf)[pos + V2_ATTRIBUTES_OFFSET : pos + LOG_OVERHEAD + length])
        UINT32.pack_into(buf, pos + V2_CRC_OFFSET, crc)
