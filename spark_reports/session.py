"""A SparkSession for the roll-up: local mode on every core by default, any master by URL.

Spark's own console output is cut down to warnings by ``log4j2.properties`` beside this module (it is
passed to the driver JVM, which is where the console is; executors on a cluster log to their workers).
The local settings suit a small machine: a handful of shuffle partitions instead of 200, the driver's
heap large enough for exact percentiles over millions of rows, no web UI, and every port the driver
opens (its RPC endpoint, the block manager) on loopback, so a report run opens nothing to the network."""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "LOG_CONFIG",
    "SparkUnavailable",
    "choose_engine",
    "duckdb_installed",
    "spark_problem",
    "spark_session",
]

LOG_CONFIG = Path(__file__).with_name("log4j2.properties")
DRIVER_MEMORY = "4g"


class SparkUnavailable(RuntimeError):
    """Spark cannot start here: no Java, or no pyspark."""


def _java_found() -> bool:
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        return (Path(java_home) / "bin" / "java").is_file()
    return shutil.which("java") is not None


def _settings(master: str) -> dict[str, str]:
    cores = os.cpu_count() or 2
    settings = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.adaptive.enabled": "true",
        "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile={LOG_CONFIG.as_uri()}",
    }
    if master.startswith("local"):
        # The executors live in the driver's JVM, so its heap is all there is; the roll-up's shuffles
        # carry a few thousand groups, so two partitions per core beat the default 200.
        settings["spark.driver.memory"] = DRIVER_MEMORY
        settings["spark.sql.shuffle.partitions"] = str(2 * cores)
        # on a cluster the executors must reach the driver; in local mode nothing outside does
        settings["spark.driver.bindAddress"] = "127.0.0.1"
        settings["spark.driver.host"] = "127.0.0.1"
    return settings


def spark_problem() -> str | None:
    """Why Spark cannot start here (no pyspark, no Java), found without starting it; None when it can."""
    if importlib.util.find_spec("pyspark") is None:
        return "pyspark is not installed: pip install 'kconform[spark]'"
    if not _java_found():
        return (
            "Spark needs Java 17 or newer and none was found: install a JDK and put java on PATH or set "
            "JAVA_HOME"
        )
    return None


def duckdb_installed() -> bool:
    return importlib.util.find_spec("duckdb") is not None


def choose_engine(
    requested: str, spark_problem: str | None, duckdb_installed: bool
) -> tuple[str, str | None]:
    """The engine a run will roll up with, and a warning when it is not the one asked for, decided before
    any work starts. Spark that cannot start gives way to DuckDB where it is installed; a ValueError
    says why neither can run."""
    if requested == "duckdb" and not duckdb_installed:
        raise ValueError("the DuckDB engine is not installed: pip install 'kconform[spark]'")
    if requested != "spark" or spark_problem is None:
        return requested, None
    if duckdb_installed:
        return "duckdb", f"{spark_problem}; rolling up with DuckDB instead"
    raise ValueError(f"{spark_problem} (and DuckDB, the other engine, is not installed either)")


@contextmanager
def spark_session(master: str | None = None, *, app_name: str = "kconform-report") -> Iterator[SparkSession]:
    """``with spark_session() as spark: ...``; the session is stopped on leaving the block."""
    problem = spark_problem()
    if problem is not None:
        raise SparkUnavailable(f"{problem} (or use the DuckDB engine)")
    from pyspark.sql import SparkSession

    master = master or "local[*]"
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in _settings(master).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    try:
        yield spark
    finally:
        spark.stop()
