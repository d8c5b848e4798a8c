"""The coordinator runtime's contract, with a toy coordinator: effects happen in order, a write's
``then`` is decided with the write's result before the next effect, a failed write reaches the rules as
``failed`` with the storage's code, a request is answered through its number, a coordinator's own
effect is carried out by the function it registered, a rule's exception stops what follows, and an
answer decided after a write goes out only once that write is committed (or, failing that, as the
coordinator's ``uncommitted`` makes it)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import pytest

from kconform.reference_broker.coordinator_runtime import (
    CancelTimer,
    CoordinatorRuntime,
    Reply,
    SetTimer,
    Write,
    Written,
)


class Log:
    def __init__(self, fail_with: int | None = None, stored: dict[int, list] | None = None) -> None:
        self.appended: list[tuple[int, tuple]] = []
        self.fail_with = fail_with
        self.stored = stored
        self.high_watermark: int | None = None  # None: every write is committed at once (one replica)
        self.outcome = 0

    def committed(self, partition: int, end_offset: int) -> bool:
        return self.high_watermark is None or self.high_watermark >= end_offset

    async def wait_committed(self, partition: int, end_offset: int, timeout_s: float) -> int:
        await self.released.wait()
        return self.outcome

    @property
    def exists(self) -> bool:
        return self.stored is not None

    @property
    def partition_count(self) -> int:
        return len(self.stored)

    def read(self, partition: int) -> list:
        return self.stored[partition]

    def partition_for(self, key: str) -> int:
        return len(key)

    def append(self, partition, records, *, producer_id=-1, producer_epoch=-1, transactional=False) -> int:
        if self.fail_with is not None:
            error = OSError("disk full")
            error.code = self.fail_with
            raise error
        self.appended.append((partition, tuple(records)))
        return 10 * len(self.appended) + len(records) - 1


@dataclass(frozen=True)
class Ask:
    waiter: int
    key: str


@dataclass(frozen=True)
class Stored:
    waiter: int
    written: Written | None = None


@dataclass(frozen=True)
class Shout:
    text: str


@dataclass(frozen=True)
class Shouted:
    text: str


def toy(journal: list):
    def decide(event):
        journal.append(event)
        if isinstance(event, Ask):
            return [Write(event.key, ((b"k", b"v"),), then=Stored(event.waiter)), Shout("after the write")]
        if isinstance(event, Stored):
            return [Reply(event.waiter, event.written)]
        if isinstance(event, Shouted):
            if event.text == "boom":
                raise ValueError("a rule failed")
            return []
        return []

    return decide


def test_a_writes_then_is_decided_before_the_next_effect_and_the_request_is_answered():
    journal: list = []
    log = Log()
    shouts: list = []
    runtime = CoordinatorRuntime(
        "toy", toy(journal), log, effects={Shout: lambda e: shouts.append(e) or Shouted(e.text)}
    )
    answer = runtime.call(lambda waiter: Ask(waiter, "abc"))
    assert answer == Written(partition=3, first_offset=10)
    assert log.appended == [(3, ((b"k", b"v"),))]
    # the write's follow-up came before the next effect (the shout), and the shout's follow-up last
    assert [type(e).__name__ for e in journal] == ["Ask", "Stored", "Shouted"]
    assert shouts == [Shout("after the write")]


def test_a_failed_write_reaches_the_rules_with_the_storages_code():
    runtime = CoordinatorRuntime("toy", toy([]), Log(fail_with=19), effects={Shout: lambda e: None})
    assert runtime.call(lambda waiter: Ask(waiter, "k")) == Written(failed=True, error=19)


def test_a_rules_exception_stops_the_effects_after_it_and_reaches_the_caller():
    journal: list = []

    def decide(event):
        journal.append(event)
        if isinstance(event, Ask):
            return [Shout("boom"), Reply(event.waiter, "never")]
        return toy([])(event)

    runtime = CoordinatorRuntime("toy", decide, Log(), effects={Shout: lambda e: Shouted(e.text)})
    with pytest.raises(ValueError, match="a rule failed"):
        runtime.call(lambda waiter: Ask(waiter, "k"))
    with pytest.raises(TypeError, match="not an effect"):
        CoordinatorRuntime("toy", lambda event: [object()], Log()).submit("anything")


def test_a_request_left_unanswered_is_an_error_not_a_hang():
    runtime = CoordinatorRuntime("toy", lambda event: [], Log())
    with pytest.raises(RuntimeError, match="unanswered"):
        runtime.call(lambda waiter: Ask(waiter, "k"))


def test_a_parked_request_is_answered_by_a_timer_and_setting_a_key_again_replaces_its_timer():
    @dataclass(frozen=True)
    class Wake:
        waiter: int
        label: str

    def decide(event):
        if isinstance(event, Ask):  # park: answered when the timer fires
            return [
                SetTimer("t", 50, Wake(event.waiter, "first")),
                SetTimer("t", 1, Wake(event.waiter, "second")),  # replaces the first
                SetTimer("u", 1, Wake(event.waiter, "cancelled")),
                CancelTimer("u"),
            ]
        return [Reply(event.waiter, event.label)]

    async def scenario():
        runtime = CoordinatorRuntime("toy", decide, Log())
        answer = await asyncio.wait_for(runtime.request(lambda waiter: Ask(waiter, "k")), 5)
        assert not runtime.scheduled("t") and not runtime.scheduled("u")
        return answer

    assert asyncio.run(scenario()) == "second"


def test_load_replays_every_partition_of_the_log_in_order_and_nothing_when_there_is_none():
    seen: list = []
    replay = lambda partition, records: seen.append((partition, list(records)))  # noqa: E731
    CoordinatorRuntime("toy", lambda event: [], Log(stored={0: ["a", "b"], 1: [], 2: ["c"]})).load(replay)
    assert seen == [(0, ["a", "b"]), (1, []), (2, ["c"])]
    seen.clear()
    CoordinatorRuntime("toy", lambda event: [], Log()).load(replay)
    assert seen == []


@pytest.mark.parametrize("outcome", [0, 6, 7])
def test_an_answer_after_a_write_waits_until_the_write_is_committed(outcome):
    # CoordinatorRuntime's deferred event queue: completeUpTo(high watermark); a write that is not
    # committed (leadership lost: 6 NOT_LEADER_OR_FOLLOWER; timed out: 7) answers what the coordinator
    # maps it to.
    async def scenario():
        log = Log()
        log.high_watermark = 0  # followers have not copied anything yet
        log.released = asyncio.Event()
        log.outcome = outcome
        runtime = CoordinatorRuntime(
            "toy",
            toy([]),
            log,
            effects={Shout: lambda e: Shouted(e.text)},
            uncommitted=lambda answer, error: ("uncommitted", error),
        )
        asking = asyncio.ensure_future(runtime.request(lambda waiter: Ask(waiter, "abc")))
        await asyncio.sleep(0.05)
        assert not asking.done(), "answered before the write was committed"
        log.released.set()
        return await asyncio.wait_for(asking, 5)

    answer = asyncio.run(scenario())
    if outcome == 0:
        assert answer == Written(partition=3, first_offset=10)
    else:
        assert answer == ("uncommitted", outcome)
