"""Stateful differential models: Hypothesis rule-based state machines whose every step runs on both
targets and must get the same (normalised) answer. A difference fails the step, and Hypothesis shrinks
the whole run of steps to the shortest that still shows it.

``LogMachine`` models produce / fetch / list-offsets flows over the topics it creates; ``GroupMachine``
models a consumer group's life (join, sync, heartbeat, commit, fetch offsets, leave). Both are built by
``machine_for(engine)`` so one pair of started targets serves every run."""

from __future__ import annotations

import asyncio
import itertools

from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, initialize, invariant, precondition, rule

from kconform.codecs.messages import (
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    SyncGroupRequest,
)

from . import operations as ops
from .engine import DiffEngine

__all__ = ["GroupMachine", "LogMachine", "StepDiverged", "machine_for"]

_runs = itertools.count()


class StepDiverged(AssertionError):
    """The two targets answered one step differently."""


class _DifferentialMachine(RuleBasedStateMachine):
    engine: DiffEngine
    loop: asyncio.AbstractEventLoop

    def __init__(self) -> None:
        super().__init__()
        self.case_id = f"sm{next(_runs)}"
        self.ctx = ops.Context(self.case_id)

    def step(self, op: ops.Operation):
        """Run one operation on both targets; fail on any difference. Returns both exchanges."""
        result = self.loop.run_until_complete(self.engine.run_case([op], self.case_id))
        if result.divergences:
            lines = [f"{d.signature}: a={d.difference.a!r} b={d.difference.b!r}" for d in result.divergences]
            raise StepDiverged(f"{op}:\n  " + "\n  ".join(lines))
        return result.exchanges[0] if result.exchanges else None


class LogMachine(_DifferentialMachine):
    topics = Bundle("topics")

    def __init__(self) -> None:
        super().__init__()
        self.partitions: dict[int, int] = {}
        self.produced: dict[tuple[int, int], int] = {}

    @initialize(target=topics, partitions=st.integers(1, 3))
    def first_topic(self, partitions):
        return self._create(0, partitions)

    @precondition(lambda self: len(self.partitions) < 3)
    @rule(target=topics, partitions=st.integers(1, 3))
    def create_topic(self, partitions):
        return self._create(len(self.partitions), partitions)

    def _create(self, index: int, partitions: int) -> int:
        self.step(ops.CreateTopic(0, topic=index, partitions=partitions))
        self.partitions[index] = partitions
        return index

    @rule(
        topic=topics,
        partition=st.integers(0, 3),
        values=st.lists(st.binary(max_size=16), min_size=1, max_size=4),
        keyed=st.booleans(),
        pick=st.integers(0, 31),
    )
    def produce(self, topic, partition, values, keyed, pick):
        exchanges = self.step(
            ops.Produce(pick, topic=topic, partition=partition, values=tuple(values), keyed=keyed, acks=-1)
        )
        if exchanges and not any(exchanges[0].error_codes):
            key = (topic, partition)
            self.produced[key] = self.produced.get(key, 0) + len(values)

    @rule(topic=topics, partition=st.integers(0, 3), offset=st.integers(-1, 12), pick=st.integers(0, 31))
    def fetch(self, topic, partition, offset, pick):
        self.step(ops.Fetch(pick, topic=topic, partition=partition, offset=offset))

    @rule(
        topic=topics,
        partition=st.integers(0, 3),
        timestamp=st.sampled_from(
            [-1, -2, -3, ops.BASE_TIMESTAMP, ops.BASE_TIMESTAMP + 2, ops.BASE_TIMESTAMP + 100]
        ),
        pick=st.integers(0, 31),
    )
    def list_offsets(self, topic, partition, timestamp, pick):
        self.step(ops.ListOffsets(pick, topic=topic, partition=partition, timestamp=timestamp))

    @rule(topic=topics, partition=st.integers(0, 2), offset=st.integers(0, 8), pick=st.integers(0, 31))
    def delete_records(self, topic, partition, offset, pick):
        self.step(ops.DeleteRecords(pick, topic=topic, partition=partition, offset=offset))

    @invariant()
    def high_watermarks_agree(self):
        for topic, partition in self.produced:
            self.step(ops.ListOffsets(1, topic=topic, partition=partition, timestamp=-1))


class GroupMachine(_DifferentialMachine):
    """One member's life in a classic group, step by step (a member alone in its group, so no step
    waits for another)."""

    def __init__(self) -> None:
        super().__init__()
        self.group = self.ctx.group(0)
        self.member_id = {"a": "", "b": ""}
        self.generation = {"a": -1, "b": -1}
        self.joined = False

    @initialize()
    def topic(self):
        self.step(ops.CreateTopic(0, topic=0, partitions=2))

    def _raw(self, api_key: int, build, cap: int | None = None):
        """A group request built per target (member ids differ between targets), compared normalised."""
        op = _GroupStep(0, api_key=api_key, build=build, cap=cap)
        return self.step(op)

    @rule()
    def join(self):
        def build(side, version):
            return JoinGroupRequest(
                group_id=self.group,
                session_timeout_ms=30_000,
                rebalance_timeout_ms=30_000,
                member_id=self.member_id[side],
                protocol_type="consumer",
                protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"")],
            )

        exchanges = self._raw(11, build, cap=9)
        self._learn(exchanges)
        if exchanges and exchanges[0].tree.get("error_code") == 79:  # MEMBER_ID_REQUIRED: join again
            exchanges = self._raw(11, build, cap=9)
            self._learn(exchanges)
        self.joined = bool(exchanges) and exchanges[0].tree.get("error_code") == 0

    def _learn(self, exchanges):
        for side, exchange in zip("ab", exchanges or (), strict=False):
            answer = exchange.decoded  # each side's own ids, before normalisation
            if answer is None:
                continue
            if answer.member_id:
                self.member_id[side] = answer.member_id
            self.generation[side] = answer.generation_id

    @precondition(lambda self: self.joined)
    @rule()
    def sync(self):
        def build(side, version):
            return SyncGroupRequest(
                group_id=self.group,
                generation_id=self.generation[side],
                member_id=self.member_id[side],
                protocol_type="consumer",
                protocol_name="range",
                assignments=[
                    SyncGroupRequest.SyncGroupRequestAssignment(
                        member_id=self.member_id[side], assignment=b""
                    )
                ],
            )

        self._raw(14, build, cap=5)

    @rule()
    def heartbeat(self):
        def build(side, version):
            return HeartbeatRequest(
                group_id=self.group, generation_id=self.generation[side], member_id=self.member_id[side]
            )

        self._raw(12, build, cap=4)

    @rule(offset=st.integers(0, 5), pick=st.integers(0, 31))
    def commit(self, offset, pick):
        self.step(ops.OffsetCommit(pick, group=0, topic=0, partition=0, offset=offset))

    @rule(pick=st.integers(0, 31))
    def fetch_offsets(self, pick):
        self.step(ops.OffsetFetch(pick, group=0, topic=0, partition=0))

    @precondition(lambda self: self.joined)
    @rule()
    def leave(self):
        def build(side, version):
            if version >= 3:
                member = LeaveGroupRequest.MemberIdentity(member_id=self.member_id[side])
                return LeaveGroupRequest(group_id=self.group, members=[member])
            return LeaveGroupRequest(group_id=self.group, member_id=self.member_id[side])

        self._raw(13, build, cap=5)
        self.joined = False
        self.member_id = {"a": "", "b": ""}
        self.generation = {"a": -1, "b": -1}


class _GroupStep(ops.Operation):
    """An operation whose request depends on the side (each target gave the member its own id)."""

    def __init__(self, version_pick, *, api_key, build, cap):
        object.__setattr__(self, "version_pick", version_pick)
        self._api_key, self._build, self._cap = api_key, build, cap

    @property
    def api_key(self):  # type: ignore[override]
        return self._api_key

    def version(self, low, high):
        return min(high, self._cap) if self._cap is not None else high

    def body_for(self, side: str, ctx, version):
        return self._build(side, version)

    def body(self, ctx, version):
        return self._build("a", version)

    def __repr__(self) -> str:
        return f"GroupStep(api_key={self._api_key})"


def machine_for(
    machine: type[_DifferentialMachine], engine: DiffEngine, loop: asyncio.AbstractEventLoop
) -> type[_DifferentialMachine]:
    """A subclass of ``machine`` bound to a started pair of targets."""
    return type(machine.__name__, (machine,), {"engine": engine, "loop": loop})
