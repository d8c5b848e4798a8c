"""Stored cases: one JSON file per cause, the operations by class name with their fields, so that
``kconform repro`` replays a case on any pair of targets."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from .drawing import OPERATIONS

__all__ = ["load_case", "operations_from_json", "operations_json", "save_case"]


def operations_json(case: list) -> list[dict]:
    """A case's operations as JSON-ready dicts (bytes as ``{"hex": ...}``)."""
    return json.loads(
        json.dumps([{"op": type(op).__name__, **dataclasses.asdict(op)} for op in case], default=_bytes_json)
    )


def operations_from_json(entries: list[dict]) -> list:
    return [_operation(entry) for entry in entries]


def save_case(path: Path, case: list, **about) -> None:
    """Write ``case`` with whatever describes it (its cause, signature, targets, whether shrunk)."""
    data = {**about, "operations": operations_json(case)}
    if "targets" in data:
        data["targets"] = list(data["targets"])
    path.write_text(json.dumps(data, indent=2) + "\n")


def _bytes_json(value):
    if isinstance(value, bytes):
        return {"hex": value.hex()}
    raise TypeError(type(value).__name__)


def load_case(path: Path) -> tuple[list, dict]:
    """The operations of a stored case and everything else the file says. Raises ValueError (with the
    file's name) for a file that is not a case."""
    try:
        data = json.loads(Path(path).read_text())
        entries = data["operations"]
        case = operations_from_json(entries)
    except (KeyError, TypeError, AttributeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path} is not a kconform case file: {exc!r}") from None
    if not case:
        raise ValueError(f"{path} holds no operations")
    return case, data


def _operation(entry: dict):
    entry = dict(entry)
    name = entry.pop("op")
    cls = OPERATIONS.get(name)
    if cls is None:
        raise KeyError(f"unknown operation {name!r}")
    for key, value in entry.items():
        if isinstance(value, list):
            entry[key] = tuple(bytes.fromhex(v["hex"]) if isinstance(v, dict) else v for v in value)
    return cls(**entry)
