"""The reference broker's client side for talking to other nodes: the KRaft controller
(BrokerRegistration, BrokerHeartbeat, AlterPartition, metadata Fetch) and partition leaders (replica
Fetch).

``InterBrokerConnection`` is one TCP connection, requests pipelined and answers matched by correlation
id by a single reader task; ``NodeChannel`` keeps one to a node address, reconnecting after a failure.
Every way of not getting an answer (refused connect, lost connection, timeout, a frame that does not
decode) is ``PeerUnavailable``, and a connection that failed once is closed for good: after a missing
or unreadable answer the stream can no longer be trusted."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import Callable
from typing import Any

from kconform.codecs import FrameDecoder, api_schema, encode_request, size_prefixed
from kconform.codecs.framing import decode_response_lenient
from kconform.codecs.messages import ApiVersionsRequest

from .interbroker_login import sasl_login

__all__ = ["BrokerChannels", "InterBrokerConnection", "NodeChannel", "PeerUnavailable", "UnsupportedByPeer"]

_API_VERSIONS = 18
_UNSUPPORTED_VERSION = 35
_READ_SIZE = 1 << 16


class PeerUnavailable(ConnectionError):
    """No answer from the peer: connect failed, the connection was lost, or a request timed out."""


class UnsupportedByPeer(Exception):
    """The peer does not serve the API at any version we can speak."""


class InterBrokerConnection:
    """One TCP connection to another node, requests pipelined by correlation id."""

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, peer: str, client_id: str
    ) -> None:
        self.peer = peer
        self.client_id = client_id
        self.versions: dict[int, tuple[int, int]] = {}
        self._reader = reader
        self._writer = writer
        self._waiting: dict[int, asyncio.Future] = {}  # correlation id -> future of the raw frame
        self._ids = itertools.count(1)
        self._failure: str | None = None  # why the connection closed
        self._reader_task = asyncio.get_running_loop().create_task(self._read_loop())

    @classmethod
    async def connect(
        cls, host: str, port: int, *, client_id: str, timeout_s: float, security=None
    ) -> InterBrokerConnection:
        """Open the socket and learn the peer's API versions, all within ``timeout_s``; with
        ``security`` (a ``PeerSecurity``) over TLS and/or logged in with SASL."""
        peer = f"{host}:{port}"
        conn = None
        context = security.ssl_context if security is not None else None
        try:
            async with asyncio.timeout(timeout_s):
                reader, writer = await asyncio.open_connection(
                    host, port, ssl=context, server_hostname=host if context is not None else None
                )
                conn = cls(reader, writer, peer=peer, client_id=client_id)
                await conn._negotiate(timeout_s)
                if security is not None and security.mechanism is not None:
                    refusal = await sasl_login(conn, security, timeout_s)
                    if refusal is not None:  # the peer may have closed already: its reason is this one
                        raise PeerUnavailable(f"{peer}: SASL login failed: {refusal}")
        except BaseException as exc:
            if conn is not None:
                conn.close()
            if isinstance(exc, TimeoutError):
                stage = "no connection" if conn is None else "no ApiVersions answer"
                raise PeerUnavailable(f"{peer}: {stage} within {timeout_s}s") from exc
            if isinstance(exc, OSError) and not isinstance(exc, PeerUnavailable):  # TLS failures too
                raise PeerUnavailable(f"{peer}: connect failed: {exc}") from exc
            raise
        return conn

    @property
    def closed(self) -> bool:
        return self._failure is not None

    def version_for(self, api_key: int, highest: int | None = None) -> int:
        """The highest version of ``api_key`` that both the peer and the codecs speak, at most ``highest``."""
        schema = api_schema(api_key)
        if api_key not in self.versions:
            raise UnsupportedByPeer(f"{self.peer} does not serve {schema.name} (key {api_key})")
        peer_low, peer_high = self.versions[api_key]
        low = max(peer_low, schema.min_version)
        high = min(peer_high, schema.max_version, peer_high if highest is None else highest)
        if high < low:
            capped = "" if highest is None else f" (capped at v{highest})"
            raise UnsupportedByPeer(
                f"{self.peer} serves {schema.name} v{peer_low}-{peer_high}; "
                f"we speak v{schema.min_version}-{schema.max_version}{capped}"
            )
        return high

    async def send(self, api_key: int, body, *, version: int | None = None, timeout_s: float) -> Any:
        """The decoded response body to ``body``, sent at ``version`` (else the highest both speak)."""
        if version is None:
            version = self.version_for(api_key)
        frame = await self._exchange(api_key, version, body, timeout_s)
        try:
            return decode_response_lenient(frame, api_key, version)[1]  # trailing bytes ignored, as Java
        except Exception as exc:  # whatever the codecs raise, the stream is now suspect
            name = api_schema(api_key).name
            raise self._fail(f"undecodable {name} v{version} response: {exc}") from exc

    def close(self) -> None:
        self._fail("connection closed by us")

    async def wait_closed(self) -> None:
        self.close()
        with contextlib.suppress(OSError):  # how the peer ended it no longer matters
            await self._writer.wait_closed()
        await asyncio.gather(self._reader_task, return_exceptions=True)

    # ---- plumbing -------------------------------------------------------------------------------

    async def _exchange(self, api_key: int, version: int, body, timeout_s: float) -> bytes:
        """Write one request and wait for the raw frame answering it."""
        if self._failure is not None:
            raise PeerUnavailable(self._failure)
        correlation_id = next(self._ids)
        frame = encode_request(api_key, version, correlation_id, self.client_id, body)
        future = asyncio.get_running_loop().create_future()
        self._waiting[correlation_id] = future
        try:
            async with asyncio.timeout(timeout_s):
                self._writer.write(size_prefixed(frame))
                await self._writer.drain()
                return await asyncio.shield(future)  # a cancelled caller leaves the id known
        except TimeoutError as exc:
            name = api_schema(api_key).name
            raise self._fail(f"{name} v{version} had no answer within {timeout_s}s") from exc
        except PeerUnavailable:
            raise
        except OSError as exc:  # the write failed
            raise self._fail(f"write failed: {exc}") from exc

    async def _negotiate(self, timeout_s: float) -> None:
        """ApiVersions v3; a peer that does not know v3 answers UNSUPPORTED_VERSION in v0's layout (as
        Kafka does), and then we ask again at v0."""
        request = ApiVersionsRequest(client_software_name="kconform-broker", client_software_version="0.1.0")
        for version, body in ((3, request), (0, ApiVersionsRequest())):
            frame = await self._exchange(_API_VERSIONS, version, body, timeout_s)
            response = _read_api_versions(frame, version)
            if response is None:
                raise self._fail(f"undecodable ApiVersions v{version} response")
            if response.error_code != _UNSUPPORTED_VERSION:
                break
        if response.error_code:
            raise self._fail(f"ApiVersions v{version} answered error code {response.error_code}")
        self.versions = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}

    def _fail(self, what: str) -> PeerUnavailable:
        """Close the connection (the first reason stands) and fail every waiting request; returns a
        fresh error for the caller to raise."""
        if self._failure is None:
            self._failure = f"{self.peer}: {what}"
            self._writer.close()
        waiting, self._waiting = self._waiting, {}
        for future in waiting.values():
            if not future.done():
                future.set_exception(PeerUnavailable(self._failure))
                future.exception()  # marked retrieved: a caller that gave up need not hear it
        return PeerUnavailable(self._failure)

    async def _read_loop(self) -> None:
        decoder = FrameDecoder()
        try:
            while True:
                data = await self._reader.read(_READ_SIZE)
                if not data:
                    self._fail("connection closed by the peer")
                    return
                decoder.feed(data)
                for frame in decoder:
                    correlation_id = (
                        int.from_bytes(frame[:4], "big", signed=True) if len(frame) >= 4 else None
                    )
                    future = self._waiting.pop(correlation_id, None)
                    if future is None:
                        self._fail(f"an answer ({len(frame)} bytes) matches no request: {frame[:8].hex()}")
                        return
                    if not future.done():
                        future.set_result(frame)
        except Exception as exc:  # an oversized frame or a reset socket
            self._fail(f"connection failed: {exc!r}")
        finally:
            self._fail("connection closed")  # no-op unless cancelled: no waiter may hang


def _read_api_versions(frame: bytes, version: int):
    """The ApiVersions response in ``version``'s layout, else in v0's (the UNSUPPORTED_VERSION error
    layout), else None."""
    for attempt in dict.fromkeys((version, 0)):
        try:
            return decode_response_lenient(frame, _API_VERSIONS, attempt)[1]
        except Exception:
            continue
    return None


def as_replica(request, version: int, replica_id: int, replica_epoch: int = -1):
    """Name the fetching replica where the Fetch version puts it (``FetchRequest.Builder.forReplica``):
    the ReplicaState tagged field from v15, with the old ReplicaId -1; ReplicaId before."""
    if version >= 15:
        request.replica_id = -1
        request.replica_state = type(request).ReplicaState(replica_id=replica_id, replica_epoch=replica_epoch)
    else:
        request.replica_id = replica_id
        request.replica_state = type(request).ReplicaState()
    return request


class NodeChannel:
    """A reconnecting channel to one node address: connects on first use, and after a failure
    reconnects on the next send (no more often than ``reconnect_backoff_s``).

    ``address`` is fixed, or a callable giving the node's current address (None while unknown); a
    connection to an address the callable no longer gives is dropped."""

    def __init__(
        self,
        address: tuple[str, int] | Callable[[], tuple[str, int] | None],
        *,
        client_id: str,
        connect_timeout_s: float = 5.0,
        reconnect_backoff_s: float = 0.05,
        clock: Callable[[], float] = time.monotonic,
        security=None,
    ) -> None:
        self._address = address if callable(address) else (lambda: address)
        self.security = security  # a PeerSecurity for a secured listener, else None
        self.client_id = client_id
        self.connect_timeout_s = connect_timeout_s
        self.reconnect_backoff_s = reconnect_backoff_s
        self._clock = clock
        self._conn: InterBrokerConnection | None = None
        self._conn_address: tuple[str, int] | None = None
        self._failed_at: float | None = None
        self._connecting = asyncio.Lock()

    async def send(
        self, api_key: int, body, *, version: int | None = None, highest: int | None = None, timeout_s: float
    ) -> Any:
        conn = await self._connection()
        if version is None:
            version = conn.version_for(api_key, highest)
        try:
            return await conn.send(api_key, body, version=version, timeout_s=timeout_s)
        except PeerUnavailable:
            self._failed_at = self._clock()
            raise

    def version_for(self, api_key: int, highest: int | None = None) -> int:
        if self._conn is None or self._conn.closed:
            raise PeerUnavailable(f"{self.client_id}: not connected to the node, its versions are unknown")
        return self._conn.version_for(api_key, highest)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    async def _connection(self) -> InterBrokerConnection:
        async with self._connecting:  # concurrent first sends share one connect
            address = self._address()
            if self._conn is not None and (self._conn.closed or address != self._conn_address):
                self.close()
            if self._conn is not None:
                return self._conn
            if address is None:
                raise PeerUnavailable(f"{self.client_id}: the node's address is not known yet")
            since = None if self._failed_at is None else self._clock() - self._failed_at
            if since is not None and since < self.reconnect_backoff_s:
                wait_ms = (self.reconnect_backoff_s - since) * 1000
                raise PeerUnavailable(
                    f"{address[0]}:{address[1]}: failed {since:.3f}s ago, "
                    f"not reconnecting for another {wait_ms:.0f} ms"
                )
            host, port = address
            try:
                self._conn = await InterBrokerConnection.connect(
                    host,
                    port,
                    client_id=self.client_id,
                    timeout_s=self.connect_timeout_s,
                    security=self.security,
                )
            except PeerUnavailable:
                self._failed_at = self._clock()
                raise
            self._conn_address, self._failed_at = address, None
            return self._conn


class BrokerChannels:
    """A ``NodeChannel`` per broker id, each following the broker's current address (Kafka's
    ``NetworkClient`` to other brokers, as the transaction marker and AddPartitionsToTxn managers
    keep one)."""

    def __init__(
        self, address_of: Callable[[int], tuple[str, int] | None], *, client_id: str, security=None
    ) -> None:
        self._address_of = address_of
        self._client_id = client_id
        self._security = security
        self._channels: dict[int, NodeChannel] = {}

    async def send(self, broker_id: int, api_key: int, body, *, version: int | None = None, timeout_s: float):
        channel = self._channels.get(broker_id)
        if channel is None:
            channel = self._channels[broker_id] = NodeChannel(
                lambda: self._address_of(broker_id), client_id=self._client_id, security=self._security
            )
        return await channel.send(api_key, body, version=version, timeout_s=timeout_s)

    def close(self) -> None:
        for channel in self._channels.values():
            channel.close()
        self._channels.clear()
