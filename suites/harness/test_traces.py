"""Trace files: the schema, row groups written whole, and runs that survive SIGKILL and resume; the API
catalogue; and the contract's boundary (the harness writes traces, the reports read them, and neither
the reports nor the traces import the harness)."""

from __future__ import annotations

import ast
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import kconform.spark_reports
import kconform.traces
from kconform.codecs import api_schemas
from kconform.harness.catalogue import api_catalogue
from kconform.traces import (
    SCHEMA,
    SCHEMA_VERSION,
    ApiCatalogue,
    CatalogueEntry,
    TraceRow,
    TraceWriter,
    read_traces,
)


def _row(i: int, case: str = "c") -> TraceRow:
    return TraceRow(
        target="reference",
        api_key=3,
        api_version=12,
        outcome="pass",
        case_id=f"{case}{i // 10}",
        api_name="Metadata",
        correlation_id=i,
        request_bytes=30,
        response_bytes=200,
        latency_us=150,
        error_codes=[0, 3],
        topics=["t"],
        faults=["latency:100ms"],
    )


def test_rows_round_trip_with_the_schema_and_its_version(tmp_path):
    with TraceWriter(tmp_path, "run-1", row_group_rows=7) as traces:
        traces.extend(_row(i) for i in range(20))
    parts = sorted((tmp_path / "traces").glob("part-*.parquet"))
    assert len(parts) == 3  # 7 + 7 + 6
    assert pq.read_schema(parts[0]).metadata[b"kconform.trace.schema_version"] == str(SCHEMA_VERSION).encode()
    table = read_traces(tmp_path)
    assert table.schema.equals(SCHEMA, check_metadata=False)
    assert table["seq"].to_pylist() == list(range(20))
    assert table["error_codes"][5].as_py() == [0, 3]
    assert set(table["outcome"].to_pylist()) == {"pass"}


def test_an_unknown_outcome_is_refused(tmp_path):
    with TraceWriter(tmp_path, "run") as traces, pytest.raises(ValueError, match="outcome"):
        traces.append(TraceRow(target="t", api_key=0, api_version=0, outcome="fine"))


_WRITER = textwrap.dedent("""
    import sys, time
    from kconform.traces import TraceRow, TraceWriter
    traces = TraceWriter(sys.argv[1], "run-k", row_group_rows=50)
    start = traces.resume_point.rows
    print(start, flush=True)
    i = start
    while True:
        traces.append(TraceRow(target="reference", api_key=1, api_version=17, outcome="pass",
                               case_id=f"case-{i // 25}", correlation_id=i))
        i += 1
        if i % 50 == 0:
            time.sleep(0.01)
""")


def _run_and_kill(run_dir, new_parts: int) -> int:
    """Start a writer, let it write ``new_parts`` more part files (and a little more), SIGKILL it."""
    before = len(list((run_dir / "traces").glob("part-*"))) if (run_dir / "traces").exists() else 0
    args = [sys.executable, "-c", _WRITER, str(run_dir)]
    process = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    start = int(process.stdout.readline())
    deadline = time.monotonic() + 60
    while len(list((run_dir / "traces").glob("part-*.parquet"))) < before + new_parts:
        assert time.monotonic() < deadline and process.poll() is None, "the writer made no progress"
        time.sleep(0.01)
    time.sleep(0.005)  # kill it somewhere inside the next row group
    process.send_signal(signal.SIGKILL)
    process.wait()
    return start


def test_traces_survive_sigkill_and_a_resumed_run_continues_them(tmp_path):
    assert _run_and_kill(tmp_path, 3) == 0
    first = read_traces(tmp_path)  # every part on disk is whole and readable
    assert first.num_rows > 0 and first.num_rows % 50 == 0  # at most the unflushed row group is lost
    assert first["seq"].to_pylist() == list(range(first.num_rows))
    resumed = TraceWriter(tmp_path, "run-k")
    assert resumed.resume_point.rows == first.num_rows
    assert resumed.resume_point.last_case == f"case-{(first.num_rows - 1) // 25}"
    assert _run_and_kill(tmp_path, 2) == first.num_rows  # the second run starts where the first ended
    both = read_traces(tmp_path)
    assert both.num_rows > first.num_rows
    assert sorted(both["seq"].to_pylist()) == list(range(both.num_rows))  # no gap, no duplicate
    assert not list((tmp_path / "traces").glob("*.tmp")) or True  # leftovers are cleaned on reopen
    TraceWriter(tmp_path, "run-k")
    assert not list((tmp_path / "traces").glob("*.tmp"))


# --- the API catalogue --------------------------------------------------------------------------------


def test_the_catalogue_holds_every_api_of_the_codecs():
    catalogue = api_catalogue()
    assert [(e.api_key, e.name, e.min_version, e.max_version) for e in catalogue.entries] == [
        (s.api_key, s.name, *s.valid_versions) for s in api_schemas()
    ]
    assert catalogue.named("Produce").api_key == 0
    with pytest.raises(KeyError, match="NoSuchApi"):
        catalogue.named("NoSuchApi")


def test_a_catalogue_refuses_an_api_twice_and_an_empty_version_range():
    with pytest.raises(ValueError, match="name Fetch more than once"):
        ApiCatalogue.of([CatalogueEntry(1, "Fetch", 0, 17), CatalogueEntry(99, "Fetch", 0, 1)])
    with pytest.raises(ValueError, match="api_key 1 more than once"):
        ApiCatalogue.of([CatalogueEntry(1, "Fetch", 0, 17), CatalogueEntry(1, "Other", 0, 1)])
    with pytest.raises(ValueError, match="versions 3-2"):
        CatalogueEntry(1, "Fetch", 3, 2)


# --- the boundary ---------------------------------------------------------------------------------------


def _kconform_imports(package) -> dict[str, set[str]]:
    """Every kconform module each module of ``package`` imports, relative imports resolved, imports
    inside functions and ``TYPE_CHECKING`` blocks included."""
    [folder] = package.__path__
    found: dict[str, set[str]] = {}
    for path in sorted(Path(folder).rglob("*.py")):
        parts = path.relative_to(folder).with_suffix("").parts
        module = ".".join((package.__name__, *parts)).removesuffix(".__init__")
        package_parts = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = package_parts[: len(package_parts) - node.level + 1] if node.level else []
                target = ".".join([*base, *([node.module] if node.module else [])])
                targets.add(target)
                # ``from kconform import harness`` and ``from .. import harness`` name packages too
                targets.update(f"{target}.{alias.name}" for alias in node.names)
        found[module] = {t for t in targets if _within(t, "kconform")}
    return found


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def test_the_traces_import_nothing_else_of_kconform():
    imports = _kconform_imports(kconform.traces)
    assert imports  # the walk found the modules
    outside = {m: sorted(t for t in ts if not _within(t, "kconform.traces")) for m, ts in imports.items()}
    assert {m: ts for m, ts in outside.items() if ts} == {}


def test_the_reports_import_neither_the_harness_nor_the_codecs_in_the_synthesiser():
    imports = _kconform_imports(kconform.spark_reports)
    assert "kconform.spark_reports.synth" in imports
    harness = {m: sorted(t for t in ts if _within(t, "kconform.harness")) for m, ts in imports.items()}
    assert {m: ts for m, ts in harness.items() if ts} == {}
    assert not [t for t in imports["kconform.spark_reports.synth"] if _within(t, "kconform.codecs")]
