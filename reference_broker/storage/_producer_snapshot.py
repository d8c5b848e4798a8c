"""Producer state snapshot files, ``<offset>.snapshot`` (20-digit offset), in Kafka's version 1 layout
(``ProducerStateManager.writeSnapshot``), big-endian:

    version int16 (1) | crc uint32 (CRC-32C of everything after it) | count int32 | count x entry
    entry: producer_id int64 | epoch int16 | last_sequence int32 | last_offset int64 |
           offset_delta int32 | timestamp int64 | coordinator_epoch int32 | current_txn_first_offset int64

As in Kafka, a snapshot keeps only the last batch of each producer (``last_offset`` -1 if none), so
after a restart duplicates are detected against that batch plus whatever the log replays after the
snapshot offset."""

from __future__ import annotations

import struct
from collections.abc import Iterable
from pathlib import Path

import crc32c

from ._errors import StorageError
from ._files import write_atomically
from ._producer_state import BatchMetadata, ProducerStateEntry

__all__ = ["CorruptSnapshot", "read_snapshot", "write_snapshot"]

_VERSION = 1
_HEADER = struct.Struct(">hI")
_COUNT = struct.Struct(">i")
_ENTRY = struct.Struct(">qhiqiqiq")


class CorruptSnapshot(StorageError):
    """A snapshot file that cannot be trusted; the loader deletes it and replays the log instead."""


def write_snapshot(path: Path, entries: Iterable[ProducerStateEntry]) -> None:
    rows = [
        _ENTRY.pack(
            e.producer_id,
            e.producer_epoch,
            e.last_seq,
            e.last_data_offset,
            e.last_offset_delta,
            e.last_timestamp,
            e.coordinator_epoch,
            -1 if e.current_txn_first_offset is None else e.current_txn_first_offset,
        )
        for e in entries
    ]
    body = _COUNT.pack(len(rows)) + b"".join(rows)
    write_atomically(path, _HEADER.pack(_VERSION, crc32c.crc32c(body)) + body)


def read_snapshot(path: Path) -> list[ProducerStateEntry]:
    data = path.read_bytes()
    if len(data) < _HEADER.size + _COUNT.size:
        raise CorruptSnapshot(f"snapshot {path} is too short")
    version, crc = _HEADER.unpack_from(data, 0)
    if version != _VERSION:
        raise CorruptSnapshot(f"snapshot {path} has unknown version {version}")
    body = memoryview(data)[_HEADER.size :]
    if crc32c.crc32c(body) != crc:
        raise CorruptSnapshot(f"snapshot {path} fails its CRC")
    (count,) = _COUNT.unpack_from(body, 0)
    if count < 0 or len(body) != _COUNT.size + count * _ENTRY.size:
        raise CorruptSnapshot(f"snapshot {path} does not hold {count} entries")
    entries = []
    for producer_id, epoch, seq, offset, delta, timestamp, coordinator_epoch, txn_first in _ENTRY.iter_unpack(
        body[_COUNT.size :]
    ):
        batches = (BatchMetadata(seq, offset, delta, timestamp),) if offset >= 0 else ()
        entries.append(
            ProducerStateEntry(
                producer_id=producer_id,
                producer_epoch=epoch,
                coordinator_epoch=coordinator_epoch,
                last_timestamp=timestamp,
                current_txn_first_offset=txn_first if txn_first >= 0 else None,
                batches=batches,
            )
        )
    return entries
