"""Members on the classic protocol inside a KIP-848 consumer group (a mixed group), through the wire: Kafka
4.x lets a consumer still on JoinGroup/SyncGroup/Heartbeat/LeaveGroup join a consumer group that has
members, and assigns it with the group's server-side assignor. One test per Kafka rule, each naming the
``GroupMetadataManager`` method that decides it and the ``GroupMetadataManagerTest`` case that pins it.

Every scenario starts the same way: a member on the consumer protocol ("a") joins group "cg" with a
ConsumerGroupHeartbeat and holds both partitions of "t" at epoch 1, so the group has members and a
classic join goes to the consumer group."""

from __future__ import annotations

import asyncio

from kconform.codecs.errors import Errors

from ...support.consumer_groups_wire import owned
from .mixed_cluster import GROUP, Mixed, assignment, run, subscription

# ---- JoinGroup (classicGroupJoinToConsumerGroup) -------------------------------------------------------


def test_a_classic_join_needs_a_member_id_then_gets_its_member_epoch_as_generation(tmp_path):
    """``classicGroupJoin`` gives a join for a consumer group with members to
    ``classicGroupJoinToConsumerGroup`` (``testJoiningConsumerGroupWithNewDynamicMember``): a dynamic
    v4+ member without an id is MEMBER_ID_REQUIRED, with one; with it, it joins: the generation is its
    member epoch, the protocol type "consumer", the name the first protocol it offered, and there is no
    leader and no member list (the group's assignor assigns). Before v4 a member joins at once."""

    async def scenario(m: Mixed):
        await m.beat("a", 0)
        first = await m.classic_join()
        second = await m.classic_join(first.member_id)
        before_v4 = await m.classic_join(version=3)
        return first, second, before_v4, await m.members()

    first, second, before_v4, members = run(tmp_path, scenario)
    assert (first.error_code, first.generation_id) == (Errors.MEMBER_ID_REQUIRED, -1) and first.member_id
    assert (second.error_code, second.member_id, second.generation_id) == (Errors.NONE, first.member_id, 2)
    assert (second.protocol_type, second.protocol_name, second.leader, second.members) == (
        "consumer",
        "range",
        "",
        [],
    )
    assert (before_v4.error_code, before_v4.generation_id) == (Errors.NONE, 3)
    # ConsumerGroupDescribe: member type 0 for the classic members, at the epochs their joins gave
    assert members == {"a": (1, 1), first.member_id: (0, 2), before_v4.member_id: (0, 3)}


def test_a_classic_join_the_group_cannot_speak_is_inconsistent_group_protocol(tmp_path):
    """``throwIfClassicProtocolIsNotSupported`` / ``ConsumerGroup.supportsClassicProtocols``
    (``testJoiningConsumerGroupThrowsExceptionIfProtocolIsNotSupported``): the protocol type must be
    "consumer", and one protocol offered must be one that every member already on the classic protocol
    offered; the check comes before MEMBER_ID_REQUIRED."""

    async def scenario(m: Mixed):
        await m.beat("a", 0)
        await m.classic_member()  # offers "range" only
        sub = subscription("t")
        codes = []
        for kwargs in (
            dict(protocols=(("roundrobin", sub),)),
            dict(protocol_type="connect"),
            dict(protocols=(("roundrobin", sub), ("range", sub))),
        ):
            codes.append((await m.classic_join(**kwargs)).error_code)
        return codes

    assert run(tmp_path, scenario) == [
        Errors.INCONSISTENT_GROUP_PROTOCOL,
        Errors.INCONSISTENT_GROUP_PROTOCOL,
        Errors.MEMBER_ID_REQUIRED,
    ]


def test_a_known_member_id_joining_an_empty_consumer_group_is_unknown_member_id(tmp_path):
    """``classicGroupJoinToClassicGroup``: an empty consumer group gives way
    (``maybeDeleteEmptyConsumerGroup``), and a member id then names a group that does not exist
    (``testClassicGroupJoinWithEmptyConsumerGroup`` for the one without an id)."""

    async def scenario(m: Mixed):
        await m.beat("a", 0)
        await m.beat("a", -1)
        return await m.classic_join("made-up")

    answer = run(tmp_path, scenario)
    assert (answer.error_code, answer.member_id) == (Errors.UNKNOWN_MEMBER_ID, "made-up")


# ---- SyncGroup and Heartbeat (classicGroupSyncToConsumerGroup, classicGroupHeartbeatToConsumerGroup) -------


def test_sync_group_hands_the_member_its_partitions_as_a_consumer_protocol_assignment(tmp_path):
    """``classicGroupSyncToConsumerGroup`` / ``prepareAssignment``
    (``testClassicGroupSyncToConsumerGroupWithAllConsumerProtocolVersions``): the member's assigned
    partitions by topic name, serialised at the version of the subscription it joined with; the protocol
    type and name echo the request. Its heartbeat says REBALANCE_IN_PROGRESS once the partition it
    waited for is free, so it rejoins to take it."""

    async def scenario(m: Mixed):
        a = await m.beat("a", 0)
        protocols = (("range", subscription("t", version=3)),)
        joined = await m.classic_member(protocols=protocols)
        empty = await m.sync(GROUP, joined.generation_id, joined.member_id)
        told = await m.beat("a", 1, topic_partitions=owned(a))  # a gives the classic member's partition up
        kept = await m.beat("a", 1, topic_partitions=owned(told))
        free = await m.heartbeat(GROUP, joined.generation_id, joined.member_id)
        again = await m.classic_join(joined.member_id, protocols=protocols)
        synced = await m.sync(GROUP, again.generation_id, joined.member_id)
        return empty, told, kept, free, synced

    empty, told, kept, free, synced = run(tmp_path, scenario)
    assert (empty.error_code, assignment(empty.assignment)) == (Errors.NONE, (3, {}))  # still a's
    assert kept.member_epoch == 2
    assert free == Errors.REBALANCE_IN_PROGRESS
    given = sorted({0, 1} - {p for tp in told.assignment.topic_partitions for p in tp.partitions})
    assert (synced.error_code, synced.protocol_type, synced.protocol_name) == (
        Errors.NONE,
        "consumer",
        "range",
    )
    assert assignment(synced.assignment) == (3, {"t": given})


def test_heartbeat_checks_the_generation_and_says_when_the_member_must_rejoin(tmp_path):
    """``classicGroupHeartbeatToConsumerGroup``: a generation other than the member epoch is
    ILLEGAL_GENERATION (``testClassicGroupHeartbeatToConsumerWithIllegalGenerationId``); while the member
    waits for a partition another member still holds, nothing; once the group epoch passed its epoch,
    REBALANCE_IN_PROGRESS (``testClassicGroupHeartbeatToConsumerGroupRebalanceInProgress``). SyncGroup
    checks the same (``throwIfGenerationIdUnmatched``, ``throwIfRebalanceInProgress``)."""

    async def scenario(m: Mixed):
        await m.beat("a", 0)
        c = await m.classic_member()
        generation, member = c.generation_id, c.member_id
        stale = await m.heartbeat(GROUP, generation - 1, member)
        waiting = await m.heartbeat(GROUP, generation, member)
        await m.beat("b", 0)  # the group epoch moves past the member's
        behind = await m.heartbeat(GROUP, generation, member)
        stale_sync = await m.sync(GROUP, generation - 1, member)
        behind_sync = await m.sync(GROUP, generation, member)
        return stale, waiting, behind, stale_sync.error_code, behind_sync.error_code

    assert run(tmp_path, scenario) == (
        Errors.ILLEGAL_GENERATION,
        Errors.NONE,
        Errors.REBALANCE_IN_PROGRESS,
        Errors.ILLEGAL_GENERATION,
        Errors.REBALANCE_IN_PROGRESS,
    )


def test_classic_requests_for_a_consumer_protocol_member_are_unknown_member_id(tmp_path):
    """``throwIfMemberDoesNotUseClassicProtocol``
    (``testClassicGroupHeartbeatToConsumerWithMemberNotUsingClassicProtocol``,
    ``testClassicGroupLeaveToConsumerGroupWithoutValidLeaveGroupMember``): a member on the consumer
    protocol is no member to SyncGroup, Heartbeat or LeaveGroup, and stays; the classic member beside it
    is one."""

    async def scenario(m: Mixed):
        await m.beat("a", 0)
        c = await m.classic_member()
        classic = await m.heartbeat(GROUP, c.generation_id, c.member_id)
        beat = await m.heartbeat(GROUP, 1, "a")
        sync = await m.sync(GROUP, 1, "a")
        leave = await m.leave([("a", None)])
        return classic, beat, sync.error_code, [x.error_code for x in leave.members], await m.members()

    classic, beat, sync, leave, members = run(tmp_path, scenario)
    assert classic == Errors.NONE
    assert (beat, sync, leave) == (
        Errors.UNKNOWN_MEMBER_ID,
        Errors.UNKNOWN_MEMBER_ID,
        [Errors.UNKNOWN_MEMBER_ID],
    )
    assert members["a"] == (1, 1)


# ---- LeaveGroup (classicGroupLeaveToConsumerGroup) -------------------------------------------------------


def test_leave_group_removes_classic_members_and_bumps_the_group_epoch(tmp_path):
    """``classicGroupLeaveToConsumerGroup`` (``testConsumerGroupMemberUsingClassicProtocolBatchLeaveGroup``):
    the members leave in one write that bumps the group epoch once; a static member named by instance id
    alone is reported under its member id; an unknown member or instance is UNKNOWN_MEMBER_ID, another
    member id for a known instance FENCED_INSTANCE_ID."""

    async def scenario(m: Mixed):
        await m.beat("a", 0)
        dynamic = await m.classic_member()
        static = await m.classic_join(instance_id="i")  # a static member joins at once
        before = (await m.consumer_describe()).group_epoch
        left = await m.leave(
            [(dynamic.member_id, None), ("", "i"), ("nobody", None), ("", "unknown"), ("other", "i")]
        )
        after = await m.consumer_describe()
        return dynamic.member_id, static.member_id, before, left, after

    dynamic, static, before, left, after = run(tmp_path, scenario)
    assert left.error_code == Errors.NONE
    assert [(x.member_id, x.group_instance_id, x.error_code) for x in left.members] == [
        (dynamic, None, Errors.NONE),
        (static, "i", Errors.NONE),
        ("nobody", None, Errors.UNKNOWN_MEMBER_ID),
        ("", "unknown", Errors.UNKNOWN_MEMBER_ID),
        ("other", "i", Errors.FENCED_INSTANCE_ID),
    ]
    assert [m.member_id for m in after.members] == ["a"] and after.group_epoch == before + 1


# ---- offsets, describes and the members' timers -----------------------------------------------------------


def test_a_classic_members_offset_commit_is_checked_against_its_member_epoch(tmp_path):
    """``ConsumerGroup.validateOffsetCommit`` / ``validateMemberEpoch``: a member on the classic protocol
    commits with its member epoch as generation, at any OffsetCommit version; another generation is
    ILLEGAL_GENERATION (STALE_MEMBER_EPOCH is the consumer protocol's, which also needs version 9)."""

    async def scenario(m: Mixed):
        await m.beat("a", 0)
        c = await m.classic_member()
        ok = await m.commit(GROUP, {0: 5}, generation=c.generation_id, member_id=c.member_id, version=8)
        stale = await m.commit(
            GROUP, {0: 5}, generation=c.generation_id - 1, member_id=c.member_id, version=8
        )
        consumer = await m.commit(GROUP, {0: 5}, generation=1, member_id="a", version=8)
        return ok[0], stale[0], consumer[0]

    assert run(tmp_path, scenario) == (Errors.NONE, Errors.ILLEGAL_GENERATION, Errors.UNSUPPORTED_VERSION)


def test_describe_and_list_answer_for_a_mixed_group_as_for_a_consumer_group(tmp_path):
    """ConsumerGroupDescribe v1 (KIP-1099, ``ConsumerGroupMember.asConsumerGroupDescribeMember``): member
    type 0 for the member on the classic protocol, 1 for the other, with the classic member's subscription
    and client; DescribeGroups still finds no classic group (``describeGroups`` uses ``classicGroup()``);
    ListGroups lists a consumer group of protocol type "consumer"."""

    async def scenario(m: Mixed):
        await m.beat("a", 0)
        c = await m.classic_member()
        return (
            c.member_id,
            await m.consumer_describe(),
            await m.client.call(15, 6, _describe()),
            await m.listed(),
        )

    member_id, described, classic, listed = run(tmp_path, scenario)
    types = {m.member_id: (m.member_type, m.subscribed_topic_names, m.client_host) for m in described.members}
    assert types == {"a": (1, ["t"], "/127.0.0.1"), member_id: (0, ["t"], "/127.0.0.1")}
    assert (classic.groups[0].error_code, classic.groups[0].error_message) == (
        Errors.GROUP_ID_NOT_FOUND,
        "Group cg is not a classic group.",
    )
    assert listed[GROUP] == ("consumer", described.group_state, "consumer")


def _describe():
    from kconform.codecs.messages import DescribeGroupsRequest

    return DescribeGroupsRequest(groups=[GROUP])


def test_a_classic_member_is_fenced_after_its_own_session_timeout(tmp_path):
    """``scheduleConsumerGroupSessionTimeout`` with the JoinGroup's session timeout
    (``testConsumerGroupMemberUsingClassicProtocolFencedWhenSessionTimeout``): a silent member on the
    classic protocol is fenced after its own session timeout, long before
    group.consumer.session.timeout.ms; the group epoch is bumped."""

    async def scenario(m: Mixed):
        await m.beat("a", 0)
        c = await m.classic_member(session_timeout_ms=300)
        assert (await m.sync(GROUP, c.generation_id, c.member_id)).error_code == Errors.NONE
        await asyncio.sleep(1.0)
        return await m.consumer_describe()

    described = run(tmp_path, scenario)
    assert ([m.member_id for m in described.members], described.group_epoch) == (["a"], 3)


def test_a_classic_member_that_does_not_sync_in_time_is_fenced(tmp_path):
    """``scheduleConsumerGroupSyncTimeout`` (``testJoiningConsumerGroupWithNewDynamicMember`` asserts it):
    after its JoinGroup answer a member has its rebalance timeout to SyncGroup; heartbeats do not stand
    in for it. One that syncs stays."""

    async def scenario(m: Mixed):
        await m.beat("a", 0)
        silent = await m.classic_member(rebalance_timeout_ms=300)
        synced = await m.classic_member(rebalance_timeout_ms=300)
        await m.sync(GROUP, synced.generation_id, synced.member_id)
        for _ in range(5):
            await m.heartbeat(GROUP, silent.generation_id, silent.member_id)
            await asyncio.sleep(0.15)
        return silent.member_id, synced.member_id, await m.members()

    silent, synced, members = run(tmp_path, scenario)
    assert silent not in members and synced in members


def test_a_classic_member_told_to_rejoin_must_within_its_rebalance_timeout(tmp_path):
    """``scheduleConsumerGroupJoinTimeoutIfAbsent``
    (``testConsumerGroupMemberUsingClassicProtocolFencedWhenJoinTimeout``): the first
    REBALANCE_IN_PROGRESS starts the member's rebalance timeout, later heartbeats do not restart it, and
    a member that does not rejoin in time is fenced."""

    async def scenario(m: Mixed):
        await m.beat("a", 0)
        c = await m.classic_member(rebalance_timeout_ms=400)
        await m.sync(GROUP, c.generation_id, c.member_id)
        await m.beat("b", 0)  # the group epoch moves: c must rejoin
        codes = []
        for _ in range(7):
            codes.append(await m.heartbeat(GROUP, c.generation_id, c.member_id))
            await asyncio.sleep(0.15)
        return c.member_id, codes, await m.members()

    member_id, codes, members = run(tmp_path, scenario)
    assert codes[0] == Errors.REBALANCE_IN_PROGRESS and codes[-1] == Errors.UNKNOWN_MEMBER_ID
    assert member_id not in members
