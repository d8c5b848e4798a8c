"""The broker, the harness, the reports and the faults use the codecs' public API only: no module of
theirs imports a ``_private`` codec module (the generated packages and ``engines`` re-export what they
need)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
USERS = ("reference_broker", "harness", "spark_reports", "faults")


def _private_codec_imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("kconform.codecs"):
            parts = node.module.split(".")[2:]
            names = [alias.name for alias in node.names]
            if any(p.startswith("_") for p in parts) or any(n.startswith("_") for n in names):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: from {node.module} import {names}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("kconform.codecs.") and any(
                    p.startswith("_") for p in alias.name.split(".")[2:]
                ):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}: import {alias.name}")
    return found


def test_no_private_codec_imports_outside_the_codecs():
    found = [
        hit
        for user in USERS
        for path in sorted((ROOT / user).rglob("*.py"))
        for hit in _private_codec_imports(path)
    ]
    assert found == []


def test_the_check_sees_a_private_import(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text("from kconform.codecs._runtime import ZERO_UUID\nimport kconform.codecs._native\n")
    original = _private_codec_imports.__globals__["ROOT"]
    _private_codec_imports.__globals__["ROOT"] = tmp_path
    try:
        assert len(_private_codec_imports(planted)) == 2
    finally:
        _private_codec_imports.__globals__["ROOT"] = original
