"""The roll-up agrees exactly with independent computations of the same numbers.

Three ways to the same numbers:
- a hand-built trace table whose counts and percentiles are written out below as literals, worked out
  by hand (both engines must produce exactly those);
- a synthetic table (``synthesise``) whose expected numbers are computed a third way, straight from
  the Parquet files with pyarrow and NumPy (Spark == DuckDB == pyarrow);
- random small tables (Hypothesis) for which a pure-Python computation must equal DuckDB's.

Percentiles are linear interpolation between the closest ranks: for n sorted values x[0..n-1] and a
fraction p, h = (n - 1) * p and the percentile is x[floor h] + (h - floor h) * (x[ceil h] - x[floor h])
(NumPy's ``method="linear"``), rounded to 0.1 us after rounding to 0.001 us, as the engines do."""

from __future__ import annotations

import json
import math
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from fractions import Fraction
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kconform.harness.traces import OUTCOMES, SCHEMA, SCHEMA_VERSION, read_traces
from kconform.spark_reports.duck import duckdb_rollup
from kconform.spark_reports.model import (
    NO_FAULT,
    ChaosVerdict,
    DivergenceCluster,
    GridCell,
    LatencyRow,
    Rollup,
    RunRow,
)
from kconform.spark_reports.runs import RunDirectory, find_runs
from kconform.spark_reports.synth import synthesise

T0_US = 1_767_225_600_000_000  # 2026-01-01T00:00:00Z
HOUR_US = 3_600_000_000
S1 = "Produce/v9/throttle_time_ms/value"
S2 = "Fetch/v12/error_code/error_code"
S3 = "Fetch/v12/responses[*].partitions[*].high_watermark/value"
OUTCOME_FIELDS = dict(
    zip(OUTCOMES, ("passed", "diverged", "errors", "timeouts", "closed", "skipped"), strict=True)
)


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


def iso(micros: int) -> str:
    return (
        (datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=micros)).isoformat().replace("+00:00", "Z")
    )


def tenth(value: float) -> float:
    """As the engines round: to 0.001 (the exact value has at most three decimals), then to 0.1."""
    return round(round(float(value), 3), 1)


# --- a. the hand-built table ------------------------------------------------------------------------


def diverge(
    target: str,
    key: int,
    name: str | None,
    version: int,
    latency: int,
    sig: str | None,
    case: str,
    *more: str,
):
    return Row(target, key, name, version, "diverge", latency, sig, case, more=more)


def ok(target: str, key: int, name: str | None, version: int, latency: int | None, outcome: str = "pass"):
    return Row(target, key, name, version, outcome, latency, case_id="c")


# Run A (diff, run-a): targets ref and mock.
RUN_A = [
    # Produce v9 on ref: 7 pass, 2 diverge (S1), 1 error; latencies 100, 200, ..., 1000, no fault.
    *[ok("ref", 0, "Produce", 9, 100 * (i + 1)) for i in range(7)],
    diverge("ref", 0, "Produce", 9, 800, S1, "a1"),
    diverge("ref", 0, "Produce", 9, 900, S1, "a2"),
    ok("ref", 0, "Produce", 9, 1000, "error"),
    # Produce v9 on mock: 7 pass, 2 diverge (S1, the same two cases), 1 timeout; latencies 10..90, 5000.
    *[ok("mock", 0, "Produce", 9, 10 * (i + 1)) for i in range(7)],
    diverge("mock", 0, "Produce", 9, 80, S1, "a1"),
    diverge("mock", 0, "Produce", 9, 90, S1, "a2"),
    ok("mock", 0, "Produce", 9, 5000, "timeout"),
    # Fetch v12 on ref: 4 pass, 1 closed, 1 skipped (no latency); latencies out of order.
    ok("ref", 1, "Fetch", 12, 300),
    ok("ref", 1, "Fetch", 12, 100),
    ok("ref", 1, "Fetch", 12, 200),
    ok("ref", 1, "Fetch", 12, 500),
    ok("ref", 1, "Fetch", 12, 400, "closed"),
    ok("ref", 1, "Fetch", 12, None, "skipped"),
    # Fetch v12 on mock: 3 pass, 3 diverge (S2, cases a3, a4, a4); latencies 100..600.
    ok("mock", 1, "Fetch", 12, 100),
    ok("mock", 1, "Fetch", 12, 200),
    ok("mock", 1, "Fetch", 12, 300),
    diverge("mock", 1, "Fetch", 12, 400, S2, "a3"),
    diverge("mock", 1, "Fetch", 12, 500, S2, "a4"),
    diverge("mock", 1, "Fetch", 12, 600, S2, "a4", S3),  # differs in a second field too
    # Metadata v1 on ref: 5 pass at 7 us.
    *[ok("ref", 3, "Metadata", 1, 7) for _ in range(5)],
    # API key 18 without a name (labelled api-18), v3 on mock: 2 pass, 1 diverge without a signature.
    ok("mock", 18, None, 3, 10),
    ok("mock", 18, None, 3, 20),
    diverge("mock", 18, None, 3, 40, None, "a5"),
]
# Run B (diff, run-b, an hour later), written in trace schema version 1 (no ``signatures`` column):
# one more S2 divergence on mock, in another case.
RUN_B = [diverge("mock", 1, "Fetch", 12, 700, S2, "b1")]
# Run C (chaos, chaos-c, two hours later) on ref: client operations (version -1) under faults A and B,
# between two fault rows (key -1) whose latencies would wreck every number they were counted in.
RUN_C = [
    Row("ref", -1, "fault", -1, "pass", 999_999, faults=("A",)),
    Row("ref", 0, "Produce", -1, "pass", 50, case_id="s1", faults=()),
    Row("ref", 0, "Produce", -1, "pass", 2000, case_id="s1", faults=("A",)),
    Row("ref", 0, "Produce", -1, "pass", 4000, case_id="s1", faults=("A", "B")),
    Row("ref", 0, "Produce", -1, "error", 8000, case_id="s1", faults=("B",)),
    Row("ref", 0, "Produce", -1, "timeout", None, case_id="s1", faults=("A",)),
    Row("ref", -1, "fault", -1, "pass", 777_777, faults=("A", "B")),
]
CHAOS_C = {
    "schema": 1,
    "run_id": "chaos-c",
    "target": "ref",
    "results": [
        {
            "scenario": "s1",
            "target": "ref",
            "verdict": "violation",
            "promise": "no acknowledged write is lost",
            "operations": {"ok": 3, "fail": 1, "info": 1},
            "violations": {"lost-write": 1},
            "anomalies": [
                {"anomaly": "lost-write", "verdict": "violation", "excerpt": ["1 p1 ok send s1-0 v1"]},
                {"anomaly": "duplicate", "verdict": "ok", "excerpt": ["not kept"]},
            ],
        }
    ],
}


@pytest.fixture(scope="module")
def hand_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hand").resolve()
    case = {"signature": S1, "targets": ["ref", "mock"], "operations": []}
    summary = {"run_id": "run-a", "differences": [{"signature": S1, "case_id": "case-000", "count": 2}]}
    write_run(
        root / "diff-a",
        "run-a",
        RUN_A,
        T0_US,
        parts=3,
        extras={"run.json": {"run_id": "run-a"}, "summary.json": summary, "cases/case-000.json": case},
    )
    write_run(
        root / "diff-b",
        "run-b",
        RUN_B,
        T0_US + HOUR_US,
        extras={"run.json": {"run_id": "run-b"}},
        schema_version=1,
    )
    write_run(root / "chaos-c", "chaos-c", RUN_C, T0_US + 2 * HOUR_US, extras={"chaos.json": CHAOS_C})
    return root


@pytest.fixture(scope="module")
def hand_runs(hand_root: Path) -> list[RunDirectory]:
    runs = find_runs([hand_root])
    assert [(r.path.name, r.kind, r.run_id) for r in runs] == [
        ("chaos-c", "chaos", "chaos-c"),
        ("diff-a", "diff", "run-a"),
        ("diff-b", "diff", "run-b"),
    ]
    return runs


def expected_hand_rollup(root: Path) -> Rollup:
    """Every number worked out by hand from the rows above."""
    case = root / "diff-a" / "cases" / "case-000.json"
    grid = [
        #        key  name        v   target  total pass div err tmo closed skip
        GridCell(0, "Produce", 9, "mock", 10, 7, 2, 0, 1, 0, 0),
        GridCell(0, "Produce", 9, "ref", 10, 7, 2, 1, 0, 0, 0),
        GridCell(1, "Fetch", 12, "mock", 7, 3, 4, 0, 0, 0, 0),  # 6 in run A, 1 in run B
        GridCell(1, "Fetch", 12, "ref", 6, 4, 0, 0, 0, 1, 1),
        GridCell(3, "Metadata", 1, "ref", 5, 5, 0, 0, 0, 0, 0),
        GridCell(18, "api-18", 3, "mock", 3, 2, 1, 0, 0, 0, 0),
        # nothing from run C: its operations are version -1, its fault rows key -1
    ]
    divergences = [
        # S2: a3, a4, a4 in run A and b1 in run B -> 4 exchanges, 3 distinct cases; no case file
        DivergenceCluster(S2, 1, "Fetch", 12, 4, 3, ("mock",), ("run-a", "run-b")),
        # S3: the second field of the last a4 exchange only
        DivergenceCluster(S3, 1, "Fetch", 12, 1, 1, ("mock",), ("run-a",)),
        # S1: a1, a2 on each of two targets -> 4 exchanges, 2 cases; summary.json names case-000
        DivergenceCluster(
            S1, 0, "Produce", 9, 4, 2, ("mock", "ref"), ("run-a",), str(case), f"kconform repro {case}"
        ),
        # the api-18 divergence has no signature: no cluster
    ]
    latency = [
        # 100..700: n=7, p50 at h=3 -> 400; p99 at h=5.94 -> 600+0.94*100; p99.9 at h=5.994 -> 699.4
        LatencyRow("mock", "Fetch", NO_FAULT, 7, 400.0, 694.0, 699.4),
        # 10..90, 5000: n=10, p50 at h=4.5 -> 55; p99 at h=8.91 -> 90+0.91*4910 = 4558.1;
        # p99.9 at h=8.991 -> 90+0.991*4910 = 4955.81 -> 4955.8
        LatencyRow("mock", "Produce", NO_FAULT, 10, 55.0, 4558.1, 4955.8),
        # 10, 20, 40: p50 at h=1 -> 20; p99 at h=1.98 -> 20+0.98*20 = 39.6; p99.9 -> 39.96 -> 40.0
        LatencyRow("mock", "api-18", NO_FAULT, 3, 20.0, 39.6, 40.0),
        # 100..500 (the skipped exchange has no latency): p50 300; p99 at h=3.96 -> 496; p99.9 499.6
        LatencyRow("ref", "Fetch", NO_FAULT, 5, 300.0, 496.0, 499.6),
        LatencyRow("ref", "Metadata", NO_FAULT, 5, 7.0, 7.0, 7.0),
        # under A: 2000 and the two-fault 4000 (the timeout has no latency): 3000; 2000+0.99*2000; ...
        LatencyRow("ref", "Produce", "A", 2, 3000.0, 3980.0, 3998.0),
        # under B: the two-fault 4000 and 8000
        LatencyRow("ref", "Produce", "B", 2, 6000.0, 7960.0, 7996.0),
        # run C's 50 and run A's 100..1000: n=11, p50 at h=5 -> 500; p99 at h=9.9 -> 990; p99.9 999
        LatencyRow("ref", "Produce", NO_FAULT, 11, 500.0, 990.0, 999.0),
    ]
    runs = [
        # 5 operations (fault rows are no exchanges): 3 pass, error + timeout; it starts at its first
        # fault row
        RunRow("chaos-c", "chaos", ("ref",), 5, 3, 0, 2, "2026-01-01T02:00:00Z", str(root / "chaos-c")),
        # 40 exchanges: 28 pass, 8 diverge, error + timeout + closed, and 1 skipped that is none of them
        RunRow("run-a", "diff", ("mock", "ref"), 40, 28, 8, 3, "2026-01-01T00:00:00Z", str(root / "diff-a")),
        RunRow("run-b", "diff", ("mock",), 1, 0, 1, 0, "2026-01-01T01:00:00Z", str(root / "diff-b")),
    ]
    chaos = [
        ChaosVerdict(
            scenario="s1",
            target="ref",
            verdict="violation",
            promise="no acknowledged write is lost",
            operations=5,
            violations={"lost-write": 1},
            excerpts={"lost-write": ["1 p1 ok send s1-0 v1"]},
            run_id="chaos-c",
        )
    ]
    return Rollup(grid, divergences, latency, runs, chaos, exchanges=46)


def assert_rollup(found: Rollup, expected: Rollup) -> None:
    """Field by field first, for a readable failure, then the whole."""
    assert found.exchanges == expected.exchanges
    assert found.grid == expected.grid
    assert found.divergences == expected.divergences
    assert found.latency == expected.latency
    assert found.runs == expected.runs
    assert found.chaos == expected.chaos
    assert found == expected


def test_hand_table_counts_are_right(hand_root: Path) -> None:
    """The literals hold for the rows written (the table is what the comments say it is)."""
    table = read_traces(sorted(p for p in hand_root.iterdir()))
    assert table.num_rows == len(RUN_A) + len(RUN_B) + len(RUN_C) == 48
    assert len(list((hand_root / "diff-a" / "traces").glob("part-*.parquet"))) == 3


def test_duckdb_agrees_with_the_hand_counts(hand_root: Path, hand_runs: list[RunDirectory]) -> None:
    assert_rollup(duckdb_rollup(hand_runs), expected_hand_rollup(hand_root))


@pytest.fixture(scope="module")
def spark():
    """One local Spark session for the module (it takes seconds to start)."""
    from kconform.spark_reports.session import SparkUnavailable, spark_session

    try:
        with spark_session() as session:
            yield session
    except SparkUnavailable as exc:
        pytest.skip(f"Spark cannot start here: {exc}")


@pytest.mark.slow
def test_spark_agrees_with_the_hand_counts(hand_root: Path, hand_runs: list[RunDirectory], spark) -> None:
    from kconform.spark_reports.rollup import spark_rollup

    assert_rollup(spark_rollup(hand_runs, spark), expected_hand_rollup(hand_root))


# --- b. a synthetic table, checked a third way ------------------------------------------------------


@pytest.fixture(scope="module")
def synthetic_runs(tmp_path_factory: pytest.TempPathFactory) -> list[RunDirectory]:
    root = tmp_path_factory.mktemp("synthetic").resolve()
    synthesise(root, 60_000, seed=11, runs=2, chaos_runs=1, row_group_rows=12_000)
    runs = find_runs([root])
    assert [r.kind for r in runs] == ["chaos", "diff", "diff"]
    assert all(len(r.trace_files) >= 1 for r in runs)
    return runs


def labelled_traces(runs: list[RunDirectory]) -> pa.Table:
    """Every run's rows, with the index of its run directory and the API label."""
    tables = []
    for index, run in enumerate(runs):
        table = pq.read_table(run.trace_files, schema=SCHEMA)
        tables.append(table.append_column("run_dir", pa.repeat(pa.scalar(index, pa.int64()), table.num_rows)))
    table = pa.concat_tables(tables)
    fallback = pc.binary_join_element_wise("api-", pc.cast(table["api_key"], pa.string()), "")
    return table.append_column("api_label", pc.coalesce(table["api_name"], fallback))


def outcome_counts(column: pa.ChunkedArray) -> dict[str, int]:
    return {c["values"]: c["counts"] for c in pc.value_counts(column).to_pylist()}


def pyarrow_rollup(runs: list[RunDirectory]) -> Rollup:
    """The roll-up computed with pyarrow's group-by and NumPy's percentiles, from the Parquet files."""
    table = labelled_traces(runs)
    exchanges = table.filter(pc.greater_equal(table["api_key"], 0))

    in_grid = exchanges.filter(pc.greater_equal(exchanges["api_version"], 0))
    by_outcome = in_grid.group_by(["api_key", "api_label", "api_version", "target", "outcome"]).aggregate(
        [("seq", "count")]
    )
    cells: dict[tuple, dict[str, int]] = defaultdict(
        lambda: dict.fromkeys(["total", *OUTCOME_FIELDS.values()], 0)
    )
    for row in by_outcome.to_pylist():
        tally = cells[(row["api_key"], row["api_label"], row["api_version"], row["target"])]
        tally["total"] += row["seq_count"]
        tally[OUTCOME_FIELDS[row["outcome"]]] += row["seq_count"]
    grid = [GridCell(k, n, v, t, **tally) for (k, n, v, t), tally in sorted(cells.items())]

    diverged = table.filter(pc.equal(table["outcome"], "diverge"))
    # one row a field signature: ``signatures`` where written, else ``signature`` (schema version 1)
    every = [
        fields if fields else [first]
        for fields, first in zip(
            diverged["signatures"].to_pylist(), diverged["signature"].to_pylist(), strict=True
        )
    ]
    owner = np.repeat(np.arange(len(every)), [len(f) for f in every])
    diverged = diverged.take(pa.array(owner, pa.int64())).drop_columns(["signature"])
    diverged = diverged.append_column("signature", pa.array([f for fs in every for f in fs], pa.string()))
    diverged = diverged.filter(pc.is_valid(diverged["signature"]))
    clusters = diverged.group_by("signature").aggregate(
        [
            ("api_key", "min"),
            ("api_label", "min"),
            ("api_version", "min"),
            ("seq", "count"),
            ("case_id", "count_distinct"),
            ("target", "distinct"),
            ("run_id", "distinct"),
        ]
    )
    cases: dict[str, Path] = {}
    for run in runs:  # the first run (in path order) with a case file for the signature
        for signature, case in run.cases.items():
            cases.setdefault(signature, case)
    divergences = sorted(
        (
            DivergenceCluster(
                r["signature"],
                r["api_key_min"],
                r["api_label_min"],
                r["api_version_min"],
                r["seq_count"],
                r["case_id_count_distinct"],
                tuple(sorted(r["target_distinct"])),
                tuple(sorted(r["run_id_distinct"])),
                str(cases[r["signature"]]) if r["signature"] in cases else None,
                f"kconform repro {cases[r['signature']]}" if r["signature"] in cases else None,
            )
            for r in clusters.to_pylist()
        ),
        key=lambda c: c.signature,
    )

    timed = exchanges.filter(pc.is_valid(exchanges["latency_us"]))
    faults = timed["faults"].combine_chunks()
    lengths = pc.fill_null(pc.list_value_length(faults), 0).to_numpy()
    flat = pc.list_flatten(faults)
    parents = pc.list_parent_indices(faults).to_numpy()
    under_none = np.flatnonzero(lengths == 0)
    rows = np.concatenate([under_none, parents])  # a row under two faults appears once for each
    labels = pa.concat_arrays([pa.repeat(pa.scalar(NO_FAULT), len(under_none)), flat.cast(pa.string())])
    exploded = pa.table(
        {
            "target": timed["target"].take(pa.array(rows)),
            "api_label": timed["api_label"].take(pa.array(rows)),
            "fault": labels,
            "latency_us": timed["latency_us"].take(pa.array(rows)),
        }
    )
    lists = exploded.group_by(["target", "api_label", "fault"]).aggregate([("latency_us", "list")])
    latency = []
    for r in lists.to_pylist():
        values = np.array(r["latency_us_list"], dtype=np.float64)
        p50, p99, p999 = np.percentile(values, [50, 99, 99.9], method="linear")
        latency.append(
            LatencyRow(
                r["target"], r["api_label"], r["fault"], len(values), tenth(p50), tenth(p99), tenth(p999)
            )
        )
    latency.sort(key=lambda r: (r.target, r.api_name, r.fault))

    run_rows = []
    for index, run in enumerate(runs):
        rows_of_run = table.filter(pc.equal(table["run_dir"], index))
        mine = rows_of_run.filter(pc.greater_equal(rows_of_run["api_key"], 0))
        outcomes = dict(outcome_counts(mine["outcome"]))
        first = pc.min(rows_of_run["started_at"]).cast(pa.int64()).as_py()
        run_rows.append(
            RunRow(
                rows_of_run["run_id"][0].as_py(),
                run.kind,
                tuple(sorted(pc.unique(mine["target"]).to_pylist())),
                mine.num_rows,
                outcomes.get("pass", 0),
                outcomes.get("diverge", 0),
                sum(outcomes.get(o, 0) for o in ("error", "timeout", "closed")),
                iso(first),
                str(run.path),
            )
        )
    run_rows.sort(key=lambda r: (r.run_id, r.directory))
    return Rollup(grid, divergences, latency, run_rows, [], exchanges=exchanges.num_rows)


@pytest.fixture(scope="module")
def synthetic_expected(synthetic_runs: list[RunDirectory]) -> Rollup:
    expected = pyarrow_rollup(synthetic_runs)
    # the table is big enough to mean something: every outcome, faults, chaos rows and clusters
    assert expected.exchanges > 55_000
    assert sum(c.diverged for c in expected.grid) > 1000
    assert {r.fault for r in expected.latency} >= {NO_FAULT, "reset_peer@*(timeout=0)"}
    assert len(expected.divergences) > 20
    assert all(c.example_case for c in expected.divergences)
    assert [r.kind for r in expected.runs].count("chaos") == 1
    return expected


def without_chaos(rollup: Rollup) -> Rollup:
    return Rollup(rollup.grid, rollup.divergences, rollup.latency, rollup.runs, [], rollup.exchanges)


def test_duckdb_agrees_with_pyarrow_on_a_synthetic_table(
    synthetic_runs: list[RunDirectory], synthetic_expected: Rollup
) -> None:
    assert_rollup(without_chaos(duckdb_rollup(synthetic_runs)), synthetic_expected)


@pytest.mark.slow
def test_spark_agrees_with_duckdb_and_pyarrow_on_a_synthetic_table(
    synthetic_runs: list[RunDirectory], synthetic_expected: Rollup, spark
) -> None:
    from kconform.spark_reports.rollup import spark_rollup

    found = spark_rollup(synthetic_runs, spark)
    assert found == duckdb_rollup(synthetic_runs)  # chaos verdicts included
    assert len(found.chaos) == 1
    assert_rollup(without_chaos(found), synthetic_expected)


# --- c. random small tables: DuckDB against pure Python ---------------------------------------------

APIS = [(-1, "fault"), (0, "Produce"), (0, None), (1, "Fetch"), (18, None)]

row_strategy = st.builds(
    lambda run, target, api, version, outcome, latency, signature, case, faults, at, more: (
        run,
        Row(target, api[0], api[1], version, outcome, latency, signature, case, faults, T0_US + at, more),
    ),
    st.integers(0, 1),
    st.sampled_from(["ref", "mock"]),
    st.sampled_from(APIS),
    st.sampled_from([-1, 0, 3]),
    st.sampled_from(OUTCOMES),
    st.none() | st.integers(0, 100_000),
    st.sampled_from([None, "sig-a", "sig-b"]),
    st.sampled_from([None, "c1", "c2", "c3"]),
    st.none() | st.lists(st.sampled_from(["A", "B", "C"]), unique=True, max_size=2).map(tuple),
    st.integers(0, 10**9),
    st.sampled_from([(), ("sig-c",), ("sig-a", "sig-c")]),
)


def exact_percentile(values: list[int], p: Fraction) -> Fraction:
    ordered = sorted(values)
    h = (len(ordered) - 1) * p
    low, high = math.floor(h), math.ceil(h)
    return ordered[low] + (h - low) * (ordered[high] - ordered[low])


def python_rollup(runs: list[RunDirectory], rows: list[tuple[int, Row]]) -> Rollup:
    """The roll-up's rules in plain Python, with exact (rational) percentiles."""
    run_ids = {r.path.name: r.run_id for r in runs}
    index = {r.path.name: i for i, r in enumerate(runs)}

    def label(row: Row) -> str:
        return row.api_name if row.api_name is not None else f"api-{row.api_key}"

    cells: dict[tuple, dict[str, int]] = {}
    clusters: dict[str, list[tuple[str, Row]]] = defaultdict(list)
    timings: dict[tuple, list[int]] = defaultdict(list)
    tallies: dict[str, dict] = {}
    for run_number, row in rows:
        name = f"r{run_number}"
        tally = tallies.setdefault(
            name, {"targets": set(), "n": 0, "pass": 0, "diverge": 0, "err": 0, "first": []}
        )
        tally["first"].append(row.started_at_us)
        if row.outcome == "diverge":
            for signature in row.signatures:
                clusters[signature].append((run_ids[name], row))
        if row.api_key < 0:
            continue
        tally["targets"].add(row.target)
        tally["n"] += 1
        tally["pass"] += row.outcome == "pass"
        tally["diverge"] += row.outcome == "diverge"
        tally["err"] += row.outcome in ("error", "timeout", "closed")
        if row.api_version >= 0:
            cell = cells.setdefault(
                (row.api_key, label(row), row.api_version, row.target),
                dict.fromkeys(["total", *OUTCOME_FIELDS.values()], 0),
            )
            cell["total"] += 1
            cell[OUTCOME_FIELDS[row.outcome]] += 1
        if row.latency_us is not None:
            for fault in row.faults or (NO_FAULT,):
                timings[(row.target, label(row), fault)].append(row.latency_us)

    grid = [GridCell(k, n, v, t, **c) for (k, n, v, t), c in sorted(cells.items())]
    divergences = [
        DivergenceCluster(
            signature,
            min(r.api_key for _, r in members),
            min(label(r) for _, r in members),
            min(r.api_version for _, r in members),
            len(members),
            len({r.case_id for _, r in members if r.case_id is not None}),
            tuple(sorted({r.target for _, r in members})),
            tuple(sorted({run for run, _ in members})),
        )
        for signature, members in sorted(clusters.items())
    ]
    fractions = [Fraction(1, 2), Fraction(99, 100), Fraction(999, 1000)]
    latency = [
        LatencyRow(t, n, f, len(v), *(tenth(exact_percentile(v, p)) for p in fractions))
        for (t, n, f), v in sorted(timings.items())
    ]
    run_rows = sorted(
        (
            RunRow(
                run_ids[name],
                "diff",
                tuple(sorted(t["targets"])),
                t["n"],
                t["pass"],
                t["diverge"],
                t["err"],
                iso(min(t["first"])),
                str(runs[index[name]].path),
            )
            for name, t in tallies.items()
        ),
        key=lambda r: (r.run_id, r.directory),
    )
    exchanges = sum(1 for _, row in rows if row.api_key >= 0)
    return Rollup(grid, divergences, latency, run_rows, [], exchanges)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(row_strategy, min_size=1, max_size=40))
def test_duckdb_equals_pure_python_on_random_tables(rows: list[tuple[int, Row]]) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch).resolve()
        for run_number in sorted({n for n, _ in rows}):
            mine = [row for n, row in rows if n == run_number]
            name = f"r{run_number}"
            write_run(root / name, f"id-{name}", mine, T0_US, extras={"run.json": {"run_id": f"id-{name}"}})
        runs = find_runs([root])
        expected = python_rollup(runs, rows)
        found = duckdb_rollup(runs)
    assert_rollup(found, expected)
