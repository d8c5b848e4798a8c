"""The hosted-CI helper that rebuilds errors.tsv reads both styles of Kafka's Errors enum."""

from __future__ import annotations

import importlib.util
from pathlib import Path

_PATH = Path(__file__).resolve().parents[2] / "ci" / "make_error_table.py"
_spec = importlib.util.spec_from_file_location("make_error_table", _PATH)
make_error_table = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_error_table)

ERRORS_JAVA = """public enum Errors {
    UNKNOWN_SERVER_ERROR(-1, "The server experienced an unexpected error when processing the request.",
            UnknownServerException::new),
    NONE(0, null, message -> null),
    INVALID_SESSION_TIMEOUT(26,
            "The session timeout is not within " +
            "(as configured).",
        new ApiExceptionBuilder() {
            @Override
            public ApiException build(String message) {
                return new InvalidSessionTimeoutException(message);
            }
        });
    private final short code;
"""


def test_both_enum_styles():
    assert list(make_error_table.entries(ERRORS_JAVA)) == [
        (
            "UNKNOWN_SERVER_ERROR",
            -1,
            "UnknownServerException",
            "The server experienced an unexpected error when processing the request.",
        ),
        ("NONE", 0, None, ""),
        (
            "INVALID_SESSION_TIMEOUT",
            26,
            "InvalidSessionTimeoutException",
            "The session timeout is not within (as configured).",
        ),
    ]


def test_table_with_exception_hierarchy(tmp_path, capsys):
    protocol = tmp_path / "clients/src/main/java/org/apache/kafka/common/protocol"
    errors = tmp_path / "clients/src/main/java/org/apache/kafka/common/errors"
    protocol.mkdir(parents=True)
    errors.mkdir(parents=True)
    (protocol / "Errors.java").write_text(
        "public enum Errors {\n"
        '    NOT_LEADER_OR_FOLLOWER(6, "Not leader.", NotLeaderOrFollowerException::new);\n'
        "}\n"
    )
    (errors / "NotLeaderOrFollowerException.java").write_text(
        "public class NotLeaderOrFollowerException extends InvalidMetadataException {}"
    )
    (errors / "InvalidMetadataException.java").write_text(
        "public abstract class InvalidMetadataException extends RetriableException {}"
    )
    assert make_error_table.main(tmp_path) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == "6\tNOT_LEADER_OR_FOLLOWER\tNotLeaderOrFollowerException\ttrue\ttrue\tNot leader."


def test_errors_tsv_matches_the_generated_table(spec_dir):
    from kconform.codecs.errors import all_errors

    rows = [line.split("\t") for line in (spec_dir / "errors.tsv").read_text().splitlines()[1:]]
    assert [(int(r[0]), r[1], r[3] == "true", r[4] == "true") for r in rows] == [
        (e.code, e.name, e.retriable, e.invalid_metadata) for e in all_errors()
    ]
