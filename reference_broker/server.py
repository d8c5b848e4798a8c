"""The network side of one broker node: accept connections, frame requests, answer them in order.

Each connection is served by one task that reads, frames and handles requests one at a time, so
pipelined requests are answered in the order they came, as Kafka does by muting a channel while a
request is in flight. A bad connection (oversized frame, malformed request, idle too long) is closed
without touching any other."""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
import os
import socket
import struct
import time
from dataclasses import dataclass

from kconform.codecs import FrameDecoder, FrameTooLarge

from .connection_limits import Admission, ConnectionLimits
from .connection_rates import INT_MAX, ip_connection_rate
from .dispatch import CloseConnection, Dispatcher
from .security.authenticator import SaslAuthenticator
from .security.listener_security import ListenerSecurity
from .security.principals import ANONYMOUS, KafkaPrincipal, NoMatchingRule, SslPrincipalMapper, subject_dn

__all__ = ["BrokerServer", "ListenerSecurity", "Connection"]

log = logging.getLogger(__name__)
_READ_SIZE = 256 * 1024
_SIZE = struct.Struct(">i")


async def _send(writer: asyncio.StreamWriter, buffer: bytearray, splices: list, size: int) -> None:
    """Write one response frame; record bytes still in log files go out with sendfile."""
    writer.write(_SIZE.pack(size))
    if not splices:
        writer.write(buffer)
        await writer.drain()
        return
    loop = asyncio.get_running_loop()
    view = memoryview(buffer)
    position = 0
    for at, records in splices:
        writer.write(view[position:at])
        await writer.drain()
        region = records.region
        with os.fdopen(os.dup(region.fd), "rb") as file:
            sent = await loop.sendfile(writer.transport, file, region.position, region.size)
        if sent != region.size:  # the segment shrank under us: the frame cannot be completed
            raise ConnectionError(f"sent {sent} of {region.size} record bytes; closing the connection")
        position = at
    writer.write(view[position:])
    await writer.drain()


@dataclass(slots=True)
class Connection:
    """One client connection as the handlers see it: where it came in and who it is."""

    connection_id: int
    peer: str
    listener: str
    protocol: str
    principal: KafkaPrincipal
    authenticator: SaslAuthenticator | None = None
    unmuted_at_s: float = 0.0  # client quotas: when reading may go on (KIP-219), on the monotonic clock

    def mute(self, throttle_ms: int, *, now_s: float) -> None:
        """Read nothing more for ``throttle_ms`` from ``now_s``, while the response still goes out: the
        throttle runs from when it is decided (Kafka's ``ThrottledChannel``), not from the send."""
        if throttle_ms > 0:
            self.unmuted_at_s = max(self.unmuted_at_s, now_s + throttle_ms / 1000)

    def muted_for_s(self, now_s: float) -> float:
        return max(0.0, self.unmuted_at_s - now_s)


class BrokerServer:
    def __init__(
        self,
        dispatcher: Dispatcher,
        *,
        max_request_bytes: int,
        idle_timeout_s: float,
        limits: ConnectionLimits | None = None,
    ) -> None:
        self.dispatcher = dispatcher
        self.limits = limits or ConnectionLimits()
        self._slot_freed = asyncio.Condition()
        self._acceptors: dict[str, asyncio.Lock] = {}  # one accept at a time per listener
        self.max_request_bytes = max_request_bytes
        self.idle_timeout_s = idle_timeout_s
        self._servers: list[asyncio.Server] = []
        self._connections: dict[asyncio.Task, asyncio.StreamWriter] = {}
        self._stopping = False
        self._ids = itertools.count(1)

    async def start(self, host: str, port: int, security: ListenerSecurity | None = None) -> tuple[str, int]:
        """Listen on one more endpoint; returns the bound address. A TLS listener completes the
        handshake before the first frame (a plaintext client there fails the handshake and is dropped)."""
        security = security or ListenerSecurity()

        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await self._serve(reader, writer, security)

        tls = {"ssl": security.ssl_context, "ssl_handshake_timeout": 10} if security.ssl_context else {}
        server = await asyncio.start_server(serve, host or None, port, reuse_address=True, **tls)
        self._servers.append(server)
        sockname = server.sockets[0].getsockname()
        return sockname[0], sockname[1]

    async def stop(self) -> None:
        """Close every connection whatever its client is doing (Kafka's SocketServer.shutdown):
        aborting the transports ends every read at once, so no cancellation can be lost in a read
        that completes at the same moment."""
        self._stopping = True
        for server in self._servers:
            server.close()
        for task, writer in list(self._connections.items()):
            writer.transport.abort()
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)
        for server in self._servers:
            await server.wait_closed()

    async def _admitted(self, listener: str, ip: str, writer: asyncio.StreamWriter) -> bool:
        """Count the connection in as ``ConnectionQuotas.inc`` does; False when it was not taken: an
        address over its creation rate is held unread and closed after its throttle time, one already
        at its maximum count is closed at once."""
        try:
            async with self._acceptors.setdefault(listener, asyncio.Lock()):
                admission, held_ms = await self._accept_in_turn(listener, ip)
        except asyncio.CancelledError:  # shutdown while waiting
            writer.transport.abort()
            return False
        if held_ms > 0 and not self._stopping:
            log.debug("Delaying closing of connection from %s for %d ms", ip, held_ms)
            await self._close_later(writer, held_ms)
            return False
        if admission is Admission.REJECT or self._stopping:
            if admission is Admission.REJECT:
                log.info("Rejected connection from %s, address already has the configured maximum of %d "
                         "connections.", ip, self.limits.limit_for(ip))  # fmt: skip
            writer.transport.abort()
            return False
        self.limits.opened(listener, ip)
        return True

    async def _accept_in_turn(self, listener: str, ip: str) -> tuple[Admission, int]:
        """What the listener's acceptor does, one connection at a time (``waitForConnectionSlot``, then
        ``recordIpConnectionMaybeThrottle``): wait out the listener's and the broker's creation rates,
        then for a free slot; returns the admission and how long to hold a connection over its
        address's rate before closing it (0: not over)."""
        protected = self.limits.protected(listener)
        rates = self.limits.rates
        delay_ms = rates.accept_delay_ms(listener, protected=protected, now_ms=self._now_ms())
        if delay_ms > 0:
            await asyncio.sleep(delay_ms / 1000)
        async with self._slot_freed:
            while (admission := self.limits.admit(listener, ip)) is Admission.WAIT and not self._stopping:
                await self._slot_freed.wait()
        ip_max = self._ip_connection_rate(ip)
        return admission, rates.ip_delay_ms(listener, ip, ip_max, protected=protected, now_ms=self._now_ms())

    async def _close_later(self, writer: asyncio.StreamWriter, delay_ms: int) -> None:
        """A connection over its address's creation rate: left unread, then closed."""
        try:
            await asyncio.sleep(delay_ms / 1000)
        except asyncio.CancelledError:  # shutdown
            pass
        writer.transport.abort()

    def _ip_connection_rate(self, ip: str) -> int:
        image = getattr(self.dispatcher.broker, "image", None)
        quotas = getattr(image, "client_quotas", None)
        return INT_MAX if not quotas else ip_connection_rate(quotas, ip, _resolved)

    async def _authenticate(self, connection: Connection, frame, writer: asyncio.StreamWriter) -> bool:
        """Let the connection's SASL authenticator see a frame first; True when it goes on to the
        broker. A failure is answered after Kafka's failed-authentication delay, then closed."""
        authenticator = connection.authenticator
        outcome = authenticator.receive(bytes(frame), self._now_ms())
        if outcome.close and outcome.close_delay_ms:
            await asyncio.sleep(outcome.close_delay_ms / 1000)
        for reply in outcome.replies:
            writer.write(_SIZE.pack(len(reply)))
            writer.write(reply)
        if outcome.replies:
            await writer.drain()
        if authenticator.authenticated:
            connection.principal = authenticator.principal
        if outcome.close:
            log.info("closing connection from %s: %s", connection.peer, outcome.reason)
            raise CloseConnection
        return outcome.forward

    def _now_ms(self) -> int:
        clock = getattr(self.dispatcher.broker, "clock", None)
        return int(clock.now_ms()) if clock is not None else int(time.time() * 1000)

    async def _serve(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, security: ListenerSecurity
    ) -> None:
        task = asyncio.current_task()
        if self._stopping:
            writer.transport.abort()
            return
        self._connections[task] = writer
        connection_id = next(self._ids)
        peer = "{}:{}".format(*writer.get_extra_info("peername")[:2])
        decoder = FrameDecoder(max_frame_size=self.max_request_bytes)
        connection = Connection(connection_id, peer, security.name, security.protocol, ANONYMOUS)
        ip = str(writer.get_extra_info("peername")[0])
        if not await self._admitted(security.name, ip, writer):
            self._connections.pop(task, None)
            return
        try:
            connection.principal = _tls_principal(writer, security)
            if security.new_authenticator is not None:
                connection.authenticator = security.new_authenticator()
            while not self._stopping:
                try:
                    data = await asyncio.wait_for(reader.read(_READ_SIZE), self.idle_timeout_s)
                except TimeoutError:
                    log.info("closing idle connection from %s", peer)
                    return
                if not data:
                    return
                decoder.feed(data)
                for frame in decoder:
                    if connection.authenticator is not None and not await self._authenticate(
                        connection, frame, writer
                    ):
                        continue
                    response = await self.dispatcher.handle(frame, peer=peer, connection_id=connection_id,
                                                            connection=connection)  # fmt: skip
                    if response is not None:
                        await _send(writer, *response)
                    if (muted_s := connection.muted_for_s(time.monotonic())) > 0:  # throttled
                        await asyncio.sleep(muted_s)
        except FrameTooLarge as exc:
            log.warning("closing connection from %s: %s", peer, exc)
        except (CloseConnection, NoMatchingRule):
            pass
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        except asyncio.CancelledError:
            # Shutdown. Ending the task normally, not as cancelled, keeps asyncio's stream callback in
            # Python 3.11 from logging the cancellation as an error.
            pass
        finally:
            self._connections.pop(task, None)
            self.limits.closed(security.name, ip)
            async with self._slot_freed:
                self._slot_freed.notify_all()
            writer.close()
            try:
                await writer.wait_closed()
            except (ConnectionError, OSError):
                pass
            self.dispatcher.broker.connection_closed(connection_id)


def _tls_principal(writer: asyncio.StreamWriter, security: ListenerSecurity) -> KafkaPrincipal:
    """``User:<mapped subject DN>`` for a TLS client that showed a certificate (on a SASL_SSL listener
    SASL names the principal instead), else ANONYMOUS; NoMatchingRule closes the connection as Kafka's
    principal builder failing does."""
    ssl_object = writer.get_extra_info("ssl_object")
    if ssl_object is None or security.protocol != "SSL":
        return ANONYMOUS
    certificate = ssl_object.getpeercert(binary_form=True)
    if not certificate:
        return ANONYMOUS
    mapper = security.principal_mapper or SslPrincipalMapper(None)
    try:
        return KafkaPrincipal("User", mapper.name(subject_dn(certificate)))
    except NoMatchingRule as exc:
        log.warning("closing TLS connection: %s", exc)
        raise


@functools.lru_cache(maxsize=256)
def _resolved(host: str) -> str | None:
    """A host name in an ``ip`` quota entity, resolved once (Kafka resolves it when the quota arrives)."""
    try:
        return socket.gethostbyname(host)
    except OSError:
        return None
