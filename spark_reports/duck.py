"""The roll-up again, in DuckDB SQL: the same numbers from the same Parquet by an independent engine and
independent code (it shares only the row model and the run finder with the Spark job), so that the two
agreeing is evidence that both are right. It also serves where no Java is installed.

The rules are the Spark job's (see ``rollup.py``): fault rows (api_key -1) are no exchanges; chaos
operation rows (api_version -1) stay out of the grid only; an exchange counts in the latency row of
each active fault, or of ``NO_FAULT``; percentiles by linear interpolation (``quantile_cont``)."""

from __future__ import annotations

from pathlib import Path

from kconform.traces import SCHEMA

from .attribution import BLAME_KEYS, FELT_KEYS, attribute
from .findings import DEVIATES, SUSPECT, blame_rows
from .model import NO_FAULT, DivergenceCluster, GridCell, LatencyRow, Rollup, RunRow, latency_tenth, utc_iso
from .rules import COUNT_KEYS, RESULT_COLUMNS, rules_part
from .runs import RunDirectory, chaos_verdicts, raise_for_bad_trace_file

__all__ = ["duckdb_rollup"]

GRID_SQL = """
SELECT api_key, api_label, api_version, target,
       count(*),
       count(*) FILTER (outcome = 'pass'),
       count(*) FILTER (outcome = 'diverge'),
       count(*) FILTER (outcome = 'error'),
       count(*) FILTER (outcome = 'timeout'),
       count(*) FILTER (outcome = 'closed'),
       count(*) FILTER (outcome = 'skipped')
FROM traces
WHERE api_key >= 0 AND api_version >= 0
GROUP BY ALL
"""

DIVERGENCE_SQL = """
WITH fields AS (
    SELECT api_key, api_label, api_version, case_id, target, run_id,
           unnest(CASE WHEN len(signatures) > 0 THEN signatures ELSE [signature] END) AS field_signature
    FROM traces
    WHERE outcome = 'diverge'
)
SELECT field_signature, min(api_key), min(api_label), min(api_version), count(*), count(DISTINCT case_id),
       list_sort(list_distinct(list(target))), list_sort(list_distinct(list(run_id)))
FROM fields
WHERE field_signature IS NOT NULL
GROUP BY field_signature
"""

PAIRS_SQL = """
WITH fields AS (
    SELECT run_dir, target,
           unnest(CASE WHEN len(signatures) > 0 THEN signatures ELSE [signature] END) AS signature
    FROM traces
    WHERE outcome = 'diverge'
)
SELECT signature, run_dir, target, count(*) AS n FROM fields WHERE signature IS NOT NULL GROUP BY ALL
"""

BLAME_SQL = """
WITH fields AS (
    SELECT run_dir, run_id, seq, target, api_key, api_label, api_version,
           unnest(CASE WHEN len(signatures) > 0 THEN signatures ELSE [signature] END) AS signature
    FROM traces
    WHERE outcome = 'diverge' AND api_version >= 0
), judged AS (
    SELECT f.run_dir, f.run_id, f.seq, f.target, f.api_key, f.api_label, f.api_version,
           max(coalesce(b.status, $suspect)) AS status
    FROM fields f LEFT JOIN blame b
      ON f.run_id = b.run_id AND f.signature = b.signature AND f.target = b.target
    GROUP BY ALL
)
SELECT target, api_key, api_label, api_version,
       count(*) FILTER (status = $deviates) AS deviates, count(*) FILTER (status = $suspect) AS unknown
FROM judged GROUP BY ALL
"""

FELT_SQL = """
SELECT coalesce(case_id, '?') AS scenario, target, coalesce(len(faults), 0) > 0 AS faulted, outcome,
       count(*) AS n
FROM traces
WHERE api_key >= 0 AND api_version < 0
GROUP BY ALL
"""

LATENCY_SQL = """
WITH labelled AS (
    SELECT target, api_label, latency_us,
           unnest(CASE WHEN len(faults) > 0 THEN faults ELSE [NULL] END) AS fault
    FROM traces
    WHERE latency_us IS NOT NULL AND api_key >= 0
)
SELECT target, api_label, coalesce(fault, $no_fault) AS fault_label, count(*),
       quantile_cont(latency_us, [0.5, 0.99, 0.999])
FROM labelled
GROUP BY ALL
"""

RUNS_SQL = """
SELECT run_id, run_dir,
       coalesce(list_sort(list_distinct(list(target) FILTER (api_key >= 0))), []),
       count(*) FILTER (api_key >= 0),
       count(*) FILTER (api_key >= 0 AND outcome = 'pass'),
       count(*) FILTER (api_key >= 0 AND outcome = 'diverge'),
       count(*) FILTER (api_key >= 0 AND outcome IN ('error', 'timeout', 'closed')),
       epoch_us(min(started_at))
FROM traces
GROUP BY run_id, run_dir
"""


def duckdb_rollup(runs: list[RunDirectory]) -> Rollup:
    import duckdb

    rollup = Rollup(chaos=chaos_verdicts(runs))
    with duckdb.connect() as db:
        _add_rules(db, rollup, runs)
        if not _create_traces_view(db, runs):
            attribute(rollup, runs, blame_counts=[], pair_counts=[], felt_counts=[])
            return rollup
        try:
            # sorted here rather than in SQL, so the order is Python's, as in the Spark job
            cells = [GridCell(*row) for row in db.execute(GRID_SQL).fetchall()]
            rollup.grid = sorted(cells, key=lambda c: (c.api_key, c.api_name, c.api_version, c.target))
            rollup.divergences = _divergences(db)
            rollup.latency = _latency(db)
            rollup.runs = _runs(db, runs)
            rollup.exchanges = db.execute("SELECT count(*) FROM traces WHERE api_key >= 0").fetchone()[0]
            pair_counts = _dicts(db.execute(PAIRS_SQL))
            blame_counts = _blame_counts(db, runs)
            felt_counts = [
                dict(zip((*FELT_KEYS, "n"), r, strict=True)) for r in db.execute(FELT_SQL).fetchall()
            ]
        except duckdb.Error as exc:  # a file that went bad after find_runs checked its footer
            # DuckDB names the file for some failures only (an undecodable page: "don't know what
            # type"), so each file may have to be read through on its own to find the one at fault
            raise_for_bad_trace_file("DuckDB", exc, runs, lambda part: _readable(db, part))
            raise
    attribute(rollup, runs, blame_counts=blame_counts, pair_counts=pair_counts, felt_counts=felt_counts)
    return rollup


def _blame_counts(db, runs: list[RunDirectory]) -> list[dict]:
    import pyarrow as pa

    blame = blame_rows(runs)
    table = pa.table(
        {
            "run_id": pa.array([b.run_id for b in blame], pa.string()),
            "signature": pa.array([b.signature for b in blame], pa.string()),
            "target": pa.array([b.target for b in blame], pa.string()),
            "status": pa.array([b.status for b in blame], pa.int32()),
        }
    )
    db.register("blame", table)
    rows = _dicts(db.execute(BLAME_SQL, {"deviates": DEVIATES, "suspect": SUSPECT}))
    return [
        {k: row[k] for k in BLAME_KEYS} | {"deviates": row["deviates"], "unknown": row["unknown"]}
        for row in rows
    ]


def _add_rules(db, rollup: Rollup, runs: list[RunDirectory]) -> None:
    """The conformance runs' rule rows: counts by rule and outcome, and the tests that did not pass."""
    import duckdb

    selects = [
        f"SELECT *, {i} AS run_dir FROM read_parquet([{', '.join(_literal(p) for p in run.rule_files)}])"
        for i, run in enumerate(runs)
        if run.rule_files
    ]
    if not selects:
        return
    db.execute(f"CREATE VIEW rule_rows AS {' UNION ALL '.join(selects)}")
    keys = ", ".join(COUNT_KEYS)
    try:
        counted = db.execute(
            f"SELECT {keys}, count(*) AS n, epoch_us(min(started_at)) AS first_us FROM rule_rows GROUP BY ALL"
        )
        counts = _dicts(counted)
        failed = db.execute(
            f"SELECT {', '.join(RESULT_COLUMNS)} FROM rule_rows WHERE outcome IN ('fail', 'error')"
        )
        results = _dicts(failed)
    except duckdb.Error as exc:
        files = lambda run: run.rule_files  # noqa: E731
        raise_for_bad_trace_file("DuckDB", exc, runs, lambda part: _readable(db, part), files)
        raise
    part = rules_part(counts, results, runs)
    rollup.rules, rollup.ledger, rollup.rule_results = part.cells, part.ledger, part.results
    rollup.rule_runs, rollup.rule_status = part.runs, part.status


def _dicts(cursor) -> list[dict]:
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def _create_traces_view(db, runs: list[RunDirectory]) -> bool:
    """A ``traces`` view over every run's files, with the run directory's index and an API label."""
    selects = []
    for index, run in enumerate(runs):
        if run.trace_files:
            files = ", ".join(_literal(p) for p in run.trace_files)
            # union_by_name: files of an older schema version (a run resumed after an upgrade) lack a
            # column the others have; a column no file of the run has is null
            columns = ", ".join(
                f"NULL::{_SQL_TYPES[name]} AS {name}" if name in run.absent_columns else name
                for name in SCHEMA.names
            )
            selects.append(
                f"SELECT {columns}, {index} AS run_dir FROM read_parquet([{files}], union_by_name = true)"
            )
    if not selects:
        return False
    union = " UNION ALL ".join(selects)
    db.execute(
        "CREATE VIEW traces AS SELECT *, coalesce(api_name, 'api-' || api_key::VARCHAR) AS api_label "
        f"FROM ({union})"
    )
    return True


_SQL_TYPES = {"signatures": "VARCHAR[]"}  # the columns a file may lack (runs.ADDED_COLUMNS)


def _literal(path: Path) -> str:
    return "'" + str(path).replace("'", "''") + "'"


def _divergences(db) -> list[DivergenceCluster]:
    clusters = [
        DivergenceCluster(signature, key, name, version, exchanges, cases, tuple(targets), tuple(run_ids))
        for signature, key, name, version, exchanges, cases, targets, run_ids in db.sql(
            DIVERGENCE_SQL
        ).fetchall()
    ]
    return sorted(clusters, key=lambda c: c.signature)


def _latency(db) -> list[LatencyRow]:
    rows = db.execute(LATENCY_SQL, {"no_fault": NO_FAULT}).fetchall()
    latency = [
        LatencyRow(target, name, fault, n, latency_tenth(p[0]), latency_tenth(p[1]), latency_tenth(p[2]))
        for target, name, fault, n, p in rows
    ]
    return sorted(latency, key=lambda r: (r.target, r.api_name, r.fault))


def _runs(db, runs: list[RunDirectory]) -> list[RunRow]:
    rows = []
    for run_id, index, targets, exchanges, passed, diverged, errors, first in db.execute(RUNS_SQL).fetchall():
        rows.append(
            RunRow(
                run_id,
                runs[index].kind,
                tuple(targets),
                exchanges,
                passed,
                diverged,
                errors,
                utc_iso(first),
                str(runs[index].path),
            )
        )
    return sorted(rows, key=lambda r: (r.run_id, r.directory))


def _readable(db, part: Path) -> bool:
    import duckdb

    try:
        for _ in db.execute(f"SELECT * FROM read_parquet({_literal(part)})").fetch_record_batch():
            pass
    except duckdb.Error:
        return False
    return True
