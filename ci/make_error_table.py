"""Write the error-code table (errors.tsv) from an Apache Kafka source checkout, for hosted CI.

Usage: python3 ci/make_error_table.py KAFKA_SOURCE_DIR > errors.tsv

Reads clients/.../protocol/Errors.java for each code, name, exception class and default message, and
the exception classes' ``extends`` chains for whether each is retriable or signals stale metadata."""

from __future__ import annotations

import re
import sys
from pathlib import Path

_ENTRY_START = re.compile(r"^\s*([A-Z][A-Z_0-9]*)\(\s*(-?\d+)\s*,", re.M)
_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')
_BUILDER = re.compile(r"(\w+)::new|new\s+(\w+)\(\s*message")
_EXTENDS = re.compile(r"class\s+(\w+)\s+extends\s+(\w+)")


def entries(text: str):
    """(name, code, exception class or None, message) for each constant of the Errors enum."""
    body = text[: text.find(";", text.find("enum Errors"))] if "enum Errors" in text else text
    starts = list(_ENTRY_START.finditer(body))
    for i, match in enumerate(starts):
        chunk = body[match.end() : starts[i + 1].start() if i + 1 < len(starts) else len(body)]
        builder = _BUILDER.search(chunk)
        exception = (builder.group(1) or builder.group(2)) if builder else None
        message = "".join(_STRING.findall(chunk[: builder.start()] if builder else chunk))
        yield match.group(1), int(match.group(2)), exception, message.replace('\\"', '"')


def main(source: Path) -> int:
    errors_java = next(
        source.glob("clients/src/main/java/org/apache/kafka/common/protocol/Errors.java"), None
    )
    if errors_java is None:
        print(f"no Errors.java under {source}", file=sys.stderr)
        return 2
    parents: dict[str, str] = {}
    for java in source.glob("clients/src/main/java/org/apache/kafka/common/errors/*.java"):
        match = _EXTENDS.search(java.read_text())
        if match:
            parents[match.group(1)] = match.group(2)

    def descends(cls: str | None, ancestor: str) -> bool:
        while cls:
            if cls == ancestor:
                return True
            cls = parents.get(cls)
        return False

    print("code\tname\texception\tretriable\tinvalid_metadata\tmessage")
    for name, code, exc, message in entries(errors_java.read_text()):
        retriable = descends(exc, "RetriableException")
        invalid = descends(exc, "InvalidMetadataException")
        print(f"{code}\t{name}\t{exc or ''}\t{str(retriable).lower()}\t{str(invalid).lower()}\t{message}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(Path(sys.argv[1])))
