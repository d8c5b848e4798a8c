"""The sparse time index of one segment (Kafka's ``TimeIndex``): 12-byte big-endian entries of
(timestamp: int64, offset relative to the segment's base offset: int32). An entry (T, O) means the
largest timestamp among the batches up to and including the one ending at offset O is T, so any
record with a timestamp above T comes after O. Timestamps strictly increase from entry to entry."""

from __future__ import annotations

import struct
from bisect import bisect_right
from pathlib import Path

from ._errors import CorruptIndex
from ._index_file import IndexFile

__all__ = ["NO_TIMESTAMP", "TimeIndex", "TimestampOffset"]

_ENTRY = struct.Struct(">qi")
ENTRY_SIZE = _ENTRY.size
NO_TIMESTAMP = -1

TimestampOffset = tuple[int, int]
"""(timestamp, absolute offset)."""


class TimeIndex:
    def __init__(self, path: Path, base_offset: int, max_index_size: int) -> None:
        self.base_offset = base_offset
        self.max_entries = max_index_size // ENTRY_SIZE
        self.file = IndexFile(path, ENTRY_SIZE)
        self._timestamps: list[int] = []
        self._relative: list[int] = []

    @classmethod
    def create(cls, path: Path, base_offset: int, max_index_size: int) -> TimeIndex:
        index = cls(path, base_offset, max_index_size)
        index.file.create()
        return index

    @classmethod
    def load(cls, path: Path, base_offset: int, max_index_size: int) -> TimeIndex:
        """Read an existing index; FileNotFoundError if missing, CorruptIndex if it fails the checks."""
        index = cls(path, base_offset, max_index_size)
        data = index.file.read()
        if len(data) % ENTRY_SIZE:
            raise CorruptIndex(f"time index {path} has {len(data)} bytes, not a multiple of {ENTRY_SIZE}")
        for timestamp, relative in _ENTRY.iter_unpack(data):
            index._timestamps.append(timestamp)
            index._relative.append(relative)
        index.sanity_check()
        return index

    def sanity_check(self) -> None:
        """Kafka's checks (last timestamp not below the first, last offset not below the base) and,
        more strictly, that both columns never go down."""
        for i in range(1, self.entries):
            if self._timestamps[i] <= self._timestamps[i - 1] or self._relative[i] < self._relative[i - 1]:
                raise CorruptIndex(f"time index {self.file.path} has entries that go backwards")
        if self._relative and self._relative[0] < 0:
            raise CorruptIndex(f"time index {self.file.path} has an offset below its base offset")

    @property
    def entries(self) -> int:
        return len(self._timestamps)

    @property
    def is_full(self) -> bool:
        """One slot stays free for the entry written when the segment is rolled or closed."""
        return self.entries >= self.max_entries - 1

    @property
    def last_entry(self) -> TimestampOffset:
        if not self._timestamps:
            return NO_TIMESTAMP, self.base_offset
        return self._timestamps[-1], self.base_offset + self._relative[-1]

    def entry(self, n: int) -> TimestampOffset:
        return self._timestamps[n], self.base_offset + self._relative[n]

    def maybe_append(self, timestamp: int, offset: int, skip_full_check: bool = False) -> None:
        """Append (timestamp, offset) if the timestamp is above the last entry's; an offset or
        timestamp below the last entry's is a programming error, as in Kafka."""
        if not skip_full_check and self.is_full:
            raise ValueError(f"attempt to append to a full time index (size {self.entries})")
        last_timestamp, last_offset = self.last_entry
        if self._timestamps and offset < last_offset:
            raise ValueError(f"time index offset {offset} is below the last offset {last_offset}")
        if self._timestamps and timestamp < last_timestamp:
            raise ValueError(f"time index timestamp {timestamp} is below the last one {last_timestamp}")
        if timestamp > last_timestamp:
            relative = offset - self.base_offset
            self.file.write_entry(self.entries, _ENTRY.pack(timestamp, relative))
            self._timestamps.append(timestamp)
            self._relative.append(relative)

    def lookup(self, target_timestamp: int) -> TimestampOffset:
        """The entry with the largest timestamp at or below the target; (NO_TIMESTAMP, base offset)
        if there is none."""
        slot = bisect_right(self._timestamps, target_timestamp) - 1
        if slot < 0:
            return NO_TIMESTAMP, self.base_offset
        return self.entry(slot)

    def truncate_to(self, offset: int) -> None:
        """Remove every entry whose offset is at or above ``offset``."""
        relative = offset - self.base_offset
        slot = bisect_right(self._relative, relative) - 1
        if slot < 0:
            keep = 0
        elif self._relative[slot] == relative:
            keep = slot
        else:
            keep = slot + 1
        if keep < self.entries:
            del self._timestamps[keep:]
            del self._relative[keep:]
            self.file.truncate(keep)

    def reset(self) -> None:
        self.truncate_to(self.base_offset)

    def flush(self) -> None:
        self.file.flush()

    def close(self) -> None:
        self.file.close()
