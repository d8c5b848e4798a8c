"""KIP-848 consumer groups: the group's state and the decisions of ConsumerGroupHeartbeat, as Kafka 4.0's
``GroupMetadataManager``, ``ConsumerGroup``, ``ConsumerGroupMember``, ``TargetAssignmentBuilder`` and
``CurrentAssignmentBuilder`` take them.

The decisions are pure: ``heartbeat``, ``leave``, ``fence`` and ``rebalance_expired`` read a group as it
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
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import IntEnum
from uuid import UUID

from kconform.codecs.errors import Errors

from .assignors import ASSIGNORS
from .classic import GroupError
from .consumer_records import (
    ClassicGroupTombstone,
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

__all__ = [
    "ConsumerGroup",
    "ConsumerMember",
    "Heartbeat",
    "MemberState",
    "Outcome",
    "Settings",
    "apply_record",
    "fence",
    "heartbeat",
    "leave",
    "next_assignment",
    "rebalance_expired",
    "validate_heartbeat",
]

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

    def __post_init__(self) -> None:
        self.subscribed_topic_names = frozenset(self.subscribed_topic_names)
        self.assigned = _partitions(self.assigned)
        self.pending_revocation = _partitions(self.pending_revocation)

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
        if not is_transactional and api_version < 9:
            return Errors.UNSUPPORTED_VERSION  # members of these groups must commit with version 9+
        if member_epoch != member.member_epoch:
            return Errors.STALE_MEMBER_EPOCH
        return Errors.NONE

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int, api_version: int) -> int:
        """Kafka's ``ConsumerGroup.validateOffsetFetch``."""
        if member_id is None and member_epoch < 0:
            return Errors.NONE
        member = self.members.get(member_id) if member_id is not None else None
        if member is None:
            return Errors.UNKNOWN_MEMBER_ID
        if member_epoch != member.member_epoch:
            return Errors.STALE_MEMBER_EPOCH
        return Errors.NONE

    def validate_offset_delete(self) -> int:
        return Errors.NONE

    def validate_delete_group(self) -> int:
        return Errors.NON_EMPTY_GROUP if self.members else Errors.NONE

    def tombstones(self) -> list[tuple[bytes, None]]:
        """The records that erase the group (DeleteGroups), in Kafka's order."""
        gid = self.group_id
        records: list = [CurrentAssignment(gid, m, None) for m in self.members]
        records += [TargetMember(gid, m, None) for m in self.target]
        records.append(TargetEpoch(gid, None))
        records += [MemberSubscription(gid, m, None) for m in self.members]
        records += [RegularExpression(gid, r, None) for r in self.resolved_regexes]
        records += [SubscriptionMetadata(gid, None), GroupEpoch(gid, None)]
        return [r.encode() for r in records]

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

    # ---- direct steps, for tests of the state machine ---------------------------------------------

    def compute_target(
        self, topics_by_name: Mapping[str, tuple[UUID, int]], assignor: str = "uniform"
    ) -> None:
        """Run the assignor over the current members and move the assignment epoch to the group epoch."""
        topics = {name: TopicMetadata(tid, name, count) for name, (tid, count) in topics_by_name.items()}
        metadata = _subscription_metadata(self.members.values(), self.resolved_regexes, topics)
        _, records = _target_assignment(self, dict(self.members), None, self.group_epoch, metadata, assignor)
        for record in records:
            self.apply(record)

    def reconcile(self, member: ConsumerMember, owned: PartitionsIn | None) -> ConsumerMember:
        """Move ``member`` one step toward its target, given what its heartbeat says it owns."""
        epochs = self.partition_epochs()
        updated = next_assignment(
            member,
            self.assignment_epoch,
            self.target.get(member.member_id, {}),
            owned,
            lambda t, p: epochs.get((t, p), -1),
        )
        self.members[member.member_id] = updated
        return updated


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


# ---- reconciliation (Kafka's CurrentAssignmentBuilder) ----------------------------------------------


def next_assignment(
    member: ConsumerMember,
    target_epoch: int,
    target: PartitionsIn,
    owned: PartitionsIn | None,
    partition_epoch: Callable[[UUID, int], int],
) -> ConsumerMember:
    """The member after one reconciliation step toward ``target`` at ``target_epoch``. ``owned`` is
    what the heartbeat reports (None: not reported); ``partition_epoch`` says at which epoch a
    partition is held by anyone (-1: free)."""
    if member.state == MemberState.STABLE:
        if member.member_epoch != target_epoch:
            return _next(member, member.member_epoch, target_epoch, target, owned, partition_epoch)
        return member
    if member.state == MemberState.UNREVOKED_PARTITIONS:
        if _owns_any(owned, member.pending_revocation):
            return member  # still holding what it must give up
        epoch = min(member.member_epoch + 1, target_epoch)
        return _next(member, epoch, target_epoch, target, owned, partition_epoch)
    if member.state == MemberState.UNRELEASED_PARTITIONS:
        return _next(member, member.member_epoch, target_epoch, target, owned, partition_epoch)
    if owned is None or any(owned.values()):
        raise GroupError(
            Errors.FENCED_MEMBER_EPOCH,
            "The consumer group member is in a unknown state. "
            "The member must abandon all its partitions and rejoin.",
        )
    return _next(member, target_epoch, target_epoch, target, owned, partition_epoch)


def _next(
    member: ConsumerMember,
    revoking_epoch: int,
    target_epoch: int,
    target: PartitionsIn,
    owned: PartitionsIn | None,
    partition_epoch: Callable[[UUID, int], int],
) -> ConsumerMember:
    keep: dict[UUID, frozenset[int]] = {}
    revoke: dict[UUID, frozenset[int]] = {}
    add: dict[UUID, frozenset[int]] = {}
    unreleased = False
    for topic in set(target) | set(member.assigned):
        wanted = frozenset(target.get(topic, ()))
        current = member.assigned.get(topic, frozenset())
        kept = current & wanted
        missing = wanted - kept
        free = frozenset(p for p in missing if partition_epoch(topic, p) == -1)
        unreleased = unreleased or free != missing
        if kept:
            keep[topic] = kept
        if current - kept:
            revoke[topic] = current - kept
        if free:
            add[topic] = free
    if revoke and _owns_any(owned, revoke):
        return replace(
            member,
            state=MemberState.UNREVOKED_PARTITIONS,
            member_epoch=revoking_epoch,
            previous_member_epoch=member.member_epoch,
            assigned=keep,
            pending_revocation=revoke,
        )
    assigned = {t: keep.get(t, frozenset()) | add.get(t, frozenset()) for t in set(keep) | set(add)}
    return replace(
        member,
        state=MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE,
        member_epoch=target_epoch,
        previous_member_epoch=member.member_epoch,
        assigned=assigned,
        pending_revocation={},
    )


# ---- target assignment (Kafka's TargetAssignmentBuilder) -------------------------------------------


def _preferred_assignor(members: Iterable[ConsumerMember], configured: Sequence[str]) -> str:
    """The server assignor most members ask for; the first configured one when none asks."""
    counts = Counter(m.server_assignor for m in members if m.server_assignor in ASSIGNORS)
    if not counts:
        return configured[0] if configured else "uniform"
    best = max(counts.values())
    rank = {name: i for i, name in enumerate(configured)}
    return min((n for n, c in counts.items() if c == best), key=lambda n: (rank.get(n, len(rank)), n))


def _subscription_metadata(
    members: Iterable[ConsumerMember],
    resolved: Mapping[str, ResolvedRegex],
    topics: Mapping[str, TopicMetadata],
) -> dict[str, TopicMetadata]:
    names: set[str] = set()
    for m in members:
        names |= m.topics(resolved)
    return {name: topics[name] for name in names if name in topics}


def _target_assignment(
    group: ConsumerGroup,
    members: Mapping[str, ConsumerMember],
    replaced: tuple[str, str] | None,
    epoch: int,
    metadata: Mapping[str, TopicMetadata],
    assignor: str,
    resolved: Mapping[str, ResolvedRegex] | None = None,
) -> tuple[dict[str, Partitions], list]:
    """The new target of every member in ``members`` and the records for the members whose target
    changed, then the assignment epoch. ``replaced`` (old id, new id): a static member taking over a
    departed one starts from the departed one's target."""
    resolved = group.resolved_regexes if resolved is None else resolved
    ids = {name: t.topic_id for name, t in metadata.items()}
    subscriptions = {mid: {ids[n] for n in m.topics(resolved) if n in ids} for mid, m in members.items()}
    current = {mid: group.target.get(mid, {}) for mid in members}
    if replaced is not None:
        old_id, new_id = replaced
        current[new_id] = group.target.get(old_id, {})
    partitions = {t.topic_id: t.partitions for t in metadata.values()}
    instance_ids = {mid: m.instance_id for mid, m in members.items()}
    assign = ASSIGNORS.get(assignor, ASSIGNORS["uniform"])
    computed = assign(subscriptions, current, partitions, instance_ids)
    targets = {mid: _partitions(computed.get(mid)) for mid in members}
    records: list = [
        TargetMember(group.group_id, mid, parts)
        for mid, parts in targets.items()
        if mid not in group.target or group.target[mid] != parts
    ]
    records.append(TargetEpoch(group.group_id, epoch))
    return targets, records


# ---- ConsumerGroupHeartbeat ------------------------------------------------------------------------


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


@dataclass(frozen=True)
class SessionTimer:
    member_id: str


@dataclass(frozen=True)
class RebalanceTimer:
    member_id: str
    member_epoch: int
    timeout_ms: int


@dataclass(frozen=True)
class CancelRebalanceTimer:
    member_id: str


@dataclass(frozen=True)
class CancelTimers:
    member_id: str


@dataclass
class Outcome:
    """A decision: the response fields, the records to write, the timers to set."""

    member_id: str | None
    member_epoch: int
    heartbeat_interval_ms: int = 0
    assignment: Partitions | None = None
    records: list = field(default_factory=list)
    timers: list = field(default_factory=list)


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
    way (its record is erased; its offsets stay); one with members is not converted here."""
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
        if existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            raise GroupError(
                Errors.UNRELEASED_INSTANCE_ID,
                f"Static member {member_id} with instance id {hb.instance_id} cannot join the group because "
                f"the instance id is owned by {existing.member_id} member.",
            )
        # The new instance inherits the departed one's assignment, so nothing has to move.
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
        return successor, existing.member_id
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

    # 2. The subscribed topics' ids and partition counts; one epoch bump for all of the above.
    metadata = _subscription_metadata(members.values(), resolved, topics)
    if metadata != group.subscription_metadata:
        records.append(SubscriptionMetadata(gid, tuple(sorted(metadata.values(), key=lambda t: t.name))))
        bump = True
    group_epoch = group.group_epoch + 1 if bump else group.group_epoch
    if bump:
        records.append(GroupEpoch(gid, group_epoch))

    # 3. A new target assignment when the group epoch moved past the assignment epoch.
    if group_epoch > group.assignment_epoch:
        assignor = _preferred_assignor(members.values(), settings.assignors)
        replaced = None if replaced_id is None else (replaced_id, member_id)
        targets, target_records = _target_assignment(
            group, members, replaced, group_epoch, metadata, assignor, resolved
        )
        records += target_records
        target_epoch, target = group_epoch, targets.get(member_id, {})
    else:
        target_epoch = group.assignment_epoch
        holder = (
            group.static_members.get(updated.instance_id) if updated.instance_id is not None else member_id
        )
        target = group.target.get(holder, {}) if holder is not None else {}

    # 4. Reconcile the member toward its target.
    timers: list = []
    reconciled = updated
    if not updated.is_reconciled_to(target_epoch):
        epochs = group.partition_epochs()
        reconciled = next_assignment(
            updated, target_epoch, target, hb.owned, lambda t, p: epochs.get((t, p), -1)
        )
        if reconciled != updated:
            records.append(reconciled.assignment_record(gid))
            if reconciled.state == MemberState.UNREVOKED_PARTITIONS:
                timers.append(
                    RebalanceTimer(member_id, reconciled.member_epoch, reconciled.rebalance_timeout_ms)
                )
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


def rebalance_expired(
    group: ConsumerGroup, member_id: str, member_epoch: int, topics: Mapping[str, TopicMetadata]
) -> Outcome:
    """The member had its rebalance timeout to give partitions up at ``member_epoch``: fence it if it
    is still at that epoch."""
    member = group.members.get(member_id)
    if member is None or member.member_epoch != member_epoch:
        return Outcome(member_id=None, member_epoch=-1)
    return fence(group, member_id, topics)
