"""Rules of classic consumer groups: FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
DescribeGroups, ListGroups and DeleteGroups, as Kafka's group coordinator decides them
(GroupMetadataManager.classicGroup*, ClassicGroup, GroupCoordinatorService, KafkaApis).

Set-up joins and syncs at the newest versions the target serves; the request a rule is about goes at the
version under test. Rebalance timeouts are short (the initial rebalance delay of an empty group is at
most the rebalance timeout), so every wait stays bounded."""

from __future__ import annotations

import asyncio
import struct
from typing import Any

from kconform.codecs import CodecError
from kconform.codecs.errors import Errors
from kconform.codecs.messages import (
    ConsumerProtocolSubscription,
    DescribeGroupsRequest,
    FindCoordinatorRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    SyncGroupRequest,
)

from ..client.raw import RawClient
from .catalogue import Rule, RuleFailed, add, rule
from .requests import metadata_request
from .session import RuleSession, SetupFailed, expect, expect_error

METADATA, CREATE_TOPICS = 3, 19
FIND_COORDINATOR, JOIN, HEARTBEAT, LEAVE, SYNC, DESCRIBE, LIST, DELETE_GROUPS = 10, 11, 12, 13, 14, 15, 16, 42
REBALANCE_MS = 1000
SESSION_MS = 10_000
_F = "groups"


def subscription(*topics: str) -> bytes:
    """ConsumerProtocolSubscription v1 as the Java consumer embeds it in JoinGroup."""
    return struct.pack(">h", 1) + ConsumerProtocolSubscription(topics=list(topics)).encode(1)


async def call(s: RuleSession, client: RawClient, api: int, version: int, body: Any) -> Any:
    """The decoded answer; one that does not decode at the version asked fails the rule, as a closed
    connection does (Kafka's answers follow the message schema)."""
    try:
        return await s.call(client, api, version, body)
    except CodecError as exc:
        raise RuleFailed("response", "decodable at the version asked", str(exc)[:200]) from None


def top(s: RuleSession, api: int) -> int:
    return s.versions[api][1]


async def make_topic(s: RuleSession, partitions: int = 1) -> tuple[str, object, int]:
    """A fresh topic with at least ``partitions`` partitions: (name, id, partition count). A target
    without CreateTopics (librdkafka's mock cluster) gets it auto-created by a Metadata request."""
    if CREATE_TOPICS in s.versions:
        name, topic_id = await s.create_topic(partitions)
        return name, topic_id, partitions
    name = s.name("t")
    version = min(s.versions[METADATA][1], 4)
    body = await call(s, await s.raw(), METADATA, version, metadata_request(name, auto_create=True))
    made = body.topics[0] if body.topics else None
    if made is None or made.error_code != Errors.NONE or len(made.partitions) < partitions:
        raise SetupFailed(f"auto-creating {name} with {partitions} partitions: {made}")
    await s.leader(name)
    return name, made.topic_id, len(made.partitions)


# The last version of each API before its flexible ones: set-up steps go no higher, as every client
# speaks these, so that a target's trouble with one version shows only in the rules run at it.
_SETUP_CAP = {JOIN: 5, SYNC: 3, HEARTBEAT: 3, LEAVE: 3, DESCRIBE: 4, LIST: 2, DELETE_GROUPS: 1, 8: 7, 9: 5}


def setup(s: RuleSession, api: int) -> int:
    """The version set-up steps use for ``api``."""
    return min(top(s, api), _SETUP_CAP.get(api, top(s, api)))


def join_request(
    group: str,
    member_id: str = "",
    *,
    instance_id: str | None = None,
    protocol_type: str = "consumer",
    protocols: tuple[str, ...] = ("range",),
    session_ms: int = SESSION_MS,
    rebalance_ms: int = REBALANCE_MS,
    topics: tuple[str, ...] = (),
) -> JoinGroupRequest:
    return JoinGroupRequest(
        group_id=group,
        session_timeout_ms=session_ms,
        rebalance_timeout_ms=rebalance_ms,
        member_id=member_id,
        group_instance_id=instance_id,
        protocol_type=protocol_type,
        protocols=[
            JoinGroupRequest.JoinGroupRequestProtocol(name=p, metadata=subscription(*topics))
            for p in protocols
        ],
    )


async def join(s: RuleSession, client: RawClient, version: int, group: str, member_id: str = "", **kw) -> Any:
    return await call(s, client, JOIN, version, join_request(group, member_id, **kw))


async def joined_member(s: RuleSession, client: RawClient, group: str, version: int | None = None, **kw):
    """A full join (with MEMBER_ID_REQUIRED first from v4, unless static); the JoinGroup answer."""
    version = setup(s, JOIN) if version is None else version
    body = await join(s, client, version, group, **kw)
    if body.error_code == Errors.MEMBER_ID_REQUIRED:
        body = await join(s, client, version, group, body.member_id, **kw)
    if body.error_code != Errors.NONE:
        raise SetupFailed(f"joining group {group}: error {body.error_code}")
    return body


def sync_request(
    group, generation, member_id, assignments=(), *, instance_id=None, ptype="consumer", name="range"
):
    return SyncGroupRequest(
        group_id=group,
        generation_id=generation,
        member_id=member_id,
        group_instance_id=instance_id,
        protocol_type=ptype,
        protocol_name=name,
        assignments=[
            SyncGroupRequest.SyncGroupRequestAssignment(member_id=m, assignment=a) for m, a in assignments
        ],
    )


async def stable_group(s: RuleSession, group: str | None = None, **kw):
    """A group of one member, joined and synced: (group, coordinator client, join answer)."""
    group = group or s.name("g")
    client = await s.coordinator(group)
    joined = await joined_member(s, client, group, **kw)
    plan = [(joined.member_id, b"assignment-" + joined.member_id.encode())]
    synced = await call(
        s,
        client,
        SYNC,
        setup(s, SYNC),
        sync_request(
            group,
            joined.generation_id,
            joined.member_id,
            plan,
            instance_id=kw.get("instance_id"),
            ptype=kw.get("protocol_type", "consumer"),
        ),
    )
    if synced.error_code != Errors.NONE:
        raise SetupFailed(f"syncing group {group}: error {synced.error_code}")
    return group, client, joined


async def heartbeat(s, client, version, group, generation, member_id, instance_id=None) -> int:
    request = HeartbeatRequest(
        group_id=group, generation_id=generation, member_id=member_id, group_instance_id=instance_id
    )
    return (await call(s, client, HEARTBEAT, version, request)).error_code


async def describe(s: RuleSession, client: RawClient, group: str, version: int | None = None):
    version = setup(s, DESCRIBE) if version is None else version
    return (await call(s, client, DESCRIBE, version, DescribeGroupsRequest(groups=[group]))).groups[0]


async def expect_state(s: RuleSession, client: RawClient, group: str, state: str) -> None:
    """The group's state, where the target serves DescribeGroups (the rest of a rule is checked anyway)."""
    if DESCRIBE in s.versions:
        expect("group_state", (await describe(s, client, group)).group_state, state)


async def rebalancing(s: RuleSession):
    """A stable group a second member is joining (its JoinGroup waits for the first member to rejoin, so
    the group is PreparingRebalance): (group, client, first member's join answer, the pending join)."""
    group, client, joined = await stable_group(s)
    other = await s.coordinator(group)
    newcomer = await join(s, other, setup(s, JOIN), group)
    member = newcomer.member_id if newcomer.error_code == Errors.MEMBER_ID_REQUIRED else ""
    pending = asyncio.ensure_future(join(s, other, setup(s, JOIN), group, member, rebalance_ms=3000))
    await asyncio.sleep(0.3)
    return group, client, joined, pending


def _done(pending: asyncio.Future) -> None:
    pending.cancel()


# ---- FindCoordinator (KafkaApis.handleFindCoordinatorRequest / getCoordinator) ---------------------------


def find_request(version: int, keys: list[str], key_type: int) -> FindCoordinatorRequest:
    if version >= 4:
        return FindCoordinatorRequest(key_type=key_type, coordinator_keys=keys)
    return FindCoordinatorRequest(key=keys[0], key_type=key_type)


def coordinators(version: int, body) -> list[tuple[int, int]]:
    if version >= 4:
        return [(c.error_code, c.node_id) for c in body.coordinators]
    return [(body.error_code, body.node_id)]


async def _find(s: RuleSession, version: int, keys: list[str], key_type: int):
    """FindCoordinator, asked again while the internal topic is still being created."""
    client = await s.raw()
    for _ in range(20):
        body = await call(s, client, FIND_COORDINATOR, version, find_request(version, keys, key_type))
        if all(code != Errors.COORDINATOR_NOT_AVAILABLE for code, _ in coordinators(version, body)):
            return body
        await asyncio.sleep(0.25)
    return body


@rule(
    "groups.find-coordinator-group-key",
    api=FIND_COORDINATOR,
    versions=(0, 6),
    family=_F,
    source="KafkaApis.getCoordinator GROUP",
)
async def find_group(s: RuleSession, version: int) -> None:
    """FindCoordinator for a group id answers NONE with the node that coordinates the group."""
    body = await _find(s, version, [s.name("g")], 0)
    code, node = coordinators(version, body)[0]
    expect_error("error_code", code, Errors.NONE)
    expect("node_id is a broker", node in (await _brokers(s)), True)


@rule(
    "groups.find-coordinator-transaction-key",
    api=FIND_COORDINATOR,
    versions=(1, 6),
    family=_F,
    source="KafkaApis.getCoordinator TRANSACTION",
)
async def find_txn(s: RuleSession, version: int) -> None:
    """FindCoordinator with key type 1 answers NONE with the node that coordinates the transactional id."""
    body = await _find(s, version, [s.name("x")], 1)
    code, node = coordinators(version, body)[0]
    expect_error("error_code", code, Errors.NONE)
    expect("node_id is a broker", node in (await _brokers(s)), True)


@rule(
    "groups.find-coordinator-invalid-key-type",
    api=FIND_COORDINATOR,
    versions=(1, 6),
    family=_F,
    source="KafkaApis.getCoordinator CoordinatorType.forId",
)
async def find_bad_type(s: RuleSession, version: int) -> None:
    """FindCoordinator with a key type Kafka does not define is INVALID_REQUEST."""
    client = await s.raw()
    body = await call(s, client, FIND_COORDINATOR, version, find_request(version, [s.name("g")], 7))
    expect_error("error_code", coordinators(version, body)[0][0], Errors.INVALID_REQUEST)


@rule(
    "groups.find-coordinator-batched-keys",
    api=FIND_COORDINATOR,
    versions=(4, 6),
    family=_F,
    source="KafkaApis.handleFindCoordinatorRequest coordinatorKeys",
)
async def find_batched(s: RuleSession, version: int) -> None:
    """From v4, FindCoordinator answers every key of the batch, each with its own key and coordinator."""
    keys = [s.name("g"), s.name("g")]
    body = await _find(s, version, keys, 0)
    expect("coordinators[].key", sorted(c.key for c in body.coordinators), sorted(keys))
    expect("coordinators[].error_code", [c.error_code for c in body.coordinators], [Errors.NONE] * 2)


async def _brokers(s: RuleSession) -> set[int]:
    await s._client.refresh_metadata()  # noqa: SLF001 - the session's own metadata
    return set(s._client.metadata.brokers)  # noqa: SLF001


# ---- JoinGroup (GroupMetadataManager.classicGroupJoin) -----------------------------------------------


@rule(
    "groups.join-member-id-required",
    api=JOIN,
    versions=(4, 9),
    family=_F,
    source="GroupMetadataManager.classicGroupJoinNewDynamicMember requireKnownMemberId",
)
async def join_member_id_required(s: RuleSession, version: int) -> None:
    """From v4, a dynamic member joining without a member id is given one with MEMBER_ID_REQUIRED."""
    group = s.name("g")
    body = await join(s, await s.coordinator(group), version, group)
    expect_error("error_code", body.error_code, Errors.MEMBER_ID_REQUIRED)
    expect("member_id is set", bool(body.member_id), True)


@rule(
    "groups.join-before-v4-joins-at-once",
    api=JOIN,
    versions=(0, 3),
    family=_F,
    source="GroupMetadataManager.classicGroupJoinNewDynamicMember",
)
async def join_old_at_once(s: RuleSession, version: int) -> None:
    """Before v4, a member joining without a member id is given one and joins the group at once."""
    group = s.name("g")
    body = await join(s, await s.coordinator(group), version, group)
    expect_error("error_code", body.error_code, Errors.NONE)
    expect("member_id is set", bool(body.member_id), True)


@rule(
    "groups.join-lone-member-leads-generation-one",
    api=JOIN,
    versions=(0, 9),
    family=_F,
    source="GroupMetadataManager.completeClassicGroupJoin",
)
async def join_leader(s: RuleSession, version: int) -> None:
    """The only member of a new group is its leader at generation 1, with the chosen protocol and the
    member list."""
    group = s.name("g")
    body = await joined_member(s, await s.coordinator(group), group, version, topics=("t",))
    expect("generation_id", body.generation_id, 1)
    expect("leader", body.leader, body.member_id)
    expect("protocol_name", body.protocol_name, "range")
    expect(
        "members", [(m.member_id, m.metadata) for m in body.members], [(body.member_id, subscription("t"))]
    )


@rule(
    "groups.join-empty-group-id",
    api=JOIN,
    versions=(0, 9),
    family=_F,
    source="GroupCoordinatorService.joinGroup isGroupIdNotEmpty",
)
async def join_empty_group(s: RuleSession, version: int) -> None:
    """A JoinGroup with an empty group id is INVALID_GROUP_ID."""
    body = await join(s, await s.raw(), version, "")
    expect_error("error_code", body.error_code, Errors.INVALID_GROUP_ID)


for _name, _ms in (("below-min", 1), ("above-max", 1_800_001)):

    @rule(
        f"groups.join-session-timeout-{_name}",
        api=JOIN,
        versions=(0, 9),
        family=_F,
        source="GroupMetadataManager.classicGroupJoin sessionTimeoutMs",
    )
    async def join_session_timeout(s: RuleSession, version: int, _ms=_ms) -> None:
        """A JoinGroup whose session timeout is outside group.min.session.timeout.ms and
        group.max.session.timeout.ms is INVALID_SESSION_TIMEOUT."""
        group = s.name("g")
        body = await join(s, await s.coordinator(group), version, group, session_ms=_ms)
        expect_error("error_code", body.error_code, Errors.INVALID_SESSION_TIMEOUT)


@rule(
    "groups.join-unknown-member-new-group",
    api=JOIN,
    versions=(0, 9),
    family=_F,
    source="GroupMetadataManager.classicGroupJoin memberId",
)
async def join_unknown_member_new(s: RuleSession, version: int) -> None:
    """A JoinGroup naming a member id for a group that does not exist is UNKNOWN_MEMBER_ID."""
    group = s.name("g")
    body = await join(s, await s.coordinator(group), version, group, "made-up-member")
    expect_error("error_code", body.error_code, Errors.UNKNOWN_MEMBER_ID)


@rule(
    "groups.join-unknown-member-existing-group",
    api=JOIN,
    versions=(0, 9),
    family=_F,
    source="GroupMetadataManager.classicGroupJoinExistingMember hasMember",
)
async def join_unknown_member(s: RuleSession, version: int) -> None:
    """A JoinGroup naming a member id the group does not have is UNKNOWN_MEMBER_ID."""
    group, client, _ = await stable_group(s)
    body = await join(s, client, version, group, "made-up-member")
    expect_error("error_code", body.error_code, Errors.UNKNOWN_MEMBER_ID)


def _join_inconsistent(kw: dict):
    async def check(s: RuleSession, version: int) -> None:
        group, client, _ = await stable_group(s)
        body = await join(s, await s.coordinator(group), version, group, **kw)
        expect_error("error_code", body.error_code, Errors.INCONSISTENT_GROUP_PROTOCOL)

    return check


for _name, _kw, _text in (
    ("other-protocol-type", {"protocol_type": "connect"}, "another protocol type"),
    ("disjoint-protocols", {"protocols": ("roundrobin",)}, "no protocol in common with the group"),
):
    add(
        Rule(
            id=f"groups.join-{_name}",
            api=JOIN,
            versions=(0, 9),
            family=_F,
            source="ClassicGroup.supportsProtocols",
            check=_join_inconsistent(_kw),
            text=f"A member joining a group with members with {_text} is INCONSISTENT_GROUP_PROTOCOL.",
        )
    )


# An empty protocol list is the same rule; left out: it crashes librdkafka's mock cluster (ends the run).
for _name, _kw in (("empty-protocol-type", {"protocol_type": ""}),):

    @rule(
        f"groups.join-{_name}-new-group",
        api=JOIN,
        versions=(0, 9),
        family=_F,
        source="ClassicGroup.supportsProtocols isEmpty",
    )
    async def join_empty_protocols(s: RuleSession, version: int, _kw=_kw) -> None:
        """The first member of a group must give a protocol type and at least one protocol, else its
        JoinGroup is INCONSISTENT_GROUP_PROTOCOL."""
        group = s.name("g")
        body = await join(s, await s.coordinator(group), version, group, **_kw)
        expect_error("error_code", body.error_code, Errors.INCONSISTENT_GROUP_PROTOCOL)


@rule(
    "groups.join-static-member-joins-at-once",
    api=JOIN,
    versions=(5, 9),
    family=_F,
    source="GroupMetadataManager.classicGroupJoinNewStaticMember",
)
async def join_static(s: RuleSession, version: int) -> None:
    """From v5, a member with a group instance id joins without MEMBER_ID_REQUIRED and is given a
    member id."""
    group = s.name("g")
    body = await join(s, await s.coordinator(group), version, group, instance_id=s.name("i"))
    expect_error("error_code", body.error_code, Errors.NONE)
    expect("member_id is set", bool(body.member_id), True)


@rule(
    "groups.join-static-rejoin-fences-old-member-id",
    api=JOIN,
    versions=(5, 9),
    family=_F,
    source="GroupMetadataManager.updateStaticMemberThenRebalanceOrCompleteJoin",
)
async def join_static_rejoin(s: RuleSession, version: int) -> None:
    """A static member joining again without its member id gets a new one, keeps the generation of a
    stable group, and its old member id is FENCED_INSTANCE_ID."""
    instance = s.name("i")
    group, client, first = await stable_group(s, instance_id=instance)
    again = await join(s, client, version, group, instance_id=instance)
    expect_error("error_code", again.error_code, Errors.NONE)
    expect("member_id is new", again.member_id != first.member_id, True)
    expect("generation_id", again.generation_id, first.generation_id)
    hb = setup(s, HEARTBEAT)
    stale = await heartbeat(s, client, hb, group, first.generation_id, first.member_id, instance)
    expect_error("heartbeat(old member id).error_code", stale, Errors.FENCED_INSTANCE_ID)
