"""A differential campaign: Hypothesis generates cases (operation sequences), each runs on both targets,
every difference is counted by signature, and each new signature is shrunk to its smallest case,
stored as JSON beside the traces so ``kconform repro`` can replay it on any pair of targets.

A campaign must find every difference, not stop at the first: each signature raises its own
exception type, so Hypothesis (``report_multiple_bugs``) keeps generating after the first and shrinks
every kind of difference separately; the last case that raised a signature is its shrunk case
(Hypothesis replays each minimal example last)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

from kconform.traces import TraceWriter

from ..targets.base import Target
from . import operations as ops
from .engine import CaseResult, DiffEngine

__all__ = ["CampaignResult", "load_case", "operation_sequences", "run_campaign", "save_case"]

OPERATIONS = {
    cls.__name__: cls
    for cls in (
        ops.CreateTopic,
        ops.Produce,
        ops.Fetch,
        ops.ListOffsets,
        ops.Metadata,
        ops.DeleteRecords,
        ops.FindCoordinator,
        ops.OffsetCommit,
        ops.OffsetFetch,
    )
}

_topic = st.integers(0, 2)
_partition = st.sampled_from([0, 0, 0, 1, 2, -1, 7])
_offset = st.sampled_from([0, 0, 1, 2, 5, -1, 1 << 40])
_pick = st.integers(0, 31)
_epoch = st.sampled_from([-1, -1, -1, 0, 5])  # none, the current one, one from the future
_values = st.lists(st.one_of(st.binary(max_size=20), st.none()), min_size=0, max_size=5).map(tuple)


def _operation(apis: set[int] | None) -> st.SearchStrategy:
    choices = [
        st.builds(ops.CreateTopic, _pick, topic=_topic, partitions=st.sampled_from([1, 1, 2, 3, 0, -1])),
        st.builds(
            ops.Produce,
            _pick,
            topic=_topic,
            partition=_partition,
            values=_values,
            keyed=st.booleans(),
            acks=st.sampled_from([-1, -1, 1, 0, 2]),
            corrupt=st.sampled_from([False] * 7 + [True]),  # a bad CRC now and then
        ),
        st.builds(
            ops.Fetch,
            _pick,
            topic=_topic,
            partition=_partition,
            offset=_offset,
            max_bytes=st.sampled_from([1 << 20, 1, 100]),
            leader_epoch=_epoch,
        ),
        st.builds(
            ops.ListOffsets,
            _pick,
            topic=_topic,
            partition=_partition,
            timestamp=st.sampled_from([-1, -2, -3, ops.BASE_TIMESTAMP, ops.BASE_TIMESTAMP + 3, 0]),
            leader_epoch=_epoch,
        ),
        st.builds(
            ops.Metadata,
            _pick,
            topic_list=st.lists(_topic, max_size=2).map(tuple),
            all_topics=st.sampled_from([False] * 5 + [True]),
        ),
        st.builds(ops.DeleteRecords, _pick, topic=_topic, partition=_partition, offset=_offset),
        st.builds(ops.FindCoordinator, _pick, group=st.integers(0, 1)),
        st.builds(
            ops.OffsetCommit,
            _pick,
            group=st.integers(0, 1),
            topic=_topic,
            partition=_partition,
            offset=_offset,
        ),
        st.builds(ops.OffsetFetch, _pick, group=st.integers(0, 1), topic=_topic, partition=_partition),
    ]
    if apis:
        choices = [c for c, cls in zip(choices, OPERATIONS.values(), strict=True) if cls.api_key in apis]
    return st.one_of(choices)


def operation_sequences(apis: set[int] | None = None, max_ops: int = 8) -> st.SearchStrategy:
    """Cases: a topic is usually created first, then anything goes."""
    body = st.lists(_operation(apis), min_size=1, max_size=max_ops)
    setup = st.builds(ops.CreateTopic, _pick, topic=st.just(0), partitions=st.sampled_from([1, 3]))
    with_setup = st.tuples(setup, body).map(lambda pair: [pair[0], *pair[1]])
    return st.one_of(with_setup, with_setup, body) if not apis or 19 in apis else body


@dataclasses.dataclass
class Found:
    signature: str
    api_key: int
    api_version: int
    field_path: str
    kind: str
    count: int = 0
    number: int = 0
    shrunk: bool = False
    example: dict | None = None  # a: ..., b: ... from the first sighting
    case_id: str | None = None  # the shrunk case
    # every distinct (a, b) pair of values seen, as JSON text, up to _MAX_VALUE_PAIRS
    value_pairs: list[tuple[str, str]] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class CampaignResult:
    run_id: str
    targets: tuple[str, str]
    cases: int = 0
    operations: int = 0
    pairs_compared: int = 0
    skipped_pairs: list[tuple[int, int]] = dataclasses.field(default_factory=list)
    skipped_operations: int = 0
    shrink_operations: int = 0
    crashes: list = dataclasses.field(default_factory=list)  # (target, api key, version, last words)
    found: dict[str, Found] = dataclasses.field(default_factory=dict)
    seconds: float = 0.0

    def summary(self) -> dict:
        by_kind = Counter(f.kind for f in self.found.values())
        return {
            "run_id": self.run_id,
            "targets": list(self.targets),
            "cases": self.cases,
            "operations": self.operations,
            "pairs_compared": self.pairs_compared,
            "skipped_operations": self.skipped_operations,
            "shrink_operations": self.shrink_operations,
            "crashes": [
                {"target": t, "api_key": k, "api_version": v, "message": m} for t, k, v, m in self.crashes
            ],
            "skipped_api_versions": [{"api_key": k, "api_version": v} for k, v in self.skipped_pairs],
            "differences_by_kind": dict(by_kind),
            "seconds": round(self.seconds, 2),
            "differences": [
                {
                    "signature": f.signature,
                    "api_key": f.api_key,
                    "api_version": f.api_version,
                    "field_path": f.field_path,
                    "kind": f.kind,
                    "count": f.count,
                    "case_id": f.case_id,
                    "shrunk": f.shrunk,
                    "example": f.example,
                    "value_pairs": [[json.loads(a), json.loads(b)] for a, b in f.value_pairs],
                }
                for f in sorted(self.found.values(), key=lambda f: f.signature)
            ],
        }


def _case_id(run_id: str, segment: int, n: int) -> str:
    return f"{run_id[:6]}s{segment}c{n}"


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
) -> CampaignResult:
    """Run ``examples`` generated cases on ``a`` and ``b`` (started), write traces, cases and
    ``summary.json`` under ``out``. With ``resume``, a run directory left by an earlier (perhaps
    killed) run is continued: same run id, its traces appended to, new cases drawn.

    ``seconds`` bounds the whole run: cases stop being drawn after half of it (the rest is left to
    shrinking, which replays many variants of every difference), and shrinking stops at the end;
    differences not shrunk by then keep the first case that showed them."""
    out = Path(out)
    (out / "cases").mkdir(parents=True, exist_ok=True)
    segment = 0
    run_file = out / "run.json"
    if resume and run_file.exists():
        earlier = json.loads(run_file.read_text())
        run_id, segment = earlier["run_id"], earlier["segments"]
        seed = earlier["seed"] + segment * 1_000_003  # new cases, not the ones already run
    run_id = run_id or uuid.uuid4().hex[:12]
    run_file.write_text(
        json.dumps(
            {
                "run_id": run_id,
                "targets": [a.describe(), b.describe()],
                "seed": seed,
                "segments": segment + 1,
            },
            indent=2,
        )
        + "\n"
    )
    result = CampaignResult(run_id, (a.name, b.name))
    loop = asyncio.new_event_loop()
    started = time.monotonic()
    stop_drawing = stop_shrinking = None
    if seconds is not None:
        stop_drawing, stop_shrinking = started + seconds / 2, started + seconds
    with TraceWriter(out, run_id) as traces:
        engine = DiffEngine(a, b, traces=traces)
        result.skipped_pairs = engine.skipped_pairs
        counter = iter(range(1 << 30))
        strategy = operation_sequences(apis)

        def run(case: list) -> CaseResult:
            return loop.run_until_complete(engine.run_case(case, _case_id(run_id, segment, next(counter))))

        first_cases: dict[str, list] = {}  # signature -> the first case that showed it

        @hypothesis_seed(seed)  # the same seed draws the same cases
        @settings(
            max_examples=examples,
            database=None,
            deadline=None,
            phases=[Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        @given(strategy)
        def generate(case):
            if stop_drawing is not None and time.monotonic() > stop_drawing:
                # Out of time. Returning would still pay for drawing every remaining example (a few
                # ms each, minutes over a large --examples); raising ends the generate phase now.
                raise _OutOfTime
            outcome = run(case)
            _count(result, outcome)
            for sig in outcome.signatures:
                first_cases.setdefault(sig, case)
            if progress is not None:
                progress(result.cases, examples, len(result.found))

        try:
            generate()
        except _OutOfTime:
            pass
        result.operations, result.pairs_compared = engine.operations_run, engine.pairs_compared
        replay = examples if seconds is None else result.cases  # only the cases that were run
        # Shrinking replays variants of the diverging cases hundreds of times: a search, not a sample.
        # Traced, it would swamp the run's counts with divergences (and show signatures that only a
        # variant produced, with no case stored); summary.json counts it as shrink_operations.
        engine.traces = None
        raised_with = (
            _shrink_all(strategy, run, replay, seed, stop_shrinking) if shrink and result.found else {}
        )
        for sig, found in result.found.items():  # every difference gets a case file, shrunk when asked
            found.shrunk = sig in raised_with
            found.case_id = f"case-{found.number:03d}"
            path = out / "cases" / f"{found.case_id}.json"
            case = raised_with.get(sig, first_cases[sig])
            save_case(path, case, signature=sig, targets=(a.name, b.name), shrunk=found.shrunk)
        result.shrink_operations = engine.pairs_compared - result.pairs_compared
        result.crashes = list(engine.crashes)
        loop.run_until_complete(engine.close())
    loop.close()
    result.seconds = time.monotonic() - started
    (out / "summary.json").write_text(json.dumps(result.summary(), indent=2) + "\n")
    return result


def _shrink_all(strategy, run, examples: int, seed: int, stop_at: float | None = None) -> dict[str, list]:
    """The same cases again (same seed), now failing on every difference, one exception type per
    signature, so that Hypothesis shrinks each kind of difference on its own; the last case to raise
    a signature is its smallest (Hypothesis replays each minimal example last)."""
    first_seen: dict[str, int] = {}  # fixed order of discovery decides which signature a case raises
    raised_with: dict[str, list] = {}

    @hypothesis_seed(seed)
    @settings(
        max_examples=examples,
        database=None,
        deadline=None,
        report_multiple_bugs=True,
        phases=[Phase.generate, Phase.shrink],
        suppress_health_check=list(HealthCheck),
        print_blob=False,
        verbosity=Verbosity.quiet,
    )
    @given(strategy)
    def shrink(case):
        if stop_at is not None and time.monotonic() > stop_at:
            return  # out of time: every later variant passes, so shrinking winds down at once
        outcome = run(case)
        for sig in sorted(outcome.signatures):
            first_seen.setdefault(sig, len(first_seen))
        if outcome.signatures:
            raised = min(outcome.signatures, key=first_seen.__getitem__)
            raised_with[raised] = case
            raise _divergence_type(raised)(raised)

    try:
        shrink()
    except (DivergenceFound, BaseExceptionGroup):
        pass
    return raised_with


class _OutOfTime(Exception):
    """Raised inside the generating test once a bounded run's drawing time is spent."""


class DivergenceFound(Exception):
    """Raised inside the Hypothesis test for a case that shows a difference (one subclass per
    signature)."""


_TYPES: dict[str, type] = {}


def _divergence_type(sig: str) -> type:
    if sig not in _TYPES:
        _TYPES[sig] = type(f"Divergence{len(_TYPES)}", (DivergenceFound,), {"signature": sig})
    return _TYPES[sig]


def _count(result: CampaignResult, outcome: CaseResult) -> None:
    result.cases += 1
    result.skipped_operations += len(outcome.skipped)
    for divergence in outcome.divergences:
        d = divergence.difference
        found = result.found.get(divergence.signature)
        if found is None:
            api_key = outcome.ops[divergence.op_index].api_key
            version = int(divergence.signature.split("/")[1][1:])
            found = result.found[divergence.signature] = Found(
                divergence.signature,
                api_key,
                version,
                d.generic_path,
                d.kind,
                number=len(result.found),
                example={"a": _short(d.a), "b": _short(d.b), "case": outcome.case_id},
            )
        found.count += 1
        pair = (json.dumps(_short(d.a), default=str), json.dumps(_short(d.b), default=str))
        if pair not in found.value_pairs and len(found.value_pairs) < _MAX_VALUE_PAIRS:
            found.value_pairs.append(pair)


_MAX_VALUE_PAIRS = 50


def _short(value):
    text = json.dumps(value, default=str)
    return value if len(text) <= 300 else text[:300] + "..."


def save_case(path: Path, case: list, *, signature: str | None = None, targets=(), shrunk=True) -> None:
    data = {
        "signature": signature,
        "shrunk": shrunk,
        "targets": list(targets),
        "operations": [{"op": type(op).__name__, **dataclasses.asdict(op)} for op in case],
    }
    path.write_text(json.dumps(data, indent=2, default=_bytes_json) + "\n")


def _bytes_json(value):
    if isinstance(value, bytes):
        return {"hex": value.hex()}
    raise TypeError(type(value).__name__)


def load_case(path: Path) -> tuple[list, dict]:
    data = json.loads(Path(path).read_text())
    case = []
    for entry in data["operations"]:
        entry = dict(entry)
        cls = OPERATIONS.get(entry.pop("op"))
        if cls is None:
            raise ValueError(f"{path}: unknown operation in case file")
        for key, value in entry.items():
            if isinstance(value, list):
                entry[key] = tuple(bytes.fromhex(v["hex"]) if isinstance(v, dict) else v for v in value)
        case.append(cls(**entry))
    return case, data
