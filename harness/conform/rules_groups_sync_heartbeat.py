"""Rules of SyncGroup and Heartbeat in classic groups."""

from __future__ import annotations

import asyncio

from kconform.codecs.errors import Errors, error_for

from .catalogue import Rule, add, rule
from .rules_groups import (
    _F,
    HEARTBEAT,
    JOIN,
    SYNC,
    _done,
    call,
    expect_state,
    heartbeat,
    joined_member,
    rebalancing,
    setup,
    stable_group,
    sync_request,
)
from .session import RuleSession, expect, expect_error

# ---- SyncGroup (GroupMetadataManager.classicGroupSync) -----------------------------------------------


@rule(
    "groups.sync-hands-leader-its-assignment",
    api=SYNC,
    versions=(0, 5),
    family=_F,
    source="GroupMetadataManager.classicGroupSyncToLeader",
)
async def sync_leader(s: RuleSession, version: int) -> None:
    """The leader's SyncGroup stores the assignment it carries and answers the leader its own part."""
    group = s.name("g")
    client = await s.coordinator(group)
    joined = await joined_member(s, client, group)
    plan = [(joined.member_id, b"mine")]
    body = await call(
        s, client, SYNC, version, sync_request(group, joined.generation_id, joined.member_id, plan)
    )
    expect_error("error_code", body.error_code, Errors.NONE)
    expect("assignment", body.assignment, b"mine")


@rule(
    "groups.sync-stable-answers-stored-assignment",
    api=SYNC,
    versions=(0, 5),
    family=_F,
    source="GroupMetadataManager.classicGroupSync STABLE",
)
async def sync_stable(s: RuleSession, version: int) -> None:
    """A SyncGroup in a stable group answers the member's stored assignment."""
    group, client, joined = await stable_group(s)
    body = await call(s, client, SYNC, version, sync_request(group, joined.generation_id, joined.member_id))
    expect_error("error_code", body.error_code, Errors.NONE)
    expect("assignment", body.assignment, b"assignment-" + joined.member_id.encode())


@rule(
    "groups.sync-answers-protocol-type-and-name",
    api=SYNC,
    versions=(5, 5),
    family=_F,
    source="GroupMetadataManager.classicGroupSync protocolType",
)
async def sync_names(s: RuleSession, version: int) -> None:
    """From v5, SyncGroup answers the group's protocol type and chosen protocol name."""
    group, client, joined = await stable_group(s)
    body = await call(s, client, SYNC, version, sync_request(group, joined.generation_id, joined.member_id))
    expect("(protocol_type, protocol_name)", (body.protocol_type, body.protocol_name), ("consumer", "range"))


_SYNC_CASES = {
    "unknown-group": ("a SyncGroup for a group that does not exist", Errors.UNKNOWN_MEMBER_ID, (0, 5),
                      "GroupMetadataManager.classicGroupSync getOrMaybeCreateClassicGroup"),
    "unknown-member": ("a SyncGroup from a member the group does not have", Errors.UNKNOWN_MEMBER_ID, (0, 5),
                       "ClassicGroup.validateMember hasMember"),
    "wrong-generation": ("a SyncGroup at another generation", Errors.ILLEGAL_GENERATION, (0, 5),
                         "GroupMetadataManager.validateSyncGroup generationId"),
    "wrong-protocol-type": ("a SyncGroup naming another protocol type", Errors.INCONSISTENT_GROUP_PROTOCOL,
                            (5, 5), "GroupMetadataManager.validateSyncGroup isProtocolTypeConsistent"),
    "wrong-protocol-name": ("a SyncGroup naming another protocol", Errors.INCONSISTENT_GROUP_PROTOCOL, (5, 5),
                            "GroupMetadataManager.validateSyncGroup isProtocolNameConsistent"),
    "fenced-instance": ("a SyncGroup with a static member's instance id and another member id",
                        Errors.FENCED_INSTANCE_ID, (3, 5), "ClassicGroup.validateMember groupInstanceId"),
}  # fmt: skip


def _sync_case(case: str):
    async def check(s: RuleSession, version: int) -> None:
        instance = s.name("i") if case == "fenced-instance" else None
        group, client, joined = await stable_group(s, instance_id=instance)
        gen, member, kw = joined.generation_id, joined.member_id, {}
        if case == "unknown-group":
            group = s.name("g")
            client = await s.coordinator(group)
        elif case in ("unknown-member", "fenced-instance"):
            member = "made-up-member"
            kw["instance_id"] = instance
        elif case == "wrong-generation":
            gen += 1
        elif case == "wrong-protocol-type":
            kw["ptype"] = "connect"
        else:
            kw["name"] = "roundrobin"
        body = await call(s, client, SYNC, version, sync_request(group, gen, member, **kw))
        expect_error("error_code", body.error_code, _SYNC_CASES[case][1])

    return check


for _case, (_what, _error, _versions, _source) in _SYNC_CASES.items():
    add(
        Rule(
            id=f"groups.sync-{_case}",
            api=SYNC,
            versions=_versions,
            source=_source,
            family=_F,
            text=f"{_what[0].upper()}{_what[1:]} is {error_for(_error).name}.",
            check=_sync_case(_case),
        )
    )


@rule(
    "groups.sync-during-rebalance",
    api=SYNC,
    versions=(0, 5),
    family=_F,
    source="GroupMetadataManager.classicGroupSync PREPARING_REBALANCE",
)
async def sync_rebalancing(s: RuleSession, version: int) -> None:
    """A SyncGroup while the group prepares a rebalance is REBALANCE_IN_PROGRESS."""
    group, client, joined, pending = await rebalancing(s)
    try:
        body = await call(
            s, client, SYNC, version, sync_request(group, joined.generation_id, joined.member_id)
        )
        expect_error("error_code", body.error_code, Errors.REBALANCE_IN_PROGRESS)
    finally:
        _done(pending)


# ---- Heartbeat (GroupMetadataManager.classicGroupHeartbeat) --------------------------------------------


_HEARTBEAT_CASES = {
    "stable-member": ("a Heartbeat of a member of a stable group at its generation", Errors.NONE, (0, 4),
                      "GroupMetadataManager.classicGroupHeartbeat"),
    "unknown-group": ("a Heartbeat for a group that does not exist", Errors.UNKNOWN_MEMBER_ID, (0, 4),
                      "GroupMetadataManager.classicGroupHeartbeat getOrMaybeCreateClassicGroup"),
    "unknown-member": ("a Heartbeat from a member the group does not have", Errors.UNKNOWN_MEMBER_ID, (0, 4),
                       "GroupMetadataManager.validateClassicGroupHeartbeat validateMember"),
    "wrong-generation": ("a Heartbeat at another generation", Errors.ILLEGAL_GENERATION, (0, 4),
                         "GroupMetadataManager.validateClassicGroupHeartbeat generationId"),
    "fenced-instance": ("a Heartbeat with a static member's instance id and another member id",
                        Errors.FENCED_INSTANCE_ID, (3, 4), "ClassicGroup.validateMember groupInstanceId"),
}  # fmt: skip


def _heartbeat_case(case: str):
    async def check(s: RuleSession, version: int) -> None:
        instance = s.name("i") if case == "fenced-instance" else None
        group, client, joined = await stable_group(s, instance_id=instance)
        gen, member = joined.generation_id, joined.member_id
        if case == "unknown-group":
            group = s.name("g")
            client = await s.coordinator(group)
        elif case in ("unknown-member", "fenced-instance"):
            member = "made-up-member"
        elif case == "wrong-generation":
            gen += 1
        code = await heartbeat(s, client, version, group, gen, member, instance)
        expect_error("error_code", code, _HEARTBEAT_CASES[case][1])

    return check


for _case, (_what, _error, _versions, _source) in _HEARTBEAT_CASES.items():
    add(
        Rule(
            id=f"groups.heartbeat-{_case}",
            api=HEARTBEAT,
            versions=_versions,
            source=_source,
            family=_F,
            text=f"{_what[0].upper()}{_what[1:]} is answered {error_for(_error).name}.",
            check=_heartbeat_case(_case),
        )
    )


@rule(
    "groups.heartbeat-during-rebalance",
    api=HEARTBEAT,
    versions=(0, 4),
    family=_F,
    source="GroupMetadataManager.classicGroupHeartbeat PREPARING_REBALANCE",
)
async def heartbeat_rebalancing(s: RuleSession, version: int) -> None:
    """A Heartbeat while the group prepares a rebalance is REBALANCE_IN_PROGRESS, telling the member to
    join again."""
    group, client, joined, pending = await rebalancing(s)
    try:
        code = await heartbeat(s, client, version, group, joined.generation_id, joined.member_id)
        expect_error("error_code", code, Errors.REBALANCE_IN_PROGRESS)
    finally:
        _done(pending)


@rule(
    "groups.heartbeat-completing-rebalance",
    api=HEARTBEAT,
    versions=(0, 4),
    family=_F,
    source="GroupMetadataManager.classicGroupHeartbeat COMPLETING_REBALANCE",
)
async def heartbeat_completing(s: RuleSession, version: int) -> None:
    """A Heartbeat of a joined member before the leader's SyncGroup (CompletingRebalance) is NONE."""
    group = s.name("g")
    client = await s.coordinator(group)
    joined = await joined_member(s, client, group)
    code = await heartbeat(s, client, version, group, joined.generation_id, joined.member_id)
    expect_error("error_code", code, Errors.NONE)


@rule(
    "groups.member-expires-after-session-timeout",
    api=JOIN,
    versions=(0, 9),
    family=_F,
    once=True,
    source="GroupMetadataManager.onClassicGroupMemberSessionExpired",
)
async def member_expires(s: RuleSession, version: int) -> None:
    """A member that does not heartbeat within its session timeout is removed (its heartbeat is then
    UNKNOWN_MEMBER_ID) and its group empties."""
    group, client, joined = await stable_group(s, session_ms=6000)
    await asyncio.sleep(9)  # the 6 s session and some slack for the coordinator's timer
    await expect_state(s, client, group, "Empty")
    code = await heartbeat(s, client, setup(s, HEARTBEAT), group, joined.generation_id, joined.member_id)
    expect_error("heartbeat after the session: error_code", code, Errors.UNKNOWN_MEMBER_ID)
