"""Writing traces to Parquet as a run goes.

A run directory holds ``traces/part-NNNNNN.parquet`` files, each one row group, each written to a
temporary name and renamed into place, so a file either exists whole or not at all: a harness killed
mid-run loses at most the rows it had not flushed yet (one row group), and every part on disk stays
readable. Reopening the directory continues the numbering and tells the caller how far the run got
(``TraceWriter.resume_point``), so a resumed run appends instead of starting over."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .schema import OUTCOMES, SCHEMA, TraceRow

__all__ = ["TraceWriter"]

_PART = re.compile(r"part-(\d{6})\.parquet$")


class TraceWriter:
    """``with TraceWriter(run_dir, run_id) as traces: traces.append(row)``."""

    def __init__(self, run_dir: str | Path, run_id: str, *, row_group_rows: int = 2000) -> None:
        if row_group_rows < 1:
            raise ValueError("row_group_rows must be at least 1")
        self.directory = Path(run_dir) / "traces"
        self.directory.mkdir(parents=True, exist_ok=True)
        self.run_id = run_id
        self.row_group_rows = row_group_rows
        self._columns: dict[str, list] = {name: [] for name in SCHEMA.names}
        self._buffered = 0
        for stale in self.directory.glob("*.tmp"):  # a part that was being written when the run died
            stale.unlink()
        parts = sorted(int(m.group(1)) for p in self.directory.iterdir() if (m := _PART.match(p.name)))
        self._next_part = parts[-1] + 1 if parts else 0
        self.resume_point = self._scan_existing() if parts else _ResumePoint(0, None)
        self._seq = self.resume_point.rows

    def _scan_existing(self) -> _ResumePoint:
        files = sorted(self.directory.glob("part-*.parquet"))
        table = pq.read_table(files, columns=["run_id", "seq", "case_id"], schema=SCHEMA)
        mine = table.filter(pc.equal(table["run_id"], self.run_id))
        if mine.num_rows == 0:
            return _ResumePoint(0, None)
        seqs = mine["seq"].to_pylist()
        last = max(range(len(seqs)), key=seqs.__getitem__)
        return _ResumePoint(max(seqs) + 1, mine["case_id"][last].as_py())

    @property
    def rows_written(self) -> int:
        return self._seq - self._buffered

    @property
    def rows_buffered(self) -> int:
        """Rows appended but not yet on disk (a caller that flushes at its own boundaries reads this)."""
        return self._buffered

    def cases_on_disk(self) -> set[str]:
        """The case ids of this run's rows already on disk."""
        files = sorted(self.directory.glob("part-*.parquet"))
        if not files:
            return set()
        table = pq.read_table(files, columns=["run_id", "case_id"], schema=SCHEMA)
        mine = table.filter(pc.equal(table["run_id"], self.run_id))
        return {case for case in mine["case_id"].to_pylist() if case is not None}

    def append(self, row: TraceRow) -> None:
        if row.outcome not in OUTCOMES:
            raise ValueError(f"outcome {row.outcome!r} is not one of {', '.join(OUTCOMES)}")
        cols = self._columns
        cols["run_id"].append(self.run_id)
        cols["seq"].append(self._seq)
        cols["case_id"].append(row.case_id)
        cols["target"].append(row.target)
        cols["api_key"].append(row.api_key)
        cols["api_name"].append(row.api_name)
        cols["api_version"].append(row.api_version)
        cols["correlation_id"].append(row.correlation_id)
        cols["request_bytes"].append(row.request_bytes)
        cols["response_bytes"].append(row.response_bytes)
        cols["latency_us"].append(row.latency_us)
        cols["error_codes"].append(list(row.error_codes))
        cols["outcome"].append(row.outcome)
        cols["signature"].append(row.signature)
        cols["signatures"].append(list(row.signatures))
        cols["topics"].append(list(row.topics))
        cols["faults"].append(list(row.faults))
        cols["verdict"].append(row.verdict)
        started = row.started_at_us
        cols["started_at"].append(started if started is not None else time.time_ns() // 1000)
        self._seq += 1
        self._buffered += 1
        if self._buffered >= self.row_group_rows:
            self.flush()

    def extend(self, rows: Iterable[TraceRow]) -> None:
        for row in rows:
            self.append(row)

    def flush(self) -> None:
        """Write the buffered rows as one whole part file (nothing when the buffer is empty)."""
        if not self._buffered:
            return
        table = pa.Table.from_pydict(self._columns, schema=SCHEMA)
        final = self.directory / f"part-{self._next_part:06d}.parquet"
        temporary = final.with_suffix(".tmp")
        pq.write_table(table, temporary, row_group_size=self._buffered, compression="zstd")
        with open(temporary, "rb+") as handle:
            os.fsync(handle.fileno())
        os.replace(temporary, final)
        _fsync_directory(self.directory)
        self._next_part += 1
        self._columns = {name: [] for name in SCHEMA.names}
        self._buffered = 0

    def close(self) -> None:
        self.flush()

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


@dataclass(frozen=True, slots=True)
class _ResumePoint:
    rows: int  # rows of this run already on disk
    last_case: str | None  # the case of the last of them


def _fsync_directory(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
