"""The classic group protocol from the consumer's side (Kafka's AbstractCoordinator and
ConsumerCoordinator): JoinGroup (with the member id the broker requires), the leader running the
assignor the group chose, SyncGroup, heartbeats in the background, LeaveGroup; eager rebalancing
(give everything up before joining) and cooperative (KIP-429: give up only what moved, then join again).

Subscriptions and assignments travel as Kafka's ConsumerProtocol messages (version 3)."""

from __future__ import annotations

import asyncio
import logging
import struct

from kconform.codecs import DecodeError
from kconform.codecs.messages import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    SyncGroupRequest,
)

from .assignors import ASSIGNORS
from .errors import BrokerError, ClientError
from .network import NetworkClient

__all__ = ["ClassicCoordinator", "decode_assignment", "encode_subscription"]

log = logging.getLogger(__name__)

_JOIN, _SYNC, _HEARTBEAT, _LEAVE = 11, 14, 12, 13
_PROTOCOL_VERSION = 3
_VERSION = struct.Struct(">h")
_REJOIN = {"UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION", "REBALANCE_IN_PROGRESS", "FENCED_INSTANCE_ID"}
_RETRY = {"COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR", "COORDINATOR_LOAD_IN_PROGRESS"}


def encode_subscription(topics, owned: dict[str, list[int]], generation: int) -> bytes:
    owned_list = [
        ConsumerProtocolSubscription.TopicPartition(topic=t, partitions=sorted(p))
        for t, p in sorted(owned.items())
        if p
    ]
    message = ConsumerProtocolSubscription(
        topics=sorted(topics), owned_partitions=owned_list, generation_id=generation
    )
    return _VERSION.pack(_PROTOCOL_VERSION) + message.encode(_PROTOCOL_VERSION)


def decode_subscription(data: bytes):
    version = _VERSION.unpack_from(data)[0]
    return ConsumerProtocolSubscription.decode_lenient(data[2:], min(version, _PROTOCOL_VERSION))[0]


def encode_assignment(partitions: dict[str, list[int]]) -> bytes:
    items = [
        ConsumerProtocolAssignment.TopicPartition(topic=t, partitions=p)
        for t, p in sorted(partitions.items())
    ]
    return _VERSION.pack(_PROTOCOL_VERSION) + ConsumerProtocolAssignment(assigned_partitions=items).encode(
        _PROTOCOL_VERSION
    )


def decode_assignment(data: bytes) -> set[tuple[str, int]]:
    if not data:
        return set()
    version = _VERSION.unpack_from(data)[0]
    message = ConsumerProtocolAssignment.decode_lenient(data[2:], min(version, _PROTOCOL_VERSION))[0]
    return {(tp.topic, p) for tp in message.assigned_partitions for p in tp.partitions}


class ClassicCoordinator:
    def __init__(
        self,
        client: NetworkClient,
        *,
        group_id: str,
        instance_id: str | None,
        assignors: list[str],
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        heartbeat_interval_ms: int,
        topics_for_subscription,  # () -> set[str]: the topics the subscription covers now
        on_assignment,  # async (assigned: set, revoked: set, lost: bool) -> None, before/after rules below
    ) -> None:
        unknown = [a for a in assignors if a not in ASSIGNORS]
        if unknown:
            raise ClientError(f"unknown assignor(s) {unknown}: use {', '.join(ASSIGNORS)}")
        self.client = client
        self.group_id = group_id
        self.instance_id = instance_id
        self.assignors = assignors
        self.cooperative = assignors[0] == "cooperative-sticky"
        self.session_timeout_ms = session_timeout_ms
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.heartbeat_interval = heartbeat_interval_ms / 1000
        self.topics_for_subscription = topics_for_subscription
        self.on_assignment = on_assignment
        self.member_id = ""
        self.generation = -1
        self.protocol: str | None = None
        self.owned: set[tuple[str, int]] = set()
        self.needs_join = True
        self._heartbeat_task: asyncio.Task | None = None
        self._lock = asyncio.Lock()
        self.rebalances = 0

    # ---- joining ---------------------------------------------------------------------------------

    async def ensure_active(self) -> None:
        """Join (again) if the group needs it; returns with an assignment or raises."""
        async with self._lock:
            while self.needs_join:
                await self._join_and_sync()

    async def _coordinator(self):
        node = await self.client.find_coordinator(self.group_id)
        return await self.client.connection(node)

    async def _join_and_sync(self) -> None:
        if not self.cooperative and self.owned:
            revoked, self.owned = set(self.owned), set()
            await self.on_assignment(set(), revoked, False)  # eager: give everything up first
        topics = self.topics_for_subscription()
        owned: dict[str, list[int]] = {}
        for t, p in self.owned:
            owned.setdefault(t, []).append(p)
        metadata = encode_subscription(topics, owned, self.generation)
        try:
            conn = await self._coordinator()
            version = conn.version_for(_JOIN, cap=9)
            request = JoinGroupRequest(
                group_id=self.group_id,
                session_timeout_ms=self.session_timeout_ms,
                rebalance_timeout_ms=self.rebalance_timeout_ms,
                member_id=self.member_id,
                group_instance_id=self.instance_id if version >= 5 else None,
                protocol_type="consumer",
                protocols=[
                    JoinGroupRequest.JoinGroupRequestProtocol(name=name, metadata=metadata)
                    for name in self.assignors
                ],
                reason="kconform consumer" if version >= 8 else None,
            )
            joined = await conn.send(
                _JOIN, request, version=version, timeout=self.rebalance_timeout_ms / 1000 + 10
            )
        except (ClientError, DecodeError) as exc:  # DecodeError: an answer no version has; try again
            self.client.forget_coordinator(self.group_id)
            log.debug("join %s: %s", self.group_id, exc)
            await asyncio.sleep(self.client.retry_backoff)
            return
        error = BrokerError(joined.error_code, f"JoinGroup {self.group_id}") if joined.error_code else None
        if error is not None:
            if error.name == "MEMBER_ID_REQUIRED":
                self.member_id = joined.member_id
                return
            if error.name in ("UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION"):
                self.member_id, self.generation = "", -1
                return
            if error.name in _RETRY or error.retriable or error.name == "REBALANCE_IN_PROGRESS":
                self.client.forget_coordinator(self.group_id)
                await asyncio.sleep(self.client.retry_backoff)
                return
            raise error
        self.member_id, self.generation, self.protocol = (
            joined.member_id,
            joined.generation_id,
            joined.protocol_name,
        )
        assignments = []
        if joined.leader == joined.member_id:
            assignments = await self._assign(joined.members)
        try:
            version = conn.version_for(_SYNC, cap=5)
            synced = await conn.send(
                _SYNC,
                SyncGroupRequest(
                    group_id=self.group_id,
                    generation_id=self.generation,
                    member_id=self.member_id,
                    group_instance_id=self.instance_id if version >= 3 else None,
                    protocol_type="consumer" if version >= 5 else None,
                    protocol_name=self.protocol if version >= 5 else None,
                    assignments=assignments,
                ),
                version=version,
                timeout=self.rebalance_timeout_ms / 1000 + 10,
            )
        except (ClientError, DecodeError) as exc:
            log.debug("sync %s: %s", self.group_id, exc)
            self.client.forget_coordinator(self.group_id)
            return
        if synced.error_code:
            error = BrokerError(synced.error_code, f"SyncGroup {self.group_id}")
            if error.name in ("UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION"):
                self.member_id, self.generation = "", -1
            elif error.name not in _REJOIN and error.name not in _RETRY:
                raise error
            return
        target = decode_assignment(synced.assignment)
        added, revoked = target - self.owned, self.owned - target
        self.owned = target
        self.needs_join = False
        self.rebalances += 1
        self._start_heartbeats()
        await self.on_assignment(added, revoked, False)
        if self.cooperative and revoked:
            self.needs_join = True  # KIP-429: what was given up can now be handed over

    async def _assign(self, members) -> list:
        subscriptions, owned = {}, {}
        for member in members:
            sub = decode_subscription(member.metadata)
            subscriptions[member.member_id] = set(sub.topics)
            owned[member.member_id] = {tp.topic: list(tp.partitions) for tp in sub.owned_partitions}
        topics = set().union(*subscriptions.values()) if subscriptions else set()
        self.client.track(topics)
        await self.client.refresh_metadata()
        counts = {t: c for t in topics if (c := self.client.metadata.partition_count(t))}
        plan = ASSIGNORS[self.protocol](subscriptions, counts, owned)
        return [
            SyncGroupRequest.SyncGroupRequestAssignment(member_id=m, assignment=encode_assignment(parts))
            for m, parts in plan.items()
        ]

    # ---- staying in ------------------------------------------------------------------------------

    def _start_heartbeats(self) -> None:
        if self._heartbeat_task is None or self._heartbeat_task.done():
            self._heartbeat_task = asyncio.ensure_future(self._heartbeats())

    async def _heartbeats(self) -> None:
        while True:
            await asyncio.sleep(self.heartbeat_interval)
            if self.needs_join or self.generation < 0:
                continue
            try:
                conn = await self._coordinator()
                version = conn.version_for(_HEARTBEAT, cap=4)
                answer = await conn.send(
                    _HEARTBEAT,
                    HeartbeatRequest(
                        group_id=self.group_id,
                        generation_id=self.generation,
                        member_id=self.member_id,
                        group_instance_id=self.instance_id if version >= 3 else None,
                    ),
                    version=version,
                )
            except ClientError:
                self.client.forget_coordinator(self.group_id)
                continue
            if answer.error_code:
                error = BrokerError(answer.error_code, "Heartbeat")
                if error.name in ("UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION", "FENCED_INSTANCE_ID"):
                    lost, self.owned = set(self.owned), set()
                    self.member_id, self.generation = (
                        ("", -1) if error.name != "FENCED_INSTANCE_ID" else (self.member_id, self.generation)
                    )
                    await self.on_assignment(set(), lost, True)
                self.needs_join = True
                if error.name in _RETRY:
                    self.client.forget_coordinator(self.group_id)

    async def leave(self) -> None:
        if self._heartbeat_task is not None:
            self._heartbeat_task.cancel()
        if not self.member_id or self.instance_id is not None:  # static members stay (KIP-345)
            return
        try:
            conn = await self._coordinator()
            version = conn.version_for(_LEAVE, cap=5)
            if version >= 3:
                request = LeaveGroupRequest(
                    group_id=self.group_id,
                    members=[
                        LeaveGroupRequest.MemberIdentity(
                            member_id=self.member_id, reason="the consumer is closing"
                        )
                    ],
                )
            else:
                request = LeaveGroupRequest(group_id=self.group_id, member_id=self.member_id)
            await conn.send(_LEAVE, request, version=version)
        except (ClientError, DecodeError) as exc:  # leaving is best effort: the session timeout ends us
            log.debug("leave %s: %s", self.group_id, exc)
        self.member_id, self.generation = "", -1

    @property
    def commit_generation(self) -> tuple[int, str]:
        return self.generation, self.member_id
