"""Aborted transactions of one partition (Kafka's ``TransactionIndex``): one ``<base offset>.txnindex``
file per segment, holding an entry for every transaction whose ABORT marker landed in that segment.

An entry is 34 bytes: version int16 (0), producer id int64, first offset int64, last offset int64 (the
marker's), last stable offset int64 (the partition's LSO once this transaction completed). A
read_committed fetch asks which aborted transactions overlap the offsets it returns, so that the
consumer can drop their records. Entries are kept in memory as well; the files make them survive a
restart. An entry at or past the log end after a crash belongs to a torn write and is dropped."""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

from ._files import file_name, offset_from_file_name

__all__ = ["AbortedTxn", "TransactionIndex", "TXN_INDEX_SUFFIX"]

TXN_INDEX_SUFFIX = ".txnindex"
_ENTRY = struct.Struct(">hqqqq")


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int
    segment_base: int

    def encode(self) -> bytes:
        return _ENTRY.pack(0, self.producer_id, self.first_offset, self.last_offset, self.last_stable_offset)


class TransactionIndex:
    def __init__(self, directory: Path, entries: list[AbortedTxn]) -> None:
        self._dir = directory
        self._entries = entries

    @classmethod
    def load(cls, directory: Path, segment_bases: list[int], log_end_offset: int) -> TransactionIndex:
        entries: list[AbortedTxn] = []
        live = set(segment_bases)
        for path in sorted(directory.glob("*" + TXN_INDEX_SUFFIX)):
            base = offset_from_file_name(path.name)
            if base is None:
                continue
            if base not in live:
                path.unlink(missing_ok=True)  # its segment is gone
                continue
            data = path.read_bytes()
            whole = len(data) - len(data) % _ENTRY.size
            kept = []
            for version, pid, first, last, lso in _ENTRY.iter_unpack(data[:whole]):
                if version != 0 or last >= log_end_offset or first > last:
                    continue
                kept.append(AbortedTxn(pid, first, last, lso, base))
            entries.extend(kept)
            if len(kept) * _ENTRY.size != len(data):
                _rewrite(path, kept)
        entries.sort(key=lambda e: e.last_offset)
        return cls(directory, entries)

    @property
    def entries(self) -> list[AbortedTxn]:
        return list(self._entries)

    def append(self, entry: AbortedTxn) -> None:
        self._entries.append(entry)
        path = self._dir / file_name(entry.segment_base, TXN_INDEX_SUFFIX)
        with open(path, "ab") as f:
            f.write(entry.encode())

    def collect(self, start_offset: int, upper_offset: int) -> list[AbortedTxn]:
        """Aborted transactions with data in ``[start_offset, upper_offset)`` (Kafka's
        ``collectAbortedTransactions``): any that end at or after the start and begin before the end."""
        return [e for e in self._entries if e.last_offset >= start_offset and e.first_offset < upper_offset]

    def truncate_to(self, offset: int) -> None:
        """Forget transactions whose marker is at or after ``offset``."""
        doomed = [e for e in self._entries if e.last_offset >= offset]
        if not doomed:
            return
        self._entries = [e for e in self._entries if e.last_offset < offset]
        for base in {e.segment_base for e in doomed}:
            _rewrite(
                self._dir / file_name(base, TXN_INDEX_SUFFIX),
                [e for e in self._entries if e.segment_base == base],
            )

    def drop_segments(self, bases: set[int]) -> None:
        self._entries = [e for e in self._entries if e.segment_base not in bases]
        for base in bases:
            (self._dir / file_name(base, TXN_INDEX_SUFFIX)).unlink(missing_ok=True)


def _rewrite(path: Path, entries: list[AbortedTxn]) -> None:
    if not entries:
        path.unlink(missing_ok=True)
        return
    temp = path.with_name(path.name + ".tmp")
    temp.write_bytes(b"".join(e.encode() for e in entries))
    os.replace(temp, path)
