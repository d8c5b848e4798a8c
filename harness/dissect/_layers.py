"""Scapy layers for Kafka frames on TCP.

A Kafka frame is a 4-byte big-endian size and then that many bytes: a request header (API key, version,
correlation id, client id) and body, or a response header (correlation id) and body. ``KafkaRequest``
and ``KafkaResponse`` read and build one frame each; bytes after a frame in the same segment are read as
the next frame, so a segment that carries several frames shows as ``KafkaRequest/KafkaRequest/...``.

Which of the two a TCP payload is depends on its direction, so both are bound by port: traffic *to* a
Kafka port is requests, traffic *from* it is responses. Port 9092 is bound on import; ``bind_kafka_port``
binds any other. A layer sees one segment at a time: a frame split across segments shows cut short, and
a segment that starts inside a frame is misread. ``KafkaStreamDissector`` reassembles the streams first
and is the one to use on whole captures.

For flexible versions the header ends with tagged fields; the layers leave those at the start of
``body``, where the codecs (``kconform.codecs.framing``) read them."""

from __future__ import annotations

import struct

from scapy.fields import (
    ConditionalField,
    Field,
    ShortEnumField,
    SignedIntField,
    SignedShortField,
    StrLenField,
)
from scapy.layers.inet import TCP
from scapy.packet import Packet, Raw, bind_layers, split_layers

from kconform.codecs import api_schemas

__all__ = ["DEFAULT_KAFKA_PORT", "KafkaRequest", "KafkaResponse", "bind_kafka_port", "unbind_kafka_port"]

DEFAULT_KAFKA_PORT = 9092
_CONTROLLED_SHUTDOWN = 7
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
API_NAMES = {schema.api_key: schema.name for schema in api_schemas()}


class KafkaNullableStringField(Field[bytes | None, bytes | None]):
    """Kafka's NULLABLE_STRING: an int16 length (-1 for null) and that many bytes."""

    def __init__(self, name: str, default: bytes | None) -> None:
        super().__init__(name, default, fmt="H")

    def addfield(self, pkt: Packet, s: bytes, val: bytes | None) -> bytes:
        if val is None:
            return s + _I16.pack(-1)
        data = val.encode() if isinstance(val, str) else bytes(val)
        return s + _I16.pack(len(data)) + data

    def getfield(self, pkt: Packet, s: bytes) -> tuple[bytes, bytes | None]:
        (size,) = _I16.unpack_from(s, 0)
        if size < 0:
            return s[2:], None
        return s[2 + size :], s[2 : 2 + size]

    def i2len(self, pkt: Packet, x: bytes | None) -> int:
        return 2 + (0 if x is None else len(x))

    def i2repr(self, pkt: Packet, x: bytes | None) -> str:
        return "null" if x is None else repr(x)

    def randval(self):  # noqa: ANN201 - Scapy's fuzzing hook
        from scapy.volatile import RandBin

        return RandBin(8)


def _has_client_id(pkt: Packet) -> bool:
    """Request header v0 (ControlledShutdown v0 only) has no client id."""
    return not (pkt.api_key == _CONTROLLED_SHUTDOWN and pkt.api_version == 0)


def _request_header_size(pkt: Packet) -> int:
    size = 8
    if _has_client_id(pkt):
        size += 2 + (0 if pkt.client_id is None else len(pkt.client_id))
    return size


class _KafkaFrame(Packet):
    _min_frame = 8

    def post_build(self, pkt: bytes, pay: bytes) -> bytes:
        if self.length is None:
            pkt = _I32.pack(len(pkt) - 4) + pkt[4:]
        return pkt + pay

    def guess_payload_class(self, payload: bytes) -> type[Packet]:
        """Bytes after this frame start the next one (a segment carrying several frames)."""
        return type(self) if len(payload) >= self._min_frame else Raw


class KafkaRequest(_KafkaFrame):
    """One request frame: size, request header, body (the rest of the frame)."""

    name = "Kafka request"
    _min_frame = 12
    fields_desc = [
        SignedIntField("length", None),
        ShortEnumField("api_key", 18, API_NAMES),
        SignedShortField("api_version", 0),
        SignedIntField("correlation_id", 0),
        ConditionalField(KafkaNullableStringField("client_id", b"kconform"), _has_client_id),
        StrLenField("body", b"", length_from=lambda p: max(0, (p.length or 0) - _request_header_size(p))),
    ]

    def mysummary(self) -> str:
        name = API_NAMES.get(self.api_key, f"key {self.api_key}")
        return self.sprintf(f"Kafka {name} v%api_version% request, correlation id %correlation_id%")


class KafkaResponse(_KafkaFrame):
    """One response frame: size, correlation id, body (the rest: which API it answers is known only from
    the request with the same correlation id on the same connection)."""

    name = "Kafka response"
    fields_desc = [
        SignedIntField("length", None),
        SignedIntField("correlation_id", 0),
        StrLenField("body", b"", length_from=lambda p: max(0, (p.length or 0) - 4)),
    ]

    def mysummary(self) -> str:
        return self.sprintf("Kafka response, correlation id %correlation_id%")


def bind_kafka_port(port: int) -> None:
    """Read TCP traffic to ``port`` as Kafka requests and traffic from it as Kafka responses."""
    bind_layers(TCP, KafkaRequest, dport=port)
    bind_layers(TCP, KafkaResponse, sport=port)


def unbind_kafka_port(port: int) -> None:
    split_layers(TCP, KafkaRequest, dport=port)
    split_layers(TCP, KafkaResponse, sport=port)


bind_kafka_port(DEFAULT_KAFKA_PORT)
