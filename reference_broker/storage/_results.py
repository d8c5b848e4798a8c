"""The values ``PartitionLog`` hands back: what an append did, what a read found (as a file region a
server can ``os.sendfile``, and as bytes), what a search by timestamp found, and a description of
each segment."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ._files import pread_exact
from ._txn_index import AbortedTxn

__all__ = ["AppendInfo", "FileRegion", "ReadResult", "SegmentInfo", "TimestampAndOffset"]


@dataclass(frozen=True, slots=True)
class AppendInfo:
    """What an append wrote (Kafka's ``LogAppendInfo``). ``log_append_time`` is -1 unless the log
    stamped the batches. For a producer retry that matches a cached batch (``duplicate``), nothing was
    written and the offsets are those of the original batch, whose timestamp Kafka reports as the log
    append time. An empty input gives first and last offset -1."""

    first_offset: int
    last_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int
    log_append_time: int
    log_start_offset: int
    batch_count: int
    record_count: int
    size_in_bytes: int
    duplicate: bool = False


@dataclass(frozen=True, slots=True)
class FileRegion:
    """``size`` bytes at ``position`` of a segment file. ``fd`` belongs to the log: it stays valid
    until the segment's files are removed (``file.delete.delay.ms`` after the segment is deleted) or
    the log is closed, so a server may ``os.sendfile(socket, fd, position, size)`` from it."""

    fd: int
    path: Path
    position: int
    size: int

    def read(self) -> bytes:
        """The bytes (fewer if the file has been truncated meanwhile)."""
        return pread_exact(self.fd, self.size, self.position)


@dataclass(frozen=True, slots=True)
class ReadResult:
    """A read's records: ``region`` is None when there is nothing to return. As in Kafka the bytes
    start at the batch holding ``start_offset`` (so they may begin before it) and, unless whole
    batches were asked for, may end inside a batch; ``first_entry_incomplete`` says the first batch
    itself was cut by ``max_bytes`` (only without min-one-batch). The offsets are those of the log
    when it was read. ``aborted_transactions`` is None unless the read asked for them."""

    start_offset: int
    region: FileRegion | None
    first_entry_incomplete: bool
    high_watermark: int
    log_start_offset: int
    log_end_offset: int
    aborted_transactions: list[AbortedTxn] | None = None

    @property
    def size(self) -> int:
        return 0 if self.region is None else self.region.size

    def read_bytes(self) -> bytes:
        return b"" if self.region is None else self.region.read()


@dataclass(frozen=True, slots=True)
class SegmentInfo:
    base_offset: int
    size_in_bytes: int
    path: Path
    max_timestamp: int
    """The largest record timestamp in the segment (-1 if none)."""


@dataclass(frozen=True, slots=True)
class TimestampAndOffset:
    """A ListOffsets answer: the record's timestamp and offset, and the leader epoch of its batch
    (None where the batch has none)."""

    timestamp: int
    offset: int
    leader_epoch: int | None
