"""Read-side lookups over a partition's segment list, sans state: where an offset sits, reading a
byte range from an offset (Kafka's ``LocalLog.read``) and ListOffsets by timestamp
(``UnifiedLog.fetchOffsetByTimestamp``, down to the records of one segment). ``segments`` is ordered
by base offset and never empty."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence

from kconform.codecs.records import BatchHeader, decode_batch

from ._results import TimestampAndOffset
from ._segment import LogSegment, SegmentSlice

__all__ = [
    "floor_index",
    "max_timestamp_offset",
    "offset_position",
    "read_from",
    "search_offset_by_timestamp",
    "whole_batches_size",
]


def floor_index(base_offsets: Sequence[int], offset: int) -> int:
    """Index of the segment whose base offset is the largest at or below ``offset`` (-1 if none)."""
    return bisect_right(base_offsets, offset) - 1


def offset_position(
    segments: Sequence[LogSegment], base_offsets: Sequence[int], offset: int, log_end_offset: int
) -> tuple[int, int]:
    """(segment base offset, byte position) of the batch holding ``offset``: Kafka's offset metadata
    of a high watermark or last stable offset. The log end offset, or an offset past every batch,
    maps to the end of the active segment."""
    active = segments[-1]
    if offset < log_end_offset:
        for segment in segments[max(floor_index(base_offsets, offset), 0) :]:
            found = segment.translate_offset(offset)
            if found is not None:
                return segment.base_offset, found[0]
    return active.base_offset, active.size


def read_from(
    segments: Sequence[LogSegment],
    base_offsets: Sequence[int],
    start_offset: int,
    max_bytes: int,
    max_position: tuple[int, int],
    min_one_batch: bool,
) -> tuple[LogSegment, SegmentSlice] | None:
    """Read from the segment holding ``start_offset``, moving on to later segments while a segment
    has nothing at or after it; nothing is read at or beyond ``max_position`` (segment base offset,
    byte position). None if there is nothing to read."""
    max_base, max_byte = max_position
    index = floor_index(base_offsets, start_offset)
    while 0 <= index < len(segments):
        segment = segments[index]
        if segment.base_offset < max_base:
            limit = segment.size
        elif segment.base_offset == max_base:
            limit = max_byte
        else:
            limit = 0
        found = segment.read(start_offset, max_bytes, limit, min_one_batch)
        if found is not None:
            return segment, found
        index += 1
    return None


def whole_batches_size(segment: LogSegment, position: int, size: int) -> int:
    """The largest prefix of ``size`` bytes at ``position`` made of whole batches."""
    total = 0
    for _, header in segment.batches_from(position):
        if total + header.size_in_bytes > size:
            break
        total += header.size_in_bytes
    return total


def search_offset_by_timestamp(
    segments: Sequence[LogSegment], timestamp: int, log_start_offset: int
) -> TimestampAndOffset | None:
    """The first record at or after the log start offset with a timestamp at or above ``timestamp``,
    searched in the first segment whose largest timestamp reaches it (and only there, as in Kafka)."""
    for segment in segments:
        if segment.largest_timestamp() >= timestamp:
            return _find_offset_by_timestamp(segment, timestamp, log_start_offset)
    return None


def max_timestamp_offset(segments: Sequence[LogSegment]) -> TimestampAndOffset | None:
    """The record with the largest timestamp (ListOffsets MAX_TIMESTAMP); the earliest segment wins
    a tie."""
    best = max(segments, key=lambda segment: segment.max_timestamp_so_far)
    return _offset_of_max_timestamp(best)


def _find_offset_by_timestamp(
    segment: LogSegment, timestamp: int, starting_offset: int
) -> TimestampAndOffset | None:
    """The first record of ``segment`` at or after ``starting_offset`` with a timestamp at or above
    ``timestamp`` (Kafka's ``LogSegment.findOffsetByTimestamp``, then
    ``FileRecords.searchForTimestamp``)."""
    _, indexed_offset = segment.time_index.lookup(timestamp)
    _, position = segment.offset_index.lookup(max(indexed_offset, starting_offset))
    for batch_position, header in segment.batches_from(position):
        if header.max_timestamp < timestamp:
            continue
        for record in _records(segment, batch_position, header):
            if record.timestamp >= timestamp and record.offset >= starting_offset:
                return TimestampAndOffset(record.timestamp, record.offset, _epoch(header))
    return None


def _offset_of_max_timestamp(segment: LogSegment) -> TimestampAndOffset | None:
    """The record holding ``segment``'s largest timestamp."""
    max_timestamp, shallow_offset = segment.max_timestamp_and_offset_so_far
    _, position = segment.offset_index.lookup(shallow_offset)
    for batch_position, header in segment.batches_from(position):
        if header.max_timestamp != max_timestamp:
            continue
        for record in _records(segment, batch_position, header):
            if record.timestamp == max_timestamp:
                return TimestampAndOffset(max_timestamp, record.offset, _epoch(header))
        return None
    return None


def _records(segment: LogSegment, position: int, header: BatchHeader):
    return decode_batch(segment.read_bytes(position, header.size_in_bytes), verify_crc=False).records


def _epoch(header: BatchHeader) -> int | None:
    epoch = header.partition_leader_epoch
    return epoch if epoch >= 0 else None
