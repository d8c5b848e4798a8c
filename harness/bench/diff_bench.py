"""``kconform bench diff``: how fast a differential campaign runs, and where its time goes.

Two campaigns in one run:
- reference vs reference (no differences, so every operation is compared in full and nothing is shrunk):
  operations per second, and the harness's own time (encoding, decoding, normalising, comparing, writing
  traces, and waiting for cases to be drawn) against the time spent waiting for the two brokers; cases
  are drawn in a process of their own while the brokers answer the ones before;
- reference vs librdkafka's mock cluster (differences to shrink): shrinking's share of the whole run,
  and how many shrunk cases hold at most 3 operations."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from .report import Comparison, print_comparisons

GOAL_OVERHEAD = 0.20  # the harness adds under 20% on top of the brokers' own time
GOAL_SHRINK_SHARE = 1 / 3  # shrinking takes at most a third of a run
GOAL_SMALL_CASES = 0.90  # of shrunk cases, the share holding at most 3 operations


def _campaign(a_kind: str, b_kind: str, examples: int, seed: int):
    from ..diff.cases import run_campaign
    from ..targets.registry import make_target

    with (
        tempfile.TemporaryDirectory(prefix="kconform-bench-diff-") as tmp,
        make_target(a_kind) as a,
        make_target(b_kind) as b,
    ):
        print(f"{a_kind} vs {b_kind}: {examples} cases ...", file=sys.stderr, flush=True)
        return run_campaign(a, b, Path(tmp), examples=examples, seed=seed)


def overhead_rows(result) -> tuple[list[Comparison], str]:
    """Operations per second and harness time / broker time, over the drawing (no shrinking ran)."""
    broker_s = result.broker_seconds
    harness_s = max(result.drawing_seconds - broker_s, 0.0)
    case = f"reference vs reference, {result.cases} cases"
    per_second = result.operations / result.drawing_seconds if result.drawing_seconds else 0.0
    overhead = harness_s / broker_s if broker_s else float("inf")
    rows = [
        Comparison("diff", case, "operations/s", per_second, "-", per_second, True),
        Comparison("diff", case, "harness time / broker time", overhead, "goal", GOAL_OVERHEAD, False),
    ]
    detail = (
        f"{case}: {result.operations} operations in {result.drawing_seconds:.1f} s; on the brokers and the "
        f"wire {broker_s:.1f} s, in the harness (encoding, decoding, comparing, tracing, and waiting for "
        f"cases from the drawing process) {harness_s:.1f} s"
    )
    return rows, detail


def shrinking_rows(result, peer: str) -> tuple[list[Comparison], str]:
    """Shrinking's share of the whole run, and the share of shrunk cases of at most 3 operations."""
    shrunk = [c for c in result.causes.values() if c.reproduced]
    small = sum(c.stored_operations <= 3 for c in shrunk)
    share = result.shrink_seconds / result.seconds if result.seconds else 0.0
    case = f"reference vs {peer}, {result.cases} cases"
    rows = [Comparison("diff", case, "shrinking / whole run", share, "goal", GOAL_SHRINK_SHARE, False)]
    if shrunk:
        rows.append(
            Comparison(
                "diff",
                case,
                "shrunk cases of <= 3 operations",
                small / len(shrunk),
                "goal",
                GOAL_SMALL_CASES,
                True,
            )
        )
    detail = (
        f"{case}: run {result.seconds:.1f} s, of it shrinking {result.shrink_seconds:.1f} s; "
        f"{len(result.causes)} causes, {len(shrunk)} shown again by their own case and shrunk, "
        f"{small} of those {len(shrunk)} to at most 3 operations"
    )
    return rows, detail


def run(*, examples: int, peer: str = "rdkafka-mock", as_json: bool) -> list[Comparison]:
    rows, detail = overhead_rows(_campaign("reference", "reference", examples, seed=1))
    details = [detail]
    try:
        different = _campaign("reference", peer, examples, seed=1)
    except Exception as exc:  # noqa: BLE001 - a peer that cannot start: the first half still stands
        details.append(f"{peer} could not be used ({exc}); shrinking not measured")
    else:
        more, detail = shrinking_rows(different, peer)
        rows += more
        details.append(detail)
    print_comparisons(rows, as_json=as_json, title="kconform bench diff")
    if not as_json:
        for line in details:
            print(line)
    return rows
