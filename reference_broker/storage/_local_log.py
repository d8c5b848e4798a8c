"""``LocalLog``: the segments of one partition directory and their files (Kafka's ``LocalLog``). It
keeps the segment list, the log end offset and the recovery point, and does what only touches
segments: appending bytes to the active segment, rolling, flushing up to the recovery point, reading
a byte range with the aborted transactions it overlaps, searching by timestamp, truncating, and
removing segments (renamed to ``*.deleted`` at once, their files removed ``file.delete.delay.ms``
later). It knows nothing of producers, leader epochs, the log start offset or the high watermark:
``PartitionLog`` keeps those and drives this."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ._checkpoints import RECOVERY_POINT_CHECKPOINT, write_offset_checkpoint
from ._config import LogConfig
from ._errors import StorageError
from ._files import fsync_dir
from ._lookups import (
    floor_index,
    max_timestamp_offset,
    offset_position,
    read_from,
    search_offset_by_timestamp,
    whole_batches_size,
)
from ._results import FileRegion, TimestampAndOffset
from ._segment import LogSegment
from ._txn_index import AbortedTxn

__all__ = ["LocalLog", "LocalRead", "roll_jitter"]


@dataclass(frozen=True, slots=True)
class LocalRead:
    """What ``LocalLog.read`` found: the bytes as a file region (None if nothing), whether the first
    batch was cut short, and the aborted transactions overlapping them (None unless asked for)."""

    region: FileRegion | None
    first_entry_incomplete: bool
    aborted_transactions: list[AbortedTxn] | None


def roll_jitter(rng: random.Random, config: LogConfig) -> int:
    """Kafka's ``randomSegmentJitter``: up to min(segment.jitter.ms, segment.ms), drawn per segment."""
    bound = min(config.segment_jitter_ms, config.segment_ms)
    return rng.randrange(bound) if bound > 0 else 0


class LocalLog:
    def __init__(
        self,
        directory: Path,
        topic_partition: tuple[str, int],
        config: LogConfig,
        clock: Callable[[], int],
        rng: random.Random,
        segments: list[LogSegment],
        *,
        log_end_offset: int,
        recovery_point: int,
    ) -> None:
        self.directory = directory
        self.topic, self.partition = topic_partition
        self.config = config
        """The topic configs; a new value applies from the next decision (existing segments keep their
        index sizes)."""
        self._clock = clock
        self._rng = rng
        self._segments = segments
        self._bases = [s.base_offset for s in segments]
        self._log_end_offset = log_end_offset
        self._recovery_point = recovery_point
        self._last_flush_ms = clock()
        self._pending_deletes: list[tuple[int, LogSegment]] = []

    # --- state ---------------------------------------------------------------------------------

    @property
    def name(self) -> str:
        """``<topic>-<partition>``, as messages name the log."""
        return f"{self.topic}-{self.partition}"

    @property
    def segments(self) -> Sequence[LogSegment]:
        """Oldest first, never empty; the last one is the active segment."""
        return self._segments

    @property
    def active(self) -> LogSegment:
        return self._segments[-1]

    @property
    def log_end_offset(self) -> int:
        return self._log_end_offset

    @property
    def recovery_point(self) -> int:
        return self._recovery_point

    @property
    def size_in_bytes(self) -> int:
        return sum(segment.size for segment in self._segments)

    def segment_index(self, offset: int) -> int:
        """Index of the segment holding ``offset`` (the last with a base offset at or below it), -1
        if it lies below every segment."""
        return floor_index(self._bases, offset)

    # --- appending and rolling -----------------------------------------------------------------

    def should_roll(self, messages_size: int, max_timestamp: int, max_offset: int, now_ms: int) -> bool:
        return self.active.should_roll(
            self.config,
            max_timestamp_in_messages=max_timestamp,
            max_offset_in_messages=max_offset,
            messages_size=messages_size,
            now_ms=now_ms,
        )

    def append(
        self, data: bytearray, last_offset: int, max_timestamp: int, offset_of_max_timestamp: int
    ) -> None:
        """Whole batches, already checked and with their offsets, at the end of the active segment."""
        self.active.append(last_offset, max_timestamp, offset_of_max_timestamp, data)
        self._log_end_offset = last_offset + 1

    def roll(self, new_offset: int) -> LogSegment:
        """A new active segment at ``new_offset``; the old one gets its final time index entry. An
        empty active segment already at ``new_offset`` is kept and returned as it is (Kafka re-creates
        it; nothing would differ)."""
        active = self.active
        if new_offset == active.base_offset:
            if active.size == 0:
                return active
            raise StorageError(f"segment {new_offset} of {self.name} already exists")
        if new_offset < active.base_offset:
            raise StorageError(
                f"cannot roll {self.name} to {new_offset}, below the active segment {active.base_offset}"
            )
        active.on_become_inactive()
        segment = self._new_segment(new_offset)
        self._segments.append(segment)
        self._bases.append(new_offset)
        return segment

    def _new_segment(self, base_offset: int) -> LogSegment:
        return LogSegment.create(
            self.directory,
            base_offset,
            self.config,
            now_ms=self._clock(),
            roll_jitter_ms=roll_jitter(self._rng, self.config),
        )

    # --- flushing ------------------------------------------------------------------------------

    def flush(self) -> None:
        """fsync every segment written since the last flush (the active one always) and move the
        recovery point, and its checkpoint, to the log end offset."""
        self.active.flush()
        self.flush_up_to(self._log_end_offset, write_checkpoint=True)

    def flush_due(self, now_ms: int) -> bool:
        """Whether ``flush.messages`` unflushed records or ``flush.ms`` since the last flush have passed."""
        unflushed = self._log_end_offset - self._recovery_point
        return unflushed >= self.config.flush_messages or (
            unflushed > 0 and now_ms - self._last_flush_ms >= self.config.flush_ms
        )

    def flush_up_to(self, offset: int, *, write_checkpoint: bool) -> None:
        """fsync the segments holding [recovery point, offset) and move the recovery point there.
        The checkpoint file is written by explicit flushes and ``PartitionLog.checkpoint``; after a
        roll only the memory moves (Kafka checkpoints recovery points on a timer), so a crash
        recovers a little more than it strictly must."""
        if offset <= self._recovery_point:
            return
        first = max(floor_index(self._bases, self._recovery_point), 0)
        new_segments = False
        for segment in self._segments[first:]:
            if segment.base_offset >= offset and segment is not self.active:
                break
            segment.flush()
            new_segments = new_segments or segment.base_offset >= self._recovery_point
        if new_segments:
            fsync_dir(self.directory)
        self._recovery_point = offset
        self._last_flush_ms = self._clock()
        if write_checkpoint:
            self.write_offset_checkpoint(RECOVERY_POINT_CHECKPOINT, self._recovery_point)

    def raise_recovery_point(self, offset: int) -> None:
        """Nothing below the log start offset needs recovering: it can only be deleted."""
        self._recovery_point = max(self._recovery_point, offset)

    def write_offset_checkpoint(self, file_name: str, offset: int) -> None:
        write_offset_checkpoint(self.directory / file_name, self.topic, self.partition, offset)

    # --- reading -------------------------------------------------------------------------------

    def read(
        self,
        start_offset: int,
        max_bytes: int,
        *,
        limit: int,
        min_one_batch: bool,
        whole_batches: bool,
        include_aborted_txns: bool,
    ) -> LocalRead:
        """The bytes from the batch holding ``start_offset`` (which a segment holds), nothing from the
        batch holding ``limit`` on; see ``PartitionLog.read``."""
        found = None
        # Kafka answers a read at or past the limit with no aborted transactions, and one that finds
        # no batch at all (its data deleted meanwhile) without the list
        aborted: list[AbortedTxn] | None = [] if include_aborted_txns and start_offset >= limit else None
        if start_offset < limit:
            max_position = offset_position(self._segments, self._bases, limit, self._log_end_offset)
            found = read_from(
                self._segments, self._bases, start_offset, max_bytes, max_position, min_one_batch
            )
        if found is None:
            return LocalRead(None, False, aborted)
        segment, piece = found
        if include_aborted_txns:
            aborted = self._aborted_in_read(start_offset, segment, piece.position, piece.size)
        size = piece.size
        if whole_batches and size:
            size = whole_batches_size(segment, piece.position, size)
        region = FileRegion(segment.fd, segment.log_path, piece.position, size) if size else None
        return LocalRead(region, piece.first_entry_incomplete, aborted)

    def _aborted_in_read(
        self, start_offset: int, segment: LogSegment, position: int, size: int
    ) -> list[AbortedTxn]:
        upper = segment.fetch_upper_bound_offset(position, size)
        index = self._bases.index(segment.base_offset)
        if upper is None:
            upper = self._bases[index + 1] if index + 1 < len(self._bases) else self._log_end_offset
        return self.collect_aborted(start_offset, upper, index)

    def collect_aborted(
        self, start_offset: int, upper_bound_offset: int, first_segment: int
    ) -> list[AbortedTxn]:
        """The aborted transactions with records in ``[start_offset, upper_bound_offset)``, from the
        segment at index ``first_segment`` on."""
        found: list[AbortedTxn] = []
        for segment in self._segments[first_segment:]:
            entries, complete = segment.collect_aborted_txns(start_offset, upper_bound_offset)
            found.extend(entries)
            if complete:
                break
        return found

    def offset_for_timestamp(self, timestamp: int, log_start_offset: int) -> TimestampAndOffset | None:
        return search_offset_by_timestamp(self._segments, timestamp, log_start_offset)

    def latest_timestamp_offset(self) -> TimestampAndOffset | None:
        return max_timestamp_offset(self._segments)

    # --- truncating and removing ---------------------------------------------------------------

    def truncate_to(self, offset: int) -> list[LogSegment]:
        """Drop every batch that ends at or after ``offset`` (which the first segment holds); returns
        the segments removed whole."""
        doomed = [s for s in self._segments if s.base_offset > offset]
        self.remove_segments(doomed)
        self.active.truncate_to(offset, now_ms=self._clock())
        self._log_end_offset = offset
        self._recovery_point = min(self._recovery_point, offset)
        return doomed

    def start_at(self, offset: int) -> list[LogSegment]:
        """Remove every segment and continue with an empty one at ``offset``; returns those removed."""
        doomed = list(self._segments)
        self.remove_segments(doomed)
        self._segments = [self._new_segment(offset)]
        self._bases = [offset]
        self._log_end_offset = offset
        self._recovery_point = min(self._recovery_point, offset)
        return doomed

    def remove_segments(self, doomed: Sequence[LogSegment]) -> None:
        """Take segments out of the log, rename their files to ``*.deleted`` and remove them after
        ``file.delete.delay.ms`` (their descriptors stay open until then for in-flight reads)."""
        if not doomed:
            return
        ids = {id(s) for s in doomed}
        self._segments = [s for s in self._segments if id(s) not in ids]
        self._bases = [s.base_offset for s in self._segments]
        due = self._clock() + self.config.file_delete_delay_ms
        for segment in doomed:
            segment.mark_deleted()
            self._pending_deletes.append((due, segment))
        self.delete_expired_files()

    def delete_expired_files(self) -> None:
        """Remove the files of removed segments whose ``file.delete.delay.ms`` has passed."""
        now = self._clock()
        keep = []
        for due, segment in self._pending_deletes:
            if due <= now:
                segment.delete_files()
            else:
                keep.append((due, segment))
        self._pending_deletes = keep

    # --- closing -------------------------------------------------------------------------------

    def close(self) -> None:
        """Close every segment (writing its final time index entry) and remove pending deletions."""
        for segment in self._segments:
            segment.close()
        for _, segment in self._pending_deletes:
            segment.delete_files()
        self._pending_deletes = []

    def close_handles(self) -> None:
        """Close every file without writing anything (a failed disk, a simulated crash)."""
        for segment in self._segments:
            segment.close_handles()
        for _, segment in self._pending_deletes:
            segment.close_handles()
