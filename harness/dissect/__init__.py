"""kconform.harness.dissect: Kafka traffic out of packet captures.

Scapy layers for Kafka frames (``KafkaRequest``, ``KafkaResponse``, bound to TCP port 9092 and to any
port given to ``bind_kafka_port``), a TCP reassembler that cuts each direction of each connection into
frames, and a dissector that pairs requests with responses by correlation id and decodes both with
``kconform.codecs``::

    from kconform.harness.dissect import dissect_pcap, trace_rows
    capture = dissect_pcap("session.pcapng", ports=[9092])
    for exchange in capture.exchanges:
        print(exchange.api_name, exchange.api_version, exchange.outcome, exchange.latency_us)

``trace_rows`` turns exchanges into trace rows (``kconform.traces``)."""

from ._dissector import CaptureNote, DissectedCapture, KafkaStreamDissector, dissect_packets, dissect_pcap
from ._exchange import Exchange
from ._framing import FrameSplitter, RawFrame, StreamNote
from ._layers import DEFAULT_KAFKA_PORT, KafkaRequest, KafkaResponse, bind_kafka_port, unbind_kafka_port
from ._pcap import Segment, read_segments, segment_of
from ._reassembly import Chunk, DirectionReassembler
from ._rows import summarise, trace_rows
from ._synthetic import TcpConversation

__all__ = [
    "DEFAULT_KAFKA_PORT",
    "CaptureNote",
    "Chunk",
    "DirectionReassembler",
    "DissectedCapture",
    "Exchange",
    "FrameSplitter",
    "KafkaRequest",
    "KafkaResponse",
    "KafkaStreamDissector",
    "RawFrame",
    "Segment",
    "StreamNote",
    "TcpConversation",
    "bind_kafka_port",
    "dissect_packets",
    "dissect_pcap",
    "read_segments",
    "segment_of",
    "summarise",
    "trace_rows",
    "unbind_kafka_port",
]
