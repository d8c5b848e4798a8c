"""Kafka's group offset and group admin rules, one test per rule, against a reference broker node in this
process: OffsetCommit, OffsetFetch and OffsetDelete (with v10's topic ids, KIP-848), DeleteGroups,
ListGroups and DescribeGroups (with v6, KIP-1043).

Each test names where Apache Kafka 4.0 decides (GroupMetadataManager, ClassicGroup, OffsetMetadataManager
in the group-coordinator module, or KafkaApis); the broker must answer with the same error code."""

from __future__ import annotations

import uuid

from kconform.codecs.errors import Errors
from kconform.codecs.messages import (
    DeleteGroupsRequest,
    DeleteTopicsRequest,
    DescribeGroupsRequest,
    ListGroupsRequest,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
)

from ..support.group_rules_cluster import (
    DELETE_GROUPS,
    DESCRIBE,
    LIST,
    OFFSET_COMMIT,
    OFFSET_DELETE,
    OFFSET_FETCH,
    Cluster,
    run,
    stable_group,
)

ZERO = uuid.UUID(int=0)


DELETE_TOPICS = 20


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
    from kconform.reference_broker.groups.classic_log_records import (
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
