"""Classic group membership: FindCoordinator (10), JoinGroup (11), Heartbeat (12), LeaveGroup (13),
SyncGroup (14), DescribeGroups (15), ListGroups (16), DeleteGroups (42).

The decisions are the group coordinator's (``groups``); these functions translate requests and
answers. FindCoordinator follows ``KafkaApis.getCoordinator``: the first lookup of a coordinator
whose internal topic does not exist yet creates it and answers COORDINATOR_NOT_AVAILABLE, as Kafka's
asynchronous topic creation does; the client's retry finds it."""

from __future__ import annotations

from kconform.codecs.errors import Errors
from kconform.codecs.messages import (
    DeleteGroupsResponse,
    DescribeGroupsResponse,
    FindCoordinatorResponse,
    HeartbeatResponse,
    JoinGroupResponse,
    LeaveGroupResponse,
    ListGroupsResponse,
    SyncGroupResponse,
)

from ..groups.classic_group import ClassicGroup, GroupState
from ..security.acls import Operation, ResourceType
from ..security.authorization import CLUSTER_NAME, allowed, authorized_operations
from . import handles

GROUP, TRANSACTION, SHARE = 0, 1, 2
_UNSET_OPERATIONS = -2147483648


# ---- FindCoordinator ------------------------------------------------------------------------------


def _coordinator(broker, ctx, key_type: int, key: str) -> tuple[int, int, str, int]:
    """(error, node id, host, port) for one key. KafkaApis.getCoordinator asks first for DESCRIBE on the
    group or the transactional id the key names."""
    if key_type == GROUP and not allowed(broker, ctx, Operation.DESCRIBE, ResourceType.GROUP, key):
        return Errors.GROUP_AUTHORIZATION_FAILED, -1, "", -1
    if key_type == TRANSACTION and not allowed(
        broker, ctx, Operation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, key
    ):
        return Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, -1, "", -1
    listener = ctx.listener
    if key_type == SHARE:
        return Errors.INVALID_REQUEST, -1, "", -1  # share groups are not enabled (Kafka 4.0's default)
    topic = broker.consumer_offsets if key_type == GROUP else broker.transaction_state
    if not topic.exists:
        topic.ensure()
        return Errors.COORDINATOR_NOT_AVAILABLE, -1, "", -1
    # KafkaApis.getCoordinator: the leader of the key's partition, if it is an alive broker
    info = broker.topics.get(topic.name).partitions[topic.partition_for(key)]
    alive = {node_id: (host, port) for node_id, host, port, _rack in broker.alive_brokers(listener)}
    if info.leader not in alive:
        return Errors.COORDINATOR_NOT_AVAILABLE, -1, "", -1
    host, port = alive[info.leader]
    return Errors.NONE, info.leader, host, port


@handles(10)
async def find_coordinator(broker, ctx, request) -> FindCoordinatorResponse:
    version = ctx.api_version
    key_type = request.key_type if version >= 1 else GROUP
    if key_type not in (GROUP, TRANSACTION, SHARE):
        # CoordinatorType.forId throws InvalidRequestException: the whole request fails.
        if version < 4:
            return FindCoordinatorResponse(error_code=Errors.INVALID_REQUEST, node_id=-1, host="", port=-1)
        return FindCoordinatorResponse(
            coordinators=[
                FindCoordinatorResponse.Coordinator(
                    key=k, node_id=-1, host="", port=-1, error_code=Errors.INVALID_REQUEST
                )
                for k in request.coordinator_keys
            ]
        )
    if version < 4:
        error, node_id, host, port = _coordinator(broker, ctx, key_type, request.key)
        if error != Errors.NONE:
            node_id, host, port = -1, "", -1
        return FindCoordinatorResponse(error_code=error, node_id=node_id, host=host, port=port)
    coordinators = []
    for key in request.coordinator_keys:
        error, node_id, host, port = _coordinator(broker, ctx, key_type, key)
        coordinators.append(
            FindCoordinatorResponse.Coordinator(
                key=key, node_id=node_id, host=host, port=port, error_code=error
            )
        )
    return FindCoordinatorResponse(coordinators=coordinators)


# ---- JoinGroup / SyncGroup / Heartbeat / LeaveGroup -----------------------------------------------


def _may_read(broker, ctx, group_id: str) -> bool:
    """JoinGroup, SyncGroup, Heartbeat and LeaveGroup need READ on the group (KafkaApis); without it the
    request's error response carries GROUP_AUTHORIZATION_FAILED."""
    return allowed(broker, ctx, Operation.READ, ResourceType.GROUP, group_id)


def _client_host(peer: str) -> str:
    # ClassicGroupMember.clientHost is context.clientAddress.toString(): a slash, then the address; the
    # same value a consumer group keeps for the member should it join one (a mixed group).
    return "/" + peer.rsplit(":", 1)[0]


@handles(11)
async def join_group(broker, ctx, request) -> JoinGroupResponse:
    version = ctx.api_version
    if not _may_read(broker, ctx, request.group_id):
        # JoinGroupRequest.getErrorResponse
        return JoinGroupResponse(
            error_code=Errors.GROUP_AUTHORIZATION_FAILED,
            generation_id=-1,
            protocol_name=None if version >= 7 else "",
            leader="",
            member_id="",
            members=[],
        )
    rebalance_timeout = request.rebalance_timeout_ms if version >= 1 else request.session_timeout_ms
    outcome = await broker.group_coordinator.join_group(
        group_id=request.group_id,
        member_id=request.member_id,
        instance_id=request.group_instance_id if version >= 5 else None,
        protocol_type=request.protocol_type,
        protocols=[(p.name, bytes(p.metadata)) for p in request.protocols],
        session_timeout_ms=request.session_timeout_ms,
        rebalance_timeout_ms=rebalance_timeout,
        client_id=ctx.client_id or "",
        client_host=_client_host(ctx.peer),
        require_known_member_id=version >= 4,
    )
    members = [
        JoinGroupResponse.JoinGroupResponseMember(member_id=m, group_instance_id=i, metadata=meta)
        for m, i, meta in (outcome.members or [])
    ]
    return JoinGroupResponse(
        error_code=outcome.error_code,
        generation_id=outcome.generation_id,
        protocol_type=outcome.protocol_type,
        # Before v7 the name is not nullable: Kafka sends "" when there is none.
        protocol_name=outcome.protocol_name if outcome.protocol_name is not None or version >= 7 else "",
        leader=outcome.leader,
        skip_assignment=outcome.skip_assignment and version >= 9,
        member_id=outcome.member_id,
        members=members,
    )


@handles(14)
async def sync_group(broker, ctx, request) -> SyncGroupResponse:
    version = ctx.api_version
    if not _may_read(broker, ctx, request.group_id):
        return SyncGroupResponse(error_code=Errors.GROUP_AUTHORIZATION_FAILED, assignment=b"")
    outcome = await broker.group_coordinator.sync_group(
        group_id=request.group_id,
        generation=request.generation_id,
        member_id=request.member_id,
        instance_id=request.group_instance_id if version >= 3 else None,
        protocol_type=request.protocol_type if version >= 5 else None,
        protocol_name=request.protocol_name if version >= 5 else None,
        assignments=[(a.member_id, bytes(a.assignment)) for a in request.assignments],
    )
    return SyncGroupResponse(
        error_code=outcome.error_code,
        protocol_type=outcome.protocol_type,
        protocol_name=outcome.protocol_name,
        assignment=outcome.assignment,
    )


@handles(12)
async def heartbeat(broker, ctx, request) -> HeartbeatResponse:
    if not _may_read(broker, ctx, request.group_id):
        return HeartbeatResponse(error_code=Errors.GROUP_AUTHORIZATION_FAILED)
    code = await broker.group_coordinator.heartbeat(
        group_id=request.group_id,
        generation=request.generation_id,
        member_id=request.member_id,
        instance_id=request.group_instance_id if ctx.api_version >= 3 else None,
    )
    return HeartbeatResponse(error_code=code)


@handles(13)
async def leave_group(broker, ctx, request) -> LeaveGroupResponse:
    if not _may_read(broker, ctx, request.group_id):
        return LeaveGroupResponse(error_code=Errors.GROUP_AUTHORIZATION_FAILED)
    if ctx.api_version < 3:
        top, results, _ = await broker.group_coordinator.leave_group(
            request.group_id, [(request.member_id, None)]
        )
        return LeaveGroupResponse(error_code=results[0] if top == Errors.NONE else top)
    leaving = [(m.member_id, m.group_instance_id) for m in request.members]
    top, results, reported = await broker.group_coordinator.leave_group(request.group_id, leaving)
    if top == Errors.UNKNOWN_MEMBER_ID:
        # GroupCoordinatorService.leaveGroup: a group that is not found is no top-level error; every
        # member named is answered UNKNOWN_MEMBER_ID (below v3, LeaveGroupResponse lifts it to the top).
        top, results, reported = (
            Errors.NONE,
            [Errors.UNKNOWN_MEMBER_ID] * len(leaving),
            [m for m, _ in leaving],
        )
    if top != Errors.NONE:
        return LeaveGroupResponse(error_code=top)
    return LeaveGroupResponse(
        error_code=Errors.NONE,
        members=[
            LeaveGroupResponse.MemberResponse(member_id=m, group_instance_id=i, error_code=code)
            for m, (_, i), code in zip(reported, leaving, results, strict=True)
        ],
    )


# ---- DescribeGroups / ListGroups / DeleteGroups ----------------------------------------------------


def _described(broker, ctx, group_id: str, version: int, include_operations: bool):
    group = broker.group_coordinator.groups.get(group_id)
    operations = _UNSET_OPERATIONS
    if include_operations:  # KafkaApis: for every group answered without an error
        operations = authorized_operations(broker, ctx, ResourceType.GROUP, group_id)
    if group is None or not isinstance(group, ClassicGroup):
        # GroupMetadataManager.describeGroups: classicGroup() throws GroupIdNotFoundException for a
        # group that does not exist or is not a classic one. From v6 (KIP-1043) that is
        # GROUP_ID_NOT_FOUND with the exception's message; before, a Dead group with no error (whose
        # authorized operations KafkaApis then fills, as for any group without an error).
        if version >= 6:
            reason = "not found" if group is None else "is not a classic group"
            return DescribeGroupsResponse.DescribedGroup(
                error_code=Errors.GROUP_ID_NOT_FOUND,
                error_message=f"Group {group_id} {reason}.",
                group_id=group_id,
                group_state=GroupState.DEAD.value,
                protocol_type="",
                protocol_data="",
                authorized_operations=_UNSET_OPERATIONS,
            )
        return DescribeGroupsResponse.DescribedGroup(
            error_code=Errors.NONE,
            group_id=group_id,
            group_state=GroupState.DEAD.value,
            protocol_type="",
            protocol_data="",
            authorized_operations=operations,
        )
    stable = group.is_in(GroupState.STABLE)
    members = [
        DescribeGroupsResponse.DescribedGroupMember(
            member_id=m.member_id,
            group_instance_id=m.group_instance_id,
            client_id=m.client_id,
            client_host=m.client_host,
            member_metadata=m.metadata_for(group.protocol) if stable else b"",
            member_assignment=m.assignment if stable else b"",
        )
        for m in group.members.values()
    ]
    return DescribeGroupsResponse.DescribedGroup(
        error_code=Errors.NONE,
        group_id=group_id,
        group_state=group.state_name,
        protocol_type=group.protocol_type or "",
        protocol_data=(group.protocol or "") if stable else "",
        members=members,
        authorized_operations=operations,
    )


@handles(15)
async def describe_groups(broker, ctx, request) -> DescribeGroupsResponse:
    include = ctx.api_version >= 3 and request.include_authorized_operations
    # KafkaApis.handleDescribeGroupsRequest: DESCRIBE on each group; the refused ones come first
    # (DescribeGroupsResponse.groupError: no state, protocol or operations)
    refused, described = [], []
    for g in request.groups:
        if allowed(broker, ctx, Operation.DESCRIBE, ResourceType.GROUP, g):
            described.append(_described(broker, ctx, g, ctx.api_version, include))
        else:
            refused.append(
                DescribeGroupsResponse.DescribedGroup(
                    error_code=Errors.GROUP_AUTHORIZATION_FAILED,
                    group_id=g,
                    group_state="",
                    protocol_type="",
                    protocol_data="",
                    authorized_operations=_UNSET_OPERATIONS,
                )
            )
    return DescribeGroupsResponse(groups=refused + described)


@handles(16)
async def list_groups(broker, ctx, request) -> ListGroupsResponse:
    version = ctx.api_version
    states = list(request.states_filter) if version >= 4 else []
    types = list(request.types_filter) if version >= 5 else []
    listed = broker.group_coordinator.list_groups(states, types)
    # KafkaApis.handleListGroupsRequest: DESCRIBE on the cluster lists every group, else only the groups
    # the principal may describe
    if not allowed(broker, ctx, Operation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
        listed = [g for g in listed if allowed(broker, ctx, Operation.DESCRIBE, ResourceType.GROUP, g[0])]
    return ListGroupsResponse(
        error_code=Errors.NONE,
        groups=[
            ListGroupsResponse.ListedGroup(group_id=g, protocol_type=p, group_state=s, group_type=t)
            for g, p, s, t in listed
        ],
    )


@handles(42)
async def delete_groups(broker, ctx, request) -> DeleteGroupsResponse:
    # KafkaApis.handleDeleteGroupsRequest: DELETE on each group; the refused ones are answered after the
    # coordinator's results
    names, refused = [], []
    for g in request.groups_names:
        (names if allowed(broker, ctx, Operation.DELETE, ResourceType.GROUP, g) else refused).append(g)
    codes = await broker.group_coordinator.delete_groups(names) if names else []
    results = list(zip(names, codes, strict=True)) + [(g, Errors.GROUP_AUTHORIZATION_FAILED) for g in refused]
    return DeleteGroupsResponse(
        results=[DeleteGroupsResponse.DeletableGroupResult(group_id=g, error_code=c) for g, c in results]
    )
