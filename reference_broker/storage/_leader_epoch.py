"""The leader epoch cache (Kafka's ``LeaderEpochFileCache``): for each leader epoch, the first offset
written in it, kept in ``leader-epoch-checkpoint``. OffsetForLeaderEpoch answers from
``end_offset_for``; replicas truncate with ``truncate_from_end`` and ``truncate_from_start``.

Kafka flushes truncations to the checkpoint in the background; here every change is written at once."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from pathlib import Path

from ._checkpoints import read_leader_epochs, write_leader_epochs

__all__ = ["UNDEFINED_EPOCH", "UNDEFINED_EPOCH_OFFSET", "EpochEntry", "LeaderEpochCache"]

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


@dataclass(frozen=True, slots=True)
class EpochEntry:
    epoch: int
    start_offset: int


class LeaderEpochCache:
    """Entries sorted by epoch, with start offsets increasing too. ``path`` None keeps it in memory."""

    def __init__(self, path: Path | None = None, entries: list[EpochEntry] | None = None) -> None:
        self._path = path
        self._epochs: list[int] = []
        self._offsets: list[int] = []
        for entry in entries or []:
            self._assign(entry.epoch, entry.start_offset)

    @classmethod
    def load(cls, path: Path) -> LeaderEpochCache:
        """Read ``path`` (empty if missing); ``CorruptCheckpoint`` if it cannot be parsed."""
        cache = cls(path)
        for epoch, start_offset in read_leader_epochs(path):
            cache._assign(epoch, start_offset)
        return cache

    # --- queries -------------------------------------------------------------------------------

    @property
    def entries(self) -> list[EpochEntry]:
        return [EpochEntry(e, o) for e, o in zip(self._epochs, self._offsets, strict=True)]

    def __bool__(self) -> bool:
        return bool(self._epochs)

    @property
    def latest_entry(self) -> EpochEntry | None:
        return EpochEntry(self._epochs[-1], self._offsets[-1]) if self._epochs else None

    @property
    def earliest_entry(self) -> EpochEntry | None:
        return EpochEntry(self._epochs[0], self._offsets[0]) if self._epochs else None

    @property
    def latest_epoch(self) -> int | None:
        return self._epochs[-1] if self._epochs else None

    def previous_epoch(self, epoch: int | None = None) -> int | None:
        """The largest epoch below ``epoch`` (below the latest epoch if None)."""
        if epoch is None:
            if not self._epochs:
                return None
            epoch = self._epochs[-1]
        slot = bisect_left(self._epochs, epoch) - 1
        return self._epochs[slot] if slot >= 0 else None

    def next_epoch(self, epoch: int) -> int | None:
        slot = bisect_right(self._epochs, epoch)
        return self._epochs[slot] if slot < len(self._epochs) else None

    def epoch_for_offset(self, offset: int) -> int | None:
        """The epoch that wrote ``offset``: the last entry starting at or below it."""
        previous = None
        for epoch, start_offset in zip(self._epochs, self._offsets, strict=True):
            if start_offset == offset:
                return epoch
            if start_offset > offset:
                return previous
            previous = epoch
        return previous

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(epoch, end offset) for OffsetForLeaderEpoch, exactly as Kafka's ``endOffsetFor``:
        the largest known epoch at or below the requested one, and the start offset of the next
        larger epoch (the log end offset when the latest epoch is asked for). ``(-1, -1)`` when the
        requested epoch is undefined or above every known epoch; ``(requested, first start offset)``
        when it is below every known epoch."""
        if requested_epoch == UNDEFINED_EPOCH:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if self._epochs and self._epochs[-1] == requested_epoch:
            return requested_epoch, log_end_offset
        higher = bisect_right(self._epochs, requested_epoch)
        if higher >= len(self._epochs):
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        floor = higher - 1
        if floor < 0:
            return requested_epoch, self._offsets[higher]
        return self._epochs[floor], self._offsets[higher]

    # --- updates -------------------------------------------------------------------------------

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that ``epoch`` starts at ``start_offset``. Once assigned an epoch keeps its start
        offset unless a lower one arrives; entries with an epoch or start offset at or above the new
        one are dropped first, so both columns keep increasing. Returns whether anything changed."""
        if self._assign(epoch, start_offset):
            self._write()
            return True
        return False

    def _assign(self, epoch: int, start_offset: int) -> bool:
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"invalid leader epoch entry ({epoch}, {start_offset})")
        if self._epochs and not (epoch != self._epochs[-1] or start_offset < self._offsets[-1]):
            return False
        while self._epochs and (self._epochs[-1] >= epoch or self._offsets[-1] >= start_offset):
            self._epochs.pop()
            self._offsets.pop()
        self._epochs.append(epoch)
        self._offsets.append(start_offset)
        return True

    def truncate_from_end(self, end_offset: int) -> None:
        """Drop every entry starting at or after ``end_offset``."""
        if end_offset < 0 or not self._offsets or self._offsets[-1] < end_offset:
            return
        while self._offsets and self._offsets[-1] >= end_offset:
            self._epochs.pop()
            self._offsets.pop()
        self._write()

    def truncate_from_start(self, start_offset: int) -> None:
        """Drop entries wholly below ``start_offset``; the last of them is kept, moved to start there
        (so truncating at 6 keeps an entry that starts at 6)."""
        removed = 0
        while removed < len(self._offsets) and self._offsets[removed] <= start_offset:
            removed += 1
        if not removed:
            return
        kept_epoch = self._epochs[removed - 1]
        del self._epochs[:removed]
        del self._offsets[:removed]
        self._epochs.insert(0, kept_epoch)
        self._offsets.insert(0, start_offset)
        self._write()

    def clear(self) -> None:
        self._epochs.clear()
        self._offsets.clear()
        self._write()

    def _write(self) -> None:
        if self._path is not None:
            write_leader_epochs(self._path, list(zip(self._epochs, self._offsets, strict=True)))
