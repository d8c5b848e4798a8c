"""Rules of KIP-848 consumer groups: ConsumerGroupHeartbeat and ConsumerGroupDescribe, and the offset and
admin APIs against such a group, as Kafka's GroupMetadataManager decides them (consumerGroupHeartbeat,
throwIfConsumerGroupHeartbeatRequestIsInvalid, consumerGroupDescribe). They run only where the target
advertises the APIs."""

from __future__ import annotations

import uuid

from kconform.codecs.errors import Errors, error_for
from kconform.codecs.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
    DeleteGroupsRequest,
)

from .catalogue import Rule, add, rule
from .rules_group_offsets import OFFSET_COMMIT, OFFSET_FETCH, commit, fetch, fetch_request, fetched
from .rules_groups import DELETE_GROUPS, call, make_topic, setup, stable_group
from .session import RuleSession, SetupFailed, expect, expect_error

HEARTBEAT, DESCRIBE = 68, 69
_F = "kip848"


def _v(s: RuleSession, api: int, low: int) -> int:
    """The newest version of ``api`` the target serves, which must be at least ``low``."""
    if s.versions.get(api, (0, -1))[1] < low:
        raise SetupFailed(f"API {api} below v{low}: {s.versions.get(api)}")
    return s.versions[api][1]


def member_id() -> str:
    return uuid.uuid4().hex[:22]


def beat(group: str, member: str, epoch: int = 0, **kw) -> ConsumerGroupHeartbeatRequest:
    """A joining heartbeat (epoch 0 carries the full subscription) unless ``kw`` says otherwise."""
    fields = dict(
        group_id=group,
        member_id=member,
        member_epoch=epoch,
        rebalance_timeout_ms=5000,
        subscribed_topic_names=[],
        topic_partitions=[],
    )
    fields.update(kw)
    return ConsumerGroupHeartbeatRequest(**fields)


async def consumer_group(s: RuleSession, partitions: int = 2):
    """A topic and a consumer group of one member subscribed to it: (group, client, topic, topic id,
    member id, the member's first heartbeat answer)."""
    topic, topic_id, _ = await make_topic(s, partitions)
    group, member = s.name("g"), member_id()
    client = await s.coordinator(group)
    body = await call(
        s, client, HEARTBEAT, _v(s, HEARTBEAT, 0), beat(group, member, subscribed_topic_names=[topic])
    )
    if body.error_code != Errors.NONE:
        raise SetupFailed(f"joining consumer group {group}: error {body.error_code}")
    return group, client, topic, topic_id, member, body


@rule("kip848.join-at-epoch-one-with-the-partitions", api=HEARTBEAT, versions=(0, 1), family=_F, since="4.0",
      source="GroupMetadataManager.consumerGroupHeartbeat")  # fmt: skip
async def join_epoch_one(s: RuleSession, version: int) -> None:
    """A member joining a new consumer group (epoch 0) is answered NONE at member epoch 1 with its own
    member id and every partition of the topics it subscribes to."""
    topic, topic_id, count = await make_topic(s, 2)
    group, member = s.name("g"), member_id()
    client = await s.coordinator(group)
    body = await call(s, client, HEARTBEAT, version, beat(group, member, subscribed_topic_names=[topic]))
    expect_error("error_code", body.error_code, Errors.NONE)
    expect("(member_id, member_epoch)", (body.member_id, body.member_epoch), (member, 1))
    got = [
        (tp.topic_id, sorted(tp.partitions))
        for tp in (body.assignment.topic_partitions if body.assignment else [])
    ]
    expect("assignment", got, [(topic_id, list(range(count)))])
    expect("heartbeat_interval_ms > 0", body.heartbeat_interval_ms > 0, True)


@rule("kip848.v0-join-without-member-id-gets-one", api=HEARTBEAT, versions=(0, 0), family=_F, since="4.0",
      source="GroupMetadataManager.consumerGroupHeartbeat Uuid.randomUuid")  # fmt: skip
async def v0_member_id(s: RuleSession, version: int) -> None:
    """At v0, a member joining with an empty member id is given one by the coordinator."""
    group = s.name("g")
    body = await call(s, await s.coordinator(group), HEARTBEAT, version, beat(group, ""))
    expect_error("error_code", body.error_code, Errors.NONE)
    expect("member_id is set", bool(body.member_id), True)


_ALL = (0, 1)
_INVALID = {
    "empty-group-id": ({"group_id": ""}, "the group id is empty", _ALL),
    "empty-instance-id": ({"instance_id": ""}, "the instance id is empty", _ALL),
    "empty-rack-id": ({"rack_id": ""}, "the rack id is empty", _ALL),
    "no-rebalance-timeout": ({"rebalance_timeout_ms": -1}, "a joiner gives no rebalance timeout", _ALL),
    "null-owned-on-join": ({"topic_partitions": None}, "a joiner sends null owned partitions", _ALL),
    "no-subscription-on-join": ({"subscribed_topic_names": None}, "a joiner subscribes to nothing", _ALL),
    "static-leave-without-instance-id": ({"member_epoch": -2}, "epoch -2 comes without an instance id", _ALL),
    "epoch-below-minus-two": ({"member_epoch": -3}, "the member epoch is below -2", _ALL),
    "empty-member-id": ({"member_id": ""}, "the member id is empty", (1, 1)),
}  # fmt: skip


def _invalid(fields: dict):
    async def check(s: RuleSession, version: int) -> None:
        group = s.name("g")
        request = beat(group, member_id())
        for k, v in fields.items():
            setattr(request, k, v)
        body = await call(s, await s.coordinator(group), HEARTBEAT, version, request)
        expect_error("error_code", body.error_code, Errors.INVALID_REQUEST)

    return check


for _case, (_fields, _what, _versions) in _INVALID.items():
    add(
        Rule(
            id=f"kip848.heartbeat-invalid-{_case}",
            api=HEARTBEAT,
            versions=_versions,
            source="GroupMetadataManager.throwIfConsumerGroupHeartbeatRequestIsInvalid",
            family=_F,
            since="4.0",
            text=f"A ConsumerGroupHeartbeat where {_what} is INVALID_REQUEST.",
            check=_invalid(_fields),
        )
    )


@rule("kip848.unknown-server-assignor", api=HEARTBEAT, versions=(0, 1), family=_F, since="4.0",
      source="GroupMetadataManager.throwIfConsumerGroupHeartbeatRequestIsInvalid assignors")  # fmt: skip
async def unknown_assignor(s: RuleSession, version: int) -> None:
    """A ConsumerGroupHeartbeat naming a server assignor the coordinator does not have is
    UNSUPPORTED_ASSIGNOR."""
    group = s.name("g")
    request = beat(group, member_id(), server_assignor="no-such-assignor")
    body = await call(s, await s.coordinator(group), HEARTBEAT, version, request)
    expect_error("error_code", body.error_code, Errors.UNSUPPORTED_ASSIGNOR)


@rule("kip848.invalid-regular-expression", api=HEARTBEAT, versions=(1, 1), family=_F, since="4.0",
      source="GroupMetadataManager.throwIfRegularExpressionIsInvalid")  # fmt: skip
async def invalid_regex(s: RuleSession, version: int) -> None:
    """From v1, a subscription regex that does not compile is INVALID_REGULAR_EXPRESSION."""
    group = s.name("g")
    request = beat(group, member_id(), subscribed_topic_names=None, subscribed_topic_regex="t(")
    body = await call(s, await s.coordinator(group), HEARTBEAT, version, request)
    expect_error("error_code", body.error_code, Errors.INVALID_REGULAR_EXPRESSION)


@rule("kip848.heartbeat-unknown-group", api=HEARTBEAT, versions=(0, 1), family=_F, since="4.0",
      source="GroupMetadataManager.getOrMaybeCreateConsumerGroup createIfNotExists")  # fmt: skip
async def heartbeat_unknown_group(s: RuleSession, version: int) -> None:
    """A ConsumerGroupHeartbeat with an epoch above 0 for a group that does not exist is
    GROUP_ID_NOT_FOUND."""
    group = s.name("g")
    request = beat(
        group, member_id(), 1, rebalance_timeout_ms=-1, subscribed_topic_names=None, topic_partitions=None
    )
    body = await call(s, await s.coordinator(group), HEARTBEAT, version, request)
    expect_error("error_code", body.error_code, Errors.GROUP_ID_NOT_FOUND)


@rule("kip848.leave-unknown-group", api=HEARTBEAT, versions=(0, 1), family=_F, since="4.0",
      source="GroupMetadataManager.consumerGroupLeave")  # fmt: skip
async def leave_unknown_group(s: RuleSession, version: int) -> None:
    """A ConsumerGroupHeartbeat leaving (epoch -1) a group that does not exist is GROUP_ID_NOT_FOUND."""
    group = s.name("g")
    request = beat(
        group, member_id(), -1, rebalance_timeout_ms=-1, subscribed_topic_names=None, topic_partitions=None
    )
    body = await call(s, await s.coordinator(group), HEARTBEAT, version, request)
    expect_error("error_code", body.error_code, Errors.GROUP_ID_NOT_FOUND)


def _poll(group: str, member: str, epoch: int) -> ConsumerGroupHeartbeatRequest:
    return beat(
        group, member, epoch, rebalance_timeout_ms=-1, subscribed_topic_names=None, topic_partitions=None
    )


@rule("kip848.heartbeat-unknown-member", api=HEARTBEAT, versions=(0, 1), family=_F, since="4.0",
      source="ConsumerGroup.getOrMaybeCreateMember UnknownMemberIdException")  # fmt: skip
async def heartbeat_unknown_member(s: RuleSession, version: int) -> None:
    """A ConsumerGroupHeartbeat with an epoch above 0 from a member the group does not have is
    UNKNOWN_MEMBER_ID."""
    group, client, *_ = await consumer_group(s)
    body = await call(s, client, HEARTBEAT, version, _poll(group, member_id(), 1))
    expect_error("error_code", body.error_code, Errors.UNKNOWN_MEMBER_ID)


@rule("kip848.heartbeat-epoch-ahead-fenced", api=HEARTBEAT, versions=(0, 1), family=_F, since="4.0",
      source="GroupMetadataManager.throwIfMemberEpochIsInvalid")  # fmt: skip
async def heartbeat_fenced(s: RuleSession, version: int) -> None:
    """A ConsumerGroupHeartbeat with a member epoch above the member's is FENCED_MEMBER_EPOCH."""
    group, client, _, _, member, joined = await consumer_group(s)
    body = await call(s, client, HEARTBEAT, version, _poll(group, member, joined.member_epoch + 5))
    expect_error("error_code", body.error_code, Errors.FENCED_MEMBER_EPOCH)


@rule("kip848.heartbeat-current-epoch", api=HEARTBEAT, versions=(0, 1), family=_F, since="4.0",
      source="GroupMetadataManager.consumerGroupHeartbeat")  # fmt: skip
async def heartbeat_current(s: RuleSession, version: int) -> None:
    """A ConsumerGroupHeartbeat of a member at its current epoch is NONE and keeps the epoch."""
    group, client, _, _, member, joined = await consumer_group(s)
    body = await call(s, client, HEARTBEAT, version, _poll(group, member, joined.member_epoch))
    expect(
        "(error_code, member_epoch)", (body.error_code, body.member_epoch), (Errors.NONE, joined.member_epoch)
    )


@rule("kip848.leave-then-unknown", api=HEARTBEAT, versions=(0, 1), family=_F, since="4.0",
      source="GroupMetadataManager.consumerGroupLeave")  # fmt: skip
async def leave(s: RuleSession, version: int) -> None:
    """A member leaving with epoch -1 is answered NONE at epoch -1, and is then unknown to the group."""
    group, client, _, _, member, joined = await consumer_group(s)
    body = await call(s, client, HEARTBEAT, version, _poll(group, member, -1))
    expect("(error_code, member_id, member_epoch)", (body.error_code, body.member_id, body.member_epoch),
           (Errors.NONE, member, -1))  # fmt: skip
    again = await call(s, client, HEARTBEAT, version, _poll(group, member, joined.member_epoch))
    expect_error("after leaving: error_code", again.error_code, Errors.UNKNOWN_MEMBER_ID)


@rule("kip848.classic-group-with-members-not-upgraded", api=HEARTBEAT, versions=_ALL, family=_F, since="4.0",
      source="GroupMetadataManager.validateOnlineUpgrade usesConsumerGroupProtocol")  # fmt: skip
async def classic_not_upgraded(s: RuleSession, version: int) -> None:
    """A ConsumerGroupHeartbeat for a classic group with members not using the consumer protocol is
    GROUP_ID_NOT_FOUND."""
    group, client, _ = await stable_group(s, protocol_type="connect")
    body = await call(s, client, HEARTBEAT, version, beat(group, member_id(), subscribed_topic_names=["t"]))
    expect_error("error_code", body.error_code, Errors.GROUP_ID_NOT_FOUND)


# ---- ConsumerGroupDescribe (GroupMetadataManager.consumerGroupDescribe) -----------------------------


async def _describe(s: RuleSession, client, version: int, group: str):
    body = await call(s, client, DESCRIBE, version, ConsumerGroupDescribeRequest(group_ids=[group]))
    return body.groups[0]


@rule("kip848.describe-group", api=DESCRIBE, versions=(0, 1), family=_F, since="4.0",
      source="ConsumerGroup.asDescribedGroup")  # fmt: skip
async def describe_group(s: RuleSession, version: int) -> None:
    """ConsumerGroupDescribe answers a consumer group's state, epoch and members with their epochs and
    subscriptions."""
    group, client, topic, _, member, joined = await consumer_group(s)
    g = await _describe(s, client, version, group)
    expect_error("error_code", g.error_code, Errors.NONE)
    expect("(group_state, group_epoch)", (g.group_state, g.group_epoch), ("Stable", 1))
    expect("members", [(m.member_id, m.member_epoch, m.subscribed_topic_names) for m in g.members],
           [(member, joined.member_epoch, [topic])])  # fmt: skip


@rule("kip848.describe-member-type", api=DESCRIBE, versions=(1, 1), family=_F, since="4.0",
      source="ConsumerGroupMember.asConsumerGroupDescribeMember memberType")  # fmt: skip
async def describe_member_type(s: RuleSession, version: int) -> None:
    """From v1 (KIP-1099), ConsumerGroupDescribe gives a member of the consumer protocol member type 1."""
    group, client, *_ = await consumer_group(s)
    g = await _describe(s, client, version, group)
    expect("members[].member_type", [m.member_type for m in g.members], [1])


@rule("kip848.describe-unknown-group", api=DESCRIBE, versions=(0, 1), family=_F, since="4.0",
      source="GroupMetadataManager.consumerGroupDescribe GroupIdNotFoundException")  # fmt: skip
async def describe_unknown(s: RuleSession, version: int) -> None:
    """ConsumerGroupDescribe of a group that does not exist is GROUP_ID_NOT_FOUND."""
    group = s.name("g")
    g = await _describe(s, await s.coordinator(group), version, group)
    expect_error("error_code", g.error_code, Errors.GROUP_ID_NOT_FOUND)


@rule("kip848.describe-classic-group", api=DESCRIBE, versions=(0, 1), family=_F, since="4.0",
      source="GroupMetadataManager.consumerGroup GroupIdNotFoundException")  # fmt: skip
async def describe_classic(s: RuleSession, version: int) -> None:
    """ConsumerGroupDescribe of a classic group is GROUP_ID_NOT_FOUND."""
    group, client, _ = await stable_group(s)
    g = await _describe(s, client, version, group)
    expect_error("error_code", g.error_code, Errors.GROUP_ID_NOT_FOUND)


@rule("kip848.describe-empty-group-id", api=DESCRIBE, versions=(0, 1), family=_F, since="4.0",
      source="GroupCoordinatorService.consumerGroupDescribe isGroupIdNotEmpty")  # fmt: skip
async def describe_empty_id(s: RuleSession, version: int) -> None:
    """ConsumerGroupDescribe of an empty group id is INVALID_GROUP_ID."""
    g = await _describe(s, await s.raw(), version, "")
    expect_error("error_code", g.error_code, Errors.INVALID_GROUP_ID)


# ---- offsets and admin against a consumer group -------------------------------------------------------


_COMMITS = {
    "current-epoch": (0, Errors.NONE, "at the member's epoch", "ConsumerGroup.validateOffsetCommit"),
    "stale-epoch": (-1, Errors.STALE_MEMBER_EPOCH, "at an older member epoch",
                    "ConsumerGroup.validateOffsetCommit STALE_MEMBER_EPOCH"),
    "unknown-member": (None, Errors.UNKNOWN_MEMBER_ID, "by a member id the group does not have",
                       "ConsumerGroup.getOrMaybeCreateMember UnknownMemberIdException"),
}  # fmt: skip


def _commit_case(delta, error):
    async def check(s: RuleSession, version: int) -> None:
        group, client, topic, topic_id, member, joined = await consumer_group(s)
        epoch = joined.member_epoch + (delta or 0)
        who = member if delta is not None else member_id()
        codes = await commit(s, client, _v(s, OFFSET_COMMIT, 9), group, topic, topic_id, {0: 1},
                             generation=epoch, member=who)  # fmt: skip
        expect_error("error_code", codes[0], error)

    return check


for _case, (_delta, _error, _what, _source) in _COMMITS.items():
    add(
        Rule(
            id=f"kip848.offset-commit-{_case}",
            api=HEARTBEAT,
            versions=(0, 1),
            once=True,
            source=_source,
            family=_F,
            since="4.0",
            text=f"An OffsetCommit to a consumer group {_what} is {error_for(_error).name}.",
            check=_commit_case(_delta, _error),
        )
    )


@rule("kip848.offset-fetch-stale-epoch", api=HEARTBEAT, versions=(0, 1), family=_F, since="4.0", once=True,
      source="ConsumerGroup.validateOffsetFetch STALE_MEMBER_EPOCH")  # fmt: skip
async def fetch_stale(s: RuleSession, version: int) -> None:
    """From v9, an OffsetFetch naming a consumer group member at an older epoch is STALE_MEMBER_EPOCH."""
    group, client, topic, topic_id, member, joined = await consumer_group(s)
    version = _v(s, OFFSET_FETCH, 9)
    request = fetch_request(version, {group: (topic, topic_id, [0])})
    request.groups[0].member_id = member
    request.groups[0].member_epoch = joined.member_epoch - 1
    error, _ = fetched(version, await call(s, client, OFFSET_FETCH, version, request))
    expect_error("groups[].error_code", error, Errors.STALE_MEMBER_EPOCH)


@rule("kip848.offset-fetch-without-member", api=HEARTBEAT, versions=(0, 1), family=_F, since="4.0", once=True,
      source="ConsumerGroup.validateOffsetFetch memberEpoch")  # fmt: skip
async def fetch_admin(s: RuleSession, version: int) -> None:
    """An OffsetFetch of a consumer group naming no member (an admin's) answers the committed offsets."""
    group, client, topic, topic_id, member, joined = await consumer_group(s)
    codes = await commit(s, client, _v(s, OFFSET_COMMIT, 9), group, topic, topic_id, {0: 6},
                         generation=joined.member_epoch, member=member)  # fmt: skip
    if codes[0] != Errors.NONE:
        raise SetupFailed(f"member commit: {codes}")
    error, got = await fetch(s, client, setup(s, OFFSET_FETCH), group, topic, topic_id, [0])
    expect("partitions", {p: (o, e) for p, (o, _, e) in got.items()}, {0: (6, Errors.NONE)})


@rule("kip848.delete-group-with-members", api=HEARTBEAT, versions=(0, 1), family=_F, since="4.0", once=True,
      source="ConsumerGroup.validateDeleteGroup NON_EMPTY_GROUP")  # fmt: skip
async def delete_busy(s: RuleSession, version: int) -> None:
    """DeleteGroups of a consumer group with members is NON_EMPTY_GROUP."""
    group, client, *_ = await consumer_group(s)
    request = DeleteGroupsRequest(groups_names=[group])
    body = await call(s, client, DELETE_GROUPS, setup(s, DELETE_GROUPS), request)
    expect_error("results[].error_code", body.results[0].error_code, Errors.NON_EMPTY_GROUP)
