"""One connection to one broker: requests pipelined, answers matched by correlation id, versions
negotiated with ApiVersions as Kafka's NetworkClient does.

On connect the client asks ApiVersions v3; a broker that does not know v3 answers in v0's layout with
UNSUPPORTED_VERSION and its own range for ApiVersions, and the client asks again within that range.
Each later request goes at the highest version both the broker and the codecs support (optionally
capped). A request without an answer after request.timeout.ms closes the connection, failing every
request still waiting on it, because a broker answers a connection in order and a missing answer
means the stream can no longer be trusted.

A secured connection (``security``: TLS context and/or SASL credentials, see ``security.py``) opens
TLS first, then ApiVersions, then the SASL login (``sasl_login.py``). When the broker gives the session
a lifetime, the connection re-authenticates on the same socket at 85-95% of it (KIP-368), whether busy
or idle: requests made meanwhile are held and written once the new session is in place, because the
broker takes nothing but the SASL exchange until it completes."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import OrderedDict
from typing import Any

from kconform.codecs import DecodeError, FrameDecoder, api_schema, encode_request
from kconform.codecs.framing import decode_response_lenient, size_prefixed
from kconform.codecs.messages import ApiVersionsRequest

from .errors import BrokerError, ClientError, ConnectionLost, NoCommonVersion, RequestTimedOut
from .sasl_login import authenticate, reauth_delay_s
from .security import ClientSecurity, security_for_address
from .versions import client_max_version

__all__ = ["BrokerConnection", "SOFTWARE_NAME", "SOFTWARE_VERSION"]

SOFTWARE_NAME = "kconform"
SOFTWARE_VERSION = "0.1.0"
_API_VERSIONS = 18
_UNSUPPORTED_VERSION = 35
_SASL_HANDSHAKE = 17
_SASL_AUTHENTICATE = 36
_READ_SIZE = 1 << 18


class _Waiting:
    __slots__ = ("api_key", "version", "future", "timer")

    def __init__(self, api_key: int, version: int, future: asyncio.Future, timer) -> None:
        self.api_key = api_key
        self.version = version
        self.future = future
        self.timer = timer


class BrokerConnection:
    """``conn = await BrokerConnection.connect(host, port, node_id=1)``; ``await conn.send(3, body)``."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        node_id: int,
        host: str,
        port: int,
        client_id: str | None,
        request_timeout: float,
    ) -> None:
        self.node_id = node_id
        self.host = host
        self.port = port
        self.client_id = client_id
        self.request_timeout = request_timeout
        self.versions: dict[int, tuple[int, int]] = {}
        self.version_caps: dict[int, int] = {}  # api key -> highest version to use, whatever is offered
        self.trailing_bytes: dict[tuple[int, int], int] = {}  # (api, version) -> bytes after a response
        self._reader = reader
        self._writer = writer
        self._decoder = FrameDecoder()
        self._waiting: OrderedDict[int, _Waiting] = OrderedDict()
        self._ids = itertools.count(1)
        self._failure: Exception | None = None
        self.security: ClientSecurity | None = None
        self.reauthentications = 0
        self._held: list[bytes] | None = None  # frames waiting for a re-authentication to finish
        self._reauth_timer: asyncio.TimerHandle | None = None
        self._reauth_task: asyncio.Future | None = None
        self._read_task = asyncio.get_running_loop().create_task(self._read_loop())

    @classmethod
    async def connect(
        cls,
        host: str,
        port: int,
        *,
        node_id: int = -1,
        client_id: str | None = "kconform",
        request_timeout: float = 30.0,
        connect_timeout: float = 10.0,
        security: ClientSecurity | None = None,
    ) -> BrokerConnection:
        """``security`` None: whatever the harness registered for this address (plaintext if nothing)."""
        security = security_for_address(host, port) if security is None else security
        tls = {"ssl": security.ssl_context, "server_hostname": host} if security.ssl_context else {}
        try:
            opening = asyncio.open_connection(host, port, **tls)
            reader, writer = await asyncio.wait_for(opening, connect_timeout)
        except (OSError, TimeoutError) as exc:  # ssl.SSLError is an OSError: a refused certificate too
            raise ConnectionLost(f"cannot connect to node {node_id} at {host}:{port}: {exc}") from exc
        conn = cls(
            reader,
            writer,
            node_id=node_id,
            host=host,
            port=port,
            client_id=client_id,
            request_timeout=request_timeout,
        )
        conn.security = security
        try:
            await conn._negotiate()
            if security.sasl is not None:
                await conn._login()
        except BaseException:
            conn.close()
            raise
        return conn

    # ---- state ----------------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._failure is not None

    @property
    def in_flight(self) -> int:
        return len(self._waiting)

    def version_for(self, api_key: int, cap: int | None = None, floor: int | None = None) -> int:
        """The highest version of ``api_key`` both sides support, at most ``cap``."""
        schema = api_schema(api_key)
        low, high = self.versions.get(api_key, (None, None))
        if low is None:
            raise NoCommonVersion(f"node {self.node_id} does not offer {schema.name} (key {api_key})")
        usable = client_max_version(api_key, schema.max_version)
        top = min(high, usable, cap if cap is not None else high)
        top = min(top, self.version_caps.get(api_key, top))
        bottom = max(low, schema.min_version, floor if floor is not None else low)
        if top < bottom:
            raise NoCommonVersion(
                f"node {self.node_id} offers {schema.name} v{low}-{high}; usable here: "
                f"v{max(schema.min_version, floor or 0)}-{min(usable, top)}"
            )
        return top

    # ---- requests -------------------------------------------------------------------------------

    def send_nowait(
        self,
        api_key: int,
        body: Any,
        *,
        version: int | None = None,
        expect_response: bool = True,
        timeout: float | None = None,
    ) -> asyncio.Future:
        """Write the request now and return a future of the decoded response body (or of None when no
        response is expected). Raises ConnectionLost at once if the connection is gone."""
        if self._failure is not None:
            raise ConnectionLost(str(self._failure))
        if version is None:
            version = self.version_for(api_key)
        correlation_id = next(self._ids)
        frame = encode_request(api_key, version, correlation_id, self.client_id, body)
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        if expect_response:
            timer = loop.call_later(
                self.request_timeout if timeout is None else timeout, self._expire, correlation_id
            )
            self._waiting[correlation_id] = _Waiting(api_key, version, future, timer)
        else:
            future.set_result(None)
        if self._held is not None and api_key not in (_SASL_HANDSHAKE, _SASL_AUTHENTICATE):
            self._held.append(size_prefixed(frame))
        else:
            self._write(size_prefixed(frame))
        return future

    def _write(self, data: bytes) -> None:
        try:
            self._writer.write(data)
        except (OSError, RuntimeError) as exc:
            self._fail(ConnectionLost(f"write to node {self.node_id} failed: {exc}"))

    async def send(self, api_key: int, body: Any, *, version: int | None = None, **kw) -> Any:
        future = self.send_nowait(api_key, body, version=version, **kw)
        await self.drain()
        return await future

    async def drain(self) -> None:
        try:
            await self._writer.drain()
        except (OSError, RuntimeError) as exc:
            self._fail(ConnectionLost(f"write to node {self.node_id} failed: {exc}"))

    def close(self) -> None:
        self._fail(ConnectionLost(f"connection to node {self.node_id} closed by the client"))

    async def wait_closed(self) -> None:
        self.close()
        try:
            await self._writer.wait_closed()
        except (OSError, RuntimeError):
            pass
        if not self._read_task.done():
            self._read_task.cancel()
        if self._reauth_task is not None and not self._reauth_task.done():
            self._reauth_task.cancel()

    # ---- SASL -----------------------------------------------------------------------------------

    async def _login(self) -> None:
        async def call(api_key: int, version: int, body: Any) -> Any:
            return await self.send(api_key, body, version=version)

        lifetime = await authenticate(
            call, self.security.sasl, self.versions, now_ms=_now_ms(), node=f"node {self.node_id}"
        )
        delay = reauth_delay_s(lifetime)
        if delay is not None:
            self._reauth_timer = asyncio.get_running_loop().call_later(delay, self._start_reauth)

    def _start_reauth(self) -> None:
        if self._failure is None:
            self._held = []
            self._reauth_task = asyncio.ensure_future(self._reauthenticate())

    async def _reauthenticate(self) -> None:
        try:
            await self._login()
        except ClientError as exc:
            self._fail(ConnectionLost(f"re-authentication to node {self.node_id} failed: {exc}"))
            return
        except Exception as exc:  # anything else leaves the session in doubt: the connection goes
            self._fail(ConnectionLost(f"re-authentication to node {self.node_id} failed: {exc!r}"))
            return
        self.reauthentications += 1
        held, self._held = self._held or [], None
        for data in held:
            self._write(data)

    # ---- plumbing -------------------------------------------------------------------------------

    async def _negotiate(self) -> None:
        request = ApiVersionsRequest(
            client_software_name=SOFTWARE_NAME, client_software_version=SOFTWARE_VERSION
        )
        version = 3
        while True:
            response = await self._api_versions(version, request)
            if response is not None and response.error_code != _UNSUPPORTED_VERSION:
                break
            if version == 0:
                raise BrokerError(_UNSUPPORTED_VERSION, f"ApiVersions v0 to node {self.node_id}")
            # Kafka answers an unknown version in v0's layout with its own range for ApiVersions;
            # other brokers answer in the asked layout, or in one we cannot read: step down.
            offered = {k.api_key: k.max_version for k in response.api_keys} if response else {}
            version = min(offered.get(_API_VERSIONS, version - 1), version - 1)
        if response.error_code:
            raise BrokerError(response.error_code, f"ApiVersions to node {self.node_id}")
        self.versions = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}

    async def _api_versions(self, version: int, request) -> Any:
        """The ApiVersions answer read at ``version`` or else at v0, or None if neither reads."""
        future = self.send_nowait(_API_VERSIONS, request, version=version)
        self._waiting[next(reversed(self._waiting))].version = -version - 1  # keep the frame raw
        await self.drain()
        frame = await future
        for attempt in dict.fromkeys((version, 0)):
            try:
                return decode_response_lenient(frame, _API_VERSIONS, attempt)[1]
            except DecodeError:
                continue
        return None

    def _expire(self, correlation_id: int) -> None:
        waiting = self._waiting.get(correlation_id)
        if waiting is not None:
            name = api_schema(waiting.api_key).name
            self._fail(
                RequestTimedOut(f"{name} v{waiting.version} to node {self.node_id} had no answer in time")
            )

    def _fail(self, exc: Exception) -> None:
        if self._failure is None:
            self._failure = exc
            self._writer.close()
            if self._reauth_timer is not None:
                self._reauth_timer.cancel()
        waiting, self._waiting = self._waiting, OrderedDict()
        for entry in waiting.values():
            entry.timer.cancel()
            if not entry.future.done():
                entry.future.set_exception(exc)

    async def _read_loop(self) -> None:
        reader = self._reader
        decoder = self._decoder
        try:
            while True:
                data = await reader.read(_READ_SIZE)
                if not data:
                    raise ConnectionLost(f"node {self.node_id} closed the connection")
                decoder.feed(data)
                while (frame := decoder.next_frame()) is not None:
                    self._deliver(frame)
        except asyncio.CancelledError:
            self._fail(ConnectionLost(f"connection to node {self.node_id} closed"))
            raise
        except ConnectionLost as exc:
            self._fail(exc)
        except Exception as exc:  # a bad frame or an unreadable socket: the stream is unusable
            self._fail(ConnectionLost(f"connection to node {self.node_id} failed: {exc}"))

    def _deliver(self, frame: bytes) -> None:
        correlation_id = int.from_bytes(frame[:4], "big", signed=True)
        waiting = self._waiting.pop(correlation_id, None)
        if waiting is None:
            raise ConnectionLost(f"node {self.node_id} answered unknown correlation id {correlation_id}")
        waiting.timer.cancel()
        if waiting.future.done():
            return
        if waiting.version < 0:
            waiting.future.set_result(frame)
            return
        try:
            # Bytes after the message are ignored, as Kafka's Java client ignores them; they are
            # counted, since a broker that sends them is worth a look (raw mode reports them exactly).
            _, body, rest = decode_response_lenient(frame, waiting.api_key, waiting.version)
            if rest:
                self.trailing_bytes[waiting.api_key, waiting.version] = len(rest)
        except DecodeError as exc:
            waiting.future.set_exception(exc)
            raise ConnectionLost(f"undecodable answer from node {self.node_id}: {exc}") from exc
        waiting.future.set_result(body)


def _now_ms() -> int:
    return int(time.time() * 1000)
