"""Frames in any chunking; requests and responses with their headers; the registry's header quirks."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kconform.codecs import (
    DecodeError,
    FrameDecoder,
    FrameTooLarge,
    api_schema,
    api_schemas,
    decode_request,
    decode_request_header,
    decode_request_lenient,
    decode_response,
    encode_request,
    encode_response,
    peek_correlation_id,
    size_prefixed,
)
from kconform.codecs.messages import ApiVersionsRequest, ApiVersionsResponse, ControlledShutdownRequest
from kconform.codecs.strategies import message


@settings(max_examples=100)
@given(frames=st.lists(st.binary(max_size=300), max_size=8), data=st.data())
def test_frames_come_out_whole_in_any_chunking(frames, data):
    stream = b"".join(size_prefixed(f) for f in frames)
    decoder = FrameDecoder()
    out = []
    pos = 0
    while pos < len(stream):
        step = data.draw(st.integers(1, 64))
        decoder.feed(stream[pos : pos + step])
        out.extend(decoder)
        pos += step
    assert out == frames
    assert decoder.buffered == 0


def test_one_byte_at_a_time():
    frames = [b"a" * 10, b"", b"xyz"]
    decoder = FrameDecoder()
    got = []
    for byte in b"".join(size_prefixed(f) for f in frames):
        decoder.feed(bytes([byte]))
        got.extend(decoder)
    assert got == frames


def test_oversized_and_negative_frames_fail_for_good():
    decoder = FrameDecoder(max_frame_size=1000)
    decoder.feed(b"\x00\x00\x03\xe9")  # 1001
    with pytest.raises(FrameTooLarge, match="1001"):
        decoder.next_frame()
    with pytest.raises(FrameTooLarge):
        decoder.feed(b"more")
    negative = FrameDecoder()
    negative.feed(b"\xff\xff\xff\xfe")
    with pytest.raises(FrameTooLarge):
        list(negative)


@settings(max_examples=200)
@given(data=st.data())
def test_request_and_response_frames_round_trip(data):
    schema = data.draw(st.sampled_from(api_schemas()))
    version = data.draw(st.sampled_from(list(schema.versions)))
    correlation_id = data.draw(st.integers(-(2**31), 2**31 - 1))
    client_id = data.draw(st.none() | st.text(max_size=10))
    body = data.draw(message(schema.request, version))
    frame = encode_request(schema.api_key, version, correlation_id, client_id, body)
    header, decoded = decode_request(frame)
    assert decoded == body
    assert (header.request_api_key, header.request_api_version, header.correlation_id) == (
        schema.api_key,
        version,
        correlation_id,
    )
    if schema.request_header_version(version) >= 1:
        assert header.client_id == client_id
    reply = data.draw(message(schema.response, version))
    rframe = encode_response(schema.api_key, version, correlation_id, reply)
    assert peek_correlation_id(rframe) == correlation_id
    rheader, rdecoded = decode_response(rframe, schema.api_key, version)
    assert rdecoded == reply and rheader.correlation_id == correlation_id


def test_header_versions_and_their_quirks():
    produce = api_schema(0)
    assert produce.request_header_version(8) == 1 and produce.request_header_version(9) == 2
    assert produce.response_header_version(8) == 0 and produce.response_header_version(9) == 1
    # ApiVersions responses always use header v0, so any client can read them
    assert api_schema(18).response_header_version(3) == 0
    frame = encode_response(18, 3, 5, ApiVersionsResponse())
    assert frame[:4] == b"\x00\x00\x00\x05" and frame[4:6] == b"\x00\x00"  # no tagged-field byte after the id
    # ControlledShutdown v0 uses request header v0: no client id at all
    assert api_schema(7).request_header_version(0) == 0
    frame = encode_request(7, 0, 1, "ignored", ControlledShutdownRequest(broker_id=3))
    assert len(frame) == 8 + 4
    header, body = decode_request(frame)
    assert header.client_id == "" and body.broker_id == 3  # the field default, as in Kafka


def test_client_id_keeps_its_two_byte_length_in_flexible_headers():
    frame = encode_request(18, 3, 9, "abc", ApiVersionsRequest(client_software_name="k"))
    assert frame[8:13] == b"\x00\x03abc"  # int16 length even in header v2


def test_header_of_an_unsupported_version_still_decodes():
    frame = bytearray(encode_request(18, 3, 42, "c", ApiVersionsRequest()))
    frame[2:4] = (77).to_bytes(2, "big")  # ApiVersions v77: flexible, so header v2
    header, body_offset = decode_request_header(bytes(frame))
    assert header.request_api_version == 77 and header.correlation_id == 42
    with pytest.raises(DecodeError, match="unsupported version"):
        decode_request(bytes(frame))


def test_unknown_api_key_and_trailing_bytes():
    with pytest.raises(DecodeError, match="unknown API key 999"):
        decode_request(b"\x03\xe7\x00\x00\x00\x00\x00\x01\x00\x00")
    frame = encode_request(18, 0, 1, "c", ApiVersionsRequest())
    with pytest.raises(DecodeError, match="left over"):
        decode_request(frame + b"zz")
    header, body, leftover = decode_request_lenient(frame + b"zz")
    assert leftover == b"zz" and header.correlation_id == 1


def test_body_type_is_checked():
    with pytest.raises(TypeError, match="ApiVersionsRequest"):
        encode_request(18, 0, 1, None, ControlledShutdownRequest())
