"""A classic (JoinGroup/SyncGroup) group as Kafka's ``ClassicGroup`` keeps it: members, generation,
chosen protocol, leader, state, and the members waiting for a join or sync answer.

Plain state and the decisions Kafka makes on it (protocol selection, who may commit offsets, what a
describe shows). A member waiting for its JoinGroup or SyncGroup answer holds the number of that request
(``join_waiter``, ``sync_waiter``); the rules (``classic_rules``) answer it when the rebalance gets there."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from enum import Enum

from kconform.codecs.errors import Errors

from .classic_log_records import GroupMetadataValue, MemberMetadataValue
from .errors import GroupError

__all__ = ["VALID_PREVIOUS_STATES", "ClassicGroup", "ClassicMember", "GroupState"]


class GroupState(Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


# Kafka's ClassicGroupState valid previous states for each target state.
VALID_PREVIOUS_STATES = {
    GroupState.EMPTY: {GroupState.PREPARING_REBALANCE},
    GroupState.PREPARING_REBALANCE: {GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY},
    GroupState.COMPLETING_REBALANCE: {GroupState.PREPARING_REBALANCE},
    GroupState.STABLE: {GroupState.COMPLETING_REBALANCE},
    GroupState.DEAD: set(GroupState) - {GroupState.DEAD},
}


@dataclass(eq=False)
class ClassicMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    join_waiter: int | None = None  # the JoinGroup request waiting for the rebalance to complete
    sync_waiter: int | None = None  # the SyncGroup request waiting for the leader's assignment
    is_new: bool = False

    @property
    def awaiting_join(self) -> bool:
        return self.join_waiter is not None

    @property
    def awaiting_sync(self) -> bool:
        return self.sync_waiter is not None

    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]

    def metadata_for(self, protocol: str | None) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        return b""

    def same_protocols(self, protocols: list[tuple[str, bytes]]) -> bool:
        return self.protocols == protocols


@dataclass(eq=False)
class ClassicGroup:
    group_id: str
    group_type = "classic"
    state: GroupState = GroupState.EMPTY
    generation: int = 0
    protocol_type: str | None = None
    protocol: str | None = None
    leader: str | None = None
    members: dict[str, ClassicMember] = field(default_factory=dict)
    pending_members: set[str] = field(default_factory=set)
    static_members: dict[str, str] = field(default_factory=dict)  # instance id -> member id
    pending_sync: set[str] = field(default_factory=set)
    state_timestamp: int = -1
    new_member_added: bool = False
    initial_delay: bool = False  # a new group is waiting out group.initial.rebalance.delay.ms

    # ---- state ---------------------------------------------------------------------------------

    @property
    def state_name(self) -> str:
        return self.state.value

    def is_in(self, *states: GroupState) -> bool:
        return self.state in states

    def transition(self, target: GroupState, now_ms: int) -> None:
        if self.state not in VALID_PREVIOUS_STATES[target]:
            raise AssertionError(f"group {self.group_id}: no transition {self.state.value} -> {target.value}")
        self.state = target
        self.state_timestamp = now_ms

    @property
    def is_empty(self) -> bool:
        return not self.members

    def has_member(self, member_id: str) -> bool:
        return member_id in self.members

    def static_member_id(self, instance_id: str | None) -> str | None:
        return None if instance_id is None else self.static_members.get(instance_id)

    def add(self, member: ClassicMember) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader is None:
            self.leader = member.member_id
        self.members[member.member_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        self.pending_members.discard(member.member_id)

    def remove(self, member_id: str) -> ClassicMember | None:
        member = self.members.pop(member_id, None)
        self.pending_sync.discard(member_id)
        if member is None:
            return None
        if member.group_instance_id is not None:
            self.static_members.pop(member.group_instance_id, None)
        if self.leader == member_id:
            self.leader = next(iter(self.members), None)
        return member

    def replace_static_member(
        self, instance_id: str, old_id: str, new_id: str
    ) -> tuple[ClassicMember, int | None, int | None]:
        """A static member rejoining with an unknown member id takes over its old slot (Kafka's
        ``replaceStaticMember``); returns it and the old member's waiting JoinGroup and SyncGroup
        requests, which the caller answers with FENCED_INSTANCE_ID."""
        member = self.members.pop(old_id)
        fenced = member.join_waiter, member.sync_waiter
        member.join_waiter = member.sync_waiter = None
        member.member_id = new_id
        self.members[new_id] = member
        self.static_members[instance_id] = new_id
        if self.leader == old_id:
            self.leader = new_id
        if old_id in self.pending_sync:
            self.pending_sync.discard(old_id)
            self.pending_sync.add(new_id)
        return member, *fenced

    # ---- protocols -----------------------------------------------------------------------------

    def supports_protocols(self, protocol_type: str, protocols: list[str]) -> bool:
        """Kafka's ``supportsProtocols``: an empty group takes any non-empty type and protocol list;
        otherwise the type must match and one protocol must be supported by every member."""
        if self.state is GroupState.EMPTY:
            return bool(protocol_type) and bool(protocols)
        if protocol_type != self.protocol_type or not protocols:
            return False
        return bool(self.candidate_protocols() & set(protocols))

    def candidate_protocols(self) -> set[str]:
        candidates: set[str] | None = None
        for member in self.members.values():
            names = set(member.protocol_names())
            candidates = names if candidates is None else candidates & names
        return candidates or set()

    def select_protocol(self) -> str | None:
        """Each member votes for the first protocol of its own list that all members support; the
        protocol with the most votes wins (ties go to the first counted, as Kafka's vote count does)."""
        candidates = self.candidate_protocols()
        if not candidates:
            return None
        votes: Counter[str] = Counter()
        for member in self.members.values():
            vote = next((n for n in member.protocol_names() if n in candidates), None)
            if vote is not None:
                votes[vote] += 1
        return votes.most_common(1)[0][0] if votes else None

    def subscribed_topics(self) -> set[str] | None:
        """Topics the members subscribe to, or None when that cannot be known (not the consumer
        protocol, or a subscription that does not decode): then every topic counts as subscribed."""
        if self.protocol_type != "consumer" or self.protocol is None or not self.members:
            return None if self.members else set()
        from kconform.codecs import DecodeError
        from kconform.codecs.messages import ConsumerProtocolSubscription

        topics: set[str] = set()
        for member in self.members.values():
            data = member.metadata_for(self.protocol)
            if len(data) < 2:
                return None
            version = min(int.from_bytes(data[:2], "big", signed=True), 3)
            try:
                sub, _ = ConsumerProtocolSubscription.decode_lenient(data[2:], max(version, 0))
            except DecodeError:
                return None
            topics.update(sub.topics)
        return topics

    def is_subscribed_to(self, topic: str) -> bool:
        topics = self.subscribed_topics()
        return True if topics is None else topic in topics

    # ---- offsets -------------------------------------------------------------------------------

    def validate_member(self, member_id: str, instance_id: str | None, operation: str) -> None:
        """Kafka's ``validateMember``: a static member is checked by instance id first."""
        if instance_id is not None:
            existing = self.static_members.get(instance_id)
            if existing is None:
                raise GroupError(Errors.UNKNOWN_MEMBER_ID, f"{operation}: unknown instance {instance_id}")
            if existing != member_id:
                raise GroupError(Errors.FENCED_INSTANCE_ID, f"{operation}: instance {instance_id} fenced")
        if member_id not in self.members:
            raise GroupError(Errors.UNKNOWN_MEMBER_ID, f"{operation}: unknown member {member_id}")

    def validate_offset_commit(
        self,
        member_id: str,
        instance_id: str | None,
        generation: int,
        is_transactional: bool,
        api_version: int,
    ) -> int:
        """Kafka's ``ClassicGroup.validateOffsetCommit``."""
        if self.state is GroupState.DEAD:
            return Errors.COORDINATOR_NOT_AVAILABLE
        if generation < 0 and self.state is GroupState.EMPTY:
            return Errors.NONE  # a commit from outside group management (admin or manual assignment)
        if is_transactional and generation < 0 and not member_id:
            return Errors.NONE  # old transactional clients send no generation
        try:
            self.validate_member(member_id, instance_id, "OffsetCommit")
        except GroupError as exc:
            return exc.code
        if generation != self.generation:
            return Errors.ILLEGAL_GENERATION
        if not is_transactional and self.state is GroupState.COMPLETING_REBALANCE:
            return Errors.REBALANCE_IN_PROGRESS
        return Errors.NONE

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int, api_version: int) -> int:
        return Errors.COORDINATOR_NOT_AVAILABLE if self.state is GroupState.DEAD else Errors.NONE

    def validate_offset_delete(self) -> int:
        if self.state is GroupState.DEAD:
            return Errors.GROUP_ID_NOT_FOUND
        if self.members and self.protocol_type != "consumer":
            return Errors.NON_EMPTY_GROUP
        return Errors.NONE

    def validate_delete_group(self) -> int:
        if self.state is GroupState.DEAD:
            return Errors.GROUP_ID_NOT_FOUND
        if self.state is not GroupState.EMPTY:
            return Errors.NON_EMPTY_GROUP
        return Errors.NONE

    # ---- persistence ---------------------------------------------------------------------------

    def to_record(self) -> GroupMetadataValue:
        return GroupMetadataValue(
            protocol_type=self.protocol_type or "",
            generation=self.generation,
            protocol=self.protocol,
            leader=self.leader if self.members else None,
            current_state_timestamp=self.state_timestamp,
            members=tuple(
                MemberMetadataValue(
                    m.member_id,
                    m.group_instance_id,
                    m.client_id,
                    m.client_host,
                    m.rebalance_timeout_ms,
                    m.session_timeout_ms,
                    m.metadata_for(self.protocol),
                    m.assignment,
                )
                for m in self.members.values()
            ),
        )

    @classmethod
    def from_record(cls, group_id: str, value: GroupMetadataValue) -> ClassicGroup:
        """A group as it is reloaded: Empty without members, Stable with them (Kafka's replay)."""
        group = cls(group_id, generation=value.generation, protocol_type=value.protocol_type or None)
        group.protocol = value.protocol
        group.state_timestamp = value.current_state_timestamp
        for m in value.members:
            member = ClassicMember(
                m.member_id,
                m.group_instance_id,
                m.client_id,
                m.client_host,
                m.rebalance_timeout_ms,
                m.session_timeout_ms,
                value.protocol_type,
                [(value.protocol or "", m.subscription)],
                assignment=m.assignment,
            )
            group.members[member.member_id] = member
            if member.group_instance_id is not None:
                group.static_members[member.group_instance_id] = member.member_id
        group.leader = value.leader if value.leader in group.members else next(iter(group.members), None)
        group.state = GroupState.STABLE if group.members else GroupState.EMPTY
        return group
