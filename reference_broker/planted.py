"""Planted bugs: test-only switches that make the reference broker misbehave in one known way, so the
harness can prove that it notices (the differential engine finds and shrinks the difference; the chaos
checkers report the anomaly). They are switched on only through ``KCONFORM_PLANTED_BUGS`` (names,
comma-separated) in the broker's environment; a broker started with an unknown name refuses to start."""

from __future__ import annotations

import os

__all__ = ["PLANTED_BUGS", "PlantedBugError", "active", "check_environment"]

PLANTED_BUGS = {
    "list-offsets-latest-off-by-one": "ListOffsets for the latest offset (-1) answers one past the end",
    "ack-without-write": "every tenth produced batch of a partition is acknowledged but never written, "
    "as by a broker that acknowledged before the write was durable and then lost it",
    "forget-idempotent-state": "idempotent producers' sequence state is ignored, so a resent batch is "
    "written again instead of being recognised as a duplicate",
}

_ENV = "KCONFORM_PLANTED_BUGS"


class PlantedBugError(ValueError):
    pass


def _names() -> frozenset[str]:
    return frozenset(n.strip() for n in os.environ.get(_ENV, "").split(",") if n.strip())


def check_environment() -> frozenset[str]:
    names = _names()
    unknown = names - PLANTED_BUGS.keys()
    if unknown:
        raise PlantedBugError(
            f"{_ENV} names unknown planted bugs {', '.join(sorted(unknown))}; "
            f"known: {', '.join(PLANTED_BUGS)}"
        )
    return names


_ACTIVE = _names() & PLANTED_BUGS.keys()


def active(name: str) -> bool:
    return name in _ACTIVE
