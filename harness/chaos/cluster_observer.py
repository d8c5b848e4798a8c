"""What a replicated cluster showed while the faults were on, so a run can say its faults were felt:
every partition's leader, leader epoch and ISR sampled from the brokers' Metadata (``changes``, pure,
turns two samples into counted events), and the truncations the brokers logged. Each broker's own
answer is kept too (``views``, when it changes): what a broker says of a partition's leader is what
it must act on, which the checkers hold its acknowledgements against.

Counters: ``isr-shrinks`` (a partition's ISR lost a member between samples), ``leader-changes`` (its
leader epoch moved), ``leaderless`` (a sample found no leader), ``truncations`` (log lines of followers
cutting their log back)."""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

__all__ = ["BrokerViewChange", "ClusterObserver", "StateChange", "changes", "count_truncations", "freshest"]

# what a log line that cut a log back says: the reference broker's follower ("t-0 truncated to 7: ..."),
# Apache Kafka's UnifiedLog.truncateTo ("Truncating to offset 7", only when it cuts; a truncation
# that cuts nothing says "Truncating to 7 has no effect")
TRUNCATION_MARKS = ("truncated", "truncating to offset")


@dataclass(frozen=True)
class StateChange:
    at: float  # seconds since the observation began
    partition: int
    leader: int
    epoch: int
    isr: tuple[int, ...]
    events: tuple[str, ...]  # isr-shrinks, isr-expands, leader-changes, leaderless


def changes(before, after) -> tuple[str, ...]:
    """The events between two samples of one partition ((leader, epoch, replicas, isr) each)."""
    events = []
    if after[1] > before[1]:
        events.append("leader-changes")
    if set(before[3]) - set(after[3]):
        events.append("isr-shrinks")
    if set(after[3]) - set(before[3]):
        events.append("isr-expands")
    if after[0] < 0 <= before[0]:
        events.append("leaderless")
    return tuple(events)


def freshest(views: dict) -> dict:
    """Each partition's state (leader, epoch, replicas, isr) with the highest leader epoch any broker
    reported in ``views`` (broker -> partition -> state)."""
    best: dict = {}
    for view in views.values():
        for partition, state in view.items():
            known = best.get(partition)
            if known is None or state[1] > known[1]:
                best[partition] = state
    return best


def count_truncations(lines: Iterable[str]) -> int:
    return sum(1 for line in lines if any(mark in line.lower() for mark in TRUNCATION_MARKS))


@dataclass(frozen=True)
class BrokerViewChange:
    at: float  # seconds since the observation began
    broker: int
    partition: int
    leader: int
    epoch: int
    isr: tuple[int, ...]


@dataclass
class ClusterObserver:
    """``await observer.run(seconds)`` samples ``read_views`` (broker -> partition -> state, blocking)
    every ``interval`` seconds in a worker thread; ``timeline`` follows the freshest state of each
    partition (the highest leader epoch any broker reported), ``views`` each broker's own."""

    read_views: Callable[[], dict]
    interval: float = 0.3
    clock: Callable[[], float] = time.monotonic
    counts: collections.Counter = field(default_factory=collections.Counter)
    timeline: list[StateChange] = field(default_factory=list)
    views: list[BrokerViewChange] = field(default_factory=list)

    async def run(self, seconds: float) -> None:
        begun = self.clock()
        last: dict = {}
        seen: dict[tuple[int, int], tuple] = {}  # (broker, partition) -> its last answer
        while self.clock() - begun < seconds:
            try:
                views = await asyncio.to_thread(self.read_views)
            except Exception:  # noqa: BLE001 - no broker answered this time: try again
                views = {}
            at = round(self.clock() - begun, 3)
            for broker, view in sorted(views.items()):
                for partition, state in sorted(view.items()):
                    shown = (state[0], state[1], tuple(state[3]))
                    if seen.get((broker, partition)) != shown:
                        seen[broker, partition] = shown
                        self.views.append(BrokerViewChange(at, broker, partition, *shown))
            sample = freshest(views)
            for partition, state in sorted(sample.items()):
                previous = last.get(partition)
                events = () if previous is None else changes(previous, state)
                if previous is None or events or tuple(previous) != tuple(state):
                    self.timeline.append(
                        StateChange(at, partition, state[0], state[1], tuple(state[3]), events)
                    )
                self.counts.update(events)
                last[partition] = state
            self.counts["samples"] += 1
            await asyncio.sleep(self.interval)
