"""Field-by-field comparison of two normalised trees, and the signature that names a difference.

A signature is ``api/version/path/kind`` with list indices generalised (``topics[*].partitions[*]
.error_code``), so the same behaviour seen on many partitions or runs counts as one difference."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

__all__ = ["Difference", "diff_trees", "signature"]

_INDEX = re.compile(r"\[\d+\]")


@dataclass(frozen=True, slots=True)
class Difference:
    path: str  # with indices: topics[0].partitions[2].error_code
    kind: str  # value, error_code, missing, extra, length, type
    a: Any
    b: Any

    @property
    def generic_path(self) -> str:
        return _INDEX.sub("[*]", self.path)


def diff_trees(a: Any, b: Any, path: str = "") -> list[Difference]:
    if a is b:  # one answer, decoded once for both sides
        return []
    out: list[Difference] = []
    _walk(a, b, path, out)
    return out


def _walk(a: Any, b: Any, path: str, out: list[Difference]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in a.keys() | b.keys():
            where = f"{path}.{key}" if path else key
            if key not in b:
                out.append(Difference(where, "missing", a[key], None))
            elif key not in a:
                out.append(Difference(where, "extra", None, b[key]))
            else:
                _walk(a[key], b[key], where, out)
        return
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append(Difference(path, "length", len(a), len(b)))
        for index, (x, y) in enumerate(zip(a, b, strict=False)):
            _walk(x, y, f"{path}[{index}]", out)
        return
    if type(a) is not type(b) and not (isinstance(a, int | float) and isinstance(b, int | float)):
        out.append(Difference(path, "type", a, b))
        return
    if a != b:
        kind = "error_code" if path.endswith("error_code") else "value"
        out.append(Difference(path, kind, a, b))


def signature(api_name: str, version: int, difference: Difference) -> str:
    return f"{api_name}/v{version}/{difference.generic_path}/{difference.kind}"
