"""Bad input to a report is one ``ReportInputError`` naming the file and what was expected (``kconform
report`` prints it after "error:" and exits 2, writing nothing), never a stack trace from an engine.
Good input still reports. No Spark here: the checks run before any engine starts, and the CLI runs
with the DuckDB engine."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from kconform.harness.catalogue import api_catalogue
from kconform.harness.cli import cli
from kconform.spark_reports.build import load_previous
from kconform.spark_reports.duck import duckdb_rollup
from kconform.spark_reports.runs import ReportInputError, find_runs
from kconform.spark_reports.synth import synthesise
from kconform.traces import SCHEMA, ApiCatalogue

OUTPUTS = ("index.html", "summary.json", "junit.xml")


@pytest.fixture
def diff_run(tmp_path: Path) -> Path:
    """A good diff run directory (run.json, summary.json, cases/, two trace parts)."""
    [run] = synthesise(tmp_path / "runs", 400, catalogue=api_catalogue(), seed=3, runs=1, row_group_rows=200)
    assert len(list((run / "traces").glob("part-*.parquet"))) == 2
    return run.resolve()


@pytest.fixture
def chaos_run(tmp_path: Path) -> Path:
    [run] = synthesise(tmp_path / "chaos-runs", 300, catalogue=api_catalogue(), seed=4, runs=0, chaos_runs=1)
    return run.resolve()


def first_part(run: Path) -> Path:
    return run / "traces" / "part-000000.parquet"


def report_error(paths: list[Path | str]) -> str:
    with pytest.raises(ReportInputError) as caught:
        find_runs(paths)
    return str(caught.value)


# --- paths that are not run directories --------------------------------------------------------------


def test_a_missing_path(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-run"
    message = report_error([missing])
    assert message.startswith(f"{missing}: no such file or directory")
    assert "expected a run directory" in message


def test_a_file_instead_of_a_folder(tmp_path: Path) -> None:
    file = tmp_path / "traces.parquet"
    file.write_text("not a folder")
    assert report_error([file]).startswith(f"{file}: not a directory; expected a run directory")


def test_a_folder_without_run_directories(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "other" / "nested" / "deeper").mkdir(parents=True)  # no traces/ anywhere
    (tmp_path / "other" / "notes.txt").write_text("x")
    for folder in (tmp_path / "empty", tmp_path / "other"):
        assert report_error([folder]).startswith(f"{folder}: no run directories found; expected")


def test_one_bad_path_among_good_ones_is_named(diff_run: Path, tmp_path: Path) -> None:
    missing = tmp_path / "gone"
    assert report_error([diff_run, missing]).startswith(f"{missing}: no such file or directory")


# --- files in a run directory that cannot be read ------------------------------------------------------


def truncate_part(run: Path) -> Path:
    part = first_part(run)
    data = part.read_bytes()
    part.write_bytes(data[: len(data) // 2])
    return part


def empty_part(run: Path) -> Path:
    part = first_part(run)
    part.write_bytes(b"")
    return part


def garbage_part(run: Path) -> Path:
    part = run / "traces" / "part-000007.parquet"
    part.write_bytes(b"PAR1" + b"\x00" * 64 + b"not parquet at all")
    return part


def rewrite_part(run: Path, change: Callable[[pa.Table], pa.Table]) -> Path:
    part = first_part(run)
    pq.write_table(change(pq.read_table(part)), part)
    return part


def part_missing_a_column(run: Path) -> Path:
    return rewrite_part(run, lambda t: t.drop_columns(["latency_us"]))


def part_of_version_2_without_signatures(run: Path) -> Path:
    # version 1 files may lack it (they read it as empty); a file that says version 2 may not
    return rewrite_part(run, lambda t: t.drop_columns(["signatures"]))


def part_with_a_column_of_another_type(run: Path) -> Path:
    def change(table: pa.Table) -> pa.Table:
        index = table.schema.get_field_index("api_key")
        return table.set_column(index, pa.field("api_key", pa.int64()), table["api_key"].cast(pa.int64()))

    return rewrite_part(run, change)


def summary_not_json(run: Path) -> Path:
    (run / "summary.json").write_text('{"run_id": "x", "differences": [')
    return run / "summary.json"


def summary_a_list(run: Path) -> Path:
    (run / "summary.json").write_text("[]")
    return run / "summary.json"


def summary_differences_not_a_list(run: Path) -> Path:
    (run / "summary.json").write_text(json.dumps({"run_id": "x", "differences": {"signature": "s"}}))
    return run / "summary.json"


def summary_differences_not_objects(run: Path) -> Path:
    (run / "summary.json").write_text(json.dumps({"run_id": "x", "differences": ["Produce/v9/x/value"]}))
    return run / "summary.json"


def run_json_not_utf8(run: Path) -> Path:
    (run / "run.json").write_bytes(b'{"run_id": "\xff\xfe"}')
    return run / "run.json"


BAD_DIFF_RUNS = {
    "truncated part": (truncate_part, "not a readable Parquet trace file"),
    "empty part": (empty_part, "not a readable Parquet trace file"),
    "garbage part": (garbage_part, "not a readable Parquet trace file"),
    "column missing": (part_missing_a_column, "column latency_us is missing"),
    "version 2 without signatures": (part_of_version_2_without_signatures, "column signatures is missing"),
    "column of another type": (part_with_a_column_of_another_type, "column api_key is of type int64"),
    "summary.json not JSON": (summary_not_json, "not readable JSON"),
    "summary.json a list": (summary_a_list, "expected a JSON object, found list"),
    "differences not a list": (summary_differences_not_a_list, "'differences' should be a list"),
    "differences not objects": (summary_differences_not_objects, "'differences' should be a list"),
    "run.json not UTF-8": (run_json_not_utf8, "not readable JSON"),
}


@pytest.mark.parametrize("breaker, what", BAD_DIFF_RUNS.values(), ids=BAD_DIFF_RUNS.keys())
def test_a_bad_file_in_a_diff_run_is_named(
    diff_run: Path, breaker: Callable[[Path], Path], what: str
) -> None:
    find_runs([diff_run])  # good before
    bad = breaker(diff_run)
    message = report_error([diff_run.parent])
    assert message.startswith(f"{bad}: "), message
    assert what in message, message


def chaos_results_a_dict(run: Path) -> Path:
    document = json.loads((run / "chaos.json").read_text())
    document["results"] = {"scenario": "s"}
    (run / "chaos.json").write_text(json.dumps(document))
    return run / "chaos.json"


def chaos_results_missing(run: Path) -> Path:
    document = json.loads((run / "chaos.json").read_text())
    del document["results"]
    (run / "chaos.json").write_text(json.dumps(document))
    return run / "chaos.json"


def chaos_result_without_a_scenario(run: Path) -> Path:
    document = json.loads((run / "chaos.json").read_text())
    document["results"].append({"target": "reference", "verdict": "pass"})
    (run / "chaos.json").write_text(json.dumps(document))
    return run / "chaos.json"


def chaos_result_not_an_object(run: Path) -> Path:
    document = json.loads((run / "chaos.json").read_text())
    document["results"] = ["synthetic-0"]
    (run / "chaos.json").write_text(json.dumps(document))
    return run / "chaos.json"


def chaos_json_truncated(run: Path) -> Path:
    text = (run / "chaos.json").read_text()
    (run / "chaos.json").write_text(text[: len(text) // 2])
    return run / "chaos.json"


BAD_CHAOS_RUNS = {
    "results a dict": (chaos_results_a_dict, "'results' should be a list of scenario results"),
    "results missing": (chaos_results_missing, "'results' should be a list of scenario results"),
    "a result without a scenario": (chaos_result_without_a_scenario, "'results' should be a list"),
    "a result not an object": (chaos_result_not_an_object, "'results' should be a list"),
    "chaos.json truncated": (chaos_json_truncated, "not readable JSON"),
}


@pytest.mark.parametrize("breaker, what", BAD_CHAOS_RUNS.values(), ids=BAD_CHAOS_RUNS.keys())
def test_a_bad_chaos_json_is_named(chaos_run: Path, breaker: Callable[[Path], Path], what: str) -> None:
    assert [r.kind for r in find_runs([chaos_run])] == ["chaos"]
    bad = breaker(chaos_run)
    message = report_error([chaos_run])
    assert message.startswith(f"{bad}: "), message
    assert what in message, message


def test_a_part_whose_data_is_corrupt_behind_a_good_footer_is_named(diff_run: Path) -> None:
    """The footer check passes; the engine's own failure is turned into an error naming the file."""
    part = first_part(diff_run)
    table = pq.read_table(part)
    pq.write_table(table, part, compression="none", row_group_size=table.num_rows)
    metadata = pq.read_metadata(part)
    data = bytearray(part.read_bytes())
    column = metadata.row_group(0).column(SCHEMA.get_field_index("latency_us"))
    start = column.data_page_offset
    data[start : start + 24] = b"\xff" * 24  # the page header: the data cannot be decoded
    part.write_bytes(bytes(data))
    runs = find_runs([diff_run])
    with pytest.raises(ReportInputError) as caught:
        duckdb_rollup(runs)
    assert str(caught.value).startswith(f"{part}: DuckDB could not read this trace file")


def test_good_runs_are_found_with_their_kinds(diff_run: Path, chaos_run: Path, tmp_path: Path) -> None:
    runs = find_runs([tmp_path, diff_run])  # given twice: found once
    assert [(r.path, r.kind) for r in runs] == [(chaos_run, "chaos"), (diff_run, "diff")]
    assert len(runs[1].trace_files) == 2
    assert len(runs[1].cases) == len(json.loads((diff_run / "summary.json").read_text())["differences"]) > 0


def test_the_synthesiser_refuses_a_catalogue_without_its_apis(tmp_path: Path) -> None:
    partial = ApiCatalogue.of(e for e in api_catalogue().entries if e.name not in ("Fetch", "Heartbeat"))
    with pytest.raises(ValueError, match="lacks Fetch, Heartbeat"):
        synthesise(tmp_path / "runs", 10, catalogue=partial)
    assert not (tmp_path / "runs").exists()  # refused before anything was written


# --- the command -------------------------------------------------------------------------------------


def run_report(*args: str | Path) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["report", *map(str, args), "--engine", "duckdb"])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


@pytest.mark.parametrize(
    "breaker",
    [truncate_part, part_missing_a_column, summary_not_json, summary_differences_not_a_list],
    ids=["truncated part", "column missing", "summary.json not JSON", "differences not a list"],
)
def test_the_command_names_a_bad_file_and_writes_nothing(
    diff_run: Path, tmp_path: Path, breaker: Callable[[Path], Path]
) -> None:
    bad = breaker(diff_run)
    out = tmp_path / "report"
    code, output = run_report(diff_run, "--out", out)
    assert code == 2, output
    assert "error:" in output
    assert str(bad) in output
    assert "Traceback" not in output
    assert not (out / "index.html").exists()
    assert not any((out / name).exists() for name in OUTPUTS)


def test_the_command_names_a_bad_chaos_json(chaos_run: Path, tmp_path: Path) -> None:
    bad = chaos_results_a_dict(chaos_run)
    code, output = run_report(chaos_run, "--out", tmp_path / "report")
    assert code == 2 and "error:" in output and str(bad) in output, output
    assert not (tmp_path / "report" / "index.html").exists()


def test_the_command_names_a_missing_path(tmp_path: Path) -> None:
    code, output = run_report(tmp_path / "missing-run", "--out", tmp_path / "report")
    assert code == 2
    assert f"error: {tmp_path / 'missing-run'}: no such file or directory" in output
    assert not (tmp_path / "report" / "index.html").exists()


def test_a_good_run_reports(diff_run: Path, chaos_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "report"
    code, output = run_report(diff_run, chaos_run, "--out", out)
    assert code == 0, output
    for name in OUTPUTS:
        assert (out / name).stat().st_size > 0, name
    summary = json.loads((out / "summary.json").read_text())
    expected = duckdb_rollup(find_runs([diff_run, chaos_run]))
    assert summary["totals"]["exchanges"] == expected.exchanges == 400 + 300 - _fault_rows(chaos_run)
    assert summary["totals"]["runs"] == 2
    # the report is itself a good --previous
    code, output = run_report(diff_run, "--out", tmp_path / "again", "--previous", out)
    assert code == 0, output
    assert (tmp_path / "again" / "index.html").is_file()
    assert load_previous(out)["totals"] == summary["totals"]


def _fault_rows(run: Path) -> int:
    table = pq.read_table(list((run / "traces").glob("*.parquet")), columns=["api_key"])
    return sum(1 for key in table["api_key"].to_pylist() if key < 0)


def not_a_report_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "not-a-report"
    folder.mkdir()
    (folder / "index.html").write_text("<html></html>")
    return folder


def summary_not_json_file(tmp_path: Path) -> Path:
    file = tmp_path / "summary.json"
    file.write_text("{ nope")
    return file


def summary_of_another_schema(tmp_path: Path) -> Path:
    folder = tmp_path / "future-report"
    folder.mkdir()
    (folder / "summary.json").write_text(json.dumps({"schema": 99, "totals": {}}))
    return folder


def summary_of_a_run(tmp_path: Path) -> Path:
    """A run's summary.json (kconform diff's), not a report's."""
    file = tmp_path / "run-summary.json"
    file.write_text(json.dumps({"run_id": "x", "differences": []}))
    return file


@pytest.mark.parametrize(
    "previous, what",
    [
        (not_a_report_folder, "no summary.json there"),
        (lambda tmp: tmp / "missing", "no summary.json there"),
        (summary_not_json_file, "not readable JSON"),
        (summary_of_another_schema, "summary schema 99"),
        (summary_of_a_run, "summary schema None"),
    ],
    ids=["folder without summary", "missing", "not JSON", "another schema", "a run's summary"],
)
def test_a_previous_that_is_not_a_report(
    diff_run: Path, tmp_path: Path, previous: Callable[[Path], Path], what: str
) -> None:
    given = previous(tmp_path)
    out = tmp_path / "report"
    code, output = run_report(diff_run, "--out", out, "--previous", given)
    assert code == 2, output
    assert f"error: --previous {given}" in output
    assert what in output
    assert not (out / "index.html").exists()
    with pytest.raises(ReportInputError, match=what):
        load_previous(given)
