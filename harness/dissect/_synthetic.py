"""Scapy packets of a made-up TCP connection to a Kafka port, for tests, examples and test captures:
``TcpConversation`` numbers the segments, so any bytes can be sent in any cut, order or repetition."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from scapy.layers.inet import IP, TCP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether
from scapy.packet import Packet, Raw

__all__ = ["TcpConversation"]

_MOD = 1 << 32


@dataclass
class TcpConversation:
    """One connection from ``client`` to ``server``; ``packets`` holds what was sent, in order."""

    client: tuple[str, int] = ("127.0.0.1", 40000)
    server: tuple[str, int] = ("127.0.0.1", 9092)
    client_isn: int = 1000
    server_isn: int = 5000
    time: float = 1_700_000_000.0
    """Capture time of the next packet; each packet advances it by ``step`` seconds."""
    step: float = 0.0005
    packets: list[Packet] = field(default_factory=list)
    sent: dict[bool, int] = field(default_factory=lambda: {True: 0, False: 0})
    """Stream bytes sent so far: ``sent[True]`` by the client, ``sent[False]`` by the server."""

    def packet(self, to_server: bool, offset: int, data: bytes = b"", flags: str = "PA") -> Packet:
        """A segment carrying ``data`` at stream ``offset`` (from the first byte after the SYN); it is
        not added to ``packets``."""
        isn, other_isn = (
            (self.client_isn, self.server_isn) if to_server else (self.server_isn, self.client_isn)
        )
        (src, sport), (dst, dport) = (self.client, self.server) if to_server else (self.server, self.client)
        network = IPv6(src=src, dst=dst) if ":" in src else IP(src=src, dst=dst)
        seq = (isn + (0 if "S" in flags else 1 + offset)) % _MOD
        ack = (other_isn + 1 + self.sent[not to_server]) % _MOD
        tcp = TCP(sport=sport, dport=dport, seq=seq, ack=ack if "A" in flags else 0, flags=flags)
        packet = Ether() / network / tcp
        if data:
            packet = packet / Raw(data)
        packet.time = self.time
        self.time += self.step
        return packet

    def handshake(self) -> list[Packet]:
        packets = [
            self.packet(True, 0, flags="S"),
            self.packet(False, 0, flags="SA"),
            self.packet(True, 0, flags="A"),
        ]
        self.packets += packets
        return packets

    def send(self, data: bytes, *, to_server: bool, sizes: Sequence[int] = ()) -> list[Packet]:
        """Send ``data`` in segments of ``sizes`` bytes (the rest in one more), and add them."""
        packets = []
        for piece in _cut(data, sizes):
            packets.append(self.packet(to_server, self.sent[to_server], piece))
            self.sent[to_server] += len(piece)
        self.packets += packets
        return packets

    def close(self, *, by_client: bool = True) -> Packet:
        packet = self.packet(by_client, self.sent[by_client], flags="FA")
        self.packets.append(packet)
        return packet


def _cut(data: bytes, sizes: Iterable[int]) -> list[bytes]:
    pieces, position = [], 0
    for size in sizes:
        if position >= len(data):
            break
        pieces.append(data[position : position + size])
        position += size
    if position < len(data):
        pieces.append(data[position:])
    return pieces
