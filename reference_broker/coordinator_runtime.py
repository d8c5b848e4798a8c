"""The one place where a coordinator's decisions meet the world: Kafka's ``CoordinatorRuntime`` in
miniature, shared by the group coordinator (classic and KIP-848) and the transaction coordinator.

A coordinator's rules are pure: given its state, an event and a context (clock, settings) they change
the state and return effects. The runtime reads the coordinator's log back on start (``load``, through
the coordinator's own replay) and carries the effects out, in order:

- ``Write``: append records to the coordinator log (the internal topic partition of a group or
  transactional id). If the effect names a ``then`` event, that event is decided next with the result of
  the write filled in (``written``), so a rule learns whether its records are durable before it answers,
  as Kafka completes an operation only once its records are appended.
- ``Reply``: answer a request that is waiting (a JoinGroup parked until the rebalance completes) or that
  is being decided right now. Requests are numbered; the number travels in the event as ``waiter``. A
  reply decided after writes goes out once those writes are committed (the partition's high watermark
  has passed them), as Kafka's coordinators complete an operation only then; if they are not committed
  within the commit timeout, or the partition's leadership moves, the coordinator's ``uncommitted``
  turns the answer into the error the client hears.
- ``SetTimer`` / ``CancelTimer``: a keyed timer; setting a key replaces its timer (unless the timer says
  ``if_absent`` and one is running). When it fires, its event is decided like any other.
- a coordinator's own effects (the transaction coordinator's markers), carried out by the functions it
  registers, each giving the event to decide next.

Nothing here knows what a group or a transaction is."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import logging
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

__all__ = [
    "CancelTimer",
    "CoordinatorLog",
    "CoordinatorRuntime",
    "Reply",
    "SetTimer",
    "Write",
    "Written",
]

log = logging.getLogger(__name__)

LogRecord = tuple[bytes, bytes | None]  # a coordinator record: key, value (None: a tombstone)


@dataclass(frozen=True)
class Written:
    """What became of a ``Write``: where its records went, or that it failed, with the storage's error
    code when the failure had one (each coordinator maps it to what its clients are told)."""

    failed: bool = False
    error: int | None = None
    partition: int = -1
    first_offset: int = -1


@dataclass(frozen=True)
class Write:
    """Append ``records`` to the coordinator log partition of ``key`` (a group or transactional id),
    transactionally for ``producer`` (id, epoch) when given; then decide ``then`` (an event with a
    ``written`` field) with the outcome."""

    key: str
    records: tuple[LogRecord, ...]
    producer: tuple[int, int] | None = None
    then: object | None = None


@dataclass(frozen=True)
class Reply:
    waiter: int
    answer: object


@dataclass(frozen=True)
class SetTimer:
    key: Hashable
    delay_ms: int
    event: object
    if_absent: bool = False  # keep a timer already running under the key (Kafka's scheduleIfAbsent)


@dataclass(frozen=True)
class CancelTimer:
    key: Hashable


Effect = Write | Reply | SetTimer | CancelTimer


class CoordinatorLog(Protocol):
    """What the runtime needs of the coordinator's internal topic."""

    @property
    def exists(self) -> bool: ...

    @property
    def partition_count(self) -> int: ...

    def read(self, partition: int) -> Iterable[object]:
        """Every record of one partition, in offset order (``internal_topics.StoredRecord``)."""

    def partition_for(self, key: str) -> int: ...

    def append(
        self,
        partition: int,
        records: Sequence[LogRecord],
        *,
        producer_id: int = -1,
        producer_epoch: int = -1,
        transactional: bool = False,
    ) -> int:
        """Append and return the offset of the last record; raises when the write fails."""

    def committed(self, partition: int, end_offset: int) -> bool:
        """Whether everything before ``end_offset`` is in every in-sync replica."""

    async def wait_committed(self, partition: int, end_offset: int, timeout_s: float) -> int:
        """NONE once committed; otherwise the partition's error (not leader, timed out ...)."""


class CoordinatorRuntime:
    def __init__(
        self,
        name: str,
        decide: Callable[[object], Iterable[Effect]],
        log_: CoordinatorLog,
        effects: Mapping[type, Callable[[object], object | None]] | None = None,
        *,
        uncommitted: Callable[[object, int], object] | None = None,
        commit_timeout_s: Callable[[], float] = lambda: 30.0,
    ):
        """``effects``: how to carry out effect types of this coordinator's own (each returns the event
        to decide next, or None). ``uncommitted(answer, error)``: the answer a client gets instead when
        the writes before it are not committed (``error`` is the partition's: NOT_LEADER_OR_FOLLOWER,
        REQUEST_TIMED_OUT, ...)."""
        self._name = name
        self._decide = decide
        self._log = log_
        self._effects = dict(effects or {})
        self._uncommitted = uncommitted or (lambda answer, _error: answer)
        self._commit_timeout_s = commit_timeout_s
        self._written: dict[int, int] = {}  # partition -> end offset written in the current event
        self._depth = 0  # events being decided (a write's ``then`` is decided within its event)
        self._deferred: set[asyncio.Task] = set()
        self._timers: dict[Hashable, asyncio.TimerHandle] = {}
        self._waiters: dict[int, Callable[[object], None]] = {}
        self._ids = itertools.count(1)

    # ---- loading -----------------------------------------------------------------------------------

    def load(self, replay: Callable[[int, Iterable[object]], None]) -> None:
        """Read the coordinator log back, partition by partition, through ``replay`` (the coordinator's
        own reading of its records), as Kafka loads a coordinator's partitions when it becomes their
        leader."""
        if not self._log.exists:
            return
        for partition in range(self._log.partition_count):
            replay(partition, self._log.read(partition))

    def load_partition(self, partition: int, replay: Callable[[int, Iterable[object]], None]) -> None:
        """Read one partition back (this broker just became its leader)."""
        replay(partition, self._log.read(partition))

    def cancel_timers(self, matching: Callable[[Hashable], bool]) -> None:
        """Cancel the timers whose keys match (state this coordinator no longer owns)."""
        for key in [k for k in self._timers if matching(k)]:
            self._timers.pop(key).cancel()

    def answer(self, waiter: int, value: object) -> None:
        """Answer a waiting request from outside the rules (its state is being unloaded)."""
        answer = self._waiters.pop(waiter, None)
        if answer is not None:
            answer(value)

    # ---- requests ------------------------------------------------------------------------------

    def call(self, make_event: Callable[[int], object]) -> object:
        """Decide a request whose answer comes at once (heartbeats, commits, leaves)."""
        answers: list[object] = []
        waiter = self._waiter(answers.append)
        try:
            self.submit(make_event(waiter))
        finally:
            self._waiters.pop(waiter, None)
        if not answers:
            raise RuntimeError(f"{self._name}: the rules left a request that must answer at once unanswered")
        return answers[0]

    async def request(self, make_event: Callable[[int], object]) -> object:
        """Decide a request that may wait for later events (JoinGroup, SyncGroup)."""
        future = asyncio.get_running_loop().create_future()

        def answer(value: object) -> None:
            if not future.done():  # the connection may have gone; the rules still moved on
                future.set_result(value)

        waiter = self._waiter(answer)
        try:
            self.submit(make_event(waiter))
            return await future
        finally:
            self._waiters.pop(waiter, None)

    def _waiter(self, answer: Callable[[object], None]) -> int:
        waiter = next(self._ids)
        self._waiters[waiter] = answer
        return waiter

    # ---- events and effects --------------------------------------------------------------------

    def submit(self, event: object) -> None:
        """Decide ``event`` and carry out its effects in order. A write's ``then`` is decided as soon as
        the write is done, before the next effect, so what a rule does next sees the state its records
        made; an exception out of a rule stops the effects that follow it."""
        self._depth += 1
        try:
            self.carry_out(self._decide(event))
        finally:
            self._depth -= 1
            if not self._depth:
                self._written = {}

    def carry_out(self, effects: Iterable[Effect]) -> None:
        """Carry out effects (also those decided outside an event: the timers of state just loaded)."""
        for effect in effects:
            follow_up = self._apply(effect)
            if follow_up is not None:
                self.submit(follow_up)

    def _apply(self, effect: Effect) -> object | None:
        if isinstance(effect, Write):
            written = self._write(effect)
            return None if effect.then is None else dataclasses.replace(effect.then, written=written)
        if isinstance(effect, Reply):
            answer = self._waiters.pop(effect.waiter, None)
            if answer is not None:
                pending = {p: end for p, end in self._written.items() if not self._log.committed(p, end)}
                if pending:
                    self._defer(answer, effect.answer, pending)
                else:
                    answer(effect.answer)
        elif isinstance(effect, SetTimer):
            self._schedule(effect)
        elif isinstance(effect, CancelTimer):
            handle = self._timers.pop(effect.key, None)
            if handle is not None:
                handle.cancel()
        elif type(effect) in self._effects:
            return self._effects[type(effect)](effect)  # a coordinator's own effect, e.g. markers
        else:
            raise TypeError(f"{self._name}: not an effect: {effect!r}")
        return None

    def _write(self, effect: Write) -> Written:
        partition = self._log.partition_for(effect.key)
        try:
            if effect.producer is None:
                last = self._log.append(partition, effect.records)
            else:
                producer_id, producer_epoch = effect.producer
                last = self._log.append(
                    partition,
                    effect.records,
                    producer_id=producer_id,
                    producer_epoch=producer_epoch,
                    transactional=True,
                )
        except Exception as exc:  # the rules decide what a failed write means to the client
            log.warning("%s: records for %s not written: %s", self._name, effect.key, exc)
            code = getattr(exc, "code", None)
            return Written(failed=True, error=code if isinstance(code, int) and code else None)
        self._written[partition] = max(self._written.get(partition, 0), last + 1)
        return Written(partition=partition, first_offset=last - len(effect.records) + 1)

    def _defer(self, answer: Callable[[object], None], value: object, pending: dict[int, int]) -> None:
        async def when_committed() -> None:
            timeout_s = self._commit_timeout_s()
            for partition, end in pending.items():
                error = await self._log.wait_committed(partition, end, timeout_s)
                if error:
                    answer(self._uncommitted(value, error))
                    return
            answer(value)

        task = asyncio.get_running_loop().create_task(when_committed())
        self._deferred.add(task)
        task.add_done_callback(self._deferred.discard)

    # ---- timers ----------------------------------------------------------------------------------

    def _schedule(self, timer: SetTimer) -> None:
        if timer.if_absent and timer.key in self._timers:
            return
        previous = self._timers.pop(timer.key, None)
        if previous is not None:
            previous.cancel()

        def fire() -> None:
            self._timers.pop(timer.key, None)
            try:
                self.submit(timer.event)
            except Exception:  # one timer's failure must not take the coordinator down
                log.exception("%s: timer %r failed", self._name, timer.key)

        loop = asyncio.get_running_loop()
        self._timers[timer.key] = loop.call_later(max(timer.delay_ms, 0) / 1000, fire)

    def scheduled(self, key: Hashable) -> bool:
        return key in self._timers

    def stop(self) -> None:
        for handle in self._timers.values():
            handle.cancel()
        self._timers.clear()
        for task in self._deferred:
            task.cancel()
