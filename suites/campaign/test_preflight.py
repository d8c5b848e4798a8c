"""What the campaign needs at its end (an engine that can roll up, a writable out directory) is checked
before any work: a missing need ends it at once with one line and exit 2, and a Spark that cannot start
gives way to DuckDB with a warning."""

from __future__ import annotations

import time

import pytest
from click.testing import CliRunner

from kconform.harness.cli import cli
from kconform.spark_reports import session
from kconform.spark_reports.session import choose_engine, spark_problem


def test_the_engine_is_chosen_before_the_work_and_says_why_it_changed():
    assert choose_engine("spark", None, duckdb_installed=True) == ("spark", None)
    engine, warning = choose_engine("spark", "no java", duckdb_installed=True)
    assert engine == "duckdb" and warning.startswith("no java") and "DuckDB instead" in warning
    assert choose_engine("duckdb", "no java", duckdb_installed=True) == ("duckdb", None)
    with pytest.raises(ValueError, match="no java .*DuckDB.*not installed"):
        choose_engine("spark", "no java", duckdb_installed=False)
    with pytest.raises(ValueError, match="DuckDB engine is not installed"):
        choose_engine("duckdb", None, duckdb_installed=False)


def test_hidden_java_is_found_out_without_starting_spark(monkeypatch, tmp_path):
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no java on it
    assert "Java 17" in spark_problem()
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk"))
    assert "Java 17" in spark_problem()


def _campaign(*args: str):
    started = time.monotonic()
    result = CliRunner().invoke(cli, ["campaign", "--targets", "reference", "--no-chaos", *args])
    return result, time.monotonic() - started


def test_no_engine_at_all_ends_the_campaign_at_once(monkeypatch, tmp_path):
    monkeypatch.setattr(session, "spark_problem", lambda: "pyspark is not installed")
    monkeypatch.setattr(session, "duckdb_installed", lambda: False)
    result, seconds = _campaign("--out", str(tmp_path / "c"))
    assert result.exit_code == 2 and seconds < 5, result.output
    lines = result.output.strip().splitlines()
    assert lines[-1].startswith("error: no report could be written: pyspark is not installed")
    assert "Traceback" not in result.output and not list((tmp_path).iterdir())


def test_an_out_directory_that_cannot_be_written_ends_the_campaign_at_once(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    result, seconds = _campaign("--engine", "duckdb", "--out", str(blocker / "campaign"))
    assert result.exit_code == 2 and seconds < 5, result.output
    last = result.output.strip().splitlines()[-1]
    assert last.startswith(f"error: --out {blocker / 'campaign'} is not writable")
    assert "Traceback" not in result.output


def test_progress_is_plain_lines_when_the_output_is_not_a_terminal():
    from types import SimpleNamespace

    from rich.console import Console

    from kconform.harness.cli.campaign import _LineProgress

    console = Console(record=True, width=40, soft_wrap=True)
    now = [0.0]
    progress = _LineProgress(console, every=30, clock=lambda: now[0])
    progress.part_started("conform", "conform reference", 30)
    for t, status in ((10, "quiet"), (31, "120 pass"), (40, "quiet too")):
        now[0] = t
        progress.part_advanced("conform reference", t, status)
    finished = SimpleNamespace(part="conform", targets=("reference",), error=None, headline="done")
    progress.part_finished(finished)
    progress.report_step("starting Spark (local mode)")
    lines = console.export_text().splitlines()
    assert [line.strip().split("  ", 1)[1] for line in lines] == [
        "conform reference: started",
        "conform reference: 120 pass",
        "conform reference: done",
        "report: starting Spark (local mode)",
    ], "one line each, status at most every 30 s, never cut at the console's width"


# --- the real command in a process of its own, with what it needs really out of reach -------------------

HIDE = """
import importlib.abc, importlib.util, sys
HIDDEN = {names!r}
_find_spec = importlib.util.find_spec
def find_spec(name, package=None):
    return None if name.split(".")[0] in HIDDEN else _find_spec(name, package)
importlib.util.find_spec = find_spec
class Hidden(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in HIDDEN:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None
sys.meta_path.insert(0, Hidden())
"""


def _hidden_env(tmp_path, *, modules=(), java=True) -> dict:
    """The environment of a campaign whose interpreter cannot find ``modules`` (a ``sitecustomize`` that
    makes their import fail as an uninstalled package's does) and, without ``java``, no Java."""
    import os

    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(HIDE.format(names=set(modules)))
    env = dict(os.environ, PYTHONPATH=str(site))
    if not java:
        env.pop("JAVA_HOME", None)
        env["PATH"] = str(tmp_path / "empty")  # nothing on it: the command is started by its full path
    return env


def _run(env, *args, timeout=300):
    import subprocess
    import sys

    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "kconform.harness.cli", "campaign", *args],
        env=env, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip
    return done, time.monotonic() - started


@pytest.mark.parametrize(
    ("modules", "java", "said"),
    [
        (("pyspark", "duckdb"), True, "pyspark is not installed"),
        (("duckdb",), False, "Spark needs Java 17"),
    ],
    ids=["no-pyspark-no-duckdb", "no-java-no-duckdb"],
)
def test_a_campaign_that_cannot_report_stops_within_5_seconds_in_one_line(tmp_path, modules, java, said):
    env = _hidden_env(tmp_path, modules=modules, java=java)
    done, seconds = _run(
        env, "--targets", "reference", "--no-chaos", "--out", str(tmp_path / "c"), timeout=60
    )
    output = done.stdout + done.stderr
    assert done.returncode == 2 and seconds < 5, (seconds, output)
    assert said in output and "Traceback" not in output
    assert len(output.strip().splitlines()) == 1, output
    assert not (tmp_path / "c").exists(), "nothing was started or written"


@pytest.mark.slow
@pytest.mark.peer
def test_without_pyspark_a_campaign_rolls_up_with_duckdb_and_finishes(tmp_path):
    env = _hidden_env(tmp_path, modules=("pyspark",))
    out = tmp_path / "c"
    done, _ = _run(
        env, "--targets", "reference,rdkafka-mock", "--no-chaos", "--no-conform", "--duration", "100s",
        "--out", str(out),
    )  # fmt: skip
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-3000:]
    warnings = [line for line in output.splitlines() if line.startswith("warning:")]
    assert warnings == ["warning: pyspark is not installed: pip install 'kconform[spark]'; rolling up with "
                        "DuckDB instead"], output[-3000:]  # fmt: skip
    assert "Traceback" not in output and (out / "report" / "index.html").is_file()
    assert "rolling up 1 run(s) with DuckDB" in output
