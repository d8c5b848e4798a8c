"""TCP segments out of a capture file (pcap or pcapng, any link type Scapy reads), one ``Segment`` per TCP
packet, numbered as Wireshark numbers frames (from 1, every packet counted)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from scapy.layers.inet import IP, TCP
from scapy.layers.inet6 import IPv6
from scapy.packet import Packet
from scapy.utils import PcapReader

__all__ = ["FIN", "RST", "SYN", "ACK", "Segment", "read_segments", "segment_of"]

FIN, SYN, RST, ACK = 0x01, 0x02, 0x04, 0x10
_TCP_PROTOCOL = 6


@dataclass(frozen=True, slots=True)
class Segment:
    """One TCP segment as captured."""

    number: int
    """The packet's number in the capture, from 1 (Wireshark's frame number)."""
    time_us: int
    """Capture time, microseconds since the epoch."""
    src: str
    sport: int
    dst: str
    dport: int
    seq: int
    flags: int
    payload: bytes
    ack: int = 0
    """The acknowledgement number (meaningful when ``flags`` has ``ACK``)."""
    missing: int = 0
    """Payload bytes that were on the wire but not kept by the capture (a short snap length)."""

    @property
    def source(self) -> str:
        return _endpoint(self.src, self.sport)

    @property
    def destination(self) -> str:
        return _endpoint(self.dst, self.dport)


def _endpoint(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def segment_of(packet: Packet, number: int) -> Segment | None:
    """The TCP segment in a Scapy packet, or None when it carries none (or only an IP fragment)."""
    if not packet.original:  # built rather than read: read it back as a capture would
        built = packet
        packet = type(built)(bytes(built))
        packet.time = built.time
    tcp = packet.getlayer(TCP)
    if tcp is None:
        return None
    network = tcp.underlayer
    if isinstance(network, IP):
        if network.frag or network.flags.MF:
            return None
        on_wire = network.len - network.ihl * 4 if network.len else None  # 0: segmentation offload
    elif isinstance(network, IPv6):
        on_wire = network.plen if network.nh == _TCP_PROTOCOL and network.plen else None
    else:
        return None
    header = tcp.dataofs * 4
    raw_tcp = tcp.original if tcp.original is not None else bytes(tcp)
    payload = bytes(raw_tcp[header:])
    missing = max(0, on_wire - header - len(payload)) if on_wire is not None else 0
    return Segment(
        number=number,
        time_us=round(packet.time * 1_000_000),
        src=network.src,
        sport=tcp.sport,
        dst=network.dst,
        dport=tcp.dport,
        seq=tcp.seq,
        flags=int(tcp.flags),
        payload=payload,
        ack=tcp.ack,
        missing=missing,
    )


def read_segments(path: str | Path) -> Iterator[Segment]:
    """Every TCP segment of a capture file, in file order."""
    with PcapReader(str(path)) as reader:
        for number, packet in enumerate(reader, 1):
            segment = segment_of(packet, number)
            if segment is not None:
                yield segment
