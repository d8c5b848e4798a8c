"""The capture dissector on hand-built Scapy packets, reassembling TCP: frames split across segments
(even inside the size prefix), several frames in one segment, segments out of order and retransmitted,
sequence numbers that wrap, truncated last frames, unanswered requests and Produce with acks 0."""

from __future__ import annotations

from kconform.harness.dissect import (
    TcpConversation,
    dissect_packets,
)

from ..support.kafka_segments import (
    _expected,
    _facts,
    _metadata,
    _one_segment_each,
    _produce,
    _session,
)


def test_a_session_in_whole_segments_reads_every_exchange():
    pairs = _session()
    talk = _one_segment_each(pairs)
    result = dissect_packets(talk.packets)
    assert _facts(result) == _expected(pairs)
    first = result.exchanges[0]
    assert (first.client, first.server) == ("127.0.0.1:40000", "127.0.0.1:9092")
    assert (first.request_packet, first.response_packet) == (4, 5)  # after the three handshake packets
    assert first.latency_us == 500  # one step of the conversation's clock
    assert result.connections == 1 and not result.notes
    assert result.retransmitted_bytes == result.lost_bytes == result.skipped_bytes == 0


def test_frames_split_across_segments_even_inside_the_size_prefix():
    pairs = _session()
    talk = TcpConversation()
    talk.handshake()
    for request, response in pairs:
        talk.send(request, to_server=True, sizes=[2, 5, 3, 1])
        talk.send(response, to_server=False, sizes=[1, 1, 1, 1, 4])
    result = dissect_packets(talk.packets)
    assert _facts(result) == _expected(pairs)
    first = result.exchanges[0]
    assert first.request_packet == 3 + 5  # the fifth piece of the request completes it
    assert first.response_packet == 8 + 6  # and the sixth of the response


def test_several_frames_in_one_segment():
    pairs = _session()
    talk = TcpConversation()
    talk.handshake()
    talk.send(b"".join(r for r, _ in pairs), to_server=True)
    talk.send(b"".join(r for _, r in pairs), to_server=False)
    result = dissect_packets(talk.packets)
    assert _facts(result) == _expected(pairs)
    assert {e.request_packet for e in result.exchanges} == {4}
    assert {e.response_packet for e in result.exchanges} == {5}


def test_segments_out_of_order_are_put_back_in_sequence():
    pairs = _session()
    talk = TcpConversation()
    talk.handshake()
    requests = talk.send(b"".join(r for r, _ in pairs), to_server=True, sizes=[7] * 200)
    responses = talk.send(b"".join(r for _, r in pairs), to_server=False, sizes=[11] * 200)
    packets = talk.packets[:3] + requests[::-1] + responses[1:] + responses[:1]
    result = dissect_packets(packets)
    assert _facts(result) == _expected(pairs)
    assert result.out_of_order_segments == len(requests) - 1 + len(responses) - 1


def test_retransmissions_whole_and_overlapping_are_dropped():
    pairs = _session()
    talk = TcpConversation()
    talk.handshake()
    stream = b"".join(r for r, _ in pairs)
    first = talk.send(stream[:100], to_server=True)
    again = talk.packet(True, 0, stream[:100])  # the same segment once more
    overlap = talk.packet(True, 50, stream[50:160])  # half old bytes, half new
    rest = talk.packet(True, 160, stream[160:])
    talk.sent[True] = len(stream)
    answers = talk.send(b"".join(r for _, r in pairs), to_server=False)
    result = dissect_packets(talk.packets[:3] + first + [again, overlap, rest] + answers + answers[-1:])
    assert _facts(result) == _expected(pairs)
    assert result.retransmitted_bytes == 100 + 50 + len(b"".join(r for _, r in pairs))


def test_sequence_numbers_wrap_around():
    pairs = _session()
    talk = TcpConversation(client_isn=(1 << 32) - 20, server_isn=(1 << 32) - 3)
    talk.handshake()
    for request, response in pairs:
        talk.send(request, to_server=True, sizes=[9, 9, 9])
        talk.send(response, to_server=False, sizes=[9, 9, 9])
    assert _facts(dissect_packets(talk.packets)) == _expected(pairs)


def test_a_truncated_last_response_is_an_error_with_a_note():
    pairs = _session()
    talk = _one_segment_each(pairs[:-1])
    request, response = pairs[-1]
    talk.send(request, to_server=True)
    talk.send(response[:-5], to_server=False)
    result = dissect_packets(talk.packets)
    assert _facts(result)[:-1] == _expected(pairs)[:-1]
    last = result.exchanges[-1]
    assert (last.api_name, last.correlation_id, last.outcome) == ("Metadata", 5, "error")
    assert any("truncated" in note and f"ends after {len(response) - 9}" in note for note in last.notes), (
        last.notes
    )


def test_a_truncated_last_request_is_an_error_and_not_answered():
    pairs = _session()
    talk = _one_segment_each(pairs[:2])
    talk.send(pairs[2][0][:20], to_server=True)
    result = dissect_packets(talk.packets)
    last = result.exchanges[-1]
    assert (last.api_name, last.correlation_id, last.outcome) == ("CreateTopics", 3, "error")
    assert any("truncated" in note for note in last.notes)


def test_unanswered_requests_time_out_or_end_with_the_connection():
    talk = TcpConversation()
    talk.handshake()
    talk.send(_metadata(1, ["a"])[0], to_server=True)
    assert [e.outcome for e in dissect_packets(talk.packets).exchanges] == ["timeout"]
    talk.close(by_client=False)
    (exchange,) = dissect_packets(talk.packets).exchanges
    assert exchange.outcome == "closed" and exchange.response_bytes is None and exchange.latency_us is None


def test_produce_with_acks_0_expects_no_response():
    talk = TcpConversation()
    talk.handshake()
    talk.send(_produce(1, "fire", acks=0)[0], to_server=True)
    request, response = _metadata(2, ["fire"])
    talk.send(request, to_server=True)
    talk.send(response, to_server=False)
    result = dissect_packets(talk.packets)
    assert [(e.api_name, e.outcome) for e in result.exchanges] == [("Produce", "pass"), ("Metadata", "pass")]
    assert "acks=0" in result.exchanges[0].notes[0]
