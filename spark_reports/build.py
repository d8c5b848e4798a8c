"""``build_dashboard``: from run directories to a report folder, the whole pipeline in one call.

find the runs -> roll their traces up (Spark, or DuckDB for a quick look) -> compare with the previous
report -> copy the stored cases it names into ``cases/`` -> write ``index.html``, ``summary.json`` and
``junit.xml``, each atomically. Bad input (a
folder that is not a run, a previous report that is not one) is a ``ReportInputError`` raised before
any engine starts, so it costs no Spark start-up to find out."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from contextlib import nullcontext
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .compare import compare
from .dashboard import render_dashboard
from .model import Rollup
from .outputs import SUMMARY_SCHEMA, atomic_write_text, write_junit, write_summary_json
from .report_cases import copy_cases
from .runs import ReportInputError, RunDirectory, find_runs

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["DASHBOARD_FILE", "ENGINES", "JUNIT_FILE", "SUMMARY_FILE", "build_dashboard", "load_previous"]

ENGINES = ("spark", "duckdb")
SUMMARY_FILE = "summary.json"
DASHBOARD_FILE = "index.html"
JUNIT_FILE = "junit.xml"


def load_previous(path: Path | str) -> dict[str, Any]:
    """An earlier report's summary, given its folder or its ``summary.json``."""
    path = Path(path)
    file = path / SUMMARY_FILE if path.is_dir() else path
    what = f"an earlier report's folder or its {SUMMARY_FILE}, as kconform report writes"
    if not file.is_file():
        raise ReportInputError(f"--previous {path}: no {SUMMARY_FILE} there; expected {what}")
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReportInputError(f"--previous {file}: not readable JSON ({exc}); expected {what}") from None
    if not isinstance(data, dict) or data.get("schema") != SUMMARY_SCHEMA:
        found = data.get("schema") if isinstance(data, dict) else type(data).__name__
        raise ReportInputError(
            f"--previous {file}: summary schema {found!r}, this kconform reads schema {SUMMARY_SCHEMA}; "
            f"expected {what}"
        )
    return data


def _roll_up(
    runs: list[RunDirectory],
    engine: str,
    spark: SparkSession | None,
    master: str | None,
    step: Callable[[str], None],
) -> Rollup:
    if engine == "duckdb":
        from .duck import duckdb_rollup

        step(f"rolling up {len(runs)} run(s) with DuckDB")
        return duckdb_rollup(runs)
    from .rollup import spark_rollup
    from .session import spark_session

    if spark is None:
        step(f"starting Spark ({master or 'local mode'})")
    with nullcontext(spark) if spark is not None else spark_session(master) as session:
        step(f"rolling up {len(runs)} run(s) with Spark")
        return spark_rollup(runs, session)


def build_dashboard(
    paths: Iterable[Path | str],
    out_dir: Path | str,
    *,
    previous: Path | str | None = None,
    master: str | None = None,
    engine: str = "spark",
    spark: SparkSession | None = None,
    progress: Callable[[str], None] | None = None,
    title: str = "kconform conformance report",
) -> Path:
    """Write the report for the run directories at or below ``paths`` into ``out_dir``; return the
    path of its ``index.html``. ``spark`` reuses a session (``master`` then does nothing)."""
    if engine not in ENGINES:
        raise ValueError(f"engine {engine!r}: use one of {', '.join(ENGINES)}")
    step = progress or (lambda _: None)
    step("finding run directories")
    runs = find_runs(paths)
    previous_summary = load_previous(previous) if previous is not None else None
    rollup = _roll_up(runs, engine, spark, master, step)
    step("comparing with the previous report" if previous_summary else "writing the report")
    now = datetime.now(UTC)
    generated_at = now.strftime("%Y-%m-%d %H:%M:%S UTC")
    comparison = compare(rollup, previous_summary, now=generated_at)

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rollup = copy_cases(rollup, out)
    write_summary_json(out / SUMMARY_FILE, rollup, comparison, generated_at=generated_at, title=title)
    write_junit(out / JUNIT_FILE, rollup, timestamp=now.strftime("%Y-%m-%dT%H:%M:%S"))
    page = render_dashboard(rollup, comparison, title=title, generated_at=generated_at)
    atomic_write_text(out / DASHBOARD_FILE, page)
    step("done")
    return out / DASHBOARD_FILE
