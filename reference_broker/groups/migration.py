"""Online migration between classic and consumer groups (KIP-848), as ``group.consumer.migration.policy``
allows (Kafka's ``GroupMetadataManager``):

- upgrade: the first ConsumerGroupHeartbeat of a member joining a classic group that has members turns
  the group into a consumer group whose members keep their generation as member epoch and their last
  assignment as target (``validateOnlineUpgrade``, ``convertToConsumerGroup``,
  ``ConsumerGroup.fromClassicGroup``). The classic group's records are erased and the consumer group's
  written in the same write as the heartbeat's own.
- downgrade: when the last member on the consumer protocol leaves (or is fenced, or is replaced by a
  static member joining with JoinGroup) and every other member uses the classic protocol, the consumer
  group becomes a classic group again, Stable at the group epoch, each member holding its target
  assignment; a leave starts a rebalance so the members rejoin (``validateOnlineDowngrade*``,
  ``convertToClassicGroup``, ``ClassicGroup.fromConsumerGroup``).

Pure functions; the downgrade's classic group takes the consumer group's place only once its records
are written (``install_downgrade``), as Kafka swaps the groups without replaying those records."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from uuid import UUID

from kconform.codecs.errors import Errors

from ..coordinator_runtime import Effect
from .classic_group import ClassicGroup, ClassicMember, GroupState
from .classic_log_records import encode_group_metadata_key, encode_group_metadata_value
from .classic_rebalance import JoinOutcome, SyncOutcome, answer_join, answer_sync, prepare_rebalance
from .classic_rebalance import session_timer as classic_session_timer
from .consumer_protocol import (
    EmbeddedProtocolError,
    assignment_partitions,
    parse_assignment,
    parse_subscription,
    protocol_version,
    serialize_assignment,
)
from .consumer_timers import CancelTimers, SessionTimer
from .errors import GroupError
from .events import GroupContext, GroupsState
from .kip848_group import ConsumerGroup, ConsumerMember, MemberState
from .kip848_log_records import (
    ClassicGroupTombstone,
    ClassicMemberMetadata,
    GroupEpoch,
    TargetEpoch,
    TargetMember,
    TopicMetadata,
)
from .kip848_rules import Outcome, fence

__all__ = [
    "ClassicGroupRecord",
    "Downgrade",
    "downgrade_after_fencing",
    "downgrade_on_replacement",
    "fence_member",
    "install_downgrade",
    "upgrade",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ClassicGroupRecord:
    """The classic group's metadata record (key version 2), written when a consumer group downgrades."""

    group_id: str
    group: ClassicGroup

    tombstone = False

    def encode(self) -> tuple[bytes, bytes]:
        value = encode_group_metadata_value(self.group.to_record())
        return encode_group_metadata_key(self.group_id), value


@dataclass(frozen=True)
class Downgrade:
    """A classic group to put in the consumer group's place once the records are written; ``rebalance``
    when a member left (its members must rejoin), not when a static member was replaced."""

    group: ClassicGroup
    rebalance: bool


# ---- upgrade -----------------------------------------------------------------------------------------


def upgrade(
    classic: ClassicGroup, ctx: GroupContext
) -> tuple[list[Effect], ConsumerGroup | GroupError, list, list]:
    """A ConsumerGroupHeartbeat joins a classic group with members: (answers for the classic members
    still waiting, the consumer group or the error to answer, its records, its timers). The waiting
    members are told to rejoin even when the conversion then fails, as Kafka completes their futures
    first."""
    gid = classic.group_id
    refusal = GroupError(Errors.GROUP_ID_NOT_FOUND, f"Group {gid} is not a consumer group")
    if not ctx.upgrade_enabled:
        log.info("classic group %s not upgraded: the online upgrade is disabled", gid)
        return [], refusal, [], []
    if classic.protocol_type != "consumer":
        log.info("classic group %s not upgraded: it does not use the consumer embedded protocol", gid)
        return [], refusal, [], []
    if len(classic.members) > ctx.consumer.max_size:
        log.info("classic group %s not upgraded: it is larger than group.consumer.max.size", gid)
        return [], refusal, [], []
    # convertToConsumerGroup: members in a rebalance are told to rejoin the new one
    answers: list[Effect] = []
    for member in classic.members.values():
        answer_join(member, JoinOutcome(Errors.REBALANCE_IN_PROGRESS, member_id=member.member_id), answers)
        answer_sync(member, SyncOutcome(Errors.REBALANCE_IN_PROGRESS), answers)
    try:
        group = _from_classic_group(classic, ctx.topics())
    except EmbeddedProtocolError as exc:
        log.warning("classic group %s not upgraded: %s", gid, exc)
        malformed = GroupError(
            Errors.GROUP_ID_NOT_FOUND,
            f"Cannot upgrade the classic group {gid} to consumer group because the embedded consumer "
            "protocol is malformed.",
        )
        return answers, malformed, [], []
    records: list = [ClassicGroupTombstone(gid)]
    records += [m.subscription_record(gid) for m in group.members.values()]
    records.append(GroupEpoch(gid, group.group_epoch))
    records += [TargetMember(gid, mid, group.target[mid]) for mid in group.members]
    records.append(TargetEpoch(gid, group.group_epoch))
    records += [m.assignment_record(gid) for m in group.members.values()]
    timers = [SessionTimer(mid, m.classic.session_timeout_ms) for mid, m in group.members.items()]
    return answers, group, records, timers


def _from_classic_group(classic: ClassicGroup, topics: Mapping[str, TopicMetadata]) -> ConsumerGroup:
    """``ConsumerGroup.fromClassicGroup``: every member Stable at the generation, holding (and targeted
    at) the partitions of its last assignment."""
    ids = {name: t.topic_id for name, t in topics.items()}
    generation = classic.generation
    group = ConsumerGroup(classic.group_id, group_epoch=generation, assignment_epoch=generation)
    for m in classic.members.values():
        assigned = assignment_partitions(parse_assignment(m.assignment), ids)
        if classic.protocol is None:
            raise EmbeddedProtocolError("the group has not chosen a protocol yet")
        subscription = parse_subscription(m.metadata_for(classic.protocol))
        group.members[m.member_id] = ConsumerMember(
            m.member_id,
            instance_id=m.group_instance_id,
            rack_id=subscription.rack_id or None,
            client_id=m.client_id,
            client_host=m.client_host,
            rebalance_timeout_ms=m.rebalance_timeout_ms,
            subscribed_topic_names=frozenset(subscription.topics),
            member_epoch=generation,
            previous_member_epoch=generation,
            state=MemberState.STABLE,
            assigned=assigned,
            classic=ClassicMemberMetadata(m.session_timeout_ms, tuple(m.protocols)),
        )
        group.target[m.member_id] = group.members[m.member_id].assigned
    return group


# ---- downgrade ---------------------------------------------------------------------------------------


def fence_member(group: ConsumerGroup, member_id: str, ctx: GroupContext) -> Outcome:
    """``consumerGroupFenceMember``: the downgrade below when it applies, else remove the member."""
    return downgrade_after_fencing(group, member_id, ctx) or fence(group, member_id, ctx.topics())


def downgrade_after_fencing(group: ConsumerGroup, member_id: str, ctx: GroupContext) -> Outcome | None:
    """The member leaves (or is fenced) and it was the last one on the consumer protocol
    (``validateOnlineDowngradeWithFencedMember``): the group turns classic without it, and rebalances.
    None when that does not apply; raises GroupError when the conversion fails."""
    if not _downgrade_after_fencing(group, member_id, ctx):
        return None
    classic = _to_classic_group(group, member_id, None, ctx)
    records = group.tombstone_records() + [ClassicGroupRecord(group.group_id, classic)]
    timers = [CancelTimers(mid) for mid in group.members]
    return Outcome(member_id, -1, records=records, timers=timers, downgrade=Downgrade(classic, True))


def downgrade_on_replacement(
    group: ConsumerGroup, replaced_id: str, joining: ConsumerMember, ctx: GroupContext
) -> tuple[list, Downgrade] | None:
    """A static member joining with JoinGroup replaced ``replaced_id``, the last member on the consumer
    protocol (``validateOnlineDowngradeWithReplacedMemberId``): the records that erase the consumer group
    and write the classic group (with the joining member in the replaced one's place), or None."""
    if not group.all_members_use_classic_protocol_except(replaced_id):
        return None
    if not ctx.downgrade_enabled:
        log.info("consumer group %s not downgraded: the online downgrade is disabled", group.group_id)
        return None
    if len(group.members) > ctx.classic.max_size:
        log.info("consumer group %s not downgraded: it is larger than group.max.size", group.group_id)
        return None
    classic = _to_classic_group(group, replaced_id, joining, ctx)
    records = group.tombstone_records(renamed=(replaced_id, joining.member_id))
    return records + [ClassicGroupRecord(group.group_id, classic)], Downgrade(classic, False)


def _downgrade_after_fencing(group: ConsumerGroup, member_id: str, ctx: GroupContext) -> bool:
    gid = group.group_id
    if not group.all_members_use_classic_protocol_except(member_id) or len(group.members) <= 1:
        return False
    if not ctx.downgrade_enabled:
        log.info("consumer group %s not downgraded: the online downgrade is disabled", gid)
        return False
    if len(group.members) - 1 > ctx.classic.max_size:
        log.info("consumer group %s not downgraded: it is larger than group.max.size", gid)
        return False
    return True


def _to_classic_group(
    group: ConsumerGroup, leaving_id: str, joining: ConsumerMember | None, ctx: GroupContext
) -> ClassicGroup:
    """``ClassicGroup.fromConsumerGroup``: Stable at the group epoch; each member's assignment is its
    target, serialised at its subscription's version (a joining member takes the replaced one's)."""
    gid = group.group_id
    classic = ClassicGroup(
        gid, state=GroupState.STABLE, generation=group.group_epoch, protocol_type="consumer"
    )
    classic.state_timestamp = ctx.now_ms
    kept = [m for mid, m in group.members.items() if mid != leaving_id]
    for member in kept + ([joining] if joining is not None else []):
        classic.add(
            ClassicMember(
                member.member_id,
                member.instance_id,
                member.client_id,
                member.client_host,
                member.rebalance_timeout_ms,
                member.classic.session_timeout_ms,
                "consumer",
                list(member.classic.protocols),
            )
        )
    classic.protocol = classic.select_protocol()
    names: dict[UUID, str] = {t.topic_id: name for name, t in ctx.topics().items()}
    for member in classic.members.values():
        source = (
            leaving_id if joining is not None and member.member_id == joining.member_id else member.member_id
        )
        try:
            version = protocol_version(member.metadata_for(classic.protocol))
            member.assignment = serialize_assignment(group.target.get(source, {}), names, version)
        except EmbeddedProtocolError as exc:
            raise GroupError(
                Errors.GROUP_ID_NOT_FOUND, f"Cannot downgrade the classic group {gid}: {exc}."
            ) from None
    return classic


def install_downgrade(state: GroupsState, downgrade: Downgrade, ctx: GroupContext) -> list[Effect]:
    """The downgrade's records are written: the classic group replaces the consumer group, its members'
    sessions start, and after a leave a rebalance begins (``convertToClassicGroup``)."""
    classic = downgrade.group
    state.groups[classic.group_id] = classic
    log.info("consumer group %s downgraded to a classic group", classic.group_id)
    out: list[Effect] = []
    for member in classic.members.values():
        out.append(classic_session_timer(classic, member))
    if downgrade.rebalance:
        prepare_rebalance(state, classic, ctx, out)
    return out
