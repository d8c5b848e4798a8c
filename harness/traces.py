"""Traces: one row per request/response exchange, written to Parquet as a run goes.

A run directory holds ``traces/part-NNNNNN.parquet`` files, each one row group, each written to a
temporary name and renamed into place, so a file either exists whole or not at all: a harness killed
mid-run loses at most the rows it had not flushed yet (one row group), and every part on disk stays
readable. Reopening the directory continues the numbering and tells the caller how far the run got
(``TraceWriter.resume_point``), so a resumed run appends instead of starting over. Spark, DuckDB and
pyarrow read the directory as one table.

The schema is versioned (``SCHEMA_VERSION``, also stored in every file's metadata); ``SCHEMA`` below
is its definition, one commented column a line. A change to a column is a new version."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

__all__ = ["OUTCOMES", "SCHEMA", "SCHEMA_VERSION", "TraceRow", "TraceWriter", "read_traces"]

SCHEMA_VERSION = 2  # 2 added ``signatures``; files of version 1 read with it empty
OUTCOMES = ("pass", "diverge", "error", "timeout", "closed", "skipped")

SCHEMA = pa.schema(
    [
        pa.field("run_id", pa.string(), nullable=False),
        pa.field("seq", pa.int64(), nullable=False),  # position of the exchange in the run, from 0
        pa.field("case_id", pa.string()),
        pa.field("target", pa.string(), nullable=False),
        pa.field("api_key", pa.int16(), nullable=False),
        pa.field("api_name", pa.string()),
        pa.field("api_version", pa.int16(), nullable=False),
        pa.field("correlation_id", pa.int32()),
        pa.field("request_bytes", pa.int32()),
        pa.field("response_bytes", pa.int32()),
        pa.field("latency_us", pa.int64()),
        pa.field("error_codes", pa.list_(pa.int16())),  # every error code in the response, in order
        pa.field("outcome", pa.string(), nullable=False),
        pa.field("signature", pa.string()),  # the divergence signature, when outcome is "diverge"
        pa.field("signatures", pa.list_(pa.string())),  # every field's signature, ``signature`` first
        pa.field("topics", pa.list_(pa.string())),
        pa.field("faults", pa.list_(pa.string())),  # faults active during the exchange
        pa.field("verdict", pa.string()),  # a checker's verdict, for chaos runs
        pa.field("started_at", pa.timestamp("us", tz="UTC"), nullable=False),
    ],
    metadata={b"kconform.trace.schema_version": str(SCHEMA_VERSION).encode()},
)

_PART = re.compile(r"part-(\d{6})\.parquet$")


@dataclass(slots=True)
class TraceRow:
    target: str
    api_key: int
    api_version: int
    outcome: str
    case_id: str | None = None
    api_name: str | None = None
    correlation_id: int | None = None
    request_bytes: int | None = None
    response_bytes: int | None = None
    latency_us: int | None = None
    error_codes: list[int] = field(default_factory=list)
    signature: str | None = None
    signatures: list[str] = field(default_factory=list)
    topics: list[str] = field(default_factory=list)
    faults: list[str] = field(default_factory=list)
    verdict: str | None = None
    started_at_us: int | None = None  # microseconds since the epoch; now when not given


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
        mine = table.filter(pa.compute.equal(table["run_id"], self.run_id))
        if mine.num_rows == 0:
            return _ResumePoint(0, None)
        seqs = mine["seq"].to_pylist()
        last = max(range(len(seqs)), key=seqs.__getitem__)
        return _ResumePoint(max(seqs) + 1, mine["case_id"][last].as_py())

    @property
    def rows_written(self) -> int:
        return self._seq - self._buffered

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


def read_traces(
    run_dirs: Iterable[str | Path] | str | Path, *, filters: Mapping[str, Any] | None = None
) -> pa.Table:
    """Every trace row of one or more run directories, as one pyarrow table."""
    if isinstance(run_dirs, str | Path):
        run_dirs = [run_dirs]
    tables = []
    for run_dir in run_dirs:
        directory = Path(run_dir) / "traces"
        files = sorted(p for p in directory.glob("part-*.parquet"))
        if files:
            tables.append(pq.read_table(files, schema=SCHEMA))
    table = pa.concat_tables(tables) if tables else SCHEMA.empty_table()
    for column, value in (filters or {}).items():
        table = table.filter(pa.compute.equal(table[column], value))
    return table
