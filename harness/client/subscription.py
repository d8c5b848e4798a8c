"""What the consumer reads and where it stands (Kafka's SubscriptionState), without I/O: the subscription
(topics, a pattern, or a manual assignment), the assigned partitions, each one's position, pause state
and pending offset reset."""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["NoOffsetForPartition", "PartitionState", "SubscriptionState", "TopicPartition"]

TopicPartition = tuple[str, int]


class NoOffsetForPartition(Exception):
    """auto.offset.reset=none and the group has no committed offset for these partitions."""

    def __init__(self, partitions) -> None:
        self.partitions = sorted(partitions)
        super().__init__(f"no committed offset and auto.offset.reset=none for {self.partitions}")


@dataclass(slots=True)
class PartitionState:
    position: int | None = None  # next offset to fetch; None until committed offsets or a reset say
    leader_epoch: int = -1  # the epoch of the last record returned
    reset: str | None = None  # earliest / latest / a timestamp, when a reset is due
    paused: bool = False
    high_watermark: int = -1
    last_stable_offset: int = -1


class SubscriptionState:
    def __init__(self, default_reset: str = "latest") -> None:
        self.default_reset = default_reset
        self.topics: set[str] = set()
        self.pattern: re.Pattern | None = None
        self.manual = False
        self.assignment: dict[TopicPartition, PartitionState] = {}

    # ---- what to read ---------------------------------------------------------------------------

    def subscribe(self, topics: list[str] | None = None, pattern: str | re.Pattern | None = None) -> None:
        if self.manual:
            raise ValueError("subscribe() after assign(): a consumer either subscribes or assigns, not both")
        if (topics is None) == (pattern is None):
            raise ValueError("subscribe() takes topics or a pattern")
        self.topics = set(topics or ())
        self.pattern = re.compile(pattern) if isinstance(pattern, str) else pattern

    def assign(self, partitions: list[TopicPartition]) -> None:
        if self.topics or self.pattern is not None:
            raise ValueError("assign() after subscribe(): a consumer either subscribes or assigns, not both")
        self.manual = True
        self.set_assignment(partitions)

    def unsubscribe(self) -> None:
        self.topics, self.pattern, self.manual = set(), None, False
        self.assignment.clear()

    @property
    def subscribed(self) -> bool:
        return bool(self.topics) or self.pattern is not None

    def matching(self, all_topics: list[str]) -> set[str]:
        """The topics the subscription covers, given every topic the cluster has."""
        if self.pattern is None:
            return set(self.topics)
        return {t for t in all_topics if self.pattern.fullmatch(t) and not t.startswith("__")}

    # ---- the assignment -------------------------------------------------------------------------

    def set_assignment(self, partitions) -> tuple[set, set]:
        """Replace the assignment, keeping positions of partitions that stay; (added, removed)."""
        wanted = set(partitions)
        current = set(self.assignment)
        for tp in current - wanted:
            del self.assignment[tp]
        for tp in sorted(wanted - current):
            self.assignment[tp] = PartitionState()
        return wanted - current, current - wanted

    def assigned(self) -> set[TopicPartition]:
        return set(self.assignment)

    def fetchable(self) -> list[TopicPartition]:
        return [
            tp for tp, s in self.assignment.items() if s.position is not None and not s.paused and not s.reset
        ]

    def needs_position(self) -> list[TopicPartition]:
        return [tp for tp, s in self.assignment.items() if s.position is None and s.reset is None]

    def needs_reset(self) -> list[TopicPartition]:
        return [tp for tp, s in self.assignment.items() if s.reset is not None]

    def seek(self, tp: TopicPartition, offset: int) -> None:
        state = self._state(tp)
        state.position, state.reset = offset, None

    def request_reset(self, tp: TopicPartition, strategy: str | None = None) -> None:
        self._state(tp).reset = strategy or self.default_reset

    def position(self, tp: TopicPartition) -> int | None:
        return self._state(tp).position

    def pause(self, tps) -> None:
        for tp in tps:
            self._state(tp).paused = True

    def resume(self, tps) -> None:
        for tp in tps:
            self._state(tp).paused = False

    def _state(self, tp: TopicPartition) -> PartitionState:
        try:
            return self.assignment[tp]
        except KeyError:
            raise ValueError(f"{tp} is not assigned to this consumer") from None
