"""Settling a campaign's causes: each is judged, shrunk from the first case that showed it, given its
example from its stored case's own replay, and stored.

Causes shrink side by side, a few at a time, each on a lane of the engine (connections of its own, on
the same targets) and every replay in a namespace of its own: most of a replay's time is spent waiting
on the targets (a join held for the rebalance timeout, a second member's session), which lanes overlap.
A crash's case kills a target on every replay, so crashes are settled last, one at a time, with no other
replay running; a replay that another lane's crash met anyway (the target restarted while it ran) says
nothing of its own case and is run again."""

from __future__ import annotations

import asyncio
import itertools
import time
from pathlib import Path

from .case_files import operations_from_json, save_case
from .engine import CaseResult, DiffEngine
from .results import example_of
from .shrinking import shrink_case
from .verdicts import CONSEQUENCE_RULES, judge, load_rules

__all__ = ["LANES", "settle_causes"]

LANES = 4  # causes shrunk side by side
_TRIES = 3  # runs of one replay that a restart elsewhere disturbed, before its answer is taken as it is


async def settle_causes(
    result, engine: DiffEngine, first_cases: dict, out: Path, targets, *, shrink: bool, deadline, rules
) -> int:
    """Judge, shrink and store every cause of ``result``; the operations the replays compared."""
    rules = load_rules() if rules is None else rules
    names = tuple(t.name for t in targets)
    namespaces = itertools.count()
    # Every replay shows some causes, each by some operation: the operations up to it show that cause
    # too. The smallest such case seen so far is where a later cause's shrinking starts, and it has
    # already shown the cause again in a namespace of its own.
    shown_by: dict[str, list] = {}

    async def replay(lane: DiffEngine, case: list, until: str | None = None) -> CaseResult:
        for _ in range(_TRIES):
            before = lane.restarts
            outcome = await lane.run_case(case, f"{result.run_id[:6]}r{next(namespaces)}", until=until)
            if lane.restarts == before or _crashed(outcome):
                break
        for index, _, sighting in outcome.sightings:
            known = shown_by.get(sighting.key)
            if known is None or index + 1 < len(known):
                shown_by[sighting.key] = case[: index + 1]
        return outcome

    async def settle(cause, lane: DiffEngine) -> None:
        case = operations_from_json(first_cases[cause.id])
        shown_as = sorted(cause.signatures)[0]  # the signature the stored case shows, once replayed
        # A consequence of an earlier step one side refused (or crashed on) is judged by that step's
        # own cause: its case is kept as first seen rather than shrunk (a third of a run's causes
        # against the mock), judged from what the drawing saw of the cause (its facets and shapes),
        # which shrinking keeps
        judged = cause.verdict["rule"]
        if shrink and judged not in CONSEQUENCE_RULES and (deadline is None or time.monotonic() < deadline):
            last_showing: list = []  # (case, outcome) of the latest replay that showed the cause

            async def shows(candidate: list) -> bool:
                outcome = await replay(lane, candidate, until=cause.id)
                if cause.id in outcome.cause_ids:
                    last_showing[:] = [candidate, outcome]
                return cause.id in outcome.cause_ids

            # The case ends with the operation that showed the cause; most causes need nothing
            # before it, so that operation alone is tried first (one replay, instead of one per
            # halving), and the whole case only when it does not show the cause alone.
            if cause.id in shown_by:
                case, cause.reproduced = shown_by[cause.id], True
            elif len(case) > 1 and await shows(case[-1:]):
                case, cause.reproduced = case[-1:], True
            else:
                cause.reproduced = await shows(case)
            if cause.reproduced:  # a cause its own case cannot show again cannot be shrunk either
                found = await shrink_case(
                    case,
                    shows,
                    deadline=deadline,
                    # a crash's case is what kills the target: every replay restarts it, and the
                    # fields of the steps left are the request that killed it, as drawn
                    simplify=judged != "crashed",
                )
                case, cause.shrunk = found.case, found.finished
                # the example comes from the stored case's own replay: the latest showing one when
                # it replayed exactly that case
                if last_showing and last_showing[0] == case:
                    again = last_showing[1]
                else:
                    again = await replay(lane, case)
                sighting = next(((i, v, s) for i, v, s in again.sightings if s.key == cause.id), None)
                cause.reproduced = sighting is not None
                if sighting is not None:
                    index, version, shown = sighting
                    cause.example = example_of(case[index], version, shown.facets)
                    shown_as = shown.facets[0].signature(shown.api_name, version)
                    case = case[: index + 1]  # nothing after the operation that shows it matters to it
        cause.stored_operations = len(case)
        save_case(
            out / "cases" / f"{cause.case_file}.json",
            case,
            cause=cause.id,
            title=cause.title(*names),
            signature=shown_as,
            signatures=sorted(cause.signatures),
            verdict=cause.verdict,
            steps=[lane.step_text(op) for op in case],
            targets=names,
            shrunk=cause.shrunk,
        )

    causes = sorted(result.causes.values(), key=lambda c: c.number)
    for cause in causes:
        cause.verdict = judge(cause, rules, names)
    crashes = [c for c in causes if c.verdict["rule"] == "crashed"]
    lanes = [engine.lane() for _ in range(LANES)]
    idle: asyncio.Queue[DiffEngine] = asyncio.Queue()
    for lane in lanes:
        idle.put_nowait(lane)

    async def on_a_lane(cause) -> None:
        lane = await idle.get()
        try:
            await settle(cause, lane)
        finally:
            idle.put_nowait(lane)

    compared_before = engine.pairs_compared
    tasks = [asyncio.ensure_future(on_a_lane(c)) for c in causes if c not in crashes]
    try:
        await asyncio.gather(*tasks)
    finally:  # a target that could not come back ends the run: the other lanes stop with it
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for lane in lanes:
            await lane.close()
    for cause in crashes:
        await settle(cause, engine)
    for found in result.found.values():  # each signature points at its cause's stored case
        if found.cause in result.causes:
            found.case_id = result.causes[found.cause].case_file
    return engine.pairs_compared - compared_before + sum(lane.pairs_compared for lane in lanes)


def _crashed(outcome: CaseResult) -> bool:
    """Whether a target crashed on this replay's own requests."""
    return any(exchange.fate == "crashed" for pair in outcome.exchanges for exchange in pair)
