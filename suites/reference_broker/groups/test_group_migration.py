"""Online migration between classic and consumer groups (KIP-848), through the wire, as
``group.consumer.migration.policy`` (default BIDIRECTIONAL) allows: a ConsumerGroupHeartbeat joining a
classic group with members upgrades it; the last member on the consumer protocol leaving a group whose
other members are classic downgrades it. And what a restart reads back of such groups: the records are
Kafka's (the classic member's metadata in the member record's tagged field 0, the classic group's record
after the consumer group's tombstones). One test per rule, each naming the ``GroupMetadataManager``
method and the ``GroupMetadataManagerTest`` case it follows."""

from __future__ import annotations

import asyncio

import pytest

from kconform.codecs.errors import Errors
from kconform.reference_broker.groups import kip848_log_records as cr
from kconform.reference_broker.groups.classic_log_records import (
    GROUP_METADATA_KEY,
    decode_group_metadata_value,
    key_version,
)

from .mixed_cluster import GROUP, Mixed, assignment, assignment_bytes, run


async def stable_classic_group(m: Mixed, group: str, plans: list[dict[str, list[int]]]):
    """A classic group of ``len(plans)`` members, joined on connections of their own and synced with the
    leader handing member i ``plans[i]``: ([(client, member id)], generation)."""
    clients = [await m.connect() for _ in plans]
    firsts = [await m.classic_join(group=group, client=c) for c in clients]
    answers = await asyncio.gather(
        *(m.classic_join(f.member_id, group=group, client=c) for f, c in zip(firsts, clients, strict=True))
    )
    generation, leader = answers[0].generation_id, answers[0].leader
    plan = [(f.member_id, assignment_bytes(p)) for f, p in zip(firsts, plans, strict=True)]
    syncs = await asyncio.gather(
        *(
            m.sync(group, generation, f.member_id, plan if f.member_id == leader else (), client=c)
            for f, c in zip(firsts, clients, strict=True)
        )
    )
    assert all(s.error_code == Errors.NONE for s in syncs), syncs
    return [(c, f.member_id) for c, f in zip(clients, firsts, strict=True)], generation


async def close(joined) -> None:
    for client, _ in joined:
        await client.close()


def stored(m: Mixed, group: str = GROUP) -> list[tuple[bytes, bytes | None]]:
    offsets = m.node.consumer_offsets
    return [(s.key, s.value) for s in offsets.read(offsets.partition_for(group))]


# ---- upgrade -----------------------------------------------------------------------------------------


def test_a_consumer_heartbeat_upgrades_a_classic_group_with_members(tmp_path):
    """``getOrMaybeCreateConsumerGroup`` -> ``validateOnlineUpgrade`` -> ``convertToConsumerGroup`` /
    ``ConsumerGroup.fromClassicGroup`` (``testConsumerGroupHeartbeatWithStableClassicGroup``): the classic
    member becomes a member of a consumer group, at its generation as member epoch, holding and targeted
    at its last assignment; the joining member bumps the group epoch, so the classic member is told to
    rejoin."""

    async def scenario(m: Mixed):
        joined, generation = await stable_classic_group(m, "g", [{"t": [0, 1]}])
        (_, classic_id) = joined[0]
        beat = await m.beat("a", 0, group="g")
        described = await m.consumer_describe("g")
        rejoin = await m.heartbeat("g", generation, classic_id)
        listed = await m.listed()
        await close(joined)
        return classic_id, generation, beat, described, rejoin, listed

    classic_id, generation, beat, described, rejoin, listed = run(tmp_path, scenario)
    assert (beat.error_code, beat.member_epoch) == (Errors.NONE, generation + 1)
    assert described.group_epoch == generation + 1
    members = {m.member_id: m for m in described.members}
    classic = members[classic_id]
    assert (classic.member_type, classic.member_epoch) == (0, generation)
    assert [sorted(tp.partitions) for tp in classic.assignment.topic_partitions] == [[0, 1]]
    assert members["a"].member_type == 1
    assert rejoin == Errors.REBALANCE_IN_PROGRESS
    assert listed["g"][0] == "consumer"


@pytest.mark.parametrize(
    "policy, upgrades, downgrades",
    [
        ("bidirectional", True, True),
        ("UPGRADE", True, False),
        ("downgrade", False, True),
        ("disabled", False, False),
    ],
)
def test_the_migration_policy_says_which_way_a_group_may_go(tmp_path, policy, upgrades, downgrades):
    """``ConsumerGroupMigrationPolicy`` (``group.consumer.migration.policy``, read without regard to case)
    in ``validateOnlineUpgrade`` and ``validateOnlineDowngradeWithFencedMember``: a refused upgrade leaves
    the classic group as it was and answers GROUP_ID_NOT_FOUND, "Group g is not a consumer group"; a
    refused downgrade only fences the leaving member, and the classic member goes on in the consumer
    group. Classic members join consumer groups whatever the policy."""

    async def scenario(m: Mixed):
        joined, _ = await stable_classic_group(m, "g", [{"t": [0, 1]}])
        beat = await m.beat("a", 0, group="g")
        await m.beat("a", 0)
        c = await m.classic_member()
        await m.beat("a", -1)
        await close(joined)
        return beat, await m.listed(), c.member_id, await m.members()

    beat, listed, member_id, members = run(tmp_path, scenario, **{"group.consumer.migration.policy": policy})
    if upgrades:
        assert (beat.error_code, listed["g"][0]) == (Errors.NONE, "consumer")
    else:
        assert (beat.error_code, beat.error_message) == (
            Errors.GROUP_ID_NOT_FOUND,
            "Group g is not a consumer group",
        )
        assert listed["g"][:2] == ("classic", "Stable")
    assert listed[GROUP][0] == ("classic" if downgrades else "consumer")
    if not downgrades:
        assert members == {member_id: (0, 2)}


def test_classic_members_waiting_in_a_rebalance_are_told_to_rejoin_the_upgraded_group(tmp_path):
    """``convertToConsumerGroup``: ``completeAllJoinFutures`` / ``completeAllSyncFutures`` with
    REBALANCE_IN_PROGRESS (``testConsumerGroupHeartbeatWithPreparingRebalanceClassicGroup``): a JoinGroup
    waiting for the classic rebalance to complete is answered when the group turns into a consumer
    group."""

    async def scenario(m: Mixed):
        joined, _ = await stable_classic_group(m, "g", [{"t": [0]}, {"t": [1]}])
        (first_client, first_id), _ = joined
        waiting = asyncio.create_task(m.classic_join(first_id, group="g", client=first_client))
        await asyncio.sleep(0.2)  # the group is PreparingRebalance, waiting for the other member
        state = (await m.describe("g")).group_state
        beat = await m.beat("a", 0, group="g")
        answered = await asyncio.wait_for(waiting, 5)
        await close(joined)
        return state, beat, answered

    state, beat, answered = run(tmp_path, scenario)
    assert state == "PreparingRebalance"
    assert beat.error_code == Errors.NONE
    assert answered.error_code == Errors.REBALANCE_IN_PROGRESS


# ---- downgrade ---------------------------------------------------------------------------------------


def test_the_last_consumer_protocol_member_leaving_turns_the_group_classic(tmp_path):
    """``consumerGroupLeave`` -> ``consumerGroupFenceMember`` -> ``validateOnlineDowngradeWithFencedMember``
    -> ``convertToClassicGroup`` / ``ClassicGroup.fromConsumerGroup``
    (``testLastConsumerProtocolMemberLeavingConsumerGroup``): the consumer group's records are erased and
    a classic group is written, Stable at the group epoch, each member holding its target assignment
    serialised at its subscription's version; then a rebalance begins, and the member rejoins it with
    the classic protocol."""

    async def scenario(m: Mixed):
        await m.beat("a", 0)
        c = await m.classic_member()
        target = (await m.consumer_describe()).members[1].target_assignment.topic_partitions
        left = await m.beat("a", -1)
        described = await m.describe(GROUP)
        listed = await m.listed()
        beat = await m.heartbeat(GROUP, c.generation_id, c.member_id)
        rejoin = await m.classic_join(c.member_id)
        return c, target, left, described, listed, beat, rejoin, stored(m)

    c, target, left, described, listed, beat, rejoin, records = run(tmp_path, scenario)
    assert (left.error_code, left.member_id, left.member_epoch) == (Errors.NONE, "a", -1)
    assert (described.group_state, described.protocol_type) == ("PreparingRebalance", "consumer")
    assert [m.member_id for m in described.members] == [c.member_id]
    assert listed[GROUP] == ("classic", "PreparingRebalance", "consumer")
    assert beat == Errors.REBALANCE_IN_PROGRESS
    assert (rejoin.error_code, rejoin.generation_id, rejoin.leader) == (Errors.NONE, 3, c.member_id)
    # On disk: the consumer group's epoch tombstone, then the classic group's record.
    versions = [key_version(k) for k, _ in records]
    assert versions[-2:] == [3, GROUP_METADATA_KEY] and records[-2][1] is None
    value = decode_group_metadata_value(records[-1][1])
    assert (value.generation, value.protocol_type, value.protocol, value.leader) == (
        2,
        "consumer",
        "range",
        c.member_id,
    )
    held = {"t": sorted(p for tp in target for p in tp.partitions)} if target else {}
    assert [(m.member_id, assignment(m.assignment)) for m in value.members] == [(c.member_id, (1, held))]


def test_the_last_consumer_protocol_member_whose_session_expires_turns_the_group_classic(tmp_path):
    """``consumerGroupFenceMemberOperation`` -> ``consumerGroupFenceMember``
    (``testLastConsumerProtocolMemberSessionTimeoutInConsumerGroup``): a session that expires downgrades
    the group as a leave does."""

    async def scenario(m: Mixed):
        await m.beat("a", 0)
        c = await m.classic_member()
        await m.sync(GROUP, c.generation_id, c.member_id)
        for _ in range(6):  # the classic member stays; "a" falls silent
            await m.heartbeat(GROUP, c.generation_id, c.member_id)
            await asyncio.sleep(0.15)
        return c.member_id, await m.describe(GROUP)

    member_id, described = run(
        tmp_path,
        scenario,
        **{
            "group.consumer.session.timeout.ms": "400",
            "group.consumer.min.session.timeout.ms": "100",
            "group.consumer.heartbeat.interval.ms": "100",
            "group.consumer.min.heartbeat.interval.ms": "100",
        },
    )
    assert (described.error_code, described.group_state) == (Errors.NONE, "PreparingRebalance")
    assert [m.member_id for m in described.members] == [member_id]


def test_a_static_classic_member_replacing_the_last_consumer_protocol_member_turns_the_group_classic(
    tmp_path,
):
    """``classicGroupJoinToConsumerGroup`` step 4, ``validateOnlineDowngradeWithReplacedMemberId``
    (``testLastStaticConsumerProtocolMemberReplacedByClassicProtocolMember``): a static member joining
    with JoinGroup takes the place of its instance's member on the consumer protocol at once; that was
    the last one, so the group turns classic, Stable, with no rebalance: the joining member syncs and
    gets the replaced member's target."""

    async def scenario(m: Mixed):
        await m.beat("a", 0, instance_id="i")
        c = await m.classic_member()
        target = {m.member_id: m.target_assignment for m in (await m.consumer_describe()).members}["a"]
        joined = await m.classic_join(instance_id="i")
        described = await m.describe(GROUP)
        synced = await m.sync(GROUP, joined.generation_id, joined.member_id)
        return c.member_id, target, joined, described, synced

    classic_id, target, joined, described, synced = run(tmp_path, scenario)
    assert (joined.error_code, joined.generation_id, joined.protocol_name) == (Errors.NONE, 2, "range")
    assert (described.group_state, described.protocol_data) == ("Stable", "range")
    assert {m.member_id for m in described.members} == {classic_id, joined.member_id}
    held = sorted(p for tp in target.topic_partitions for p in tp.partitions)
    assert (synced.error_code, assignment(synced.assignment)) == (
        Errors.NONE,
        (1, {"t": held} if held else {}),
    )


def test_a_static_classic_member_restarting_on_the_consumer_protocol_takes_its_place_at_once(tmp_path):
    """``getOrMaybeSubscribeStaticConsumerGroupMember``
    (``testConsumerGroupHeartbeatFromExistingClassicStaticMember``): a static member on the consumer
    protocol must wait for its instance to be released (UNRELEASED_INSTANCE_ID), unless the instance's
    member uses the classic protocol: then the new member replaces it at once, with its assignment, and
    is a consumer-protocol member from then on."""

    async def scenario(m: Mixed):
        await m.beat("a", 0)
        classic = await m.classic_join(instance_id="i")
        beat = await m.beat("n", 0, instance_id="i")
        return classic, beat, await m.members()

    classic, beat, members = run(tmp_path, scenario)
    assert (beat.error_code, beat.member_id, beat.member_epoch) == (Errors.NONE, "n", classic.generation_id)
    assert members == {"a": (1, 1), "n": (1, classic.generation_id)}


# ---- what a restart reads back -----------------------------------------------------------------------------


def test_a_mixed_group_is_read_back_after_a_restart(tmp_path):
    """The classic member's ``ClassicMemberMetadata`` (session timeout, protocols) is in its member record
    (``newConsumerGroupMemberSubscriptionRecord``), so a restarted broker still knows it joined with the
    classic protocol: same epochs and member types, and its Heartbeat and SyncGroup go on."""

    async def first(m: Mixed):
        await m.beat("a", 0)
        c = await m.classic_member(session_timeout_ms=7_000)
        records = [cr.decode(k, v) for k, v in stored(m) if key_version(k) == 5 and v is not None]
        return c, await m.members(), records

    async def second(m: Mixed):
        members = await m.members()
        beat = await m.heartbeat(GROUP, c.generation_id, c.member_id)
        synced = await m.sync(GROUP, c.generation_id, c.member_id)
        return members, beat, synced.error_code

    c, before, records = run(tmp_path, first)
    after, beat, synced = run(tmp_path, second, create_topic=False)
    assert after == before == {"a": (1, 1), c.member_id: (0, 2)}
    (classic_record,) = [r for r in records if r.member_id == c.member_id]
    assert classic_record.value.classic.session_timeout_ms == 7_000
    assert [name for name, _ in classic_record.value.classic.protocols] == ["range"]
    assert (beat, synced) == (Errors.NONE, Errors.NONE)


def test_upgraded_and_downgraded_groups_are_read_back_after_a_restart(tmp_path):
    """Replay of the migrations' records (``GroupMetadataManager.replay``): the upgrade's classic group
    tombstone then the consumer group's records bring back a consumer group; the downgrade's consumer
    group tombstones then the classic group's record bring back a classic group, Stable with its members
    (as every classic group with members is loaded)."""

    async def first(m: Mixed):
        joined, _ = await stable_classic_group(m, "up", [{"t": [0, 1]}])
        await m.beat("a", 0, group="up")
        await m.beat("b", 0, group="down")
        c = await m.classic_member(group="down")
        await m.beat("b", -1, group="down")
        await close(joined)
        return c.member_id, await m.members("up")

    async def second(m: Mixed):
        return await m.members("up"), await m.describe("down"), await m.listed()

    down_member, up_before = run(tmp_path, first)
    up_after, down, listed = run(tmp_path, second, create_topic=False)
    assert up_after == up_before and len(up_after) == 2
    assert (down.group_state, [m.member_id for m in down.members]) == ("Stable", [down_member])
    assert (listed["up"][0], listed["down"][0]) == ("consumer", "classic")
