"""The batches of one append as the log sees them: where each lies and its header, parsed here once or
handed over by a caller that has parsed them already (the produce path's validation); then the offsets
a leader writes into them in place, or the order a follower's offsets must keep. Pure: bytes and
headers in, headers out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from kconform.codecs import DecodeError
from kconform.codecs.records import BatchHeader, decode_batch_header, iter_batch_headers, patch_batch_header

from ._errors import CorruptRecord, InvalidAppend, UnexpectedAppendOffset
from ._time_index import NO_TIMESTAMP

__all__ = [
    "FramedBatch",
    "assign_leader_offsets",
    "check_follower_offsets",
    "frame_append",
    "max_timestamp_of",
]


class FramedBatch(NamedTuple):
    """One whole batch of an append: its byte position in the append and its header."""

    position: int
    header: BatchHeader


def frame_append(data: bytearray, headers: Sequence[BatchHeader] | None) -> list[FramedBatch]:
    """Each batch of ``data``, refusing anything but whole magic 2 batches. Without ``headers`` every
    batch is parsed here and its CRC checked; with them (one per batch, in order, as their producer
    parsed or built them) nothing is parsed again: they must cover ``data`` exactly."""
    if headers is None:
        framed = _parse(data)
    else:
        framed = []
        position = 0
        for header in headers:
            framed.append(FramedBatch(position, header))
            position += header.size_in_bytes
        _check_whole(data, position)
    for _, header in framed:
        if header.magic != 2:
            raise InvalidAppend(f"only magic 2 batches can be appended, not magic {header.magic}")
    return framed


def _parse(data: bytearray) -> list[FramedBatch]:
    framed = []
    position = 0
    try:
        for header in iter_batch_headers(data, verify_crc=True):
            framed.append(FramedBatch(position, header))
            position += header.size_in_bytes
    except DecodeError as exc:
        raise CorruptRecord(f"invalid batch in append: {exc}") from exc
    _check_whole(data, position)
    return framed


def _check_whole(data: bytearray, framed_size: int) -> None:
    if framed_size != len(data):
        raise InvalidAppend(f"the last {len(data) - framed_size} bytes of the append are not a whole batch")


def assign_leader_offsets(
    data: bytearray, framed: list[FramedBatch], next_offset: int, leader_epoch: int, log_append_time: int
) -> list[FramedBatch]:
    """A leader's append: each batch gets the next offsets and ``leader_epoch`` (and, when
    ``log_append_time`` >= 0, LogAppendTime with that time) written into its header in place."""
    stamped = []
    for position, header in framed:
        patch_batch_header(
            data,
            position,
            base_offset=next_offset,
            partition_leader_epoch=leader_epoch,
            log_append_time=log_append_time if log_append_time >= 0 else None,
        )
        stamped.append(FramedBatch(position, decode_batch_header(data, position, verify_crc=False)))
        next_offset += header.last_offset_delta + 1
    return stamped


def check_follower_offsets(framed: list[FramedBatch], log_end_offset: int, log_name: str) -> None:
    """A follower's append keeps the leader's offsets: they must rise and start at or after the log
    end offset."""
    previous_last = -1
    for _, header in framed:
        if header.last_offset <= previous_last:
            raise UnexpectedAppendOffset(
                f"offsets out of order in append to {log_name}: {header.last_offset} after {previous_last}"
            )
        previous_last = header.last_offset
    first = framed[0].header.base_offset
    if first < log_end_offset:
        raise UnexpectedAppendOffset(
            f"first offset {first} of append to {log_name} is below the log end offset {log_end_offset}"
        )


def max_timestamp_of(framed: list[FramedBatch]) -> tuple[int, int]:
    """(largest max timestamp, last offset of the first batch holding it); (-1, -1) if none has one."""
    max_timestamp, offset_of_max_timestamp = NO_TIMESTAMP, -1
    for _, header in framed:
        if header.max_timestamp > max_timestamp:
            max_timestamp, offset_of_max_timestamp = header.max_timestamp, header.last_offset
    return max_timestamp, offset_of_max_timestamp
