"""Rules of leaving and describing classic groups: LeaveGroup, DescribeGroups, ListGroups and DeleteGroups."""

from __future__ import annotations

from kconform.codecs.errors import Errors
from kconform.codecs.messages import (
    DeleteGroupsRequest,
    LeaveGroupRequest,
    ListGroupsRequest,
)

from .catalogue import rule
from .rules_group_offsets import (
    _G,
    OFFSET_FETCH,
    fetch,
    simple_commit,
)
from .rules_group_offsets_fetch_delete import same_coordinator
from .rules_groups import (
    DELETE_GROUPS,
    DESCRIBE,
    LEAVE,
    LIST,
    call,
    describe,
    expect_state,
    joined_member,
    make_topic,
    rebalancing,
    setup,
    stable_group,
    subscription,
)
from .session import RuleSession, expect, expect_error

# ---- LeaveGroup (GroupMetadataManager.classicGroupLeave) ------------------------------------------------


def leave_request(version: int, group: str, members: list[tuple[str, str | None]]) -> LeaveGroupRequest:
    if version < 3:
        return LeaveGroupRequest(group_id=group, member_id=members[0][0])
    return LeaveGroupRequest(
        group_id=group,
        members=[LeaveGroupRequest.MemberIdentity(member_id=m, group_instance_id=i) for m, i in members],
    )


@rule(
    "groups.leave-empties-the-group",
    api=LEAVE,
    versions=(0, 5),
    family=_G,
    source="GroupMetadataManager.classicGroupLeave removeMemberAndUpdateClassicGroup",
)
async def leave_member(s: RuleSession, version: int) -> None:
    """A LeaveGroup of a group's only member is NONE and leaves the group Empty."""
    group, client, joined = await stable_group(s)
    body = await call(s, client, LEAVE, version, leave_request(version, group, [(joined.member_id, None)]))
    expect_error("error_code", body.error_code, Errors.NONE)
    if version >= 3:
        expect("members[].error_code", [m.error_code for m in body.members], [Errors.NONE])
    await expect_state(s, client, group, "Empty")


@rule(
    "groups.leave-batch-answers-each-member",
    api=LEAVE,
    versions=(3, 5),
    family=_G,
    source="GroupMetadataManager.classicGroupLeave memberResponses",
)
async def leave_batch(s: RuleSession, version: int) -> None:
    """From v3, LeaveGroup answers each member of the batch: a member of the group leaves (NONE), an
    unknown one is UNKNOWN_MEMBER_ID, and the request as a whole is NONE."""
    group, client, joined = await stable_group(s)
    request = leave_request(version, group, [(joined.member_id, None), ("made-up-member", None)])
    body = await call(s, client, LEAVE, version, request)
    expect_error("error_code", body.error_code, Errors.NONE)
    expect(
        "members",
        [(m.member_id, m.error_code) for m in body.members],
        [(joined.member_id, Errors.NONE), ("made-up-member", Errors.UNKNOWN_MEMBER_ID)],
    )


@rule(
    "groups.leave-unknown-group",
    api=LEAVE,
    versions=(0, 5),
    family=_G,
    source="GroupCoordinatorService.leaveGroup UNKNOWN_MEMBER_ID",
)
async def leave_unknown_group(s: RuleSession, version: int) -> None:
    """A LeaveGroup for a group that does not exist names each member UNKNOWN_MEMBER_ID (from v3 per
    member, with NONE for the request; before v3 as the request's error)."""
    group = s.name("g")
    body = await call(
        s, await s.coordinator(group), LEAVE, version, leave_request(version, group, [("m", None)])
    )
    if version >= 3:
        expect_error("error_code", body.error_code, Errors.NONE)
        expect("members[].error_code", [m.error_code for m in body.members], [Errors.UNKNOWN_MEMBER_ID])
    else:
        expect_error("error_code", body.error_code, Errors.UNKNOWN_MEMBER_ID)


@rule(
    "groups.leave-unknown-member",
    api=LEAVE,
    versions=(0, 2),
    family=_G,
    source="GroupMetadataManager.classicGroupLeave hasMember",
)
async def leave_unknown_member(s: RuleSession, version: int) -> None:
    """Before v3, a LeaveGroup from a member the group does not have is UNKNOWN_MEMBER_ID."""
    group, client, _ = await stable_group(s)
    body = await call(s, client, LEAVE, version, leave_request(version, group, [("made-up-member", None)]))
    expect_error("error_code", body.error_code, Errors.UNKNOWN_MEMBER_ID)


@rule(
    "groups.leave-static-member-by-instance-id",
    api=LEAVE,
    versions=(3, 5),
    family=_G,
    source="GroupMetadataManager.classicGroupLeave staticMemberId",
)
async def leave_static(s: RuleSession, version: int) -> None:
    """From v3, a static member leaves by its group instance id alone (no member id): NONE."""
    instance = s.name("i")
    group, client, _ = await stable_group(s, instance_id=instance)
    body = await call(s, client, LEAVE, version, leave_request(version, group, [("", instance)]))
    expect("members[].error_code", [m.error_code for m in body.members], [Errors.NONE])
    await expect_state(s, client, group, "Empty")


@rule(
    "groups.leave-static-member-fenced",
    api=LEAVE,
    versions=(3, 5),
    family=_G,
    source="GroupMetadataManager.validateClassicGroupMemberLeave FENCED_INSTANCE_ID",
)
async def leave_static_fenced(s: RuleSession, version: int) -> None:
    """From v3, leaving with a static member's instance id and another member id is FENCED_INSTANCE_ID."""
    instance = s.name("i")
    group, client, _ = await stable_group(s, instance_id=instance)
    body = await call(
        s, client, LEAVE, version, leave_request(version, group, [("made-up-member", instance)])
    )
    expect("members[].error_code", [m.error_code for m in body.members], [Errors.FENCED_INSTANCE_ID])


# ---- DescribeGroups (GroupMetadataManager.describeGroups) ------------------------------------------------


@rule(
    "groups.describe-stable-group",
    api=DESCRIBE,
    versions=(0, 6),
    family=_G,
    source="GroupMetadataManager.describeGroups ClassicGroup.describe",
)
async def describe_stable(s: RuleSession, version: int) -> None:
    """DescribeGroups of a stable group answers its state, protocol type, protocol and each member with
    its metadata and assignment."""
    group, client, joined = await stable_group(s, topics=("t",))
    d = await describe(s, client, group, version)
    expect_error("error_code", d.error_code, Errors.NONE)
    expect(
        "(group_state, protocol_type, protocol_data)",
        (d.group_state, d.protocol_type, d.protocol_data),
        ("Stable", "consumer", "range"),
    )
    expect(
        "members",
        [(m.member_id, m.member_metadata, m.member_assignment) for m in d.members],
        [(joined.member_id, subscription("t"), b"assignment-" + joined.member_id.encode())],
    )


@rule(
    "groups.describe-unknown-group-dead",
    api=DESCRIBE,
    versions=(0, 5),
    family=_G,
    source="GroupMetadataManager.describeGroups DEAD",
)
async def describe_unknown(s: RuleSession, version: int) -> None:
    """Before v6, DescribeGroups of a group that does not exist answers NONE with state Dead."""
    group = s.name("g")
    d = await describe(s, await s.coordinator(group), group, version)
    expect("(error_code, group_state)", (d.error_code, d.group_state), (Errors.NONE, "Dead"))


@rule(
    "groups.describe-unknown-group-not-found",
    api=DESCRIBE,
    versions=(6, 6),
    family=_G,
    since="4.0",
    source="GroupMetadataManager.describeGroups GroupIdNotFoundException",
)
async def describe_unknown_v6(s: RuleSession, version: int) -> None:
    """From v6 (KIP-1043), DescribeGroups of a group that does not exist is GROUP_ID_NOT_FOUND, state Dead."""
    group = s.name("g")
    d = await describe(s, await s.coordinator(group), group, version)
    expect("(error_code, group_state)", (d.error_code, d.group_state), (Errors.GROUP_ID_NOT_FOUND, "Dead"))


@rule(
    "groups.describe-empty-group",
    api=DESCRIBE,
    versions=(0, 6),
    family=_G,
    source="GroupMetadataManager.describeGroups EMPTY",
)
async def describe_empty(s: RuleSession, version: int) -> None:
    """DescribeGroups of a group that only committed offsets answers state Empty and no members."""
    topic, topic_id, _ = await make_topic(s, 1)
    group = s.name("g")
    client = await simple_commit(s, group, topic, topic_id, {0: 1})
    d = await describe(s, client, group, version)
    expect(
        "(error_code, group_state, members)",
        (d.error_code, d.group_state, d.members),
        (Errors.NONE, "Empty", []),
    )


@rule(
    "groups.describe-completing-rebalance",
    api=DESCRIBE,
    versions=(0, 6),
    family=_G,
    source="ClassicGroupState.COMPLETING_REBALANCE",
)
async def describe_completing(s: RuleSession, version: int) -> None:
    """A group whose members joined but whose leader has not synced is described as CompletingRebalance."""
    group = s.name("g")
    client = await s.coordinator(group)
    await joined_member(s, client, group)
    expect("group_state", (await describe(s, client, group, version)).group_state, "CompletingRebalance")


@rule(
    "groups.describe-preparing-rebalance",
    api=DESCRIBE,
    versions=(0, 6),
    family=_G,
    source="ClassicGroupState.PREPARING_REBALANCE",
)
async def describe_preparing(s: RuleSession, version: int) -> None:
    """A group waiting for its members to join again is described as PreparingRebalance."""
    group, client, _, pending = await rebalancing(s)
    try:
        expect("group_state", (await describe(s, client, group, version)).group_state, "PreparingRebalance")
    finally:
        pending.cancel()


# ---- ListGroups and DeleteGroups --------------------------------------------------------------------------


async def _list(s: RuleSession, client, version: int, **kw) -> dict[str, object]:
    body = await call(s, client, LIST, version, ListGroupsRequest(**kw))
    expect_error("error_code", body.error_code, Errors.NONE)
    return {g.group_id: g for g in body.groups}


@rule(
    "groups.list-names-groups-with-protocol-type",
    api=LIST,
    versions=(0, 5),
    family=_G,
    source="GroupMetadataManager.listGroups",
)
async def list_groups(s: RuleSession, version: int) -> None:
    """ListGroups lists the groups the broker coordinates, each with its protocol type."""
    group, client, _ = await stable_group(s)
    listed = await _list(s, client, version)
    expect(f"groups[{group}].protocol_type", getattr(listed.get(group), "protocol_type", None), "consumer")


@rule(
    "groups.list-answers-state",
    api=LIST,
    versions=(4, 5),
    family=_G,
    source="GroupMetadataManager.listGroups stateAsString",
)
async def list_state(s: RuleSession, version: int) -> None:
    """From v4, ListGroups answers each group's state."""
    group, client, _ = await stable_group(s)
    listed = await _list(s, client, version)
    expect(f"groups[{group}].group_state", getattr(listed.get(group), "group_state", None), "Stable")


@rule(
    "groups.list-states-filter",
    api=LIST,
    versions=(4, 5),
    family=_G,
    source="GroupMetadataManager.listGroups statesFilter",
)
async def list_filter(s: RuleSession, version: int) -> None:
    """From v4, ListGroups with a states filter lists only the groups in those states, the states matched
    without regard to case."""
    topic, topic_id, _ = await make_topic(s, 1)
    group, client, _ = await stable_group(s)
    idle = await same_coordinator(s, group)
    await simple_commit(s, idle, topic, topic_id, {0: 1})
    listed = await _list(s, client, version, states_filter=["stable"])
    expect(f"{group} listed", group in listed, True)
    expect(f"{idle} (Empty) listed", idle in listed, False)


@rule(
    "groups.list-types-filter",
    api=LIST,
    versions=(5, 5),
    family=_G,
    since="3.8",
    source="GroupMetadataManager.listGroups typesFilter",
)
async def list_types(s: RuleSession, version: int) -> None:
    """From v5, ListGroups with a types filter lists only groups of those types: a classic group under
    classic, not under consumer."""
    group, client, _ = await stable_group(s)
    classic = await _list(s, client, version, types_filter=["classic"])
    consumer = await _list(s, client, version, types_filter=["consumer"])
    expect("listed under classic", group in classic, True)
    expect("listed under consumer", group in consumer, False)


async def _delete(s: RuleSession, version: int, group: str, client=None) -> int:
    client = client or await s.coordinator(group)
    body = await call(s, client, DELETE_GROUPS, version, DeleteGroupsRequest(groups_names=[group]))
    return {r.group_id: r.error_code for r in body.results}.get(group, -999)


@rule(
    "groups.delete-non-empty-group",
    api=DELETE_GROUPS,
    versions=(0, 2),
    family=_G,
    source="ClassicGroup.validateDeleteGroup NON_EMPTY_GROUP",
)
async def delete_busy(s: RuleSession, version: int) -> None:
    """DeleteGroups of a group with members is NON_EMPTY_GROUP."""
    group, client, _ = await stable_group(s)
    expect_error("results[].error_code", await _delete(s, version, group, client), Errors.NON_EMPTY_GROUP)


@rule(
    "groups.delete-unknown-group",
    api=DELETE_GROUPS,
    versions=(0, 2),
    family=_G,
    source="GroupMetadataManager.group GroupIdNotFoundException",
)
async def delete_unknown(s: RuleSession, version: int) -> None:
    """DeleteGroups of a group that does not exist is GROUP_ID_NOT_FOUND."""
    expect_error("results[].error_code", await _delete(s, version, s.name("g")), Errors.GROUP_ID_NOT_FOUND)


@rule(
    "groups.delete-empty-group-and-offsets",
    api=DELETE_GROUPS,
    versions=(0, 2),
    family=_G,
    source="GroupCoordinatorShard.deleteGroups deleteAllOffsets",
)
async def delete_empty(s: RuleSession, version: int) -> None:
    """DeleteGroups of an empty group is NONE, and its committed offsets are gone with it."""
    topic, topic_id, _ = await make_topic(s, 1)
    group = s.name("g")
    client = await simple_commit(s, group, topic, topic_id, {0: 9})
    expect_error("results[].error_code", await _delete(s, version, group, client), Errors.NONE)
    _, got = await fetch(s, client, setup(s, OFFSET_FETCH), group, topic, topic_id, [0])
    expect("offset after delete", got[0][0], -1)
