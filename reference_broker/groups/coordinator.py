"""The group coordinator of one node: the state (``GroupsState``), the rules that decide on it
(``rules``), and the runtime that writes their records to ``__consumer_offsets``, runs their timers and
answers the requests they park. This module only turns requests into events and reads the node.

It reaches the node through ``GroupCoordinatorHost``, nothing else."""

from __future__ import annotations

import dataclasses
import logging
import uuid
from collections.abc import Iterable, Mapping
from typing import Protocol
from uuid import UUID

from kconform.codecs.errors import Errors

from ..clock import Clock
from ..cluster_metadata import TopicInfo
from ..coordinator_runtime import CoordinatorRuntime
from ..internal_topics import InternalTopic
from . import classic_rules, kip848_effects
from .classic_rules import JoinOutcome, SyncOutcome
from .errors import GroupError
from .events import (
    ClassicHeartbeat,
    ClassicSettings,
    CommitOffsets,
    ConsumerHeartbeat,
    DeleteGroups,
    DeleteOffsets,
    GroupContext,
    GroupsState,
    JoinGroup,
    LeaveGroup,
    SyncGroup,
    TransactionCompleted,
)
from .kip848_group import new_member_id as new_consumer_member_id
from .kip848_log_records import TopicMetadata
from .kip848_rules import Heartbeat, Outcome, Settings
from .loader import load_partition
from .offset_rules import fetch_offsets, has_pending_transactional_offsets, list_groups
from .rules import decide
from .server_assignors import assignor_names

__all__ = ["GroupCoordinator", "GroupCoordinatorHost", "JoinOutcome", "SyncOutcome"]

log = logging.getLogger(__name__)


class GroupCoordinatorHost(Protocol):
    """What the group coordinator needs from its node."""

    @property
    def config(self) -> Mapping[str, object]:
        """The broker settings (``group.*``, ``offset.*``); read on every decision, as they may change."""

    @property
    def clock(self) -> Clock: ...

    @property
    def consumer_offsets(self) -> InternalTopic:
        """The coordinator log: created on first use, read back on start."""

    @property
    def topics(self) -> Iterable[TopicInfo]:
        """The cluster's topics, for KIP-848 assignments and for telling which partitions exist
        (``get(name)``): offset commits for others are refused."""


def uncommitted_answer(answer: object, error: int) -> object:
    """What a member hears when the records behind its answer were not committed in time
    (``CoordinatorOperationExceptionHelper``): NOT_COORDINATOR if the partition's leadership moved,
    COORDINATOR_NOT_AVAILABLE otherwise; in the shape of the answer it replaces."""
    code = (
        Errors.NOT_COORDINATOR if error == Errors.NOT_LEADER_OR_FOLLOWER else Errors.COORDINATOR_NOT_AVAILABLE
    )
    if isinstance(answer, int):
        return code
    if isinstance(answer, JoinOutcome | SyncOutcome):
        return dataclasses.replace(answer, error_code=code)
    if isinstance(answer, dict):
        return {key: code for key in answer}
    if isinstance(answer, list):
        return [code for _ in answer]
    if isinstance(answer, tuple) and answer and isinstance(answer[0], int):
        return (code, *(type(part)() for part in answer[1:]))
    return GroupError(code)  # a KIP-848 heartbeat's outcome


class GroupCoordinator:
    """Coordinates the groups of the ``__consumer_offsets`` partitions this broker leads: a partition's
    groups are loaded when the broker becomes its leader (``elect``) and dropped when it stops
    (``resign``), as Kafka's ``GroupCoordinatorService.onElection`` / ``onResignation``; a request
    for a group of another partition is NOT_COORDINATOR."""

    def __init__(self, host: GroupCoordinatorHost) -> None:
        self._host = host
        self.state = GroupsState()
        self.runtime = CoordinatorRuntime(
            "group coordinator",
            self._decide,
            host.consumer_offsets,
            uncommitted=uncommitted_answer,
            commit_timeout_s=lambda: int(host.config["offsets.commit.timeout.ms"]) / 1000,
        )
        self.owned: dict[int, int] = {}  # __consumer_offsets partition -> the leader epoch it loaded at

    @property
    def groups(self) -> dict[str, object]:
        return self.state.groups

    @property
    def offsets(self):
        return self.state.offsets

    def _context(self) -> GroupContext:
        config = self._host.config
        host = self._host
        return GroupContext(
            now_ms=host.clock.now_ms(),
            classic=ClassicSettings(
                min_session_timeout_ms=int(config["group.min.session.timeout.ms"]),
                max_session_timeout_ms=int(config["group.max.session.timeout.ms"]),
                initial_rebalance_delay_ms=int(config["group.initial.rebalance.delay.ms"]),
                max_size=int(config["group.max.size"]),
                offset_metadata_max_bytes=int(config["offset.metadata.max.bytes"]),
            ),
            consumer=Settings(
                assignors=tuple(assignor_names(config["group.consumer.assignors"])),
                max_size=int(config["group.consumer.max.size"]),
                heartbeat_interval_ms=int(config["group.consumer.heartbeat.interval.ms"]),
            ),
            consumer_session_timeout_ms=int(config["group.consumer.session.timeout.ms"]),
            migration_policy=str(config["group.consumer.migration.policy"]).lower(),
            topics=lambda: {
                t.name: TopicMetadata(t.topic_id, t.name, len(t.partitions)) for t in host.topics
            },
        )

    def _decide(self, event: object):
        return decide(self.state, event, self._context())

    # ---- lifecycle ---------------------------------------------------------------------------------

    async def start(self) -> None:
        """Nothing to read here: each partition is read when this broker becomes its leader."""

    async def stop(self) -> None:
        self.runtime.stop()

    def elect(self, partition: int, leader_epoch: int) -> None:
        """This broker leads ``partition`` (at ``leader_epoch``): read its groups back and give their
        members fresh sessions."""
        if self.owned.get(partition) == leader_epoch:
            return
        self._unload(partition)
        self.runtime.load_partition(partition, lambda p, records: load_partition(self.state, p, records))
        self.owned[partition] = leader_epoch
        loaded = GroupsState(
            groups={g: group for g, group in self.state.groups.items() if self._partition_of(g) == partition}
        )
        self.runtime.carry_out(classic_rules.reloaded_sessions(loaded))
        self.runtime.carry_out(kip848_effects.reloaded_sessions(loaded, self._context()))

    def resign(self, partition: int) -> None:
        """This broker no longer leads ``partition``: its groups, offsets and timers go; requests
        waiting in them are answered NOT_COORDINATOR."""
        if self.owned.pop(partition, None) is not None:
            self._unload(partition)

    def _partition_of(self, group_id: str) -> int:
        return self._host.consumer_offsets.partition_for(group_id)

    def _unload(self, partition: int) -> None:
        gone = {g for g in list(self.state.groups) if self._partition_of(g) == partition}
        gone |= {g for g in list(self.state.offsets) if self._partition_of(g) == partition}
        for group_id in gone:
            group = self.state.groups.pop(group_id, None)
            self.state.offsets.pop(group_id, None)
            for member in getattr(group, "members", {}).values():
                if getattr(member, "join_waiter", None) is not None:
                    self.runtime.answer(member.join_waiter, JoinOutcome(Errors.NOT_COORDINATOR))
                if getattr(member, "sync_waiter", None) is not None:
                    self.runtime.answer(member.sync_waiter, SyncOutcome(Errors.NOT_COORDINATOR))
        self.runtime.cancel_timers(lambda key: isinstance(key, tuple) and len(key) > 1 and key[1] in gone)
        for key in [k for k in self.state.pending_txn if k[0] == partition]:
            del self.state.pending_txn[key]

    def owner_error(self, group_id: str) -> int:
        """NONE if this broker coordinates the group, else NOT_COORDINATOR."""
        return Errors.NONE if self._partition_of(group_id) in self.owned else Errors.NOT_COORDINATOR

    # ---- classic protocol ----------------------------------------------------------------------------

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
        if group_id:
            self._host.consumer_offsets.ensure()
            if self.owner_error(group_id):
                return JoinOutcome(Errors.NOT_COORDINATOR, member_id=member_id)
        new_member_id = f"{instance_id or client_id}-{uuid.uuid4()}"
        consumer_member_id = new_consumer_member_id()  # its id in a consumer group: a Uuid, as Kafka gives
        return await self.runtime.request(
            lambda waiter: JoinGroup(
                waiter,
                group_id,
                member_id,
                instance_id,
                protocol_type,
                tuple(protocols),
                session_timeout_ms,
                rebalance_timeout_ms,
                client_id,
                client_host,
                require_known_member_id,
                new_member_id,
                consumer_member_id,
            )
        )

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
        if group_id and self.owner_error(group_id):
            return SyncOutcome(Errors.NOT_COORDINATOR)
        return await self.runtime.request(
            lambda waiter: SyncGroup(
                waiter,
                group_id,
                generation,
                member_id,
                instance_id,
                protocol_type,
                protocol_name,
                tuple(assignments),
            )
        )

    async def heartbeat(
        self, *, group_id: str, generation: int, member_id: str, instance_id: str | None
    ) -> int:
        if group_id and self.owner_error(group_id):
            return Errors.NOT_COORDINATOR
        return await self.runtime.request(
            lambda waiter: ClassicHeartbeat(waiter, group_id, generation, member_id, instance_id)
        )

    async def leave_group(
        self, group_id: str, leaving: list[tuple[str, str | None]]
    ) -> tuple[int, list[int], list[str]]:
        """(top-level error, one error per leaving member, the member id to report for each) for
        LeaveGroup: a consumer group reports a static member named by instance id under its member id."""
        if group_id and self.owner_error(group_id):
            return Errors.NOT_COORDINATOR, [], []
        top, results, *reported = await self.runtime.request(
            lambda waiter: LeaveGroup(waiter, group_id, tuple(leaving))
        )
        return top, results, reported[0] if reported else [m for m, _ in leaving]

    # ---- KIP-848 -------------------------------------------------------------------------------------

    async def consumer_heartbeat(self, request: Heartbeat, *, leaving: bool) -> Outcome:
        """ConsumerGroupHeartbeat's decision (raises GroupError with the error to answer)."""
        self._host.consumer_offsets.ensure()
        if request.group_id and self.owner_error(request.group_id):
            raise GroupError(Errors.NOT_COORDINATOR)
        answer = await self.runtime.request(lambda waiter: ConsumerHeartbeat(waiter, request, leaving))
        if isinstance(answer, GroupError):
            raise answer
        return answer

    # ---- groups and offsets ----------------------------------------------------------------------------

    def list_groups(self, states: list[str], types: list[str]) -> list[tuple[str, str, str, str]]:
        return list_groups(self.state, states, types)

    async def delete_groups(self, group_ids: list[str]) -> list[int]:
        return await self.runtime.request(lambda waiter: DeleteGroups(waiter, tuple(group_ids)))

    def _in_cluster(self, topic: str, index: int) -> bool:
        """``metadataCache.contains``: the partition exists, on whichever brokers."""
        info = self._host.topics.get(topic)
        return info is not None and 0 <= index < len(info.partitions)

    async def commit_offsets(
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
        """Commit (topic, partition, offset, leader epoch, metadata) entries; the error per partition."""
        unknown = frozenset((t, p) for t, p, *_ in offsets if not self._in_cluster(t, p))
        if group_id and len(unknown) < len({(t, p) for t, p, *_ in offsets}):
            self._host.consumer_offsets.ensure()
            if self.owner_error(group_id):
                return {(t, p): Errors.NOT_COORDINATOR for t, p, *_ in offsets}
        return await self.runtime.request(
            lambda waiter: CommitOffsets(
                waiter,
                group_id,
                generation,
                member_id,
                instance_id,
                tuple(offsets),
                api_version,
                unknown,
                producer,
                topic_ids,
            )
        )

    def complete_transaction(
        self, offsets_partition: int, producer_id: int, producer_epoch: int, commit: bool
    ) -> None:
        """The transaction's marker has been written to this ``__consumer_offsets`` partition."""
        self.runtime.submit(TransactionCompleted(offsets_partition, producer_id, commit))

    def has_pending_transactional_offsets(self, group_id: str, tp: tuple[str, int]) -> bool:
        return has_pending_transactional_offsets(self.state, group_id, tp)

    def fetch_offsets(
        self,
        group_id: str,
        topics: list[tuple[str, list[int]]] | None,
        *,
        require_stable: bool,
        topic_ids: Mapping[str, UUID] | None = None,
    ) -> dict[tuple[str, int], tuple[int, int, str, int]]:
        return fetch_offsets(self.state, group_id, topics, require_stable=require_stable, topic_ids=topic_ids)

    async def delete_offsets(
        self, group_id: str, partitions: list[tuple[str, int]]
    ) -> tuple[int, dict[tuple[str, int], int]]:
        if group_id and self.owner_error(group_id):
            return Errors.NOT_COORDINATOR, {}
        return await self.runtime.request(lambda waiter: DeleteOffsets(waiter, group_id, tuple(partitions)))
