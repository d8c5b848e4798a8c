"""KIP-848 consumer groups through the wire, joining and heartbeating: ConsumerGroupHeartbeat and
ConsumerGroupDescribe rules for a member's join, invalid requests, unknown groups and assignors, member
epochs, revocation before reassignment, when the assignment is sent, and static membership. One test
per Kafka rule, each naming the Kafka method that decides it.
"""

from __future__ import annotations

import dataclasses

import pytest

from kconform.codecs.errors import Errors
from kconform.codecs.messages import (
    JoinGroupRequest,
    ListGroupsRequest,
    OffsetFetchRequest,
)

from ..support.consumer_groups_wire import (
    JOIN,
    LIST_GROUPS,
    OFFSET_FETCH,
    Env,
    owned,
    parts,
    run,
)


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


def test_a_classic_group_mid_rebalance_is_group_id_not_found_but_an_empty_one_gives_way(tmp_path):
    """``getOrMaybeCreateConsumerGroup``: a classic group with members is upgraded only if its members'
    assignments and subscriptions read as the consumer protocol (``convertToConsumerGroup``); one that
    has not synced yet has no assignment, so it stays classic: GROUP_ID_NOT_FOUND. An empty one
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
