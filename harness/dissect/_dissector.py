"""Captures to exchanges: TCP segments in, ``Exchange``s out.

``KafkaStreamDissector`` sorts segments into connections by the Kafka port(s) it is given (traffic to a
Kafka port is requests, from it responses), reassembles each direction (``DirectionReassembler``), cuts
it into frames (``FrameSplitter``), decodes requests as they complete and pairs each response with the
oldest outstanding request of its correlation id on the same connection. ``feed`` returns exchanges as
responses complete them; ``finish`` returns the rest (requests never answered, frames the capture cut
short). ``dissect_pcap`` runs it over a file. Nothing here raises on bad input: it becomes notes."""

from __future__ import annotations

import struct
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from scapy.packet import Packet
from scapy.utils import PcapReader

from kconform.codecs import (
    DEFAULT_MAX_FRAME_SIZE,
    api_schemas,
    decode_request,
    decode_response_lenient,
)

from ._exchange import (
    Exchange,
    PendingRequest,
    answer,
    api_versions_fallback,
    decode_request_frame,
    orphan_response,
    unanswered,
)
from ._framing import FrameSplitter, RawFrame, StreamNote
from ._pcap import ACK, FIN, RST, SYN, Segment, segment_of
from ._reassembly import DirectionReassembler

__all__ = ["CaptureNote", "DissectedCapture", "KafkaStreamDissector", "dissect_packets", "dissect_pcap"]

_REQUEST_START = struct.Struct(">ihhi")
_RESPONSE_START = struct.Struct(">ii")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_MAX_VERSION = {schema.api_key: schema.max_version for schema in api_schemas()}
_CONTROLLED_SHUTDOWN = 7
_MIN_REQUEST = 8  # API key, version, correlation id
_MIN_RESPONSE = 4  # correlation id


@dataclass(frozen=True, slots=True)
class CaptureNote:
    """Something about a connection rather than one exchange: bytes skipped, lost, retransmitted."""

    client: str
    server: str
    packet: int | None
    text: str

    def __str__(self) -> str:
        where = f" (packet {self.packet})" if self.packet is not None else ""
        return f"{self.client} -> {self.server}{where}: {self.text}"


@dataclass(slots=True)
class DissectedCapture:
    exchanges: list[Exchange] = field(default_factory=list)
    notes: list[CaptureNote] = field(default_factory=list)
    segments: int = 0
    """TCP segments read on the Kafka port(s)."""
    ignored_segments: int = 0
    """TCP segments on other ports."""
    connections: int = 0
    retransmitted_bytes: int = 0
    out_of_order_segments: int = 0
    lost_bytes: int = 0
    skipped_bytes: int = 0


class _Connection:
    def __init__(
        self, client: str, server: str, stream: int, *, max_frame_size: int, keep_bodies: bool
    ) -> None:
        self.client, self.server, self.stream = client, server, stream
        self.max_frame_size = max_frame_size
        self.keep_bodies = keep_bodies
        self.to_server = DirectionReassembler()
        self.to_client = DirectionReassembler()
        self._request_frames: FrameSplitter | None = None
        self._response_frames: FrameSplitter | None = None
        self._outstanding: dict[int, deque[PendingRequest]] = {}
        self.client_isn: int | None = None
        self.closed = False
        self.notes: list[CaptureNote] = []

    def feed(self, segment: Segment, to_server: bool) -> list[Exchange]:
        out: list[Exchange] = []
        if segment.flags & ACK:  # bytes the sender has received, whether or not the capture saw them
            other = self.to_client if to_server else self.to_server
            out += self._frames(
                other.acknowledged(segment.ack, segment.number, segment.time_us), not to_server
            )
        direction = self.to_server if to_server else self.to_client
        if segment.flags & SYN:
            direction.syn(segment.seq)
            if to_server and self.client_isn is None:
                self.client_isn = segment.seq
        seq = (segment.seq + 1) % (1 << 32) if segment.flags & SYN else segment.seq
        chunks = direction.segment(
            seq, segment.payload, segment.number, segment.time_us, missing=segment.missing
        )
        if segment.flags & FIN:
            direction.fin((seq + len(segment.payload) + segment.missing) % (1 << 32))
        if segment.flags & (FIN | RST):
            self.closed = True
        return out + self._frames(chunks, to_server)

    def _frames(self, chunks, to_server: bool) -> list[Exchange]:
        out: list[Exchange] = []
        if not chunks:
            return out
        splitter = self._splitter(to_server)
        for chunk in chunks:
            for frame in splitter.feed(chunk):
                out += self._on_frame(frame, to_server)
        return out

    def _splitter(self, to_server: bool) -> FrameSplitter:
        if to_server:
            if self._request_frames is None:
                self._request_frames = FrameSplitter(
                    self._request_boundary,
                    synced=self.to_server.saw_syn,
                    min_frame_size=_MIN_REQUEST,
                    max_frame_size=self.max_frame_size,
                    what="request",
                )
            return self._request_frames
        if self._response_frames is None:
            self._response_frames = FrameSplitter(
                self._response_boundary,
                synced=self.to_client.saw_syn,
                min_frame_size=_MIN_RESPONSE,
                max_frame_size=self.max_frame_size,
                what="response",
            )
        return self._response_frames

    def _on_frame(self, frame: RawFrame, to_server: bool) -> list[Exchange]:
        if to_server:
            request = decode_request_frame(frame)
            if request.correlation_id is None:
                return [self._unanswered(request)]
            self._outstanding.setdefault(request.correlation_id, deque()).append(request)
            return []
        if len(frame.data) < 4:
            text = f"a response of {frame.size} bytes begins, but the stream ends before its correlation id"
            self.notes.append(CaptureNote(self.client, self.server, frame.packet, text))
            return []
        correlation_id = _I32.unpack_from(frame.data, 0)[0]
        waiting = self._outstanding.get(correlation_id)
        if not waiting:
            return [orphan_response(frame, client=self.client, server=self.server, stream=self.stream)]
        request = waiting.popleft()
        if not waiting:
            del self._outstanding[correlation_id]
        return [
            answer(
                request,
                frame,
                client=self.client,
                server=self.server,
                stream=self.stream,
                keep_bodies=self.keep_bodies,
            )
        ]

    def _unanswered(self, request: PendingRequest) -> Exchange:
        return unanswered(
            request,
            client=self.client,
            server=self.server,
            stream=self.stream,
            closed=self.closed,
            keep_bodies=self.keep_bodies,
        )

    def finish(self) -> list[Exchange]:
        out = self._frames(self.to_server.flush(), True)
        out += self._frames(self.to_client.flush(), False)
        for to_server, splitter in ((True, self._request_frames), (False, self._response_frames)):
            if splitter is None:
                continue
            for frame in splitter.finish():
                out += self._on_frame(frame, to_server)
            self.notes += [self._note(n) for n in splitter.notes]
            splitter.notes.clear()
        for waiting in self._outstanding.values():
            out += [self._unanswered(request) for request in waiting]
        self._outstanding.clear()
        for direction, name in ((self.to_server, "requests"), (self.to_client, "responses")):
            if direction.retransmitted_bytes:
                text = (
                    f"{direction.retransmitted_bytes} {name} bytes seen again (retransmissions) were dropped"
                )
                self.notes.append(CaptureNote(self.client, self.server, None, text))
        return out

    def _note(self, note: StreamNote) -> CaptureNote:
        return CaptureNote(self.client, self.server, note.packet, note.text)

    @property
    def skipped_bytes(self) -> int:
        return sum(s.skipped_bytes for s in (self._request_frames, self._response_frames) if s is not None)

    def _request_boundary(self, buf, position: int, final: bool) -> bool | None:
        """Does a request start at ``position``? Its header must name a known API at a version the
        codecs know, with a client id of text; and once the whole frame is in, it must decode, to its
        last byte."""
        header = self._request_header_plausible(buf, position)
        if not header:
            return False if header is None and final else header
        end = position + 4 + _I32.unpack_from(buf, position)[0]
        if end > len(buf):
            return True if final else None
        try:
            decode_request(bytes(buf[position + 4 : end]))
        except Exception:  # noqa: BLE001 - any failure means "not a frame here"
            return False
        return True

    def _request_header_plausible(self, buf, position: int) -> bool | None:
        if len(buf) - position < _REQUEST_START.size + 2:
            return None
        size, key, version, correlation_id = _REQUEST_START.unpack_from(buf, position)
        if not _MIN_REQUEST <= size <= self.max_frame_size or correlation_id < 0:
            return False
        top = _MAX_VERSION.get(key)
        if top is None or not 0 <= version <= top:
            return False
        if key == _CONTROLLED_SHUTDOWN and version == 0:
            return True
        begin = position + _REQUEST_START.size + 2
        (length,) = _I16.unpack_from(buf, begin - 2)
        if length == -1:
            return True
        if not 0 <= length <= size - 10:
            return False
        if begin + length > len(buf):
            return None
        try:
            text = bytes(buf[begin : begin + length]).decode()
        except UnicodeDecodeError:
            return False
        return text.isprintable()

    def _response_boundary(self, buf, position: int, final: bool) -> bool | None:
        """Does a response start at ``position``? Its correlation id must be one an outstanding request
        on this connection carries; and once the whole frame is in, it must decode as that request's
        answer."""
        if len(buf) - position < 8:
            return False if final else None
        size, correlation_id = _RESPONSE_START.unpack_from(buf, position)
        waiting = self._outstanding.get(correlation_id)
        if not _MIN_RESPONSE <= size <= self.max_frame_size or not waiting:
            return False
        end = position + 4 + size
        request = waiting[0]
        if end > len(buf):
            return True if final else None
        if request.api_name is None:
            return True
        frame = bytes(buf[position + 4 : end])
        try:
            decode_response_lenient(frame, request.api_key, request.api_version)
        except Exception:  # noqa: BLE001 - any failure means "not this request's answer"
            return api_versions_fallback(request, frame) is not None
        return True


class KafkaStreamDissector:
    """Exchanges out of TCP segments given in capture order. ``ports``: the Kafka (server) ports."""

    def __init__(
        self,
        ports: Iterable[int] = (9092,),
        *,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        keep_bodies: bool = False,
    ) -> None:
        self.ports = frozenset(ports)
        if not self.ports:
            raise ValueError("give at least one Kafka port")
        self.max_frame_size = max_frame_size
        self.keep_bodies = keep_bodies
        self.result = DissectedCapture()
        self._connections: dict[tuple[str, str], _Connection] = {}

    def feed(self, segment: Segment) -> list[Exchange]:
        to_server = segment.dport in self.ports
        from_server = segment.sport in self.ports
        if not (to_server or from_server):
            self.result.ignored_segments += 1
            return []
        self.result.segments += 1
        if to_server and from_server:  # both ends on Kafka ports: the SYN's sender is the client
            key = (segment.destination, segment.source)
            opening = segment.flags & (SYN | ACK) == SYN
            to_server = opening or key not in self._connections
        if to_server:
            client, server = segment.source, segment.destination
        else:
            client, server = segment.destination, segment.source
        out: list[Exchange] = []
        connection = self._connections.get((client, server))
        opening = to_server and segment.flags & (SYN | ACK) == SYN
        if connection is not None and opening and connection.client_isn != segment.seq:
            out += self._retire((client, server))  # the same ports reused by a new connection
            connection = None
        if connection is None:
            connection = _Connection(
                client,
                server,
                self.result.connections,
                max_frame_size=self.max_frame_size,
                keep_bodies=self.keep_bodies,
            )
            self.result.connections += 1
            self._connections[(client, server)] = connection
        out += connection.feed(segment, to_server)
        self.result.exchanges += out
        return out

    def _retire(self, key: tuple[str, str]) -> list[Exchange]:
        connection = self._connections.pop(key)
        out = connection.finish()
        result = self.result
        result.notes += connection.notes
        for direction in (connection.to_server, connection.to_client):
            result.retransmitted_bytes += direction.retransmitted_bytes
            result.out_of_order_segments += direction.out_of_order_segments
            result.lost_bytes += direction.hole_bytes
        result.skipped_bytes += connection.skipped_bytes
        return out

    def finish(self) -> DissectedCapture:
        """Close every connection; the result holds every exchange, in the order their first frame was
        captured."""
        for key in list(self._connections):
            self.result.exchanges += self._retire(key)
        self.result.exchanges.sort(key=lambda e: (e.first_packet, e.stream))
        return self.result


def dissect_packets(
    packets: Iterable[Packet],
    ports: Iterable[int] = (9092,),
    *,
    max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
    keep_bodies: bool = False,
) -> DissectedCapture:
    """Dissect Scapy packets given in capture order (numbered from 1, as Wireshark numbers frames)."""
    dissector = KafkaStreamDissector(ports, max_frame_size=max_frame_size, keep_bodies=keep_bodies)
    for number, packet in enumerate(packets, 1):
        segment = segment_of(packet, number)
        if segment is not None:
            dissector.feed(segment)
    return dissector.finish()


def dissect_pcap(
    path: str | Path,
    ports: Iterable[int] = (9092,),
    *,
    max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
    keep_bodies: bool = False,
) -> DissectedCapture:
    """Dissect a pcap or pcapng file."""
    with PcapReader(str(path)) as reader:
        return dissect_packets(reader, ports, max_frame_size=max_frame_size, keep_bodies=keep_bodies)
