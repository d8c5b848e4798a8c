"""A chaos run's record, so its checks can run again without the cluster: ``kconform chaos --replay DIR``
reads it and prints the verdicts the live run printed (``runner.judge`` makes both).

Each scenario run leaves ``<run directory>/replay/<scenario>/``:

- ``history.jsonl``: the history (``checkers.history_file``: a format line, one line per op and
  bookkeeping entry, an end line that counts them);
- ``faults.jsonl``: ``{"format": "kconform-chaos-faults", "version": 1}``, then one
  ``{"kind": "fault", "at", "action", "label", "ok", "error", "targets"}`` line per nemesis event, then
  ``{"kind": "end", "faults": N}``;
- ``scenario.json``: ``{"format": "kconform-chaos-run", "version": 1, "scenario": {name, description,
  workload, promise, bites, forbids, allows, settings, topic, broker}, "target", "duration_s", "seed",
  "started_ns", "stats", "error"}``: what the verdicts depend on besides the history (the promise, the
  client, topic and broker settings) and what the run measured (the client's counters, its error).

Each file is written whole under a temporary name and renamed, scenario.json last, so a record with a
scenario.json is complete. Reading checks everything and raises ``ReplayError`` naming the file and
line: a missing file, a line cut short, a version this kconform does not read."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kconform.faults.nemesis import FaultEvent

from ..checkers.history import History
from ..checkers.history_file import HistoryFileError, history_lines, parse_history
from ..checkers.promises import Promise, PromiseError
from .scenarios import Scenario

__all__ = [
    "REPLAY_DIR",
    "ReplayError",
    "RunRecord",
    "load_record",
    "load_records",
    "record_directory",
    "write_record",
]

REPLAY_DIR = "replay"  # in a run directory: one record per scenario run
RUN_FORMAT, FAULTS_FORMAT, VERSION = "kconform-chaos-run", "kconform-chaos-faults", 1
SCENARIO, HISTORY, FAULTS = "scenario.json", "history.jsonl", "faults.jsonl"
_SCENARIO_FIELDS = ("name", "description", "workload", "promise", "bites", "settings", "topic", "broker")


class ReplayError(ValueError):
    """A record that cannot be replayed; the message names the file."""


@dataclass
class RunRecord:
    """Everything a scenario run's verdicts are made from."""

    scenario: Scenario
    target: str
    duration: float
    seed: int
    started_ns: int
    stats: dict[str, int]
    error: str
    faults: list[FaultEvent]
    history: History


def record_directory(run_dir: Path, scenario: str) -> Path:
    return Path(run_dir) / REPLAY_DIR / scenario


def write_record(directory: Path, record: RunRecord) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    _write(directory / HISTORY, "".join(f"{line}\n" for line in history_lines(record.history)))
    _write(directory / FAULTS, "".join(f"{line}\n" for line in _fault_lines(record.faults)))
    scenario = record.scenario
    document = {
        "format": RUN_FORMAT,
        "version": VERSION,
        "scenario": {
            **{name: getattr(scenario, name) for name in _SCENARIO_FIELDS},
            "forbids": sorted(scenario.forbids),
            "allows": sorted(scenario.allows),
        },
        "target": record.target,
        "duration_s": record.duration,
        "seed": record.seed,
        "started_ns": record.started_ns,
        "stats": record.stats,
        "error": record.error,
    }
    _write(directory / SCENARIO, json.dumps(document, indent=2, default=str) + "\n")


def load_records(path: Path) -> list[RunRecord]:
    """The record at ``path``, or every record of the run directory ``path``, in the order they ran."""
    path = Path(path)
    if not path.is_dir():
        raise ReplayError(
            f"{path}: no such directory; give a chaos run directory or one of its {REPLAY_DIR}/*"
        )
    if (path / SCENARIO).exists() or (path / HISTORY).exists():
        return [load_record(path)]
    found = sorted(p for p in (path / REPLAY_DIR).glob("*") if p.is_dir())
    if not found:
        raise ReplayError(
            f"{path}: no chaos run record here: expected {SCENARIO}, {HISTORY} and {FAULTS}, or a run "
            f"directory holding {REPLAY_DIR}/<scenario>/ (kconform chaos writes them)"
        )
    return sorted((load_record(p) for p in found), key=lambda r: r.started_ns)


def load_record(directory: Path) -> RunRecord:
    path = directory / SCENARIO
    document = _json_file(path)
    history_path = directory / HISTORY
    try:
        history = parse_history(_read(history_path).splitlines())
    except HistoryFileError as exc:
        raise ReplayError(f"{history_path}: {exc}") from None
    faults = _parse_faults(directory / FAULTS)
    try:
        raw = document["scenario"]
        for name in _SCENARIO_FIELDS:
            expected = dict if name in ("settings", "topic", "broker") else str
            if not isinstance(raw[name], expected):
                raise ValueError(f"scenario {name} should be a {expected.__name__}")
        forbids, allows = frozenset(raw["forbids"]), frozenset(raw["allows"])
        Promise(raw["promise"], forbids, allows)  # anomaly names this kconform knows, checked now
        scenario = Scenario(
            **{name: raw[name] for name in _SCENARIO_FIELDS}, storms=(), forbids=forbids, allows=allows
        )
        return RunRecord(
            scenario,
            str(document["target"]),
            float(document["duration_s"]),
            int(document["seed"]),
            int(document["started_ns"]),
            {str(k): int(v) for k, v in document["stats"].items()},
            str(document["error"]),
            faults,
            history,
        )
    except PromiseError as exc:
        raise ReplayError(f"{path}: the promise {exc}") from None
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ReplayError(f"{path}: {_why(exc)}") from None


def _json_file(path: Path) -> dict[str, Any]:
    try:
        document = json.loads(_read(path))
    except json.JSONDecodeError as exc:
        raise ReplayError(f"{path}: not JSON (cut short?): {exc.msg} at line {exc.lineno}") from None
    _check_format(document, RUN_FORMAT, "chaos run record", str(path))
    return document


def _check_format(line: Any, expected: str, what: str, where: str) -> None:
    if not isinstance(line, dict) or line.get("format") != expected:
        raise ReplayError(f"{where}: not a kconform {what}")
    if line.get("version") != VERSION:
        raise ReplayError(
            f"{where}: {what} version {line.get('version')!r}; this kconform reads version {VERSION}"
        )


def _fault_lines(faults: list[FaultEvent]) -> Iterator[str]:
    yield json.dumps({"format": FAULTS_FORMAT, "version": VERSION})
    for e in faults:
        fault = {"kind": "fault", "at": e.at, "action": e.action, "label": e.label, "ok": e.ok}
        yield json.dumps(fault | {"error": e.error, "targets": list(e.targets)})
    yield json.dumps({"kind": "end", "faults": len(faults)})


def _parse_faults(path: Path) -> list[FaultEvent]:
    faults: list[FaultEvent] = []
    lines = _read(path).splitlines()
    for number, text in enumerate(lines, 1):
        where = f"{path}: line {number}"
        try:
            line = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ReplayError(f"{where}: not JSON (a line cut short?): {exc.msg}") from None
        if number == 1:
            _check_format(line, FAULTS_FORMAT, "fault log", where)
        elif isinstance(line, dict) and line.get("kind") == "end":
            if line.get("faults") != len(faults) or number != len(lines):
                raise ReplayError(f"{where}: the end line does not close the log ({len(faults)} faults)")
            return faults
        else:
            try:
                faults.append(
                    FaultEvent(
                        float(line["at"]),
                        str(line["action"]),
                        str(line["label"]),
                        bool(line["ok"]),
                        str(line["error"]),
                        tuple(line["targets"]),
                    )
                )
            except (KeyError, TypeError, ValueError) as exc:
                raise ReplayError(f"{where}: not a fault: {_why(exc)}") from None
    raise ReplayError(f"{path}: ends without its end line: the file was cut short")


def _why(exc: Exception) -> str:
    return f"lacks the field {exc}" if isinstance(exc, KeyError) else f"malformed ({exc})"


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except FileNotFoundError:
        raise ReplayError(
            f"{path}: no such file; a record holds {SCENARIO}, {HISTORY} and {FAULTS}"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ReplayError(f"{path}: unreadable ({exc})") from None


def _write(path: Path, text: str) -> None:
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(text)
    temporary.replace(path)  # readers never see half a file
