"""Replaying an earlier report's stored cases on the targets as they are now.

A difference the earlier report showed and this run's drawing did not meet is not thereby fixed: this
run may simply not have drawn a case that shows it. Its stored case, replayed on the current targets,
tells: a replay that no longer shows the signature is evidence of a fix; one that still shows it is not.
A campaign writes what its replays found to ``replays.json`` beside its differential run, and the report
calls a difference fixed only on that evidence."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from .case_files import load_case

__all__ = ["REPLAYS_FILE", "Replay", "cases_to_replay", "replay_cases", "write_replays"]

REPLAYS_FILE = "replays.json"


@dataclass(frozen=True, slots=True)
class Replay:
    """One earlier signature and what replaying its stored case on the current targets showed."""

    signature: str
    case: str  # the case file replayed
    targets: tuple[str, str]
    shown: bool | None  # None: the case could not be replayed (``error`` says why)
    signatures: tuple[str, ...] = ()  # every signature the replay showed
    error: str = ""


def cases_to_replay(
    previous_report: Path, pair: tuple[str, str], seen: Iterable[str]
) -> dict[Path, list[str]]:
    """The earlier report's stored cases for ``pair`` whose signatures this run did not see: case file ->
    those signatures. Paths in a report are relative to it (older reports wrote them absolute)."""
    try:
        summary = json.loads((previous_report / "summary.json").read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return {}
    seen = set(seen)
    cases: dict[Path, list[str]] = {}
    for d in summary.get("divergences") or []:
        if (
            not isinstance(d, dict)
            or d.get("signature") in seen
            or not isinstance(d.get("example_case"), str)
            or d.get("reproduced") is False  # its case did not show it again even then: proves nothing
        ):
            continue
        case = previous_report / d["example_case"]  # an absolute path stays itself
        sides = tuple(d.get("sides") or ())
        if not sides:  # an older report: the case file names its targets
            try:
                sides = tuple(json.loads(case.read_text()).get("targets") or ())
            except (OSError, UnicodeDecodeError, json.JSONDecodeError, AttributeError):
                continue
        if sides == pair and case.is_file():
            cases.setdefault(case, []).append(str(d["signature"]))
    return cases


def replay_cases(
    engine_for: Callable[[], object],
    cases: dict[Path, list[str]],
    pair: tuple[str, str],
    *,
    deadline: float,
    clock: Callable[[], float] = time.monotonic,
) -> list[Replay]:
    """Replay each case (in a namespace of its own) until ``deadline``; a case not reached is not in
    the list, so the report says it was not replayed."""
    replays: list[Replay] = []
    if not cases:
        return replays
    engine = engine_for()  # it reads each target's versions with an event loop of its own

    async def run() -> None:
        try:
            for case, signatures in sorted(cases.items()):
                if clock() >= deadline:
                    return
                try:
                    operations, data = load_case(case)
                except ValueError as exc:
                    replays.extend(Replay(s, str(case), pair, None, error=str(exc)) for s in signatures)
                    continue
                result = await engine.run_case(
                    operations, "replay", namespace=f"replay-{uuid.uuid4().hex[:10]}"
                )
                shown = tuple(sorted(result.signatures))
                # A case is stored for its cause, at the version its shrunk steps pick: it shows the
                # cause by one of the cause's signatures (another version's signature of the same cause
                # is not one it could show), so the cause showing again is what "still there" means.
                cause = set(data.get("signatures") or ()) | {data.get("signature")} | set(signatures)
                still = bool(cause & set(shown))
                replays.extend(Replay(s, str(case), pair, still, shown) for s in signatures)
        finally:
            await engine.close()

    asyncio.run(run())
    return replays


def write_replays(out: Path, previous_report: Path, replays: list[Replay]) -> None:
    document = {
        "schema": 1,
        "previous_report": str(previous_report),
        "replays": [
            asdict(r) | {"targets": list(r.targets), "signatures": list(r.signatures)} for r in replays
        ],
    }
    (out / REPLAYS_FILE).write_text(json.dumps(document, indent=2) + "\n")
