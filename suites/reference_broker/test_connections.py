"""Connection behaviour: pipelined requests answered in order with their correlation ids, the request
size limit, and the idle timeout, each closing only the connection concerned."""

from __future__ import annotations

import asyncio

import pytest

from kconform.codecs import FrameDecoder, decode_response, encode_request, size_prefixed
from kconform.codecs.messages import ApiVersionsRequest, MetadataRequest
from kconform.reference_broker.node import BrokerNode


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


async def _started(tmp_path, **overrides):
    props = {"node.id": "1", "log.dirs": str(tmp_path)}
    props.update(overrides)
    node = BrokerNode.from_config_file(None, props)
    host, port = await node.start("127.0.0.1", 0)
    return node, host, port


async def _read_frames(reader, count: int) -> list[bytes]:
    decoder = FrameDecoder()
    frames: list[bytes] = []
    while len(frames) < count:
        data = await reader.read(65536)
        if not data:
            break
        decoder.feed(data)
        frames.extend(decoder)
    return frames


def test_pipelined_requests_are_answered_in_order(tmp_path):
    async def scenario():
        node, host, port = await _started(tmp_path)
        try:
            reader, writer = await asyncio.open_connection(host, port)
            requests = []
            for correlation_id in range(100, 140):
                if correlation_id % 2:
                    body = ApiVersionsRequest(client_software_name="t", client_software_version="1")
                    requests.append((18, 3, body))
                else:
                    requests.append((3, 12, MetadataRequest(topics=[])))
                api_key, version, body = requests[-1]
                frame = encode_request(api_key, version, correlation_id, "pipeline", body)
                writer.write(size_prefixed(frame))
            await writer.drain()
            frames = await _read_frames(reader, len(requests))
            writer.close()
            return frames, requests
        finally:
            await node.stop()

    frames, requests = run(scenario())
    assert len(frames) == len(requests)
    for correlation_id, frame, (api_key, version, _) in zip(range(100, 140), frames, requests, strict=True):
        header, _body = decode_response(frame, api_key, version)
        assert header.correlation_id == correlation_id


def test_oversized_request_closes_only_that_connection(tmp_path):
    async def scenario():
        node, host, port = await _started(tmp_path, **{"socket.request.max.bytes": "1000"})
        try:
            bad_reader, bad_writer = await asyncio.open_connection(host, port)
            good_reader, good_writer = await asyncio.open_connection(host, port)
            bad_writer.write((5000).to_bytes(4, "big") + b"x" * 100)
            await bad_writer.drain()
            closed = await asyncio.wait_for(bad_reader.read(), 10) == b""
            good_writer.write(size_prefixed(encode_request(18, 0, 7, "ok", ApiVersionsRequest())))
            await good_writer.drain()
            frames = await _read_frames(good_reader, 1)
            good_writer.close()
            return closed, frames
        finally:
            await node.stop()

    closed, frames = run(scenario())
    assert closed
    header, body = decode_response(frames[0], 18, 0)
    assert header.correlation_id == 7 and body.error_code == 0


@pytest.mark.slow
def test_idle_connections_are_closed(tmp_path):
    async def scenario():
        node, host, port = await _started(tmp_path, **{"connections.max.idle.ms": "1000"})
        try:
            reader, writer = await asyncio.open_connection(host, port)
            loop = asyncio.get_running_loop()
            start = loop.time()
            data = await asyncio.wait_for(reader.read(), 10)
            return data, loop.time() - start
        finally:
            await node.stop()

    data, waited = run(scenario())
    assert data == b"" and 0.9 <= waited < 5
