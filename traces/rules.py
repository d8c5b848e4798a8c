"""Rule rows: one per conformance test (a rule at one version on one target), the conformance run's
trace. A run directory of ``kconform conform`` holds ``rules/part-000000.parquet`` beside ``conform.json``;
the reports roll them up into the rules grid and the per-API ledger.

Like ``SCHEMA``, the schema is versioned, and a change to a column is a new version."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

__all__ = [
    "RULE_OUTCOMES",
    "RULE_SCHEMA",
    "RULE_SCHEMA_VERSION",
    "RuleRow",
    "semantics_grade",
    "write_rule_rows",
]

RULE_SCHEMA_VERSION = 1
# not-run: a budgeted run (a campaign's share) ended before the test started
RULE_OUTCOMES = ("pass", "fail", "error", "not-applicable", "not-run")

RULE_SCHEMA = pa.schema(
    [
        pa.field("run_id", pa.string(), nullable=False),
        pa.field("target", pa.string(), nullable=False),
        pa.field("rule_id", pa.string(), nullable=False),
        pa.field("family", pa.string(), nullable=False),
        pa.field("api_key", pa.int16(), nullable=False),
        pa.field("api_name", pa.string(), nullable=False),
        pa.field("api_version", pa.int16(), nullable=False),  # -1: the rule ran at no version here
        pa.field("outcome", pa.string(), nullable=False),  # one of RULE_OUTCOMES
        pa.field("expected_outcome", pa.string(), nullable=False),  # what is known of this kind of target
        pa.field("surprise", pa.bool_(), nullable=False),  # outcome is news against expected_outcome
        pa.field("field", pa.string()),  # where the answer differs from Kafka's, on a failure
        pa.field("kafka_value", pa.string()),  # what Kafka gives there
        pa.field("target_value", pa.string()),  # what the target gave
        pa.field("detail", pa.string()),  # why it could not run, or the note of a failure
        pa.field("kafka_source", pa.string(), nullable=False),  # where Kafka's source makes the decision
        pa.field("duration_us", pa.int64(), nullable=False),
        pa.field("started_at", pa.timestamp("us", tz="UTC"), nullable=False),
    ],
    metadata={b"kconform.rules.schema_version": str(RULE_SCHEMA_VERSION).encode()},
)


def semantics_grade(passed: int, failed: int) -> str:
    """How much of Kafka's behaviour for an API holds on a target: full (every test that ran passed),
    partial, none (tests ran, none passed) or untested."""
    if passed + failed == 0:
        return "untested"
    if failed == 0:
        return "full"
    return "partial" if passed else "none"


@dataclass(frozen=True, slots=True)
class RuleRow:
    target: str
    rule_id: str
    family: str
    api_key: int
    api_name: str
    api_version: int
    outcome: str
    expected_outcome: str
    surprise: bool
    kafka_source: str
    duration_us: int
    started_at_us: int
    field: str | None = None
    kafka_value: str | None = None
    target_value: str | None = None
    detail: str | None = None


def write_rule_rows(run_dir: str | Path, run_id: str, rows: Iterable[RuleRow]) -> Path:
    """Write the run's rows as ``rules/part-000000.parquet`` (to a temporary name, then renamed: the file
    is whole or absent); return its path."""
    rows = list(rows)
    bad = sorted({r.outcome for r in rows} - set(RULE_OUTCOMES))
    if bad:
        raise ValueError(f"rule outcome(s) {', '.join(bad)} not among {', '.join(RULE_OUTCOMES)}")
    columns: dict[str, list] = {name: [] for name in RULE_SCHEMA.names}
    for row in rows:
        for name in RULE_SCHEMA.names:
            if name == "run_id":
                columns[name].append(run_id)
            elif name == "started_at":
                columns[name].append(row.started_at_us)
            else:
                columns[name].append(getattr(row, name))
    table = pa.Table.from_pydict(columns, schema=RULE_SCHEMA)
    directory = Path(run_dir) / "rules"
    directory.mkdir(parents=True, exist_ok=True)
    final = directory / "part-000000.parquet"
    temporary = final.with_suffix(".parquet.tmp")
    pq.write_table(table, temporary)
    os.replace(temporary, final)
    return final
