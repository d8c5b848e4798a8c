"""The capture dissector on hand-built Scapy packets that are damaged or odd: streams that begin inside a
frame, bytes that are not Kafka at all, undecodable bodies, lost and cut-off bytes, a new connection on
the same ports, IPv6; and Hypothesis cutting, reordering and repeating the segments of a frame stream,
or starting the capture anywhere, which must never change (or invent) the exchanges read from it."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scapy.layers.inet import TCP
from scapy.layers.l2 import Ether
from scapy.packet import Raw, raw

from kconform.codecs import encode_request, encode_response, size_prefixed
from kconform.codecs.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    MetadataRequest,
)
from kconform.harness.dissect import (
    KafkaRequest,
    KafkaResponse,
    TcpConversation,
    bind_kafka_port,
    dissect_packets,
    segment_of,
    trace_rows,
    unbind_kafka_port,
)

from ..support.kafka_segments import (
    _api_versions,
    _create,
    _expected,
    _facts,
    _metadata,
    _one_segment_each,
    _produce,
    _session,
)


def test_a_stream_that_starts_inside_a_frame_skips_to_the_next_boundary():
    pairs = _session()
    talk = _one_segment_each(pairs)
    # drop the handshake and the first request, and cut the capture into the second request
    request_packets = [p for p in talk.packets if p[TCP].dport == 9092 and Raw in p]
    second = request_packets[1]
    tail = talk.packet(True, 0, raw(second[Raw])[9:])
    tail[TCP].seq = second[TCP].seq + 9
    packets = [tail] + talk.packets[talk.packets.index(second) + 1 :]
    result = dissect_packets(packets)
    facts = _facts(result)
    assert facts[-3:] == _expected(pairs)[-3:]
    assert len(result.exchanges) == 3  # the answer to the request cut in half has nothing to pair with
    # the rest of that request is skipped, and so is its answer: no request waits for its correlation id
    assert result.skipped_bytes == len(pairs[1][0]) - 9 + len(pairs[1][1])
    assert any("skipped" in note.text for note in result.notes)


def test_bytes_that_are_not_kafka_are_skipped_not_fatal():
    pairs = _session()
    talk = TcpConversation()
    talk.handshake()
    talk.send(b"GET / HTTP/1.1\r\nHost: kafka\r\n\r\n", to_server=True)
    talk.send(pairs[1][0], to_server=True)
    talk.send(b"HTTP/1.1 400 Bad Request\r\n\r\n" + pairs[1][1], to_server=False)
    result = dissect_packets(talk.packets)
    assert _facts(result) == _expected(pairs)[1:2]
    texts = " ".join(note.text for note in result.notes)
    assert "not one a Kafka peer sends" in texts and "skipped" in texts


def test_garbage_only_gives_notes_and_no_exchange():
    talk = TcpConversation()
    talk.handshake()
    rng = random.Random(7)
    talk.send(bytes(rng.randrange(256) for _ in range(5000)), to_server=True, sizes=[100] * 50)
    talk.send(bytes(rng.randrange(256) for _ in range(3000)), to_server=False, sizes=[100] * 30)
    result = dissect_packets(talk.packets)
    assert not any(e.outcome == "pass" for e in result.exchanges)
    assert result.notes and result.skipped_bytes > 0


def test_undecodable_bodies_and_unknown_apis_are_errors_with_notes():
    talk = TcpConversation()
    talk.handshake()
    header = encode_request(3, 9, 1, "t", MetadataRequest())[:12]  # flexible header: 12 bytes for "t"
    broken = size_prefixed(header + b"\xff" * 6)
    talk.send(broken, to_server=True)
    talk.send(size_prefixed((1).to_bytes(4, "big") + b"\x00\x00"), to_server=False)
    unknown = size_prefixed(
        (999).to_bytes(2, "big") + (0).to_bytes(2, "big") + (2).to_bytes(4, "big") + b"\xff\xff"
    )
    talk.send(unknown, to_server=True)
    talk.send(size_prefixed((2).to_bytes(4, "big")), to_server=False)
    first, second = dissect_packets(talk.packets).exchanges
    assert (first.api_name, first.outcome) == ("Metadata", "error")
    assert any("request not decoded" in n for n in first.notes) and any(
        "response not decoded" in n for n in first.notes
    )
    assert (second.api_key, second.api_name, second.outcome) == (999, None, "error")
    assert "unknown API key 999" in second.notes[0]


def test_api_versions_answered_at_v0_for_a_version_the_broker_lacks():
    request = size_prefixed(
        encode_request(
            18, 3, 1, "t", ApiVersionsRequest(client_software_name="c", client_software_version="9")
        )
    )
    refusal = size_prefixed(
        encode_response(
            18,
            0,
            1,
            ApiVersionsResponse(
                error_code=35,
                api_keys=[ApiVersionsResponse.ApiVersion(api_key=18, min_version=0, max_version=2)],
            ),
        )
    )
    talk = TcpConversation()
    talk.handshake()
    talk.send(request, to_server=True)
    talk.send(refusal, to_server=False)
    (exchange,) = dissect_packets(talk.packets).exchanges
    assert exchange.outcome == "pass" and exchange.error_codes == (35,)
    assert "at v0" in exchange.notes[0]


def test_bytes_lost_inside_a_frame_spoil_that_frame_only():
    pairs = _session()
    talk = TcpConversation()
    talk.handshake()
    packets = list(talk.packets)
    for index, (request, response) in enumerate(pairs):
        pieces = talk.send(request, to_server=True, sizes=[20, 10])
        packets += [
            p for i, p in enumerate(pieces) if not (index == 3 and i == 1)
        ]  # lose part of the Produce
        packets += talk.send(response, to_server=False)
    result = dissect_packets(packets)
    facts = _facts(result)
    assert facts[:3] + facts[4:] == _expected(pairs)[:3] + _expected(pairs)[4:]
    produce = result.exchanges[3]
    assert produce.outcome == "error" and any(
        "10 bytes of the request are not in the capture" in n for n in produce.notes
    )
    assert result.lost_bytes == 10


def test_a_short_snap_length_is_a_loss_not_a_misreading():
    pairs = _session()
    talk = _one_segment_each(pairs)
    index = 3 + 2 * 3  # the Produce request
    cut = Ether(raw(talk.packets[index])[:-1000])
    cut.time = talk.packets[index].time
    segment = segment_of(cut, 1)
    assert segment.missing == 1000
    packets = talk.packets[:index] + [cut] + talk.packets[index + 1 :]
    result = dissect_packets(packets)
    assert [e.outcome for e in result.exchanges] == ["pass", "pass", "pass", "error", "pass"]


def test_a_new_connection_on_the_same_ports_starts_afresh():
    pairs = _session()
    first = _one_segment_each(pairs[:2])
    first.close()
    second = TcpConversation(client_isn=777_777, time=first.time + 1)
    second.handshake()
    second.send(pairs[2][0], to_server=True)
    second.send(pairs[2][1], to_server=False)
    result = dissect_packets(first.packets + second.packets)
    assert _facts(result) == _expected(pairs)[:3]
    assert result.connections == 2 and [e.stream for e in result.exchanges] == [0, 0, 1]


def test_ipv6_and_other_ports():
    pairs = _session()[:2]
    talk = TcpConversation(client=("::1", 50000), server=("::1", 19092))
    talk.handshake()
    for request, response in pairs:
        talk.send(request, to_server=True)
        talk.send(response, to_server=False)
    assert dissect_packets(talk.packets).exchanges == []  # not the default port
    result = dissect_packets(talk.packets, [19092])
    assert _facts(result) == _expected(pairs)
    assert result.exchanges[0].server == "[::1]:19092"
    (row, _) = trace_rows(result.exchanges, source="x.pcap")
    assert (row.target, row.case_id, row.api_name, row.outcome) == (
        "capture:[::1]:19092",
        "x.pcap:4",
        "ApiVersions",
        "pass",
    )


def test_scapy_layers_build_and_read_kafka_frames():
    request, response = _metadata(7, ["orders"])
    built = KafkaRequest(api_key=3, api_version=9, correlation_id=7, client_id=b"tester", body=request[20:])
    assert raw(built) == request
    talk = TcpConversation()
    packet = talk.packet(True, 0, request + _api_versions(8)[0])
    read = Ether(raw(packet))
    assert read[KafkaRequest].correlation_id == 7 and read[KafkaRequest].client_id == b"tester"
    assert read[KafkaRequest].payload.correlation_id == 8  # the second frame of the segment
    answer = Ether(raw(talk.packet(False, 0, response)))
    assert answer[KafkaResponse].correlation_id == 7 and answer[KafkaResponse].body == response[8:]
    other = TcpConversation(server=("127.0.0.1", 19092))
    assert KafkaRequest not in Ether(raw(other.packet(True, 0, request)))
    bind_kafka_port(19092)
    try:
        assert Ether(raw(other.packet(True, 0, request)))[KafkaRequest].api_key == 3
    finally:
        unbind_kafka_port(19092)


@st.composite
def _delivery(draw, length: int):
    """Cut a stream of ``length`` bytes into segments, then swap neighbours and repeat a few."""
    sizes = draw(st.lists(st.integers(1, 97), max_size=80))
    cuts, position = [], 0
    for size in sizes:
        if position + size >= length:
            break
        cuts.append((position, position + size))
        position += size
    cuts.append((position, length))
    for _ in range(draw(st.integers(0, 6))):
        i = draw(st.integers(0, len(cuts) - 1))
        if i + 1 < len(cuts):
            cuts[i], cuts[i + 1] = cuts[i + 1], cuts[i]
    for _ in range(draw(st.integers(0, 4))):
        i = draw(st.integers(0, len(cuts) - 1))
        cuts.insert(i + draw(st.integers(0, 3)), cuts[i])
    return cuts


PAIRS = _session() + [_produce(6, "audit", acks=-1, payload=500), _create(7, ["c1"])]


REQUESTS = b"".join(r for r, _ in PAIRS)


RESPONSES = b"".join(r for _, r in PAIRS)


BASELINE = _facts(dissect_packets(_one_segment_each(PAIRS).packets))


@settings(max_examples=120)
@given(_delivery(len(REQUESTS)), _delivery(len(RESPONSES)))
def test_any_segmentation_gives_the_same_exchanges(request_cuts, response_cuts):
    talk = TcpConversation()
    packets = talk.handshake()
    packets += [talk.packet(True, a, REQUESTS[a:b]) for a, b in request_cuts]
    talk.sent[True] = len(REQUESTS)
    packets += [talk.packet(False, a, RESPONSES[a:b]) for a, b in response_cuts]
    result = dissect_packets(packets)
    assert _facts(result) == BASELINE
    assert not result.notes or all("retransmissions" in note.text for note in result.notes)


@pytest.mark.parametrize(("lost", "first_pair"), [(0, 0), (1, 0), (3, 0), (5, 1)])
def test_a_capture_that_misses_the_handshake_still_frames_from_a_boundary(lost, first_pair):
    pairs = _session()
    talk = _one_segment_each(pairs)
    result = dissect_packets(talk.packets[lost:])
    assert _facts(result) == _expected(pairs)[first_pair:]


REQUEST_STARTS = [sum(len(r) for r, _ in PAIRS[:i]) for i in range(len(PAIRS))]


RESPONSE_STARTS = [sum(len(r) for _, r in PAIRS[:i]) for i in range(len(PAIRS))]


@settings(max_examples=100)
@given(
    st.integers(0, REQUEST_STARTS[-1]),
    st.integers(0, RESPONSE_STARTS[-1]),
    _delivery(len(REQUESTS)),
    _delivery(len(RESPONSES)),
)
def test_a_capture_starting_anywhere_reads_only_true_exchanges(skip_requests, skip_responses, rcuts, acuts):
    """Without the handshake and from any byte on: whatever is read as a whole exchange is one of the
    session's, and the last exchange (wholly inside the capture) is read whenever each direction's first
    captured segment is its earliest (without a SYN, bytes before the first segment seen are taken for
    retransmissions)."""
    talk = TcpConversation()
    requests, responses = _clip(rcuts, skip_requests), _clip(acuts, skip_responses)
    packets = [talk.packet(True, a, REQUESTS[a:b]) for a, b in requests]
    talk.sent[True] = len(REQUESTS)
    packets += [talk.packet(False, a, RESPONSES[a:b]) for a, b in responses]
    result = dissect_packets(packets)
    read = [fact for fact, e in zip(_facts(result), result.exchanges, strict=True) if e.outcome == "pass"]
    assert all(fact in BASELINE for fact in read)
    if requests[0] == min(requests) and responses[0] == min(responses):
        assert read[-1:] == BASELINE[-1:]


def _clip(cuts: list[tuple[int, int]], skip: int) -> list[tuple[int, int]]:
    """The segments (or their parts) at or after stream offset ``skip``."""
    return [(max(a, skip), b) for a, b in cuts if b > skip]
