"""Reading traces back: Spark, DuckDB and pyarrow all read a run's ``traces/`` folder as one table;
this is the pyarrow way, for tests and small tools. Files of an older schema version read with the
columns they lack empty."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .schema import SCHEMA

__all__ = ["read_traces"]


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
        table = table.filter(pc.equal(table[column], value))
    return table
