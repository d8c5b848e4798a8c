"""One log segment (Kafka's ``LogSegment``): a ``.log`` file holding batches exactly as on the wire,
its sparse ``.index`` and ``.timeindex``, its ``.txnindex`` of aborted transactions, and the in-memory
state Kafka keeps beside them (the largest timestamp so far and its offset, the timestamp that
time-based rolling counts from, the bytes appended since the last index entry). Batches are read only
through ``kconform.codecs.records``."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from kconform.codecs import DecodeError
from kconform.codecs.records import BatchHeader, iter_batch_headers

from ._config import LogConfig
from ._errors import CorruptIndex
from ._files import (
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    file_name,
    pread_exact,
)
from ._offset_index import OffsetIndex
from ._time_index import NO_TIMESTAMP, TimeIndex, TimestampOffset
from ._txn_index import AbortedTxn, CompletedTxn, TransactionIndex

__all__ = ["LogSegment", "RecoveredBatch", "SegmentSlice"]

_SCAN_CHUNK = 64 * 1024


@dataclass(frozen=True, slots=True)
class SegmentSlice:
    """Bytes ``[position, position + size)`` of a segment's ``.log``; ``first_entry_incomplete`` when
    ``size`` cuts the first batch (only possible without min-one-batch)."""

    position: int
    size: int
    first_entry_incomplete: bool


RecoveredBatch = Callable[[int, BatchHeader], None]
"""Told the position and header of each whole batch recovery keeps, in log order."""


class LogSegment:
    def __init__(
        self,
        directory: Path,
        base_offset: int,
        fd: int,
        size: int,
        offset_index: OffsetIndex,
        time_index: TimeIndex,
        txn_index: TransactionIndex,
        config: LogConfig,
        roll_jitter_ms: int,
        created_ms: int,
    ) -> None:
        self.directory = directory
        self.base_offset = base_offset
        self.log_path = directory / file_name(base_offset, LOG_SUFFIX)
        self.offset_index = offset_index
        self.time_index = time_index
        self.txn_index = txn_index
        self.roll_jitter_ms = roll_jitter_ms
        self.index_problem: str | None = None
        self._fd = fd
        self._size = size
        self._dirty = False
        self._index_interval_bytes = config.index_interval_bytes
        self._max_index_size = config.segment_index_bytes
        self._created_ms = created_ms
        self._rolling_based_timestamp: int | None = None
        self._max_timestamp_and_offset: TimestampOffset | None = None
        self._bytes_since_last_index_entry = 0

    # --- opening and closing -------------------------------------------------------------------

    @classmethod
    def create(
        cls, directory: Path, base_offset: int, config: LogConfig, *, now_ms: int, roll_jitter_ms: int
    ) -> LogSegment:
        """A new empty segment; files of the same name are replaced, as Kafka does on roll."""
        log_path = directory / file_name(base_offset, LOG_SUFFIX)
        fd = os.open(log_path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        offset_index = OffsetIndex.create(
            directory / file_name(base_offset, INDEX_SUFFIX), base_offset, config.segment_index_bytes
        )
        time_index = TimeIndex.create(
            directory / file_name(base_offset, TIME_INDEX_SUFFIX), base_offset, config.segment_index_bytes
        )
        txn_path = directory / file_name(base_offset, TXN_INDEX_SUFFIX)
        txn_path.unlink(missing_ok=True)  # a leftover of an earlier segment at this offset
        txn_index = TransactionIndex(txn_path, base_offset)
        return cls(
            directory, base_offset, fd, 0, offset_index, time_index, txn_index, config, roll_jitter_ms, now_ms
        )

    @classmethod
    def open(
        cls, directory: Path, base_offset: int, config: LogConfig, *, now_ms: int, roll_jitter_ms: int
    ) -> LogSegment:
        """An existing segment. If an index file is missing or fails its checks, the segment gets
        empty indexes and says why in ``index_problem``; the loader then recovers it. A missing
        ``.txnindex`` only means no transaction was aborted in the segment."""
        log_path = directory / file_name(base_offset, LOG_SUFFIX)
        fd = os.open(log_path, os.O_RDWR)
        size = os.fstat(fd).st_size
        index_path = directory / file_name(base_offset, INDEX_SUFFIX)
        time_index_path = directory / file_name(base_offset, TIME_INDEX_SUFFIX)
        txn_index_path = directory / file_name(base_offset, TXN_INDEX_SUFFIX)
        problem = None
        try:
            offset_index = OffsetIndex.load(index_path, base_offset, config.segment_index_bytes, size)
            time_index = TimeIndex.load(time_index_path, base_offset, config.segment_index_bytes)
            txn_index = TransactionIndex.open(txn_index_path, base_offset)
        except FileNotFoundError as exc:
            problem = f"missing index file {Path(exc.filename).name}"
        except CorruptIndex as exc:
            problem = str(exc)
        if problem is not None:
            offset_index = OffsetIndex.create(index_path, base_offset, config.segment_index_bytes)
            time_index = TimeIndex.create(time_index_path, base_offset, config.segment_index_bytes)
            txn_index = TransactionIndex(txn_index_path, base_offset)  # recovery rewrites the file
        segment = cls(
            directory,
            base_offset,
            fd,
            size,
            offset_index,
            time_index,
            txn_index,
            config,
            roll_jitter_ms,
            now_ms,
        )
        segment.index_problem = problem
        return segment

    def on_become_inactive(self) -> None:
        """Called on roll: record the largest timestamp in the time index, stop holding index files."""
        self.time_index.maybe_append(*self.max_timestamp_and_offset_so_far, skip_full_check=True)
        self.offset_index.close()
        self.time_index.close()
        self.txn_index.close()

    def flush(self) -> None:
        if self._dirty:
            os.fsync(self._fd)
            self._dirty = False
        self.offset_index.flush()
        self.time_index.flush()
        self.txn_index.flush()

    def close(self) -> None:
        if self._fd < 0:
            return
        if self._max_timestamp_and_offset is not None:
            self.time_index.maybe_append(*self._max_timestamp_and_offset, skip_full_check=True)
        self.flush()
        self.offset_index.close()
        self.time_index.close()
        self.txn_index.close()
        os.close(self._fd)
        self._fd = -1

    def close_handles(self) -> None:
        """Close the descriptors without writing the final time index entry (a crash, a failed disk)."""
        self.offset_index.close()
        self.time_index.close()
        self.txn_index.close()
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def mark_deleted(self) -> None:
        """Rename the files to ``*.deleted``; reads through open descriptors keep working."""
        self.offset_index.close()
        self.time_index.close()
        deleted_log = self.log_path.with_name(self.log_path.name + DELETED_SUFFIX)
        if self.log_path.exists():
            os.replace(self.log_path, deleted_log)
        self.log_path = deleted_log
        for index in (self.offset_index, self.time_index):
            index.file.rename(index.file.path.with_name(index.file.path.name + DELETED_SUFFIX))
        self.txn_index.rename(
            self.txn_index.file.path.with_name(self.txn_index.file.path.name + DELETED_SUFFIX)
        )

    def delete_files(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        self.offset_index.file.delete()
        self.time_index.file.delete()
        self.txn_index.delete()
        self.log_path.unlink(missing_ok=True)

    # --- state ---------------------------------------------------------------------------------

    @property
    def size(self) -> int:
        return self._size

    @property
    def fd(self) -> int:
        return self._fd

    @property
    def max_timestamp_and_offset_so_far(self) -> TimestampOffset:
        if self._max_timestamp_and_offset is None:
            self._max_timestamp_and_offset = self.time_index.last_entry
        return self._max_timestamp_and_offset

    @property
    def max_timestamp_so_far(self) -> int:
        return self.max_timestamp_and_offset_so_far[0]

    def largest_timestamp(self) -> int:
        """The largest record timestamp, or the ``.log`` file's modification time if none has one."""
        timestamp = self.max_timestamp_so_far
        if timestamp >= 0:
            return timestamp
        return os.stat(self.log_path).st_mtime_ns // 1_000_000

    def can_convert_to_relative_offset(self, offset: int) -> bool:
        return self.offset_index.can_append_offset(offset)

    # --- reading -------------------------------------------------------------------------------

    def read_bytes(self, position: int, size: int) -> bytes:
        return pread_exact(self._fd, min(size, self._size - position), position)

    def batches_from(
        self, position: int = 0, *, verify_crc: bool = False
    ) -> Iterator[tuple[int, BatchHeader]]:
        """(position, header) of every whole batch from ``position``; stops before a partial batch
        at the end. A corrupt size, magic or (with ``verify_crc``) CRC raises ``DecodeError``."""
        end = self._size
        chunk = _SCAN_CHUNK
        while position < end:
            want = min(chunk, end - position)
            data = pread_exact(self._fd, want, position)
            consumed = 0
            for header in iter_batch_headers(data, verify_crc=verify_crc):
                yield position + consumed, header
                consumed += header.size_in_bytes
            if consumed:
                position += consumed
                chunk = _SCAN_CHUNK
            elif len(data) < want or want == end - position:
                return
            else:
                chunk *= 2  # the batch here is bigger than what was read

    def translate_offset(self, offset: int, starting_position: int = 0) -> tuple[int, BatchHeader] | None:
        """Position and header of the first batch whose last offset is at or above ``offset``."""
        _, position = self.offset_index.lookup(offset)
        for batch_position, header in self.batches_from(max(position, starting_position)):
            if header.last_offset >= offset:
                return batch_position, header
        return None

    def read(
        self, start_offset: int, max_size: int, max_position: int, min_one_batch: bool
    ) -> SegmentSlice | None:
        """Kafka's ``LogSegment.read``: from the batch holding ``start_offset``, at most ``max_size``
        bytes (or the whole first batch with ``min_one_batch``), never past ``max_position``. None
        if no batch here reaches ``start_offset``. The slice may end inside a batch, as Kafka's does."""
        if max_size < 0:
            raise ValueError(f"invalid max size {max_size}")
        found = self.translate_offset(start_offset)
        if found is None:
            return None
        position, header = found
        first_size = header.size_in_bytes
        adjusted = max(max_size, first_size) if min_one_batch else max_size
        if adjusted == 0:
            return SegmentSlice(position, 0, False)
        fetch_size = max(0, min(max_position - position, adjusted, self._size - position))
        return SegmentSlice(position, fetch_size, adjusted < first_size)

    def read_next_offset(self) -> int:
        """The offset after the last batch (the base offset if the segment is empty)."""
        _, position = self.offset_index.lookup(self.offset_index.last_offset)
        last = None
        for _, header in self.batches_from(position):
            last = header
        return self.base_offset if last is None else last.next_offset

    def tail_is_whole(self) -> bool:
        """Whether the batches after the last index entry run exactly to the end of the file: a
        cheap check that a log said to be cleanly shut down was not torn or appended to since."""
        _, position = self.offset_index.lookup(self.offset_index.last_offset)
        end = position
        try:
            for batch_position, header in self.batches_from(position):
                end = batch_position + header.size_in_bytes
        except Exception:  # any unreadable header means the tail needs recovery
            return False
        return end == self._size

    # --- rolling -------------------------------------------------------------------------------

    def time_waited_for_roll(self, now_ms: int, message_timestamp: int) -> int:
        """How long the segment has waited to roll: measured in record time from the first batch's
        max timestamp when it has one, else in clock time from the segment's creation."""
        if self._rolling_based_timestamp is None:
            for _, header in self.batches_from(0):
                self._rolling_based_timestamp = header.max_timestamp
                break
        first = self._rolling_based_timestamp if self._rolling_based_timestamp is not None else -1
        if first >= 0:
            return message_timestamp - first
        return now_ms - self._created_ms

    def should_roll(
        self,
        config: LogConfig,
        *,
        max_timestamp_in_messages: int,
        max_offset_in_messages: int,
        messages_size: int,
        now_ms: int,
    ) -> bool:
        reached_roll_ms = (
            self.time_waited_for_roll(now_ms, max_timestamp_in_messages)
            > config.segment_ms - self.roll_jitter_ms
        )
        return (
            self._size > config.segment_bytes - messages_size
            or (self._size > 0 and reached_roll_ms)
            or self.offset_index.is_full
            or self.time_index.is_full
            or not self.can_convert_to_relative_offset(max_offset_in_messages)
        )

    # --- writing -------------------------------------------------------------------------------

    def append(
        self, largest_offset: int, largest_timestamp: int, shallow_offset_of_max_timestamp: int, data
    ) -> None:
        """Write whole batches at the end and add an index entry if ``index.interval.bytes`` have
        been written since the last one (Kafka's ``LogSegment.append``)."""
        if not data:
            return
        physical_position = self._size
        if physical_position == 0:
            self._rolling_based_timestamp = largest_timestamp
        if not self.can_convert_to_relative_offset(largest_offset):
            raise ValueError(f"offset {largest_offset} overflows segment {self.base_offset}")
        view = memoryview(data)
        position = physical_position
        previous_max = self._max_timestamp_and_offset
        indexed = False
        try:
            while view:
                written = os.pwrite(self._fd, view, position)
                view = view[written:]
                position += written
            if largest_timestamp > self.max_timestamp_so_far:
                self._max_timestamp_and_offset = (largest_timestamp, shallow_offset_of_max_timestamp)
            if self._bytes_since_last_index_entry > self._index_interval_bytes:
                self.offset_index.append(largest_offset, physical_position)
                indexed = True
                self.time_index.maybe_append(*self.max_timestamp_and_offset_so_far)
        except OSError:
            # A write that fails midway (ENOSPC after a short write) must leave no torn batch for readers
            # or the next append: the file, its size and the indexes go back to where this append began
            # (an index writes its file before it keeps an entry, so a failed one kept nothing).
            self._cut_back(physical_position)
            self._max_timestamp_and_offset = previous_max
            if indexed:
                self.offset_index.truncate_to(largest_offset)
            raise
        self._size = position
        self._dirty = True
        if indexed:
            self._bytes_since_last_index_entry = 0
        self._bytes_since_last_index_entry += len(data)

    def _cut_back(self, size: int) -> None:
        try:
            os.ftruncate(self._fd, size)
        except OSError:
            pass  # the file keeps a torn tail past ``_size``: reads stop at ``_size``, recovery cuts it

    def _truncate_file(self, size: int) -> int:
        truncated = self._size - size
        if truncated > 0:
            os.ftruncate(self._fd, size)
            self._size = size
            self._dirty = True
        return max(truncated, 0)

    def recover(self, on_batch: RecoveredBatch | None = None) -> int:
        """Rebuild the indexes from the ``.log``, checking every batch (CRC, size, magic 2, offsets
        rising and within the index's range), and cut the file at the first bad or torn batch.
        ``on_batch`` sees each good batch (the loader feeds the leader epoch cache and the producer
        state from it; a ``DecodeError`` it raises ends recovery there, as a bad batch does).
        Returns the bytes cut."""
        self.offset_index.reset()
        self.time_index.reset()
        self.txn_index.reset()
        self._max_timestamp_and_offset = self.time_index.last_entry
        valid_bytes = 0
        last_index_entry = 0
        next_offset = self.base_offset
        try:
            for _, header in self.batches_from(0, verify_crc=True):
                if (
                    header.magic != 2
                    or header.base_offset < next_offset
                    or not self.can_convert_to_relative_offset(header.last_offset)
                ):
                    break
                if header.max_timestamp > self.max_timestamp_so_far:
                    self._max_timestamp_and_offset = (header.max_timestamp, header.last_offset)
                if valid_bytes - last_index_entry > self._index_interval_bytes and not (
                    self.offset_index.is_full or self.time_index.is_full  # segment.index.bytes shrank
                ):
                    self.offset_index.append(header.last_offset, valid_bytes)
                    self.time_index.maybe_append(*self.max_timestamp_and_offset_so_far)
                    last_index_entry = valid_bytes
                position = valid_bytes
                valid_bytes += header.size_in_bytes
                next_offset = header.next_offset
                if on_batch is not None:
                    on_batch(position, header)
        except DecodeError:
            pass
        truncated = self._truncate_file(valid_bytes)
        self.time_index.maybe_append(*self.max_timestamp_and_offset_so_far, skip_full_check=True)
        self.index_problem = None
        return truncated

    def update_txn_index(self, completed: CompletedTxn, last_stable_offset: int) -> None:
        """Record a transaction whose marker is in this segment, if it was aborted."""
        if completed.is_aborted:
            self.txn_index.append(
                AbortedTxn(
                    completed.producer_id, completed.first_offset, completed.last_offset, last_stable_offset
                )
            )

    def collect_aborted_txns(
        self, fetch_offset: int, upper_bound_offset: int
    ) -> tuple[list[AbortedTxn], bool]:
        return self.txn_index.collect(fetch_offset, upper_bound_offset)

    def fetch_upper_bound_offset(self, start_position: int, fetch_size: int) -> int | None:
        """An offset at or past the end of a read of ``fetch_size`` bytes from ``start_position``,
        from the sparse offset index; None when the index has no entry that far."""
        found = self.offset_index.upper_bound_for_position(start_position + fetch_size)
        return None if found is None else found[0]

    def truncate_to(self, offset: int, *, now_ms: int) -> int:
        """Drop every batch that ends at or after ``offset`` and the index entries pointing there.
        Returns the bytes cut."""
        found = self.translate_offset(offset)
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        self.txn_index.truncate_to(offset)
        truncated = 0 if found is None else self._truncate_file(found[0])
        if self._size == 0:
            self._created_ms = now_ms
            self._rolling_based_timestamp = None
        self._bytes_since_last_index_entry = 0
        if self.max_timestamp_so_far >= 0:
            self._max_timestamp_and_offset = self._read_largest_timestamp()
        return truncated

    def _read_largest_timestamp(self) -> TimestampOffset:
        last_timestamp, last_offset = self.time_index.last_entry
        _, position = self.offset_index.lookup(last_offset)
        best: TimestampOffset = (NO_TIMESTAMP, -1)
        for _, header in self.batches_from(position):
            if header.max_timestamp > best[0]:
                best = (header.max_timestamp, header.last_offset)
        return best if best[0] > last_timestamp else (last_timestamp, last_offset)

    def __repr__(self) -> str:
        return f"LogSegment(base_offset={self.base_offset}, size={self._size})"
