"""What the ``.txnindex`` storage suites (``reference_broker/storage/test_txn_index_*.py``) share: the
index entry layout (``entry_bytes``) and file helpers, ``Writer`` (appends as producers and the
transaction coordinator would) and ``aborted`` (the aborted transactions a log collects)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kconform.codecs.records import (
    Record,
    encode_batch,
    encode_end_txn_marker_batch,
)
from kconform.reference_broker.storage import (
    AppendOrigin,
    PartitionLog,
)

__all__ = [
    "ENTRY_SIZE",
    "START_MS",
    "Writer",
    "aborted",
    "entry_bytes",
    "txn_index_bytes",
    "txn_index_path",
]


START_MS = 1_700_000_000_000
ENTRY_SIZE = 34


def entry_bytes(producer_id: int, first: int, last: int, lso: int, version: int = 0) -> bytes:
    """One ``.txnindex`` entry, spelled out field by field."""
    return (
        version.to_bytes(2, "big", signed=True)
        + producer_id.to_bytes(8, "big", signed=True)
        + first.to_bytes(8, "big", signed=True)
        + last.to_bytes(8, "big", signed=True)
        + lso.to_bytes(8, "big", signed=True)
    )


def txn_index_path(directory: Path, base_offset: int) -> Path:
    return directory / f"{base_offset:020d}.txnindex"


def txn_index_bytes(directory: Path, base_offset: int = 0) -> bytes:
    path = txn_index_path(directory, base_offset)
    return path.read_bytes() if path.exists() else b""


@dataclass
class Writer:
    """Appends to a log as producers and the transaction coordinator would: data with the client's
    origin and sequence numbers, markers with the coordinator's. With ``follow`` the high watermark
    moves to the log end after every append (a leader alone in its ISR)."""

    log: PartitionLog
    follow: bool = True
    sequences: dict[int, int] = field(default_factory=dict)
    counter: int = 0

    def _append(self, batch: bytes, origin: AppendOrigin) -> tuple[int, int]:
        info = self.log.append(batch, leader_epoch=0, origin=origin)
        if self.follow:
            self.log.update_high_watermark(self.log.log_end_offset)
        return info.first_offset, info.last_offset

    def _records(self, n: int, tag: str) -> list[Record]:
        records = []
        for i in range(n):
            records.append(Record(i, START_MS, None, f"{tag}-{self.counter}".encode()))
            self.counter += 1
        return records

    def txn(self, producer_id: int, n: int = 1, *, epoch: int = 0) -> tuple[int, int]:
        seq = self.sequences.get(producer_id, 0)
        batch = encode_batch(
            self._records(n, f"p{producer_id}"),
            producer_id=producer_id,
            producer_epoch=epoch,
            base_sequence=seq,
            is_transactional=True,
        )
        offsets = self._append(batch, AppendOrigin.CLIENT)
        self.sequences[producer_id] = seq + n
        return offsets

    def plain(self, n: int = 1) -> tuple[int, int]:
        return self._append(encode_batch(self._records(n, "plain")), AppendOrigin.CLIENT)

    def end(self, producer_id: int, commit: bool, *, epoch: int = 0, coordinator_epoch: int = 0) -> int:
        batch = encode_end_txn_marker_batch(
            producer_id=producer_id,
            producer_epoch=epoch,
            commit=commit,
            coordinator_epoch=coordinator_epoch,
            timestamp=START_MS,
        )
        return self._append(batch, AppendOrigin.COORDINATOR)[0]


def aborted(log: PartitionLog, start: int, upper: int) -> list[tuple[int, int, int, int]]:
    return [
        (a.producer_id, a.first_offset, a.last_offset, a.last_stable_offset)
        for a in log.aborted_transactions(start, upper)
    ]
