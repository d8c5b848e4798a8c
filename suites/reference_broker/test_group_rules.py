"""Kafka's classic group membership rules, one test per rule, against a reference broker node in this
process: FindCoordinator, JoinGroup, SyncGroup, Heartbeat, session expiry and LeaveGroup.

Each test names where Apache Kafka 4.0 decides (GroupMetadataManager, ClassicGroup, OffsetMetadataManager
in the group-coordinator module, or KafkaApis); the broker must answer with the same error code."""

from __future__ import annotations

import asyncio

from kconform.codecs.errors import Errors
from kconform.codecs.messages import (
    FindCoordinatorRequest,
    LeaveGroupRequest,
)

from ..support.group_rules_cluster import (
    FIND_COORDINATOR,
    LEAVE,
    Cluster,
    run,
    stable_group,
)

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


def test_leave_group_names_each_member_unknown_when_the_group_does_not_exist(tmp_path):
    """GroupCoordinatorService.leaveGroup maps the UNKNOWN_MEMBER_ID classicGroupLeave throws for a
    missing group to no top-level error and UNKNOWN_MEMBER_ID per member; LeaveGroupResponse lifts a
    member's error to the top level below v3, where no member list exists."""

    async def scenario(c: Cluster):
        await stable_group(c, "g")  # the offsets topic exists: this node coordinates every group
        batch = LeaveGroupRequest(
            group_id="missing",
            members=[
                LeaveGroupRequest.MemberIdentity(member_id="a"),
                LeaveGroupRequest.MemberIdentity(member_id="b", group_instance_id="static-b"),
            ],
        )
        single = LeaveGroupRequest(group_id="missing", member_id="a")
        return await c.client.call(LEAVE, 5, batch), await c.client.call(LEAVE, 2, single)

    batch, single = run(tmp_path, scenario)
    assert batch.error_code == Errors.NONE
    assert [(m.member_id, m.group_instance_id, m.error_code) for m in batch.members] == [
        ("a", None, Errors.UNKNOWN_MEMBER_ID),
        ("b", "static-b", Errors.UNKNOWN_MEMBER_ID),
    ]
    assert single.error_code == Errors.UNKNOWN_MEMBER_ID
