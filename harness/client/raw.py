"""The reference client's raw mode: one socket, any request at any version, or any bytes at all, and
what became of it: the decoded response, a closed connection, or silence. The harness's negative
tests, and the broker suites, speak through it.

Responses are matched to requests by correlation id, in the order the requests went out (a broker
answers one connection in order). A request that expects no response (Produce with acks=0) is sent
with ``expect_response=False`` and never waited for.

    async with await RawClient.connect(host, port) as client:
        body = await client.call(18, 3, ApiVersionsRequest(...))     # the response body, or fail
        reply = await client.request(0, 9, produce)                  # a Reply: answered/closed/timeout
        await client.send_bytes(b"\\xff\\xff\\xff\\xff")
        assert (await client.wait_closed(5)).closed
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import deque
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from kconform.codecs import FrameDecoder, api_schema, decode_response, encode_request, size_prefixed
from kconform.codecs.messages import RequestHeader

from .security import ClientSecurity, security_for_address

__all__ = ["Fate", "RawClient", "Reply", "UnexpectedReply"]

_READ_SIZE = 65536


class Fate(StrEnum):
    ANSWERED = "answered"
    CLOSED = "closed"  # the broker closed the connection (or reset it)
    TIMEOUT = "timeout"  # nothing came back in time; the connection is still open


@dataclass(frozen=True, slots=True)
class Reply:
    """What came back for one request. ``frame`` is the raw response frame (without size prefix);
    ``header`` and ``body`` are decoded when the request's API and version were known."""

    fate: Fate
    correlation_id: int | None = None
    header: Any = None
    body: Any = None
    frame: bytes | None = None

    @property
    def answered(self) -> bool:
        return self.fate is Fate.ANSWERED

    @property
    def closed(self) -> bool:
        return self.fate is Fate.CLOSED

    @property
    def timed_out(self) -> bool:
        return self.fate is Fate.TIMEOUT


class UnexpectedReply(AssertionError):
    """The broker did something a well-formed exchange rules out: no answer where one was due, or an
    answer to another correlation id than the oldest request waiting."""


@dataclass(frozen=True, slots=True)
class _Pending:
    correlation_id: int
    api_key: int
    response_version: int | None  # None: keep the frame undecoded


class RawClient:
    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        client_id: str | None = "kconform-raw",
        timeout: float = 10.0,
    ) -> None:
        self.client_id = client_id
        self.timeout = timeout
        self._reader = reader
        self._writer = writer
        self._decoder = FrameDecoder()
        self._pending: deque[_Pending] = deque()
        self._ids = itertools.count(1)
        self._closed = False

    @classmethod
    async def connect(
        cls,
        host: str,
        port: int,
        *,
        client_id: str | None = "kconform-raw",
        timeout: float = 10.0,
        security: ClientSecurity | None = None,
    ) -> RawClient:
        """``security`` None: whatever the harness registered for this address. A secured raw connection
        is handed over logged in (ApiVersions and SASL done) and is never re-authenticated: a broker
        that limits the session closes it when the session ends."""
        security = security_for_address(host, port) if security is None else security
        tls = {"ssl": security.ssl_context, "server_hostname": host} if security.ssl_context else {}
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port, **tls), timeout)
        client = cls(reader, writer, client_id=client_id, timeout=timeout)
        if security.sasl is not None:
            try:
                await client._login(security, f"{host}:{port}")
            except BaseException:
                await client.close()
                raise
        return client

    async def _login(self, security: ClientSecurity, node: str) -> None:
        from kconform.codecs.messages import ApiVersionsRequest

        from .sasl_login import authenticate

        answer = await self.call(
            18, 3, ApiVersionsRequest(client_software_name="kconform", client_software_version="0.1.0")
        )
        versions = {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}
        await authenticate(self.call, security.sasl, versions, now_ms=int(time.time() * 1000), node=node)

    async def __aenter__(self) -> RawClient:
        return self

    async def __aexit__(self, *exc_info) -> None:
        await self.close()

    @property
    def closed(self) -> bool:
        """Whether the connection is known to be closed (by either side)."""
        return self._closed

    @property
    def pending(self) -> int:
        """Requests sent whose response has not been received."""
        return len(self._pending)

    # ---- requests -------------------------------------------------------------------------------

    async def call(self, api_key: int, version: int, body: Any, *, timeout: float | None = None) -> Any:
        """Send a request and return the response body; anything but an answer raises UnexpectedReply."""
        reply = await self.request(api_key, version, body, timeout=timeout)
        if not reply.answered:
            name = api_schema(api_key).name
            raise UnexpectedReply(f"{name} v{version}: expected a response, the connection was {reply.fate}")
        return reply.body

    async def request(self, api_key: int, version: int, body: Any, *, timeout: float | None = None) -> Reply:
        """Send a request and wait for its response (or the connection's fate)."""
        await self.send(api_key, version, body)
        return await self.receive(timeout)

    async def send(
        self,
        api_key: int,
        version: int,
        body: Any,
        *,
        expect_response: bool = True,
        correlation_id: int | None = None,
    ) -> int:
        """Send a request without waiting; returns its correlation id. Pipelined requests are answered
        by ``receive`` in the order they were sent."""
        correlation_id = next(self._ids) if correlation_id is None else correlation_id
        frame = encode_request(api_key, version, correlation_id, self.client_id, body)
        await self._write(size_prefixed(frame))
        if expect_response:
            self._pending.append(_Pending(correlation_id, api_key, version))
        return correlation_id

    async def send_raw(
        self,
        api_key: int,
        version: int,
        payload: bytes,
        *,
        header_version: int | None = None,
        response_version: int | None = None,
        expect_response: bool = True,
        correlation_id: int | None = None,
    ) -> int:
        """Send a request header for any API key and version (known or not) followed by ``payload``
        as the body, framed. The header version defaults to the one the protocol gives the key and
        version (1 for an unknown key). The response is decoded at ``response_version`` when given,
        else left as a frame."""
        correlation_id = next(self._ids) if correlation_id is None else correlation_id
        if header_version is None:
            try:
                header_version = api_schema(api_key).request_header_version(version)
            except KeyError:
                header_version = 1
        header = RequestHeader(
            request_api_key=api_key,
            request_api_version=version,
            correlation_id=correlation_id,
            client_id=self.client_id,
        )
        await self._write(size_prefixed(header.encode(header_version) + payload))
        if expect_response:
            self._pending.append(_Pending(correlation_id, api_key, response_version))
        return correlation_id

    async def send_bytes(self, data: bytes) -> None:
        """Write ``data`` exactly as given: no framing, nothing expected back."""
        await self._write(data)

    async def receive(self, timeout: float | None = None) -> Reply:
        """The reply to the oldest request still waiting."""
        if not self._pending:
            raise UnexpectedReply("receive() with no request waiting for a response")
        frame, fate = await self._read_frame(self.timeout if timeout is None else timeout)
        expected = self._pending[0]
        if frame is None:
            return Reply(fate, expected.correlation_id)
        self._pending.popleft()
        if len(frame) < 4 or int.from_bytes(frame[:4], "big", signed=True) != expected.correlation_id:
            got = int.from_bytes(frame[:4], "big", signed=True) if len(frame) >= 4 else None
            raise UnexpectedReply(
                f"response for correlation id {got} where {expected.correlation_id} was due next"
            )
        if expected.response_version is None:
            return Reply(Fate.ANSWERED, expected.correlation_id, frame=frame)
        header, body = decode_response(frame, expected.api_key, expected.response_version)
        return Reply(Fate.ANSWERED, expected.correlation_id, header, body, frame)

    async def wait_closed(self, timeout: float | None = None) -> Reply:
        """Wait for the broker to close the connection: CLOSED if it does, TIMEOUT if it stays open,
        ANSWERED (with the raw frame) if a frame arrives instead."""
        frame, fate = await self._read_frame(self.timeout if timeout is None else timeout)
        return Reply(fate, frame=frame)

    async def close(self) -> None:
        """Close our side (both directions)."""
        self._closed = True
        self._writer.close()
        try:
            await self._writer.wait_closed()
        except (ConnectionError, OSError):
            pass

    async def shutdown_write(self) -> None:
        """Half-close: no more bytes from us, but keep reading (what a client that stops mid-request
        and waits looks like)."""
        if self._writer.can_write_eof():
            self._writer.write_eof()

    # ---- plumbing -------------------------------------------------------------------------------

    async def _write(self, data: bytes) -> None:
        if self._closed:
            return
        try:
            self._writer.write(data)
            await self._writer.drain()
        except (ConnectionError, OSError):
            self._closed = True

    async def _read_frame(self, timeout: float) -> tuple[bytes | None, Fate]:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            frame = self._decoder.next_frame()
            if frame is not None:
                return frame, Fate.ANSWERED
            if self._closed and self._reader.at_eof():
                return None, Fate.CLOSED
            remaining = deadline - loop.time()
            if remaining <= 0:
                return None, Fate.TIMEOUT
            try:  # a timeout scope, not wait_for: no task of its own for every read
                async with asyncio.timeout(remaining):
                    data = await self._reader.read(_READ_SIZE)
            except TimeoutError:
                return None, Fate.TIMEOUT
            except (ConnectionError, OSError):
                data = b""
            if not data:
                self._closed = True
                return None, Fate.CLOSED
            self._decoder.feed(data)
