"""The network client shared by producer, consumer and admin: bootstrap, one connection per broker,
cluster metadata kept fresh, and coordinator lookup (Kafka's NetworkClient + Metadata, in asyncio).

Metadata refreshes are coalesced: however many callers ask at once, one MetadataRequest goes out and
all of them wait for it. The client asks for the topics it has been told to track, or for every topic
when tracking is ``None`` (a consumer subscribed to a pattern)."""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import Iterable
from typing import Any

from kconform.codecs.messages import (
    FindCoordinatorRequest,
    MetadataRequest,
)

from .backoff import ExponentialBackoff
from .config import parse_version_caps
from .connection import BrokerConnection
from .errors import BrokerError, ConnectionLost, RequestTimedOut
from .metadata import BrokerInfo, ClusterMetadata
from .security import ClientSecurity, security_for_address, security_from_config

__all__ = ["NetworkClient", "parse_bootstrap"]

_METADATA = 3
_FIND_COORDINATOR = 10
_COORDINATOR_NOT_AVAILABLE = 15
_NOT_COORDINATOR = 16
_COORDINATOR_LOAD_IN_PROGRESS = 14


def parse_bootstrap(servers: str | Iterable[str]) -> list[tuple[str, int]]:
    items = servers.split(",") if isinstance(servers, str) else list(servers)
    out = []
    for item in items:
        item = item.strip()
        if not item:
            continue
        for prefix in ("PLAINTEXT://", "SSL://", "SASL_PLAINTEXT://", "SASL_SSL://"):
            if item.upper().startswith(prefix):
                item = item[len(prefix) :]
        host, sep, port = item.rpartition(":")
        if not sep or not port.isdigit():
            raise ValueError(f"bootstrap server {item!r} is not host:port")
        out.append((host.strip("[]"), int(port)))
    if not out:
        raise ValueError("bootstrap.servers is empty")
    return out


class NetworkClient:
    def __init__(
        self,
        bootstrap_servers: str | Iterable[str],
        *,
        client_id: str | None = "kconform",
        request_timeout_ms: int = 30_000,
        retry_backoff_ms: int = 100,
        retry_backoff_max_ms: int = 1000,
        metadata_max_age_ms: int = 300_000,
        connect_timeout_ms: int = 10_000,
        version_caps: dict[int, int] | None = None,
        security: ClientSecurity | None = None,
        clock=time.monotonic,
    ) -> None:
        self.bootstrap = parse_bootstrap(bootstrap_servers)
        # every broker of a cluster is reached the way its bootstrap address is (one listener)
        self.security = security if security is not None else security_for_address(*self.bootstrap[0])
        self.client_id = client_id
        self.request_timeout = request_timeout_ms / 1000
        self.connect_timeout = connect_timeout_ms / 1000
        self.metadata_max_age = metadata_max_age_ms / 1000
        self.backoff = ExponentialBackoff(retry_backoff_ms, retry_backoff_max_ms)
        self.retry_backoff = retry_backoff_ms / 1000
        self.clock = clock
        self.version_caps = dict(version_caps or {})
        self.stats: collections.Counter[str] = collections.Counter()  # reconnects, connect_failures
        self.metadata = ClusterMetadata()
        self.metadata_updated_at = float("-inf")
        self.tracked_topics: set[str] | None = set()
        self.allow_auto_create = False
        self._connections: dict[int, BrokerConnection] = {}
        self._opened: set[int] = set()  # nodes connected to before, so a new connection is a reconnect
        self._connecting: dict[int, asyncio.Future] = {}
        self._bootstrap_conn: BrokerConnection | None = None
        self._refresh: asyncio.Task | None = None
        self._coordinators: dict[tuple[int, str], int] = {}
        self._closed = False

    @classmethod
    def from_config(cls, config, **kw) -> NetworkClient:
        return cls(
            config["bootstrap.servers"],
            client_id=config["client.id"] or "kconform",
            request_timeout_ms=config["request.timeout.ms"],
            retry_backoff_ms=config["retry.backoff.ms"],
            retry_backoff_max_ms=config["retry.backoff.max.ms"],
            metadata_max_age_ms=config["metadata.max.age.ms"],
            connect_timeout_ms=config["socket.connection.setup.timeout.ms"],
            version_caps=parse_version_caps(config["kconform.api.version.max"]),
            security=security_from_config(config),
            **kw,
        )

    # ---- connections ----------------------------------------------------------------------------

    async def connection(self, node_id: int) -> BrokerConnection:
        conn = self._connections.get(node_id)
        if conn is not None and not conn.closed:
            return conn
        pending = self._connecting.get(node_id)
        if pending is None:
            broker = self.metadata.brokers.get(node_id)
            if broker is None:
                await self.refresh_metadata()
                broker = self.metadata.brokers.get(node_id)
                if broker is None:
                    raise ConnectionLost(f"node {node_id} is not in the cluster metadata")
            pending = asyncio.ensure_future(self._open(broker))
            self._connecting[node_id] = pending
            pending.add_done_callback(lambda _f, n=node_id: self._connecting.pop(n, None))
        return await asyncio.shield(pending)

    async def _open(self, broker: BrokerInfo) -> BrokerConnection:
        try:
            conn = await self._connect(broker)
        except ConnectionLost:
            self.stats["connect_failures"] += 1
            raise
        conn.version_caps = self.version_caps
        if broker.node_id in self._opened:
            self.stats["reconnects"] += 1
        self._opened.add(broker.node_id)
        self._connections[broker.node_id] = conn
        return conn

    async def _connect(self, broker: BrokerInfo) -> BrokerConnection:
        return await BrokerConnection.connect(
            broker.host,
            broker.port,
            node_id=broker.node_id,
            client_id=self.client_id,
            request_timeout=self.request_timeout,
            connect_timeout=self.connect_timeout,
            security=self.security,
        )

    async def any_connection(self) -> BrokerConnection:
        """A live connection to some broker: one already open, else a known broker, else bootstrap."""
        for conn in self._connections.values():
            if not conn.closed:
                return conn
        if self._bootstrap_conn is not None and not self._bootstrap_conn.closed:
            return self._bootstrap_conn
        errors = []
        for node_id in list(self.metadata.brokers):
            try:
                return await self.connection(node_id)
            except ConnectionLost as exc:
                errors.append(str(exc))
        for host, port in self.bootstrap:
            try:
                self._bootstrap_conn = await BrokerConnection.connect(
                    host,
                    port,
                    node_id=-1,
                    client_id=self.client_id,
                    request_timeout=self.request_timeout,
                    connect_timeout=self.connect_timeout,
                    security=self.security,
                )
                self._bootstrap_conn.version_caps = self.version_caps
                return self._bootstrap_conn
            except ConnectionLost as exc:
                errors.append(str(exc))
        raise ConnectionLost("no broker reachable: " + "; ".join(errors))

    async def send(self, node_id: int, api_key: int, body: Any, **kw) -> Any:
        conn = await self.connection(node_id)
        return await conn.send(api_key, body, **kw)

    async def send_any(self, api_key: int, body: Any, **kw) -> Any:
        conn = await self.any_connection()
        return await conn.send(api_key, body, **kw)

    def versions(self, node_id: int | None = None) -> dict[int, tuple[int, int]]:
        """The API versions a connected broker offers (any connected broker when no node is given)."""
        if node_id is not None and node_id in self._connections:
            return self._connections[node_id].versions
        for conn in self._connections.values():
            return conn.versions
        return self._bootstrap_conn.versions if self._bootstrap_conn else {}

    # ---- metadata -------------------------------------------------------------------------------

    def track(self, topics: Iterable[str] | None) -> bool:
        """Track these topics too (``None``: every topic). True when something new is tracked."""
        if topics is None:
            changed = self.tracked_topics is not None
            self.tracked_topics = None
            return changed
        if self.tracked_topics is None:
            return False
        new = set(topics) - self.tracked_topics
        self.tracked_topics |= new
        return bool(new)

    def untrack_all(self, topics: Iterable[str] = ()) -> None:
        self.tracked_topics = set(topics)

    @property
    def metadata_stale(self) -> bool:
        return self.clock() - self.metadata_updated_at >= self.metadata_max_age

    async def refresh_metadata(self) -> ClusterMetadata:
        """Fetch metadata now (joining a fetch already under way)."""
        if self._refresh is None or self._refresh.done():
            self._refresh = asyncio.ensure_future(self._fetch_metadata())
        return await asyncio.shield(self._refresh)

    async def _fetch_metadata(self) -> ClusterMetadata:
        attempts = 0
        while True:
            try:
                conn = await self.any_connection()
                version = conn.version_for(_METADATA)
                if self.tracked_topics is None:
                    topics = None
                else:
                    wanted = sorted(self.tracked_topics)
                    topics = [MetadataRequest.MetadataRequestTopic(name=t) for t in wanted]
                request = MetadataRequest(
                    topics=topics,
                    allow_auto_topic_creation=self.allow_auto_create,
                )
                if version == 0 and topics is None:
                    request.topics = []  # v0 has no null: an empty list means every topic
                response = await conn.send(_METADATA, request, version=version)
                self.metadata = ClusterMetadata.from_response(
                    response, self.metadata, merge=self.tracked_topics is not None
                )
                self.metadata_updated_at = self.clock()
                return self.metadata
            except (ConnectionLost, RequestTimedOut):
                if self._closed:
                    raise
                await asyncio.sleep(self.backoff.backoff_ms(attempts) / 1000)
                attempts += 1
                if attempts > 20:
                    raise

    async def wait_for_topic(self, topic: str, timeout: float) -> int:
        """The topic's partition count, refreshing metadata until it is known or ``timeout`` passes
        (the producer's waitOnMetadata). Raises BrokerError with the topic's error on timeout."""
        self.track([topic])
        deadline = self.clock() + timeout
        attempts = 0
        while True:
            count = self.metadata.partition_count(topic)
            if count is not None:
                return count
            await self.refresh_metadata()
            count = self.metadata.partition_count(topic)
            if count is not None:
                return count
            info = self.metadata.topics.get(topic)
            code = info.error_code if info is not None else 3
            if code and code not in (3, 5, 15):  # not unknown topic, leader not available, coordinator
                raise BrokerError(code, f"metadata for topic {topic}")
            if self.clock() >= deadline:
                raise BrokerError(code or 3, f"topic {topic} not present in metadata within {timeout:g}s")
            wait = self.backoff.backoff_ms(attempts) / 1000
            await asyncio.sleep(min(wait, max(0.0, deadline - self.clock())))
            attempts += 1

    # ---- coordinators ---------------------------------------------------------------------------

    async def find_coordinator(self, key: str, key_type: int = 0, *, timeout: float | None = None) -> int:
        """The node id coordinating a group (``key_type`` 0) or transactional id (1); retried while the
        coordinator is not available, as the Java clients do."""
        cached = self._coordinators.get((key_type, key))
        if cached is not None and cached in self.metadata.brokers:
            return cached
        deadline = self.clock() + (self.request_timeout * 2 if timeout is None else timeout)
        attempts = 0
        while True:
            conn = await self.any_connection()
            version = conn.version_for(_FIND_COORDINATOR)
            if version >= 4:
                request = FindCoordinatorRequest(key_type=key_type, coordinator_keys=[key])
            else:
                request = FindCoordinatorRequest(key=key, key_type=key_type)
            response = await conn.send(_FIND_COORDINATOR, request, version=version)
            if version >= 4:
                found = response.coordinators[0]
                code, message, node, host, port = (
                    found.error_code,
                    found.error_message,
                    found.node_id,
                    found.host,
                    found.port,
                )
            else:
                code, message, node, host, port = (
                    response.error_code,
                    response.error_message,
                    response.node_id,
                    response.host,
                    response.port,
                )
            if code == 0:
                brokers = dict(self.metadata.brokers)
                brokers.setdefault(node, BrokerInfo(node, host, port))
                self.metadata = ClusterMetadata(
                    brokers, self.metadata.topics, self.metadata.cluster_id, self.metadata.controller_id
                )
                self._coordinators[(key_type, key)] = node
                return node
            if code not in (_COORDINATOR_NOT_AVAILABLE, _NOT_COORDINATOR, _COORDINATOR_LOAD_IN_PROGRESS):
                raise BrokerError(code, f"FindCoordinator for {key!r}", message)
            if self.clock() >= deadline:
                raise BrokerError(code, f"FindCoordinator for {key!r}: still unavailable", message)
            await asyncio.sleep(self.backoff.backoff_ms(attempts) / 1000)
            attempts += 1

    def forget_coordinator(self, key: str, key_type: int = 0) -> None:
        self._coordinators.pop((key_type, key), None)

    # ---- lifecycle ------------------------------------------------------------------------------

    def disconnect(self, node_id: int) -> None:
        conn = self._connections.pop(node_id, None)
        if conn is not None:
            conn.close()

    async def close(self) -> None:
        self._closed = True
        if self._refresh is not None and not self._refresh.done():
            self._refresh.cancel()
        conns = list(self._connections.values())
        if self._bootstrap_conn is not None:
            conns.append(self._bootstrap_conn)
        self._connections.clear()
        for conn in conns:
            await conn.wait_closed()
