"""KIP-848 consumer groups in the reference broker.

1. The server-side assignors' properties (Hypothesis): every subscribed partition goes to exactly one
   subscriber; ``uniform`` balances and is sticky; ``range`` lines co-partitioned topics up.
2. The records' layouts (Kafka 4.0's ``ConsumerGroup*Key``/``Value`` definitions), their round trip, and
   that no bytes read back can make the loader fail with anything but ``RecordFormatError``.
3. Reconciliation as a state machine (Hypothesis), driven through the same pure decisions the broker
   uses and applied through the records' bytes: clients that join, leave, bounce (static members) and
   confirm revocations late never own a partition at the same time, and the group converges.
4. ConsumerGroupHeartbeat and ConsumerGroupDescribe through the wire: one test per Kafka rule, each
   naming the Kafka method that decides it; session and rebalance timeouts; reload after a restart.
"""

from __future__ import annotations

import asyncio
import dataclasses
import struct
import uuid
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kconform.codecs.errors import Errors
from kconform.codecs.messages import (
    AddOffsetsToTxnRequest,
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteGroupsRequest,
    InitProducerIdRequest,
    JoinGroupRequest,
    ListGroupsRequest,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
    TxnOffsetCommitRequest,
)
from kconform.reference_broker.groups import consumer_records as cr
from kconform.reference_broker.groups.assignors import assignor_names, range_assign, uniform_assign
from kconform.reference_broker.groups.classic import GroupError
from kconform.reference_broker.groups.consumer_group import (
    ConsumerGroup,
    ConsumerMember,
    Heartbeat,
    MemberState,
    Settings,
    apply_record,
    heartbeat,
    leave,
    next_assignment,
)
from kconform.reference_broker.groups.records import RecordFormatError
from kconform.reference_broker.node import BrokerNode

from ..support.rawclient import RawClient

HEARTBEAT, DESCRIBE = 68, 69
OFFSET_COMMIT, OFFSET_FETCH, JOIN, LIST_GROUPS, DELETE_GROUPS = 8, 9, 11, 16, 42
CREATE_TOPICS, CREATE_PARTITIONS, OFFSET_DELETE, TXN_OFFSET_COMMIT = 19, 37, 47, 28
INIT_PRODUCER_ID, ADD_OFFSETS_TO_TXN = 22, 25
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

    class Coordinator:
        groups: dict = {}

    key, value = record.encode()
    version = struct.unpack(">h", key[:2])[0]
    for k, v in ((key[:cut], value), (key, None if value is None else value[:cut]), (key, garbage)):
        try:
            cr.replay(Coordinator(), version, k, v)
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


# ---- 4. through the wire ---------------------------------------------------------------------------


@dataclass
class Env:
    node: BrokerNode
    client: RawClient
    host: str
    port: int

    async def beat(self, version: int = 1, **fields):
        return await self.client.call(HEARTBEAT, version, ConsumerGroupHeartbeatRequest(**fields))

    async def join(self, member_id: str | None = None, group: str = "cg", version: int = 1, **fields):
        request = dict(
            group_id=group,
            member_id=uuid.uuid4().hex if member_id is None else member_id,
            member_epoch=0,
            rebalance_timeout_ms=5000,
            subscribed_topic_names=["t"],
            topic_partitions=[],
        )
        request.update(fields)
        return await self.beat(version, **request)

    async def poll(self, member_id: str, epoch: int, owned, group: str = "cg", **fields):
        return await self.beat(
            group_id=group, member_id=member_id, member_epoch=epoch, topic_partitions=owned, **fields
        )

    async def describe(self, *groups: str, include_operations: bool = False):
        request = ConsumerGroupDescribeRequest(
            group_ids=list(groups), include_authorized_operations=include_operations
        )
        return (await self.client.call(DESCRIBE, 0, request)).groups

    async def create_topic(self, name: str, partitions: int) -> uuid.UUID:
        topic = CreateTopicsRequest.CreatableTopic(name=name, num_partitions=partitions, replication_factor=1)
        body = await self.client.call(CREATE_TOPICS, 7, CreateTopicsRequest(topics=[topic], timeout_ms=5000))
        assert body.topics[0].error_code == Errors.NONE
        return body.topics[0].topic_id

    async def grow(self, name: str, count: int) -> None:
        topic = CreatePartitionsRequest.CreatePartitionsTopic(name=name, count=count, assignments=None)
        body = await self.client.call(
            CREATE_PARTITIONS, 3, CreatePartitionsRequest(topics=[topic], timeout_ms=5000)
        )
        assert body.results[0].error_code == Errors.NONE

    async def commit(self, member_id: str, epoch: int, group: str = "cg", version: int = 9) -> int:
        partition = OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=1)
        request = OffsetCommitRequest(
            group_id=group,
            generation_id_or_member_epoch=epoch,
            member_id=member_id,
            topics=[OffsetCommitRequest.OffsetCommitRequestTopic(name="t", partitions=[partition])],
        )
        return (await self.client.call(OFFSET_COMMIT, version, request)).topics[0].partitions[0].error_code


def owned(response) -> list:
    """The request's TopicPartitions for an assignment a response gave."""
    return [
        ConsumerGroupHeartbeatRequest.TopicPartitions(topic_id=tp.topic_id, partitions=list(tp.partitions))
        for tp in response.assignment.topic_partitions
    ]


def parts(response) -> list[int]:
    return sorted(p for tp in response.assignment.topic_partitions for p in tp.partitions)


FAST = {
    "offsets.topic.num.partitions": "3",
    "group.min.session.timeout.ms": "100",
    "group.initial.rebalance.delay.ms": "0",
}


def run(tmp_path, scenario, topics=(("t", 2),), **overrides: str):
    async def main():
        props = {"node.id": "1", "log.dirs": str(tmp_path / "data"), **FAST, **overrides}
        node = BrokerNode.from_config_file(None, props)
        host, port = await node.start("127.0.0.1", 0)
        client = await RawClient.connect(host, port)
        try:
            env = Env(node, client, host, port)
            for name, count in topics:
                await env.create_topic(name, count)
            return await scenario(env)
        finally:
            await client.close()
            await node.stop()

    return asyncio.run(asyncio.wait_for(main(), 30))


def test_a_member_joins_at_epoch_one_with_every_partition_and_is_described(tmp_path):
    async def scenario(env: Env):
        joined = await env.join("a", rack_id="r1", server_assignor="range", instance_id="i1")
        (group,) = await env.describe("cg", include_operations=True)
        return joined, group

    joined, group = run(tmp_path, scenario)
    assert (joined.error_code, joined.member_id, joined.member_epoch) == (Errors.NONE, "a", 1)
    assert joined.heartbeat_interval_ms == 5000 and parts(joined) == [0, 1]
    assert (group.group_state, group.group_epoch, group.assignment_epoch, group.assignor_name) == (
        "Stable",
        1,
        1,
        "range",
    )
    (member,) = group.members
    assert (member.member_id, member.instance_id, member.rack_id, member.member_epoch) == ("a", "i1", "r1", 1)
    assert member.client_host == "/127.0.0.1" and member.subscribed_topic_names == ["t"]
    assert [(tp.topic_name, tp.partitions) for tp in member.assignment.topic_partitions] == [("t", [0, 1])]
    assert member.target_assignment == member.assignment
    assert group.authorized_operations == (1 << 3) | (1 << 6) | (1 << 8)


def test_version_0_join_gets_a_member_id_from_the_coordinator(tmp_path):
    """``consumerGroupHeartbeat``: before version 1 an empty member id gets a generated one."""

    async def scenario(env: Env):
        return await env.join("", version=0), await env.join("", version=1)

    v0, v1 = run(tmp_path, scenario)
    assert v0.error_code == Errors.NONE and len(v0.member_id) == 22
    assert v1.error_code == Errors.INVALID_REQUEST


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"group_id": ""}, "GroupId can't be empty."),
        ({"instance_id": ""}, "InstanceId can't be empty."),
        ({"rack_id": ""}, "RackId can't be empty."),
        ({"rebalance_timeout_ms": -1}, "RebalanceTimeoutMs must be provided in first request."),
        ({"topic_partitions": None}, "TopicPartitions must be empty when (re-)joining."),
        ({"subscribed_topic_names": None}, "Either SubscribedTopicNames"),
        ({"member_epoch": -2}, "InstanceId can't be null."),
        ({"member_epoch": -3}, "MemberEpoch is invalid."),
        ({"member_epoch": 3, "member_id": ""}, "MemberId can't be empty."),
    ],
)
def test_invalid_heartbeats_are_invalid_request(tmp_path, fields, message):
    """``throwIfConsumerGroupHeartbeatRequestIsInvalid``."""

    async def scenario(env: Env):
        return await env.join(**fields)

    body = run(tmp_path, scenario)
    assert body.error_code == Errors.INVALID_REQUEST and body.error_message.startswith(message)
    assert (body.member_id, body.member_epoch, body.assignment) == (None, 0, None)


def test_an_unknown_server_assignor_is_unsupported_assignor(tmp_path):
    """``throwIfConsumerGroupHeartbeatRequestIsInvalid``: ServerAssignor must be configured."""

    async def scenario(env: Env):
        return await env.join(server_assignor="sticky")

    assert run(tmp_path, scenario).error_code == Errors.UNSUPPORTED_ASSIGNOR


def test_a_regex_that_does_not_compile_is_invalid_regular_expression(tmp_path):
    """``maybeUpdateRegularExpressions`` / ``throwIfRegularExpressionIsInvalid``."""

    async def scenario(env: Env):
        return await env.join(subscribed_topic_names=None, subscribed_topic_regex="t(")

    assert run(tmp_path, scenario).error_code == Errors.INVALID_REGULAR_EXPRESSION


def test_heartbeats_and_leaves_for_a_group_that_is_not_there_are_group_id_not_found(tmp_path):
    """``getOrMaybeCreateConsumerGroup`` (epoch > 0) and ``consumerGroupLeave`` (epoch -1) only find."""

    async def scenario(env: Env):
        beat = await env.poll("a", 1, None, group="nothing")
        gone = await env.beat(group_id="nothing", member_id="a", member_epoch=-1)
        return beat.error_code, gone.error_code

    assert run(tmp_path, scenario) == (Errors.GROUP_ID_NOT_FOUND, Errors.GROUP_ID_NOT_FOUND)


def test_a_classic_group_with_members_is_group_id_not_found_but_an_empty_one_gives_way(tmp_path):
    """``getOrMaybeCreateConsumerGroup``: a non-empty classic group is not converted here; an empty one
    (``maybeDeleteEmptyClassicGroup``) is erased, and its committed offsets stay."""

    async def scenario(env: Env):
        join = JoinGroupRequest(
            group_id="classic",
            session_timeout_ms=10_000,
            rebalance_timeout_ms=2_000,
            member_id="",
            protocol_type="consumer",
            protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"")],
        )
        first = await env.client.call(JOIN, 9, join)
        await env.client.call(JOIN, 9, dataclasses.replace(join, member_id=first.member_id))
        busy = await env.join(group="classic")
        assert await env.commit("", -1, group="offsets-only") == Errors.NONE
        taken = await env.join("a", group="offsets-only")
        fetch = OffsetFetchRequest(
            groups=[
                OffsetFetchRequest.OffsetFetchRequestGroup(
                    group_id="offsets-only",
                    member_id="a",
                    member_epoch=taken.member_epoch,
                    topics=[OffsetFetchRequest.OffsetFetchRequestTopics(name="t", partition_indexes=[0])],
                )
            ]
        )
        fetched = await env.client.call(OFFSET_FETCH, 9, fetch)
        listed = await env.client.call(LIST_GROUPS, 5, ListGroupsRequest())
        return busy, taken, fetched.groups[0].topics[0].partitions[0], listed.groups

    busy, taken, fetched, listed = run(tmp_path, scenario)
    assert busy.error_code == Errors.GROUP_ID_NOT_FOUND
    assert (taken.error_code, taken.member_epoch) == (Errors.NONE, 1)
    assert (fetched.error_code, fetched.committed_offset) == (Errors.NONE, 1)
    kinds = {g.group_id: (g.group_type, g.group_state, g.protocol_type) for g in listed}
    assert kinds["offsets-only"] == ("consumer", "Stable", "consumer")


def test_member_and_epoch_rules(tmp_path):
    """``getOrMaybeCreateMember`` (UNKNOWN_MEMBER_ID) and ``throwIfConsumerGroupMemberEpochIsInvalid``:
    a greater or smaller epoch is fenced, except the previous epoch with no more than is assigned
    (the answer that moved the member on may have been lost, even a join's); a rejoin with epoch 0
    is otherwise fenced too."""

    async def scenario(env: Env):
        a = await env.join("a")
        stranger = await env.poll("nobody", 1, None)
        ahead = await env.poll("a", 2, None)
        b = await env.join("b")
        told = await env.poll("a", 1, owned(a))  # must give one partition up, still epoch 1
        kept = owned(told)
        moved = await env.poll("a", 1, kept)  # confirmed: a moves to epoch 2, previous epoch 1
        lost_answer = await env.poll("a", 1, kept)
        behind = await env.poll("a", 1, owned(a))  # previous epoch but owns more than assigned
        lost_join = await env.join("b")  # b's join answer lost: epoch 0 is b's previous epoch
        rejoin = await env.join("a")
        return stranger, ahead, b, told, moved, lost_answer, behind, lost_join, rejoin

    stranger, ahead, b, told, moved, lost_answer, behind, lost_join, rejoin = run(tmp_path, scenario)
    assert stranger.error_code == Errors.UNKNOWN_MEMBER_ID
    assert ahead.error_code == Errors.FENCED_MEMBER_EPOCH
    assert (b.member_epoch, parts(b)) == (2, [])  # its partition is still a's: UNRELEASED_PARTITIONS
    assert (told.member_epoch, len(parts(told))) == (1, 1)
    assert moved.member_epoch == 2 and moved.assignment is None  # nothing new to say
    assert (lost_answer.error_code, lost_answer.member_epoch) == (Errors.NONE, 2)
    assert behind.error_code == Errors.FENCED_MEMBER_EPOCH
    assert (lost_join.error_code, lost_join.member_epoch) == (Errors.NONE, 2)
    assert rejoin.error_code == Errors.FENCED_MEMBER_EPOCH


def test_revocation_completes_before_the_new_owner_gets_the_partition(tmp_path):
    """``CurrentAssignmentBuilder``: b gets a's partition only after a stops reporting it."""

    async def scenario(env: Env):
        a = await env.join("a")
        b = await env.join("b")
        b_waits = await env.poll("b", b.member_epoch, [])
        told = await env.poll("a", 1, owned(a))
        b_still_waits = await env.poll("b", b.member_epoch, [])
        await env.poll("a", 1, owned(told))
        b_gets = await env.poll("b", b.member_epoch, [])
        (group,) = await env.describe("cg")
        return b_waits, b_still_waits, b_gets, group

    b_waits, b_still_waits, b_gets, group = run(tmp_path, scenario)
    assert b_waits.assignment is None and b_still_waits.assignment is None
    assert len(parts(b_gets)) == 1
    assert (group.group_state, group.group_epoch, group.assignment_epoch) == ("Stable", 2, 2)


def test_the_assignment_is_sent_on_a_full_request_or_when_it_changed(tmp_path):
    """``consumerGroupHeartbeat``: a full request (rebalance timeout, names and owned partitions set)
    gets the assignment even when it did not change."""

    async def scenario(env: Env):
        a = await env.join("a")
        plain = await env.poll("a", 1, None)
        full = await env.poll("a", 1, owned(a), rebalance_timeout_ms=5000, subscribed_topic_names=["t"])
        return plain, full

    plain, full = run(tmp_path, scenario)
    assert plain.assignment is None and parts(full) == [0, 1]


def test_static_membership(tmp_path):
    """``getOrMaybeSubscribeStaticConsumerGroupMember``: an instance id held by an active member is
    UNRELEASED_INSTANCE_ID; after the holder leaves with epoch -2 (``consumerGroupStaticMemberGroupLeave``)
    a new member takes over its assignment without a rebalance; a heartbeat naming the instance with
    another member id is FENCED_INSTANCE_ID, an unknown instance UNKNOWN_MEMBER_ID."""

    async def scenario(env: Env):
        first = await env.join("a", instance_id="i")
        taken = await env.join("b", instance_id="i")
        paused = await env.beat(group_id="cg", member_id="a", member_epoch=-2, instance_id="i")
        (during,) = await env.describe("cg")
        second = await env.join("c", instance_id="i")
        impostor = await env.poll("a", 1, None, instance_id="i")
        unknown = await env.poll("c", 1, None, instance_id="nobody")
        (after,) = await env.describe("cg")
        return first, taken, paused, during, second, impostor, unknown, after

    first, taken, paused, during, second, impostor, unknown, after = run(tmp_path, scenario)
    assert taken.error_code == Errors.UNRELEASED_INSTANCE_ID
    assert (paused.error_code, paused.member_id, paused.member_epoch) == (Errors.NONE, "a", -2)
    assert [(m.member_id, m.member_epoch) for m in during.members] == [("a", -2)]
    assert during.group_state == "Reconciling"
    assert (second.error_code, second.member_epoch, parts(second)) == (Errors.NONE, 1, [0, 1])
    assert impostor.error_code == Errors.FENCED_INSTANCE_ID
    assert unknown.error_code == Errors.UNKNOWN_MEMBER_ID
    assert (after.group_epoch, [m.member_id for m in after.members]) == (1, ["c"])


def test_leaving_with_epoch_minus_one_bumps_the_group_epoch(tmp_path):
    """``consumerGroupLeave`` -> ``consumerGroupFenceMember``; leaving again is UNKNOWN_MEMBER_ID."""

    async def scenario(env: Env):
        await env.join("a")
        await env.join("b")
        left = await env.beat(group_id="cg", member_id="b", member_epoch=-1)
        again = await env.beat(group_id="cg", member_id="b", member_epoch=-1)
        (group,) = await env.describe("cg")
        return left, again, group

    left, again, group = run(tmp_path, scenario)
    assert (left.error_code, left.member_id, left.member_epoch) == (Errors.NONE, "b", -1)
    assert again.error_code == Errors.UNKNOWN_MEMBER_ID
    assert (group.group_epoch, [m.member_id for m in group.members]) == (3, ["a"])


def test_a_full_group_is_group_max_size_reached_but_its_members_carry_on(tmp_path):
    """``throwIfConsumerGroupIsFull``."""

    async def scenario(env: Env):
        a = await env.join("a")
        full = await env.join("b")
        still = await env.poll("a", a.member_epoch, None)
        return full.error_code, still.error_code

    assert run(tmp_path, scenario, **{"group.consumer.max.size": "1"}) == (
        Errors.GROUP_MAX_SIZE_REACHED,
        Errors.NONE,
    )


def test_new_topics_and_partitions_bump_the_group_epoch_on_the_next_heartbeat(tmp_path):
    """The subscription metadata is refreshed when the cluster's topics change: a subscribed topic
    created later, or given more partitions, moves the group to a new epoch."""

    async def scenario(env: Env):
        a = await env.join("a", subscribed_topic_names=["later"])
        await env.create_topic("later", 2)
        created = await env.poll("a", a.member_epoch, [])
        await env.grow("later", 3)
        grown = await env.poll("a", created.member_epoch, owned(created))
        return a, created, grown

    a, created, grown = run(tmp_path, scenario)
    assert (a.member_epoch, parts(a)) == (1, [])
    assert (created.member_epoch, parts(created)) == (2, [0, 1])
    assert (grown.member_epoch, parts(grown)) == (3, [0, 1, 2])


def test_regex_subscriptions_follow_the_topics_that_match(tmp_path):
    """``maybeUpdateRegularExpressions``: topics are matched in full; a topic created later that
    matches joins the subscription."""

    async def scenario(env: Env):
        a = await env.join("a", subscribed_topic_names=None, subscribed_topic_regex="orders-.*")
        await env.create_topic("orders-eu", 1)
        await env.create_topic("xorders-eu", 1)
        later = await env.poll("a", a.member_epoch, owned(a))
        (group,) = await env.describe("cg")
        return a, later, group

    a, later, group = run(tmp_path, scenario, topics=(("orders-us", 2), ("t", 1)))
    assert (a.member_epoch, parts(a)) == (1, [0, 1])
    names = sorted(tp.topic_name for tp in group.members[0].assignment.topic_partitions)
    assert later.member_epoch == 2 and names == ["orders-eu", "orders-us"]
    assert group.members[0].subscribed_topic_regex == "orders-.*"


def test_describe_answers_for_unknown_classic_and_empty_ids(tmp_path):
    """``consumerGroupDescribe``: GROUP_ID_NOT_FOUND for groups that are not consumer groups; an empty
    id is INVALID_GROUP_ID and is answered first."""

    async def scenario(env: Env):
        assert await env.commit("", -1, group="classic") == Errors.NONE
        return await env.describe("nobody", "", "classic")

    first, second, third = run(tmp_path, scenario)
    assert (first.group_id, first.error_code) == ("", Errors.INVALID_GROUP_ID)
    assert (second.group_id, second.error_code) == ("nobody", Errors.GROUP_ID_NOT_FOUND)
    assert (third.group_id, third.error_code) == ("classic", Errors.GROUP_ID_NOT_FOUND)
    assert second.authorized_operations == -(2**31)


def test_offset_apis_check_the_member_epoch(tmp_path):
    """``ConsumerGroup.validateOffsetCommit`` / ``validateOffsetFetch`` / ``validateDeleteGroup`` and
    the offset delete rule for subscribed topics."""

    async def scenario(env: Env):
        a = await env.join("a")
        results = {
            "current": await env.commit("a", a.member_epoch),
            "stale": await env.commit("a", a.member_epoch + 1),
            "unknown": await env.commit("x", a.member_epoch),
            "outside": await env.commit("", -1),
            "old_version": await env.commit("a", a.member_epoch, version=8),
        }
        # The transaction must hold the offsets partition first: Kafka verifies that before the group
        # rules (CoordinatorPartitionWriter.maybeStartTransactionVerification).
        init = InitProducerIdRequest(transactional_id="tx", transaction_timeout_ms=60_000)
        for _ in range(20):
            producer = await env.client.call(INIT_PRODUCER_ID, 4, init)
            if producer.error_code != Errors.COORDINATOR_NOT_AVAILABLE:
                break
        add = AddOffsetsToTxnRequest(
            transactional_id="tx",
            producer_id=producer.producer_id,
            producer_epoch=producer.producer_epoch,
            group_id="cg",
        )
        assert (await env.client.call(ADD_OFFSETS_TO_TXN, 3, add)).error_code == Errors.NONE
        txn = TxnOffsetCommitRequest(
            transactional_id="tx",
            group_id="cg",
            producer_id=producer.producer_id,
            producer_epoch=producer.producer_epoch,
            topics=[
                TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(
                    name="t",
                    partitions=[
                        TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition(
                            partition_index=0, committed_offset=1
                        )
                    ],
                )
            ],
        )
        results["txn_stale"] = (
            (
                await env.client.call(
                    TXN_OFFSET_COMMIT, 3, dataclasses.replace(txn, generation_id=9, member_id="a")
                )
            )
            .topics[0]
            .partitions[0]
            .error_code
        )

        async def fetch(member_id, epoch):
            group = OffsetFetchRequest.OffsetFetchRequestGroup(
                group_id="cg", member_id=member_id, member_epoch=epoch
            )
            return (
                (await env.client.call(OFFSET_FETCH, 9, OffsetFetchRequest(groups=[group])))
                .groups[0]
                .error_code
            )

        results["fetch"] = await fetch("a", a.member_epoch)
        results["fetch_stale"] = await fetch("a", 7)
        results["fetch_unknown"] = await fetch("x", 1)
        results["fetch_admin"] = await fetch(None, -1)
        delete = OffsetDeleteRequest(
            group_id="cg",
            topics=[
                OffsetDeleteRequest.OffsetDeleteRequestTopic(
                    name="t", partitions=[OffsetDeleteRequest.OffsetDeleteRequestPartition(partition_index=0)]
                )
            ],
        )
        results["offset_delete"] = (
            (await env.client.call(OFFSET_DELETE, 0, delete)).topics[0].partitions[0].error_code
        )
        deleting = DeleteGroupsRequest(groups_names=["cg"])
        results["delete_busy"] = (await env.client.call(DELETE_GROUPS, 2, deleting)).results[0].error_code
        await env.beat(group_id="cg", member_id="a", member_epoch=-1)
        results["delete_empty"] = (await env.client.call(DELETE_GROUPS, 2, deleting)).results[0].error_code
        results["gone"] = (await env.describe("cg"))[0].error_code
        return results

    assert run(tmp_path, scenario) == {
        "current": Errors.NONE,
        "stale": Errors.STALE_MEMBER_EPOCH,
        "unknown": Errors.UNKNOWN_MEMBER_ID,
        "outside": Errors.UNKNOWN_MEMBER_ID,
        "old_version": Errors.UNSUPPORTED_VERSION,
        "txn_stale": Errors.STALE_MEMBER_EPOCH,
        "fetch": Errors.NONE,
        "fetch_stale": Errors.STALE_MEMBER_EPOCH,
        "fetch_unknown": Errors.UNKNOWN_MEMBER_ID,
        "fetch_admin": Errors.NONE,
        "offset_delete": Errors.GROUP_SUBSCRIBED_TO_TOPIC,
        "delete_busy": Errors.NON_EMPTY_GROUP,
        "delete_empty": Errors.NONE,
        "gone": Errors.GROUP_ID_NOT_FOUND,
    }


TIMEOUTS = {
    "group.consumer.session.timeout.ms": "1000",
    "group.consumer.min.session.timeout.ms": "100",
    "group.consumer.heartbeat.interval.ms": "100",
    "group.consumer.min.heartbeat.interval.ms": "100",
}


def test_a_silent_member_is_fenced_when_its_session_expires(tmp_path):
    """``scheduleConsumerGroupSessionTimeout``: the member is removed and the group epoch bumped; a
    static member that left with epoch -2 and never came back goes the same way."""

    async def scenario(env: Env):
        await env.join("a")
        await env.join("s", instance_id="i")
        await env.beat(group_id="cg", member_id="s", member_epoch=-2, instance_id="i")
        for _ in range(5):  # a stays alive, s does not
            await asyncio.sleep(0.3)
            await env.poll("a", 1, None)
        (alive,) = await env.describe("cg")
        await asyncio.sleep(1.6)
        (silent,) = await env.describe("cg")
        late = await env.poll("a", 1, None)
        return alive, silent, late

    alive, silent, late = run(tmp_path, scenario, **TIMEOUTS)
    assert [m.member_id for m in alive.members] == ["a"] and alive.group_epoch == 3
    assert (silent.group_state, silent.members, silent.group_epoch) == ("Empty", [], 4)
    assert late.error_code == Errors.UNKNOWN_MEMBER_ID


def test_a_member_that_does_not_revoke_in_time_is_fenced(tmp_path):
    """``scheduleConsumerGroupRebalanceTimeout``: a member still holding partitions it must give up
    after its rebalance timeout is removed, and the others get its partitions."""

    async def scenario(env: Env):
        a = await env.join("a", rebalance_timeout_ms=300)
        b = await env.join("b")
        await env.poll("a", 1, owned(a))  # told to revoke, and never does
        await asyncio.sleep(0.6)
        stubborn = await env.poll("a", 1, owned(a))
        b_now = await env.poll("b", b.member_epoch, [])
        return stubborn, b_now

    stubborn, b_now = run(tmp_path, scenario)
    assert stubborn.error_code == Errors.UNKNOWN_MEMBER_ID
    assert (b_now.member_epoch, parts(b_now)) == (3, [0, 1])


def test_consumer_groups_are_read_back_after_a_restart(tmp_path):
    """Every change is a record in ``__consumer_offsets``; a restarted broker replays them into the same
    group, and its members carry on at their epochs."""

    async def first(env: Env):
        a = await env.join("a", server_assignor="range")
        b = await env.join("b", instance_id="i", subscribed_topic_names=None, subscribed_topic_regex="t|u")
        told = await env.poll("a", 1, owned(a))
        await env.poll("a", 1, owned(told))
        await env.join("x", group="deleted")
        await env.beat(group_id="deleted", member_id="x", member_epoch=-1)
        await env.client.call(DELETE_GROUPS, 2, DeleteGroupsRequest(groups_names=["deleted"]))
        return b, await env.describe("cg")

    async def second(env: Env):
        described = await env.describe("cg", "deleted")
        b = await env.poll("b", described[0].members[1].member_epoch, [], instance_id="i")
        return described, b

    b, (before,) = run(tmp_path, first, topics=(("t", 2), ("u", 1)))
    (after, deleted), b_again = run(tmp_path, second, topics=())
    assert after == before
    assert (before.group_epoch, before.assignor_name, len(before.members)) == (2, "range", 2)
    assert deleted.error_code == Errors.GROUP_ID_NOT_FOUND
    assert b_again.error_code == Errors.NONE and b_again.member_epoch == 2


def test_the_records_on_disk_are_kafkas(tmp_path):
    """What a dump of ``__consumer_offsets`` shows after a member joins: group metadata (3), partition
    metadata (4), member metadata (5), target assignment metadata (6) and member (7), current
    assignment (8), each decodable with Kafka's layouts."""

    async def scenario(env: Env):
        await env.join("a")
        offsets = env.node.consumer_offsets
        partition = offsets.partition_for("cg")
        return [(s.key, s.value) for s in offsets.read(partition)]

    stored = run(tmp_path, scenario)
    versions = [struct.unpack(">h", k[:2])[0] for k, _ in stored]
    assert versions == [5, 4, 3, 7, 6, 8]
    decoded = [cr.decode(k, v) for k, v in stored]
    assert decoded[2] == cr.GroupEpoch("cg", 1)
    assert decoded[5].value.member_epoch == 1 and decoded[5].value.state == MemberState.STABLE
    # and read with nothing of the broker's: the classes generated from Kafka's own definitions
    # (GroupCoordinatorRecordSerde: key = record type + key layout, value = version + value layout)
    from kconform.codecs import coordinator_records as kafka

    for key, value in stored:
        record_type = struct.unpack(">h", key[:2])[0]
        key_name, value_name = kafka.RECORD_TYPES["__consumer_offsets"][record_type]
        parsed_key = getattr(kafka, key_name).decode(key[2:], record_type)
        assert parsed_key.group_id == "cg"
        value_version = struct.unpack(">h", value[:2])[0]
        parsed = getattr(kafka, value_name).decode(value[2:], value_version)
        if value_name == "ConsumerGroupMetadataValue":
            assert parsed.epoch == 1
        if value_name == "ConsumerGroupCurrentMemberAssignmentValue":
            assert (parsed.member_epoch, parsed.state) == (1, MemberState.STABLE)
            assert [p.partitions for p in parsed.assigned_partitions] != []
