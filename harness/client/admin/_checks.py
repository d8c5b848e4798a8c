"""Checks on what the caller passed, run before anything is sent: each raises ``ValueError``.

Only what a request cannot carry stops here; every other doubtful value (a zero partition count, an
odd topic name) is sent, because the broker's error for it is the behaviour a harness wants to see."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ._types import ConfigResource, NewTopic

__all__ = [
    "check_config_resources",
    "check_group_ids",
    "check_new_topic",
    "check_partitions",
    "check_topic_name",
    "check_unique",
]


def check_topic_name(name: Any) -> None:
    # Java's "cannot be represented in a request": the broker judges every other name.
    if not isinstance(name, str) or name == "":
        raise ValueError(f"topic name {name!r} cannot be represented in a request")


def check_unique(keys: list, what: str) -> None:
    seen = set()
    for key in keys:
        if key in seen:
            raise ValueError(f"{what} {key!r} is given twice")
        seen.add(key)


def check_partitions(keys: Iterable[tuple[str, int]], what: str) -> list[tuple[str, int]]:
    out = []
    for key in keys:
        if not (isinstance(key, tuple) and len(key) == 2 and isinstance(key[1], int)):
            raise ValueError(f"{what}: {key!r} is not a (topic, partition) pair")
        check_topic_name(key[0])
        if key[1] < 0:
            raise ValueError(f"{what}: partition {key[1]} of {key[0]!r} is negative")
        out.append(key)
    return out


def check_new_topic(topic: NewTopic) -> None:
    check_topic_name(topic.name)
    if topic.assignments is not None:
        if topic.num_partitions != -1 or topic.replication_factor != -1:
            raise ValueError(
                f"topic {topic.name!r}: give either assignments or partitions and replication factor"
            )
        if not topic.assignments:
            raise ValueError(f"topic {topic.name!r}: assignments is empty")
    for value, what in (
        (topic.num_partitions, "num_partitions"),
        (topic.replication_factor, "replication_factor"),
    ):
        # 0 and other negatives are sent: the broker's INVALID_PARTITIONS / INVALID_REPLICATION_FACTOR
        # is the conformance behaviour a harness wants to see. Only what the wire cannot carry stops here.
        limit = 2**31 if what == "num_partitions" else 2**15
        if not -limit <= value < limit:
            raise ValueError(f"topic {topic.name!r}: {what} {value} does not fit the request")


def check_config_resources(resources: Iterable[ConfigResource]) -> list[ConfigResource]:
    out = list(resources)
    for r in out:
        if not isinstance(r, ConfigResource):
            raise ValueError(f"{r!r} is not a ConfigResource")
        if r.is_broker_specific and not r.name.isdigit():
            raise ValueError(f"broker resource name {r.name!r} is not a broker id")
    check_unique(out, "config resource")
    return out


def check_group_ids(group_ids: Iterable[str]) -> list[str]:
    out = list(group_ids)
    for g in out:
        if not isinstance(g, str) or g == "":
            raise ValueError(f"group id {g!r} cannot be represented in a request")
    check_unique(out, "group id")
    return out
