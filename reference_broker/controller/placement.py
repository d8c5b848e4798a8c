"""Where a new partition's replicas go: Kafka's ``StripedReplicaPlacer``.

The candidates are the registered brokers not in controlled shutdown, fenced ones included
(``ClusterDescriber.usableBrokers``). Brokers are grouped by rack (no rack is a rack of its own, sorted
first); each partition starts at the next rack and takes its leader (first replica) from the first
rack, in rack order, that still has an unfenced broker; the other replicas go round the racks from the
starting one, one broker from each rack per turn, a rack's unfenced brokers before its fenced ones, so
replicas are spread over as many racks as there are and a fenced broker is only taken when no unfenced
one is left in its rack. Each rack's lists rotate by one broker per partition; after as many partitions
as there are unfenced brokers the racks and lists are shuffled.

Kafka draws the starting offsets and shuffles from ``java.util.Random``; here a generator seeded with
``start`` does, so one ``start`` always gives one layout. The checks and their messages are Kafka's, in
``StripedReplicaPlacer.place``'s order: a non-positive factor, no unfenced broker, too few brokers."""

from __future__ import annotations

import random
from collections.abc import Sequence

from ..cluster_metadata import BrokerInfo, ClusterImage

__all__ = ["NotEnoughBrokers", "assign_replicas", "place_replicas"]


class NotEnoughBrokers(ValueError):
    """The placement cannot be made (INVALID_REPLICATION_FACTOR); the message is the one Kafka's
    CreateTopics returns."""


class _BrokerList:
    """``StripedReplicaPlacer.BrokerList``: sorted ids, a rotating offset, and how many were taken in
    the current partition (the epoch)."""

    def __init__(self, ids: list[int], rng: random.Random) -> None:
        self.ids = sorted(ids)
        self.offset = rng.randrange(len(self.ids)) if self.ids else 0
        self.index = self.epoch = 0

    def next(self, epoch: int) -> int:
        if not self.ids:
            return -1
        if self.epoch != epoch:
            self.epoch, self.index = epoch, 0
            self.offset = (self.offset + 1) % len(self.ids)
        if self.index >= len(self.ids):
            return -1
        self.index += 1
        return self.ids[(self.index - 1 + self.offset) % len(self.ids)]


class _Rack:
    def __init__(self, unfenced: list[int], fenced: list[int], rng: random.Random) -> None:
        self.unfenced = _BrokerList(unfenced, rng)
        self.fenced = _BrokerList(fenced, rng)

    def next(self, epoch: int) -> int:
        found = self.unfenced.next(epoch)
        return found if found >= 0 else self.fenced.next(epoch)


class _RackList:
    """``StripedReplicaPlacer.RackList``."""

    def __init__(self, brokers: Sequence[BrokerInfo], rng: random.Random) -> None:
        self.rng = rng
        members: dict[str | None, tuple[list[int], list[int]]] = {}
        for broker in brokers:
            unfenced, fenced = members.setdefault(broker.rack, ([], []))
            (fenced if broker.fenced else unfenced).append(broker.broker_id)
        # OptionalStringComparator: no rack first, then by name
        self.names = sorted(members, key=lambda name: (name is not None, name or ""))
        self.racks = {name: _Rack(*members[name], rng) for name in self.names}
        self.unfenced_count = sum(len(u) for u, _ in members.values())
        self.offset = rng.randrange(len(self.names)) if self.names else 0
        self.epoch = 0

    def place(self, factor: int) -> list[int]:
        if self.epoch == self.unfenced_count and self.unfenced_count > 1:
            self._shuffle()  # spread the next partitions differently from the ones just placed
            self.epoch = 0
        if self.offset == len(self.names):
            self.offset = 0
        first_rack = self.offset
        while (leader := self.racks[self.names[first_rack]].unfenced.next(self.epoch)) < 0:
            first_rack = (first_rack + 1) % len(self.names)
        replicas, rack_index = [leader], self.offset
        for _ in range(1, factor):
            found = -1
            while found < 0:
                if rack_index == first_rack:
                    first_rack = -1  # the leader's rack gave its broker for this turn
                else:
                    found = self.racks[self.names[rack_index]].next(self.epoch)
                rack_index = (rack_index + 1) % len(self.names)
            replicas.append(found)
        self.epoch += 1
        self.offset += 1
        return replicas

    def _shuffle(self) -> None:
        self.rng.shuffle(self.names)
        for rack in self.racks.values():
            self.rng.shuffle(rack.unfenced.ids)
            self.rng.shuffle(rack.fenced.ids)


def place_replicas(
    brokers: Sequence[BrokerInfo], partitions: int, factor: int, *, start: int = 0
) -> list[list[int]]:
    """Replica lists for ``partitions`` new partitions over ``brokers`` (pass the registered brokers not
    in controlled shutdown); NotEnoughBrokers when Kafka's placer refuses."""
    racks = _RackList(brokers, random.Random(start))
    prefix = f"Unable to replicate the partition {factor} time(s): "
    if factor <= 0:
        raise NotEnoughBrokers(
            f"{prefix}Invalid replication factor {factor}: the replication factor must be positive."
        )
    if racks.unfenced_count == 0:
        raise NotEnoughBrokers(f"{prefix}All brokers are currently fenced.")
    if factor > len(brokers):
        raise NotEnoughBrokers(
            f"{prefix}The target replication factor of {factor} cannot be reached because only "
            f"{len(brokers)} broker(s) are registered."
        )
    return [racks.place(factor) for _ in range(partitions)]


def assign_replicas(image: ClusterImage, partitions: int, factor: int, *, start: int = 0) -> list[list[int]]:
    """Replica lists for new partitions as the controller places them (``ReplicationControlManager
    .createTopic`` / ``createPartitions`` over ``ClusterControlManager.usableBrokers``): every registered
    broker not in controlled shutdown, fenced ones as followers of last resort. NotEnoughBrokers when
    it cannot place."""
    brokers = [b for _, b in sorted(image.brokers.items()) if not b.in_controlled_shutdown]
    return place_replicas(brokers, partitions, factor, start=start)
