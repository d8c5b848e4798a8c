"""Shrinking one cause's case to a minimal one: a greedy search over the stored operations themselves,
not a re-run of the whole campaign. Chunks of operations are dropped (halves, then quarters, down to
single operations), then every operation is tried at the lowest version (and chunks dropped again),
then each remaining operation's fields are moved towards simpler values (all of an operation's at
once, then one at a time), then chunks are dropped once more (a simpler field may have freed an
operation); a change is kept whenever the smaller case still shows the cause. Pure
over ``shows`` (a replay in a namespace of its own, awaited, so that several causes shrink side by side
on the same targets), so it is tested without a broker."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Awaitable, Callable

__all__ = ["ShrinkResult", "shrink_case"]


@dataclasses.dataclass
class ShrinkResult:
    case: list
    replays: int
    finished: bool  # False when the deadline or the replay budget stopped it


async def shrink_case(
    case: list,
    shows: Callable[[list], Awaitable[bool]],
    *,
    deadline: float | None = None,
    max_replays: int = 200,
    simplify: bool = True,
    clock: Callable[[], float] = time.monotonic,
) -> ShrinkResult:
    """The smallest case found that still ``shows`` the cause (``case`` itself when none is smaller).
    ``simplify=False`` only drops operations, leaving the fields of those kept as they were."""
    replays = 0

    async def still_shows(candidate: list) -> bool | None:
        nonlocal replays
        if replays >= max_replays or (deadline is not None and clock() > deadline):
            return None
        replays += 1
        return await shows(candidate)

    current = list(case)
    steps = (_drop_chunks, _lowest_versions, _simplify_fields) if simplify else (_drop_chunks,)
    for step in steps:
        current, done = await step(current, still_shows)
        if not done:
            return ShrinkResult(current, replays, False)
    if simplify and len(current) > 1:
        # Simpler fields may free an operation that was needed before (an idempotent producer needs
        # no AddPartitionsToTxn): drop again, once
        current, done = await _drop_chunks(current, still_shows)
        if not done:
            return ShrinkResult(current, replays, False)
    return ShrinkResult(current, replays, True)


async def _drop_chunks(case: list, still_shows) -> tuple[list, bool]:
    size = max(1, len(case) // 2)
    while size >= 1:
        start = 0
        while start < len(case) and len(case) > 1:
            candidate = case[:start] + case[start + size :]
            if not candidate:
                start += size
                continue
            verdict = await still_shows(candidate)
            if verdict is None:
                return case, False
            if verdict:
                case = candidate  # the same start now holds the operations after the dropped chunk
            else:
                start += size
        size //= 2
    return case, True


async def _lowest_versions(case: list, still_shows) -> tuple[list, bool]:
    """Every operation at the lowest version both targets offer, when the cause still shows there;
    then what that frees is dropped. Older versions need fewer steps for the same state (a JoinGroup
    below v4 joins at once, with no MEMBER_ID_REQUIRED round), and a cause holds across versions."""
    lowered = [dataclasses.replace(op, version_pick=0) for op in case]
    if lowered == case:
        return case, True
    verdict = await still_shows(lowered)
    if verdict is None:
        return case, False
    if not verdict:
        return case, True
    return await _drop_chunks(lowered, still_shows)


async def _simplify_fields(case: list, still_shows) -> tuple[list, bool]:
    for index in range(len(case)):
        simpler = _simpler_values(case[index])
        # Every field of the operation at once first: most fields do not matter to a cause, so one
        # replay usually settles the whole operation; one field at a time only when that fails.
        tries = ([dict(simpler)] if len(simpler) > 1 else []) + [{name: value} for name, value in simpler]
        for changes in tries:
            candidate = list(case)
            candidate[index] = dataclasses.replace(case[index], **changes)
            verdict = await still_shows(candidate)
            if verdict is None:
                return case, False
            if verdict:
                case = candidate
                if len(changes) > 1:
                    break
    return case, True


def _simpler_values(op) -> list[tuple[str, object]]:
    """For each field, at most one simpler value to try: zero, false, a shorter tuple."""
    out = []
    for item in dataclasses.fields(op):
        value = getattr(op, item.name)
        if isinstance(value, bool):
            if value:
                out.append((item.name, False))
        elif isinstance(value, int):
            if value != 0 and item.name != "version_pick":
                out.append((item.name, 0))
        elif isinstance(value, tuple) and len(value) > 1:
            out.append((item.name, value[:1]))
    return out
