"""KIP-848 consumer groups in the reference broker, without the wire.

1. The server-side assignors' properties (Hypothesis): every subscribed partition goes to exactly one
   subscriber; ``uniform`` balances and is sticky; ``range`` lines co-partitioned topics up.
2. The records' layouts (Kafka 4.0's ``ConsumerGroup*Key``/``Value`` definitions), their round trip, and
   that no bytes read back can make the loader fail with anything but ``RecordFormatError``.
3. Reconciliation as a state machine (Hypothesis), driven through the same pure decisions the broker
   uses and applied through the records' bytes: clients that join, leave, bounce (static members) and
   confirm revocations late never own a partition at the same time, and the group converges.

The wire rules are in ``test_consumer_groups_heartbeat.py`` and ``test_consumer_groups_lifecycle.py``.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kconform.codecs.errors import Errors
from kconform.reference_broker.groups import kip848_log_records as cr
from kconform.reference_broker.groups.classic_log_records import RecordFormatError
from kconform.reference_broker.groups.errors import GroupError
from kconform.reference_broker.groups.kip848_assignment import next_assignment
from kconform.reference_broker.groups.kip848_group import (
    ConsumerGroup,
    ConsumerMember,
    MemberState,
    apply_record,
)
from kconform.reference_broker.groups.kip848_rules import Heartbeat, Settings, heartbeat, leave
from kconform.reference_broker.groups.loader import replay_kip848
from kconform.reference_broker.groups.server_assignors import assignor_names, range_assign, uniform_assign

TOPICS = [uuid.UUID(int=i + 1) for i in range(4)]


MEMBERS = [f"m{i}" for i in range(7)]


# ---- 1. assignors -----------------------------------------------------------------------------------


def owners_of(result: dict) -> dict[tuple, list[str]]:
    owners: dict[tuple, list[str]] = {}
    for member, tps in result.items():
        for topic, parts in tps.items():
            for p in parts:
                owners.setdefault((topic, p), []).append(member)
    return owners


def load(result: dict, member: str) -> int:
    return sum(len(p) for p in result[member].values())


subscriptions_st = st.dictionaries(st.sampled_from(MEMBERS), st.sets(st.sampled_from(TOPICS)), min_size=1)


partitions_st = st.fixed_dictionaries({t: st.integers(0, 9) for t in TOPICS})


# Current assignments as a server may hold them: stale topics, partitions past the end, duplicates.
current_st = st.dictionaries(
    st.sampled_from(MEMBERS),
    st.dictionaries(st.sampled_from(TOPICS), st.sets(st.integers(0, 11), max_size=6), max_size=3),
)


@given(subscriptions_st, current_st, partitions_st)
def test_both_assignors_give_every_subscribed_partition_to_exactly_one_subscriber(subs, current, counts):
    for assign in (uniform_assign, range_assign):
        result = assign(subs, current, counts)
        assert set(result) == set(subs), assign.__name__
        owners = owners_of(result)
        wanted = {(t, p) for t, n in counts.items() if any(t in s for s in subs.values()) for p in range(n)}
        assert set(owners) == wanted, assign.__name__
        for (topic, _), holders in owners.items():
            assert len(holders) == 1 and topic in subs[holders[0]], assign.__name__


@given(st.lists(st.sampled_from(MEMBERS), min_size=1, unique=True), st.sets(st.sampled_from(TOPICS)))
@settings(max_examples=60)
def test_uniform_balances_members_with_the_same_subscription_within_one(members, topics):
    counts = {t: 3 + i * 2 for i, t in enumerate(TOPICS)}
    result = uniform_assign({m: set(topics) for m in members}, {}, counts)
    loads = [load(result, m) for m in members]
    assert max(loads) - min(loads) <= 1


@given(subscriptions_st, current_st, partitions_st)
def test_uniform_never_leaves_a_subscriber_two_behind_a_holder_of_the_same_topic(subs, current, counts):
    result = uniform_assign(subs, current, counts)
    for (topic, _), (holder,) in owners_of(result).items():
        for other, topics in subs.items():
            if topic in topics:
                assert load(result, holder) - load(result, other) <= 1, (topic, holder, other)


@given(subscriptions_st, partitions_st)
def test_uniform_is_sticky_when_membership_does_not_change(subs, counts):
    first = uniform_assign(subs, {}, counts)
    assert uniform_assign(subs, first, counts) == first


@given(st.integers(1, 5), st.integers(0, 30))
def test_uniform_moves_only_what_a_new_member_needs(members, count):
    """A member joining a balanced group takes partitions; each old member keeps at least its new
    quota of what it had."""
    names = [f"m{i}" for i in range(members)]
    before = uniform_assign({m: {TOPICS[0]} for m in names}, {}, {TOPICS[0]: count})
    after = uniform_assign({m: {TOPICS[0]} for m in [*names, "new"]}, before, {TOPICS[0]: count})
    quota = count // (members + 1)
    for m in names:
        kept = before[m].get(TOPICS[0], set()) & after[m].get(TOPICS[0], set())
        assert len(kept) >= min(quota, load(before, m))


@given(st.lists(st.sampled_from(MEMBERS), min_size=1, unique=True), st.integers(0, 12))
def test_range_gives_co_partitioned_topics_the_same_contiguous_ranges(members, count):
    subs = {m: {TOPICS[0], TOPICS[1]} for m in members}
    result = range_assign(subs, {}, {TOPICS[0]: count, TOPICS[1]: count})
    for m in members:
        first, second = result[m].get(TOPICS[0], set()), result[m].get(TOPICS[1], set())
        assert first == second
        assert not first or first == set(range(min(first), max(first) + 1))


def test_range_orders_static_members_by_instance_id_before_the_others():
    """Kafka's ``RangeAssignor.sortMemberIds``."""
    subs = {"a": {TOPICS[0]}, "b": {TOPICS[0]}, "c": {TOPICS[0]}}
    result = range_assign(subs, {}, {TOPICS[0]: 3}, {"a": None, "b": "z", "c": "y"})
    assert (result["c"], result["b"], result["a"]) == ({TOPICS[0]: {0}}, {TOPICS[0]: {1}}, {TOPICS[0]: {2}})


def test_assignor_names_accept_kafkas_class_names():
    configured = ["org.apache.kafka.coordinator.group.assignor.RangeAssignor", "uniform", "sticky"]
    assert assignor_names(configured) == ["range", "uniform"]


# ---- 2. records ----------------------------------------------------------------------------------------


def test_current_assignment_record_has_kafkas_layout():
    """ConsumerGroupCurrentMemberAssignmentKey v8 / Value v0 (flexible)."""
    topic = TOPICS[0]
    value = cr.CurrentAssignmentValue(5, 4, 1, {topic: frozenset({0, 1})}, {})
    key, data = cr.CurrentAssignment("g", "m", value).encode()
    assert key == struct.pack(">hh", 8, 1) + b"g" + struct.pack(">h", 1) + b"m"
    expected = struct.pack(">hiib", 0, 5, 4, 1) + b"\x02" + topic.bytes + b"\x03" + struct.pack(">ii", 0, 1)
    assert data == expected + b"\x00" + b"\x01" + b"\x00"


def test_member_metadata_record_has_kafkas_field_order():
    """ConsumerGroupMemberMetadataValue v0: InstanceId, RackId, ClientId, ClientHost,
    SubscribedTopicNames, SubscribedTopicRegex, RebalanceTimeoutMs, ServerAssignor, tags."""
    value = cr.MemberSubscriptionValue("i", None, "c", "/h", ("a", "b"), "", 300, "range")
    key, data = cr.MemberSubscription("g", "m", value).encode()
    assert key[:2] == struct.pack(">h", 5)
    expected = (
        struct.pack(">h", 0)
        + b"\x02i"
        + b"\x00"
        + b"\x02c"
        + b"\x03/h"
        + b"\x03\x02a\x02b"
        + b"\x01"
        + struct.pack(">i", 300)
        + b"\x06range"
        + b"\x00"
    )
    assert data == expected


def test_group_epoch_and_tombstone_records():
    """ConsumerGroupMetadataKey v3 with Value v0 {Epoch}; a tombstone has no value."""
    assert cr.GroupEpoch("g", 7).encode() == (
        struct.pack(">hh", 3, 1) + b"g",
        struct.pack(">hi", 0, 7) + b"\x00",
    )
    assert cr.GroupEpoch("g", None).encode()[1] is None


uuids = st.uuids()


names = st.text(min_size=0, max_size=8)


parts_st = st.dictionaries(
    uuids, st.frozensets(st.integers(0, 2**31 - 1), min_size=1, max_size=4), max_size=3
)


records_st = st.one_of(
    st.builds(cr.GroupEpoch, names, st.none() | st.integers(-(2**31), 2**31 - 1)),
    st.builds(cr.TargetEpoch, names, st.none() | st.integers(-(2**31), 2**31 - 1)),
    st.builds(cr.TargetMember, names, names, st.none() | parts_st),
    st.builds(
        cr.SubscriptionMetadata,
        names,
        st.none()
        | st.lists(st.builds(cr.TopicMetadata, uuids, names, st.integers(0, 100)), max_size=3).map(tuple),
    ),
    st.builds(
        cr.MemberSubscription,
        names,
        names,
        st.none()
        | st.builds(
            cr.MemberSubscriptionValue,
            st.none() | names,
            st.none() | names,
            names,
            names,
            st.lists(names, max_size=3).map(tuple),
            st.none() | names,
            st.integers(-1, 10**6),
            st.none() | names,
        ),
    ),
    st.builds(
        cr.CurrentAssignment,
        names,
        names,
        st.none()
        | st.builds(
            cr.CurrentAssignmentValue,
            st.integers(-2, 99),
            st.integers(-2, 99),
            st.integers(0, 2),
            parts_st,
            parts_st,
        ),
    ),
    st.builds(
        cr.RegularExpression,
        names,
        names,
        st.none()
        | st.builds(cr.ResolvedRegex, st.frozensets(names, max_size=3), st.integers(0, 9), st.integers(0, 9)),
    ),
)


@given(records_st)
def test_records_read_back_as_written(record):
    assert cr.decode(*record.encode()) == record


@given(records_st, st.binary(max_size=40), st.integers(0, 60))
@settings(suppress_health_check=[HealthCheck.too_slow])
def test_damaged_record_bytes_raise_only_record_format_errors(record, garbage, cut):
    """The loader skips what raises RecordFormatError; anything else would stop the coordinator."""

    key, value = record.encode()
    version = struct.unpack(">h", key[:2])[0]
    for k, v in ((key[:cut], value), (key, None if value is None else value[:cut]), (key, garbage)):
        try:
            replay_kip848({}, version, k, v)
        except RecordFormatError:
            pass


# ---- 3. reconciliation as a state machine ------------------------------------------------------------


@dataclass
class Client:
    """A consumer as the protocol sees it: it consumes what it was given and gives partitions back
    only when it chooses to (``confirm``), reporting what it owns in every heartbeat."""

    member_id: str
    instance_id: str | None
    epoch: int = 0
    owned: dict = field(default_factory=dict)
    given: dict = field(default_factory=dict)


class Model:
    def __init__(self, partitions: int, assignor: str = "uniform") -> None:
        self.settings = Settings(assignors=(assignor,))
        self.groups: dict[str, object] = {}
        self.topics = {
            "t": cr.TopicMetadata(TOPICS[0], "t", partitions),
            "u": cr.TopicMetadata(TOPICS[1], "u", 3),
        }
        self.clients: dict[int, Client] = {}
        self.departed: dict[int, str] = {}  # static slots whose member left with epoch -2
        self.serial = 0

    @property
    def group(self) -> ConsumerGroup:
        return self.groups["g"]

    def apply(self, outcome) -> None:
        for record in outcome.records:  # through the bytes, as a restart would read them
            decoded = cr.decode(*record.encode())
            apply_record(self.groups, decoded if decoded is not None else record)

    def send(self, client: Client, epoch: int, owned) -> object:
        hb = Heartbeat(
            group_id="g",
            member_id=client.member_id,
            member_epoch=epoch,
            instance_id=client.instance_id,
            rebalance_timeout_ms=1000 if epoch == 0 else -1,
            subscribed_topic_names=("t", "u") if epoch == 0 else None,
            owned=owned,
        )
        if epoch < 0:
            outcome = leave(self.groups.get("g"), hb, self.topics)
        else:
            outcome = heartbeat(self.groups.get("g"), hb, self.topics, self.settings, 0)
        self.apply(outcome)
        return outcome

    def join(self, slot: int) -> None:
        if slot in self.clients:
            return
        self.serial += 1
        instance = f"i{slot}" if slot % 2 else None
        client = Client(f"m{slot}-{self.serial}", instance)
        if instance is not None and slot not in self.departed and self.group_has_instance(instance):
            return
        self.departed.pop(slot, None)
        outcome = self.send(client, 0, {})
        self.receive(client, outcome)
        self.clients[slot] = client

    def group_has_instance(self, instance: str) -> bool:
        return "g" in self.groups and self.group.static_member(instance) is not None

    def beat(self, slot: int, confirm: bool) -> None:
        client = self.clients.get(slot)
        if client is None:
            return
        if confirm:  # give back what the coordinator no longer assigns
            client.owned = {t: p & client.given.get(t, frozenset()) for t, p in client.owned.items()}
        self.receive(client, self.send(client, client.epoch, {t: p for t, p in client.owned.items() if p}))

    def receive(self, client: Client, outcome) -> None:
        client.epoch = outcome.member_epoch
        if outcome.assignment is not None:
            client.given = dict(outcome.assignment)
            for topic, parts in outcome.assignment.items():
                client.owned[topic] = client.owned.get(topic, frozenset()) | parts

    def leave(self, slot: int, temporarily: bool) -> None:
        client = self.clients.pop(slot, None)
        if client is None:
            return
        if temporarily and client.instance_id is not None:
            self.send(client, -2, None)
            self.departed[slot] = client.member_id
        else:
            self.send(client, -1, None)

    def grow(self) -> None:
        t = self.topics["t"]
        self.topics["t"] = cr.TopicMetadata(t.topic_id, "t", t.partitions + 1)

    def check_exclusive(self) -> None:
        held: list = []
        for m in self.group.members.values():
            for source in (m.assigned, m.pending_revocation):
                held += [(t, p) for t, parts in source.items() for p in parts]
        assert len(held) == len(set(held)), "the coordinator gave a partition to two members"
        owned = [(t, p) for c in self.clients.values() for t, parts in c.owned.items() for p in parts]
        assert len(owned) == len(set(owned)), "two clients consumed one partition at the same time"


steps_st = st.lists(
    st.tuples(st.sampled_from(["join", "leave", "bounce", "beat", "confirm", "grow"]), st.integers(0, 4)),
    max_size=50,
)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 8), st.sampled_from(["uniform", "range"]), steps_st)
def test_no_partition_is_ever_owned_twice_and_the_group_converges(partitions, assignor, steps):
    model = Model(partitions, assignor)
    for action, slot in steps:
        if action == "join":
            model.join(slot)
        elif action in ("leave", "bounce"):
            model.leave(slot, temporarily=action == "bounce")
        elif action == "grow":
            model.grow()
        else:
            model.beat(slot, confirm=action == "confirm")
        if "g" in model.groups:
            model.check_exclusive()
    for slot in list(model.departed):  # departed static members come back
        model.join(slot)
    if not model.clients:
        return
    for _ in range(4):
        for slot in list(model.clients):
            model.beat(slot, confirm=True)
            model.check_exclusive()
    group = model.group
    assert group.state_name == "Stable"
    for m in group.members.values():
        assert m.assigned == group.target.get(m.member_id, {}) and m.member_epoch == group.group_epoch
    covered = {(t, p) for m in group.members.values() for t, parts in m.assigned.items() for p in parts}
    assert covered == {(t.topic_id, p) for t in model.topics.values() for p in range(t.partitions)}


def test_a_member_in_an_unknown_state_must_rejoin():
    """``CurrentAssignmentBuilder``: the UNKNOWN state (a future version's) fences unless it owns
    nothing."""
    member = ConsumerMember("m", state=MemberState.UNKNOWN, member_epoch=3)
    with pytest.raises(GroupError) as fenced:
        next_assignment(member, 4, {}, {TOPICS[0]: {0}}, lambda t, p: -1)
    assert fenced.value.code == Errors.FENCED_MEMBER_EPOCH
    assert next_assignment(member, 4, {TOPICS[0]: {1}}, {}, lambda t, p: -1).member_epoch == 4
