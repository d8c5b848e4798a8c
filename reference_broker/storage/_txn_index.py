"""The aborted transactions of one segment (Kafka's ``TransactionIndex``): ``<base offset>.txnindex``
holds one entry for every transaction whose ABORT marker is in that segment, in marker order.

An entry is 34 bytes, big-endian: version int16 (0), producer id int64, first offset int64, last
offset int64 (the marker's), last stable offset int64 (the partition's LSO once the transaction was
complete). A read_committed fetch asks which aborted transactions overlap the offsets it returns so
the consumer can drop their records. As in Kafka the file is created only when the first entry is
written, emptied when the segment is recovered, cut when the log is truncated and renamed and deleted
with its segment. The entries are also kept in memory, so a fetch never reads the file."""

from __future__ import annotations

import struct
from bisect import bisect_left
from dataclasses import dataclass
from pathlib import Path

from ._errors import CorruptIndex
from ._index_file import IndexFile

__all__ = ["ENTRY_SIZE", "AbortedTxn", "CompletedTxn", "TransactionIndex"]

_ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = _ENTRY.size
_VERSION = 0


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    """A transaction closed by a COMMIT or ABORT marker (Kafka's ``CompletedTxn``); the last offset
    is the marker's."""

    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    def encode(self) -> bytes:
        return _ENTRY.pack(
            _VERSION, self.producer_id, self.first_offset, self.last_offset, self.last_stable_offset
        )

    @classmethod
    def decode(cls, data: bytes | memoryview) -> AbortedTxn:
        """One entry; CorruptIndex for a version this broker does not know."""
        version, producer_id, first, last, lso = _ENTRY.unpack(data)
        if version != _VERSION:
            raise CorruptIndex(f"aborted transaction entry of unknown version {version}")
        return cls(producer_id, first, last, lso)


class TransactionIndex:
    def __init__(self, path: Path, start_offset: int) -> None:
        """An index with no entries; ``open`` reads an existing file."""
        self.start_offset = start_offset
        self.file = IndexFile(path, ENTRY_SIZE)
        self._entries: list[AbortedTxn] = []
        self._last_offsets: list[int] = []

    @classmethod
    def open(cls, path: Path, start_offset: int) -> TransactionIndex:
        """The index of the segment at ``start_offset``, from its file if there is one. A torn last
        entry is cut off. CorruptIndex (the loader then rebuilds the index from the log) for an
        unknown entry version, markers out of order, or one below the segment (Kafka's sanity check)."""
        index = cls(path, start_offset)
        try:
            data = index.file.read()
        except FileNotFoundError:
            return index
        whole = len(data) - len(data) % ENTRY_SIZE
        for position in range(0, whole, ENTRY_SIZE):
            index._remember(AbortedTxn.decode(data[position : position + ENTRY_SIZE]))
        if whole != len(data):
            index.file.truncate(whole // ENTRY_SIZE)
        return index

    def _remember(self, entry: AbortedTxn) -> None:
        if entry.last_offset < self.start_offset:
            raise CorruptIndex(
                f"aborted transaction {entry} in {self.file.path} ends below the segment's base offset "
                f"{self.start_offset}"
            )
        if self._last_offsets and entry.last_offset <= self._last_offsets[-1]:
            raise CorruptIndex(
                f"aborted transaction {entry} in {self.file.path} does not follow marker offset "
                f"{self._last_offsets[-1]}"
            )
        self._entries.append(entry)
        self._last_offsets.append(entry.last_offset)

    @property
    def entries(self) -> list[AbortedTxn]:
        return list(self._entries)

    def append(self, entry: AbortedTxn) -> None:
        """Add an aborted transaction; its marker must come after the last one's (ValueError)."""
        try:
            self._remember(entry)
        except CorruptIndex as exc:
            raise ValueError(str(exc)) from None
        self.file.write_entry(len(self._entries) - 1, entry.encode())

    def collect(self, fetch_offset: int, upper_bound_offset: int) -> tuple[list[AbortedTxn], bool]:
        """The aborted transactions with records in ``[fetch_offset, upper_bound_offset)``, and whether
        the search is complete: once an entry's LSO reaches the upper bound, no transaction completed
        later (here or in a later segment) can have started below it (``collectAbortedTxns``)."""
        found = []
        for entry in self._entries:
            if entry.last_offset >= fetch_offset and entry.first_offset < upper_bound_offset:
                found.append(entry)
            if entry.last_stable_offset >= upper_bound_offset:
                return found, True
        return found, False

    def truncate_to(self, offset: int) -> None:
        """Forget the transactions whose marker is at or after ``offset``."""
        keep = bisect_left(self._last_offsets, offset)
        if keep < len(self._entries):
            del self._entries[keep:]
            del self._last_offsets[keep:]
            self.file.truncate(keep)

    def reset(self) -> None:
        """Empty the index (segment recovery rebuilds it from the log)."""
        self._entries.clear()
        self._last_offsets.clear()
        if self.file.path.exists():
            self.file.truncate(0)

    def flush(self) -> None:
        self.file.flush()

    def close(self) -> None:
        self.file.close()

    def rename(self, new_path: Path) -> None:
        self.file.close()
        self.file.rename(new_path)

    def delete(self) -> None:
        self.file.delete()
