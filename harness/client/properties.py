"""Java ``.properties`` files, as ``java.util.Properties.load`` reads them: ``key=value``, ``key: value``
or ``key value``; ``#`` and ``!`` comments; a trailing backslash continues the line (the next line's
leading blanks dropped); backslash escapes (``\\t``, ``\\n``, ``\\uXXXX``, ``\\=`` ...) in keys and values."""

from __future__ import annotations

import re
from pathlib import Path

from .config import ClientConfigError

__all__ = ["parse_properties", "read_properties"]

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|.)", re.DOTALL)


def _unescape(text: str) -> str:
    def one(match: re.Match) -> str:
        code = match.group(1)
        if len(code) == 5:
            return chr(int(code[1:], 16))
        return _ESCAPES.get(code, code)

    return _ESCAPE.sub(one, text)


def _logical_lines(text: str):
    pending = ""
    for number, line in enumerate(text.splitlines(), 1):
        line = line.lstrip(" \t\f")
        if not pending and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2:  # an odd number of backslashes: the line goes on
            pending += line[:-1]
            continue
        yield number, pending + line
        pending = ""
    if pending:
        yield None, pending


def parse_properties(text: str, source: str = "properties") -> dict[str, str]:
    properties: dict[str, str] = {}
    for number, line in _logical_lines(text):
        match = re.match(r"((?:\\.|[^=:\s\\])*)\s*[=:]?\s*(.*)$", line, re.DOTALL)
        key = _unescape(match.group(1)) if match else ""
        if not key:
            where = f"line {number}" if number else "the last line"
            raise ClientConfigError(f"{source}, {where}: no property name in {line.strip()[:60]!r}")
        properties[key] = _unescape(match.group(2))
    return properties


def read_properties(path: str | Path) -> dict[str, str]:
    """The properties of a file, or ClientConfigError naming the file and what is wrong."""
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise ClientConfigError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")  # Properties.load(InputStream) reads ISO 8859-1
    return parse_properties(text, str(path))
