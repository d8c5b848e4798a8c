"""The sparse offset index of one segment (Kafka's ``OffsetIndex``): 8-byte big-endian entries of
(offset relative to the segment's base offset: int32, byte position in the ``.log``: int32), each
entry meaning "the batch holding this offset starts at or after this position"."""

from __future__ import annotations

import struct
from bisect import bisect_left, bisect_right
from pathlib import Path

from ._errors import CorruptIndex
from ._index_file import IndexFile

__all__ = ["OffsetIndex", "OffsetPosition"]

_ENTRY = struct.Struct(">ii")
ENTRY_SIZE = _ENTRY.size
_INT32_MAX = 0x7FFFFFFF

OffsetPosition = tuple[int, int]
"""(absolute offset, byte position)."""


class OffsetIndex:
    def __init__(self, path: Path, base_offset: int, max_index_size: int) -> None:
        self.base_offset = base_offset
        self.max_entries = max_index_size // ENTRY_SIZE
        self.file = IndexFile(path, ENTRY_SIZE)
        self._relative: list[int] = []
        self._positions: list[int] = []

    @classmethod
    def create(cls, path: Path, base_offset: int, max_index_size: int) -> OffsetIndex:
        index = cls(path, base_offset, max_index_size)
        index.file.create()
        return index

    @classmethod
    def load(cls, path: Path, base_offset: int, max_index_size: int, log_size: int) -> OffsetIndex:
        """Read an existing index; FileNotFoundError if missing, CorruptIndex if it fails the checks."""
        index = cls(path, base_offset, max_index_size)
        data = index.file.read()
        if len(data) % ENTRY_SIZE:
            raise CorruptIndex(f"index file {path} has {len(data)} bytes, not a multiple of {ENTRY_SIZE}")
        for relative, position in _ENTRY.iter_unpack(data):
            index._relative.append(relative)
            index._positions.append(position)
        index.sanity_check(log_size)
        return index

    def sanity_check(self, log_size: int) -> None:
        """Kafka checks that the last offset is not below the base offset; this also checks that the
        entries increase and point inside the log, which a torn write can break."""
        previous_relative = -1
        previous_position = -1
        for relative, position in zip(self._relative, self._positions, strict=True):
            if relative <= previous_relative or relative < 0:
                raise CorruptIndex(f"index {self.file.path} has offsets that do not increase")
            if position < previous_position or position >= max(log_size, 1):
                raise CorruptIndex(f"index {self.file.path} has a position outside the log")
            previous_relative, previous_position = relative, position

    @property
    def entries(self) -> int:
        return len(self._relative)

    @property
    def is_full(self) -> bool:
        return self.entries >= self.max_entries

    @property
    def last_offset(self) -> int:
        return self.base_offset + self._relative[-1] if self._relative else self.base_offset

    def can_append_offset(self, offset: int) -> bool:
        return 0 <= offset - self.base_offset <= _INT32_MAX

    def entry(self, n: int) -> OffsetPosition:
        return self.base_offset + self._relative[n], self._positions[n]

    def append(self, offset: int, position: int) -> None:
        if self.is_full:
            raise ValueError(f"attempt to append to a full index (size {self.entries})")
        if self._relative and offset <= self.last_offset:
            raise ValueError(f"index offset {offset} is not above the last offset {self.last_offset}")
        if not self.can_append_offset(offset):
            raise ValueError(f"offset {offset} overflows the index of base offset {self.base_offset}")
        relative = offset - self.base_offset
        self.file.write_entry(self.entries, _ENTRY.pack(relative, position))
        self._relative.append(relative)
        self._positions.append(position)

    def lookup(self, target_offset: int) -> OffsetPosition:
        """The largest entry at or below ``target_offset``; (base offset, 0) if there is none."""
        slot = bisect_right(self._relative, target_offset - self.base_offset) - 1
        if slot < 0:
            return self.base_offset, 0
        return self.entry(slot)

    def upper_bound_for_position(self, position: int) -> OffsetPosition | None:
        """The first entry at or after byte ``position``, or None (Kafka's ``fetchUpperBoundOffset``
        searches the positions for the end of a fetch this way)."""
        slot = bisect_left(self._positions, position)
        return self.entry(slot) if slot < self.entries else None

    def truncate_to(self, offset: int) -> None:
        """Remove every entry at or above ``offset`` (Kafka's three cases)."""
        relative = offset - self.base_offset
        slot = bisect_right(self._relative, relative) - 1
        if slot < 0:
            keep = 0
        elif self._relative[slot] == relative:
            keep = slot
        else:
            keep = slot + 1
        self._truncate_to_entries(keep)

    def reset(self) -> None:
        self._truncate_to_entries(0)

    def _truncate_to_entries(self, keep: int) -> None:
        if keep < self.entries:
            del self._relative[keep:]
            del self._positions[keep:]
            self.file.truncate(keep)

    def flush(self) -> None:
        self.file.flush()

    def close(self) -> None:
        self.file.close()
