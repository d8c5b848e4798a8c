"""Kafka frames: a 4-byte big-endian size, then a request or response (header, then body).

``FrameDecoder`` is sans-I/O: feed it bytes in any chunking and take whole frames out. The request and
response functions work on one whole frame without its size prefix."""

from __future__ import annotations

import struct
from typing import Any, NamedTuple

from ._exceptions import CodecError, DecodeError
from .registry import api_schema

__all__ = [
    "FrameDecoder",
    "FrameTooLarge",
    "DEFAULT_MAX_FRAME_SIZE",
    "size_prefixed",
    "encode_request",
    "decode_request",
    "decode_request_header",
    "decode_request_lenient",
    "encode_response",
    "encode_response_spliced",
    "decode_response",
    "decode_response_lenient",
    "peek_correlation_id",
    "DecodedRequest",
]

DEFAULT_MAX_FRAME_SIZE = 100 * 1024 * 1024  # Kafka's socket.request.max.bytes default
_SIZE = struct.Struct(">i")
_KEY_VERSION = struct.Struct(">hh")


class FrameTooLarge(CodecError):
    """A size prefix over the limit (or negative): the stream cannot be resynchronised after it."""


class FrameDecoder:
    """Collects bytes and yields whole frames (without their size prefix).

    A short read is never an error here: the decoder just waits for more. A bad size prefix is, and
    leaves the decoder failed for good, since nothing after it can be framed."""

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        self.max_frame_size = max_frame_size
        self._buf = bytearray()
        self._start = 0
        self._error: FrameTooLarge | None = None

    def feed(self, data: bytes) -> None:
        if self._error is not None:
            raise self._error
        if self._start and self._start == len(self._buf):
            self._buf.clear()
            self._start = 0
        self._buf += data

    @property
    def buffered(self) -> int:
        """Bytes held that do not yet make a whole frame."""
        return len(self._buf) - self._start

    def next_frame(self) -> bytes | None:
        if self._error is not None:
            raise self._error
        available = len(self._buf) - self._start
        if available < 4:
            return None
        (size,) = _SIZE.unpack_from(self._buf, self._start)
        if size < 0 or size > self.max_frame_size:
            self._error = FrameTooLarge(
                f"frame size {size} is outside 0..{self.max_frame_size} (raise the maximum frame size, "
                "or check that the peer speaks the Kafka protocol on this port)"
            )
            raise self._error
        if available < 4 + size:
            return None
        begin = self._start + 4
        frame = bytes(self._buf[begin : begin + size])
        self._start = begin + size
        if self._start > 65536 and self._start * 2 > len(self._buf):  # keep the buffer from growing forever
            del self._buf[: self._start]
            self._start = 0
        return frame

    def __iter__(self):
        while (frame := self.next_frame()) is not None:
            yield frame


def size_prefixed(payload: bytes) -> bytes:
    return _SIZE.pack(len(payload)) + payload


def _request_header_class():
    from .messages import RequestHeader

    return RequestHeader


def _response_header_class():
    from .messages import ResponseHeader

    return ResponseHeader


def encode_request(
    api_key: int, api_version: int, correlation_id: int, client_id: str | None, body: Any
) -> bytes:
    """A whole request frame (header + body), without the size prefix."""
    schema = api_schema(api_key)
    schema.check(api_version)
    if not isinstance(body, schema.request):
        raise TypeError(
            f"body for API key {api_key} must be {schema.request_name}, not {type(body).__name__}"
        )
    header = _request_header_class()(
        request_api_key=api_key,
        request_api_version=api_version,
        correlation_id=correlation_id,
        client_id=client_id,
    )
    out = bytearray()
    header._encode_into(out, schema.request_header_version(api_version))
    body._encode_into(out, api_version)
    return bytes(out)


def decode_request_header(frame) -> tuple[Any, int]:
    """The request header and the offset where the body starts.

    Works for any version of a known API, even one the codecs cannot decode the body of (a broker
    needs the header to answer an unsupported ApiVersions request)."""
    buf = memoryview(frame)
    if len(buf) < 4:
        raise DecodeError(
            "RequestHeader", None, f"frame of {len(buf)} bytes is too short for a header", offset=0
        )
    api_key, api_version = _KEY_VERSION.unpack_from(buf, 0)
    try:
        schema = api_schema(api_key)
    except KeyError:
        raise DecodeError(
            "RequestHeader", None, f"unknown API key {api_key}", field="request_api_key", offset=0
        ) from None
    header_version = schema.request_header_version(api_version)
    header, end, _ = _request_header_class()._decode_at(buf, 0, header_version)
    return header, end


class DecodedRequest(NamedTuple):
    header: Any
    body: Any


def _decode_request(frame, lenient: bool):
    header, offset = decode_request_header(frame)
    schema = api_schema(header.request_api_key)
    body, end, buf = schema.request._decode_at(frame, offset, header.request_api_version)
    if end != len(buf) and not lenient:
        raise DecodeError(
            schema.request_name,
            header.request_api_version,
            f"{len(buf) - end} bytes left over after the message",
            offset=end,
        )
    return header, body, bytes(buf[end:])


def decode_request(frame) -> DecodedRequest:
    """``(header, body)`` of a whole request frame; leftover bytes are an error."""
    header, body, _ = _decode_request(frame, lenient=False)
    return DecodedRequest(header, body)


def decode_request_lenient(frame) -> tuple[Any, Any, bytes]:
    """``(header, body, leftover)``: as ``decode_request`` but returns bytes after the body."""
    return _decode_request(frame, lenient=True)


def _encode_response_into(
    out: bytearray, api_key: int, api_version: int, correlation_id: int, body: Any
) -> None:
    schema = api_schema(api_key)
    schema.check(api_version)
    if not isinstance(body, schema.response):
        raise TypeError(
            f"body for API key {api_key} must be {schema.response_name}, not {type(body).__name__}"
        )
    _response_header_class()(correlation_id=correlation_id)._encode_into(
        out, schema.response_header_version(api_version)
    )
    body._encode_into(out, api_version)


def encode_response(api_key: int, api_version: int, correlation_id: int, body: Any) -> bytes:
    """A whole response frame (header + body), without the size prefix."""
    out = bytearray()
    _encode_response_into(out, api_key, api_version, correlation_id, body)
    return bytes(out)


def encode_response_spliced(api_key: int, api_version: int, correlation_id: int, body: Any):
    """As ``encode_response``, but ``records`` values that are file regions (objects with a length
    that are not bytes) are left out of the buffer and listed as ``(position, region)`` splices, for a
    server to send with sendfile. Returns ``(buffer, splices, total_size)``."""
    from ._runtime import SplicedBuffer

    out = SplicedBuffer()
    _encode_response_into(out, api_key, api_version, correlation_id, body)
    return out, out.splices, len(out) + sum(len(region) for _, region in out.splices)


def _decode_response(frame, api_key: int, api_version: int, lenient: bool):
    schema = api_schema(api_key)
    header, offset, _ = _response_header_class()._decode_at(
        frame, 0, schema.response_header_version(api_version)
    )
    body, end, buf = schema.response._decode_at(frame, offset, api_version)
    if end != len(buf) and not lenient:
        raise DecodeError(
            schema.response_name,
            api_version,
            f"{len(buf) - end} bytes left over after the message",
            offset=end,
        )
    return header, body, bytes(buf[end:])


def decode_response(frame, api_key: int, api_version: int) -> tuple[Any, Any]:
    """``(header, body)`` of a response to a request of ``api_key`` at ``api_version``."""
    header, body, _ = _decode_response(frame, api_key, api_version, lenient=False)
    return header, body


def decode_response_lenient(frame, api_key: int, api_version: int) -> tuple[Any, Any, bytes]:
    return _decode_response(frame, api_key, api_version, lenient=True)


def peek_correlation_id(frame) -> int:
    """The correlation id of a response frame (its first four bytes), to match it to its request."""
    if len(frame) < 4:
        raise DecodeError("ResponseHeader", None, "frame too short for a correlation id", offset=0)
    return _SIZE.unpack_from(frame, 0)[0]
