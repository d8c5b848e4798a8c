"""``kconform bench diff``: how fast a differential campaign runs, and how much of its time is the
harness's own (generating cases, encoding, normalising, comparing, writing traces) rather than waiting
for the two brokers to answer. Reference vs reference, so every operation is compared in full."""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from .report import Comparison, print_comparisons

GOAL_OVERHEAD = 0.20  # the harness adds under 20% on top of the brokers' own time


def run(*, examples: int, as_json: bool) -> list[Comparison]:
    from ..diff.cases import run_campaign
    from ..diff.engine import DiffEngine
    from ..targets.registry import make_target

    waited = {}
    original = DiffEngine.__init__

    def tracking_init(self, *args, **kwargs):  # keep a handle on the campaign's engine
        original(self, *args, **kwargs)
        waited["engine"] = self

    with (
        tempfile.TemporaryDirectory(prefix="kconform-bench-diff-") as tmp,
        make_target("reference") as a,
        make_target("reference") as b,
    ):
        print(f"reference vs reference: {examples} cases ...", file=sys.stderr, flush=True)
        DiffEngine.__init__ = tracking_init
        try:
            started = time.perf_counter()
            result = run_campaign(a, b, Path(tmp), examples=examples, seed=1, shrink=False)
            wall = time.perf_counter() - started
        finally:
            DiffEngine.__init__ = original
    broker_s = waited["engine"].waiting_seconds
    harness_s = wall - broker_s
    overhead = harness_s / broker_s if broker_s else float("inf")
    case = f"{result.cases} cases, {result.operations} operations, reference vs reference"
    rows = [
        Comparison(
            "diff", case, "operations/s", result.operations / wall, "-", result.operations / wall, True
        ),
        Comparison("diff", case, "harness time / broker time", overhead, "goal", GOAL_OVERHEAD, False),
    ]
    print_comparisons(rows, as_json=as_json, title="kconform bench diff")
    if not as_json:
        print(
            f"wall {wall:.2f} s: waiting for brokers {broker_s:.2f} s, harness {harness_s:.2f} s "
            f"({100 * harness_s / wall:.0f}% of the run)"
        )
    return rows
