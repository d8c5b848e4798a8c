"""KIP-848 consumer groups through the wire, over a group's life: leaving, a full group, new topics and
partitions, regex subscriptions, ConsumerGroupDescribe of odd ids, the offset APIs' member-epoch checks,
session and rebalance timeouts, and reload after a restart with Kafka's records on disk. One test per
Kafka rule, each naming the Kafka method that decides it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import struct

from kconform.codecs.errors import Errors
from kconform.codecs.messages import (
    AddOffsetsToTxnRequest,
    DeleteGroupsRequest,
    InitProducerIdRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
    TxnOffsetCommitRequest,
)
from kconform.reference_broker.groups import kip848_log_records as cr
from kconform.reference_broker.groups.kip848_group import (
    MemberState,
)

from ..support.consumer_groups_wire import (
    DELETE_GROUPS,
    OFFSET_DELETE,
    OFFSET_FETCH,
    TXN_OFFSET_COMMIT,
    Env,
    owned,
    parts,
    run,
)
from ..support.coordinators import find_coordinator

INIT_PRODUCER_ID, ADD_OFFSETS_TO_TXN = 22, 25


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
        await find_coordinator(env.client, "tx")
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
