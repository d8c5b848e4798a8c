"""A history as JSON lines, so a run's checks can be replayed without the run: ``history_lines`` writes,
``parse_history`` reads, neither touches a file.

The first line says what the file is, ``{"format": "kconform-chaos-history", "version": 1}``; then one
line per operation in history order, then the bookkeeping (assignments, commits, watermarks, leader
changes), each line an object with a ``kind``; the last line, ``{"kind": "end", ...}``, counts what came
before it, so a file cut short at a line boundary is caught as surely as one cut mid-line.

- ``{"kind": "op", "index": 3, "process": 1, "type": "ok", "time_ns": ..., "mops": [...]}`` with
  ``transactional`` and ``note`` when set. A send is ``{"send": ["t", 0], "value": V}`` with ``offset``,
  ``broker`` and ``leader_epoch`` when known; a poll is ``{"poll": [[["t", 0], [[offset, V], ...]], ...]}``
  with ``high_watermarks`` (``[[["t", 0], 12], ...]``) when known.
- ``{"kind": "assignment" | "commit" | "watermark" | "leader-change" | "broker-view" | "replica-read" |
  "replication-cut", ...}``: their fields by name (a replica read's records as ``[[offset, V], ...]``).

Values keep their type: a JSON string is a str, ``{"b": "text"}`` bytes that are UTF-8, ``{"x": "hex"}``
other bytes; numbers, booleans and null as themselves. Anything else is written as ``{"repr": ...}`` and
read back as that text (workloads write bytes)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import fields
from typing import Any

from .history import (
    Assignment,
    BrokerView,
    Commit,
    History,
    LeaderChange,
    Op,
    Poll,
    ReplicaRead,
    ReplicationCut,
    Send,
    Watermark,
)

__all__ = ["FORMAT", "VERSION", "HistoryFileError", "history_lines", "parse_history"]

FORMAT = "kconform-chaos-history"
VERSION = 1
_TYPES = ("invoke", "ok", "fail", "info")
_BOOKKEEPING = {  # kind -> (record, History attribute)
    "assignment": (Assignment, "assignments"),
    "commit": (Commit, "commits"),
    "watermark": (Watermark, "watermarks"),
    "leader-change": (LeaderChange, "leader_changes"),
    "broker-view": (BrokerView, "broker_views"),
    "replica-read": (ReplicaRead, "replica_reads"),
    "replication-cut": (ReplicationCut, "replication_cuts"),
}


class HistoryFileError(ValueError):
    """A history file that cannot be read whole; the message names the line."""


def history_lines(history: History) -> Iterator[str]:
    """Every line of the file, without newlines."""
    yield _dump({"format": FORMAT, "version": VERSION})
    for op in history.ops:
        line = {"kind": "op", "index": op.index, "process": op.process, "type": op.type}
        line |= {"time_ns": op.time_ns, "mops": [_mop(m) for m in op.mops]}
        if op.transactional:
            line["transactional"] = True
        if op.note:
            line["note"] = op.note
        yield _dump(line)
    for kind, (_, attribute) in _BOOKKEEPING.items():
        for entry in getattr(history, attribute):
            line = {f.name: _FIELD_WRITERS.get(f.name, _plain)(getattr(entry, f.name)) for f in fields(entry)}
            yield _dump({"kind": kind, **line})
    yield _dump({"kind": "end", **_counts(history)})


def parse_history(lines: Iterable[str]) -> History:
    """The history the lines hold; ``HistoryFileError`` (naming the line) for anything else."""
    history = History()
    number, ended = 0, False
    for number, text in enumerate(lines, 1):
        if ended:
            raise HistoryFileError(f"line {number}: more after the end line")
        try:
            line = json.loads(text)
        except json.JSONDecodeError as exc:
            raise HistoryFileError(f"line {number}: not JSON (a line cut short?): {exc.msg}") from None
        if not isinstance(line, dict):
            raise HistoryFileError(f"line {number}: expected a JSON object")
        if number == 1:
            _check_header(line)
            continue
        try:
            ended = _take(history, line)
        except (KeyError, TypeError, ValueError) as exc:
            raise HistoryFileError(f"line {number}: a {line.get('kind')!r} line {_why(exc)}") from None
        # an end line written before a kind of bookkeeping existed has no count of it: none
        if ended and (counts := _counts(history)) != {k: line.get(k, 0) for k in counts}:
            raise HistoryFileError(
                f"line {number}: the end line counts {_show(line)}, the file holds {counts}"
            )
    if number == 0:
        raise HistoryFileError("empty: not even its header line")
    if not ended:
        raise HistoryFileError(f"ends at line {number} without its end line: the file was cut short")
    return history


def _check_header(line: dict) -> None:
    if line.get("format") != FORMAT:
        raise HistoryFileError(f"line 1: not a kconform history (format {line.get('format')!r})")
    if line.get("version") != VERSION:
        raise HistoryFileError(
            f"line 1: history version {line.get('version')!r}; this kconform reads version {VERSION}"
        )


def _take(history: History, line: dict) -> bool:
    """Add one line's entry; True for the end line."""
    kind = line["kind"]
    if kind == "op":
        if line["index"] != len(history.ops):
            raise ValueError(f"has index {line['index']}, expected {len(history.ops)}")
        if line["type"] not in _TYPES:
            raise ValueError(f"has type {line['type']!r}, not one of {', '.join(_TYPES)}")
        mops = tuple(_parse_mop(m) for m in line["mops"])
        history.ops.append(
            Op(
                line["index"],
                int(line["process"]),
                line["type"],
                mops,
                int(line["time_ns"]),
                bool(line.get("transactional", False)),
                str(line.get("note", "")),
            )
        )
    elif kind in _BOOKKEEPING:
        cls, attribute = _BOOKKEEPING[kind]
        given = {k: _FIELD_READERS.get(k, _same)(v) for k, v in line.items() if k != "kind"}
        getattr(history, attribute).append(cls(**given))
    elif kind == "end":
        return True
    else:
        raise ValueError("is of no kind this kconform knows")
    return False


def _mop(mop: Send | Poll) -> dict:
    if isinstance(mop, Send):
        out: dict[str, Any] = {"send": list(mop.partition), "value": _value(mop.value)}
        for name in ("offset", "broker", "leader_epoch"):
            if getattr(mop, name) is not None:
                out[name] = getattr(mop, name)
        return out
    out = {"poll": [[list(p), [[o, _value(v)] for o, v in records]] for p, records in mop.records.items()]}
    if mop.high_watermarks:
        out["high_watermarks"] = [[list(p), hw] for p, hw in mop.high_watermarks.items()]
    return out


def _parse_mop(raw: dict) -> Send | Poll:
    if "send" in raw:
        return Send(
            _partition(raw["send"]),
            _parse_value(raw["value"]),
            raw.get("offset"),
            raw.get("broker"),
            raw.get("leader_epoch"),
        )
    records = {_partition(p): tuple((int(o), _parse_value(v)) for o, v in read) for p, read in raw["poll"]}
    return Poll(records, {_partition(p): int(hw) for p, hw in raw.get("high_watermarks", [])})


def _plain(value: Any) -> Any:
    """A bookkeeping field as JSON: partitions as [topic, number], sets sorted, maps as sorted pairs."""
    if isinstance(value, frozenset):
        return sorted(list(p) for p in value)
    if isinstance(value, dict):
        return sorted(value.items())
    return list(value) if isinstance(value, tuple) else value


def _same(value: Any) -> Any:
    return value


def _partition(raw: Any) -> tuple[str, int]:
    topic, partition = raw
    if not isinstance(topic, str):
        raise ValueError(f"names a partition {raw!r}: expected [topic, number]")
    return topic, int(partition)


_FIELD_READERS = {  # bookkeeping fields that JSON cannot give as they are
    "partition": _partition,
    "partitions": lambda raw: frozenset(_partition(p) for p in raw),
    "isr_log_end_offsets": lambda raw: {int(node): int(offset) for node, offset in raw},
    "isr": lambda raw: tuple(int(node) for node in raw),
    "records": lambda raw: tuple((int(offset), _parse_value(value)) for offset, value in raw),
}
_FIELD_WRITERS = {"records": lambda records: [[offset, _value(value)] for offset, value in records]}


def _value(value: object) -> Any:
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, bytes):
        try:
            return {"b": value.decode()}
        except UnicodeDecodeError:
            return {"x": value.hex()}
    return {"repr": repr(value)}


def _parse_value(raw: Any) -> object:
    if isinstance(raw, dict):
        if "b" in raw:
            return raw["b"].encode()
        if "x" in raw:
            return bytes.fromhex(raw["x"])
        return str(raw["repr"])
    return raw


def _counts(history: History) -> dict[str, int]:
    return {
        "ops": len(history.ops),
        "assignments": len(history.assignments),
        "commits": len(history.commits),
        "watermarks": len(history.watermarks),
        "leader_changes": len(history.leader_changes),
        "broker_views": len(history.broker_views),
        "replica_reads": len(history.replica_reads),
        "replication_cuts": len(history.replication_cuts),
    }


def _dump(line: dict) -> str:
    return json.dumps(line, separators=(",", ":"))


def _show(line: dict) -> str:
    return str({k: v for k, v in line.items() if k != "kind"})


def _why(exc: Exception) -> str:
    if isinstance(exc, KeyError):
        return f"lacks the field {exc}"
    if isinstance(exc, TypeError):
        return f"has a field of the wrong shape ({exc})"
    return str(exc)
