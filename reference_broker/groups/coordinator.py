"""The group coordinator of one node (Kafka's ``GroupMetadataManager`` and ``OffsetMetadataManager``
for classic groups): the join/sync protocol, session timers, committed offsets including transactional
ones, and their records in ``__consumer_offsets``, read back on start.

Every operation runs on the event loop; a member waiting for its JoinGroup or SyncGroup answer holds a
future that the rebalance completes. Timers (session, rebalance, pending member) are loop timers keyed
so that rescheduling replaces them."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections import defaultdict
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from uuid import UUID

from kconform.codecs.errors import Errors

from ..internal_topics import CorruptInternalTopic
from .classic import ClassicGroup, ClassicMember, GroupError, GroupState
from .records import (
    GROUP_METADATA_KEY,
    ZERO_UUID,
    OffsetCommitValue,
    RecordFormatError,
    decode_group_metadata_value,
    decode_key,
    decode_offset_commit_value,
    encode_group_metadata_key,
    encode_group_metadata_value,
    encode_offset_commit_key,
    encode_offset_commit_value,
    key_version,
)

__all__ = ["GroupCoordinator", "JoinOutcome", "SyncOutcome"]

log = logging.getLogger(__name__)
_NEW_MEMBER_JOIN_TIMEOUT_MS = 300_000  # Kafka's classic new-member join timeout


@dataclass
class JoinOutcome:
    error_code: int
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    member_id: str = ""
    members: list[tuple[str, str | None, bytes]] | None = None
    skip_assignment: bool = False


@dataclass
class SyncOutcome:
    error_code: int
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@dataclass(frozen=True)
class CommittedOffset:
    value: OffsetCommitValue
    record_offset: int


def _mismatched_topic_id(stored: UUID, expected: UUID) -> bool:
    """``OffsetMetadataManager.isMismatchedTopicId``: both ids known and different."""
    return stored != ZERO_UUID and expected != ZERO_UUID and stored != expected


class GroupCoordinator:
    def __init__(self, broker) -> None:
        self.broker = broker
        self.groups: dict[str, object] = {}
        self.offsets: dict[str, dict[tuple[str, int], CommittedOffset]] = defaultdict(dict)
        # (offsets partition, producer id) -> [(group, (topic, partition), CommittedOffset)]
        self._pending_txn: dict[tuple[int, int], list[tuple[str, tuple[str, int], CommittedOffset]]] = {}
        self._timers: dict[Hashable, asyncio.TimerHandle] = {}

    # ---- contract shared with the consumer-group (KIP-848) code ---------------------------------

    @property
    def config(self):
        return self.broker.config

    def now_ms(self) -> int:
        return self.broker.clock.now_ms()

    def partition_of(self, group_id: str) -> int:
        return self.broker.consumer_offsets.partition_for(group_id)

    def write(self, group_id: str, records: list[tuple[bytes, bytes | None]]) -> int:
        return self.broker.consumer_offsets.append(self.partition_of(group_id), records)

    def schedule(self, key: Hashable, delay_ms: int, callback: Callable[[], None]) -> None:
        self.cancel(key)
        loop = asyncio.get_running_loop()

        def fire() -> None:
            self._timers.pop(key, None)
            try:
                callback()
            except Exception:  # a timer's failure must not take the coordinator down
                log.exception("group coordinator timer %r failed", key)

        self._timers[key] = loop.call_later(max(delay_ms, 0) / 1000, fire)

    def scheduled(self, key: Hashable) -> bool:
        return key in self._timers

    def cancel(self, key: Hashable) -> None:
        handle = self._timers.pop(key, None)
        if handle is not None:
            handle.cancel()

    async def start(self) -> None:
        if self.broker.consumer_offsets.exists:
            for partition in range(self.broker.consumer_offsets.partition_count):
                self._load_partition(partition)
        # Members reloaded with a stable group get a fresh session to prove they are alive.
        for group in self.groups.values():
            if isinstance(group, ClassicGroup):
                for member in group.members.values():
                    self._schedule_session(group, member)
        from ..handlers.consumer_groups import start_sessions

        start_sessions(self)

    async def stop(self) -> None:
        for handle in self._timers.values():
            handle.cancel()
        self._timers.clear()

    # ---- loading ---------------------------------------------------------------------------------

    def _load_partition(self, partition: int) -> None:
        try:
            for stored in self.broker.consumer_offsets.read(partition):
                if stored.control is not None:
                    self._complete_pending(partition, stored.producer_id, stored.control == 1)
                    continue
                try:
                    self._replay(partition, stored)
                except RecordFormatError as exc:
                    log.error(
                        "skipping unreadable record at %s of __consumer_offsets-%d: %s",
                        stored.offset,
                        partition,
                        exc,
                    )
        except CorruptInternalTopic as exc:
            log.error("%s; the groups after that point are not loaded", exc)

    def _replay(self, partition: int, stored) -> None:
        version = key_version(stored.key)
        if version >= 3:
            try:
                from . import consumer_records
            except ImportError:
                return
            consumer_records.replay(self, version, stored.key, stored.value)
            return
        _, fields = decode_key(stored.key)
        if version == GROUP_METADATA_KEY:
            (group_id,) = fields
            if stored.value is None:
                self.groups.pop(group_id, None)
            else:
                self.groups[group_id] = ClassicGroup.from_record(
                    group_id, decode_group_metadata_value(stored.value)
                )
            return
        group_id, topic, index = fields
        if stored.value is None:
            self.offsets[group_id].pop((topic, index), None)
            return
        committed = CommittedOffset(decode_offset_commit_value(stored.value), stored.offset)
        if stored.is_transactional:
            self._pending_txn.setdefault((partition, stored.producer_id), []).append(
                (group_id, (topic, index), committed)
            )
        else:
            self.offsets[group_id][(topic, index)] = committed
        self.groups.setdefault(group_id, ClassicGroup(group_id))

    # ---- helpers -----------------------------------------------------------------------------------

    def _persist_group(self, group: ClassicGroup) -> None:
        key = encode_group_metadata_key(group.group_id)
        self.write(group.group_id, [(key, encode_group_metadata_value(group.to_record()))])

    def _classic(self, group_id: str) -> ClassicGroup | None:
        group = self.groups.get(group_id)
        if group is None:
            return None
        if not isinstance(group, ClassicGroup):
            raise GroupError(Errors.UNKNOWN_MEMBER_ID, f"group {group_id} is not a classic group")
        return group

    def _schedule_session(
        self, group: ClassicGroup, member: ClassicMember, timeout_ms: int | None = None
    ) -> None:
        key = ("session", group.group_id, member.member_id)
        delay = member.session_timeout_ms if timeout_ms is None else timeout_ms
        self.schedule(key, delay, lambda: self._session_expired(group, member.member_id))

    def _session_expired(self, group: ClassicGroup, member_id: str) -> None:
        member = group.members.get(member_id)
        if member is None or self.groups.get(group.group_id) is not group:
            return
        if member.awaiting_join or member.awaiting_sync:
            self._schedule_session(group, member)  # a member waiting on us cannot heartbeat
            return
        log.info("member %s of group %s expired", member_id, group.group_id)
        self._remove_member(group, member_id, reason="session timeout")

    def _remove_member(self, group: ClassicGroup, member_id: str, *, reason: str) -> None:
        member = group.members.get(member_id)
        if member is None:
            return
        self.cancel(("session", group.group_id, member_id))
        if member.awaiting_join:
            member.join_future.set_result(JoinOutcome(Errors.UNKNOWN_MEMBER_ID, member_id=member_id))
        group.remove(member_id)
        if group.is_in(GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._prepare_rebalance(group, reason)
        elif group.is_in(GroupState.PREPARING_REBALANCE):
            self._try_complete_join(group)

    def _rebalance_timeout_ms(self, group: ClassicGroup) -> int:
        return max((m.rebalance_timeout_ms for m in group.members.values()), default=0)

    # ---- the rebalance -----------------------------------------------------------------------------

    def _prepare_rebalance(self, group: ClassicGroup, reason: str) -> None:
        if group.is_in(GroupState.COMPLETING_REBALANCE):
            # Kafka resets assignments and tells members waiting in sync to rejoin.
            for member in group.members.values():
                member.assignment = b""
                if member.awaiting_sync:
                    member.sync_future.set_result(SyncOutcome(Errors.REBALANCE_IN_PROGRESS))
            self.cancel(("sync", group.group_id))
        was_empty = group.is_in(GroupState.EMPTY)
        group.pending_sync.clear()
        group.transition(GroupState.PREPARING_REBALANCE, self.now_ms())
        log.debug("group %s rebalancing: %s", group.group_id, reason)
        timeout = self._rebalance_timeout_ms(group)
        if was_empty:
            delay = int(self.config["group.initial.rebalance.delay.ms"])
            group.initial_delay = True
            group.new_member_added = False
            self._schedule_initial_join(group, min(delay, timeout), max(timeout - delay, 0), delay)
        else:
            group.initial_delay = False
            self.schedule(("join", group.group_id), timeout, lambda: self._complete_join(group))
            self._try_complete_join(group)

    def _schedule_initial_join(self, group: ClassicGroup, delay: int, remaining: int, step: int) -> None:
        """Kafka's ``InitialDelayedJoin``: a new group waits for more members, another step each
        time someone joined during the last one, up to the rebalance timeout."""

        def fire() -> None:
            if group.new_member_added and remaining > 0:
                group.new_member_added = False
                self._schedule_initial_join(group, min(step, remaining), max(remaining - step, 0), step)
            else:
                group.initial_delay = False
                self._complete_join(group)

        self.schedule(("join", group.group_id), delay, fire)

    def _try_complete_join(self, group: ClassicGroup) -> None:
        if not group.is_in(GroupState.PREPARING_REBALANCE) or group.initial_delay:
            return
        if group.pending_members:
            return
        if all(m.awaiting_join for m in group.members.values()):
            self._complete_join(group)

    def _complete_join(self, group: ClassicGroup) -> None:
        if not group.is_in(GroupState.PREPARING_REBALANCE) or self.groups.get(group.group_id) is not group:
            return
        self.cancel(("join", group.group_id))
        for member_id, member in list(group.members.items()):
            if not member.awaiting_join and member.group_instance_id is None:
                self.cancel(("session", group.group_id, member_id))
                group.remove(member_id)
        now = self.now_ms()
        group.generation += 1
        if group.is_empty:
            group.protocol = None
            group.transition(GroupState.EMPTY, now)
            self._persist_group(group)
            return
        group.protocol = group.select_protocol()
        if group.leader not in group.members or not group.members[group.leader].awaiting_join:
            group.leader = next(
                (m.member_id for m in group.members.values() if m.awaiting_join), group.leader
            )
        group.transition(GroupState.COMPLETING_REBALANCE, now)
        log.debug(
            "group %s generation %d: leader %s, members %s, awaiting %s",
            group.group_id,
            group.generation,
            group.leader,
            list(group.members),
            [m for m, x in group.members.items() if x.awaiting_join],
        )
        group.pending_sync = set(group.members)
        generation = group.generation
        self.schedule(
            ("sync", group.group_id),
            self._rebalance_timeout_ms(group),
            lambda: self._sync_expired(group, generation),
        )
        for member in group.members.values():
            if member.awaiting_join:
                member.join_future.set_result(self._join_answer(group, member))
            member.is_new = False
            self._schedule_session(group, member)

    def _join_answer(
        self, group: ClassicGroup, member: ClassicMember, *, skip_assignment: bool = False
    ) -> JoinOutcome:
        members = None
        if member.member_id == group.leader:
            members = [
                (m.member_id, m.group_instance_id, m.metadata_for(group.protocol))
                for m in group.members.values()
            ]
        return JoinOutcome(
            Errors.NONE,
            generation_id=group.generation,
            protocol_type=group.protocol_type,
            protocol_name=group.protocol,
            leader=group.leader or "",
            member_id=member.member_id,
            members=members,
            skip_assignment=skip_assignment,
        )

    def _sync_expired(self, group: ClassicGroup, generation: int) -> None:
        """Members that did not sync within the rebalance timeout are removed (Kafka's pending-sync
        expiry), and the group rebalances without them."""
        if group.generation != generation or not group.is_in(GroupState.COMPLETING_REBALANCE):
            return
        for member_id in list(group.pending_sync):
            self.cancel(("session", group.group_id, member_id))
            group.remove(member_id)
        if group.is_empty:
            group.transition(GroupState.PREPARING_REBALANCE, self.now_ms())
            self._complete_join(group)
        else:
            self._prepare_rebalance(group, "members did not sync in time")

    # ---- JoinGroup -------------------------------------------------------------------------------

    async def join_group(
        self,
        *,
        group_id: str,
        member_id: str,
        instance_id: str | None,
        protocol_type: str,
        protocols: list[tuple[str, bytes]],
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        client_id: str,
        client_host: str,
        require_known_member_id: bool,
    ) -> JoinOutcome:
        if not group_id:
            return JoinOutcome(Errors.INVALID_GROUP_ID, member_id=member_id)
        low, high = (
            int(self.config["group.min.session.timeout.ms"]),
            int(self.config["group.max.session.timeout.ms"]),
        )
        if not low <= session_timeout_ms <= high:
            return JoinOutcome(Errors.INVALID_SESSION_TIMEOUT, member_id=member_id)
        self.broker.consumer_offsets.ensure()
        existing = self.groups.get(group_id)
        if existing is not None and not isinstance(existing, ClassicGroup):
            if getattr(existing, "is_empty", False) and not member_id:
                # An empty consumer group turns classic (Kafka's downgrade): its records go first.
                self.write(group_id, existing.tombstones())
                del self.groups[group_id]
            else:
                return JoinOutcome(Errors.INCONSISTENT_GROUP_PROTOCOL, member_id=member_id)
        group = self.groups.get(group_id)
        if group is None:
            if member_id:
                return JoinOutcome(Errors.UNKNOWN_MEMBER_ID, member_id=member_id)
            group = ClassicGroup(group_id)
            self.groups[group_id] = group
        if group.is_in(GroupState.DEAD):
            return JoinOutcome(Errors.COORDINATOR_NOT_AVAILABLE, member_id=member_id)
        if not group.supports_protocols(protocol_type, [name for name, _ in protocols]):
            return JoinOutcome(Errors.INCONSISTENT_GROUP_PROTOCOL, member_id=member_id)
        details = dict(
            instance_id=instance_id,
            protocol_type=protocol_type,
            protocols=protocols,
            session_timeout_ms=session_timeout_ms,
            rebalance_timeout_ms=rebalance_timeout_ms,
            client_id=client_id,
            client_host=client_host,
        )
        log.debug("join %s member %r in %s", group_id, member_id, group.state_name)
        if not member_id:
            return await self._join_new_member(group, require_known_member_id, **details)
        return await self._join_known_member(group, member_id, **details)

    def _at_capacity(self, group: ClassicGroup) -> bool:
        return len(group.members) + len(group.pending_members) >= int(self.config["group.max.size"])

    async def _join_new_member(
        self, group: ClassicGroup, require_known_member_id: bool, **details
    ) -> JoinOutcome:
        instance_id = details["instance_id"]
        new_id = f"{instance_id or details['client_id']}-{uuid.uuid4()}"
        if instance_id is not None:
            old_id = group.static_member_id(instance_id)
            if old_id is not None:
                return await self._rejoin_static_member(group, old_id, new_id, **details)
        if self._at_capacity(group):
            return JoinOutcome(Errors.GROUP_MAX_SIZE_REACHED, member_id="")
        if instance_id is None and require_known_member_id:
            # KIP-394: the member must come back with this id; until then it only holds a place.
            group.pending_members.add(new_id)
            self.schedule(
                ("pending", group.group_id, new_id),
                details["session_timeout_ms"],
                lambda: self._pending_expired(group, new_id),
            )
            return JoinOutcome(Errors.MEMBER_ID_REQUIRED, member_id=new_id)
        return await self._add_member_and_rebalance(group, new_id, **details)

    def _pending_expired(self, group: ClassicGroup, member_id: str) -> None:
        if member_id in group.pending_members:
            group.pending_members.discard(member_id)
            self._try_complete_join(group)

    async def _add_member_and_rebalance(self, group: ClassicGroup, member_id: str, **details) -> JoinOutcome:
        self.cancel(("pending", group.group_id, member_id))
        member = ClassicMember(
            member_id,
            details["instance_id"],
            details["client_id"],
            details["client_host"],
            details["rebalance_timeout_ms"],
            details["session_timeout_ms"],
            details["protocol_type"],
            list(details["protocols"]),
            is_new=True,
        )
        member.join_future = asyncio.get_running_loop().create_future()
        group.add(member)
        if group.is_in(GroupState.PREPARING_REBALANCE) and group.initial_delay:
            group.new_member_added = True
        self._schedule_session(group, member, _NEW_MEMBER_JOIN_TIMEOUT_MS)
        if group.is_in(GroupState.PREPARING_REBALANCE):
            self._try_complete_join(group)
        else:
            self._prepare_rebalance(group, f"member {member_id} joined")
        return await member.join_future

    async def _rejoin_static_member(
        self, group: ClassicGroup, old_id: str, new_id: str, **details
    ) -> JoinOutcome:
        member = group.members[old_id]
        self.cancel(("session", group.group_id, old_id))
        old_protocols = member.protocols
        member = group.replace_static_member(details["instance_id"], old_id, new_id)
        member.protocols = list(details["protocols"])
        member.session_timeout_ms = details["session_timeout_ms"]
        member.rebalance_timeout_ms = details["rebalance_timeout_ms"]
        if group.is_in(GroupState.STABLE):
            if group.select_protocol() == group.protocol and old_protocols == member.protocols:
                # Kafka's static rejoin without a change: the current generation, no rebalance; the
                # leader is told to skip assignment (v9+) since nothing changed.
                self._schedule_session(group, member)
                answer = self._join_answer(group, member, skip_assignment=member.member_id == group.leader)
                return answer
            self._prepare_rebalance(group, f"static member {details['instance_id']} changed")
        elif group.is_in(GroupState.COMPLETING_REBALANCE):
            self._prepare_rebalance(group, f"static member {details['instance_id']} rejoined")
        member.join_future = asyncio.get_running_loop().create_future()
        self._schedule_session(group, member)
        self._try_complete_join(group)
        return await member.join_future

    async def _join_known_member(self, group: ClassicGroup, member_id: str, **details) -> JoinOutcome:
        if member_id in group.pending_members:
            return await self._add_member_and_rebalance(group, member_id, **details)
        try:
            group.validate_member(member_id, details["instance_id"], "JoinGroup")
        except GroupError as exc:
            return JoinOutcome(exc.code, member_id=member_id)
        member = group.members[member_id]
        protocols = list(details["protocols"])
        if group.is_in(GroupState.EMPTY, GroupState.DEAD):
            return JoinOutcome(Errors.UNKNOWN_MEMBER_ID, member_id=member_id)
        if group.is_in(GroupState.COMPLETING_REBALANCE) and member.same_protocols(protocols):
            return self._join_answer(group, member)  # a retried join of this generation
        if group.is_in(GroupState.STABLE) and member_id != group.leader and member.same_protocols(protocols):
            return self._join_answer(group, member)
        member.protocols = protocols
        member.session_timeout_ms = details["session_timeout_ms"]
        member.rebalance_timeout_ms = details["rebalance_timeout_ms"]
        member.client_id, member.client_host = details["client_id"], details["client_host"]
        if member.awaiting_join:  # a second join while the first waits replaces the first
            member.join_future.set_result(JoinOutcome(Errors.REBALANCE_IN_PROGRESS, member_id=member_id))
        member.join_future = asyncio.get_running_loop().create_future()
        self._schedule_session(group, member)
        if group.is_in(GroupState.PREPARING_REBALANCE):
            self._try_complete_join(group)
        else:
            self._prepare_rebalance(group, f"member {member_id} rejoined")
        return await member.join_future

    # ---- SyncGroup -------------------------------------------------------------------------------

    async def sync_group(
        self,
        *,
        group_id: str,
        generation: int,
        member_id: str,
        instance_id: str | None,
        protocol_type: str | None,
        protocol_name: str | None,
        assignments: list[tuple[str, bytes]],
    ) -> SyncOutcome:
        try:
            group = self._classic(group_id)
        except GroupError as exc:
            return SyncOutcome(exc.code)
        if group is None:
            return SyncOutcome(Errors.UNKNOWN_MEMBER_ID)
        if group.is_in(GroupState.DEAD):
            return SyncOutcome(Errors.COORDINATOR_NOT_AVAILABLE)
        try:
            group.validate_member(member_id, instance_id, "SyncGroup")
        except GroupError as exc:
            return SyncOutcome(exc.code)
        if generation != group.generation:
            return SyncOutcome(Errors.ILLEGAL_GENERATION)
        if (protocol_type is not None and protocol_type != group.protocol_type) or (
            protocol_name is not None and protocol_name != group.protocol
        ):
            return SyncOutcome(Errors.INCONSISTENT_GROUP_PROTOCOL)
        member = group.members[member_id]
        if group.is_in(GroupState.EMPTY):
            return SyncOutcome(Errors.UNKNOWN_MEMBER_ID)
        if group.is_in(GroupState.PREPARING_REBALANCE):
            return SyncOutcome(Errors.REBALANCE_IN_PROGRESS)
        group.pending_sync.discard(member_id)
        self._schedule_session(group, member)
        log.debug("sync %s member %s generation %d in %s", group_id, member_id, generation, group.state_name)
        if group.is_in(GroupState.STABLE):
            return SyncOutcome(Errors.NONE, group.protocol_type, group.protocol, member.assignment)
        # CompletingRebalance: the leader's assignment completes everyone's sync.
        member.sync_future = asyncio.get_running_loop().create_future()
        if member_id == group.leader:
            given = dict(assignments)
            for m in group.members.values():
                m.assignment = given.get(m.member_id, b"")
            group.transition(GroupState.STABLE, self.now_ms())
            self.cancel(("sync", group.group_id))
            try:
                self._persist_group(group)
            except Exception:
                log.exception("persisting group %s failed", group_id)
                self._prepare_rebalance(group, "group metadata could not be written")
                return SyncOutcome(Errors.COORDINATOR_NOT_AVAILABLE)
            for m in group.members.values():
                if m.awaiting_sync:
                    m.sync_future.set_result(
                        SyncOutcome(Errors.NONE, group.protocol_type, group.protocol, m.assignment)
                    )
        return await member.sync_future

    # ---- Heartbeat and LeaveGroup ------------------------------------------------------------------

    def heartbeat(self, *, group_id: str, generation: int, member_id: str, instance_id: str | None) -> int:
        code = self._heartbeat(
            group_id=group_id, generation=generation, member_id=member_id, instance_id=instance_id
        )
        log.debug("heartbeat %s %s gen %d -> %d", group_id, member_id, generation, code)
        return code

    def _heartbeat(self, *, group_id: str, generation: int, member_id: str, instance_id: str | None) -> int:
        try:
            group = self._classic(group_id)
        except GroupError as exc:
            return exc.code
        if group is None:
            return Errors.UNKNOWN_MEMBER_ID
        if group.is_in(GroupState.DEAD):
            return Errors.COORDINATOR_NOT_AVAILABLE
        try:
            group.validate_member(member_id, instance_id, "Heartbeat")
        except GroupError as exc:
            return exc.code
        if generation != group.generation:
            return Errors.ILLEGAL_GENERATION
        if group.is_in(GroupState.EMPTY):
            return Errors.UNKNOWN_MEMBER_ID
        self._schedule_session(group, group.members[member_id])
        if group.is_in(GroupState.PREPARING_REBALANCE):
            return Errors.REBALANCE_IN_PROGRESS
        return Errors.NONE

    def leave_group(self, group_id: str, leaving: list[tuple[str, str | None]]) -> tuple[int, list[int]]:
        """(top-level error, one error per leaving member) for LeaveGroup."""
        try:
            group = self._classic(group_id)
        except GroupError as exc:
            return exc.code, []
        if group is None:
            return Errors.UNKNOWN_MEMBER_ID, []
        if group.is_in(GroupState.DEAD):
            return Errors.COORDINATOR_NOT_AVAILABLE, []
        results = []
        for member_id, instance_id in leaving:
            if not member_id and instance_id is not None:
                target = group.static_member_id(instance_id)
                if target is None:
                    results.append(Errors.UNKNOWN_MEMBER_ID)
                    continue
                member_id = target
            elif member_id in group.pending_members:
                group.pending_members.discard(member_id)
                self.cancel(("pending", group.group_id, member_id))
                self._try_complete_join(group)
                results.append(Errors.NONE)
                continue
            try:
                group.validate_member(member_id, instance_id, "LeaveGroup")
            except GroupError as exc:
                results.append(exc.code)
                continue
            self._remove_member(group, member_id, reason="member left")
            results.append(Errors.NONE)
        return Errors.NONE, results

    # ---- describe, list, delete -------------------------------------------------------------------

    def list_groups(self, states: list[str], types: list[str]) -> list[tuple[str, str, str, str]]:
        wanted_states = {s.lower() for s in states}
        wanted_types = {t.lower() for t in types}
        listed = []
        for group_id, group in self.groups.items():
            state = group.state_name
            if wanted_states and state.lower() not in wanted_states:
                continue
            if wanted_types and group.group_type.lower() not in wanted_types:
                continue
            listed.append((group_id, group.protocol_type or "", state, group.group_type))
        return listed

    def delete_groups(self, group_ids: list[str]) -> list[int]:
        results = []
        for group_id in group_ids:
            group = self.groups.get(group_id)
            if group is None:
                results.append(Errors.GROUP_ID_NOT_FOUND)
                continue
            code = group.validate_delete_group()
            if code != Errors.NONE:
                results.append(code)
                continue
            records = [
                (encode_offset_commit_key(group_id, t, p), None) for t, p in self.offsets.get(group_id, {})
            ]
            if isinstance(group, ClassicGroup):
                records.append((encode_group_metadata_key(group_id), None))
            else:
                records.extend(group.tombstones())
            self.write(group_id, records)
            self.offsets.pop(group_id, None)
            del self.groups[group_id]
            if isinstance(group, ClassicGroup):
                group.state = GroupState.DEAD
            results.append(Errors.NONE)
        return results

    # ---- offsets -----------------------------------------------------------------------------------

    def _group_for_commit(self, group_id: str, generation: int, api_version: int, *, transactional: bool):
        group = self.groups.get(group_id)
        if group is not None:
            return group
        if generation < 0:
            # A commit from outside group management creates a "simple" group (Kafka does the same).
            group = ClassicGroup(group_id)
            self.groups[group_id] = group
            return group
        if transactional:
            raise GroupError(Errors.ILLEGAL_GENERATION)
        raise GroupError(Errors.GROUP_ID_NOT_FOUND if api_version >= 9 else Errors.ILLEGAL_GENERATION)

    def commit_offsets(
        self,
        *,
        group_id: str,
        generation: int,
        member_id: str,
        instance_id: str | None,
        offsets: list[tuple[str, int, int, int, str | None]],
        api_version: int,
        producer: tuple[int, int] | None = None,
        transactional_id: str | None = None,
        topic_ids: Mapping[str, UUID] | None = None,
    ) -> dict[tuple[str, int], int]:
        """Commit (topic, partition, offset, leader epoch, metadata) entries; the error per partition.
        With ``producer`` (id, epoch) the commit is transactional: written now, applied when the
        producer's transaction commits. ``topic_ids`` (OffsetCommit v10: topics named by id) are kept
        with the offsets, as Kafka 4.1 keeps them (``OffsetAndMetadata.topicId``, KAFKA-19141)."""
        if not group_id:
            return {(t, p): Errors.INVALID_GROUP_ID for t, p, *_ in offsets}
        # KafkaApis answers partitions the cluster does not have before the coordinator sees the rest
        # (handleOffsetCommitRequest, handleTxnOffsetCommitRequest: metadataCache.getPartitionInfo).
        unknown = {
            (t, p): Errors.UNKNOWN_TOPIC_OR_PARTITION
            for t, p, *_ in offsets
            if self.broker.partition(t, p) is None
        }
        if unknown:
            known = [entry for entry in offsets if (entry[0], entry[1]) not in unknown]
            if not known:
                return unknown
            return {
                **self.commit_offsets(
                    group_id=group_id,
                    generation=generation,
                    member_id=member_id,
                    instance_id=instance_id,
                    offsets=known,
                    api_version=api_version,
                    producer=producer,
                    transactional_id=transactional_id,
                    topic_ids=topic_ids,
                ),
                **unknown,
            }
        self.broker.consumer_offsets.ensure()
        transactional = producer is not None
        try:
            group = self._group_for_commit(group_id, generation, api_version, transactional=transactional)
            code = group.validate_offset_commit(
                member_id, instance_id, generation, transactional, api_version
            )
        except GroupError as exc:
            code = exc.code
        if code != Errors.NONE:
            return {(t, p): code for t, p, *_ in offsets}
        limit = int(self.config["offset.metadata.max.bytes"])
        now = self.now_ms()
        results: dict[tuple[str, int], int] = {}
        accepted: list[tuple[tuple[str, int], OffsetCommitValue]] = []
        for topic, partition, offset, leader_epoch, metadata in offsets:
            if metadata is not None and len(metadata.encode()) > limit:
                results[(topic, partition)] = Errors.OFFSET_METADATA_TOO_LARGE
            else:
                topic_id = (topic_ids or {}).get(topic, ZERO_UUID)
                value = OffsetCommitValue(offset, leader_epoch, metadata or "", now, topic_id=topic_id)
                accepted.append(((topic, partition), value))
                results[(topic, partition)] = Errors.NONE
        if not accepted:
            return results
        records = [
            (encode_offset_commit_key(group_id, t, p), encode_offset_commit_value(v))
            for (t, p), v in accepted
        ]
        partition = self.partition_of(group_id)
        try:
            if producer is None:
                last = self.broker.consumer_offsets.append(partition, records)
            else:
                last = self.broker.consumer_offsets.append(
                    partition,
                    records,
                    producer_id=producer[0],
                    producer_epoch=producer[1],
                    transactional=True,
                )
        except Exception as exc:
            code = getattr(exc, "code", None) or Errors.COORDINATOR_NOT_AVAILABLE
            log.warning("offset commit for group %s not written: %s", group_id, exc)
            return {key: (code if results[key] == Errors.NONE else results[key]) for key in results}
        first = last - len(records) + 1
        for i, (tp, value) in enumerate(accepted):
            committed = CommittedOffset(value, first + i)
            if producer is None:
                self.offsets[group_id][tp] = committed
            else:
                self._pending_txn.setdefault((partition, producer[0]), []).append((group_id, tp, committed))
        return results

    def complete_transaction(
        self, offsets_partition: int, producer_id: int, producer_epoch: int, commit: bool
    ) -> None:
        """The transaction's marker has been written to this ``__consumer_offsets`` partition."""
        self._complete_pending(offsets_partition, producer_id, commit)

    def _complete_pending(self, partition: int, producer_id: int, commit: bool) -> None:
        pending = self._pending_txn.pop((partition, producer_id), [])
        if not commit:
            return
        for group_id, tp, committed in pending:
            current = self.offsets[group_id].get(tp)
            # A plain commit written after the transactional one wins (Kafka compares record offsets).
            if current is None or current.record_offset < committed.record_offset:
                self.offsets[group_id][tp] = committed

    def has_pending_transactional_offsets(self, group_id: str, tp: tuple[str, int]) -> bool:
        return any(g == group_id and t == tp for entries in self._pending_txn.values() for g, t, _ in entries)

    def fetch_offsets(
        self,
        group_id: str,
        topics: list[tuple[str, list[int]]] | None,
        *,
        require_stable: bool,
        topic_ids: Mapping[str, UUID] | None = None,
    ) -> dict[tuple[str, int], tuple[int, int, str, int]]:
        """(offset, leader epoch, metadata, error) per partition; ``topics`` None means every
        partition the group has offsets for. With ``topic_ids`` (OffsetFetch v10) an offset committed
        under another id of the topic's name (the topic was deleted and created again) is no offset:
        ``OffsetMetadataManager.fetchOffsets``, ``isOffsetInvalid`` (KAFKA-19154)."""
        committed = self.offsets.get(group_id, {})
        if topics is None:
            wanted = sorted(committed)
        else:
            wanted = [(t, p) for t, parts in topics for p in parts]
        result = {}
        for tp in wanted:
            if require_stable and self.has_pending_transactional_offsets(group_id, tp):
                result[tp] = (-1, -1, "", Errors.UNSTABLE_OFFSET_COMMIT)
                continue
            entry = committed.get(tp)
            expected = (topic_ids or {}).get(tp[0], ZERO_UUID)
            if entry is None or _mismatched_topic_id(entry.value.topic_id, expected):
                result[tp] = (-1, -1, "", Errors.NONE)
            else:
                v = entry.value
                result[tp] = (v.offset, v.leader_epoch, v.metadata, Errors.NONE)
        return result

    def delete_offsets(
        self, group_id: str, partitions: list[tuple[str, int]]
    ) -> tuple[int, dict[tuple[str, int], int]]:
        group = self.groups.get(group_id)
        if group is None:
            return Errors.GROUP_ID_NOT_FOUND, {}
        code = group.validate_offset_delete()
        if code != Errors.NONE:
            return code, {}
        results = {}
        doomed = []
        for topic, partition in partitions:
            if not group.is_empty and group.is_subscribed_to(topic):
                results[(topic, partition)] = Errors.GROUP_SUBSCRIBED_TO_TOPIC
            else:
                results[(topic, partition)] = Errors.NONE
                if (topic, partition) in self.offsets.get(group_id, {}):
                    doomed.append((topic, partition))
        if doomed:
            self.write(group_id, [(encode_offset_commit_key(group_id, t, p), None) for t, p in doomed])
            for tp in doomed:
                self.offsets[group_id].pop(tp, None)
        return Errors.NONE, results
