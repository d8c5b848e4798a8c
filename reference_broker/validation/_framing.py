"""One partition's produced records, framed once: where each whole batch lies and its header (base
offset, length, magic, CRC, attributes, producer id and epoch, base sequence, record count,
timestamps), or why that header cannot be read; and the batch whose size or magic stopped the walk.

The produce handler frames each partition's records as the request comes in. Every later step reads
this one parse: the request-wide and per-partition checks (``_request``), the transaction check, the
log validator (``_log``), and through the validated batch's header the log append. Framing never
raises: what it finds wrong is kept and reported by the step where Kafka reports it.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, replace

from kconform.codecs import DecodeError
from kconform.codecs.records import (
    BatchExtent,
    BatchFramingError,
    BatchHeader,
    decode_batch_header,
    iter_batch_extents,
)

from ._scan_result import RecordsScan

__all__ = ["FramedBatch", "FramedRecords", "frame_records", "framed", "patched_header"]

# DefaultRecordBatch: the CRC and the attributes it covers, which set_batch_max_timestamp may rewrite
_V2_CRC = struct.Struct(">I")
_V2_CRC_OFFSET = 17
_V2_ATTRIBUTES = struct.Struct(">h")
_V2_ATTRIBUTES_OFFSET = 21


@dataclass(frozen=True, slots=True)
class FramedBatch:
    """One whole batch: its extent in the records and its header as read with the CRC checked, or the
    ``DecodeError`` that reading it raised (exactly one of ``header`` and ``header_error`` is set);
    ``records_scan``, its records read ahead when a driver did (``scan_compressed_records``)."""

    extent: BatchExtent
    header: BatchHeader | None
    header_error: DecodeError | None
    records_scan: RecordsScan | None = None


@dataclass(frozen=True, slots=True)
class FramedRecords:
    """A partition's records as bytes, framed. ``batches`` are the whole batches, in order, up to a
    partial trailing batch (left out, as Kafka trims it) or ``framing_error``: a size below 14 or a
    magic outside 0..2 where the next batch starts, which makes the rest unreadable."""

    data: bytes
    batches: tuple[FramedBatch, ...]
    framing_error: BatchFramingError | None

    @property
    def first_header(self) -> BatchHeader | None:
        """The first batch's header, if there is a whole first batch with a readable header."""
        return self.batches[0].header if self.batches else None


def frame_records(records: bytes | bytearray | memoryview | None) -> FramedRecords | None:
    """Frame ``records`` (None for a null records field)."""
    if records is None:
        return None
    data = records if isinstance(records, bytes) else bytes(records)
    batches = []
    framing_error = None
    try:
        for extent in iter_batch_extents(data):
            try:
                header, error = decode_batch_header(data, extent.position, verify_crc=True), None
            except DecodeError as exc:
                header, error = None, exc
            batches.append(FramedBatch(extent, header, error))
    except BatchFramingError as exc:
        framing_error = exc
    return FramedRecords(data, tuple(batches), framing_error)


def framed(records: FramedRecords | bytes | bytearray | memoryview | None) -> FramedRecords | None:
    """``records`` framed, unless they already are."""
    return records if isinstance(records, FramedRecords) else frame_records(records)


def patched_header(
    header: BatchHeader,
    patched: bytearray,
    *,
    base_offset: int,
    partition_leader_epoch: int,
    max_timestamp: int,
) -> BatchHeader:
    """``header`` of a magic 2 batch after the leader's in-place rewrite (``patch_batch_header``, then
    ``set_batch_max_timestamp``) produced ``patched``: the fields it set, and the attributes and CRC
    read back, as ``set_batch_max_timestamp`` may have rewritten them. The batch is not parsed again."""
    (attributes,) = _V2_ATTRIBUTES.unpack_from(patched, _V2_ATTRIBUTES_OFFSET)
    (crc,) = _V2_CRC.unpack_from(patched, _V2_CRC_OFFSET)
    return replace(
        header,
        base_offset=base_offset,
        partition_leader_epoch=partition_leader_epoch,
        max_timestamp=max_timestamp,
        attributes=attributes,
        crc=crc,
    )
