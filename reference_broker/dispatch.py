"""From a request frame to a response frame: header, version gate, decode, handler, encode.

The one place where bad input turns into Kafka's reaction: an unknown API key, a version the emulated
release does not serve (except ApiVersions, which answers with the versions it has) or a body that does
not decode closes the connection, as Kafka's socket server does (bytes after a whole body are ignored,
as there); an exception inside a handler becomes UNKNOWN_SERVER_ERROR in the response (or a closed
connection if the response has no error field).

The broker answers as one Apache Kafka release (``KafkaRelease``): it advertises that release's
ApiVersions rows for every API it implements and serves exactly the versions that release serves."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from kconform.codecs import CodecError, DecodeError, api_schema, decode_request_header
from kconform.codecs.errors import Errors
from kconform.codecs.framing import encode_response_spliced
from kconform.codecs.releases import KafkaRelease

from .handlers import registered_handlers
from .handlers.api_versions import unsupported_version_response
from .quotas import RequestQuota, request_throttle_ms, set_throttle_time
from .security.principals import ANONYMOUS, KafkaPrincipal

__all__ = ["Dispatcher", "RequestContext", "CloseConnection", "whole_frame"]

log = logging.getLogger(__name__)
API_VERSIONS = 18


class CloseConnection(Exception):
    """The request warrants closing the connection (Kafka's reaction to malformed requests)."""


@dataclass(slots=True)
class RequestContext:
    header: Any
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    peer: str
    connection_id: int
    frame: bytes | memoryview = b""  # the whole request, header included (what a broker forwards)
    listener: str = "PLAINTEXT"  # the listener the request came in on (Metadata answers with its endpoints)
    principal: KafkaPrincipal = ANONYMOUS
    quota: RequestQuota | None = None  # a client connection's request: its handler may settle quotas here


class Dispatcher:
    """``release`` None serves every version of every handler given (the controller listener, whose
    APIs no release's broker rows list)."""

    def __init__(self, broker, release: KafkaRelease | None, handlers: dict | None = None) -> None:
        self.broker = broker
        self.handlers = registered_handlers() if handlers is None else dict(handlers)
        if release is None:
            self._served = {k: (h.min_version, h.max_version) for k, h in self.handlers.items()}
            self._advertised, self.shortfalls = dict(self._served), []
        else:
            self._advertised, self._served, self.shortfalls = release_versions(release, self.handlers)
        for shortfall in self.shortfalls:
            log.warning("Kafka %s emulation: %s", release, shortfall)

    def supported_versions(self) -> dict[int, tuple[int, int]]:
        """What ApiVersions advertises: the release's rows for every API this broker implements."""
        return dict(self._advertised)

    def serves(self, api_key: int, version: int) -> bool:
        versions = self._served.get(api_key)
        return versions is not None and versions[0] <= version <= versions[1]

    async def handle(
        self,
        frame: bytes,
        *,
        peer: str,
        connection_id: int,
        connection=None,
        principal: KafkaPrincipal | None = None,
    ):
        """The response frame (without size prefix) as ``(buffer, splices, size)`` (see
        ``encode_response_spliced``), or None when no response is due; raises CloseConnection when the
        connection must be closed. ``principal`` is a forwarded request's (the Envelope's)."""
        try:
            header, body_offset = decode_request_header(frame)
        except DecodeError as exc:
            log.warning("closing connection from %s: unreadable request header: %s", peer, exc)
            raise CloseConnection from None
        api_key, version = header.request_api_key, header.request_api_version
        handler = self.handlers.get(api_key)
        if handler is None or not self.serves(api_key, version):
            if api_key == API_VERSIONS and API_VERSIONS in self._served:
                body = unsupported_version_response(self.supported_versions())
                return encode_response_spliced(API_VERSIONS, 0, header.correlation_id, body)
            log.warning(
                "closing connection from %s: unsupported request API key %s version %s",
                peer,
                api_key,
                version,
            )
            raise CloseConnection
        schema = api_schema(api_key)
        try:
            request, end, buf = schema.request._decode_at(frame, body_offset, version)
        except DecodeError as exc:
            log.warning("closing connection from %s: malformed %s: %s", peer, schema.request_name, exc)
            raise CloseConnection from None
        if end != len(buf):
            # Kafka's RequestContext.parseRequest never looks past the last field, so neither do we
            # (librdkafka's Metadata v12 requests carry such bytes); the harness flags them instead.
            extra = len(buf) - end
            log.debug("%s v%s from %s: %d bytes after the body ignored", schema.name, version, peer, extra)
        ctx = RequestContext(
            header, api_key, version, header.correlation_id, header.client_id, peer, connection_id, frame
        )
        if connection is not None:  # a client connection (None: in-process and forwarded requests)
            ctx.listener, ctx.principal = connection.listener, connection.principal
        elif principal is not None:
            ctx.principal = principal
        log.debug("%s v%s from %s (connection %d)", schema.name, version, peer, connection_id)
        started = time.perf_counter_ns()
        if connection is not None:
            ctx.quota = RequestQuota(started)
        try:
            response = await handler.fn(self.broker, ctx, request)
        except CloseConnection:
            raise
        except Exception:
            log.exception("%s v%s from %s failed", schema.name, version, peer)
            response = _error_response(schema.response, version)
        log.debug("%s v%s to %s (connection %d) answered", schema.name, version, peer, connection_id)
        if response is None:
            self._throttle(connection, ctx, request, None, len(frame), 0, time.perf_counter_ns() - started)
            return None
        try:
            answer = encode_response_spliced(api_key, version, header.correlation_id, response)
            throttle = self._throttle(connection, ctx, request, response, len(frame), answer[2],
                                      time.perf_counter_ns() - started)  # fmt: skip
            if throttle and set_throttle_time(response, version, throttle):
                answer = encode_response_spliced(api_key, version, header.correlation_id, response)
            return answer
        except CodecError:
            log.exception("%s v%s response to %s cannot be encoded", schema.name, version, peer)
            raise CloseConnection from None

    def _throttle(self, connection, ctx, request, response, request_bytes, response_bytes, nanos) -> int:
        """Client quotas (``quotas``): record the request, unless its handler settled them already (a
        consumer's Fetch: ``ctx.quota``), and mute the connection for the throttle time from now
        (``connection.mute``, which the server loop honours after sending the response, whatever the
        response's version: ``quotas._requests``)."""
        managers = getattr(self.broker, "quotas", None)
        if connection is None or managers is None:
            return 0
        if ctx.quota is not None and ctx.quota.throttle_ms is not None:
            throttle = ctx.quota.throttle_ms
        else:
            throttle = request_throttle_ms(
                managers, self.broker.image.client_quotas, ctx, request, request_bytes=request_bytes,
                response_bytes=response_bytes, handler_nanos=nanos, now_ms=self.broker.clock.now_ms(),
            )  # fmt: skip
        connection.mute(throttle, now_s=time.monotonic())
        return throttle


def whole_frame(answer) -> bytes | None:
    """A ``Dispatcher.handle`` answer as one byte string (file regions read in), for a response that
    travels inside another (Envelope)."""
    if answer is None:
        return None
    buffer, splices, _size = answer
    out, pos = bytearray(), 0
    for at, region in splices:
        out += buffer[pos:at]
        out += region.read()
        pos = at
    out += buffer[pos:]
    return bytes(out)


def release_versions(
    release: KafkaRelease, handlers: dict
) -> tuple[dict[int, tuple[int, int]], dict[int, tuple[int, int]], list[str]]:
    """(advertised, served, shortfalls) for a release: the release's rows for the APIs we implement,
    cut to what our handlers serve, with a sentence for every version the release has and we lack."""
    advertised, served, shortfalls = {}, {}, []
    for key, handler in handlers.items():
        row, serves = release.advertised.get(key), release.served(key)
        if row is None or serves is None:
            continue
        lo, hi = max(serves[0], handler.min_version), min(serves[1], handler.max_version)
        if lo > hi:
            shortfalls.append(f"{api_schema(key).name} v{serves[0]}-{serves[1]} not served at all")
            continue
        if (lo, hi) != serves:
            shortfalls.append(
                f"{api_schema(key).name}: serves v{lo}-{hi} of the release's v{serves[0]}-{serves[1]}"
            )
        served[key] = (lo, hi)
        # the advertised minimum may sit below the served one (Produce on 4.x)
        advertised[key] = (min(row[0], lo), hi)
    return advertised, served, shortfalls


def _error_response(response_class, version: int):
    """UNKNOWN_SERVER_ERROR in a top-level error field; without one at this version, no answer can
    say what went wrong and the connection is closed."""
    field = next((f for f in response_class._fields_ if f.attr == "error_code"), None)
    if field is None or not field.present(version):
        raise CloseConnection
    response = response_class()
    response.error_code = Errors.UNKNOWN_SERVER_ERROR
    return response
