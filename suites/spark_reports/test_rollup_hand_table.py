"""The roll-up agrees exactly with a hand-built trace table: its counts and percentiles are written out
below as literals, worked out by hand, and both engines (DuckDB and Spark) must produce exactly those.
The synthetic and random tables are in ``test_rollup_synthetic_tables.py``.

Percentiles are linear interpolation between the closest ranks: for n sorted values x[0..n-1] and a
fraction p, h = (n - 1) * p and the percentile is x[floor h] + (h - floor h) * (x[ceil h] - x[floor h])
(NumPy's ``method="linear"``), rounded to 0.1 us after rounding to 0.001 us, as the engines do."""

from __future__ import annotations

from pathlib import Path

import pytest

from kconform.spark_reports.duck import duckdb_rollup
from kconform.spark_reports.model import (
    NO_FAULT,
    ChaosFelt,
    ChaosVerdict,
    CrashRow,
    DiffRunFacts,
    DivergenceCluster,
    GridCell,
    LatencyRow,
    OfferedCell,
    ReplayRow,
    Rollup,
    RunRow,
)
from kconform.spark_reports.runs import RunDirectory, find_runs
from kconform.traces import read_traces

from ..support.rollup_tables import T0_US, Row, assert_rollup, write_run

HOUR_US = 3_600_000_000


S1 = "Produce/v9/throttle_time_ms/value"


S2 = "Fetch/v12/error_code/error_code"


S3 = "Fetch/v12/responses[*].partitions[*].high_watermark/value"


# --- a. the hand-built table ------------------------------------------------------------------------


def diverge(
    target: str,
    key: int,
    name: str | None,
    version: int,
    latency: int,
    sig: str | None,
    case: str,
    *more: str,
):
    return Row(target, key, name, version, "diverge", latency, sig, case, more=more)


def ok(target: str, key: int, name: str | None, version: int, latency: int | None, outcome: str = "pass"):
    return Row(target, key, name, version, outcome, latency, case_id="c")


# Run A (diff, run-a): targets ref and mock.
RUN_A = [
    # Produce v9 on ref: 7 pass, 2 diverge (S1), 1 error; latencies 100, 200, ..., 1000, no fault.
    *[ok("ref", 0, "Produce", 9, 100 * (i + 1)) for i in range(7)],
    diverge("ref", 0, "Produce", 9, 800, S1, "a1"),
    diverge("ref", 0, "Produce", 9, 900, S1, "a2"),
    ok("ref", 0, "Produce", 9, 1000, "error"),
    # Produce v9 on mock: 7 pass, 2 diverge (S1, the same two cases), 1 timeout; latencies 10..90, 5000.
    *[ok("mock", 0, "Produce", 9, 10 * (i + 1)) for i in range(7)],
    diverge("mock", 0, "Produce", 9, 80, S1, "a1"),
    diverge("mock", 0, "Produce", 9, 90, S1, "a2"),
    ok("mock", 0, "Produce", 9, 5000, "timeout"),
    # Fetch v12 on ref: 4 pass, 1 closed, 1 skipped (no latency); latencies out of order.
    ok("ref", 1, "Fetch", 12, 300),
    ok("ref", 1, "Fetch", 12, 100),
    ok("ref", 1, "Fetch", 12, 200),
    ok("ref", 1, "Fetch", 12, 500),
    ok("ref", 1, "Fetch", 12, 400, "closed"),
    ok("ref", 1, "Fetch", 12, None, "skipped"),
    # Fetch v12 on mock: 3 pass, 3 diverge (S2, cases a3, a4, a4); latencies 100..600.
    ok("mock", 1, "Fetch", 12, 100),
    ok("mock", 1, "Fetch", 12, 200),
    ok("mock", 1, "Fetch", 12, 300),
    diverge("mock", 1, "Fetch", 12, 400, S2, "a3"),
    diverge("mock", 1, "Fetch", 12, 500, S2, "a4"),
    diverge("mock", 1, "Fetch", 12, 600, S2, "a4", S3),  # differs in a second field too
    # Metadata v1 on ref: 5 pass at 7 us.
    *[ok("ref", 3, "Metadata", 1, 7) for _ in range(5)],
    # API key 18 without a name (labelled api-18), v3 on mock: 2 pass, 1 diverge without a signature.
    ok("mock", 18, None, 3, 10),
    ok("mock", 18, None, 3, 20),
    diverge("mock", 18, None, 3, 40, None, "a5"),
]


# Run B (diff, run-b, an hour later), written in trace schema version 1 (no ``signatures`` column):
# one more S2 divergence on mock, in another case.
RUN_B = [diverge("mock", 1, "Fetch", 12, 700, S2, "b1")]


# Run C (chaos, chaos-c, two hours later) on ref: client operations (version -1) under faults A and B,
# between two fault rows (key -1) whose latencies would wreck every number they were counted in.
RUN_C = [
    Row("ref", -1, "fault", -1, "pass", 999_999, faults=("A",)),
    Row("ref", 0, "Produce", -1, "pass", 50, case_id="s1", faults=()),
    Row("ref", 0, "Produce", -1, "pass", 2000, case_id="s1", faults=("A",)),
    Row("ref", 0, "Produce", -1, "pass", 4000, case_id="s1", faults=("A", "B")),
    Row("ref", 0, "Produce", -1, "error", 8000, case_id="s1", faults=("B",)),
    Row("ref", 0, "Produce", -1, "timeout", None, case_id="s1", faults=("A",)),
    Row("ref", -1, "fault", -1, "pass", 777_777, faults=("A", "B")),
]


CHAOS_C = {
    "schema": 1,
    "run_id": "chaos-c",
    "target": "ref",
    "results": [
        {
            "scenario": "s1",
            "target": "ref",
            "verdict": "violation",
            "promise": "no acknowledged write is lost",
            "operations": {"ok": 3, "fail": 1, "info": 1},
            "violations": {"lost-write": 1},
            "anomalies": [
                {"anomaly": "lost-write", "verdict": "violation", "excerpt": ["1 p1 ok send s1-0 v1"]},
                {"anomaly": "duplicate", "verdict": "ok", "excerpt": ["not kept"]},
            ],
        },
        # a replication scenario on a cluster: a loss the settings allow, measured, with its reasons
        {
            "scenario": "acks1-leader-isolated",
            "target": "cluster",
            "verdict": "pass",
            "promise": "acks=1 may lose what the deposed leader alone had; no duplicates",
            "operations": {"ok": 1204, "fail": 9, "info": 2},
            "violations": {},
            "measured": {"lost-write-leader-change": 3},
            "anomalies": [
                {"anomaly": "lost-write-leader-change", "count": 3, "allowed": True, "verdict": "allowed",
                 "reason": "allowed: acks=1 loses writes the leader alone had", "excerpt": ["not kept"]},
                {"anomaly": "G1a", "count": 0, "allowed": True, "verdict": "ok",
                 "reason": "allowed: a send the client gave up on may still have landed"},
                {"anomaly": "duplicate", "count": 0, "allowed": False, "verdict": "ok",
                 "reason": "forbidden: retries=0"},
            ],
        },
        # as an older chaos.json wrote it: operations as one total, no allowed flags, no reasons
        {
            "scenario": "s2",
            "verdict": "pass",
            "promise": "measured only",
            "operations": 7,
            "measured": {"duplicate": 1},
            "anomalies": [{"anomaly": "duplicate", "verdict": "allowed", "excerpt": []}],
        },
        # nothing acknowledged: the split leaves "ok" out, and that is 0, not unknown
        {"scenario": "s3", "verdict": "no-progress", "promise": "p", "operations": {"fail": 2, "info": 1}},
    ],
}  # fmt: skip


@pytest.fixture(scope="module")
def hand_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hand").resolve()
    case = {"signature": S1, "targets": ["ref", "mock"], "operations": [], "steps": ["Produce v9 (acks=2)"]}
    summary = {
        "run_id": "run-a",
        "targets": ["ref", "mock"],
        "seed": 5,
        "cases": 10,
        "causes": [
            {"cause": "c1", "api_key": 0, "api_name": "Produce", "signatures": [S1], "case_id": "case-000",
             "verdict": {"deviates": ["mock"], "rule": "r1", "text": "mock deviates from Kafka: why",
                         "evidence": "KafkaApis.scala"}},
            # no rule knows S2: both sides are suspects wherever it is seen
            {"cause": "c2", "api_key": 1, "api_name": "Fetch", "signatures": [S2],
             "verdict": {"deviates": None, "rule": None, "text": "unknown: no rule says what Kafka answers"}},
            {"cause": "c3", "api_key": 1, "api_name": "Fetch", "signatures": [], "versions": [12],
             "case_id": "case-001",
             "verdict": {"deviates": ["mock"], "rule": "crashed", "text": "it crashed"}},
        ],
        "differences": [
            {"signature": S1, "cause": "c1", "case_id": "case-000", "count": 2,
             "value_pairs": [[1, 2], [1, "x"]], "first_case": 3},
            {"signature": S2, "cause": "c2", "count": 3, "example": {"a": None, "b": 3}},
        ],
        "crashes": [
            {"target": "mock", "api_key": 1, "api_version": 12, "message": "assertion failed"},
            {"target": "mock", "api_key": 1, "api_version": 12, "message": "assertion failed"},
        ],
        "coverage": {"advertised": {"ref": [[0, "Produce", 9, 9], [3, "Metadata", 0, 1]],
                                    "mock": [[0, "Produce", 8, 9], [1, "Fetch", 12, 12]]}},
    }  # fmt: skip
    write_run(
        root / "diff-a",
        "run-a",
        RUN_A,
        T0_US,
        parts=3,
        extras={
            "run.json": {"run_id": "run-a"},
            "summary.json": summary,
            "cases/case-000.json": case,
            "cases/case-001.json": {"operations": [{"op": "Fetch", "version_pick": 3}]},
            # the campaign replayed an earlier report's case: it still shows its signature
            "replays.json": {
                "replays": [
                    {
                        "signature": "Old/v1/x/value",
                        "targets": ["ref", "mock"],
                        "shown": True,
                        "case": "/r/case-009.json",
                    }
                ]
            },
        },
    )
    write_run(
        root / "diff-b",
        "run-b",
        RUN_B,
        T0_US + HOUR_US,
        extras={"run.json": {"run_id": "run-b"}},
        schema_version=1,
    )
    write_run(root / "chaos-c", "chaos-c", RUN_C, T0_US + 2 * HOUR_US, extras={"chaos.json": CHAOS_C})
    return root


@pytest.fixture(scope="module")
def hand_runs(hand_root: Path) -> list[RunDirectory]:
    runs = find_runs([hand_root])
    assert [(r.path.name, r.kind, r.run_id) for r in runs] == [
        ("chaos-c", "chaos", "chaos-c"),
        ("diff-a", "diff", "run-a"),
        ("diff-b", "diff", "run-b"),
    ]
    return runs


def expected_hand_rollup(root: Path) -> Rollup:
    """Every number worked out by hand from the rows above."""
    case = root / "diff-a" / "cases" / "case-000.json"
    grid = [
        #        key  name        v   target  total pass div err tmo closed skip
        GridCell(0, "Produce", 9, "mock", 10, 7, 2, 0, 1, 0, 0, deviates=2),  # S1's verdict names mock
        GridCell(0, "Produce", 9, "ref", 10, 7, 2, 1, 0, 0, 0),
        # 6 in run A, 1 in run B; no verdict tells who deviates in S2 (run A) or S3, and run B recorded
        # none: all 4 suspect
        GridCell(1, "Fetch", 12, "mock", 7, 3, 4, 0, 0, 0, 0, unknown=4),
        GridCell(1, "Fetch", 12, "ref", 6, 4, 0, 0, 0, 1, 1),
        GridCell(3, "Metadata", 1, "ref", 5, 5, 0, 0, 0, 0, 0),
        GridCell(18, "api-18", 3, "mock", 3, 2, 1, 0, 0, 0, 0, unknown=1),  # no signature, no verdict
        # nothing from run C: its operations are version -1, its fault rows key -1
    ]
    unknown = "unknown: no rule says what Kafka answers"
    divergences = [
        # S2: a3, a4, a4 in run A and b1 in run B -> 4 exchanges, 3 distinct cases; no case file; the
        # pairs are counted per run on the target with most rows (only mock's rows are in the table)
        DivergenceCluster(
            S2, 1, "Fetch", 12, 4, 3, ("mock",), ("run-a", "run-b"), pairs=4, sides=("ref", "mock"),
            values=(("null", "3"),), verdict="unknown", deviates=("ref", "mock"), verdict_text=unknown,
            cause="c2",
        ),
        # S3: the second field of the last a4 exchange only; no summary names it
        DivergenceCluster(
            S3, 1, "Fetch", 12, 1, 1, ("mock",), ("run-a",), pairs=1, deviates=("mock",),
            verdict_text="unknown: no run recorded a verdict",
        ),
        # S1: a1, a2 on each of two targets -> 4 exchanges, 2 pairs, 2 cases; summary.json names case-000
        DivergenceCluster(
            S1, 0, "Produce", 9, 4, 2, ("mock", "ref"), ("run-a",), str(case), f"kconform repro {case}",
            pairs=2, sides=("ref", "mock"), values=(("1", "2"), ("1", '"x"')), verdict="deviates",
            deviates=("mock",), verdict_text="mock deviates from Kafka: why", evidence="KafkaApis.scala",
            cause="c1", steps=("Produce v9 (acks=2)",),
        ),
        # the api-18 divergence has no signature: no cluster
    ]  # fmt: skip
    crash_case = root / "diff-a" / "cases" / "case-001.json"
    crashes = [
        CrashRow(
            "mock", 1, "Fetch", 12, "assertion failed", 2, ("run-a",), str(crash_case),
            f"kconform repro {crash_case}",
        )
    ]  # fmt: skip
    offered = [
        OfferedCell("mock", 0, "Produce", 8),
        OfferedCell("mock", 0, "Produce", 9),
        OfferedCell("mock", 1, "Fetch", 12),
        OfferedCell("ref", 0, "Produce", 9),
        OfferedCell("ref", 3, "Metadata", 0),
        OfferedCell("ref", 3, "Metadata", 1),
    ]
    felt = [
        # run C's operations on ref in scenario s1: the 50 us one in calm; four under a fault, of
        # which an error and a timeout
        ChaosFelt("s1", "ref", False, 1, 1, 0, 0, 0),
        ChaosFelt("s1", "ref", True, 4, 2, 1, 1, 0),
    ]
    latency = [
        # 100..700: n=7, p50 at h=3 -> 400; p99 at h=5.94 -> 600+0.94*100; p99.9 at h=5.994 -> 699.4
        LatencyRow("mock", "Fetch", NO_FAULT, 7, 400.0, 694.0, 699.4),
        # 10..90, 5000: n=10, p50 at h=4.5 -> 55; p99 at h=8.91 -> 90+0.91*4910 = 4558.1;
        # p99.9 at h=8.991 -> 90+0.991*4910 = 4955.81 -> 4955.8
        LatencyRow("mock", "Produce", NO_FAULT, 10, 55.0, 4558.1, 4955.8),
        # 10, 20, 40: p50 at h=1 -> 20; p99 at h=1.98 -> 20+0.98*20 = 39.6; p99.9 -> 39.96 -> 40.0
        LatencyRow("mock", "api-18", NO_FAULT, 3, 20.0, 39.6, 40.0),
        # 100..500 (the skipped exchange has no latency): p50 300; p99 at h=3.96 -> 496; p99.9 499.6
        LatencyRow("ref", "Fetch", NO_FAULT, 5, 300.0, 496.0, 499.6),
        LatencyRow("ref", "Metadata", NO_FAULT, 5, 7.0, 7.0, 7.0),
        # under A: 2000 and the two-fault 4000 (the timeout has no latency): 3000; 2000+0.99*2000; ...
        LatencyRow("ref", "Produce", "A", 2, 3000.0, 3980.0, 3998.0),
        # under B: the two-fault 4000 and 8000
        LatencyRow("ref", "Produce", "B", 2, 6000.0, 7960.0, 7996.0),
        # run C's 50 and run A's 100..1000: n=11, p50 at h=5 -> 500; p99 at h=9.9 -> 990; p99.9 999
        LatencyRow("ref", "Produce", NO_FAULT, 11, 500.0, 990.0, 999.0),
    ]
    runs = [
        # 5 operations (fault rows are no exchanges): 3 pass, error + timeout; it starts at its first
        # fault row
        RunRow("chaos-c", "chaos", ("ref",), 5, 3, 0, 2, "2026-01-01T02:00:00Z", str(root / "chaos-c")),
        # 40 exchanges: 28 pass, 8 diverge, error + timeout + closed, and 1 skipped that is none of them
        RunRow("run-a", "diff", ("mock", "ref"), 40, 28, 8, 3, "2026-01-01T00:00:00Z", str(root / "diff-a")),
        RunRow("run-b", "diff", ("mock",), 1, 0, 1, 0, "2026-01-01T01:00:00Z", str(root / "diff-b")),
    ]
    chaos = [
        # sorted by scenario, then target
        ChaosVerdict(
            scenario="acks1-leader-isolated",
            target="cluster",
            verdict="pass",
            promise="acks=1 may lose what the deposed leader alone had; no duplicates",
            operations=1204 + 9 + 2,
            violations={},
            excerpts={},  # only a violation's excerpt is kept
            run_id="chaos-c",
            acknowledged=1204,
            allowed={"G1a": 0, "lost-write-leader-change": 3},  # every allowed one, zero counts too
            reasons={
                "lost-write-leader-change": "allowed: acks=1 loses writes the leader alone had",
                "G1a": "allowed: a send the client gave up on may still have landed",
                "duplicate": "forbidden: retries=0",
            },
        ),
        ChaosVerdict(
            scenario="s1",
            target="ref",
            verdict="violation",
            promise="no acknowledged write is lost",
            operations=5,
            violations={"lost-write": 1},
            excerpts={"lost-write": ["1 p1 ok send s1-0 v1"]},
            run_id="chaos-c",
            acknowledged=3,  # operations {"ok": 3, ...}; no allowed flags in this result
        ),
        # the run's target stands in for the result's; one total, so no acknowledged count
        ChaosVerdict("s2", "ref", "pass", "measured only", 7, {}, {}, "chaos-c", allowed={"duplicate": 1}),
        ChaosVerdict("s3", "ref", "no-progress", "p", 3, {}, {}, "chaos-c", acknowledged=0),
    ]
    rollup = Rollup(grid, divergences, latency, runs, chaos, exchanges=46)
    rollup.crashes, rollup.offered, rollup.chaos_felt = crashes, offered, felt
    rollup.replays = [ReplayRow("Old/v1/x/value", ("ref", "mock"), True, "/r/case-009.json", "run-a")]
    # run B has no summary.json: it says nothing of its drawing
    rollup.diff_runs = [DiffRunFacts("run-a", ("ref", "mock"), 5, 10, {S1: 3})]
    return rollup


def test_hand_table_counts_are_right(hand_root: Path) -> None:
    """The literals hold for the rows written (the table is what the comments say it is)."""
    table = read_traces(sorted(p for p in hand_root.iterdir()))
    assert table.num_rows == len(RUN_A) + len(RUN_B) + len(RUN_C) == 48
    assert len(list((hand_root / "diff-a" / "traces").glob("part-*.parquet"))) == 3


def test_duckdb_agrees_with_the_hand_counts(hand_root: Path, hand_runs: list[RunDirectory]) -> None:
    assert_rollup(duckdb_rollup(hand_runs), expected_hand_rollup(hand_root))


@pytest.mark.slow
def test_spark_agrees_with_the_hand_counts(hand_root: Path, hand_runs: list[RunDirectory], spark) -> None:
    from kconform.spark_reports.rollup import spark_rollup

    assert_rollup(spark_rollup(hand_runs, spark), expected_hand_rollup(hand_root))
