"""Exchanges: a request frame and its response frame, decoded with ``kconform.codecs``.

Decoding never raises: whatever cannot be read (an unknown API, a version the codecs lack, bytes that do
not parse, a frame the capture cut short) becomes a note on the exchange and the outcome ``error``."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

from kconform.codecs import (
    CodecError,
    api_schema,
    decode_request_header,
    decode_request_lenient,
    decode_response_lenient,
)

from ._framing import RawFrame
from ._walk import error_codes, topic_names

__all__ = [
    "Exchange",
    "PendingRequest",
    "answer",
    "api_versions_fallback",
    "decode_request_frame",
    "orphan_response",
    "unanswered",
]

_HEADER = struct.Struct(">hhi")
_CORRELATION = struct.Struct(">i")
_PRODUCE = 0
_API_VERSIONS = 18
_UNSUPPORTED_VERSION = 35


@dataclass(frozen=True, slots=True)
class Exchange:
    """One request and its response as the capture shows them."""

    client: str
    """The client's end of the connection, ``host:port``."""
    server: str
    api_key: int | None
    """None only for a response whose request is not in the capture."""
    api_name: str | None
    api_version: int | None
    correlation_id: int | None
    client_id: str | None
    request_bytes: int | None
    """The request frame's size on the wire, its 4-byte size prefix included (as declared)."""
    response_bytes: int | None
    request_time_us: int | None
    """When the last byte of the request was captured (microseconds since the epoch)."""
    response_time_us: int | None
    request_packet: int | None
    """The capture packet (from 1) that completed the request frame: Wireshark's frame number."""
    response_packet: int | None
    outcome: str
    """``pass`` (both sides decoded), ``error`` (something could not be decoded), ``timeout`` (no response
    in the capture) or ``closed`` (the connection closed with the request unanswered)."""
    error_codes: tuple[int, ...] = ()
    """Every error code field of the response, in wire order."""
    topics: tuple[str, ...] = ()
    """Every topic name in the request, in wire order."""
    notes: tuple[str, ...] = ()
    stream: int = 0
    """The connection's number in the capture, from 0, counting Kafka connections only."""
    request: Any = field(default=None, repr=False, compare=False)
    """The decoded request body, when asked for (``keep_bodies``)."""
    response: Any = field(default=None, repr=False, compare=False)

    @property
    def latency_us(self) -> int | None:
        """Response time minus request time (each the capture time of the frame's last byte)."""
        if self.request_time_us is None or self.response_time_us is None:
            return None
        return self.response_time_us - self.request_time_us

    @property
    def first_packet(self) -> int:
        return self.request_packet if self.request_packet is not None else self.response_packet or 0


@dataclass(slots=True)
class PendingRequest:
    """A request frame read as far as it goes, waiting for its response."""

    frame: RawFrame
    api_key: int | None = None
    api_version: int | None = None
    correlation_id: int | None = None
    client_id: str | None = None
    body: Any = None
    decoded: bool = False
    topics: tuple[str, ...] = ()
    notes: list[str] = field(default_factory=list)

    @property
    def api_name(self) -> str | None:
        if self.api_key is None:
            return None
        try:
            return api_schema(self.api_key).name
        except KeyError:
            return None

    @property
    def expects_response(self) -> bool:
        """Produce with acks=0 is the one request Kafka never answers."""
        return not (self.decoded and self.api_key == _PRODUCE and getattr(self.body, "acks", None) == 0)

    @property
    def label(self) -> str:
        name = self.api_name or f"API key {self.api_key}"
        return f"{name} v{self.api_version}"


def _cut_short(frame: RawFrame, what: str) -> list[str]:
    notes = []
    if len(frame.data) < frame.size:
        notes.append(
            f"{what} truncated: its size prefix says {frame.size} bytes, the capture ends after "
            f"{len(frame.data)}"
        )
    if frame.damaged:
        notes.append(f"{frame.damaged} bytes of the {what} are not in the capture")
    return notes


def decode_request_frame(frame: RawFrame) -> PendingRequest:
    request = PendingRequest(frame)
    data = frame.data
    if len(data) < _HEADER.size:
        request.notes.append(f"request of {len(data)} bytes is too short for a request header")
        request.notes += _cut_short(frame, "request")
        return request
    request.api_key, request.api_version, request.correlation_id = _HEADER.unpack_from(data, 0)
    if request.api_name is None:
        request.notes.append(f"unknown API key {request.api_key}: the request was not decoded")
        return request
    if not frame.complete:
        request.notes += _cut_short(frame, "request")
        request.client_id = _client_id(data)
        return request
    try:
        header, body, rest = decode_request_lenient(data)
    except CodecError as exc:
        request.notes.append(f"request not decoded: {exc}")
        request.client_id = _client_id(data)
        return request
    except Exception as exc:  # noqa: BLE001 - a decoder bug must not end the dissection
        request.notes.append(f"request not decoded (decoder failure {type(exc).__name__}: {exc})")
        return request
    request.client_id = header.client_id
    request.body = body
    request.decoded = True
    request.topics = tuple(topic_names(body, request.api_version))
    if rest:
        request.notes.append(f"{len(rest)} bytes after the {request.label} request body")
    return request


def _client_id(data: bytes) -> str | None:
    try:
        header, _ = decode_request_header(data)
    except Exception:  # noqa: BLE001 - the header is a bonus here; the note already says what failed
        return None
    return header.client_id


def answer(
    request: PendingRequest, frame: RawFrame, *, client: str, server: str, stream: int, keep_bodies: bool
) -> Exchange:
    """The exchange of a request and the response that carries its correlation id."""
    notes = list(request.notes)
    body, codes, decoded = None, (), False
    if not frame.complete:
        notes += _cut_short(frame, "response")
    elif request.api_name is None or request.api_version is None:
        notes.append("response not decoded: its request's API is unknown")
    else:
        body, codes, decoded = _decode_response(request, frame.data, notes)
    outcome = "pass" if request.decoded and decoded else "error"
    return _exchange(
        request,
        client=client,
        server=server,
        stream=stream,
        outcome=outcome,
        notes=notes,
        response_frame=frame,
        codes=codes,
        response=body if keep_bodies else None,
        keep_bodies=keep_bodies,
    )


def _decode_response(request: PendingRequest, data: bytes, notes: list[str]):
    key, version = request.api_key, request.api_version
    try:
        _, body, rest = decode_response_lenient(data, key, version)
    except CodecError as exc:
        fallback = api_versions_fallback(request, data)
        if fallback is None:
            notes.append(f"response not decoded as {request.label}: {exc}")
            return None, (), False
        notes.append(
            f"the broker answered ApiVersions v{version} at v0 with UNSUPPORTED_VERSION, as Kafka does "
            "for a version it lacks"
        )
        body, rest, version = fallback, b"", 0
    except Exception as exc:  # noqa: BLE001 - a decoder bug must not end the dissection
        notes.append(f"response not decoded (decoder failure {type(exc).__name__}: {exc})")
        return None, (), False
    if rest:
        notes.append(f"{len(rest)} bytes after the {request.label} response body")
    return body, tuple(error_codes(body, version)), True


def api_versions_fallback(request: PendingRequest, data: bytes):
    """An ApiVersions response at v0 refusing a newer version (UNSUPPORTED_VERSION), as Kafka answers a
    version it lacks; else None."""
    if request.api_key != _API_VERSIONS or not request.api_version:
        return None
    try:
        _, body, _ = decode_response_lenient(data, _API_VERSIONS, 0)
    except Exception:  # noqa: BLE001 - not a v0 answer either: the caller reports the first failure
        return None
    return body if body.error_code == _UNSUPPORTED_VERSION else None


def unanswered(
    request: PendingRequest, *, client: str, server: str, stream: int, closed: bool, keep_bodies: bool
) -> Exchange:
    """A request no response answered before the capture (or the connection) ended."""
    notes = list(request.notes)
    if request.correlation_id is None:  # not even a header: nothing could have answered it
        outcome = "error"
    elif not request.expects_response:
        outcome = "pass" if request.decoded else "error"
        notes.append("no response, as none is due to a Produce with acks=0")
    else:
        outcome = "closed" if closed else "timeout"
        if closed:
            notes.append("the connection closed with this request unanswered")
        else:
            notes.append("no response in the capture")
        if not request.decoded:
            outcome = "error"
    return _exchange(
        request,
        client=client,
        server=server,
        stream=stream,
        outcome=outcome,
        notes=notes,
        keep_bodies=keep_bodies,
    )


def orphan_response(frame: RawFrame, *, client: str, server: str, stream: int) -> Exchange:
    """A response (of at least 4 bytes) whose request the capture does not hold: the capture began
    inside the connection, or lost packets."""
    (correlation_id,) = _CORRELATION.unpack_from(frame.data, 0)
    notes = ["response to a request that is not in the capture: its API and version are unknown"]
    notes += _cut_short(frame, "response")
    return Exchange(
        client=client,
        server=server,
        api_key=None,
        api_name=None,
        api_version=None,
        correlation_id=correlation_id,
        client_id=None,
        request_bytes=None,
        response_bytes=frame.size + 4,
        request_time_us=None,
        response_time_us=frame.time_us,
        request_packet=None,
        response_packet=frame.packet,
        outcome="error",
        notes=tuple(notes),
        stream=stream,
    )


def _exchange(
    request: PendingRequest,
    *,
    client: str,
    server: str,
    stream: int,
    outcome: str,
    notes: list[str],
    keep_bodies: bool,
    response_frame: RawFrame | None = None,
    codes: tuple[int, ...] = (),
    response: Any = None,
) -> Exchange:
    return Exchange(
        client=client,
        server=server,
        api_key=request.api_key,
        api_name=request.api_name,
        api_version=request.api_version,
        correlation_id=request.correlation_id,
        client_id=request.client_id,
        request_bytes=request.frame.size + 4,
        response_bytes=None if response_frame is None else response_frame.size + 4,
        request_time_us=request.frame.time_us,
        response_time_us=None if response_frame is None else response_frame.time_us,
        request_packet=request.frame.packet,
        response_packet=None if response_frame is None else response_frame.packet,
        outcome=outcome,
        error_codes=codes,
        topics=request.topics,
        notes=tuple(notes),
        stream=stream,
        request=request.body if keep_bodies else None,
        response=response,
    )
