"""Java ``.properties`` files, read exactly as ``java.util.Properties.load(InputStream)`` reads them.

Kafka loads ``server.properties`` with ``Utils.loadProps``, which hands ``Properties.load`` a byte stream, so
the file is decoded as ISO-8859-1 (non-Latin-1 text must be written as ``\\uXXXX``). Rules: a logical line
may continue over several natural lines when it ends in an odd number of backslashes (the leading
whitespace of each continuation is dropped); ``#`` or ``!`` as the first non-blank character of a line starts
a comment, which never continues; the key ends at the first unescaped ``=``, ``:`` or blank; blanks around
the separator are skipped; escapes are ``\\t \\n \\r \\f \\uXXXX`` and ``\\`` before any other character
stands for that character. A later key replaces an earlier one.
"""

from __future__ import annotations

from pathlib import Path

from ._errors import ConfigError

__all__ = ["parse_properties", "load_properties"]

_BLANKS = " \t\f"
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def load_properties(path: Path) -> dict[str, str]:
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise ConfigError.plain(f"cannot read properties file {path}: {e.strerror or e}") from None
    try:
        return parse_properties(data.decode("iso-8859-1"))
    except ConfigError as e:
        raise ConfigError.plain(f"{path}: {e}") from None


def parse_properties(text: str) -> dict[str, str]:
    properties: dict[str, str] = {}
    for line in _logical_lines(text):
        key, value = _split(line)
        properties[_unescape(key)] = _unescape(value)
    return properties


def _natural_lines(text: str) -> list[str]:
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def _logical_lines(text: str):
    pending: str | None = None  # a logical line still being continued
    for natural in _natural_lines(text):
        stripped = natural.lstrip(_BLANKS)
        if pending is None:
            if stripped == "" or stripped[0] in "#!":
                continue
            line = stripped
        else:
            line = pending + stripped
        if _ends_in_odd_backslashes(line):
            pending = line[:-1]
            continue
        pending = None
        yield line
    if pending:  # a continuation at end of input: the backslash is dropped
        yield pending


def _ends_in_odd_backslashes(line: str) -> bool:
    return (len(line) - len(line.rstrip("\\"))) % 2 == 1


def _split(line: str) -> tuple[str, str]:
    """``Properties.load0``: where the key ends and the value starts."""
    key_end, value_start, has_separator, escaped = len(line), len(line), False, False
    for i, ch in enumerate(line):
        if not escaped and ch in "=:":
            key_end, value_start, has_separator = i, i + 1, True
            break
        if not escaped and ch in _BLANKS:
            key_end, value_start = i, i + 1
            break
        escaped = ch == "\\" and not escaped
    while value_start < len(line):
        ch = line[value_start]
        if ch not in _BLANKS:
            if has_separator or ch not in "=:":
                break
            has_separator = True
        value_start += 1
    return line[:key_end], line[value_start:]


def _unescape(text: str) -> str:
    """``Properties.loadConvert``."""
    if "\\" not in text:
        return text
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        i += 1
        if ch != "\\":
            out.append(ch)
            continue
        if i == len(text):
            break
        ch = text[i]
        i += 1
        if ch == "u":
            digits = text[i : i + 4]
            if len(digits) != 4 or any(c not in "0123456789abcdefABCDEF" for c in digits):
                raise ConfigError.plain("Malformed \\uxxxx encoding.")
            out.append(chr(int(digits, 16)))
            i += 4
        else:
            out.append(_ESCAPES.get(ch, ch))
    return _join_surrogates("".join(out))


def _join_surrogates(text: str) -> str:
    """Java strings are UTF-16: an escaped surrogate pair (``\\ud83d\\ude00``) is one character."""
    if not any("\ud800" <= ch <= "\udfff" for ch in text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
