"""Running the catalogue against one target: every rule at every version both the rule and the target
cover (or only the two ends of that range), each test in a session of its own, a few side by side.

An outcome is ``pass``, ``fail`` (the target did not do what Kafka does: the field and both values),
``not-applicable`` (the target does not serve the API at the rule's versions, or the rule needs what
the target cannot give) or ``error`` (a set-up step failed, so the rule was not checked)."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass

from .catalogue import Rule, RuleFailed
from .session import RuleSession, SetupFailed

__all__ = ["OUTCOMES", "Outcome", "run_rules"]

OUTCOMES = ("pass", "fail", "not-applicable", "error")
_CHECK_TIMEOUT_S = 30.0
_SIDE_BY_SIDE = 8


@dataclass(frozen=True)
class Outcome:
    rule: str
    api: str
    api_key: int
    family: str
    version: int  # -1 when the rule did not run at any version
    target: str
    outcome: str
    field: str = ""
    expected: str = ""
    got: str = ""
    detail: str = ""
    seconds: float = 0.0
    started_at_us: int = 0  # wall clock, microseconds since the epoch

    def to_json(self) -> dict:
        return asdict(self)


def versions_to_run(rule: Rule, served: tuple[int, int] | None, pick: str) -> list[int]:
    versions = rule.versions_on(served)
    if rule.once and versions:
        return versions[-1:]
    if pick == "ends" and len(versions) > 2:
        return [versions[0], versions[-1]]
    return versions


def _skip(rule: Rule, target: str, why: str) -> Outcome:
    return Outcome(
        rule.id, rule.api_name, rule.api, rule.family, -1, target, "not-applicable", detail=why,
        started_at_us=time.time_ns() // 1000,
    )  # fmt: skip


async def run_rules(
    rules: Iterable[Rule],
    *,
    target: str,
    bootstrap: str,
    served: dict[int, tuple[int, int]],
    can: frozenset[str] = frozenset(),
    pick: str = "all",
    on_outcome: Callable[[Outcome], None] | None = None,
    side_by_side: int = _SIDE_BY_SIDE,
    handle=None,
    deadline: float | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> list[Outcome]:
    """Every test's outcome, in catalogue order. ``served`` is what the target advertises; ``can`` what
    it gives beyond the protocol (``needs`` a rule may have). ``handle``, a started target, lets a run
    go on past a crash: the target is restarted, the tests the crash met are run again one at a time,
    and the one that crashes it alone fails with the crash as what it got.

    With a ``deadline`` (on ``clock``), tests start in turn across rule families, so that a budget too
    short for the catalogue samples every family, and a test not started by then is ``not-run``."""
    rules = list(rules)
    gate = asyncio.Semaphore(side_by_side)
    jobs: list[asyncio.Future] = []
    done: list[Outcome] = []
    crashes = _Crashes(handle, bootstrap)

    def note(outcome: Outcome) -> Outcome:
        if on_outcome is not None:
            on_outcome(outcome)
        return outcome

    async def one(rule: Rule, version: int) -> Outcome | None:
        async with gate:
            if deadline is not None and clock() >= deadline:
                return note(_not_run(rule, version, target))
            generation = crashes.generation
            outcome = await _run_one(rule, version, target, crashes.bootstrap, served, handle)
            settle = outcome.outcome == "error" or outcome.field == "fate"  # what a dying target looks like
            if outcome.outcome in ("fail", "error") and await crashes.met(generation, settle=settle):
                crashes.again.append((rule, version))
                return None
            return note(outcome)

    for rule in _across_families(rules) if deadline is not None else rules:
        missing = rule.needs - can
        if missing:
            done.append(note(_skip(rule, target, f"needs {', '.join(sorted(missing))}")))
            continue
        versions = versions_to_run(rule, served.get(rule.api), pick)
        if not versions:
            served_range = served.get(rule.api)
            where = f"v{served_range[0]}-{served_range[1]}" if served_range else "no version"
            why = f"{rule.api_name} v{rule.versions[0]}-{rule.versions[1]} not served (the target: {where})"
            done.append(note(_skip(rule, target, why)))
            continue
        jobs += [asyncio.ensure_future(one(rule, v)) for v in versions]
    done += [o for o in await asyncio.gather(*jobs) if o is not None]
    for rule, version in crashes.again:  # alone, on a fresh target: a crash is this test's own
        if deadline is not None and clock() >= deadline:
            done.append(note(_not_run(rule, version, target)))
            continue
        await crashes.restart()
        outcome = await _run_one(rule, version, target, crashes.bootstrap, served, handle)
        for _ in range(20 if outcome.outcome in ("fail", "error") else 0):
            if not crashes.alive():  # a process that closed its sockets as it died: gone in a moment
                break
            await asyncio.sleep(0.1)
        if not crashes.alive():
            report = crashes.report()
            await crashes.restart()
            outcome = dataclasses.replace(
                outcome,
                outcome="fail",
                field="fate",
                expected="answered",
                got="the target crashed",
                detail=report[-200:],
            )
        done.append(note(outcome))
    order = {rule.id: i for i, rule in enumerate(rules)}
    return sorted(done, key=lambda o: (order[o.rule], o.version))


def _not_run(rule: Rule, version: int, target: str) -> Outcome:
    return Outcome(
        rule.id, rule.api_name, rule.api, rule.family, version, target, "not-run",
        detail="the run's time budget was spent before this test started",
        started_at_us=time.time_ns() // 1000,
    )  # fmt: skip


def _across_families(rules: list[Rule]) -> list[Rule]:
    """The rules in turns, one of each family per turn, families in catalogue order."""
    families: dict[str, list[Rule]] = {}
    for rule in rules:
        families.setdefault(rule.family, []).append(rule)
    turns = itertools.zip_longest(*families.values())
    return [rule for turn in turns for rule in turn if rule is not None]


class _Crashes:
    """The target's restarts during a run: a test that failed while the target was down, or across a
    restart, is run again later."""

    def __init__(self, handle, bootstrap: str) -> None:
        self.handle = handle
        self.bootstrap = bootstrap
        self.generation = 0
        self.again: list[tuple[Rule, int]] = []
        self._lock = asyncio.Lock()

    def alive(self) -> bool:
        return self.handle is None or self.handle.alive()

    async def met(self, generation: int, *, settle: bool = False) -> bool:
        """Whether a crash met the test begun in ``generation`` (restarting the target if it is down).
        With ``settle``, a target still alive is given a moment to be seen dead: a process that closed
        its sockets as it died is reaped a little later."""
        if self.handle is None:
            return False
        for _ in range(10 if settle else 0):
            if generation != self.generation or not self.alive():
                break
            await asyncio.sleep(0.1)
        async with self._lock:
            if generation == self.generation and self.alive():
                return False
            if self.alive():  # restarted since the test began
                return True
            await self.restart()
            return True

    def report(self) -> str:
        report = self.handle.crash_report() if hasattr(self.handle, "crash_report") else ""
        return report or "the target process ended"

    async def restart(self) -> None:
        await asyncio.to_thread(self.handle.restart)
        self.generation += 1
        self.bootstrap = self.handle.bootstrap


async def _run_one(rule: Rule, version: int, target: str, bootstrap: str, served, handle=None) -> Outcome:
    started, wall_us = time.monotonic(), time.time_ns() // 1000
    session = RuleSession(
        bootstrap,
        rule.id.replace(".", "-"),
        served,
        # a target's own way to make a topic (the mock's), used where it serves no CreateTopics
        topic_aside=getattr(handle, "create_topic", None),
        setup_caps=getattr(handle, "conform_setup_caps", None),
    )
    fields: dict = {}
    try:
        await asyncio.wait_for(rule.check(session, version), _CHECK_TIMEOUT_S)
        outcome = "pass"
    except RuleFailed as failed:
        outcome = "fail"
        fields = {
            "field": failed.field,
            "expected": _text(failed.expected),
            "got": _text(failed.got),
            "detail": failed.note,
        }
    except TimeoutError:
        outcome = "fail"
        fields = {"field": "fate", "expected": "answered", "got": f"nothing within {_CHECK_TIMEOUT_S:.0f} s"}
    except SetupFailed as exc:
        outcome, fields = "error", {"detail": str(exc)}
    except Exception as exc:  # noqa: BLE001 - a check that broke is reported, and the run goes on
        outcome, fields = "error", {"detail": f"{type(exc).__name__}: {exc}"}
    finally:
        try:
            await asyncio.wait_for(session.close(), 5)
        except Exception:  # noqa: BLE001, S110 - closing a dead connection changes no outcome
            pass
    return Outcome(
        rule.id,
        rule.api_name,
        rule.api,
        rule.family,
        version,
        target,
        outcome,
        seconds=round(time.monotonic() - started, 3),
        started_at_us=wall_us,
        **fields,
    )


def _text(value) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= 200 else text[:200] + "..."


def reference_served(kafka_version: str | None = None) -> dict[int, tuple[int, int]]:
    """What a single reference node advertises (answering as ``kafka_version``, default the newest
    release the codecs cover), known without starting one."""
    from kconform.codecs.releases import kafka_release, newest_covered_release
    from kconform.reference_broker.dispatch import registered_handlers, release_versions

    release = kafka_release(kafka_version) if kafka_version else newest_covered_release()
    return release_versions(release, registered_handlers())[0]


def runs_on(rule: Rule, served: dict[int, tuple[int, int]], can: frozenset[str] = frozenset()) -> bool:
    """Whether a rule has at least one test on a target serving ``served``."""
    return not rule.needs - can and bool(rule.versions_on(served.get(rule.api)))
