"""``JavaHashMap``: a dict with String keys that iterates in the order Java's ``HashMap`` does, for
responses whose entry order Kafka takes from a HashMap it filled (the SCRAM credential results, say).

Java's order is by bucket, ``h ^ (h >>> 16)`` of ``String.hashCode`` masked by the table size, and
insertion order within a bucket; the table starts at 16 and doubles whenever more than 3/4 of it is
used, and never shrinks, so the order depends on the largest size the map ever had, which this class
tracks. (A bucket of 8 or more keys in a table of 64 or more becomes a tree in Java; requests that
big are not ordered exactly.)"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Generic, TypeVar

__all__ = ["JavaHashMap", "string_hash"]

V = TypeVar("V")
_INITIAL_CAPACITY = 16


def string_hash(text: str) -> int:
    """Java's ``String.hashCode`` over UTF-16 code units, as an unsigned 32-bit value
    (``internal_topics.java_string_hash`` gives it signed)."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i : i + 2], "big")) & 0xFFFFFFFF
    return h


class JavaHashMap(Generic[V]):
    def __init__(self) -> None:
        self._entries: dict[str, V] = {}
        self._capacity = _INITIAL_CAPACITY

    def __contains__(self, key: str) -> bool:
        return key in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str) -> V | None:
        return self._entries.get(key)

    def put(self, key: str, value: V) -> None:
        """Replacing a key's value keeps its place, as in Java."""
        self._entries[key] = value
        if len(self._entries) > self._capacity * 3 // 4:
            self._capacity *= 2

    def pop(self, key: str) -> V | None:
        return self._entries.pop(key, None)

    def _bucket(self, key: str) -> int:
        h = string_hash(key)
        return (h ^ (h >> 16)) & (self._capacity - 1)

    def items(self) -> list[tuple[str, V]]:
        # sorted() is stable: within a bucket, insertion order stays
        return sorted(self._entries.items(), key=lambda item: self._bucket(item[0]))

    def keys(self) -> list[str]:
        return [key for key, _ in self.items()]

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())
