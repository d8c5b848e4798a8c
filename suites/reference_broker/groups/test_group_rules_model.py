"""The classic group protocol's rules as pure functions, driven by a Hypothesis state machine: random
joins (new, known and static members), syncs, heartbeats, leaves, offset commits, failed writes and time
passing (timers fire) go through ``groups.rules.decide`` alone: no event loop, no broker, no log. The
model plays the runtime (it keeps the timers and feeds write results back) and the clients (a leader
assigns the partitions round-robin over the members its join answer lists).

At every step it checks Kafka's invariants:
- one generation at a time: every successful JoinGroup answer is for the group's current generation,
  and generations never go back;
- at most one owner per partition per generation, across every SyncGroup answer of that generation;
- an offset commit is accepted only from a member of the current generation (or from outside group
  management, generation -1, while the group is Empty);
- every state change is one Kafka's ``ClassicGroupState`` allows (the table below is Kafka's, copied from
  ``ClassicGroupState.java``'s valid previous states, not from the module under test)."""

from __future__ import annotations

import dataclasses
import itertools
import re
import traceback
from dataclasses import dataclass, field
from unittest import mock

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from kconform.codecs.errors import Errors
from kconform.reference_broker.coordinator_runtime import CancelTimer, Reply, SetTimer, Write, Written
from kconform.reference_broker.groups.classic_group import ClassicGroup, GroupState
from kconform.reference_broker.groups.classic_rules import JoinOutcome, SyncOutcome
from kconform.reference_broker.groups.events import (
    ClassicHeartbeat,
    ClassicSettings,
    CommitOffsets,
    GroupContext,
    GroupsState,
    JoinGroup,
    LeaveGroup,
    SyncGroup,
)
from kconform.reference_broker.groups.kip848_rules import Settings
from kconform.reference_broker.groups.rules import RULES, decide

GROUP = "g"
PARTITIONS = 6
SESSION_MS = 100
REBALANCE_MS = 300

# ClassicGroupState.java: PREPARING_REBALANCE.addValidPreviousStates(STABLE, COMPLETING_REBALANCE, EMPTY);
# COMPLETING_REBALANCE <- PREPARING_REBALANCE; STABLE <- COMPLETING_REBALANCE; EMPTY <- PREPARING_REBALANCE;
# DEAD <- STABLE, PREPARING_REBALANCE, COMPLETING_REBALANCE, EMPTY, DEAD.
KAFKA_CLASSIC_TRANSITIONS = {
    ("Stable", "PreparingRebalance"),
    ("CompletingRebalance", "PreparingRebalance"),
    ("Empty", "PreparingRebalance"),
    ("PreparingRebalance", "CompletingRebalance"),
    ("CompletingRebalance", "Stable"),
    ("PreparingRebalance", "Empty"),
    ("Stable", "Dead"),
    ("PreparingRebalance", "Dead"),
    ("CompletingRebalance", "Dead"),
    ("Empty", "Dead"),
}


_KAFKA_TRANSITION = ClassicGroup.transition


@dataclass
class Client:
    """One consumer as the protocol sees it."""

    name: str
    instance_id: str | None
    member_id: str = ""
    generation: int = -1
    members_to_assign: list[str] | None = None  # the member list a leader's join answer carried
    join_waiter: int | None = None
    sync_waiter: int | None = None
    owned: frozenset[int] = field(default_factory=frozenset)


class ClassicGroupRules(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.state = GroupsState()
        self.now = 0
        self.timers: dict[object, tuple[int, int, object]] = {}  # key -> (due, order, event)
        self.order = itertools.count()
        self.waiters = itertools.count(1)
        self.new_ids = itertools.count(1)
        self.next_record_offset = 0
        self.fail_next_write = False
        self.clients = [Client(f"c{i}", f"instance-{i}" if i % 2 else None) for i in range(4)]
        self.answers: dict[int, object] = {}
        self.reactions: list = []  # what clients do at once on an answer: (action, client)
        self.transitions: list[tuple[str, str]] = []
        self.highest_generation = 0
        self.owners: dict[int, dict[int, str]] = {}  # generation -> partition -> member

    # ---- the model's runtime ---------------------------------------------------------------------

    def context(self) -> GroupContext:
        return GroupContext(
            now_ms=self.now,
            classic=ClassicSettings(
                min_session_timeout_ms=10,
                max_session_timeout_ms=10_000,
                initial_rebalance_delay_ms=50,
                max_size=3,
                offset_metadata_max_bytes=16,
            ),
            consumer=Settings(),
        )

    def group(self) -> ClassicGroup | None:
        group = self.state.groups.get(GROUP)
        return group if isinstance(group, ClassicGroup) else None

    def run(self, event: object) -> None:
        self.decide_all(event)
        while self.reactions:
            action, client = self.reactions.pop(0)
            action(self.clients.index(client), False)

    def decide_all(self, event: object) -> None:
        pending = [event]
        while pending:
            current = pending.pop(0)
            before = self.group()
            generation_before = None if before is None else before.generation
            members_before = set() if before is None else set(before.members)
            state_before = None if before is None else before.state_name
            recording = lambda group, target, now_ms: self.recording_transition(group, target, now_ms)  # noqa: E731
            with mock.patch.object(ClassicGroup, "transition", recording):
                effects = decide(self.state, current, self.context())
            self.check_commit(current, effects, generation_before, members_before, state_before)
            for effect in effects:
                if isinstance(effect, Write):
                    if effect.then is not None:
                        pending.append(self.written(effect))
                elif isinstance(effect, Reply):
                    self.answers[effect.waiter] = effect.answer
                elif isinstance(effect, SetTimer):
                    self.timers[effect.key] = (self.now + effect.delay_ms, next(self.order), effect.event)
                elif isinstance(effect, CancelTimer):
                    self.timers.pop(effect.key, None)
        self.collect_answers()

    def recording_transition(self, group: ClassicGroup, target: GroupState, now_ms: int) -> None:
        self.transitions.append((group.state_name, target.value))
        _KAFKA_TRANSITION(group, target, now_ms)

    def written(self, write: Write):
        if self.fail_next_write:
            self.fail_next_write = False
            return dataclasses.replace(write.then, written=Written(failed=True))
        first = self.next_record_offset
        self.next_record_offset += len(write.records)
        return dataclasses.replace(write.then, written=Written(partition=0, first_offset=first))

    def check_commit(self, event, effects, generation, members, state_name) -> None:
        if not isinstance(event, CommitOffsets):
            return
        accepted = [e for e in effects if isinstance(e, Write)]
        if not accepted:
            return
        if event.generation < 0:
            assert state_name in (None, "Empty"), (
                f"a commit from outside the group accepted while {state_name}"
            )
        else:
            assert event.generation == generation, (
                f"generation {event.generation} committed during {generation}"
            )
            assert event.member_id in members, f"{event.member_id} committed without being a member"

    def collect_answers(self) -> None:
        group = self.group()
        for client in self.clients:
            if client.join_waiter in self.answers:
                answer = self.answers.pop(client.join_waiter)
                client.join_waiter = None
                assert isinstance(answer, JoinOutcome)
                if answer.error_code == Errors.MEMBER_ID_REQUIRED:
                    client.member_id = answer.member_id
                    self.reactions.append((self.join, client))  # a real client rejoins at once
                elif answer.error_code == Errors.NONE:
                    assert group is not None and answer.generation_id == group.generation, (
                        f"a join answered for generation {answer.generation_id} while the group is at "
                        f"{None if group is None else group.generation}"
                    )
                    client.member_id, client.generation = answer.member_id, answer.generation_id
                    listed = answer.members
                    client.members_to_assign = None if listed is None else [m for m, _, _ in listed]
                    self.reactions.append((self.sync, client))  # and syncs at once
                elif answer.error_code in (Errors.UNKNOWN_MEMBER_ID, Errors.FENCED_INSTANCE_ID):
                    client.member_id, client.generation = "", -1
            if client.sync_waiter in self.answers:
                answer = self.answers.pop(client.sync_waiter)
                client.sync_waiter = None
                assert isinstance(answer, SyncOutcome)
                if answer.error_code == Errors.NONE:
                    owned = frozenset(answer.assignment)
                    client.owned = owned
                    per_partition = self.owners.setdefault(client.generation, {})
                    # keyed by client: a static member that rejoins keeps its slot in the same generation
                    for partition in owned:
                        other = per_partition.setdefault(partition, client.name)
                        assert other == client.name, (
                            f"partition {partition} given to {other} and {client.name} in generation "
                            f"{client.generation}"
                        )

    # ---- clients ---------------------------------------------------------------------------------

    @rule(i=st.integers(0, 3), fresh=st.booleans())
    def join(self, i: int, fresh: bool) -> None:
        client = self.clients[i]
        if client.join_waiter is not None:
            return
        client.join_waiter = waiter = next(self.waiters)
        self.run(
            JoinGroup(
                waiter,
                GROUP,
                "" if fresh else client.member_id,
                client.instance_id,
                "consumer",
                (("range", client.name.encode()),),
                SESSION_MS,
                REBALANCE_MS,
                client.name,
                "/127.0.0.1",
                True,
                f"{client.name}-{next(self.new_ids)}",
            )
        )

    @rule(i=st.integers(0, 3), stale=st.booleans())
    def sync(self, i: int, stale: bool) -> None:
        client = self.clients[i]
        if client.sync_waiter is not None or not client.member_id:
            return
        assignments: tuple = ()
        if client.members_to_assign:  # the leader: round-robin, each partition to one member
            members = client.members_to_assign
            given = {
                m: bytes(p for p in range(PARTITIONS) if p % len(members) == k) for k, m in enumerate(members)
            }
            assignments = tuple(given.items())
        client.sync_waiter = waiter = next(self.waiters)
        generation = client.generation - 1 if stale else client.generation
        self.run(
            SyncGroup(
                waiter, GROUP, generation, client.member_id, client.instance_id, None, None, assignments
            )
        )

    @rule(i=st.integers(0, 3))
    def heartbeat(self, i: int) -> None:
        client = self.clients[i]
        self.run(
            ClassicHeartbeat(
                next(self.waiters), GROUP, client.generation, client.member_id, client.instance_id
            )
        )

    @rule(i=st.integers(0, 3))
    def leave(self, i: int) -> None:
        client = self.clients[i]
        self.run(LeaveGroup(next(self.waiters), GROUP, ((client.member_id, client.instance_id),)))

    @rule(i=st.integers(0, 3), partition=st.integers(0, PARTITIONS - 1), offset=st.integers(0, 100),
          outside=st.booleans())  # fmt: skip
    def commit(self, i: int, partition: int, offset: int, outside: bool) -> None:
        client = self.clients[i]
        generation, member = (-1, "") if outside else (client.generation, client.member_id)
        entry = (("t", partition, offset, -1, None),)
        self.run(CommitOffsets(next(self.waiters), GROUP, generation, member, None, entry, 9))

    @rule()
    def fail_the_next_write(self) -> None:
        self.fail_next_write = True

    @rule(ms=st.integers(1, 2 * REBALANCE_MS))
    def time_passes(self, ms: int) -> None:
        deadline = self.now + ms
        while True:
            due = [(when, order, key) for key, (when, order, _) in self.timers.items() if when <= deadline]
            if not due:
                break
            when, _, key = min(due)
            self.now = max(self.now, when)
            _, _, event = self.timers.pop(key)
            self.run(event)
        self.now = deadline

    # ---- invariants ------------------------------------------------------------------------------

    @invariant()
    def generations_never_go_back(self) -> None:
        group = self.group()
        if group is not None:
            assert group.generation >= self.highest_generation
            self.highest_generation = group.generation

    @invariant()
    def state_changes_follow_kafkas_table(self) -> None:
        for change in self.transitions:
            assert change in KAFKA_CLASSIC_TRANSITIONS, (
                f"{change[0]} -> {change[1]} is not a Kafka transition"
            )
        self.transitions.clear()


ClassicGroupRules.TestCase.settings = settings(max_examples=150, stateful_step_count=60, deadline=None)
test_classic_group_rules_keep_kafkas_invariants = ClassicGroupRules.TestCase


# ---- the model fails when a rule is broken ----------------------------------------------------------


def _fails_with(message: str, broken_rule) -> None:
    """The model, run against ``broken_rule``, finds a failure that says ``message`` (Hypothesis may
    report several distinct failures at once, as an exception group)."""
    with broken_rule, pytest.raises(Exception) as caught:
        run_state_machine_as_test(
            ClassicGroupRules, settings=settings(max_examples=300, stateful_step_count=60, deadline=None)
        )
    assert re.search(message, "".join(traceback.format_exception(caught.value))), caught.value


def test_the_model_catches_a_sync_that_gives_everyone_the_leaders_assignment():
    honest = RULES[SyncGroup]

    def copies_the_leaders(state, event, ctx):
        leaders = dict(event.assignments).get(event.member_id)
        if leaders is not None:
            event = dataclasses.replace(event, assignments=tuple((m, leaders) for m, _ in event.assignments))
        return honest(state, event, ctx)

    _fails_with("given to", mock.patch.dict(RULES, {SyncGroup: copies_the_leaders}))


def test_the_model_catches_a_commit_accepted_from_another_generation():
    _fails_with(
        "commit",
        mock.patch.object(ClassicGroup, "validate_offset_commit", lambda *args: Errors.NONE),
    )
