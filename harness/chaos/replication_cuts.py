"""Which followers a run's faults kept from fetching, and when: the fault log (``FaultEvent``s, with the
links and nodes each acted on) turned into ``ReplicationCut``s for the ISR check. Pure.

A follower cannot fetch from a broker while its replication link to it (``repl-<follower>-<leader>``)
is cut by an isolate, a split or a partition fault, or while its own process is down (kill, stop,
freeze). A cut counts only while the leader can reach the controller: an isolated leader cannot
commit the ISR shrink, and Kafka keeps its ISR until the controller moves the partition."""

from __future__ import annotations

import re
from collections.abc import Iterable

from kconform.faults.nemesis import FaultEvent

from ..checkers.history import ReplicationCut

__all__ = ["CUTTING_FAULTS", "replication_cuts"]

CUTTING_FAULTS = ("isolate", "split", "partition")  # link faults that stop traffic outright
DOWN_FAULTS = ("kill", "stop", "freeze")
_REPLICATION = re.compile(r"(?:^|-)repl-(\d+)-(\d+)$")
_CONTROLLER = re.compile(r"(?:^|-)ctrl-(\d+)$")


def replication_cuts(
    faults: Iterable[FaultEvent], started_ns: int, lag_time_max_ms: int, run_seconds: float
) -> list[ReplicationCut]:
    """Every cut in the log; a fault still on when the log ends is cut off at ``run_seconds``."""
    open_at: dict[str, list[FaultEvent]] = {}  # label -> its starts not yet ended, oldest first
    spans: list[tuple[FaultEvent, float]] = []
    for event in faults:
        if not event.ok:
            continue
        if event.action == "start":
            open_at.setdefault(event.label, []).append(event)
        elif event.action == "end" and open_at.get(event.label):
            spans.append((open_at[event.label].pop(0), event.at))
    spans += [(start, run_seconds) for starts in open_at.values() for start in starts]
    cuts = []
    for start, end in sorted(spans, key=lambda span: span[0].at):
        begin_ns, end_ns = started_ns + int(start.at * 1e9), started_ns + int(end * 1e9)
        for follower, leader in _cut_pairs(start):
            cuts.append(ReplicationCut(follower, leader, begin_ns, end_ns, lag_time_max_ms))
    return cuts


def _cut_pairs(start: FaultEvent) -> list[tuple[int, int]]:
    """(follower, leader) pairs the fault keeps apart; leader -1 for a follower that is down."""
    fault = start.label.partition("@")[0]
    if fault in DOWN_FAULTS:
        return [(int(node), -1) for node in start.targets if node.isdigit() and int(node) > 0]
    if fault not in CUTTING_FAULTS:
        return []
    cut_off_controller = {int(m.group(1)) for t in start.targets if (m := _CONTROLLER.search(t))}
    pairs = []
    for target in start.targets:
        match = _REPLICATION.search(target)
        if match is not None:
            follower, leader = int(match.group(1)), int(match.group(2))
            if leader not in cut_off_controller:
                pairs.append((follower, leader))
    return sorted(pairs)
