"""The Spark job runs unchanged on a Spark cluster: a standalone Master and one Worker (1 core, 1 GiB)
started here from pyspark's own launcher, the roll-up run against them by master URL (in this process,
and through ``kconform report --master``), and the numbers equal to the DuckDB roll-up's.

The Master and Worker are processes of their own session (process group), killed as a group when the
module is done, executors included; every wait has a timeout."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from kconform.harness.catalogue import api_catalogue
from kconform.spark_reports.duck import duckdb_rollup
from kconform.spark_reports.report_cases import copy_cases
from kconform.spark_reports.runs import RunDirectory, find_runs
from kconform.spark_reports.standalone import Cluster, ClusterError, cluster_env, standalone_cluster
from kconform.spark_reports.synth import synthesise
from kconform.traces import read_traces

pytestmark = pytest.mark.slow

JOB_TIMEOUT = 300.0  # seconds for one roll-up on the cluster


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A Master and one Worker of 1 core and 1 GiB (``spark_reports/standalone.py``)."""
    try:
        with standalone_cluster(tmp_path_factory.mktemp("cluster"), cores=1, memory="1g") as cluster:
            yield cluster
    except ClusterError as exc:
        pytest.fail(str(exc))


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> list[RunDirectory]:
    root = tmp_path_factory.mktemp("cluster-runs").resolve()
    synthesise(root, 20_000, catalogue=api_catalogue(), seed=5, runs=1, chaos_runs=1, row_group_rows=5_000)
    return find_runs([root])


def exchanges_in(runs: list[RunDirectory]) -> int:
    table = read_traces([r.path for r in runs])
    return sum(1 for key in table["api_key"].to_pylist() if key >= 0)


def test_spark_rollup_on_the_cluster_equals_duckdb(
    cluster: Cluster, runs: list[RunDirectory], monkeypatch: pytest.MonkeyPatch
) -> None:
    from kconform.spark_reports.rollup import spark_rollup
    from kconform.spark_reports.session import spark_session

    for name in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "SPARK_LOCAL_IP"):
        monkeypatch.setenv(name, cluster_env()[name])
    with spark_session(master=cluster.url) as spark:
        assert spark.sparkContext.master == cluster.url
        app_id = spark.sparkContext.applicationId
        # a job waiting for resources the cluster lacks would wait for ever: cancel it instead
        watchdog = threading.Timer(JOB_TIMEOUT, spark.sparkContext.cancelAllJobs)
        watchdog.start()
        try:
            found = spark_rollup(runs, spark)
        finally:
            watchdog.cancel()
    expected = duckdb_rollup(runs)
    assert found.exchanges == expected.exchanges == exchanges_in(runs) > 19_000
    assert found.grid == expected.grid
    assert found.divergences == expected.divergences
    assert found.latency == expected.latency
    assert found.runs == expected.runs
    assert found == expected
    # the work ran in an executor the Worker started, not in the driver
    assert app_id.startswith("app-"), app_id
    assert list((cluster.work_dir / app_id).glob("*/stderr")), f"no executor of {app_id} ran on the Worker"


def test_kconform_report_with_master(cluster: Cluster, runs: list[RunDirectory], tmp_path: Path) -> None:
    out = tmp_path / "report"
    run_dirs = [str(r.path) for r in runs]
    command = [sys.executable, "-m", "kconform.harness.cli", "report", *run_dirs, "--out", str(out)]
    started = len(list(cluster.work_dir.glob("app-*")))
    result = subprocess.run(
        [*command, "--master", cluster.url],
        env=cluster_env(),
        capture_output=True,
        text=True,
        timeout=JOB_TIMEOUT,
    )
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr[-4000:]}"
    assert f"starting Spark ({cluster.url})" in result.stderr
    for name in ("index.html", "summary.json", "junit.xml"):
        assert (out / name).stat().st_size > 0, name
    summary = json.loads((out / "summary.json").read_text())
    # the report copies its cases beside itself and names them relative to it
    expected = json.loads(json.dumps(copy_cases(duckdb_rollup(runs), tmp_path / "scratch").to_json()))
    assert all((out / d["example_case"]).is_file() for d in summary["divergences"] if d["example_case"])
    assert summary["totals"]["exchanges"] == expected["exchanges"] == exchanges_in(runs)
    assert summary["totals"]["runs"] == len(runs) == 2
    assert summary["totals"]["grid_cells"] == len(expected["grid"])
    assert summary["totals"]["divergence_signatures"] == len(expected["divergences"])
    for part in ("grid", "divergences", "latency", "runs", "chaos"):
        assert summary[part] == expected[part], part
    assert len(list(cluster.work_dir.glob("app-*"))) == started + 1  # the report ran on the cluster
