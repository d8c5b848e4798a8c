"""Kafka's group coordinator rules, one test per rule, against a reference broker node in this process.

Each test names where Apache Kafka 4.0 decides (GroupMetadataManager, ClassicGroup, OffsetMetadataManager
in the group-coordinator module, or KafkaApis); the broker must answer with the same error code."""

from __future__ import annotations

import asyncio
import struct
import uuid
from dataclasses import dataclass

from kconform.codecs.errors import Errors
from kconform.codecs.messages import (
    ConsumerProtocolSubscription,
    CreateTopicsRequest,
    DeleteGroupsRequest,
    DeleteTopicsRequest,
    DescribeGroupsRequest,
    FindCoordinatorRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    ListGroupsRequest,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)
from kconform.codecs.releases import kafka_release
from kconform.reference_broker.node import BrokerNode

from ..support.rawclient import RawClient

ZERO = uuid.UUID(int=0)
DELETE_TOPICS = 20

FIND_COORDINATOR, JOIN, HEARTBEAT, LEAVE, SYNC, DESCRIBE, LIST = 10, 11, 12, 13, 14, 15, 16
OFFSET_COMMIT, OFFSET_FETCH, DELETE_GROUPS, OFFSET_DELETE, CREATE_TOPICS = 8, 9, 42, 47, 19
FAST = {
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "100",
    "offsets.topic.num.partitions": "5",
}


def subscription(*topics: str) -> bytes:
    return struct.pack(">h", 1) + ConsumerProtocolSubscription(topics=list(topics)).encode(1)


@dataclass
class Cluster:
    node: BrokerNode
    host: str
    port: int
    client: RawClient

    async def connect(self) -> RawClient:
        return await RawClient.connect(self.host, self.port)

    async def create_topic(self, name: str, partitions: int = 1) -> None:
        topic = CreateTopicsRequest.CreatableTopic(name=name, num_partitions=partitions, replication_factor=1)
        body = await self.client.call(CREATE_TOPICS, 7, CreateTopicsRequest(topics=[topic], timeout_ms=5000))
        assert body.topics[0].error_code == Errors.NONE

    async def join(
        self,
        group: str,
        member_id: str = "",
        *,
        client: RawClient | None = None,
        version: int = 9,
        instance_id: str | None = None,
        protocol_type: str = "consumer",
        protocols: tuple[str, ...] = ("range",),
        session_timeout_ms: int = 10_000,
        rebalance_timeout_ms: int = 2_000,
        topics: tuple[str, ...] = ("t",),
    ):
        request = JoinGroupRequest(
            group_id=group,
            session_timeout_ms=session_timeout_ms,
            rebalance_timeout_ms=rebalance_timeout_ms,
            member_id=member_id,
            group_instance_id=instance_id,
            protocol_type=protocol_type,
            protocols=[
                JoinGroupRequest.JoinGroupRequestProtocol(name=p, metadata=subscription(*topics))
                for p in protocols
            ],
        )
        return await (client or self.client).call(JOIN, version, request, timeout=15)

    async def join_member(self, group: str, **kwargs):
        """A full join (MEMBER_ID_REQUIRED, then again with the id) on a new connection of its own."""
        client = await self.connect()
        first = await self.join(group, client=client, **kwargs)
        assert first.error_code == Errors.MEMBER_ID_REQUIRED, first
        return client, first.member_id

    async def sync(
        self, group, generation, member_id, assignments=(), *, client=None, version=5, name="range"
    ):
        request = SyncGroupRequest(
            group_id=group,
            generation_id=generation,
            member_id=member_id,
            protocol_type="consumer",
            protocol_name=name,
            assignments=[
                SyncGroupRequest.SyncGroupRequestAssignment(member_id=m, assignment=a) for m, a in assignments
            ],
        )
        return await (client or self.client).call(SYNC, version, request, timeout=15)

    async def heartbeat(self, group, generation, member_id, instance_id=None, client=None):
        request = HeartbeatRequest(
            group_id=group, generation_id=generation, member_id=member_id, group_instance_id=instance_id
        )
        return (await (client or self.client).call(HEARTBEAT, 4, request)).error_code

    async def describe(self, group):
        body = await self.client.call(DESCRIBE, 5, DescribeGroupsRequest(groups=[group]))
        return body.groups[0]

    async def commit(self, group, offsets, *, generation=-1, member_id="", version=9, metadata="", topic="t"):
        request = OffsetCommitRequest(
            group_id=group,
            generation_id_or_member_epoch=generation,
            member_id=member_id,
            topics=[
                OffsetCommitRequest.OffsetCommitRequestTopic(
                    name=topic,
                    partitions=[
                        OffsetCommitRequest.OffsetCommitRequestPartition(
                            partition_index=p, committed_offset=o, committed_metadata=metadata
                        )
                        for p, o in offsets.items()
                    ],
                )
            ],
        )
        body = await self.client.call(OFFSET_COMMIT, version, request)
        return {p.partition_index: p.error_code for p in body.topics[0].partitions}

    async def fetch_offsets(self, group, partitions, *, topic="t", require_stable=False):
        request = OffsetFetchRequest(
            groups=[
                OffsetFetchRequest.OffsetFetchRequestGroup(
                    group_id=group,
                    topics=[
                        OffsetFetchRequest.OffsetFetchRequestTopics(
                            name=topic, partition_indexes=list(partitions)
                        )
                    ],
                )
            ],
            require_stable=require_stable,
        )
        body = await self.client.call(OFFSET_FETCH, 8, request)
        return {
            p.partition_index: (p.committed_offset, p.error_code)
            for t in body.groups[0].topics
            for p in t.partitions
        }


def run(tmp_path, scenario, *, kafka_version: str | None = None, **overrides: str):
    async def main():
        props = {"node.id": "1", "log.dirs": str(tmp_path / "data"), **FAST}
        props.update(overrides)
        release = kafka_release(kafka_version) if kafka_version else None
        node = BrokerNode.from_config_file(None, props, kafka_release=release)
        host, port = await node.start("127.0.0.1", 0)
        client = await RawClient.connect(host, port)
        try:
            cluster = Cluster(node, host, port, client)
            await cluster.create_topic("t", 2)
            return await scenario(cluster)
        finally:
            await client.close()
            await node.stop()

    return asyncio.run(asyncio.wait_for(main(), 60))


async def stable_group(c: Cluster, group: str, members: int = 1, **kwargs):
    """``members`` members joined and synced: [(client, member id)], generation, leader."""
    joined = [await c.join_member(group, **kwargs) for _ in range(members)]
    answers = await asyncio.gather(*(c.join(group, m, client=cl, **kwargs) for cl, m in joined))
    assert all(a.error_code == Errors.NONE for a in answers), answers
    generation, leader = answers[0].generation_id, answers[0].leader
    plan = [(m, f"assignment-{m}".encode()) for _, m in joined]
    syncs = await asyncio.gather(
        *(c.sync(group, generation, m, plan if m == leader else (), client=cl) for cl, m in joined)
    )
    assert all(s.error_code == Errors.NONE for s in syncs), syncs
    return joined, generation, leader


# ---- FindCoordinator (KafkaApis.getCoordinator) ----------------------------------------------------


def test_find_coordinator_creates_the_offsets_topic_and_answers_not_available_first(tmp_path):
    async def scenario(c: Cluster):
        first = await c.client.call(FIND_COORDINATOR, 3, FindCoordinatorRequest(key="g", key_type=0))
        second = await c.client.call(FIND_COORDINATOR, 3, FindCoordinatorRequest(key="g", key_type=0))
        return first, second

    first, second = run(tmp_path, scenario)
    assert (first.error_code, first.node_id) == (Errors.COORDINATOR_NOT_AVAILABLE, -1)
    assert (second.error_code, second.node_id) == (Errors.NONE, 1)


def test_find_coordinator_batched_keys_and_key_types(tmp_path):
    async def scenario(c: Cluster):
        await c.client.call(FIND_COORDINATOR, 4, FindCoordinatorRequest(key_type=1, coordinator_keys=["x"]))
        txn = await c.client.call(
            FIND_COORDINATOR, 4, FindCoordinatorRequest(key_type=1, coordinator_keys=["x", "y"])
        )
        share = await c.client.call(
            FIND_COORDINATOR, 6, FindCoordinatorRequest(key_type=2, coordinator_keys=["s"])
        )
        bad = await c.client.call(
            FIND_COORDINATOR, 4, FindCoordinatorRequest(key_type=7, coordinator_keys=["z"])
        )
        return txn, share, bad

    txn, share, bad = run(tmp_path, scenario)
    assert [(k.key, k.error_code, k.node_id) for k in txn.coordinators] == [("x", 0, 1), ("y", 0, 1)]
    assert share.coordinators[0].error_code == Errors.INVALID_REQUEST  # share groups are off by default
    assert bad.coordinators[0].error_code == Errors.INVALID_REQUEST  # CoordinatorType.forId throws


# ---- JoinGroup (GroupMetadataManager.classicGroupJoin) -----------------------------------------------


def test_join_requires_a_member_id_from_v4_then_elects_the_member_leader(tmp_path):
    async def scenario(c: Cluster):
        first = await c.join("g")
        second = await c.join("g", first.member_id)
        return first, second

    first, second = run(tmp_path, scenario)
    assert first.error_code == Errors.MEMBER_ID_REQUIRED and first.member_id
    assert second.error_code == Errors.NONE
    assert (second.generation_id, second.leader, second.member_id) == (1, first.member_id, first.member_id)
    assert [m.member_id for m in second.members] == [first.member_id]
    assert second.protocol_name == "range"


def test_join_before_v4_gets_an_id_and_joins_at_once(tmp_path):
    async def scenario(c: Cluster):
        return await c.join("g", version=3)

    answer = run(tmp_path, scenario)
    assert answer.error_code == Errors.NONE and answer.member_id and answer.generation_id == 1


def test_join_with_an_empty_group_id_is_invalid_group_id(tmp_path):
    async def scenario(c: Cluster):
        return (await c.join("")).error_code

    assert run(tmp_path, scenario) == Errors.INVALID_GROUP_ID


def test_join_with_a_session_timeout_outside_the_bounds_is_invalid_session_timeout(tmp_path):
    async def scenario(c: Cluster):
        low = await c.join("g", session_timeout_ms=50)
        high = await c.join("g", session_timeout_ms=1_800_001)
        return low.error_code, high.error_code

    assert run(tmp_path, scenario) == (Errors.INVALID_SESSION_TIMEOUT, Errors.INVALID_SESSION_TIMEOUT)


def test_join_of_an_unknown_group_with_a_member_id_is_unknown_member_id(tmp_path):
    async def scenario(c: Cluster):
        return (await c.join("nobody", "made-up-id")).error_code

    assert run(tmp_path, scenario) == Errors.UNKNOWN_MEMBER_ID


def test_join_with_another_protocol_type_is_inconsistent_group_protocol(tmp_path):
    async def scenario(c: Cluster):
        await stable_group(c, "g")
        other = await c.join("g", protocol_type="connect")
        disjoint = await c.join("g", protocols=("roundrobin",))
        return other.error_code, disjoint.error_code

    assert run(tmp_path, scenario) == (Errors.INCONSISTENT_GROUP_PROTOCOL, Errors.INCONSISTENT_GROUP_PROTOCOL)


def test_join_past_group_max_size_is_group_max_size_reached(tmp_path):
    async def scenario(c: Cluster):
        await stable_group(c, "g")
        return (await c.join("g")).error_code

    assert run(tmp_path, scenario, **{"group.max.size": "1"}) == Errors.GROUP_MAX_SIZE_REACHED


def test_protocol_selection_takes_the_one_most_members_prefer(tmp_path):
    async def scenario(c: Cluster):
        a = await c.join_member("g", protocols=("range", "roundrobin"))
        b = await c.join_member("g", protocols=("roundrobin", "range"))
        d = await c.join_member("g", protocols=("roundrobin",))
        answers = await asyncio.gather(
            c.join("g", a[1], client=a[0], protocols=("range", "roundrobin")),
            c.join("g", b[1], client=b[0], protocols=("roundrobin", "range")),
            c.join("g", d[1], client=d[0], protocols=("roundrobin",)),
        )
        return {x.protocol_name for x in answers}

    assert run(tmp_path, scenario) == {"roundrobin"}


def test_static_member_rejoining_fences_its_old_member_id(tmp_path):
    async def scenario(c: Cluster):
        first = await c.join("g", instance_id="i-1")  # static members join at once, no MEMBER_ID_REQUIRED
        old_id, generation = first.member_id, first.generation_id
        synced = await c.sync("g", generation, old_id, [(old_id, b"a")])
        assert synced.error_code == Errors.NONE
        again = await c.join("g", instance_id="i-1")  # a restarted static member: no member id
        stale = await c.heartbeat("g", generation, old_id, instance_id="i-1")
        return again, old_id, generation, stale

    again, old_id, generation, stale = run(tmp_path, scenario)
    assert again.error_code == Errors.NONE and again.member_id != old_id
    assert again.generation_id == generation  # unchanged metadata: no rebalance for a static rejoin
    assert stale == Errors.FENCED_INSTANCE_ID


# ---- SyncGroup (GroupMetadataManager.classicGroupSync) -----------------------------------------------


def test_sync_hands_the_leaders_assignment_to_every_member(tmp_path):
    async def scenario(c: Cluster):
        joined, generation, leader = await stable_group(c, "g", members=2)
        follower = next(m for _, m in joined if m != leader)
        again = await c.sync("g", generation, follower)  # a Stable group answers with the stored assignment
        return again, follower

    again, follower = run(tmp_path, scenario)
    assert again.error_code == Errors.NONE and again.assignment == f"assignment-{follower}".encode()


def test_sync_rules_generation_member_and_protocol(tmp_path):
    async def scenario(c: Cluster):
        joined, generation, leader = await stable_group(c, "g")
        wrong_generation = await c.sync("g", generation + 1, leader)
        unknown = await c.sync("g", generation, "nobody")
        wrong_name = await c.sync("g", generation, leader, name="roundrobin")
        no_group = await c.sync("missing", 1, "x")
        return [x.error_code for x in (wrong_generation, unknown, wrong_name, no_group)]

    assert run(tmp_path, scenario) == [
        Errors.ILLEGAL_GENERATION,
        Errors.UNKNOWN_MEMBER_ID,
        Errors.INCONSISTENT_GROUP_PROTOCOL,
        Errors.UNKNOWN_MEMBER_ID,
    ]


def test_sync_while_preparing_a_rebalance_is_rebalance_in_progress(tmp_path):
    async def scenario(c: Cluster):
        joined, generation, leader = await stable_group(c, "g")
        newcomer = await c.join_member("g")
        pending = asyncio.ensure_future(c.join("g", newcomer[1], client=newcomer[0]))  # waits for the leader
        await asyncio.sleep(0.2)
        answer = await c.sync("g", generation, leader, client=joined[0][0])
        heartbeat = await c.heartbeat("g", generation, leader)
        pending.cancel()
        return answer.error_code, heartbeat

    assert run(tmp_path, scenario) == (Errors.REBALANCE_IN_PROGRESS, Errors.REBALANCE_IN_PROGRESS)


# ---- Heartbeat, sessions, LeaveGroup --------------------------------------------------------------


def test_heartbeat_rules(tmp_path):
    async def scenario(c: Cluster):
        joined, generation, leader = await stable_group(c, "g")
        ok = await c.heartbeat("g", generation, leader)
        stale = await c.heartbeat("g", generation - 1, leader)
        unknown = await c.heartbeat("g", generation, "nobody")
        no_group = await c.heartbeat("missing", 1, "x")
        return ok, stale, unknown, no_group

    assert run(tmp_path, scenario) == (
        Errors.NONE,
        Errors.ILLEGAL_GENERATION,
        Errors.UNKNOWN_MEMBER_ID,
        Errors.UNKNOWN_MEMBER_ID,
    )


def test_a_member_that_stops_heartbeating_is_expired_and_the_group_empties(tmp_path):
    async def scenario(c: Cluster):
        await stable_group(c, "g", session_timeout_ms=300)
        before = (await c.describe("g")).group_state
        await asyncio.sleep(1.0)
        after = await c.describe("g")
        return before, after.group_state, after.members

    before, after, members = run(tmp_path, scenario)
    assert (before, after, members) == ("Stable", "Empty", [])


def test_leave_group_batch_answers_each_member(tmp_path):
    async def scenario(c: Cluster):
        joined, generation, leader = await stable_group(c, "g")
        request = LeaveGroupRequest(
            group_id="g",
            members=[
                LeaveGroupRequest.MemberIdentity(member_id=leader),
                LeaveGroupRequest.MemberIdentity(member_id="nobody"),
            ],
        )
        body = await c.client.call(LEAVE, 5, request)
        return body, (await c.describe("g")).group_state

    body, state = run(tmp_path, scenario)
    assert body.error_code == Errors.NONE
    assert [m.error_code for m in body.members] == [Errors.NONE, Errors.UNKNOWN_MEMBER_ID]
    assert state == "Empty"


# ---- offsets (OffsetMetadataManager) ---------------------------------------------------------------


def test_simple_commit_and_fetch_without_group_membership(tmp_path):
    async def scenario(c: Cluster):
        committed = await c.commit("simple", {0: 42, 1: 7}, metadata="m")
        fetched = await c.fetch_offsets("simple", [0, 1])
        listed = await c.client.call(LIST, 4, ListGroupsRequest(states_filter=[]))
        return committed, fetched, [(g.group_id, g.group_state) for g in listed.groups]

    committed, fetched, listed = run(tmp_path, scenario)
    assert committed == {0: Errors.NONE, 1: Errors.NONE}
    assert fetched == {0: (42, Errors.NONE), 1: (7, Errors.NONE)}
    assert ("simple", "Empty") in listed


def test_commit_for_an_unknown_group_with_a_generation(tmp_path):
    """GROUP_ID_NOT_FOUND from OffsetCommit v9, ILLEGAL_GENERATION before (validateOffsetCommit)."""

    async def scenario(c: Cluster):
        v9 = await c.commit("nobody", {0: 1}, generation=3, member_id="m", version=9)
        v8 = await c.commit("nobody", {0: 1}, generation=3, member_id="m", version=8)
        return v9[0], v8[0]

    assert run(tmp_path, scenario) == (Errors.GROUP_ID_NOT_FOUND, Errors.ILLEGAL_GENERATION)


def test_commit_rules_for_a_member(tmp_path):
    async def scenario(c: Cluster):
        joined, generation, leader = await stable_group(c, "g")
        ok = await c.commit("g", {0: 5}, generation=generation, member_id=leader)
        stale = await c.commit("g", {0: 5}, generation=generation + 1, member_id=leader)
        stranger = await c.commit("g", {0: 5}, generation=generation, member_id="nobody")
        outsider = await c.commit("g", {0: 5})  # generation -1 on a group with members
        return ok[0], stale[0], stranger[0], outsider[0]

    assert run(tmp_path, scenario) == (
        Errors.NONE,
        Errors.ILLEGAL_GENERATION,
        Errors.UNKNOWN_MEMBER_ID,
        Errors.UNKNOWN_MEMBER_ID,
    )


def test_commit_during_completing_rebalance_is_rebalance_in_progress(tmp_path):
    async def scenario(c: Cluster):
        client, member = await c.join_member("g")
        joined = await c.join("g", member, client=client)  # CompletingRebalance until the leader syncs
        return (await c.commit("g", {0: 1}, generation=joined.generation_id, member_id=member))[0]

    assert run(tmp_path, scenario) == Errors.REBALANCE_IN_PROGRESS


def test_commit_to_an_unknown_topic_and_with_too_much_metadata(tmp_path):
    async def scenario(c: Cluster):
        unknown = await c.commit("g", {0: 1}, topic="no-such-topic")
        too_big = await c.commit("g", {0: 1}, metadata="x" * 5000)
        return unknown[0], too_big[0]

    assert run(tmp_path, scenario) == (Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.OFFSET_METADATA_TOO_LARGE)


def test_commit_to_a_partition_the_topic_lacks_is_answered_before_the_group_rules(tmp_path):
    """KafkaApis.handleOffsetCommitRequest: partitions metadataCache.getPartitionInfo does not know get
    UNKNOWN_TOPIC_OR_PARTITION, and only the rest reach the coordinator (found by the differential
    campaign against librdkafka's mock, which does the same)."""

    async def scenario(c: Cluster):
        simple = await c.commit("g", {0: 1, 5: 1})  # topic t has partitions 0 and 1
        member = await c.commit("g2", {1: 1, 9: 1}, generation=3, member_id="nobody")
        return simple, member

    simple, member = run(tmp_path, scenario)
    assert simple == {0: Errors.NONE, 5: Errors.UNKNOWN_TOPIC_OR_PARTITION}
    assert member == {1: Errors.GROUP_ID_NOT_FOUND, 9: Errors.UNKNOWN_TOPIC_OR_PARTITION}  # v9


def test_fetch_of_an_unknown_group_gives_no_offset(tmp_path):
    async def scenario(c: Cluster):
        return await c.fetch_offsets("nobody", [0])

    assert run(tmp_path, scenario) == {0: (-1, Errors.NONE)}


def test_offset_delete_refuses_topics_an_active_group_subscribes_to(tmp_path):
    async def scenario(c: Cluster):
        joined, generation, leader = await stable_group(c, "g", topics=("t",))
        await c.commit("g", {0: 3}, generation=generation, member_id=leader)
        request = OffsetDeleteRequest(
            group_id="g",
            topics=[
                OffsetDeleteRequest.OffsetDeleteRequestTopic(
                    name="t", partitions=[OffsetDeleteRequest.OffsetDeleteRequestPartition(partition_index=0)]
                )
            ],
        )
        body = await c.client.call(OFFSET_DELETE, 0, request)
        missing = await c.client.call(OFFSET_DELETE, 0, OffsetDeleteRequest(group_id="nobody", topics=[]))
        return body.topics[0].partitions[0].error_code, missing.error_code

    assert run(tmp_path, scenario) == (Errors.GROUP_SUBSCRIBED_TO_TOPIC, Errors.GROUP_ID_NOT_FOUND)


# ---- DeleteGroups, ListGroups, DescribeGroups -------------------------------------------------------


def test_delete_groups_rules_and_deleted_offsets_are_gone(tmp_path):
    async def scenario(c: Cluster):
        await stable_group(c, "busy")
        await c.commit("idle", {0: 9})
        body = await c.client.call(
            DELETE_GROUPS, 2, DeleteGroupsRequest(groups_names=["busy", "idle", "nobody"])
        )
        after = await c.fetch_offsets("idle", [0])
        return {r.group_id: r.error_code for r in body.results}, after

    results, after = run(tmp_path, scenario)
    assert results == {
        "busy": Errors.NON_EMPTY_GROUP,
        "idle": Errors.NONE,
        "nobody": Errors.GROUP_ID_NOT_FOUND,
    }
    assert after == {0: (-1, Errors.NONE)}


def test_list_groups_filters_by_state_case_insensitively(tmp_path):
    async def scenario(c: Cluster):
        await stable_group(c, "active")
        await c.commit("idle", {0: 1})
        stable = await c.client.call(LIST, 4, ListGroupsRequest(states_filter=["stable"]))
        empty = await c.client.call(
            LIST, 5, ListGroupsRequest(states_filter=["Empty"], types_filter=["classic"])
        )
        return [g.group_id for g in stable.groups], [g.group_id for g in empty.groups]

    assert run(tmp_path, scenario) == (["active"], ["idle"])


def test_describe_groups_shows_members_and_an_unknown_group_as_dead(tmp_path):
    async def scenario(c: Cluster):
        joined, generation, leader = await stable_group(c, "g")
        return await c.describe("g"), await c.describe("nobody")

    described, unknown = run(tmp_path, scenario)
    assert (described.group_state, described.protocol_type, described.protocol_data) == (
        "Stable",
        "consumer",
        "range",
    )
    assert [m.member_assignment for m in described.members] == [
        f"assignment-{described.members[0].member_id}".encode()
    ]
    assert (unknown.error_code, unknown.group_state) == (Errors.NONE, "Dead")


def test_an_empty_consumer_group_joined_classically_is_erased_from_the_log_first(tmp_path):
    """GroupMetadataManager's downgrade: a classic JoinGroup on an empty consumer group replaces it, and
    the consumer group's records are tombstoned before the classic group's are written."""
    from kconform.codecs.messages import ConsumerGroupHeartbeatRequest

    async def scenario(c: Cluster):
        join = ConsumerGroupHeartbeatRequest(
            group_id="g",
            member_id="m",
            member_epoch=0,
            rebalance_timeout_ms=5000,
            subscribed_topic_names=["t"],
            topic_partitions=[],
        )
        await c.client.call(68, 1, join)
        leave = ConsumerGroupHeartbeatRequest(group_id="g", member_id="m", member_epoch=-1)
        assert (await c.client.call(68, 1, leave)).error_code == Errors.NONE
        joined, generation, leader = await stable_group(c, "g")
        partition = c.node.consumer_offsets.partition_for("g")
        stored = list(c.node.consumer_offsets.read(partition))
        return [(int.from_bytes(s.key[:2], "big"), s.value is None) for s in stored]

    records = run(tmp_path, scenario)
    group_epoch = [i for i, (kind, tombstone) in enumerate(records) if kind == 3]
    classic = [i for i, (kind, _) in enumerate(records) if kind == 2]
    assert group_epoch and records[group_epoch[-1]][1], "the consumer group's epoch record was not tombstoned"
    assert classic and classic[0] > group_epoch[-1]


# ---- OffsetCommit v10 / OffsetFetch v10: topics by id (KIP-848) ---------------------------------------


def _by_id(topic_id, offsets: dict[int, int]):
    return OffsetCommitRequest.OffsetCommitRequestTopic(
        topic_id=topic_id,
        partitions=[
            OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=p, committed_offset=o)
            for p, o in offsets.items()
        ],
    )


def _fetch_by_id(group: str, topics):
    return OffsetFetchRequest(
        groups=[
            OffsetFetchRequest.OffsetFetchRequestGroup(
                group_id=group,
                topics=None
                if topics is None
                else [
                    OffsetFetchRequest.OffsetFetchRequestTopics(topic_id=t, partition_indexes=list(parts))
                    for t, parts in topics
                ],
            )
        ]
    )


def test_offset_commit_v10_names_topics_by_id(tmp_path):
    """KafkaApis.handleOffsetCommitRequest at v10 (OffsetCommitResponse.useTopicIds): each topic's name
    comes from metadataCache.getTopicName; an id no topic has (the zero id too) is UNKNOWN_TOPIC_ID for
    all its partitions, a partition the topic lacks UNKNOWN_TOPIC_OR_PARTITION. The answer names topics
    by id (OffsetCommitResponse.TopicIdBuilder): those errors first, then the coordinator's answer merged
    in, so a topic with an unknown partition gets its committed ones appended to the same entry."""
    unknown_id = uuid.UUID(int=12345)

    async def scenario(c: Cluster):
        t = c.node.topics.get("t").topic_id
        request = OffsetCommitRequest(
            group_id="g",
            topics=[_by_id(t, {0: 5, 7: 1}), _by_id(unknown_id, {0: 1}), _by_id(ZERO, {3: 1})],
        )
        body = await c.client.call(OFFSET_COMMIT, 10, request)
        by_name = await c.fetch_offsets("g", [0, 1])
        return t, body, by_name

    t, body, by_name = run(tmp_path, scenario, kafka_version="4.3")
    answer = [(x.topic_id, [(p.partition_index, p.error_code) for p in x.partitions]) for x in body.topics]
    assert answer == [
        (t, [(7, Errors.UNKNOWN_TOPIC_OR_PARTITION), (0, Errors.NONE)]),
        (unknown_id, [(0, Errors.UNKNOWN_TOPIC_ID)]),
        (ZERO, [(3, Errors.UNKNOWN_TOPIC_ID)]),
    ]
    assert by_name == {0: (5, Errors.NONE), 1: (-1, Errors.NONE)}  # v8, by name: the same offsets


def test_offset_fetch_v10_names_topics_by_id(tmp_path):
    """KafkaApis.fetchOffsetsForGroup at v10: ids are looked up like OffsetCommit's; an unknown one is
    UNKNOWN_TOPIC_ID with offset -1, answered after the coordinator's topics. fetchAllOffsetsForGroup
    (topics null) names each topic by the id the metadata has."""
    unknown_id = uuid.UUID(int=999)

    async def scenario(c: Cluster):
        t = c.node.topics.get("t").topic_id
        await c.commit("g", {0: 11, 1: 12}, metadata="m")
        some = await c.client.call(OFFSET_FETCH, 10, _fetch_by_id("g", [(unknown_id, [0]), (t, [1, 0])]))
        every = await c.client.call(OFFSET_FETCH, 10, _fetch_by_id("g", None))
        return t, some.groups[0], every.groups[0]

    t, some, every = run(tmp_path, scenario, kafka_version="4.3")

    def rows(group):
        return [
            (
                x.topic_id,
                [(p.partition_index, p.committed_offset, p.metadata, p.error_code) for p in x.partitions],
            )
            for x in group.topics
        ]

    assert some.error_code == Errors.NONE
    assert rows(some) == [
        (t, [(1, 12, "m", Errors.NONE), (0, 11, "m", Errors.NONE)]),
        (unknown_id, [(0, -1, "", Errors.UNKNOWN_TOPIC_ID)]),
    ]
    assert rows(every) == [(t, [(0, 11, "m", Errors.NONE), (1, 12, "m", Errors.NONE)])]


def test_offset_fetch_v10_of_a_topic_created_again_finds_no_offset(tmp_path):
    """OffsetCommit v10 keeps the topic id with the offset (KAFKA-19141, OffsetCommitValue.topicId) and
    OffsetMetadataManager.fetchOffsets answers -1 when the id asked for is not the one committed
    (isOffsetInvalid, KAFKA-19154): the topic was deleted and created under the same name."""

    async def scenario(c: Cluster):
        old = c.node.topics.get("t").topic_id
        body = await c.client.call(
            OFFSET_COMMIT, 10, OffsetCommitRequest(group_id="g", topics=[_by_id(old, {0: 9})])
        )
        assert body.topics[0].partitions[0].error_code == Errors.NONE
        deleted = await c.client.call(
            DELETE_TOPICS, 6, DeleteTopicsRequest(topics=[DeleteTopicsRequest.DeleteTopicState(name="t")])
        )
        assert deleted.responses[0].error_code == Errors.NONE
        await c.create_topic("t", 2)
        new = c.node.topics.get("t").topic_id
        by_new = await c.client.call(OFFSET_FETCH, 10, _fetch_by_id("g", [(new, [0])]))
        by_old = await c.client.call(OFFSET_FETCH, 10, _fetch_by_id("g", [(old, [0])]))
        return by_new.groups[0].topics[0].partitions[0], by_old.groups[0].topics[0].partitions[0]

    by_new, by_old = run(tmp_path, scenario, kafka_version="4.3")
    assert (by_new.committed_offset, by_new.error_code) == (-1, Errors.NONE)
    assert (by_old.committed_offset, by_old.error_code) == (-1, Errors.UNKNOWN_TOPIC_ID)


def test_offset_commit_value_keeps_the_topic_id_as_kafka_writes_it():
    """GroupCoordinatorRecordHelpers.newOffsetCommitRecord (Kafka 4.1+): value version 4, flexible, the
    topic id in tagged field 0; read back by the loader."""
    from kconform.reference_broker.groups.records import (
        OffsetCommitValue,
        decode_offset_commit_value,
        encode_offset_commit_value,
    )

    topic_id = uuid.UUID("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0")
    value = OffsetCommitValue(5, 3, "meta", 100, -1, topic_id)
    data = encode_offset_commit_value(value)
    assert data[:2] == b"\x00\x04"
    assert data.endswith(b"\x01\x00\x10" + topic_id.bytes)  # one tagged field: tag 0, 16 bytes
    assert decode_offset_commit_value(data) == value
    plain = OffsetCommitValue(5, 3, "meta", 100)
    assert encode_offset_commit_value(plain)[:2] == b"\x00\x03"


# ---- DescribeGroups v6 (KIP-1043) ---------------------------------------------------------------------


def test_describe_groups_v6_answers_an_unknown_group_group_id_not_found(tmp_path):
    """GroupMetadataManager.describeGroups: a group that does not exist is GROUP_ID_NOT_FOUND with the
    GroupIdNotFoundException's message ("Group %s not found.") and state Dead from v6; before, Dead
    without an error (and with its authorized operations, which KafkaApis fills for error-free groups)."""

    async def scenario(c: Cluster):
        request = DescribeGroupsRequest(groups=["nobody"], include_authorized_operations=True)
        return (
            (await c.client.call(DESCRIBE, 6, request)).groups[0],
            (await c.client.call(DESCRIBE, 5, request)).groups[0],
        )

    v6, v5 = run(tmp_path, scenario)
    assert (v6.error_code, v6.error_message, v6.group_state) == (
        Errors.GROUP_ID_NOT_FOUND,
        "Group nobody not found.",
        "Dead",
    )
    assert v6.authorized_operations == -(2**31)
    assert (v5.error_code, v5.group_state) == (Errors.NONE, "Dead") and v5.authorized_operations != -(2**31)
