"""Timing and reporting shared by every ``kconform bench`` command."""

from __future__ import annotations

import json
import timeit
from collections.abc import Callable
from dataclasses import asdict, dataclass

from rich.console import Console
from rich.table import Table

__all__ = ["Comparison", "best_seconds", "interleaved_best", "print_comparisons"]


@dataclass(frozen=True, slots=True)
class Comparison:
    bench: str
    case: str
    metric: str  # what the numbers are, e.g. "ms" (lower is better) or "records/s" (higher is better)
    ours: float
    peer: str
    peer_value: float
    higher_is_better: bool = False

    @property
    def ratio(self) -> float:
        """> 1 means ours is better."""
        if self.higher_is_better:
            return self.ours / self.peer_value if self.peer_value else float("inf")
        return self.peer_value / self.ours if self.ours else float("inf")

    def as_json(self) -> str:
        row = asdict(self)
        row.pop("higher_is_better")
        row["ratio"] = round(self.ratio, 3)
        return json.dumps(row)


def best_seconds(fn: Callable[[], object], *, min_time: float = 0.2, repeat: int = 5) -> float:
    """The best per-call time over ``repeat`` rounds, each long enough to dwarf timer noise."""
    timer = timeit.Timer(fn)
    number, _ = timer.autorange()
    number = max(1, int(number * min_time / 0.2))
    return min(timer.repeat(repeat=repeat, number=number)) / number


def interleaved_best(
    fns: dict[str, Callable[[], object]], *, rounds: int = 30, number: int = 1
) -> dict[str, float]:
    """Best seconds per call of each function, timed in alternation so that background load on a
    shared machine falls on every contender alike. Garbage collection is off while timing, as in timeit."""
    import gc
    import time

    best = dict.fromkeys(fns, float("inf"))
    enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(rounds):
            for name, fn in fns.items():
                start = time.perf_counter()
                for _ in range(number):
                    fn()
                best[name] = min(best[name], (time.perf_counter() - start) / number)
    finally:
        if enabled:
            gc.enable()
    return best


def print_comparisons(rows: list[Comparison], *, as_json: bool, title: str) -> None:
    if as_json:
        for row in rows:
            print(row.as_json())
        return
    table = Table(title=title)
    for column in ("case", "metric", "ours", "peer", "peer value", "ratio (>1: ours better)"):
        table.add_column(column)
    for row in rows:
        table.add_row(
            row.case, row.metric, f"{row.ours:,.3f}", row.peer, f"{row.peer_value:,.3f}", f"{row.ratio:.2f}x"
        )
    Console().print(table)
