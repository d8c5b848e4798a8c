"""Synthetic traces: realistic trace tables of any size, for the roll-up's benchmark and tests.

Each run directory looks like one the harness writes: ``traces/part-NNNNNN.parquet`` in the real schema,
and beside them what ``kconform diff`` leaves (``run.json``, ``summary.json``, ``cases/``) or what
``kconform chaos`` leaves (``chaos.json``). A diff run holds each exchange once per target, as the
differential engine records it (same case, API, version, outcome and signature on every target); APIs
and versions come from the API catalogue the caller passes (the harness builds it from the codecs' registry:
``kconform.harness.catalogue.api_catalogue()``), divergence signatures have the real form
``Api/vN/field.path/kind``, latencies are log-normal and slower under faults. A chaos run holds
operation rows (api_version -1) on one target, and a fault row (api_key -1) at each fault's start.

Everything is drawn with NumPy from ``seed`` and built column by column with pyarrow, so ten million
rows take seconds. Tests read the tables back (``read_traces``) to work out what a roll-up must say."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from kconform.traces import SCHEMA, ApiCatalogue

__all__ = ["DEFAULT_ROW_GROUP_ROWS", "synthesise"]

DEFAULT_ROW_GROUP_ROWS = 1_000_000
BASE_TIME_US = 1_767_225_600_000_000  # 2026-01-01T00:00:00Z

# API name -> (share of exchanges, median latency in us): the mix a differential campaign produces.
DIFF_MIX = {
    "Produce": (24, 900),
    "Fetch": (24, 1500),
    "Metadata": (10, 400),
    "ListOffsets": (6, 350),
    "OffsetCommit": (6, 600),
    "OffsetFetch": (6, 450),
    "FindCoordinator": (6, 300),
    "JoinGroup": (3, 5000),
    "SyncGroup": (3, 800),
    "Heartbeat": (5, 250),
    "ApiVersions": (2, 150),
    "CreateTopics": (2, 8000),
    "DeleteRecords": (1, 700),
    "InitProducerId": (2, 1200),
}
CHAOS_MIX = {"Produce": (60, 2500), "Fetch": (35, 4000), "OffsetCommit": (5, 1500)}
OUTCOME_SHARES = {
    "pass": 0.90,
    "diverge": 0.04,
    "error": 0.03,
    "timeout": 0.01,
    "closed": 0.01,
    "skipped": 0.01,
}
FAULTS = (
    "latency@broker-0(latency=100,jitter=10)",
    "reset_peer@*(timeout=0)",
    "bandwidth@*(rate=64)",
    "slicer@*(average_size=64,size_variation=32,delay=10)",
    "timeout@broker-1(timeout=500)",
)
FIELDS = (  # (generic field path, kind of difference), as the comparator names them
    ("responses[*].partitions[*].high_watermark", "value"),
    ("responses[*].partitions[*].error_code", "error_code"),
    ("responses[*].partitions[*].aborted_transactions", "type"),
    ("topics[*].partitions[*].metadata", "type"),
    ("throttle_time_ms", "value"),
    ("brokers", "length"),
    ("error_code", "error_code"),
    ("<connection>", "fate"),
)
ERROR_CODES = np.array([3, 6, 7, 15, 16, 22, 25, 27, 87], dtype=np.int16)
SIGNATURES = 36


@dataclass(frozen=True, slots=True)
class _Mix:
    """The APIs a run draws from, as parallel arrays."""

    keys: np.ndarray
    names: pa.Array
    low: np.ndarray  # lowest and highest valid version
    high: np.ndarray
    shares: np.ndarray
    median_us: np.ndarray

    @classmethod
    def of(cls, mix: dict[str, tuple[int, int]], catalogue: ApiCatalogue) -> _Mix:
        picked = [catalogue.named(name) for name in mix]
        shares = np.array([mix[s.name][0] for s in picked], dtype=float)
        return cls(
            keys=np.array([s.api_key for s in picked], dtype=np.int16),
            names=pa.array([s.name for s in picked]),
            low=np.array([s.min_version for s in picked], dtype=np.int16),
            high=np.array([s.max_version for s in picked], dtype=np.int16),
            shares=shares / shares.sum(),
            median_us=np.array([mix[s.name][1] for s in picked], dtype=float),
        )


def synthesise(
    out: Path,
    rows: int,
    *,
    catalogue: ApiCatalogue,
    seed: int = 0,
    runs: int = 1,
    targets: Sequence[str] = ("reference", "rdkafka-mock"),
    row_group_rows: int = DEFAULT_ROW_GROUP_ROWS,
    chaos_runs: int = 0,
) -> list[Path]:
    """Write ``runs`` diff runs and ``chaos_runs`` chaos runs under ``out`` (``diff-N/``, ``chaos-N/``)
    with ``rows`` trace rows between them; return the run directories, diff runs first. ``catalogue``
    gives the key and versions of every API the runs draw from (``DIFF_MIX``, ``CHAOS_MIX``)."""
    if rows < 0 or runs < 0 or chaos_runs < 0 or runs + chaos_runs == 0:
        raise ValueError("synthesise needs rows >= 0 and at least one run")
    if not targets:
        raise ValueError("synthesise needs at least one target")
    known = {entry.name for entry in catalogue.entries}
    missing = [name for name in {**DIFF_MIX, **CHAOS_MIX} if name not in known]
    if missing:
        raise ValueError(f"the API catalogue lacks {', '.join(missing)}, which synthetic runs exchange")
    diff_mix, chaos_mix = _Mix.of(DIFF_MIX, catalogue), _Mix.of(CHAOS_MIX, catalogue)
    rng = np.random.default_rng(seed)
    signatures = _signatures(rng, diff_mix)
    total = runs + chaos_runs
    shares = [rows // total + (1 if i < rows % total else 0) for i in range(total)]
    directories = []
    for number in range(total):
        run_id = rng.bytes(6).hex()
        if number < runs:
            directory = Path(out) / f"diff-{number}"
            table = _diff_table(rng, run_id, shares[number], tuple(targets), diff_mix, signatures, number)
            _write_diff_extras(directory, run_id, tuple(targets), table)
        else:
            directory = Path(out) / f"chaos-{number - runs}"
            target = targets[(number - runs) % len(targets)]
            table = _chaos_table(rng, f"chaos-synth-{run_id}", shares[number], target, chaos_mix, number)
            _write_chaos_extras(directory, f"chaos-synth-{run_id}", target, table, rng)
        _write_parts(directory, table, row_group_rows)
        directories.append(directory)
    return directories


@dataclass(frozen=True, slots=True)
class _Signatures:
    text: pa.Array  # the signature strings
    api: np.ndarray  # index into the diff mix
    version: np.ndarray
    shares: np.ndarray  # a few signatures are common, most are rare


def _signatures(rng: np.random.Generator, mix: _Mix) -> _Signatures:
    seen: dict[str, tuple[int, int]] = {}
    while len(seen) < SIGNATURES:
        api = int(rng.choice(len(mix.keys), p=mix.shares))
        version = int(rng.integers(mix.low[api], mix.high[api] + 1))
        path, kind = FIELDS[int(rng.integers(len(FIELDS)))]
        seen.setdefault(f"{mix.names[api].as_py()}/v{version}/{path}/{kind}", (api, version))
    weights = 1.0 / np.arange(1, SIGNATURES + 1)
    return _Signatures(
        text=pa.array(list(seen)),
        api=np.array([a for a, _ in seen.values()]),
        version=np.array([v for _, v in seen.values()], dtype=np.int16),
        shares=weights / weights.sum(),
    )


def _diff_table(
    rng: np.random.Generator,
    run_id: str,
    rows: int,
    targets: tuple[str, ...],
    mix: _Mix,
    sigs: _Signatures,
    number: int,
) -> pa.Table:
    width = len(targets)
    exchanges = -(-rows // width)  # each exchange is one row per target
    api = rng.choice(len(mix.keys), size=exchanges, p=mix.shares)
    version = _versions(rng, mix, api)
    outcome = rng.choice(len(OUTCOME_SHARES), size=exchanges, p=list(OUTCOME_SHARES.values()))
    diverged = outcome == list(OUTCOME_SHARES).index("diverge")
    signature = np.full(exchanges, -1)
    signature[diverged] = rng.choice(len(sigs.shares), size=int(diverged.sum()), p=sigs.shares)
    api[diverged] = sigs.api[signature[diverged]]  # a signature names its API and version
    version[diverged] = sigs.version[signature[diverged]]
    case = np.cumsum(rng.random(exchanges) < 0.3)  # about three exchanges a case

    def per_row(values: np.ndarray) -> np.ndarray:
        return np.repeat(values, width)[:rows]

    seq = np.arange(rows, dtype=np.int64)
    target = pa.array(targets).take(pa.array(seq % width))
    faults = _faults(rng, rows, share=0.08)
    slowed = pc.greater(pc.list_value_length(faults), 0).to_numpy(zero_copy_only=False)
    codes = _error_codes(rng, per_row(outcome))
    row_signature = per_row(signature)
    field_signatures = _field_signatures(rng, sigs, signature)
    case_text = pc.binary_join_element_wise(
        f"{run_id[:6]}s0c", pc.cast(pa.array(per_row(case)), pa.string()), ""
    )
    topic_pool = pa.array([f"{run_id[:6]}s0c-t{i}" for i in range(3)])
    columns = {
        "run_id": pa.repeat(pa.scalar(run_id), rows),
        "seq": pa.array(seq),
        "case_id": case_text,
        "target": target,
        "api_key": pa.array(mix.keys[per_row(api)]),
        "api_name": mix.names.take(pa.array(per_row(api))),
        "api_version": pa.array(per_row(version)),
        "correlation_id": pa.array((seq // width).astype(np.int32)),
        "request_bytes": pa.array(rng.lognormal(4.5, 0.6, rows).astype(np.int32) + 20),
        "response_bytes": pa.array(rng.lognormal(4.2, 0.8, rows).astype(np.int32) + 8),
        "latency_us": _latencies(rng, mix.median_us[per_row(api)], slowed, per_row(outcome) == 5),
        "error_codes": codes,
        "outcome": pa.array(list(OUTCOME_SHARES)).take(pa.array(per_row(outcome))),
        "signature": sigs.text.take(pa.array(row_signature, mask=row_signature < 0)),
        "signatures": field_signatures.take(pa.array(np.repeat(np.arange(exchanges), width)[:rows])),
        "topics": _lists(rng, topic_pool, rows, lengths=(0.2, 0.7, 0.1)),
        "faults": faults,
        "verdict": pa.nulls(rows, pa.string()),
        "started_at": _times(rng, per_row(np.arange(exchanges)), number),
    }
    return pa.Table.from_pydict(columns, schema=SCHEMA)


def _chaos_table(
    rng: np.random.Generator, run_id: str, rows: int, target: str, mix: _Mix, number: int
) -> pa.Table:
    api = rng.choice(len(mix.keys), size=rows, p=mix.shares)
    marker = rng.random(rows) < 0.002  # a fault starting
    faults = _faults(rng, rows, share=0.3)
    faults = pc.if_else(pa.array(marker), _faults(rng, rows, share=1.0), faults)
    slowed = pc.greater(pc.list_value_length(faults), 0).to_numpy(zero_copy_only=False)
    outcome = np.where(rng.random(rows) < 0.97, 0, rng.choice([2, 3], size=rows))  # pass, error, timeout
    outcome[marker] = 0
    latency = _latencies(rng, mix.median_us[api], slowed, marker)
    scenario = f"synthetic-{number}"
    columns = {
        "run_id": pa.repeat(pa.scalar(run_id), rows),
        "seq": pa.array(np.arange(rows, dtype=np.int64)),
        "case_id": pa.repeat(pa.scalar(scenario), rows),
        "target": pa.repeat(pa.scalar(target), rows),
        "api_key": pa.array(np.where(marker, -1, mix.keys[api]).astype(np.int16)),
        "api_name": pc.if_else(pa.array(marker), "fault", mix.names.take(pa.array(api))),
        "api_version": pa.repeat(pa.scalar(-1, pa.int16()), rows),
        "correlation_id": pa.nulls(rows, pa.int32()),
        "request_bytes": pa.nulls(rows, pa.int32()),
        "response_bytes": pa.nulls(rows, pa.int32()),
        "latency_us": latency,
        "error_codes": pa.ListArray.from_arrays(
            pa.array(np.zeros(rows + 1, np.int32)), pa.array([], pa.int16())
        ),
        "outcome": pa.array(list(OUTCOME_SHARES)).take(pa.array(outcome)),
        "signature": pa.nulls(rows, pa.string()),
        "signatures": pa.ListArray.from_arrays(
            pa.array(np.zeros(rows + 1, np.int32)), pa.array([], pa.string())
        ),
        "topics": pa.repeat(pa.scalar([f"chaos-{scenario}-0"], pa.list_(pa.string())), rows),
        "faults": faults,
        "verdict": pa.repeat(pa.scalar("pass"), rows),
        "started_at": _times(rng, np.arange(rows), number),
    }
    return pa.Table.from_pydict(columns, schema=SCHEMA)


def _field_signatures(rng: np.random.Generator, sigs: _Signatures, signature: np.ndarray) -> pa.Array:
    """Per exchange, every field it differs in: its signature, and for one in four a second field of
    the same API version; empty where it did not diverge."""
    texts = sigs.text.to_pylist()
    second = rng.random(len(signature)) < 0.25
    picks = rng.integers(len(FIELDS), size=len(signature))
    lists: list[list[str]] = []
    for index, number in enumerate(signature.tolist()):
        if number < 0:
            lists.append([])
            continue
        first = texts[number]
        api, version, _ = first.split("/", 2)
        path, kind = FIELDS[int(picks[index])]
        other = f"{api}/{version}/{path}/{kind}"
        lists.append([first, other] if second[index] and other != first else [first])
    return pa.array(lists, pa.list_(pa.string()))


def _versions(rng: np.random.Generator, mix: _Mix, api: np.ndarray) -> np.ndarray:
    span = (mix.high[api] - mix.low[api] + 1).astype(float)
    return (mix.low[api] + np.floor(rng.random(len(api)) * span)).astype(np.int16)


def _latencies(
    rng: np.random.Generator, median_us: np.ndarray, slowed: np.ndarray, none: np.ndarray
) -> pa.Array:
    """Log-normal around each API's median, ten times slower under a fault; null where nothing was sent."""
    values = median_us * rng.lognormal(0.0, 0.7, len(median_us)) * np.where(slowed, 10.0, 1.0)
    return pa.array(np.maximum(values, 1).astype(np.int64), mask=np.asarray(none, dtype=bool))


def _faults(rng: np.random.Generator, rows: int, *, share: float) -> pa.Array:
    """Mostly none; under a fault, now and then two at once."""
    lengths = np.where(rng.random(rows) < share, np.where(rng.random(rows) < 0.2, 2, 1), 0)
    first = rng.integers(len(FAULTS), size=int(lengths.sum()))
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    # a second fault is the next one in the list, so a row never names one fault twice
    second = np.zeros(len(first), dtype=bool)
    second[offsets[1:][lengths == 2] - 1] = True
    first[second] = (first[np.flatnonzero(second) - 1] + 1) % len(FAULTS)
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(FAULTS).take(pa.array(first)))


def _error_codes(rng: np.random.Generator, outcome: np.ndarray) -> pa.Array:
    """One code a partition, zero unless the exchange ended in an error."""
    lengths = rng.choice([0, 1, 2, 3], size=len(outcome), p=[0.05, 0.6, 0.25, 0.1])
    failing = np.repeat(outcome == 2, lengths)
    values = np.where(failing, ERROR_CODES[rng.integers(len(ERROR_CODES), size=len(failing))], 0)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(values.astype(np.int16)))


def _lists(rng: np.random.Generator, pool: pa.Array, rows: int, *, lengths: tuple[float, ...]) -> pa.Array:
    counts = rng.choice(len(lengths), size=rows, p=lengths)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    return pa.ListArray.from_arrays(
        pa.array(offsets), pool.take(pa.array(rng.integers(len(pool), size=offsets[-1])))
    )


def _times(rng: np.random.Generator, exchange: np.ndarray, number: int) -> pa.Array:
    """An exchange every 200 us or so, each run an hour after the one before."""
    gaps = rng.exponential(200.0, int(exchange.max()) + 1 if len(exchange) else 0).astype(np.int64) + 1
    starts = BASE_TIME_US + number * 3_600_000_000 + np.cumsum(gaps)
    return pa.array(starts[exchange], pa.timestamp("us", tz="UTC"))


def _write_parts(directory: Path, table: pa.Table, row_group_rows: int) -> None:
    traces = directory / "traces"
    traces.mkdir(parents=True, exist_ok=True)
    for part, start in enumerate(range(0, table.num_rows, row_group_rows)):
        chunk = table.slice(start, row_group_rows)
        pq.write_table(
            chunk, traces / f"part-{part:06d}.parquet", row_group_size=row_group_rows, compression="zstd"
        )


def _write_diff_extras(directory: Path, run_id: str, targets: tuple[str, ...], table: pa.Table) -> None:
    """``run.json``, and a ``summary.json`` listing every signature with a case file, as a diff run has."""
    (directory / "cases").mkdir(parents=True, exist_ok=True)
    described = [{"kind": t, "name": t} for t in targets]
    (directory / "run.json").write_text(
        json.dumps({"run_id": run_id, "targets": described, "seed": 0, "segments": 1})
    )
    diverged = table.filter(pc.equal(table["outcome"], "diverge"))
    owner = pc.list_parent_indices(diverged["signatures"])  # one row a field signature
    fields = pa.table(
        {
            "signature": pc.list_flatten(diverged["signatures"]),
            "api_key": diverged["api_key"].take(owner),
            "api_version": diverged["api_version"].take(owner),
            "seq": diverged["seq"].take(owner),
        }
    )
    counts = fields.group_by(["signature", "api_key", "api_version"]).aggregate([("seq", "count")])
    differences = []
    for number, row in enumerate(sorted(counts.to_pylist(), key=lambda r: r["signature"])):
        path, _, kind = row["signature"].split("/", 2)[2].rpartition("/")
        case_id = f"case-{number:03d}"
        differences.append(
            {
                "signature": row["signature"],
                "api_key": row["api_key"],
                "api_version": row["api_version"],
                "field_path": path,
                "kind": kind,
                "count": row["seq_count"] // len(targets),
                "case_id": case_id,
                "shrunk": False,
                "example": None,
            }
        )
        case = {"signature": row["signature"], "shrunk": False, "targets": list(targets), "operations": []}
        (directory / "cases" / f"{case_id}.json").write_text(json.dumps(case))
    summary = {"run_id": run_id, "targets": list(targets), "synthetic": True, "differences": differences}
    (directory / "summary.json").write_text(json.dumps(summary, indent=2))


def _write_chaos_extras(
    directory: Path, run_id: str, target: str, table: pa.Table, rng: np.random.Generator
) -> None:
    """A ``chaos.json`` with one scenario; every other synthetic scenario breaks its promise."""
    directory.mkdir(parents=True, exist_ok=True)
    scenario = table["case_id"][0].as_py() if table.num_rows else "synthetic"
    broken = bool(rng.integers(2))
    count = int(rng.integers(1, 5)) if broken else 0
    excerpt = [f"{i} p1 ok send {scenario}-0 p1-{i}" for i in range(count)]
    anomalies = [
        {"anomaly": "duplicate", "count": count, "allowed": False, "verdict": "violation" if broken else "ok",
         "detail": f"{count} values read twice" if broken else "", "excerpt": excerpt},
        {"anomaly": "lost-write", "count": 0, "allowed": False, "verdict": "ok", "detail": "", "excerpt": []},
    ]  # fmt: skip
    ops = table.filter(pc.greater_equal(table["api_key"], 0))["outcome"].value_counts().to_pylist()
    counted = {c["values"]: c["counts"] for c in ops}
    operations = {
        "ok": counted.get("pass", 0),
        "fail": counted.get("error", 0),
        "info": counted.get("timeout", 0),
    }
    result = {
        "scenario": scenario,
        "target": target,
        "verdict": "violation" if broken else "pass",
        "promise": "no acknowledged write is lost or duplicated",
        "operations": operations,
        "violations": {"duplicate": count} if broken else {},
        "anomalies": anomalies,
        "faults": [],
        "error": "",
    }
    document = {
        "schema": 1,
        "run_id": run_id,
        "target": target,
        "toxiproxy": {"kind": "none"},
        "results": [result],
    }
    (directory / "chaos.json").write_text(json.dumps(document, indent=2))
