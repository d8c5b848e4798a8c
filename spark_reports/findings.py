"""What the differential runs' own summaries say beyond their traces: each difference's values and the
verdict on who deviates from Apache Kafka, the stored case and its readable steps, the targets'
crashes and every (API, version) each target advertised. The engines count exchanges; this module
reads the few JSON files once, on the driver, and both engines are given the same facts.

A verdict is one of four kinds:
- ``deviates``: a rule of Kafka's behaviour names the side(s) that deviate;
- ``unknown``: no rule says what Kafka answers, or rules disagree: both sides are suspects;
- ``allowed``: Kafka allows both answers;
- ``consequence``: the difference follows from an earlier step of its case, whose own cause carries
  the verdict."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from .runs import RunDirectory

__all__ = [
    "CONSEQUENCE_RULES",
    "VERDICT_KINDS",
    "Advertised",
    "CLEAR",
    "DEVIATES",
    "SUSPECT",
    "Blame",
    "Crash",
    "SignatureFacts",
    "advertised_ranges",
    "blame_rows",
    "crashes",
    "signature_facts",
    "verdict_kind",
]

VERDICT_KINDS = ("deviates", "unknown", "allowed", "consequence")
# harness/diff/verdicts.py CONSEQUENCES: rules that pass the verdict on to an earlier step's cause
CONSEQUENCE_RULES = frozenset(
    {"after-a-differing-write", "after-a-crash", "after-another-members-differing-step"}
)
MAX_VALUE_PAIRS = 5  # on a card; summary.json of the run keeps up to 50


def verdict_kind(verdict: dict | None) -> str:
    """One of ``VERDICT_KINDS`` for a cause's verdict as summary.json writes it."""
    if not isinstance(verdict, dict) or verdict.get("deviates") is None:
        return "unknown"
    if verdict.get("rule") in CONSEQUENCE_RULES:
        return "consequence"
    return "deviates" if verdict["deviates"] else "allowed"


@dataclass(frozen=True, slots=True)
class SignatureFacts:
    """One field signature as the first differential run (in path order) that saw it recorded it."""

    sides: tuple[str, ...]  # the run's targets, a then b (none when its summary does not name them)
    values: tuple[tuple[str, str], ...]  # (a's value, b's value) as JSON texts, first seen first
    verdict: str  # one of VERDICT_KINDS
    deviates: tuple[str, ...]  # targets that deviate from Kafka (both when the verdict is unknown)
    verdict_text: str
    evidence: str  # where in Apache Kafka's source the rule is decided; "" when none
    cause: str
    case: Path | None  # the stored case that replays it
    steps: tuple[str, ...]  # the case's operations, readable (API name and version, fields set)
    reproduced: bool  # the stored case showed its cause again when replayed by the run that stored it


# What a difference says of one target: a verdict names it (DEVIATES), no verdict tells (SUSPECT), or
# the verdict clears it (CLEAR: the other side deviates, Kafka allows both, or it is a consequence).
# A signature no run recorded a verdict for is a suspect: the engines take a missing row as SUSPECT.
CLEAR, SUSPECT, DEVIATES = 0, 1, 2


@dataclass(frozen=True, slots=True)
class Blame:
    """What one signature of one run says of one target: ``CLEAR``, ``SUSPECT`` or ``DEVIATES``."""

    run_id: str
    signature: str
    target: str
    status: int


@dataclass(frozen=True, slots=True)
class Crash:
    """A target process that ended while answering: one row per target, API version and last words."""

    target: str
    api_key: int
    api_name: str
    api_version: int
    message: str
    times: int
    runs: tuple[str, ...]
    case: Path | None  # a stored case that crashes it again, when the run kept one


@dataclass(frozen=True, slots=True)
class Advertised:
    """One (API, version) a target advertised in a differential run."""

    target: str
    api_key: int
    api_name: str
    api_version: int


def _diff_summaries(runs: Iterable[RunDirectory]) -> list[tuple[RunDirectory, dict]]:
    return [(run, run.summary) for run in sorted(runs, key=lambda r: r.path) if run.summary is not None]


def _list(value) -> list:
    return value if isinstance(value, list) else []


def _causes(summary: dict) -> dict[str, dict]:
    return {c["cause"]: c for c in _list(summary.get("causes")) if isinstance(c, dict) and "cause" in c}


def _sides(summary: dict) -> tuple[str, ...]:
    """The run's two targets, a then b; none when the summary does not name two."""
    targets = tuple(str(t) for t in _list(summary.get("targets")))
    return targets if len(targets) == 2 else ()


def _int(value, default: int = -1) -> int:
    return value if isinstance(value, int) else default


def _deviating(verdict: dict | None, sides: tuple[str, ...]) -> tuple[str, ...]:
    kind = verdict_kind(verdict)
    if kind == "unknown":
        return sides
    if kind == "deviates":
        return tuple(str(t) for t in verdict["deviates"])
    return ()


def _case_steps(case: Path | None) -> tuple[str, ...]:
    if case is None:
        return ()
    try:
        data = json.loads(case.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return ()
    steps = data.get("steps") if isinstance(data, dict) else None
    if isinstance(steps, list):
        return tuple(str(s) for s in steps)
    # a case written before steps were stored: its operations by name, the version pick as stored
    return tuple(
        f"{op.get('op')} ({', '.join(f'{k}={v!r}' for k, v in op.items() if k != 'op')})"
        for op in _list(data.get("operations"))
        if isinstance(op, dict)
    )


def signature_facts(runs: Iterable[RunDirectory]) -> dict[str, SignatureFacts]:
    """Signature -> its facts, from the first run in path order that recorded the signature."""
    facts: dict[str, SignatureFacts] = {}
    for run, summary in _diff_summaries(runs):
        causes, sides = _causes(summary), _sides(summary)
        for difference in _list(summary.get("differences")):
            signature = difference.get("signature") if isinstance(difference, dict) else None
            if not isinstance(signature, str) or signature in facts:
                continue
            cause = causes.get(str(difference.get("cause")), {})
            verdict = cause.get("verdict")
            example = difference.get("example")
            pairs = _list(difference.get("value_pairs")) or (
                [[example.get("a"), example.get("b")]] if isinstance(example, dict) else []
            )
            case = run.cases.get(signature)
            facts[signature] = SignatureFacts(
                sides=sides,
                values=tuple(
                    (json.dumps(p[0], default=str), json.dumps(p[1], default=str))
                    for p in pairs[:MAX_VALUE_PAIRS]
                    if isinstance(p, list) and len(p) == 2
                ),
                verdict=verdict_kind(verdict),
                deviates=_deviating(verdict, sides),
                verdict_text=str((verdict or {}).get("text") or "unknown: the run recorded no verdict"),
                evidence=str((verdict or {}).get("evidence") or ""),
                cause=str(difference.get("cause") or ""),
                case=case,
                steps=_case_steps(case),
                reproduced=cause.get("reproduced") is True,
            )
    return facts


def blame_rows(runs: Iterable[RunDirectory]) -> list[Blame]:
    """For every run, signature and target its causes name: the worst any of those causes says of
    the target (a signature may belong to several causes)."""
    rows: dict[tuple[str, str, str], int] = {}
    for run, summary in _diff_summaries(runs):
        run_id = str(summary.get("run_id") or run.run_id or run.path.name)
        sides = _sides(summary)
        for cause in _causes(summary).values():
            verdict = cause.get("verdict")
            kind = verdict_kind(verdict)
            named = _deviating(verdict, sides)
            for signature in (s for s in _list(cause.get("signatures")) if isinstance(s, str)):
                for target in {*sides, *named}:
                    status = CLEAR
                    if kind == "unknown":
                        status = SUSPECT
                    elif target in named:
                        status = DEVIATES
                    key = (run_id, signature, target)
                    rows[key] = max(rows.get(key, CLEAR), status)
    return [Blame(r, s, t, status) for (r, s, t), status in sorted(rows.items())]


def crashes(runs: Iterable[RunDirectory]) -> list[Crash]:
    """The crashes the differential runs recorded, one row per target, API version and message, each
    with a stored case whose verdict is that crash, where one was kept."""
    tally: dict[tuple[str, int, str, int, str], tuple[int, list[str], Path | None]] = {}
    for run, summary in _diff_summaries(runs):
        run_id = str(summary.get("run_id") or run.run_id or run.path.name)
        names = {c.get("api_key"): c.get("api_name") for c in _causes(summary).values()}
        crash_cases = {
            (t, c.get("api_key"), v): run.path / "cases" / f"{c['case_id']}.json"
            for c in _causes(summary).values()
            if (c.get("verdict") or {}).get("rule") == "crashed" and isinstance(c.get("case_id"), str)
            for t in _list((c.get("verdict") or {}).get("deviates"))
            for v in _list(c.get("versions"))
        }
        for crash in _list(summary.get("crashes")):
            if not isinstance(crash, dict):
                continue
            key, version = _int(crash.get("api_key")), _int(crash.get("api_version"))
            target, message = str(crash.get("target", "?")), str(crash.get("message", ""))
            name = str(names.get(key) or f"api-{key}")
            row = (target, key, name, version, message)
            times, run_ids, case = tally.get(row, (0, [], None))
            found = crash_cases.get((target, key, version))
            if case is None and found is not None and found.is_file():
                case = found
            tally[row] = (times + 1, run_ids if run_id in run_ids else [*run_ids, run_id], case)
    return [
        Crash(t, k, name, v, message, times, tuple(sorted(run_ids)), case)
        for (t, k, name, v, message), (times, run_ids, case) in sorted(tally.items())
    ]


def advertised_ranges(runs: Iterable[RunDirectory]) -> list[Advertised]:
    """Every (API, version) a target of a differential run advertised, as the run recorded it (a run
    written before it recorded them gives none)."""
    found: set[tuple[str, int, str, int]] = set()
    for _, summary in _diff_summaries(runs):
        coverage = summary.get("coverage")
        advertised = coverage.get("advertised") if isinstance(coverage, dict) else None
        if not isinstance(advertised, dict):
            continue
        for target, ranges in advertised.items():
            for entry in _list(ranges):
                if (
                    isinstance(entry, list)
                    and len(entry) == 4
                    and all(isinstance(n, int) for n in entry[::2])
                ):
                    key, name, low, high = entry
                    if isinstance(high, int):
                        found.update((str(target), key, str(name), v) for v in range(low, high + 1))
    return [Advertised(*row) for row in sorted(found)]


def replays(runs: Iterable[RunDirectory]) -> list[tuple[str, str, tuple[str, ...], bool | None, str]]:
    """(run id, signature, targets, shown, case) for every earlier case a campaign's diff run replayed."""
    rows = []
    for run in sorted(runs, key=lambda r: r.path):
        if run.replays is None:
            continue
        run_id = str(run.run_id or run.path.name)
        for r in _list(run.replays.get("replays")):
            if isinstance(r, dict) and isinstance(r.get("signature"), str):
                shown = r.get("shown")
                targets = tuple(str(t) for t in _list(r.get("targets")))
                rows.append(
                    (
                        run_id,
                        r["signature"],
                        targets,
                        shown if isinstance(shown, bool) else None,
                        str(r.get("case", "")),
                    )
                )
    return rows


def diff_runs(
    runs: Iterable[RunDirectory],
) -> list[tuple[str, tuple[str, ...], int | None, int, dict[str, int]]]:
    """(run id, targets, seed, cases drawn, signature -> first drawn case showing it) per diff run."""
    rows = []
    for run, summary in _diff_summaries(runs):
        run_id = str(summary.get("run_id") or run.run_id or run.path.name)
        seed = summary.get("seed")
        first = {
            d["signature"]: d["first_case"]
            for d in _list(summary.get("differences"))
            if isinstance(d, dict)
            and isinstance(d.get("signature"), str)
            and isinstance(d.get("first_case"), int)
        }
        rows.append(
            (
                run_id,
                _sides(summary),
                seed if isinstance(seed, int) else None,
                _int(summary.get("cases"), 0),
                first,
            )
        )
    return rows
