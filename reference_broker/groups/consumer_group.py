"""KIP-848 consumer groups: the group epoch, each member's epoch and subscription, the target assignment
the server-side assignor computes, and the reconciliation that moves members to it (Kafka's
``ConsumerGroup``, ``ConsumerGroupMember`` and ``CurrentAssignmentBuilder``).

Reconciliation, as in Kafka: a member first gives up the partitions it must lose (it keeps its epoch
and is told its assignment without them, state UNREVOKED_PARTITIONS); once its heartbeat no longer
reports them it moves to the assignment epoch and gets the target partitions that no other member
still holds (UNRELEASED_PARTITIONS until they are all free, then STABLE). A partition is therefore never
in two members' assignments at once."""

from __future__ import annotations

from dataclasses import dataclass, field
from uuid import UUID

from kconform.codecs.errors import Errors

from .assignors import ASSIGNORS

__all__ = ["ConsumerGroup", "ConsumerMember", "MemberState"]

TopicPartitions = dict[UUID, set[int]]


class MemberState:
    STABLE = "stable"
    UNREVOKED_PARTITIONS = "unrevoked_partitions"
    UNRELEASED_PARTITIONS = "unreleased_partitions"


@dataclass(eq=False)
class ConsumerMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = 300_000
    subscribed_topic_names: list[str] = field(default_factory=list)
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: str = MemberState.STABLE
    assigned: TopicPartitions = field(default_factory=dict)
    pending_revocation: TopicPartitions = field(default_factory=dict)


def _copy(tp: TopicPartitions) -> TopicPartitions:
    return {t: set(p) for t, p in tp.items() if p}


def _minus(a: TopicPartitions, b: TopicPartitions) -> TopicPartitions:
    return {t: p - b.get(t, set()) for t, p in a.items() if p - b.get(t, set())}


def _intersect(a: TopicPartitions, b: TopicPartitions) -> TopicPartitions:
    return {t: p & b.get(t, set()) for t, p in a.items() if p & b.get(t, set())}


@dataclass(eq=False)
class ConsumerGroup:
    group_id: str
    group_type = "consumer"
    protocol_type = "consumer"
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)
    target: dict[str, TopicPartitions] = field(default_factory=dict)
    subscribed_metadata: dict[str, int] = field(default_factory=dict)  # topic name -> partitions
    assignor: str = "uniform"

    # ---- state ---------------------------------------------------------------------------------

    @property
    def is_empty(self) -> bool:
        return not self.members

    @property
    def state_name(self) -> str:
        if not self.members:
            return "Empty"
        if self.group_epoch > self.assignment_epoch:
            return "Assigning"
        if any(
            m.member_epoch != self.assignment_epoch or m.state != MemberState.STABLE
            for m in self.members.values()
        ):
            return "Reconciling"
        return "Stable"

    def subscribed_topic_names(self, topic_names: list[str]) -> set[str]:
        import re

        wanted: set[str] = set()
        for m in self.members.values():
            wanted.update(m.subscribed_topic_names)
            if m.subscribed_topic_regex:
                try:
                    pattern = re.compile(m.subscribed_topic_regex)
                except re.error:
                    continue
                wanted.update(t for t in topic_names if pattern.fullmatch(t))
        return wanted

    def is_subscribed_to(self, topic: str) -> bool:
        return any(topic in m.subscribed_topic_names for m in self.members.values())

    # ---- target assignment --------------------------------------------------------------------

    def compute_target(self, topics_by_name: dict[str, tuple[UUID, int]]) -> None:
        """Run the assignor over the members' subscriptions (Kafka's ``TargetAssignmentBuilder``)."""
        import re

        subscriptions: dict[str, set[UUID]] = {}
        for member_id, m in self.members.items():
            names = set(m.subscribed_topic_names)
            if m.subscribed_topic_regex:
                try:
                    pattern = re.compile(m.subscribed_topic_regex)
                    names.update(t for t in topics_by_name if pattern.fullmatch(t))
                except re.error:
                    pass
            subscriptions[member_id] = {topics_by_name[n][0] for n in names if n in topics_by_name}
        partitions = {tid: count for tid, count in topics_by_name.values()}
        assign = ASSIGNORS[self.assignor]
        current = {mid: self.target.get(mid, {}) for mid in self.members}
        self.target = {mid: _copy(tp) for mid, tp in assign(subscriptions, current, partitions).items()}
        self.assignment_epoch = self.group_epoch

    # ---- reconciliation ----------------------------------------------------------------------

    def owned_by_others(self, member_id: str) -> TopicPartitions:
        owned: TopicPartitions = {}
        for other_id, other in self.members.items():
            if other_id == member_id:
                continue
            for source in (other.assigned, other.pending_revocation):
                for topic, parts in source.items():
                    owned.setdefault(topic, set()).update(parts)
        return owned

    def reconcile(self, member: ConsumerMember, reported: TopicPartitions | None) -> None:
        """Move ``member`` toward the target (``reported``: the partitions its heartbeat says it
        owns, or None when unchanged)."""
        target = self.target.get(member.member_id, {})
        if member.state == MemberState.UNREVOKED_PARTITIONS:
            still_held = reported is not None and bool(_intersect(reported, member.pending_revocation))
            if reported is None or still_held:
                return  # the member has not confirmed the revocation yet
            member.pending_revocation = {}
        if member.member_epoch == self.assignment_epoch and member.state == MemberState.STABLE:
            return
        revoke = _minus(member.assigned, target)
        if revoke and member.member_epoch != self.assignment_epoch:
            member.assigned = _intersect(member.assigned, target)
            member.pending_revocation = revoke
            member.state = MemberState.UNREVOKED_PARTITIONS
            return
        unreleased = _intersect(target, self.owned_by_others(member.member_id))
        member.previous_member_epoch = member.member_epoch
        member.member_epoch = self.assignment_epoch
        member.assigned = _minus(target, unreleased)
        member.state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE

    # ---- offsets (the contract with the offset APIs) ----------------------------------------------

    def validate_offset_commit(
        self,
        member_id: str,
        instance_id: str | None,
        member_epoch: int,
        is_transactional: bool,
        api_version: int,
    ) -> int:
        """Kafka's ``ConsumerGroup.validateOffsetCommit``."""
        if member_epoch < 0 and not member_id and not self.members:
            return Errors.NONE  # admin or manual commits to an empty group
        member = self.members.get(member_id)
        if member is None:
            return Errors.UNKNOWN_MEMBER_ID
        if member_epoch != member.member_epoch:
            return Errors.STALE_MEMBER_EPOCH
        return Errors.NONE

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int, api_version: int) -> int:
        if member_id is None or member_epoch < 0:
            return Errors.NONE  # an admin fetch
        member = self.members.get(member_id)
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
        """Records that erase the group from ``__consumer_offsets`` (DeleteGroups)."""
        from .consumer_records import group_tombstones

        return group_tombstones(self)
