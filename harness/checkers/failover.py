"""Which leader changes lie in a stretch of history: the evidence that tells a write lost to a failover
(allowed at acks=1, or with unclean election on) from one lost with no failover to blame (a bug).

A change explains a loss when it was recorded before the read that misses the value and, if the
acknowledgement names its leader epoch, moved the epoch past it. Without an epoch, the changes after the
acknowledgement explain it, or failing those the last one before it: a deposed leader that has not
heard of its successor goes on acknowledging acks=1 writes, so a change recorded before the
acknowledgement may still have cost it."""

from __future__ import annotations

from collections import defaultdict

from .history import History, LeaderChange, Op, Partition

__all__ = ["OBSERVER_LAG_NS", "Failovers", "loss_anomaly", "show_change"]

OBSERVER_LAG_NS = 1_000_000_000  # how late a sampled leader change may be written down


class Failovers:
    """Each partition's leader changes in history order."""

    def __init__(self, history: History) -> None:
        self.by_partition: dict[Partition, list[LeaderChange]] = defaultdict(list)
        for change in sorted(history.leader_changes, key=lambda c: c.op):
            self.by_partition[change.partition].append(change)

    def __bool__(self) -> bool:
        return bool(self.by_partition)

    def explaining(
        self, partition: Partition, before_op: int, *, epoch: int | None = None, after_op: int = -1
    ) -> tuple[LeaderChange, ...]:
        """The changes of ``partition`` recorded between ``after_op`` and ``before_op`` that moved its
        leader epoch past ``epoch`` (any, when the epoch is not known)."""
        return tuple(
            c
            for c in self.by_partition.get(partition, ())
            if after_op < c.op < before_op and (epoch is None or c.epoch > epoch)
        )

    def losing(
        self, partition: Partition, ack_op: int, before_op: int, epoch: int | None = None
    ) -> tuple[LeaderChange, ...]:
        """The changes that may have lost a write acknowledged at ``ack_op`` (in leader epoch
        ``epoch``, if known) and missing from the read at ``before_op``."""
        changes = self.explaining(partition, before_op, epoch=epoch)
        if epoch is None:
            return tuple(c for c in changes if c.op > ack_op) or changes[-1:]
        return changes

    def between(
        self, partition: Partition, after_op: int, later: Op, lag_ns: int = OBSERVER_LAG_NS
    ) -> tuple[LeaderChange, ...]:
        """The changes of ``partition`` recorded after op ``after_op`` and before ``later``, or just
        after it but seen no later than ``lag_ns`` past it (an observer samples, so it writes a change
        down a little after clients may have met it)."""
        return tuple(
            c
            for c in self.by_partition.get(partition, ())
            if c.op > after_op
            and (c.op < later.index or (later.time_ns and c.time_ns and c.time_ns <= later.time_ns + lag_ns))
        )


def loss_anomaly(changes: tuple[LeaderChange, ...]) -> str:
    """What a lost acknowledged write is called, by the leader changes that may have lost it."""
    if not changes:
        return "lost-write"
    if any(c.unclean for c in changes):
        return "lost-write-unclean"
    return "lost-write-leader-change"


def show_change(change: LeaderChange) -> str:
    """``t-0 led by 2 in epoch 5 (clean)``."""
    topic, partition = change.partition
    leader = f"led by {change.leader}" if change.leader >= 0 else "leaderless"
    how = {True: " (unclean: from outside the ISR)", False: " (clean)", None: ""}[change.unclean]
    return f"{topic}-{partition} {leader} in epoch {change.epoch}{how}"
