"""The roll-up benchmark: the Spark job against DuckDB over the same synthetic traces, in one run.

Synthesising the traces and starting the SparkSession are timed and printed apart: the comparison is
the roll-up itself, from the run directories found to a ``Rollup`` (Spark's first query in a fresh
session pays its JIT warm-up, as a report does). The two roll-ups must agree, or the numbers mean nothing.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

from rich.console import Console

from kconform.spark_reports.duck import duckdb_rollup
from kconform.spark_reports.rollup import spark_rollup
from kconform.spark_reports.runs import find_runs
from kconform.spark_reports.session import spark_session
from kconform.spark_reports.standalone import ClusterError, MemorySampler, standalone_cluster
from kconform.spark_reports.synth import synthesise

from ..catalogue import api_catalogue
from .report import Comparison, print_comparisons

__all__ = ["run"]


def run(
    rows: int, master: str | None, as_json: bool, standalone: bool = False, worker_memory: str = "8g"
) -> None:
    # progress goes to stderr, so that --json leaves stdout to the comparison lines
    console = Console(stderr=True)
    with ExitStack() as stack:
        sessions: tuple[int, ...] = ()
        if standalone:
            scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="kconform-standalone-")))
            started = time.perf_counter()
            try:
                cluster = stack.enter_context(
                    standalone_cluster(scratch, cores=os.cpu_count() or 1, memory=worker_memory)
                )
            except ClusterError as exc:
                console.print(f"[red]no standalone cluster: {exc}[/red]")
                sys.exit(2)
            master, sessions = cluster.url, cluster.sessions
            console.print(f"standalone cluster at {master}: {time.perf_counter() - started:.1f} s to start")
        _run(rows, master, as_json, sessions, console)


def _run(rows: int, master: str | None, as_json: bool, sessions: tuple[int, ...], console: Console) -> None:
    with tempfile.TemporaryDirectory(prefix="kconform-bench-reports-") as scratch:
        started = time.perf_counter()
        synthesise(Path(scratch), rows, catalogue=api_catalogue(), runs=2, chaos_runs=1)
        console.print(f"synthesised {rows:,} trace rows in {time.perf_counter() - started:.1f} s")
        runs = find_runs([scratch])

        started = time.perf_counter()
        duck = duckdb_rollup(runs)
        duck_seconds = time.perf_counter() - started
        console.print(f"DuckDB roll-up: {duck_seconds:.1f} s")

        started = time.perf_counter()
        with spark_session(master, app_name="kconform-bench-reports") as spark:
            session_seconds = time.perf_counter() - started
            where = master or "local[*]"
            console.print(f"Spark session start ({where}): {session_seconds:.1f} s (not counted)")
            started = time.perf_counter()
            with MemorySampler(sessions) as memory:
                ours = spark_rollup(runs, spark)
            spark_seconds = time.perf_counter() - started
        console.print(f"Spark roll-up: {spark_seconds:.1f} s")
        peaks = f"driver (Python and its JVM) {memory.peak_driver / 2**30:.2f} GiB"
        if sessions:
            peaks += f", cluster (Master, Worker and executors) {memory.peak_cluster / 2**30:.2f} GiB"
        console.print(f"peak resident memory during the roll-up: {peaks}")

    if ours != duck:
        console.print("[red]the Spark and DuckDB roll-ups disagree; the timings are void[/red]")
        sys.exit(1)
    console.print(
        f"agree: {ours.exchanges:,} exchanges, {len(ours.grid)} grid cells, "
        f"{len(ours.divergences)} divergence clusters, {len(ours.latency)} latency rows"
    )
    case = f"{rows:,} rows"
    comparisons = [
        Comparison("reports", case, "s", spark_seconds, "duckdb", duck_seconds),
        Comparison("reports", case, "rows/s", rows / spark_seconds, "duckdb", rows / duck_seconds, True),
    ]
    print_comparisons(comparisons, as_json=as_json, title="roll-up: Spark (ours) vs DuckDB")
