"""The decisions of ConsumerGroupHeartbeat for KIP-848 groups (Kafka's ``GroupMetadataManager
.consumerGroupHeartbeat``): pure functions from a group as it is to an ``Outcome`` (response fields,
records to write, timers to set). See ``kip848_group`` for the steps of one heartbeat."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from uuid import UUID

from kconform.codecs.errors import Errors

from .consumer_timers import CancelRebalanceTimer, CancelTimers, RebalanceTimer, SessionTimer
from .errors import GroupError
from .kip848_assignment import _subscription_metadata, move_toward_target
from .kip848_group import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    ConsumerGroup,
    ConsumerMember,
    MemberState,
    Partitions,
    PartitionsIn,
    _is_subset,
    new_member_id,
    resolve_regex,
)
from .kip848_log_records import (
    ClassicGroupTombstone,
    CurrentAssignment,
    GroupEpoch,
    MemberSubscription,
    RegularExpression,
    ResolvedRegex,
    SubscriptionMetadata,
    TargetMember,
    TopicMetadata,
)
from .re2 import Re2SyntaxError, compile_re2

# ---- ConsumerGroupHeartbeat ------------------------------------------------------------------------


__all__ = [
    "CancelRebalanceTimer",
    "CancelTimers",
    "Heartbeat",
    "Outcome",
    "RebalanceTimer",
    "SessionTimer",
    "Settings",
    "fence",
    "heartbeat",
    "leave",
    "replace_static_member",
    "validate_heartbeat",
]


@dataclass(frozen=True)
class Heartbeat:
    """What a ConsumerGroupHeartbeat request says, with who sent it."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    owned: Mapping[UUID, frozenset[int]] | None = None
    client_id: str = ""
    client_host: str = ""
    api_version: int = 1


@dataclass(frozen=True)
class Settings:
    assignors: tuple[str, ...] = ("uniform", "range")
    max_size: int = 2**31 - 1
    heartbeat_interval_ms: int = 5000


@dataclass
class Outcome:
    """A decision: the response fields, the records to write, the timers to set. A classic request's
    decision (``mixed_rules``) carries its own ``answer``; a downgrade (``migration``) carries the classic
    group that takes the consumer group's place once the records are written."""

    member_id: str | None
    member_epoch: int
    heartbeat_interval_ms: int = 0
    assignment: Partitions | None = None
    records: list = field(default_factory=list)
    timers: list = field(default_factory=list)
    answer: object = None
    downgrade: object = None


def _invalid(message: str) -> GroupError:
    return GroupError(Errors.INVALID_REQUEST, message)


def validate_heartbeat(hb: Heartbeat, assignors: Sequence[str]) -> None:
    """Kafka's ``throwIfConsumerGroupHeartbeatRequestIsInvalid``."""
    epoch = hb.member_epoch
    if (hb.api_version >= 1 or epoch > 0 or epoch == LEAVE_GROUP_MEMBER_EPOCH) and not hb.member_id:
        raise _invalid("MemberId can't be empty.")
    if not hb.group_id:
        raise _invalid("GroupId can't be empty.")
    if hb.instance_id == "":
        raise _invalid("InstanceId can't be empty.")
    if hb.rack_id == "":
        raise _invalid("RackId can't be empty.")
    if epoch == 0:
        if hb.rebalance_timeout_ms == -1:
            raise _invalid("RebalanceTimeoutMs must be provided in first request.")
        if hb.owned is None or hb.owned:
            raise _invalid("TopicPartitions must be empty when (re-)joining.")
        if hb.subscribed_topic_names is None and hb.subscribed_topic_regex is None:
            raise _invalid(
                "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."
            )
    elif epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        if hb.instance_id is None:
            raise _invalid("InstanceId can't be null.")
    elif epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        raise _invalid("MemberEpoch is invalid.")
    if hb.server_assignor is not None and hb.server_assignor not in assignors:
        raise GroupError(
            Errors.UNSUPPORTED_ASSIGNOR,
            f"ServerAssignor {hb.server_assignor} is not supported. "
            f"Supported assignors: {', '.join(assignors)}.",
        )


def _existing_group(existing: object | None, group_id: str) -> ConsumerGroup:
    if existing is None:
        raise GroupError(Errors.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
    if not isinstance(existing, ConsumerGroup):
        raise GroupError(Errors.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group")
    return existing


def _group_to_join(existing: object | None, group_id: str, records: list) -> ConsumerGroup:
    """Kafka's ``getOrMaybeCreateConsumerGroup`` with creation allowed. An empty classic group gives
    way (its record is erased; its offsets stay); one with members is converted before this is asked
    (``migration.upgrade``), so one that reaches here is refused."""
    if existing is None:
        return ConsumerGroup(group_id)
    if isinstance(existing, ConsumerGroup):
        return existing
    if getattr(existing, "group_type", None) == "classic" and getattr(existing, "is_empty", False):
        records.append(ClassicGroupTombstone(group_id))
        return ConsumerGroup(group_id)
    raise GroupError(Errors.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group")


def _check_epoch(member: ConsumerMember, received: int, owned: PartitionsIn | None) -> None:
    """Kafka's ``throwIfConsumerGroupMemberEpochIsInvalid``: a member one epoch behind is let in when
    it owns no more than it is assigned, since the answer that moved it on may have been lost."""
    if received > member.member_epoch:
        raise GroupError(
            Errors.FENCED_MEMBER_EPOCH,
            f"The consumer group member has a greater member epoch ({received}) than the one known by the "
            f"group coordinator ({member.member_epoch}). "
            "The member must abandon all its partitions and rejoin.",
        )
    if received < member.member_epoch and (
        received != member.previous_member_epoch or not _is_subset(owned, member.assigned)
    ):
        raise GroupError(
            Errors.FENCED_MEMBER_EPOCH,
            f"The consumer group member has a smaller member epoch ({received}) than the one known by the "
            f"group coordinator ({member.member_epoch}). "
            "The member must abandon all its partitions and rejoin.",
        )


def _unknown_member(group: ConsumerGroup, member_id: str) -> GroupError:
    return GroupError(
        Errors.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group.group_id}."
    )


def _find_member(
    group: ConsumerGroup, hb: Heartbeat, member_id: str, joining: bool, records: list
) -> tuple[ConsumerMember, str | None]:
    """The member the heartbeat is for (new when joining) and, when a static member takes over a
    departed instance, the id it replaces."""
    if hb.instance_id is None:
        member = group.members.get(member_id)
        if member is None:
            if not joining:
                raise _unknown_member(group, member_id)
            member = ConsumerMember(member_id)
        _check_epoch(member, hb.member_epoch, hb.owned)
        return member, None
    existing = group.static_member(hb.instance_id)
    if joining:
        if existing is None:
            return group.members.get(member_id) or ConsumerMember(member_id), None
        # A member on the classic protocol is replaced at once (getOrMaybeSubscribeStaticConsumerGroupMember).
        if not existing.uses_classic_protocol and existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            raise GroupError(
                Errors.UNRELEASED_INSTANCE_ID,
                f"Static member {member_id} with instance id {hb.instance_id} cannot join the group because "
                f"the instance id is owned by {existing.member_id} member.",
            )
        return replace_static_member(group, existing, member_id, records), existing.member_id
    if existing is None:
        raise GroupError(Errors.UNKNOWN_MEMBER_ID, f"Instance id {hb.instance_id} is unknown.")
    if existing.member_id != member_id:
        raise GroupError(
            Errors.FENCED_INSTANCE_ID,
            f"Static member {member_id} with instance id {hb.instance_id} was fenced by member "
            f"{existing.member_id}.",
        )
    _check_epoch(existing, hb.member_epoch, hb.owned)
    return existing, None


def replace_static_member(
    group: ConsumerGroup, existing: ConsumerMember, member_id: str, records: list
) -> ConsumerMember:
    """Kafka's ``replaceMember``: a new instance of a static member takes over the departed one's
    assignment, so nothing has to move; returns the successor, its records appended to ``records``."""
    successor = replace(existing, member_id=member_id, member_epoch=0, previous_member_epoch=0)
    gid = group.group_id
    records += [
        CurrentAssignment(gid, existing.member_id, None),
        TargetMember(gid, existing.member_id, None),
        MemberSubscription(gid, existing.member_id, None),
        successor.subscription_record(gid),
        TargetMember(gid, member_id, group.target.get(existing.member_id, {})),
        successor.assignment_record(gid),
    ]
    return successor


def _resolved_topics(group: ConsumerGroup, regex: str) -> frozenset[str]:
    found = group.resolved_regexes.get(regex)
    return frozenset() if found is None else found.topics


def _invalid_regex(regex: str) -> str | None:
    """What RE2/J says is wrong with ``regex`` (``PatternSyntaxException.getDescription``), or None."""
    try:
        compile_re2(regex)
    except Re2SyntaxError as exc:
        return exc.description
    return None


def _refresh_regexes(
    group: ConsumerGroup,
    member: ConsumerMember,
    updated: ConsumerMember,
    members: Mapping[str, ConsumerMember],
    topics: Mapping[str, TopicMetadata],
    now_ms: int,
) -> tuple[dict[str, ResolvedRegex], list, bool]:
    """Resolve every regular expression the members use against the topics as they are now: the
    resolutions, the records for those that changed (and tombstones for those no longer used), and
    whether the group must rebalance. A regular expression new to the group must compile."""
    new_regex = updated.subscribed_topic_regex
    in_use = {m.subscribed_topic_regex for m in group.members.values() if m.subscribed_topic_regex}
    if new_regex and new_regex != member.subscribed_topic_regex and new_regex not in in_use:
        problem = _invalid_regex(new_regex)
        if problem is not None:
            raise GroupError(
                Errors.INVALID_REGULAR_EXPRESSION,
                f"SubscribedTopicRegex `{new_regex}` is not a valid regular expression: {problem}.",
            )
    gid = group.group_id
    records: list = []
    resolved = dict(group.resolved_regexes)
    wanted = {m.subscribed_topic_regex for m in members.values() if m.subscribed_topic_regex}
    for regex in sorted(wanted):
        found = resolve_regex(regex, topics)
        if regex not in resolved or resolved[regex].topics != found:
            resolved[regex] = ResolvedRegex(found, 0, now_ms)
            records.append(RegularExpression(gid, regex, resolved[regex]))
    for regex in sorted(set(resolved) - wanted):
        del resolved[regex]
        records.append(RegularExpression(gid, regex, None))
    # The member now matches other topics, or a regular expression matches other topics than it did:
    # either way everyone rebalances.
    bump = updated.topics(resolved) != member.topics(group.resolved_regexes) or any(
        resolved[r].topics != _resolved_topics(group, r) for r in wanted
    )
    return resolved, records, bump


def heartbeat(
    existing: object | None,
    hb: Heartbeat,
    topics: Mapping[str, TopicMetadata],
    settings: Settings,
    now_ms: int,
) -> Outcome:
    """A regular heartbeat (member epoch 0 or above): Kafka's ``consumerGroupHeartbeat``. ``existing``
    is whatever the coordinator holds under the group id; ``topics`` the cluster's topics by name."""
    records: list = []
    joining = hb.member_epoch == 0
    group = (
        _group_to_join(existing, hb.group_id, records) if joining else _existing_group(existing, hb.group_id)
    )
    if len(group.members) >= settings.max_size and (not hb.member_id or hb.member_id not in group.members):
        raise GroupError(
            Errors.GROUP_MAX_SIZE_REACHED,
            f"The consumer group has reached its maximum capacity of {settings.max_size} members.",
        )
    member_id = hb.member_id or new_member_id()
    member, replaced_id = _find_member(group, hb, member_id, joining, records)
    gid = group.group_id

    # 1. The member's subscription and details.
    updated = replace(
        member,
        instance_id=hb.instance_id if hb.instance_id is not None else member.instance_id,
        rack_id=hb.rack_id if hb.rack_id is not None else member.rack_id,
        rebalance_timeout_ms=hb.rebalance_timeout_ms
        if hb.rebalance_timeout_ms != -1
        else member.rebalance_timeout_ms,
        server_assignor=hb.server_assignor if hb.server_assignor is not None else member.server_assignor,
        subscribed_topic_names=(
            frozenset(hb.subscribed_topic_names)
            if hb.subscribed_topic_names is not None
            else member.subscribed_topic_names
        ),
        subscribed_topic_regex=(
            hb.subscribed_topic_regex
            if hb.subscribed_topic_regex is not None
            else member.subscribed_topic_regex
        ),
        client_id=hb.client_id,
        client_host=hb.client_host,
        classic=None,  # a member that heartbeats uses the consumer protocol from now on
    )
    bump = group.group_epoch == 0  # a new group must move off epoch 0
    if updated != member:
        records.append(updated.subscription_record(gid))
        bump = bump or updated.subscribed_topic_names != member.subscribed_topic_names

    members = {mid: m for mid, m in group.members.items() if mid not in (replaced_id, member_id)}
    members[member_id] = updated

    resolved, regex_records, regex_bump = _refresh_regexes(group, member, updated, members, topics, now_ms)
    records += regex_records
    bump = bump or regex_bump

    # 2.-4. Subscription metadata and the epoch bump, the target assignment, one reconciliation step.
    reconciled, step_records = move_toward_target(
        group, members, updated, replaced_id, resolved, topics, bump, settings.assignors, hb.owned
    )
    records += step_records
    timers: list = []
    if reconciled != updated:
        if reconciled.state == MemberState.UNREVOKED_PARTITIONS:
            timers.append(RebalanceTimer(member_id, reconciled.member_epoch, reconciled.rebalance_timeout_ms))
        else:
            timers.append(CancelRebalanceTimer(member_id))
    timers.append(SessionTimer(member_id))

    # The assignment goes back to a full request (a join, or a member resending everything after an
    # error) and whenever it changed; otherwise the member keeps what it has.
    full = joining or (
        hb.rebalance_timeout_ms != -1 and hb.subscribed_topic_names is not None and hb.owned is not None
    )
    changed = reconciled.assigned != member.assigned
    return Outcome(
        member_id=member_id,
        member_epoch=reconciled.member_epoch,
        heartbeat_interval_ms=settings.heartbeat_interval_ms,
        assignment=reconciled.assigned if full or changed else None,
        records=records,
        timers=timers,
    )


def leave(existing: object | None, hb: Heartbeat, topics: Mapping[str, TopicMetadata]) -> Outcome:
    """Member epoch -1 (leave) or -2 (a static member leaving for now): Kafka's ``consumerGroupLeave``."""
    group = _existing_group(existing, hb.group_id)
    if hb.instance_id is None:
        member = group.members.get(hb.member_id)
        if member is None:
            raise _unknown_member(group, hb.member_id)
    else:
        member = group.static_member(hb.instance_id)
        if member is None:
            raise GroupError(Errors.UNKNOWN_MEMBER_ID, f"Instance id {hb.instance_id} is unknown.")
        if member.member_id != hb.member_id:
            raise GroupError(
                Errors.FENCED_INSTANCE_ID,
                f"Static member {hb.member_id} with instance id {hb.instance_id} was fenced by member "
                f"{member.member_id}.",
            )
        if hb.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            # The member stays, with its assignment, so that its next instance can take it over; its
            # session timer keeps running and removes it if no instance comes back in time.
            departed = replace(member, member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH, pending_revocation={})
            return Outcome(
                member_id=member.member_id,
                member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH,
                records=[departed.assignment_record(group.group_id)],
            )
    fenced = fence(group, member.member_id, topics)
    return Outcome(
        member_id=hb.member_id, member_epoch=hb.member_epoch, records=fenced.records, timers=fenced.timers
    )


def fence(group: ConsumerGroup, member_id: str, topics: Mapping[str, TopicMetadata]) -> Outcome:
    """Remove a member (it left, its session expired, or it did not revoke in time): Kafka's
    ``consumerGroupFenceMember``. The group epoch is bumped so the others rebalance."""
    gid = group.group_id
    member = group.members.get(member_id)
    if member is None:
        return Outcome(member_id=None, member_epoch=-1)
    records: list = [
        CurrentAssignment(gid, member_id, None),
        TargetMember(gid, member_id, None),
        MemberSubscription(gid, member_id, None),
    ]
    others = [m for mid, m in group.members.items() if mid != member_id]
    regex = member.subscribed_topic_regex
    if regex and regex in group.resolved_regexes and all(m.subscribed_topic_regex != regex for m in others):
        records.append(RegularExpression(gid, regex, None))
    metadata = _subscription_metadata(others, group.resolved_regexes, topics)
    if metadata != group.subscription_metadata:
        records.append(SubscriptionMetadata(gid, tuple(sorted(metadata.values(), key=lambda t: t.name))))
    records.append(GroupEpoch(gid, group.group_epoch + 1))
    return Outcome(member_id=member_id, member_epoch=-1, records=records, timers=[CancelTimers(member_id)])
