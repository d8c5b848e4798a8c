"""What the roll-up agreement suites of ``spark_reports`` share (``test_rollup_*.py``): the outcome
names, ``Row`` and the writers of trace tables and runs, and the rounding and comparison helpers."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from kconform.spark_reports.model import (
    Rollup,
)
from kconform.traces import SCHEMA, SCHEMA_VERSION

T0_US = 1_767_225_600_000_000  # 2026-01-01T00:00:00Z


# --- writing trace tables -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Row:
    target: str
    api_key: int
    api_name: str | None
    api_version: int
    outcome: str
    latency_us: int | None = None
    signature: str | None = None
    case_id: str | None = None
    faults: tuple[str, ...] | None = ()
    started_at_us: int | None = None  # T0 of the run plus the row's position in ms, when None
    more: tuple[str, ...] = ()  # further fields the exchange differs in (``signatures`` after the first)

    @property
    def signatures(self) -> list[str]:
        return [self.signature, *self.more] if self.signature is not None else list(self.more)


def trace_table(run_id: str, rows: list[Row], start_us: int) -> pa.Table:
    columns: dict[str, list] = {name: [] for name in SCHEMA.names}
    for seq, row in enumerate(rows):
        values = {
            "run_id": run_id,
            "seq": seq,
            "case_id": row.case_id,
            "target": row.target,
            "api_key": row.api_key,
            "api_name": row.api_name,
            "api_version": row.api_version,
            "correlation_id": seq,
            "request_bytes": 100,
            "response_bytes": 200,
            "latency_us": row.latency_us,
            "error_codes": [],
            "outcome": row.outcome,
            "signature": row.signature,
            "signatures": row.signatures,
            "topics": ["t"],
            "faults": None if row.faults is None else list(row.faults),
            "verdict": None,
            "started_at": row.started_at_us if row.started_at_us is not None else start_us + seq * 1000,
        }
        for name, value in values.items():
            columns[name].append(value)
    return pa.Table.from_pydict(columns, schema=SCHEMA)


def write_run(
    directory: Path,
    run_id: str,
    rows: list[Row],
    start_us: int,
    *,
    parts: int = 1,
    extras: dict | None = None,
    schema_version: int = SCHEMA_VERSION,
) -> None:
    """``traces/part-NNNNNN.parquet`` (the rows split into ``parts`` files) and the JSON files given;
    ``schema_version`` 1 writes the files as kconform did before the ``signatures`` column."""
    traces = directory / "traces"
    traces.mkdir(parents=True)
    table = trace_table(run_id, rows, start_us)
    if schema_version == 1:
        table = table.drop_columns(["signatures"]).replace_schema_metadata(
            {b"kconform.trace.schema_version": b"1"}
        )
    size = -(-table.num_rows // parts)
    for part in range(parts):
        pq.write_table(table.slice(part * size, size), traces / f"part-{part:06d}.parquet")
    for name, document in (extras or {}).items():
        (directory / name).parent.mkdir(parents=True, exist_ok=True)
        (directory / name).write_text(json.dumps(document))


def assert_rollup(found: Rollup, expected: Rollup) -> None:
    """Field by field first, for a readable failure, then the whole."""
    assert found.exchanges == expected.exchanges
    assert found.grid == expected.grid
    assert found.divergences == expected.divergences
    assert found.latency == expected.latency
    assert found.runs == expected.runs
    assert found.chaos == expected.chaos
    assert found.chaos_felt == expected.chaos_felt
    assert found.crashes == expected.crashes
    assert found.offered == expected.offered
    assert found.replays == expected.replays
    assert found.diff_runs == expected.diff_runs
    assert found == expected
