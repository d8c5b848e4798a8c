"""What the transaction-log suites of ``reference_broker`` share (``test_txn_log_*.py``): the clock,
``TxnLog`` (a ``PartitionLog`` with per-producer sequences and marker helpers; the ``txlog``
fixture in ``reference_broker/conftest.py`` opens one) and ``entry`` (one ``.txnindex`` entry)."""

from __future__ import annotations

import struct
from pathlib import Path

from kconform.codecs.records import (
    Record,
    encode_batch,
    encode_end_txn_marker_batch,
)
from kconform.reference_broker.storage import (
    AppendOrigin,
    LogConfig,
    PartitionLog,
)

__all__ = [
    "EPOCH",
    "P1",
    "P2",
    "P3",
    "START_MS",
    "Clock",
    "TxnLog",
    "entry",
]


START_MS = 1_700_000_000_000
EPOCH = 3
P1, P2, P3 = 1001, 1002, 1003


class Clock:
    def __init__(self) -> None:
        self.now_ms = START_MS

    def __call__(self) -> int:
        return self.now_ms


class TxnLog:
    """A ``PartitionLog`` with a producer per id (sequences counted here) and marker helpers. The high
    watermark follows the log end unless ``hold_hw`` is set (a follower lagging behind)."""

    def __init__(self, directory: Path, config: LogConfig | None = None) -> None:
        self.directory = directory
        self.config = config or LogConfig()
        self.clock = Clock()
        self.sequences: dict[int, int] = {}
        self.hold_hw = False
        self.log = self._open(None)

    def _open(self, clean_shutdown: bool | None) -> PartitionLog:
        return PartitionLog.open(self.directory, self.config, clock=self.clock, clean_shutdown=clean_shutdown)

    def data(self, producer_id: int | None, count: int = 1, *, values: list[bytes] | None = None) -> int:
        """A transactional batch of ``producer_id`` (None: a plain batch); returns its first offset."""
        values = values or [b"v%d" % i for i in range(count)]
        records = [Record(i, START_MS, b"k", value) for i, value in enumerate(values)]
        if producer_id is None:
            batch = encode_batch(records)
        else:
            sequence = self.sequences.get(producer_id, 0)
            self.sequences[producer_id] = sequence + len(records)
            batch = encode_batch(
                records,
                producer_id=producer_id,
                producer_epoch=EPOCH,
                base_sequence=sequence,
                is_transactional=True,
            )
        return self._append(batch, AppendOrigin.CLIENT)

    def marker(
        self, producer_id: int, *, commit: bool, epoch: int = EPOCH, coordinator_epoch: int = 0
    ) -> int:
        batch = encode_end_txn_marker_batch(
            producer_id=producer_id,
            producer_epoch=epoch,
            commit=commit,
            coordinator_epoch=coordinator_epoch,
            timestamp=START_MS,
        )
        return self._append(batch, AppendOrigin.COORDINATOR)

    def _append(self, batch: bytes, origin: AppendOrigin) -> int:
        info = self.log.append(batch, leader_epoch=0, origin=origin)
        if not self.hold_hw:
            self.log.update_high_watermark(self.log.log_end_offset)
        return info.first_offset

    def restart(self, *, clean: bool) -> None:
        if clean:
            self.log.close()
        else:
            self.log.close_handlers()
        self.log = self._open(None if clean else False)
        # a single-node leader: everything in its log is replicated (Partition does the same)
        self.log.update_high_watermark(self.log.log_end_offset)

    def txn_index_files(self) -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in sorted(self.directory.glob("*.txnindex"))}

    def aborted(self, start: int = 0, upper: int | None = None) -> list[tuple[int, int, int, int]]:
        upper = self.log.log_end_offset if upper is None else upper
        return [
            (a.producer_id, a.first_offset, a.last_offset, a.last_stable_offset)
            for a in self.log.aborted_transactions(start, upper)
        ]


def entry(producer_id: int, first: int, last: int, lso: int) -> bytes:
    return struct.pack(">hqqqq", 0, producer_id, first, last, lso)
