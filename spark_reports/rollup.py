"""The roll-up in Spark: every run's traces read as one DataFrame, folded into the dashboard's rows.

Three aggregations, each scanning only the Parquet columns it needs:
- outcome counts by run, target, API, version and outcome (a few thousand rows however many traces),
  from which the grid, the run rows and the total are summed on the driver;
- divergence clusters, over the ``diverge`` rows, one for each field signature a row carries;
- exact latency percentiles by target, API and fault (Spark's ``percentile``: linear interpolation
  between closest ranks, like DuckDB's ``quantile_cont``).

What counts where:
- Fault rows (api_key -1, written by chaos runs when a fault starts or ends) are events, not exchanges:
  they count nowhere but in a run's start time.
- Chaos operation rows (api_version -1: a client operation, not one wire request at one version) count
  in the run rows, the total and the latency table, but not in the grid, which is by protocol version.
- An exchange under two faults counts in the latency row of each; one under none in ``NO_FAULT``.
- A row without an API name is labelled ``api-<key>``.

Nothing here assumes the driver's disk beyond reading the run directories' JSON, so the same code runs
on a cluster given a master URL, as long as the executors see the same paths."""

from __future__ import annotations

from functools import reduce
from typing import TYPE_CHECKING

import pyarrow as pa

from kconform.traces import SCHEMA
from kconform.traces.rules import RULE_SCHEMA

from .attribution import BLAME_KEYS, FELT_KEYS, attribute
from .findings import DEVIATES, SUSPECT, blame_rows
from .model import NO_FAULT, DivergenceCluster, GridCell, LatencyRow, Rollup, RunRow, latency_tenth, utc_iso
from .rules import COUNT_KEYS, RESULT_COLUMNS, rules_part
from .runs import RunDirectory, chaos_verdicts, raise_for_bad_trace_file

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import DataType, StructType

__all__ = ["spark_rollup", "spark_schema"]

PERCENTILES = (0.5, 0.99, 0.999)
ERROR_OUTCOMES = ("error", "timeout", "closed")


def spark_schema(schema: pa.Schema = SCHEMA) -> StructType:
    """The trace schema (``kconform.traces.SCHEMA``), or another Arrow schema, as Spark types."""
    from pyspark.sql.types import StructField, StructType

    return StructType([StructField(f.name, _spark_type(f.type), f.nullable) for f in schema])


def _spark_type(arrow: pa.DataType) -> DataType:
    from pyspark.sql import types as T

    if pa.types.is_list(arrow):
        return T.ArrayType(_spark_type(arrow.value_type))
    simple = {
        pa.string(): T.StringType(),
        pa.int16(): T.ShortType(),
        pa.int32(): T.IntegerType(),
        pa.int64(): T.LongType(),
        pa.bool_(): T.BooleanType(),
    }
    if pa.types.is_timestamp(arrow):
        return T.TimestampType()
    if arrow not in simple:
        raise TypeError(f"no Spark type for trace column type {arrow}")
    return simple[arrow]


def spark_rollup(runs: list[RunDirectory], spark: SparkSession) -> Rollup:
    """Roll the runs' traces up with ``spark``; the chaos verdicts come from their chaos.json files."""
    rollup = Rollup(chaos=chaos_verdicts(runs))
    _add_rules(rollup, runs, spark)
    traces = _traces(runs, spark)
    if traces is None:
        attribute(rollup, runs, blame_counts=[], pair_counts=[], felt_counts=[])
        return rollup
    try:
        counts = _outcome_counts(traces, runs)
        rollup.divergences, pair_counts = _divergences(traces)
        rollup.latency = _latency(traces)
    except Exception as exc:  # a file that went bad after find_runs checked its footer
        raise_for_bad_trace_file("Spark", exc, runs)
        raise
    rollup.grid = _grid(counts)
    rollup.runs = _run_rows(counts, runs)
    rollup.exchanges = sum(row["n"] for row in counts if row["api_key"] >= 0)
    blame_counts, felt_counts = _blame_and_felt(counts)
    attribute(rollup, runs, blame_counts=blame_counts, pair_counts=pair_counts, felt_counts=felt_counts)
    return rollup


def _add_rules(rollup: Rollup, runs: list[RunDirectory], spark: SparkSession) -> None:
    """The conformance runs' rule rows: counts by rule and outcome, and the tests that did not pass."""
    from pyspark.sql import DataFrame
    from pyspark.sql import functions as F

    schema = spark_schema(RULE_SCHEMA)
    frames = [
        spark.read.schema(schema)
        .parquet(*(p.as_uri() for p in run.rule_files))
        .withColumn("run_dir", F.lit(i))
        for i, run in enumerate(runs)
        if run.rule_files
    ]
    if not frames:
        return
    rows = reduce(DataFrame.unionByName, frames)
    try:
        grouped = rows.groupBy(*COUNT_KEYS).agg(
            F.count(F.lit(1)).alias("n"), F.unix_micros(F.min("started_at")).alias("first_us")
        )
        counts = [row.asDict() for row in grouped.collect()]
        failed = rows.where(F.col("outcome").isin("fail", "error")).select(*RESULT_COLUMNS)
        results = [row.asDict() for row in failed.collect()]
    except Exception as exc:  # a file that went bad after find_runs checked its footer
        raise_for_bad_trace_file("Spark", exc, runs, files=lambda run: run.rule_files)
        raise
    part = rules_part(counts, results, runs)
    rollup.rules, rollup.ledger, rollup.rule_results = part.cells, part.ledger, part.results
    rollup.rule_runs, rollup.rule_status = part.runs, part.status


def _traces(runs: list[RunDirectory], spark: SparkSession) -> DataFrame | None:
    """Every run's trace files, tagged with the index of their run directory."""
    from pyspark.sql import DataFrame
    from pyspark.sql import functions as F

    schema = spark_schema()
    frames = [
        spark.read.schema(schema)
        .parquet(*(p.as_uri() for p in run.trace_files))
        .withColumn("run_dir", F.lit(i))
        for i, run in enumerate(runs)
        if run.trace_files
    ]
    if not frames:
        return None
    traces = reduce(DataFrame.unionByName, frames)
    fallback = F.concat(F.lit("api-"), F.col("api_key").cast("string"))
    return traces.withColumn("api_label", F.coalesce(F.col("api_name"), fallback))


def _outcome_counts(traces: DataFrame, runs: list[RunDirectory]) -> list[dict]:
    """Counts by run, target, API, version and outcome, in one scan with what the attribution needs:
    a diverged exchange's ``status`` (what the verdicts say of its target, the worst over its
    signatures) and, for a chaos operation, its scenario and whether a fault was active."""
    from pyspark.sql import functions as F

    operation = (F.col("api_key") >= 0) & (F.col("api_version") < 0)
    keys = ["run_dir", "run_id", "target", "api_key", "api_label", "api_version", "outcome"]
    grouped = traces.groupBy(
        *keys,
        _status(runs).alias("status"),
        F.when(operation, F.coalesce(F.col("case_id"), F.lit("?"))).alias("scenario"),
        F.when(operation, F.coalesce(F.size("faults"), F.lit(0)) > 0).alias("faulted"),
    ).agg(F.count(F.lit(1)).alias("n"), F.unix_micros(F.min("started_at")).alias("first_us"))
    return [row.asDict() for row in grouped.collect()]


def _status(runs: list[RunDirectory]):
    """For a diverged exchange of the grid, the worst status (``findings.CLEAR``, ``SUSPECT``,
    ``DEVIATES``) its signatures' verdicts give its target, a signature without one being a suspect;
    null for any other row. The verdicts are a few hundred entries: a map in the plan, looked up per
    row, costs no join and no shuffle."""
    from pyspark.sql import functions as F

    suspect = F.lit(SUSPECT)
    blame = blame_rows(runs)
    if blame:
        table = F.create_map(
            *(x for b in blame for x in (F.lit(_blame_key(b.run_id, b.signature, b.target)), F.lit(b.status)))
        )
        looked = F.transform(
            _every_signature(),
            lambda s: F.coalesce(
                F.try_element_at(table, F.concat_ws("\x1f", F.col("run_id"), s, F.col("target"))), suspect
            ),
        )
        worst = F.array_max(looked)
    else:
        worst = suspect
    return F.when((F.col("outcome") == "diverge") & (F.col("api_version") >= 0), worst)


def _blame_key(run_id: str, signature: str, target: str) -> str:
    return f"{run_id}\x1f{signature}\x1f{target}"


def _blame_and_felt(counts: list[dict]) -> tuple[list[dict], list[dict]]:
    """The attribution's rows from the outcome counts: per grid cell the diverged exchanges its target
    deviates in and is a suspect in; per chaos scenario, target, fault state and outcome, operations."""
    cells: dict[tuple, dict[str, int]] = {}
    felt: dict[tuple, int] = {}
    for row in counts:
        if row["status"] is not None:
            cell = cells.setdefault(tuple(row[k] for k in BLAME_KEYS), {"deviates": 0, "unknown": 0})
            cell["deviates"] += row["n"] if row["status"] == DEVIATES else 0
            cell["unknown"] += row["n"] if row["status"] == SUSPECT else 0
        if row["scenario"] is not None:
            key = (row["scenario"], row["target"], row["faulted"], row["outcome"])
            felt[key] = felt.get(key, 0) + row["n"]
    blame = [dict(zip(BLAME_KEYS, key, strict=True)) | tally for key, tally in cells.items()]
    return blame, [dict(zip(FELT_KEYS, key, strict=True)) | {"n": n} for key, n in felt.items()]


def _grid(counts: list[dict]) -> list[GridCell]:
    cells: dict[tuple, dict[str, int]] = {}
    for row in counts:
        if row["api_key"] < 0 or row["api_version"] < 0:
            continue
        key = (row["api_key"], row["api_label"], row["api_version"], row["target"])
        tally = cells.setdefault(key, dict.fromkeys(("total", *_OUTCOME_FIELDS.values()), 0))
        tally["total"] += row["n"]
        if row["outcome"] in _OUTCOME_FIELDS:
            tally[_OUTCOME_FIELDS[row["outcome"]]] += row["n"]
    return [
        GridCell(api_key=k, api_name=name, api_version=v, target=t, **tally)
        for (k, name, v, t), tally in sorted(cells.items())
    ]


_OUTCOME_FIELDS = {
    "pass": "passed",
    "diverge": "diverged",
    "error": "errors",
    "timeout": "timeouts",
    "closed": "closed",
    "skipped": "skipped",
}


def _run_rows(counts: list[dict], runs: list[RunDirectory]) -> list[RunRow]:
    tallies: dict[tuple[str, int], dict] = {}
    for row in counts:
        tally = tallies.setdefault(
            (row["run_id"], row["run_dir"]),
            {
                "targets": set(),
                "exchanges": 0,
                "passed": 0,
                "diverged": 0,
                "errors": 0,
                "first": row["first_us"],
            },
        )
        tally["first"] = min(tally["first"], row["first_us"])
        if row["api_key"] < 0:
            continue
        tally["targets"].add(row["target"])
        tally["exchanges"] += row["n"]
        tally["passed"] += row["n"] if row["outcome"] == "pass" else 0
        tally["diverged"] += row["n"] if row["outcome"] == "diverge" else 0
        tally["errors"] += row["n"] if row["outcome"] in ERROR_OUTCOMES else 0
    rows = [
        RunRow(
            run_id=run_id,
            kind=runs[index].kind,
            targets=tuple(sorted(t["targets"])),
            exchanges=t["exchanges"],
            passed=t["passed"],
            diverged=t["diverged"],
            errors=t["errors"],
            started_at=utc_iso(t["first"]),
            directory=str(runs[index].path),
        )
        for (run_id, index), t in tallies.items()
    ]
    return sorted(rows, key=lambda r: (r.run_id, r.directory))


def _every_signature():
    """Every field an exchange differs in (``signatures``); files older than that column have only the
    first (``signature``)."""
    from pyspark.sql import functions as F

    return F.when(F.size("signatures") > 0, F.col("signatures")).otherwise(F.array("signature"))


def _divergences(traces: DataFrame) -> tuple[list[DivergenceCluster], list[dict]]:
    """The clusters, and the rows (signature, run_dir, target, n) their compared pairs are counted from."""
    from pyspark.sql import functions as F

    # read once for both aggregations below: the clusters and the per-target counts of their pairs
    diverged = (
        traces.where(F.col("outcome") == "diverge")
        .select(
            "run_dir", "run_id", "target", "case_id", "api_key", "api_label", "api_version",
            F.explode(_every_signature()).alias("signature"),
        )
        .where(F.col("signature").isNotNull())
        .persist()
    )  # fmt: skip
    grouped = diverged.groupBy("signature").agg(
        F.min("api_key").alias("api_key"),
        F.min("api_label").alias("api_name"),
        F.min("api_version").alias("api_version"),
        F.count(F.lit(1)).alias("exchanges"),
        F.countDistinct("case_id").alias("cases"),
        F.sort_array(F.collect_set("target")).alias("targets"),
        F.sort_array(F.collect_set("run_id")).alias("runs"),
    )
    clusters = [
        DivergenceCluster(
            signature=row["signature"],
            api_key=row["api_key"],
            api_name=row["api_name"],
            api_version=row["api_version"],
            exchanges=row["exchanges"],
            cases=row["cases"],
            targets=tuple(row["targets"]),
            runs=tuple(row["runs"]),
        )
        for row in grouped.collect()
    ]
    per_target = diverged.groupBy("signature", "run_dir", "target").agg(F.count(F.lit(1)).alias("n"))
    pairs = [row.asDict() for row in per_target.collect()]
    diverged.unpersist()
    return sorted(clusters, key=lambda c: c.signature), pairs


def _latency(traces: DataFrame) -> list[LatencyRow]:
    from pyspark.sql import functions as F

    timed = traces.where(F.col("latency_us").isNotNull() & (F.col("api_key") >= 0))
    # explode_outer keeps an exchange under no fault (an empty list) as one row with a null label
    exploded = timed.select("target", "api_label", "latency_us", F.explode_outer("faults").alias("fault"))
    labelled = exploded.withColumn("fault", F.coalesce(F.col("fault"), F.lit(NO_FAULT)))
    grouped = labelled.groupBy("target", "api_label", "fault").agg(
        F.count(F.lit(1)).alias("n"),
        F.percentile(F.col("latency_us"), list(PERCENTILES)).alias("p"),
    )
    rows = [
        LatencyRow(
            target=row["target"],
            api_name=row["api_label"],
            fault=row["fault"],
            exchanges=row["n"],
            p50_us=latency_tenth(row["p"][0]),
            p99_us=latency_tenth(row["p"][1]),
            p999_us=latency_tenth(row["p"][2]),
        )
        for row in grouped.collect()
    ]
    return sorted(rows, key=lambda r: (r.target, r.api_name, r.fault))
