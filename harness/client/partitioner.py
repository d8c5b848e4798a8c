"""Choosing a record's partition, as Kafka's Java producer chooses it.

- Keyed records: ``toPositive(murmur2(key)) % partitions`` (``BuiltInPartitioner.partitionForKey``), the
  hash byte-for-byte Kafka's ``Utils.murmur2``; librdkafka's ``murmur2_random`` gives the same answers.
- Keyless records: the built-in uniform sticky partitioner (KIP-480/KIP-794): stay on one partition
  until ``batch.size`` bytes have gone to it, then pick another at random among the partitions that have
  a leader. Adaptive partitioning by queue sizes is not modelled.
- ``RoundRobinPartitioner``: each record to the next partition, per topic.

The random source is passed in, so the decisions can be replayed."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

__all__ = [
    "BuiltInPartitioner",
    "Partitioner",
    "RoundRobinPartitioner",
    "murmur2",
    "partition_for_key",
    "to_positive",
]

_MASK = 0xFFFFFFFF
_M = 0x5BD1E995
_SEED = 0x9747B28C


def _signed(value: int) -> int:
    value &= _MASK
    return value - (1 << 32) if value & 0x80000000 else value


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2``: 32-bit MurmurHash2 with Kafka's seed, as a signed int."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    whole = length - length % 4
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    tail = length % 4
    if tail == 3:
        h ^= data[whole + 2] << 16
    if tail >= 2:
        h ^= data[whole + 1] << 8
    if tail >= 1:
        h ^= data[whole]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return _signed(h)


def to_positive(value: int) -> int:
    """Kafka's ``Utils.toPositive``: drop the sign bit (not abs: Integer.MIN_VALUE maps to 0)."""
    return value & 0x7FFFFFFF


def partition_for_key(key: bytes, partitions: int) -> int:
    if partitions <= 0:
        raise ValueError(f"a topic needs at least one partition, not {partitions}")
    return to_positive(murmur2(key)) % partitions


class Partitioner(Protocol):
    """A user-defined partitioner: the partition for one record."""

    def partition(self, topic: str, key: bytes | None, partitions: int, available: Sequence[int]) -> int: ...


@dataclass
class RoundRobinPartitioner:
    """Kafka's ``RoundRobinPartitioner``: a counter per topic over the available partitions, or all of
    them when none is available."""

    _counters: dict[str, int] = field(default_factory=dict)

    def partition(self, topic: str, key: bytes | None, partitions: int, available: Sequence[int]) -> int:
        n = self._counters.get(topic, 0)
        self._counters[topic] = n + 1
        if available:
            return available[to_positive(n) % len(available)]
        return to_positive(n) % partitions


@dataclass
class BuiltInPartitioner:
    """The default partitioner: murmur2 for keys, uniform sticky for keyless records."""

    batch_size: int = 16384
    rng: random.Random = field(default_factory=random.Random)
    _sticky: dict[str, tuple[int, int]] = field(default_factory=dict)  # topic -> (partition, bytes)

    def __post_init__(self) -> None:
        if self.batch_size < 1:
            raise ValueError(f"the sticky batch size must be at least 1, not {self.batch_size}")

    def partition(self, topic: str, key: bytes | None, partitions: int, available: Sequence[int]) -> int:
        if key is not None:
            return partition_for_key(key, partitions)
        current = self._sticky.get(topic)
        if current is None or current[0] >= partitions:
            current = (self._next(partitions, available), 0)
            self._sticky[topic] = current
        return current[0]

    def record_appended(
        self, topic: str, appended_bytes: int, partitions: int, available: Sequence[int]
    ) -> None:
        """After a keyless record was added to the sticky partition's batch: switch once
        ``batch_size`` bytes went there (``updatePartitionInfo``)."""
        current = self._sticky.get(topic)
        if current is None:
            return
        produced = current[1] + appended_bytes
        if produced >= self.batch_size:
            self._sticky[topic] = (self._next(partitions, available), 0)
        else:
            self._sticky[topic] = (current[0], produced)

    def _next(self, partitions: int, available: Sequence[int]) -> int:
        draw = to_positive(self.rng.getrandbits(32))
        if available:
            return available[draw % len(available)]
        return draw % partitions
