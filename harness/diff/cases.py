"""A differential campaign: Hypothesis draws cases (operation sequences), each runs on both targets in
a namespace of its own, and every difference is counted under its root cause (``causes``). Then each
cause is judged against Kafka's rules (``verdicts``), shrunk on its own from the first case that showed
it (``settling``, ``shrinking``) and stored as JSON beside the traces, so ``kconform repro`` replays it
anywhere.

Every case run goes to ``journal.jsonl`` before its trace rows can reach the disk, and trace parts are
written only between cases, so a run killed at any point resumes (``resume=True``) where it stopped: the
same seed draws the same cases, those already on disk are counted from the journal rather than run
again, and summary.json always describes exactly the cases the traces hold."""

from __future__ import annotations

import asyncio
import itertools
import json
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from kconform.traces import TraceWriter

from ..targets.base import Target
from .case_files import load_case, operations_json, save_case
from .case_source import DrawnCases
from .configuration import configuration_differences
from .drawing import OPERATIONS, operation_sequences
from .engine import DiffEngine
from .operations import FindCoordinator
from .results import CampaignResult, Found, case_record
from .settling import settle_causes
from .verdicts import Rule

__all__ = [
    "OPERATIONS",
    "CampaignResult",
    "Found",
    "load_case",
    "operation_sequences",
    "run_campaign",
    "save_case",
]

_ROWS_PER_PART = 2000  # trace rows buffered before a part is written (between cases)


def run_campaign(
    a: Target,
    b: Target,
    out: Path,
    *,
    examples: int = 100,
    seed: int = 0,
    apis: set[int] | None = None,
    shrink: bool = True,
    run_id: str | None = None,
    resume: bool = False,
    progress: Callable[[int, int, int], None] | None = None,
    seconds: float | None = None,
    rules: list[Rule] | None = None,
) -> CampaignResult:
    """Run ``examples`` generated cases on ``a`` and ``b`` (started); write traces, the journal, one case
    file per cause and ``summary.json`` under ``out``. With ``resume``, the run in ``out`` is finished
    with its own examples, seed and APIs (those given here are ignored).

    ``seconds`` bounds the whole run: cases stop being drawn after half of it, and shrinking (the rest)
    stops at the end; a cause not shrunk by then keeps the first case that showed it."""
    out = Path(out)
    (out / "cases").mkdir(parents=True, exist_ok=True)
    plan = _open_run(out, a, b, examples=examples, seed=seed, apis=apis, run_id=run_id, resume=resume)
    run_id, examples, seed = plan["run_id"], plan["examples"], plan["seed"]
    apis = set(plan["apis"]) if plan["apis"] is not None else None
    operation_sequences(apis)  # APIs nothing can draw: a ValueError now, before any work
    result = CampaignResult(run_id, (a.name, b.name), seed=seed)
    loop = asyncio.new_event_loop()
    started = time.monotonic()
    stop_drawing = stop_shrinking = None
    if seconds is not None:
        stop_drawing, stop_shrinking = started + seconds / 2, started + seconds
    journal_path = out / "journal.jsonl"
    with TraceWriter(out, run_id, row_group_rows=1 << 40) as traces:
        done = _cases_done(journal_path, traces) if resume else {}
        _rewrite_journal(journal_path, done.values())
        engine = DiffEngine(a, b, traces=traces)
        result.skipped_pairs, result.shared = engine.skipped_pairs, engine.shared
        result.advertised = engine.advertised
        first_cases: dict[str, list[dict]] = {}  # cause -> the first case that showed it
        counter = itertools.count()

        with journal_path.open("a") as journal, DrawnCases(seed, examples, apis) as drawn:
            # while the drawing process starts: the one look at the targets as they started, then
            # their coordinators brought up for every drawn case
            opening = _opening_case(engine, loop, f"{run_id[:6]}open", done, apis)
            if opening is not None:
                if opening["case"] not in done:
                    journal.write(json.dumps(opening) + "\n")
                    journal.flush()
                result.count(opening)
                _first_cases(first_cases, opening)
            loop.run_until_complete(engine.prepare())
            for case, entries in drawn:
                if stop_drawing is not None and time.monotonic() > stop_drawing:
                    result.notes.append(
                        f"drawing stopped after {result.cases} of {examples} cases: out of time"
                    )
                    break
                case_id = f"{run_id[:6]}c{next(counter)}"
                record = done.get(case_id)
                if record is None:
                    crashes_before = len(engine.crashes)
                    outcome = loop.run_until_complete(engine.run_case(case, case_id))
                    record = case_record(outcome, entries)
                    record["crashes"] = engine.crashes[crashes_before:]
                    journal.write(json.dumps(record) + "\n")
                    journal.flush()  # before any of its rows can reach the disk
                    if traces.rows_buffered >= _ROWS_PER_PART:
                        traces.flush()
                result.count(record)
                _first_cases(first_cases, record)
                if progress is not None:
                    progress(result.cases, examples, len(result.causes))
            traces.flush()
        result.drawing_seconds = time.monotonic() - started
        if engine.configuration and not result.configuration:  # read on the first case, reported once
            result.configuration = engine.configuration
            a_conf, b_conf = (engine.configuration.get(t.name, {}) for t in (a, b))
            result.notes += configuration_differences(a_conf, b_conf, (a.name, b.name))
        result.broker_seconds = engine.waiting_seconds
        # Shrinking replays variants of the cases: a search, not a sample, so it is not traced.
        engine.traces = None
        result.shrink_operations = loop.run_until_complete(
            settle_causes(
                result, engine, first_cases, out, (a, b), shrink=shrink, deadline=stop_shrinking, rules=rules
            )
        )
        result.shrink_seconds = time.monotonic() - started - result.drawing_seconds
        loop.run_until_complete(engine.close())
    loop.close()
    result.seconds = time.monotonic() - started
    (out / "summary.json").write_text(json.dumps(result.summary(), indent=2) + "\n")
    return result


# The opening case: what a client meets first on a cluster that has just started, a state no drawn case
# meets again (the engine then brings the coordinators up, as a running cluster has them): the first
# FindCoordinator for a group and for a transactional id, which Kafka answers COORDINATOR_NOT_AVAILABLE
# while it creates the internal topic (KafkaApis.getCoordinator). Its causes replay on fresh targets
# only, so shrinking reports them as not reproduced on the running ones.
OPENING_CASE = [
    FindCoordinator(version_pick=3, group=0, key_type=0),
    FindCoordinator(version_pick=3, group=0, key_type=1),
]


def _first_cases(first_cases: dict[str, list[dict]], record: dict) -> None:
    """Note the case of each cause this record shows first, up to the operation that showed it."""
    for sighting in record["sightings"]:
        first_cases.setdefault(sighting["key"], record["operations"][: sighting["op"] + 1])


def _opening_case(engine: DiffEngine, loop, case_id: str, done: dict, apis: set[int] | None) -> dict | None:
    """The opening case's journal record: run now on the fresh targets, or the one a resumed run has
    (a resumed run's targets are fresh again, but its opening case is already counted). None when the
    run leaves FindCoordinator out."""
    if apis is not None and FindCoordinator.api_key not in apis:
        return None
    if case_id in done:
        return done[case_id]
    outcome = loop.run_until_complete(engine.run_case(OPENING_CASE, case_id, prepare=False))
    return {**case_record(outcome, operations_json(OPENING_CASE)), "opening": True}


def _open_run(out: Path, a, b, *, examples, seed, apis, run_id, resume) -> dict:
    """run.json: what the run is (its id, examples, seed, APIs), read back when resuming."""
    run_file = out / "run.json"
    if resume and run_file.exists():
        earlier = json.loads(run_file.read_text())
        if "examples" in earlier:
            return earlier
    plan = {
        "run_id": run_id or uuid.uuid4().hex[:12],
        "targets": [a.describe(), b.describe()],
        "examples": examples,
        "seed": seed,
        "apis": sorted(apis) if apis else None,
    }
    run_file.write_text(json.dumps(plan, indent=2) + "\n")
    return plan


def _cases_done(journal_path: Path, traces: TraceWriter) -> dict[str, dict]:
    """The journal's cases whose trace rows are all on disk (a case with no exchanges has none)."""
    if not journal_path.exists():
        return {}
    on_disk = traces.cases_on_disk()
    done = {}
    for line in journal_path.read_text().splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:  # the line being written when the run was killed
            break
        if record["case"] in on_disk or not record["exchanged"]:
            done[record["case"]] = record
    return done


def _rewrite_journal(journal_path: Path, records) -> None:
    temporary = journal_path.with_suffix(".tmp")
    temporary.write_text("".join(json.dumps(r) + "\n" for r in records))
    temporary.replace(journal_path)
