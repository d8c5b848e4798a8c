"""File names and small file-system helpers shared by the storage modules (Kafka's ``LogFileUtils``:
20-digit zero-padded base offsets, ``.log``, ``.index``, ``.timeindex``, ``.txnindex``, ``.snapshot``,
``.deleted``)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = [
    "DELETED_SUFFIX",
    "INDEX_SUFFIX",
    "LOG_SUFFIX",
    "SNAPSHOT_SUFFIX",
    "TEMP_SUFFIX",
    "TIME_INDEX_SUFFIX",
    "TXN_INDEX_SUFFIX",
    "file_name",
    "fsync_dir",
    "offset_from_file_name",
    "pread_exact",
    "write_atomically",
]

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
TXN_INDEX_SUFFIX = ".txnindex"
SNAPSHOT_SUFFIX = ".snapshot"
DELETED_SUFFIX = ".deleted"
TEMP_SUFFIX = ".tmp"


def file_name(offset: int, suffix: str) -> str:
    """``00000000000000000042.log`` for offset 42."""
    return f"{offset:020d}{suffix}"


def offset_from_file_name(name: str) -> int | None:
    """The offset a segment or snapshot file is named by, or None if the name is not one of ours."""
    stem = name.split(".", 1)[0]
    if len(stem) != 20 or not stem.isdigit():
        return None
    return int(stem)


def fsync_dir(path: Path) -> None:
    """Make a directory's entries (created, renamed, deleted files) durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomically(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` so that a crash leaves either the old or the new content, as
    Kafka's checkpoint files do: write a temporary file, fsync it, rename it over, fsync the dir."""
    temp = path.with_name(path.name + TEMP_SUFFIX)
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temp, path)
    fsync_dir(path.parent)


def pread_exact(fd: int, size: int, position: int) -> bytes:
    """Up to ``size`` bytes at ``position``; fewer only where the file ends first."""
    if size <= 0:
        return b""
    chunks = []
    while size > 0:
        chunk = os.pread(fd, size, position)
        if not chunk:
            break
        chunks.append(chunk)
        size -= len(chunk)
        position += len(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)
