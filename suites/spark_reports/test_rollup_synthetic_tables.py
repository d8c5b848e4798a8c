"""The roll-up agrees exactly with independent computations on generated tables:
- a synthetic table (``synthesise``) whose expected numbers are computed a third way, straight from
  the Parquet files with pyarrow and NumPy (Spark == DuckDB == pyarrow);
- random small tables (Hypothesis) for which a pure-Python computation must equal DuckDB's.
The hand-built table is in ``test_rollup_hand_table.py``.

Percentiles are linear interpolation between the closest ranks: for n sorted values x[0..n-1] and a
fraction p, h = (n - 1) * p and the percentile is x[floor h] + (h - floor h) * (x[ceil h] - x[floor h])
(NumPy's ``method="linear"``), rounded to 0.1 us after rounding to 0.001 us, as the engines do."""

from __future__ import annotations

import math
import tempfile
from collections import defaultdict
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

from kconform.harness.catalogue import api_catalogue
from kconform.spark_reports.attribution import FELT_KEYS, attribute
from kconform.spark_reports.duck import duckdb_rollup
from kconform.spark_reports.model import (
    NO_FAULT,
    DivergenceCluster,
    GridCell,
    LatencyRow,
    Rollup,
    RunRow,
)
from kconform.spark_reports.runs import RunDirectory, find_runs
from kconform.spark_reports.synth import synthesise
from kconform.traces import OUTCOMES, SCHEMA

from ..support.rollup_tables import T0_US, Row, assert_rollup, write_run

OUTCOME_FIELDS = dict(
    zip(OUTCOMES, ("passed", "diverged", "errors", "timeouts", "closed", "skipped"), strict=True)
)


def iso(micros: int) -> str:
    return (
        (datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=micros)).isoformat().replace("+00:00", "Z")
    )


def tenth(value: float) -> float:
    """As the engines round: to 0.001 (the exact value has at most three decimals), then to 0.1."""
    return round(round(float(value), 3), 1)


# --- b. a synthetic table, checked a third way ------------------------------------------------------


@pytest.fixture(scope="module")
def synthetic_runs(tmp_path_factory: pytest.TempPathFactory) -> list[RunDirectory]:
    root = tmp_path_factory.mktemp("synthetic").resolve()
    synthesise(root, 60_000, catalogue=api_catalogue(), seed=11, runs=2, chaos_runs=1, row_group_rows=12_000)
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


def all_suspect(grid: list[GridCell]) -> list[dict]:
    """The synthetic summaries record no causes, so no verdict says who deviates: every diverged
    exchange is a suspect on its target."""
    return [
        {"target": c.target, "api_key": c.api_key, "api_label": c.api_name, "api_version": c.api_version}
        | {"deviates": 0, "unknown": c.diverged}
        for c in grid
        if c.diverged
    ]


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
            )
            for r in clusters.to_pylist()
        ),
        key=lambda c: c.signature,
    )
    per_target = diverged.group_by(["signature", "run_dir", "target"]).aggregate([("seq", "count")])
    pair_counts = [
        {"signature": r["signature"], "run_dir": r["run_dir"], "target": r["target"], "n": r["seq_count"]}
        for r in per_target.to_pylist()
    ]

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
    rollup = Rollup(grid, divergences, latency, run_rows, [], exchanges=exchanges.num_rows)
    attribute(rollup, runs, blame_counts=all_suspect(grid), pair_counts=pair_counts, felt_counts=[])
    return rollup


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
    """The roll-up less what comes of chaos runs (their verdicts and how their faults were felt),
    which the hand table checks."""
    found = Rollup(rollup.grid, rollup.divergences, rollup.latency, rollup.runs, [], rollup.exchanges)
    found.crashes, found.offered = rollup.crashes, rollup.offered
    found.replays, found.diff_runs = rollup.replays, rollup.diff_runs
    return found


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
    run_ids_to_dir = {r.run_id: i for i, r in enumerate(runs)}

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
    rollup = Rollup(grid, divergences, latency, run_rows, [], exchanges)
    per_target: dict[tuple[str, int, str], int] = defaultdict(int)
    for signature, members in clusters.items():
        for run_id, row in members:
            per_target[(signature, run_ids_to_dir[run_id], row.target)] += 1
    pair_counts = [{"signature": s, "run_dir": d, "target": t, "n": n} for (s, d, t), n in per_target.items()]
    felt: dict[tuple[str, str, bool, str], int] = defaultdict(int)
    for _, row in rows:
        if row.api_key >= 0 and row.api_version < 0:
            felt[(row.case_id or "?", row.target, bool(row.faults), row.outcome)] += 1
    felt_counts = [dict(zip((*FELT_KEYS, "n"), (*key, n), strict=True)) for key, n in felt.items()]
    attribute(rollup, runs, blame_counts=all_suspect(grid), pair_counts=pair_counts, felt_counts=felt_counts)
    return rollup


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
