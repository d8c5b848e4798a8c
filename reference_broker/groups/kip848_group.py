"""KIP-848 consumer groups: the group's state and the decisions of ConsumerGroupHeartbeat, as Kafka 4.0's
``GroupMetadataManager``, ``ConsumerGroup``, ``ConsumerGroupMember``, ``TargetAssignmentBuilder`` and
``CurrentAssignmentBuilder`` take them.

The decisions are pure: ``heartbeat``, ``leave`` and ``fence`` (``kip848_rules``) read a group as it
is and return the response fields, the records to write (``consumer_records``) and the timers to set;
nothing changes until the caller has written the records and applies them with ``apply_record`` (the
same function that replays them on start). Within one heartbeat:

1. the member is found or created (static members may take over a departed instance's assignment);
2. the group epoch is bumped, once, if the member's subscription changed, a regular expression resolves
   to other topics, or the subscribed topics' ids or partition counts changed;
3. if the group epoch passed the assignment epoch, the assignor computes a new target assignment;
4. the member moves toward its target: it first gives up (UNREVOKED_PARTITIONS) the partitions it must
   lose, keeping its epoch; once its heartbeat no longer reports them it moves to the target epoch and
   gets the target partitions that no other member still holds (UNRELEASED_PARTITIONS until all are
   free, then STABLE). A partition is therefore never in two members' assignments at once.

Regular expressions are read in RE2/J's syntax (``re2``: what RE2/J refuses, such as lookaround or
backreferences, is INVALID_REGULAR_EXPRESSION with RE2/J's description) and matched in full with
Python's ``re`` (script classes such as ``\\p{Greek}`` match nothing there). Kafka resolves
them in the background (at most every 10 s) and bumps the epoch when the result arrives; here they are
resolved during the heartbeat, so the bump comes with it."""

from __future__ import annotations

import base64
import logging
import uuid
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import IntEnum
from uuid import UUID

from kconform.codecs.errors import Errors

from .kip848_log_records import (
    ClassicGroupTombstone,
    ClassicMemberMetadata,
    CurrentAssignment,
    CurrentAssignmentValue,
    GroupEpoch,
    MemberSubscription,
    MemberSubscriptionValue,
    RegularExpression,
    ResolvedRegex,
    SubscriptionMetadata,
    TargetEpoch,
    TargetMember,
    TopicMetadata,
)
from .re2 import Re2SyntaxError, compile_re2
from .server_assignors import ASSIGNORS

__all__ = ["ConsumerGroup", "ConsumerMember", "MemberState", "apply_record", "new_member_id", "resolve_regex"]

log = logging.getLogger(__name__)

LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2

Partitions = dict[UUID, frozenset[int]]
PartitionsIn = Mapping[UUID, Iterable[int]]


class MemberState(IntEnum):
    """A member's reconciliation state; the values are the ones the current-assignment record stores."""

    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2
    UNKNOWN = 127


def _partitions(tp: PartitionsIn | None) -> Partitions:
    return {t: frozenset(p) for t, p in (tp or {}).items() if p}


def _is_subset(owned: PartitionsIn | None, assigned: PartitionsIn) -> bool:
    if owned is None:
        return False
    return all(set(parts) <= set(assigned.get(topic, ())) for topic, parts in owned.items())


def _owns_any(owned: PartitionsIn | None, partitions: PartitionsIn) -> bool:
    """Whether the member still reports any of ``partitions``; a heartbeat that reports nothing
    (None) is taken to still own them all."""
    if owned is None:
        return True
    return any(set(parts) & set(partitions.get(topic, ())) for topic, parts in owned.items())


def resolve_regex(regex: str, topic_names: Iterable[str]) -> frozenset[str]:
    """The topics a subscription's regular expression matches as a whole, in RE2/J's syntax
    (``GroupMetadataManager`` compiles with ``com.google.re2j.Pattern`` and tests ``matches()``)."""
    try:
        pattern = compile_re2(regex)
    except Re2SyntaxError:
        return frozenset()
    return frozenset(name for name in topic_names if pattern.fullmatch(name))


def new_member_id() -> str:
    """A random id written the way Kafka writes a ``Uuid`` (22 characters of URL-safe base64)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()


# ---- members -------------------------------------------------------------------------------------------


@dataclass
class ConsumerMember:
    """One member, treated as a value: decisions make changed copies (``dataclasses.replace``)."""

    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: frozenset[str] = frozenset()
    subscribed_topic_regex: str = ""
    server_assignor: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: MemberState = MemberState.STABLE
    assigned: Partitions = field(default_factory=dict)
    pending_revocation: Partitions = field(default_factory=dict)
    classic: ClassicMemberMetadata | None = None  # set while the member uses the classic protocol

    def __post_init__(self) -> None:
        self.subscribed_topic_names = frozenset(self.subscribed_topic_names)
        self.assigned = _partitions(self.assigned)
        self.pending_revocation = _partitions(self.pending_revocation)

    @property
    def uses_classic_protocol(self) -> bool:
        """``ConsumerGroupMember.useClassicProtocol``: it joined with JoinGroup, not the heartbeat."""
        return self.classic is not None

    def is_reconciled_to(self, epoch: int) -> bool:
        return self.state == MemberState.STABLE and self.member_epoch == epoch

    def topics(self, resolved: Mapping[str, ResolvedRegex]) -> set[str]:
        """The topic names this member subscribes to, by name and through its regular expression."""
        names = set(self.subscribed_topic_names)
        if self.subscribed_topic_regex and self.subscribed_topic_regex in resolved:
            names |= resolved[self.subscribed_topic_regex].topics
        return names

    def subscription_record(self, group_id: str) -> MemberSubscription:
        return MemberSubscription(
            group_id,
            self.member_id,
            MemberSubscriptionValue(
                self.instance_id,
                self.rack_id,
                self.client_id,
                self.client_host,
                tuple(sorted(self.subscribed_topic_names)),
                self.subscribed_topic_regex,
                self.rebalance_timeout_ms,
                self.server_assignor,
                self.classic,
            ),
        )

    def assignment_record(self, group_id: str) -> CurrentAssignment:
        value = CurrentAssignmentValue(
            self.member_epoch,
            self.previous_member_epoch,
            int(self.state),
            self.assigned,
            self.pending_revocation,
        )
        return CurrentAssignment(group_id, self.member_id, value)


# ---- the group -----------------------------------------------------------------------------------------


@dataclass(eq=False)
class ConsumerGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    target: dict[str, Partitions] = field(default_factory=dict)
    subscription_metadata: dict[str, TopicMetadata] = field(default_factory=dict)
    resolved_regexes: dict[str, ResolvedRegex] = field(default_factory=dict)

    group_type = "consumer"
    protocol_type = "consumer"

    @property
    def is_empty(self) -> bool:
        return not self.members

    @property
    def state_name(self) -> str:
        """Kafka's ``ConsumerGroup.maybeUpdateGroupState``."""
        if not self.members:
            return "Empty"
        if self.group_epoch > self.assignment_epoch:
            return "Assigning"
        if any(not m.is_reconciled_to(self.assignment_epoch) for m in self.members.values()):
            return "Reconciling"
        return "Stable"

    @property
    def static_members(self) -> dict[str, str]:
        return {m.instance_id: m.member_id for m in self.members.values() if m.instance_id is not None}

    def static_member(self, instance_id: str | None) -> ConsumerMember | None:
        member_id = self.static_members.get(instance_id) if instance_id is not None else None
        return None if member_id is None else self.members.get(member_id)

    def subscribed_topics(self) -> set[str]:
        topics: set[str] = set()
        for m in self.members.values():
            topics |= m.topics(self.resolved_regexes)
        return topics

    def is_subscribed_to(self, topic: str) -> bool:
        return topic in self.subscribed_topics()

    def partition_epochs(self) -> dict[tuple[UUID, int], int]:
        """The epoch at which each partition is held (assigned or pending revocation), as Kafka's
        ``currentPartitionEpoch``; partitions nobody holds are absent."""
        epochs: dict[tuple[UUID, int], int] = {}
        for m in self.members.values():
            for source in (m.assigned, m.pending_revocation):
                for topic, parts in source.items():
                    for p in parts:
                        epochs[(topic, p)] = m.member_epoch
        return epochs

    def preferred_assignor(self, configured: Sequence[str]) -> str:
        return _preferred_assignor(self.members.values(), configured)

    # ---- members on the classic protocol (Kafka's ConsumerGroup) --------------------------------

    def classic_members(self) -> list[ConsumerMember]:
        return [m for m in self.members.values() if m.uses_classic_protocol]

    def supports_classic_protocols(self, protocol_type: str, names: Iterable[str]) -> bool:
        """``supportsClassicProtocols``: a member joining with JoinGroup must speak the consumer protocol
        type and offer one protocol that every member on the classic protocol offers too."""
        names = set(names)
        if protocol_type != "consumer":
            return False
        if self.is_empty:
            return bool(names)
        classic = self.classic_members()
        return any(all(n in {name for name, _ in m.classic.protocols} for m in classic) for n in names)

    def all_members_use_classic_protocol_except(self, member_id: str) -> bool:
        """``allMembersUseClassicProtocolExcept``: ``member_id`` is the only member on the consumer
        protocol."""
        member = self.members.get(member_id)
        return (
            member is not None
            and not member.uses_classic_protocol
            and len(self.classic_members()) == len(self.members) - 1
        )

    def waiting_on_unreleased_partition(self, member: ConsumerMember) -> bool:
        """``waitingOnUnreleasedPartition``: a partition of its target that it lacks is still held."""
        if member.state != MemberState.UNRELEASED_PARTITIONS:
            return False
        epochs = self.partition_epochs()
        for topic, wanted in self.target.get(member.member_id, {}).items():
            held = member.assigned.get(topic, frozenset())
            if any(p not in held and (topic, p) in epochs for p in wanted):
                return True
        return False

    # ---- the contract with the offset APIs -----------------------------------------------------

    def validate_offset_commit(
        self,
        member_id: str,
        group_instance_id: str | None,
        member_epoch: int,
        is_transactional: bool,
        api_version: int,
    ) -> int:
        """Kafka's ``ConsumerGroup.validateOffsetCommit``."""
        if member_epoch < 0 and not self.members:
            return Errors.NONE  # the admin client, or a consumer outside group management
        if is_transactional and member_epoch == -1 and not member_id and group_instance_id is None:
            return Errors.NONE  # TxnOffsetCommit from a producer that does not name the member
        member = self.members.get(member_id)
        if member is None:
            return Errors.UNKNOWN_MEMBER_ID
        if not is_transactional and not member.uses_classic_protocol and api_version < 9:
            return Errors.UNSUPPORTED_VERSION  # consumer-protocol members must commit with version 9+
        return _epoch_error(member, member_epoch)

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int, api_version: int) -> int:
        """Kafka's ``ConsumerGroup.validateOffsetFetch``."""
        if member_id is None and member_epoch < 0:
            return Errors.NONE
        member = self.members.get(member_id) if member_id is not None else None
        if member is None:
            return Errors.UNKNOWN_MEMBER_ID
        return _epoch_error(member, member_epoch)

    def validate_offset_delete(self) -> int:
        return Errors.NONE

    def validate_delete_group(self) -> int:
        return Errors.NON_EMPTY_GROUP if self.members else Errors.NONE

    def tombstones(self) -> list[tuple[bytes, None]]:
        """The records that erase the group (DeleteGroups), in Kafka's order, as bytes."""
        return [r.encode() for r in self.tombstone_records()]

    def tombstone_records(self, renamed: tuple[str, str] | None = None) -> list:
        """``createGroupTombstoneRecords``; with ``renamed`` (old id, new id), a static member that was
        replaced in the same write is erased under its new id
        (``createGroupTombstoneRecordsWithReplacedMember``)."""
        gid = self.group_id
        old, new = renamed or (None, None)
        members = [new if m == old else m for m in self.members]
        records: list = [CurrentAssignment(gid, m, None) for m in members]
        records += [TargetMember(gid, new if m == old else m, None) for m in self.target]
        records.append(TargetEpoch(gid, None))
        records += [MemberSubscription(gid, m, None) for m in members]
        records += [RegularExpression(gid, r, None) for r in self.resolved_regexes]
        records += [SubscriptionMetadata(gid, None), GroupEpoch(gid, None)]
        return records

    # ---- replay ----------------------------------------------------------------------------------

    def apply(self, record) -> None:
        """Apply one record (written just now or read back); never raises."""
        if isinstance(record, GroupEpoch) and record.epoch is not None:
            self.group_epoch = record.epoch
        elif isinstance(record, TargetEpoch):
            self.assignment_epoch = -1 if record.epoch is None else record.epoch
        elif isinstance(record, SubscriptionMetadata):
            self.subscription_metadata = {t.name: t for t in record.topics or ()}
        elif isinstance(record, TargetMember):
            if record.partitions is None:
                self.target.pop(record.member_id, None)
            else:
                self.target[record.member_id] = _partitions(record.partitions)
        elif isinstance(record, RegularExpression):
            if record.value is None:
                self.resolved_regexes.pop(record.regex, None)
            else:
                self.resolved_regexes[record.regex] = record.value
        elif isinstance(record, MemberSubscription):
            self._apply_subscription(record)
        elif isinstance(record, CurrentAssignment):
            self._apply_assignment(record)

    def _apply_subscription(self, record: MemberSubscription) -> None:
        v = record.value
        if v is None:
            self.members.pop(record.member_id, None)
            return
        member = self.members.get(record.member_id) or ConsumerMember(record.member_id)
        self.members[record.member_id] = replace(
            member,
            instance_id=v.instance_id,
            rack_id=v.rack_id,
            client_id=v.client_id,
            client_host=v.client_host,
            subscribed_topic_names=frozenset(v.subscribed_topic_names),
            subscribed_topic_regex=v.subscribed_topic_regex or "",
            rebalance_timeout_ms=v.rebalance_timeout_ms,
            server_assignor=v.server_assignor,
            classic=v.classic,
        )

    def _apply_assignment(self, record: CurrentAssignment) -> None:
        member = self.members.get(record.member_id)
        v = record.value
        if v is None:
            if member is not None:  # the member's own tombstone follows and removes it
                self.members[record.member_id] = replace(
                    member, member_epoch=-1, previous_member_epoch=-1, assigned={}, pending_revocation={}
                )
            return
        try:
            state = MemberState(v.state)
        except ValueError:
            state = MemberState.UNKNOWN
        self.members[record.member_id] = replace(
            member or ConsumerMember(record.member_id),
            member_epoch=v.member_epoch,
            previous_member_epoch=v.previous_member_epoch,
            state=state,
            assigned=_partitions(v.assigned),
            pending_revocation=_partitions(v.pending_revocation),
        )


def _epoch_error(member: ConsumerMember, received: int) -> int:
    """``ConsumerGroup.validateMemberEpoch``: a classic member's generation is its member epoch."""
    if received == member.member_epoch:
        return Errors.NONE
    return Errors.ILLEGAL_GENERATION if member.uses_classic_protocol else Errors.STALE_MEMBER_EPOCH


def _preferred_assignor(members: Iterable[ConsumerMember], configured: Sequence[str]) -> str:
    """The server assignor most members ask for; the first configured one when none asks."""
    counts = Counter(m.server_assignor for m in members if m.server_assignor in ASSIGNORS)
    if not counts:
        return configured[0] if configured else "uniform"
    best = max(counts.values())
    rank = {name: i for i, name in enumerate(configured)}
    return min((n for n, c in counts.items() if c == best), key=lambda n: (rank.get(n, len(rank)), n))


def apply_record(groups: dict[str, object], record) -> None:
    """Apply ``record`` to the coordinator's groups: create the consumer group it names if needed
    (replacing an empty classic group, which only held offsets), drop it on its epoch tombstone."""
    gid = record.group_id
    existing = groups.get(gid)
    if isinstance(record, ClassicGroupTombstone):
        if getattr(existing, "group_type", None) == "classic":
            del groups[gid]
        return
    if not isinstance(existing, ConsumerGroup):
        if record.tombstone:
            return
        if existing is not None and not getattr(existing, "is_empty", True):
            log.error("consumer group record for %s ignored: it is a classic group with members", gid)
            return
        existing = ConsumerGroup(gid)
        groups[gid] = existing
    if isinstance(record, GroupEpoch) and record.epoch is None:
        del groups[gid]
        return
    existing.apply(record)
