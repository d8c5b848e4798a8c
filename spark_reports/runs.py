"""Run directories: finding them, and reading what the harness left beside their traces.

A run directory holds ``traces/part-NNNNNN.parquet``. A differential run (``kconform diff``) adds
``run.json``, ``summary.json`` (its differences, each with a case file) and ``cases/case-NNN.json``; a
chaos run (``kconform chaos``) adds ``chaos.json``; anything else with traces (``kconform dissect``) is
kind ``traces``. A conformance run (``kconform conform``) holds rule rows instead,
``rules/part-NNNNNN.parquet``, beside ``conform.json``. Every file is checked here, before any engine
reads it, so that bad input is one ``ReportInputError`` naming the file and what was expected, never a
stack trace from deep in Spark.
Parquet files are checked by their footers (cheap: the data itself is read once, by the engine)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from kconform.traces import SCHEMA
from kconform.traces.rules import RULE_SCHEMA

from .model import ChaosVerdict

__all__ = [
    "ADDED_COLUMNS",
    "ReportInputError",
    "RunDirectory",
    "chaos_verdicts",
    "find_runs",
    "raise_for_bad_trace_file",
]

EXPECTED = (
    "a run directory (a folder with traces/part-*.parquet or rules/part-*.parquet, as kconform diff, "
    "kconform chaos, kconform conform and kconform campaign write) or a folder of run directories"
)


class ReportInputError(ValueError):
    """Input a report cannot be made from; the message names the file and what was expected."""


@dataclass(slots=True)
class RunDirectory:
    path: Path
    run_id: str | None  # from run.json, summary.json or chaos.json; None for traces alone
    kind: str  # "diff", "chaos", "conform" or "traces"
    summary: dict | None = None  # summary.json of a diff run
    chaos: dict | None = None  # chaos.json of a chaos run
    conform: dict | None = None  # conform.json of a conformance run
    cases: dict[str, Path] = field(default_factory=dict)  # signature -> the case file that replays it
    replays: dict | None = None  # replays.json of a campaign's diff run: an earlier report's cases replayed
    absent_columns: frozenset[str] = frozenset()  # ADDED_COLUMNS that no trace file of the run has

    @property
    def trace_files(self) -> list[Path]:
        return sorted((self.path / "traces").glob("part-*.parquet"))

    @property
    def rule_files(self) -> list[Path]:
        return sorted((self.path / "rules").glob("part-*.parquet"))


def find_runs(paths: Iterable[Path | str]) -> list[RunDirectory]:
    """Every run directory at or up to two levels below each path, in path order, each checked."""
    found: dict[Path, RunDirectory] = {}
    for given in paths:
        path = Path(given).resolve()
        if not path.exists():
            raise ReportInputError(f"{given}: no such file or directory; expected {EXPECTED}")
        if not path.is_dir():
            raise ReportInputError(f"{given}: not a directory; expected {EXPECTED}")
        directories = _run_directories(path)
        if not directories:
            raise ReportInputError(f"{given}: no run directories found; expected {EXPECTED}")
        for directory in directories:
            if directory not in found:
                found[directory] = _read_run(directory)
    return [found[p] for p in sorted(found)]


def _run_directories(path: Path) -> list[Path]:
    if _is_run(path):
        return [path]
    runs = []
    for child in sorted(p for p in path.iterdir() if p.is_dir()):
        if _is_run(child):
            runs.append(child)
        else:  # a campaign's out directory holds one folder per part
            runs.extend(g for g in sorted(child.iterdir()) if g.is_dir() and _is_run(g))
    return runs


def _is_run(path: Path) -> bool:
    return (path / "traces").is_dir() or (path / "rules").is_dir()


def _read_run(path: Path) -> RunDirectory:
    summary = _json_object(path / "summary.json")
    chaos = _json_object(path / "chaos.json")
    run = _json_object(path / "run.json")
    conform = _json_object(path / "conform.json")
    if conform is not None:
        kind = "conform"
    elif chaos is not None:
        kind = "chaos"
    elif summary is not None or run is not None:
        kind = "diff"
    else:
        kind = "traces"
    run_id = next(
        (d["run_id"] for d in (run, summary, chaos, conform) if d and isinstance(d.get("run_id"), str)),
        None,
    )
    directory = RunDirectory(path, run_id, kind, summary, chaos, conform, _case_files(path, summary))
    directory.replays = _json_object(path / "replays.json")
    if directory.replays is not None and not isinstance(directory.replays.get("replays"), list):
        raise ReportInputError(f"{path / 'replays.json'}: 'replays' should be a list (replays.json schema 1)")
    if conform is not None:
        _check_conform(path / "conform.json", conform)
    for part in directory.rule_files:
        _check_rule_parquet(part)
    present = set().union(*(_check_parquet(part) for part in directory.trace_files))
    directory.absent_columns = frozenset(ADDED_COLUMNS) - present
    if chaos is not None:
        _chaos_results(path / "chaos.json", chaos)  # shape-checked now, read by chaos_verdicts
    return directory


def _json_object(path: Path) -> dict | None:
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReportInputError(
            f"{path}: not readable JSON ({exc}); rerun the command that wrote it, or move the run aside"
        ) from None
    if not isinstance(data, dict):
        raise ReportInputError(f"{path}: expected a JSON object, found {type(data).__name__}")
    return data


def _case_files(path: Path, summary: dict | None) -> dict[str, Path]:
    if summary is None:
        return {}
    differences = summary.get("differences", [])
    if not isinstance(differences, list) or not all(isinstance(d, dict) for d in differences):
        raise ReportInputError(f"{path / 'summary.json'}: 'differences' should be a list of objects")
    cases = {}
    for difference in differences:
        signature, case_id = difference.get("signature"), difference.get("case_id")
        case = path / "cases" / f"{case_id}.json"
        if isinstance(signature, str) and isinstance(case_id, str) and case.is_file():
            cases[signature] = case
    return cases


# Columns later schema versions added: a file written before them reads them as null (both engines are
# given the schema, and treat null as the column's empty value).
ADDED_COLUMNS = {"signatures": 2}


def _check_parquet(path: Path) -> set[str]:
    """The file's column names, once its footer is known to be a trace file's."""
    try:
        schema = pq.read_schema(path)
    except (OSError, pa.ArrowException) as exc:
        raise ReportInputError(
            f"{path}: not a readable Parquet trace file ({exc}); it may be truncated or corrupt: move it "
            "out of traces/ and report again"
        ) from None
    for expected in SCHEMA:
        found = schema.field(expected.name) if expected.name in schema.names else None
        if found is None and _version(schema) < ADDED_COLUMNS.get(expected.name, 0):
            continue
        if found is None or not found.type.equals(expected.type):
            what = "missing" if found is None else f"of type {found.type}, expected {expected.type}"
            raise ReportInputError(
                f"{path}: column {expected.name} is {what}; this is not a kconform trace file of "
                f"schema version {SCHEMA.metadata[b'kconform.trace.schema_version'].decode()}"
            )
    return set(schema.names)


def _check_conform(path: Path, conform: dict) -> None:
    apis = conform.get("apis", [])
    good = isinstance(apis, list) and all(
        isinstance(a, dict)
        and isinstance(a.get("api_key"), int)
        and isinstance(a.get("api_name"), str)
        and isinstance(a.get("versions"), list)
        and len(a["versions"]) == 2
        for a in apis
    )
    if not good:
        raise ReportInputError(
            f"{path}: 'apis' should be a list of {{api_key, api_name, versions: [low, high]}} "
            "(conform.json schema 1)"
        )


def _check_rule_parquet(path: Path) -> None:
    """A rule-row file's footer must be the rule schema's."""
    try:
        schema = pq.read_schema(path)
    except (OSError, pa.ArrowException) as exc:
        raise ReportInputError(
            f"{path}: not a readable Parquet rules file ({exc}); it may be truncated or corrupt: rerun "
            "kconform conform, or move the file out of rules/"
        ) from None
    for expected in RULE_SCHEMA:
        found = schema.field(expected.name) if expected.name in schema.names else None
        if found is None or not found.type.equals(expected.type):
            what = "missing" if found is None else f"of type {found.type}, expected {expected.type}"
            raise ReportInputError(f"{path}: column {expected.name} is {what}; not a kconform rules file")


def _version(schema: pa.Schema) -> int:
    text = (schema.metadata or {}).get(b"kconform.trace.schema_version", b"")
    return int(text) if text.isdigit() else 0


def _chaos_results(path: Path, chaos: dict) -> list[dict[str, Any]]:
    results = chaos.get("results")
    if not isinstance(results, list) or not all(isinstance(r, dict) and "scenario" in r for r in results):
        raise ReportInputError(
            f"{path}: 'results' should be a list of scenario results (chaos.json schema 1)"
        )
    return results


def raise_for_bad_trace_file(
    engine: str,
    exc: Exception,
    runs: Iterable[RunDirectory],
    readable: Callable[[Path], bool] | None = None,
    files: Callable[[RunDirectory], list[Path]] = lambda run: run.trace_files,
) -> None:
    """When an engine failed on a trace file (or another of a run's ``files``) that went bad after
    ``find_runs`` checked its footer: a ReportInputError naming the file, found in the engine's
    message, else (where ``readable`` is given) by reading each file on its own. Returns when no file
    is to blame."""
    message = str(exc)
    parts = [part for run in runs for part in files(run)]
    named = [part for part in parts if str(part) in message]
    bad = named[0] if named else None
    if bad is None and readable is not None:
        bad = next((part for part in parts if not readable(part)), None)
    if bad is not None:
        first = message.strip().splitlines()[0][:300] if message.strip() else "no message"
        raise ReportInputError(
            f"{bad}: {engine} could not read this trace file ({first}); it may be corrupt: move it "
            f"out of {bad.parent.name}/ and report again"
        ) from None


def chaos_verdicts(runs: Iterable[RunDirectory]) -> list[ChaosVerdict]:
    """One verdict per scenario result in the runs' chaos.json files, sorted by scenario, target, run.
    Excerpts are kept for the anomalies that broke the promise (allowed ones are only measured)."""
    verdicts = []
    for run in runs:
        if run.chaos is None:
            continue
        run_id = str(run.chaos.get("run_id") or run.run_id or run.path.name)
        for result in _chaos_results(run.path / "chaos.json", run.chaos):
            verdicts.append(_chaos_verdict(result, run_id, str(run.chaos.get("target") or "")))
    return sorted(verdicts, key=lambda v: (v.scenario, v.target, v.run_id))


def _chaos_verdict(result: dict[str, Any], run_id: str, run_target: str) -> ChaosVerdict:
    """A result as the report holds it; a result from an older chaos.json may lack the operations'
    split by outcome, the ``allowed`` flags and the reasons."""
    anomalies = [a for a in result.get("anomalies") or [] if isinstance(a, dict) and "anomaly" in a]
    operations = result.get("operations")
    acknowledged = None
    if isinstance(operations, dict):  # counts by kind: ok, fail, info; a kind that never happened is absent
        ok = operations.get("ok", 0)
        acknowledged = ok if isinstance(ok, int) else None
        operations = sum(v for v in operations.values() if isinstance(v, int))
    return ChaosVerdict(
        scenario=str(result["scenario"]),
        target=str(result.get("target") or run_target),
        verdict=str(result.get("verdict", "error")),
        promise=str(result.get("promise", "")),
        operations=operations if isinstance(operations, int) else 0,
        violations={str(k): int(v) for k, v in (result.get("violations") or {}).items()},
        excerpts={
            str(a["anomaly"]): list(a.get("excerpt") or [])
            for a in anomalies
            if a.get("verdict") == "violation"
        },
        run_id=run_id,
        error=str(result["error"]) if result.get("error") else None,
        acknowledged=acknowledged,
        allowed=_allowed_counts(result, anomalies),
        reasons={str(a["anomaly"]): str(a["reason"]) for a in anomalies if a.get("reason")},
    )


def _allowed_counts(result: dict[str, Any], anomalies: list[dict[str, Any]]) -> dict[str, int]:
    """Each anomaly the settings allow, with how often it happened: every one the result flags allowed
    (zero counts too), and those its ``measured`` names (allowed and seen; all an older result says)."""
    measured = {str(k): int(v) for k, v in (result.get("measured") or {}).items()}
    flagged = {
        str(a["anomaly"]): int(a["count"])
        if isinstance(a.get("count"), int)
        else measured.get(a["anomaly"], 0)
        for a in anomalies
        if a.get("allowed") is True or a.get("verdict") == "allowed"
    }
    return dict(sorted((measured | flagged).items()))
