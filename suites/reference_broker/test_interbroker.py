"""The broker's own client for other nodes (``reference_broker/interbroker.py``): against a real
in-process reference broker for the round trips, and against plain asyncio servers for the peers that
misbehave (silent, closing, answering garbage, or knowing only ApiVersions v0)."""

from __future__ import annotations

import asyncio
import time

import pytest

from kconform.codecs import FrameDecoder, decode_request, encode_response, size_prefixed
from kconform.codecs.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    BrokerRegistrationRequest,
    MetadataRequest,
    MetadataResponse,
)
from kconform.reference_broker.interbroker import (
    InterBrokerConnection,
    NodeChannel,
    PeerUnavailable,
    UnsupportedByPeer,
)
from kconform.reference_broker.node import BrokerNode

CLOSE = object()  # an answer that closes the connection instead


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


async def _started_broker(tmp_path) -> tuple[BrokerNode, str, int]:
    node = BrokerNode.from_config_file(None, {"node.id": "1", "log.dirs": str(tmp_path)})
    host, port = await node.start("127.0.0.1", 0)
    return node, host, port


def answer_normally(header, body):
    """ApiVersions offering itself v0-4 and Metadata v0-12; an empty Metadata answer."""
    version, cid = header.request_api_version, header.correlation_id
    if header.request_api_key == 18:
        keys = [
            ApiVersionsResponse.ApiVersion(api_key=k, min_version=0, max_version=m)
            for k, m in ((18, 4), (3, 12))
        ]
        return encode_response(18, version, cid, ApiVersionsResponse(api_keys=keys))
    return encode_response(3, version, cid, MetadataResponse())


class FakePeer:
    """A plain asyncio server that answers each request with ``answer(header, body)``: a response
    frame, None (never answer) or ``CLOSE``."""

    def __init__(self, answer=answer_normally) -> None:
        self.answer = answer
        self.connections = 0
        self.writers: list[asyncio.StreamWriter] = []

    async def start(self, port: int = 0) -> tuple[str, int]:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", port)
        self.address = self._server.sockets[0].getsockname()[:2]
        return self.address

    async def stop(self) -> None:
        self._server.close()
        for writer in self.writers:  # a stopped server in 3.11 keeps its connections: end them too
            writer.close()
        await self._server.wait_closed()

    async def _serve(self, reader, writer) -> None:
        self.connections += 1
        self.writers.append(writer)
        decoder = FrameDecoder()
        while data := await reader.read(65536):
            decoder.feed(data)
            for frame in decoder:
                reply = self.answer(*decode_request(frame))
                if reply is CLOSE:
                    writer.close()
                    return
                if reply is not None:
                    writer.write(size_prefixed(reply))


def _metadata(*names: str) -> MetadataRequest:
    topics = [MetadataRequest.MetadataRequestTopic(name=n) for n in names]
    return MetadataRequest(topics=topics, allow_auto_topic_creation=False)


# ---- against the reference broker -------------------------------------------------------------------


def test_connect_learns_the_versions_and_a_metadata_round_trip_works(tmp_path):
    async def scenario():
        node, host, port = await _started_broker(tmp_path)
        try:
            conn = await InterBrokerConnection.connect(host, port, client_id="broker-2", timeout_s=10)
            response = await conn.send(3, _metadata(), timeout_s=10)
            facts = conn.peer, dict(conn.versions), response, conn.closed
            await conn.wait_closed()
            return facts, conn.closed
        finally:
            await node.stop()

    (peer, versions, response, closed_before), closed_after = run(scenario())
    assert peer.startswith("127.0.0.1:")
    assert versions[18][0] == 0 and versions[3][1] >= 12
    assert isinstance(response, MetadataResponse)
    assert [b.node_id for b in response.brokers] == [1]
    assert (closed_before, closed_after) == (False, True)


def test_version_for_is_the_highest_both_speak_capped_and_refuses_what_the_peer_lacks(tmp_path):
    async def scenario():
        node, host, port = await _started_broker(tmp_path)
        try:
            conn = await InterBrokerConnection.connect(host, port, client_id="broker-2", timeout_s=10)
            try:
                top, capped = conn.version_for(3), conn.version_for(3, highest=5)
                with pytest.raises(UnsupportedByPeer, match="Fetch v4-"):  # the broker serves Fetch v4+
                    conn.version_for(1, highest=3)
                with pytest.raises(UnsupportedByPeer, match="does not serve BrokerRegistration"):
                    await conn.send(62, BrokerRegistrationRequest(broker_id=2), timeout_s=10)
                still_usable = await conn.send(3, _metadata(), timeout_s=10)
                return conn.versions[3], top, capped, still_usable, conn.closed
            finally:
                await conn.wait_closed()
        finally:
            await node.stop()

    (low, high), top, capped, still_usable, closed = run(scenario())
    assert top == min(high, 13) and capped == 5
    assert isinstance(still_usable, MetadataResponse) and not closed


def test_pipelined_requests_each_get_their_own_answer(tmp_path):
    async def scenario():
        node, host, port = await _started_broker(tmp_path)
        try:
            conn = await InterBrokerConnection.connect(host, port, client_id="broker-2", timeout_s=10)
            names = [f"topic-{i}" for i in range(30)]
            sends = [conn.send(3, _metadata(name), timeout_s=10) for name in names]
            sends.append(conn.send(18, ApiVersionsRequest(), version=0, timeout_s=10))
            answers = await asyncio.gather(*sends)
            await conn.wait_closed()
            return names, answers
        finally:
            await node.stop()

    names, answers = run(scenario())
    assert [a.topics[0].name for a in answers[:-1]] == names
    assert isinstance(answers[-1], ApiVersionsResponse) and answers[-1].error_code == 0


# ---- against misbehaving peers ----------------------------------------------------------------------


def test_a_peer_that_knows_only_api_versions_v0_is_asked_again_at_v0():
    asked = []

    def answer(header, body):
        asked.append(header.request_api_version)
        if header.request_api_key == 18 and header.request_api_version > 2:  # Kafka's answer, in v0 layout
            keys = [ApiVersionsResponse.ApiVersion(api_key=18, min_version=0, max_version=2)]
            return encode_response(18, 0, header.correlation_id, ApiVersionsResponse(35, keys))
        return answer_normally(header, body)

    async def scenario():
        peer = FakePeer(answer)
        host, port = await peer.start()
        conn = await InterBrokerConnection.connect(host, port, client_id="broker-2", timeout_s=5)
        await conn.wait_closed()
        await peer.stop()
        return conn.versions

    assert run(scenario()) == {18: (0, 4), 3: (0, 12)}
    assert asked == [3, 0]


def test_a_peer_closing_mid_request_fails_every_waiting_request_promptly():
    def answer(header, body):
        return CLOSE if header.request_api_key == 3 else answer_normally(header, body)

    async def scenario():
        peer = FakePeer(answer)
        host, port = await peer.start()
        conn = await InterBrokerConnection.connect(host, port, client_id="broker-2", timeout_s=5)
        started = time.monotonic()
        outcomes = await asyncio.gather(
            *(conn.send(3, _metadata(), timeout_s=30) for _ in range(3)), return_exceptions=True
        )
        elapsed = time.monotonic() - started
        with pytest.raises(PeerUnavailable, match="closed by the peer"):
            await conn.send(3, _metadata(), timeout_s=30)  # a closed connection refuses at once
        await peer.stop()
        return outcomes, elapsed, conn.closed

    outcomes, elapsed, closed = run(scenario())
    assert all(isinstance(o, PeerUnavailable) for o in outcomes), outcomes
    assert "closed by the peer" in str(outcomes[0]) and "127.0.0.1:" in str(outcomes[0])
    assert elapsed < 5 and closed


def test_a_silent_peer_times_out_the_connect_and_a_request():
    async def scenario():
        silent = FakePeer(lambda header, body: None)
        host, port = await silent.start()
        with pytest.raises(PeerUnavailable, match="no ApiVersions answer within 0.2s"):
            await InterBrokerConnection.connect(host, port, client_id="broker-2", timeout_s=0.2)
        await silent.stop()

        only_versions = FakePeer(lambda h, b: answer_normally(h, b) if h.request_api_key == 18 else None)
        host, port = await only_versions.start()
        conn = await InterBrokerConnection.connect(host, port, client_id="broker-2", timeout_s=5)
        with pytest.raises(PeerUnavailable, match=r"Metadata v12 had no answer within 0.2s"):
            await conn.send(3, _metadata(), timeout_s=0.2)
        closed = conn.closed
        await only_versions.stop()
        return closed

    assert run(scenario()) is True


@pytest.mark.parametrize(
    "garbage",
    [
        pytest.param(lambda cid: cid.to_bytes(4, "big") + b"\x00", id="undecodable-body"),
        pytest.param(lambda cid: (cid + 1000).to_bytes(4, "big"), id="unknown-correlation-id"),
        pytest.param(lambda cid: b"\x00\x01", id="no-correlation-id"),
    ],
)
def test_a_bad_frame_closes_the_connection_and_fails_every_waiting_request(garbage):
    def answer(header, body):
        if header.request_api_key == 3 and body.topics and body.topics[0].name == "bad":
            return garbage(header.correlation_id)
        return None if header.request_api_key == 3 else answer_normally(header, body)

    async def scenario():
        peer = FakePeer(answer)
        host, port = await peer.start()
        conn = await InterBrokerConnection.connect(host, port, client_id="broker-2", timeout_s=5)
        waiting = asyncio.ensure_future(conn.send(3, _metadata("never-answered"), timeout_s=30))
        await asyncio.sleep(0)
        outcomes = await asyncio.gather(
            conn.send(3, _metadata("bad"), timeout_s=30), waiting, return_exceptions=True
        )
        await peer.stop()
        return outcomes, conn.closed

    outcomes, closed = run(scenario())
    assert all(isinstance(o, PeerUnavailable) for o in outcomes), outcomes
    assert closed


def test_an_oversized_frame_from_the_peer_fails_the_request():
    async def scenario():
        peer = FakePeer(lambda h, b: answer_normally(h, b) if h.request_api_key == 18 else None)
        host, port = await peer.start()
        conn = await InterBrokerConnection.connect(host, port, client_id="broker-2", timeout_s=5)
        peer.writers[0].write((1 << 30).to_bytes(4, "big"))  # a size prefix no frame decoder accepts
        with pytest.raises(PeerUnavailable, match="FrameTooLarge"):
            await conn.send(3, _metadata(), timeout_s=30)
        await peer.stop()

    run(scenario())


# ---- NodeChannel ----------------------------------------------------------------------------------


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_channel_reconnects_after_the_peer_restarts_on_the_same_port():
    async def scenario():
        clock = FakeClock()
        first = FakePeer()
        address = await first.start()
        channel = NodeChannel(address, client_id="broker-2", reconnect_backoff_s=1.0, clock=clock)
        assert isinstance(await channel.send(3, _metadata(), timeout_s=5), MetadataResponse)
        assert channel.version_for(3, highest=9) == 9
        await first.stop()
        with pytest.raises(PeerUnavailable):  # the connection is gone, or the reconnect is refused
            await channel.send(3, _metadata(), timeout_s=5)
        second = FakePeer()
        await second.start(address[1])
        with pytest.raises(PeerUnavailable, match="not reconnecting for another"):
            await channel.send(3, _metadata(), timeout_s=5)
        connections_in_backoff = second.connections
        clock.now += 1.5
        again = await channel.send(3, _metadata(), timeout_s=5)
        channel.close()
        await second.stop()
        return connections_in_backoff, second.connections, again

    in_backoff, after, again = run(scenario())
    assert (in_backoff, after) == (0, 1)
    assert isinstance(again, MetadataResponse)


def test_a_channel_follows_its_address_callable_and_refuses_while_it_is_unknown():
    async def scenario():
        first, second = FakePeer(), FakePeer()
        addresses = [None, await first.start(), await second.start()]
        current = {"address": None}
        channel = NodeChannel(lambda: current["address"], client_id="broker-2")
        with pytest.raises(PeerUnavailable, match="address is not known"):
            await channel.send(3, _metadata(), timeout_s=5)
        with pytest.raises(PeerUnavailable, match="not connected"):
            channel.version_for(3)
        current["address"] = addresses[1]
        await channel.send(3, _metadata(), timeout_s=5)
        await channel.send(3, _metadata(), timeout_s=5)
        current["address"] = addresses[2]  # the node moved: the channel follows
        await channel.send(3, _metadata(), timeout_s=5)
        channel.close()
        await first.stop()
        await second.stop()
        return first.connections, second.connections

    assert run(scenario()) == (1, 1)
