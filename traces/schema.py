"""The trace schema: one row per request/response exchange, and the version every file carries.

The schema is versioned (``SCHEMA_VERSION``, also stored in every file's metadata); ``SCHEMA`` below
is its definition, one commented column a line. A change to a column is a new version."""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

__all__ = ["OUTCOMES", "SCHEMA", "SCHEMA_VERSION", "TraceRow"]

SCHEMA_VERSION = 2  # 2 added ``signatures``; files of version 1 read with it empty
OUTCOMES = ("pass", "diverge", "error", "timeout", "closed", "skipped")

SCHEMA = pa.schema(
    [
        pa.field("run_id", pa.string(), nullable=False),
        pa.field("seq", pa.int64(), nullable=False),  # position of the exchange in the run, from 0
        pa.field("case_id", pa.string()),
        pa.field("target", pa.string(), nullable=False),
        pa.field("api_key", pa.int16(), nullable=False),
        pa.field("api_name", pa.string()),
        pa.field("api_version", pa.int16(), nullable=False),
        pa.field("correlation_id", pa.int32()),
        pa.field("request_bytes", pa.int32()),
        pa.field("response_bytes", pa.int32()),
        pa.field("latency_us", pa.int64()),
        pa.field("error_codes", pa.list_(pa.int16())),  # every error code in the response, in order
        pa.field("outcome", pa.string(), nullable=False),
        pa.field("signature", pa.string()),  # the divergence signature, when outcome is "diverge"
        pa.field("signatures", pa.list_(pa.string())),  # every field's signature, ``signature`` first
        pa.field("topics", pa.list_(pa.string())),
        pa.field("faults", pa.list_(pa.string())),  # faults active during the exchange
        pa.field("verdict", pa.string()),  # a checker's verdict, for chaos runs
        pa.field("started_at", pa.timestamp("us", tz="UTC"), nullable=False),
    ],
    metadata={b"kconform.trace.schema_version": str(SCHEMA_VERSION).encode()},
)


@dataclass(slots=True)
class TraceRow:
    """One exchange as the harness records it; the writer adds ``run_id`` and ``seq``."""

    target: str
    api_key: int
    api_version: int
    outcome: str
    case_id: str | None = None
    api_name: str | None = None
    correlation_id: int | None = None
    request_bytes: int | None = None
    response_bytes: int | None = None
    latency_us: int | None = None
    error_codes: list[int] = field(default_factory=list)
    signature: str | None = None
    signatures: list[str] = field(default_factory=list)
    topics: list[str] = field(default_factory=list)
    faults: list[str] = field(default_factory=list)
    verdict: str | None = None
    started_at_us: int | None = None  # microseconds since the epoch; now when not given
