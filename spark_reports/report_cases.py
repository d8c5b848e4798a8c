"""Stored cases travel with the report: every case a divergence card or a crash names is copied into
the report's ``cases/`` folder, and its repro command names the copy by a path relative to the report,
so the commands work wherever the report folder is moved or unpacked."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

from .model import Rollup

__all__ = ["CASES_DIR", "copy_cases"]

CASES_DIR = "cases"


def _relative_names(sources: list[Path]) -> dict[Path, str]:
    """Each case file -> ``cases/<its run directory>/<file>``, numbered when two runs share a name."""
    names: dict[Path, str] = {}
    taken: set[str] = set()
    for source in sorted(set(sources)):
        stem = f"{CASES_DIR}/{source.parent.parent.name}"
        name, n = f"{stem}/{source.name}", 1
        while name in taken:
            n += 1
            name = f"{stem}-{n}/{source.name}"
        taken.add(name)
        names[source] = name
    return names


def copy_cases(rollup: Rollup, out: Path) -> Rollup:
    """Copy the roll-up's example cases under ``out`` and return the roll-up with paths and repro
    commands relative to ``out``. A case file gone since the runs were read keeps no command."""
    sources = [
        Path(c)
        for c in (*(d.example_case for d in rollup.divergences), *(c.example_case for c in rollup.crashes))
        if c
    ]
    names = _relative_names(sources)
    copied: dict[Path, str | None] = {}
    for source, name in names.items():
        target = out / name
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
            copied[source] = name
        except FileNotFoundError:
            copied[source] = None

    def moved(row):
        if not row.example_case:
            return row
        name = copied.get(Path(row.example_case))
        return dataclasses.replace(row, example_case=name, repro=f"kconform repro {name}" if name else None)

    rollup.divergences = [moved(d) for d in rollup.divergences]
    rollup.crashes = [moved(c) for c in rollup.crashes]
    return rollup
