"""The raw-bytes differential: the same malformed and borderline frames (``frames``) go to two
targets, and their fates (``frame_fates``) are compared.

Every frame goes over a fresh connection to each target, so one frame's damage cannot leak into the
next; both targets get it at once. At most one answer is read, within ``reply_timeout``. A target
found dead afterwards gets the fate ``crashed``: its last words are kept and it is restarted (with the
topic the record-batch frames write to) before the next frame. Each exchange is a trace row, and
``frames-summary.json`` rolls the run up."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kconform.codecs import FrameTooLarge
from kconform.traces import TraceRow, TraceWriter

from ..client.network import parse_bootstrap
from ..client.raw import Fate, RawClient
from ..targets.base import Target
from .frame_fates import CLOSED, CRASHED, TIMEOUT, UNDECODABLE, FateDifference, answer_fate, compare_fates
from .frames import MUTATIONS, Frame, FrameSpace, generate_frames

__all__ = ["DifferenceGroup", "FrameRunResult", "run_frame_differential"]

SUMMARY_FILE = "frames-summary.json"
_REAPING_GRACE_S = 0.005  # a process that aborts closes its sockets a moment before it can be reaped


@dataclass(slots=True)
class DifferenceGroup:
    """Frames of one mutation and API that met the same two (different) fates."""

    signature: str  # frames/<mutation>/<api name>/<fate a>|<fate b>
    mutation: str
    api_name: str
    fates: tuple[str, str]
    count: int
    example: Frame


@dataclass(slots=True)
class FrameRunResult:
    targets: tuple[str, str]
    seed: int
    frames_sent: int
    by_mutation: dict[str, dict] = field(default_factory=dict)
    differences: dict[str, DifferenceGroup] = field(default_factory=dict)
    crashes: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    summary_path: Path | None = None

    @property
    def same(self) -> bool:
        return not self.differences


@dataclass(slots=True)
class _Seen:
    fate: str
    latency_us: int = 0
    response_bytes: int = 0
    error_codes: list[int] = field(default_factory=list)


def run_frame_differential(
    a: Target,
    b: Target,
    out: str | Path,
    *,
    frames: int,
    seed: int,
    reply_timeout: float = 1.0,
    progress: Callable[[int, int, int], None] | None = None,
) -> FrameRunResult:
    """Send ``frames`` generated frames (``seed`` picks them) to started targets ``a`` and ``b``;
    write traces and ``frames-summary.json`` under ``out``. ``progress(done, total, differing)`` is
    called after every frame."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    space = FrameSpace.of(a.api_versions(), b.api_versions())
    generated = generate_frames(frames, seed, space)
    result = FrameRunResult((a.name, b.name), seed, 0)
    result.by_mutation = {m: _mutation_row() for m in MUTATIONS}
    for target in (a, b):
        _make_topic(target, space.topic, result)
    with TraceWriter(out, f"frames-{seed}-{uuid.uuid4().hex[:8]}") as traces:
        asyncio.run(_send_all(a, b, generated, result, traces, reply_timeout, progress, space.topic))
    result.summary_path = out / SUMMARY_FILE
    result.summary_path.write_text(json.dumps(_summary(result, generated, reply_timeout), indent=2) + "\n")
    return result


async def _send_all(a, b, generated, result, traces, reply_timeout, progress, topic) -> None:
    previous: Frame | None = None
    for frame in generated:
        for target in (a, b):
            if not target.alive():  # died after its last fate was taken: that frame is the suspect
                await _bring_back(target, previous, result, topic, noticed="before the next frame")
        seen = await asyncio.gather(*(_exchange(t, frame, reply_timeout) for t in (a, b)))
        died = await asyncio.gather(*(_died(t, one) for t, one in zip((a, b), seen, strict=True)))
        for target, one, dead in zip((a, b), seen, died, strict=True):
            if dead:
                one.fate = CRASHED
                await _bring_back(target, frame, result, topic)
        difference = compare_fates(frame.mutation, seen[0].fate, seen[1].fate)
        _record(result, frame, seen, difference)
        _trace(traces, (a, b), frame, seen, difference)
        result.frames_sent += 1
        previous = frame
        if progress is not None:
            progress(result.frames_sent, len(generated), len(result.differences))


async def _bring_back(target: Target, frame: Frame | None, result, topic: str, noticed: str = "") -> None:
    """Keep a dead target's last words with the frame it died on, and restart it."""
    crash = {
        "target": target.name,
        "frame": frame.index if frame is not None else None,
        "description": frame.description if frame is not None else "before any frame",
        "hex": frame.data.hex() if frame is not None else "",
        "report": target.crash_report(),
    }
    if noticed:  # the frame's fate was taken while the target still looked alive
        crash["noticed"] = noticed
    result.crashes.append(crash)
    await asyncio.to_thread(target.restart)
    await asyncio.to_thread(_make_topic, target, topic, result)


async def _exchange(target: Target, frame: Frame, reply_timeout: float) -> _Seen:
    try:
        return await asyncio.wait_for(_exchange_once(target, frame, reply_timeout), 2 * reply_timeout + 1)
    except TimeoutError:  # a connect or write that hangs: the target stalls, as far as a client can tell
        return _Seen(TIMEOUT)


async def _exchange_once(target: Target, frame: Frame, reply_timeout: float) -> _Seen:
    host, port = parse_bootstrap(target.bootstrap)[0]
    started = time.perf_counter()
    try:
        client = await RawClient.connect(host, port, client_id=None, timeout=reply_timeout)
    except (OSError, TimeoutError):
        return _Seen(CLOSED)
    try:
        await client.send_bytes(frame.data)
        reply = await client.wait_closed(reply_timeout)
    except FrameTooLarge:  # an answer whose own size prefix is nonsense
        return _Seen(UNDECODABLE, int((time.perf_counter() - started) * 1e6))
    finally:
        await client.close()
    latency = int((time.perf_counter() - started) * 1e6)
    if reply.fate is not Fate.ANSWERED:
        return _Seen(str(reply.fate), latency)
    fate = answer_fate(reply.frame, frame.answer_as)
    code = fate.partition(":")[2]
    codes = [int(code)] if code.lstrip("-").isdigit() else []
    return _Seen(fate, latency, len(reply.frame) + 4, codes)


async def _died(target: Target, seen: _Seen) -> bool:
    if not target.alive():
        return True
    if seen.fate == CLOSED:
        await asyncio.sleep(_REAPING_GRACE_S)
        return not target.alive()
    return False


def _make_topic(target: Target, topic: str, result: FrameRunResult) -> None:
    """The topic record-batch frames write to; without it they meet an unknown topic on that side."""
    try:
        target.create_topic(topic, 1)
    except Exception as exc:  # noqa: BLE001 - a refusal is a note, the frames still run
        result.notes.append(f"{target.name}: topic {topic} not created ({exc})")


def _mutation_row() -> dict:
    return {"sent": 0, "same": 0, "different": 0, "fates": {"a": Counter(), "b": Counter()}}


def _signature(frame: Frame, fates: tuple[str, str]) -> str:
    return f"frames/{frame.mutation}/{frame.api_name}/{fates[0]}|{fates[1]}"


def _record(result: FrameRunResult, frame: Frame, seen, difference: FateDifference | None) -> None:
    row = result.by_mutation[frame.mutation]
    row["sent"] += 1
    row["fates"]["a"][seen[0].fate] += 1
    row["fates"]["b"][seen[1].fate] += 1
    if difference is None:
        row["same"] += 1
        return
    row["different"] += 1
    fates = (difference.a, difference.b)
    sig = _signature(frame, fates)
    group = result.differences.get(sig)
    if group is None:
        result.differences[sig] = DifferenceGroup(sig, frame.mutation, frame.api_name, fates, 1, frame)
    else:
        group.count += 1


def _trace(traces: TraceWriter, targets, frame: Frame, seen, difference) -> None:
    sig = _signature(frame, (seen[0].fate, seen[1].fate)) if difference is not None else None
    for target, one in zip(targets, seen, strict=True):
        traces.append(
            TraceRow(
                target=target.name,
                api_key=frame.api_key,
                api_version=frame.api_version,
                outcome="diverge" if difference is not None else "pass",
                case_id=f"frame-{frame.index:05d}",
                api_name=frame.api_name,
                request_bytes=len(frame.data),
                response_bytes=one.response_bytes,
                latency_us=one.latency_us,
                error_codes=one.error_codes,
                signature=sig,
                signatures=[sig] if sig else [],
            )
        )


def _summary(result: FrameRunResult, generated: list[Frame], reply_timeout: float) -> dict:
    built = {f.mutation for f in generated}
    return {
        "targets": list(result.targets),
        "seed": result.seed,
        "frames_sent": result.frames_sent,
        "reply_timeout_s": reply_timeout,
        "mutations": {
            m: {**row, "fates": {side: dict(c) for side, c in row["fates"].items()}}
            for m, row in result.by_mutation.items()
            if m in built
        },
        "mutations_not_sent": [m for m in MUTATIONS if m not in built],
        "differences": [
            {
                "signature": g.signature,
                "mutation": g.mutation,
                "api": g.api_name,
                "count": g.count,
                "fates": {"a": g.fates[0], "b": g.fates[1]},
                "example": {
                    "index": g.example.index,
                    "description": g.example.description,
                    "hex": g.example.data.hex(),
                },
            }
            for g in sorted(result.differences.values(), key=lambda g: (-g.count, g.signature))
        ],
        "crashes": result.crashes,
        "notes": result.notes,
    }
