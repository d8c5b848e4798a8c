"""The file behind an offset or time index: fixed-size entries appended at the end.

Kafka pre-allocates index files to ``segment.index.bytes`` and memory-maps them, trimming them to their
entries on roll and close. Here the file always holds exactly the entries written (no pre-allocation,
no mmap); the entries live in memory and every append is written through to the file, so the on-disk
bytes are Kafka's trimmed layout at every moment. The write descriptor is opened on the first write and
closed when the segment stops being active."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["IndexFile"]


class IndexFile:
    def __init__(self, path: Path, entry_size: int) -> None:
        self.path = path
        self._entry_size = entry_size
        self._fd: int | None = None
        self._dirty = False

    def read(self) -> bytes:
        """The file's bytes; raises FileNotFoundError if it does not exist."""
        return self.path.read_bytes()

    def create(self) -> None:
        """Create (or empty) the file."""
        self.close()
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.close(fd)

    def _open(self) -> int:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        return self._fd

    def write_entry(self, entry_number: int, data: bytes) -> None:
        os.pwrite(self._open(), data, entry_number * self._entry_size)
        self._dirty = True

    def truncate(self, entries: int) -> None:
        os.ftruncate(self._open(), entries * self._entry_size)
        self._dirty = True

    def flush(self) -> None:
        if self._fd is not None and self._dirty:
            os.fsync(self._fd)
            self._dirty = False

    def close(self) -> None:
        if self._fd is not None:
            self.flush()
            os.close(self._fd)
            self._fd = None

    def rename(self, new_path: Path) -> None:
        if self.path.exists():
            os.replace(self.path, new_path)
        self.path = new_path

    def delete(self) -> None:
        self.close()
        self.path.unlink(missing_ok=True)
