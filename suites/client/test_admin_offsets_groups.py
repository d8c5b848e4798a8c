"""Our admin client against a reference broker process: ListOffsets for every spec, DeleteRecords,
classic and consumer-protocol groups listed, described and their offsets, and DescribeCluster."""

from __future__ import annotations

import time

from kconform.codecs.errors import Errors
from kconform.codecs.messages import (
    ConsumerProtocolAssignment,
)
from kconform.harness.client.admin import (
    Admin,
    IsolationLevel,
    OffsetAndMetadata,
    OffsetSpec,
    decode_consumer_assignment,
)

from ..support.admin_client import _code, _name, admin_run, join_group, produce

# ---- offsets and records ---------------------------------------------------------------------------


def test_list_offsets_every_spec(bootstrap, topic):
    base = int(time.time() * 1000) - 60_000
    stamps = [base + 1000, base + 5000, base + 3000, base + 2000]
    produce(bootstrap, topic, 0, stamps)
    p0, p1 = (topic, 0), (topic, 1)

    async def body(admin: Admin):
        first = await admin.list_offsets(
            {p0: OffsetSpec.earliest(), p1: OffsetSpec.latest(), (topic, 7): OffsetSpec.latest()}
        )
        specs = {
            "latest": OffsetSpec.latest(),
            "max": OffsetSpec.max_timestamp(),
            "at-2500": OffsetSpec.for_timestamp(base + 2500),
            "at-start": OffsetSpec.for_timestamp(0),
            "after-all": OffsetSpec.for_timestamp(base + 9000),
        }
        one_by_one = {k: (await admin.list_offsets({p0: s}, raise_errors=True))[p0] for k, s in specs.items()}
        committed = await admin.list_offsets(
            {p0: OffsetSpec.latest()}, isolation_level=IsolationLevel.READ_COMMITTED
        )
        return first, one_by_one, committed

    first, found, committed = admin_run(bootstrap, body)
    assert first[p0].offset == 0
    assert first[p1].offset == 0  # nothing produced there
    assert _code(first[(topic, 7)]) == Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert found["latest"].offset == 4
    assert (found["max"].offset, found["max"].timestamp) == (1, base + 5000)
    assert (found["at-2500"].offset, found["at-2500"].timestamp) == (1, base + 5000)
    assert (found["at-start"].offset, found["at-start"].timestamp) == (0, base + 1000)
    assert found["after-all"].offset == -1
    assert found["latest"].leader_epoch == 0
    assert committed[p0].offset == 4  # no transactions: the last stable offset is the high watermark


def test_list_offsets_of_an_unknown_topic_fails_at_once(bootstrap):
    missing = (_name("missing"), 0)

    async def body(admin: Admin):
        started = time.monotonic()
        result = await admin.list_offsets({missing: OffsetSpec.latest()})
        return result, time.monotonic() - started

    result, elapsed = admin_run(bootstrap, body)
    assert _code(result[missing]) == Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert elapsed < 2  # not retried until the timeout, as Java's PartitionLeaderStrategy


def test_delete_records_moves_the_earliest_offset(bootstrap, topic):
    produce(bootstrap, topic, 0, [1_000_000 + i for i in range(5)])
    produce(bootstrap, topic, 1, [1_000_000 + i for i in range(3)])
    p0, p1, p2 = (topic, 0), (topic, 1), (topic, 2)

    async def body(admin: Admin):
        deleted = await admin.delete_records({p0: 2, p1: -1, p2: 10})
        earliest = await admin.list_offsets({p: OffsetSpec.earliest() for p in (p0, p1, p2)})
        return deleted, earliest

    deleted, earliest = admin_run(bootstrap, body)
    assert deleted[p0] == 2 and deleted[p1] == 3  # -1: up to the high watermark
    assert _code(deleted[p2]) == Errors.OFFSET_OUT_OF_RANGE  # beyond the high watermark of 0
    assert (earliest[p0].offset, earliest[p1].offset, earliest[p2].offset) == (2, 3, 0)


# ---- groups ----------------------------------------------------------------------------------------


def test_classic_group_listed_described_and_offsets(bootstrap, topic):
    group = _name("classic")
    consumer = join_group(bootstrap, group, topic, 3, "classic")
    try:

        async def body(admin: Admin):
            return (
                await admin.list_groups(),
                await admin.list_groups(states=["Empty"]),
                await admin.list_groups(types=["classic"], states=["Stable"]),
                await admin.describe_groups([group]),
                await admin.describe_consumer_groups([group]),
                await admin.list_consumer_group_offsets(group),
                await admin.list_consumer_group_offsets(group, [(topic, 0), (topic, 2)]),
            )

        listed, empty, stable, described, as_consumer, offsets, some = admin_run(bootstrap, body)
        client_id = consumer.memberid()
    finally:
        consumer.close()

    listing = next(g for g in listed if g.group_id == group)
    assert (listing.protocol_type, listing.state, listing.type) == ("consumer", "Stable", "classic")
    assert group not in {g.group_id for g in empty}
    assert group in {g.group_id for g in stable}

    description = described[group]
    assert (description.type, description.state, description.protocol_type) == (
        "classic",
        "Stable",
        "consumer",
    )
    assert description.protocol == "range"  # librdkafka's first default assignor
    assert description.coordinator == 1
    (member,) = description.members
    assert member.member_id == client_id
    assert member.assignment == [(topic, 0), (topic, 1), (topic, 2)]
    assert member.subscribed_topics == [topic]
    assert _code(as_consumer[group]) == Errors.GROUP_ID_NOT_FOUND  # a classic group is not a consumer group

    assert offsets == {(topic, 0): OffsetAndMetadata(1, offsets[(topic, 0)].leader_epoch, "")}
    assert some[(topic, 0)].offset == 1 and some[(topic, 2)] is None


def test_consumer_protocol_group_listed_described_and_offsets(bootstrap, topic):
    group = _name("kip848")
    consumer = join_group(bootstrap, group, topic, 3, "consumer")
    try:

        async def body(admin: Admin):
            return (
                await admin.list_groups(types=["consumer"]),
                await admin.describe_groups([group]),
                await admin.describe_consumer_groups([group]),
                await admin.list_consumer_group_offsets(group),
            )

        listed, described, direct, offsets = admin_run(bootstrap, body)
    finally:
        consumer.close()

    listing = next(g for g in listed if g.group_id == group)
    assert (listing.type, listing.protocol_type) == ("consumer", "consumer")
    for description in (described[group], direct[group]):
        assert description.type == "consumer" and description.state == "Stable"
        assert description.protocol in ("uniform", "range")
        assert description.group_epoch >= 1 and description.assignment_epoch == description.group_epoch
        (member,) = description.members
        assert member.subscribed_topics == [topic]
        assert member.assignment == [(topic, 0), (topic, 1), (topic, 2)]
        assert member.target_assignment == member.assignment
        assert member.member_epoch == description.group_epoch
    assert offsets[(topic, 0)].offset == 1


def test_unknown_group(bootstrap):
    group = _name("nobody")

    async def body(admin: Admin):
        conn = await admin.network.any_connection()
        return (
            await admin.describe_groups([group]),
            await admin.describe_consumer_groups([group]),
            await admin.list_consumer_group_offsets(group),
            conn.version_for(15),
        )

    described, as_consumer, offsets, describe_version = admin_run(bootstrap, body)
    if describe_version >= 6:
        # GroupMetadataManager.describeGroups: GROUP_ID_NOT_FOUND from DescribeGroups v6 (KIP-1043), which
        # Java's admin reports as GroupIdNotFoundException (DescribeConsumerGroupsHandler.handleError)
        assert _code(described[group]) == Errors.GROUP_ID_NOT_FOUND
    else:
        assert described[group].state == "Dead" and described[group].members == []
    assert _code(as_consumer[group]) == Errors.GROUP_ID_NOT_FOUND
    assert offsets == {}


def test_consumer_protocol_bytes_decode():
    assignment = ConsumerProtocolAssignment(
        assigned_partitions=[ConsumerProtocolAssignment.TopicPartition(topic="a", partitions=[2, 0])]
    )
    data = (3).to_bytes(2, "big") + assignment.encode(3)
    assert decode_consumer_assignment(data) == [("a", 0), ("a", 2)]
    # a newer version than the codecs know is read as the newest they know (Java's ConsumerProtocol)
    assert decode_consumer_assignment((9).to_bytes(2, "big") + assignment.encode(3)) == [("a", 0), ("a", 2)]
    assert decode_consumer_assignment(b"") == []


# ---- cluster ---------------------------------------------------------------------------------------


def test_describe_cluster(bootstrap, broker):
    async def body(admin: Admin):
        return await admin.describe_cluster(), admin.network.metadata.cluster_id

    cluster, metadata_cluster_id = admin_run(bootstrap, body)
    assert cluster.cluster_id == metadata_cluster_id and cluster.cluster_id
    assert cluster.controller_id == 1
    assert list(cluster.brokers) == [1]
    assert cluster.brokers[1].port == broker.port
