"""Mutated, truncated and random bytes never raise anything but DecodeError, and never hang."""

from __future__ import annotations

import signal
from contextlib import contextmanager

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kconform.codecs import DecodeError, decode_request, decode_response, encode_request, encode_response
from kconform.codecs.registry import api_schemas
from kconform.codecs.strategies import all_message_versions, message

PAIRS = all_message_versions()


@contextmanager
def no_hang(seconds: int = 5):
    """Fail, rather than stall the suite, if a decode loops."""

    def _alarm(signum, frame):
        raise AssertionError(f"decode did not finish within {seconds}s")

    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _decode_or_decode_error(cls, data, version):
    with no_hang():
        try:
            cls.decode(data, version)
        except DecodeError:
            pass


@st.composite
def mutated(draw, encoded: bytes) -> bytes:
    data = bytearray(encoded)
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "set", "insert", "delete", "truncate"]))
        if kind == "insert" or not data:
            data[draw(st.integers(0, len(data))) : 0] = draw(st.binary(min_size=1, max_size=8))
            continue
        i = draw(st.integers(0, len(data) - 1))
        if kind == "flip":
            data[i] ^= 1 << draw(st.integers(0, 7))
        elif kind == "set":  # lengths and counts blown up to the extremes
            data[i] = draw(st.sampled_from([0x00, 0x7F, 0x80, 0xFF]))
        elif kind == "delete":
            del data[i]
        else:
            del data[i:]
    return bytes(data)


@pytest.mark.parametrize("pair", PAIRS, ids=[f"{c.__name__}-v{v}" for c, v in PAIRS])
@settings(max_examples=10)
@given(data=st.data())
def test_mutations_raise_only_decode_error(pair, data):
    cls, version = pair
    encoded = data.draw(message(cls, version)).encode(version)
    _decode_or_decode_error(cls, data.draw(mutated(encoded)), version)


@settings(max_examples=300)
@given(
    pair=st.sampled_from(PAIRS),
    junk=st.binary(max_size=64) | st.binary(min_size=4, max_size=16).map(lambda b: b"\xff\xff\xff\x7f" + b),
)
def test_random_bytes_raise_only_decode_error(pair, junk):
    cls, version = pair
    _decode_or_decode_error(cls, junk, version)


@settings(max_examples=300)
@given(frame=st.binary(max_size=48))
def test_random_request_frames(frame):
    with no_hang():
        try:
            decode_request(frame)
        except DecodeError:
            pass


@settings(max_examples=200)
@given(data=st.data())
def test_mutated_request_and_response_frames(data):
    schema = data.draw(st.sampled_from(api_schemas()))
    version = data.draw(st.sampled_from(list(schema.versions)))
    body = data.draw(message(schema.request, version))
    frame = encode_request(schema.api_key, version, 7, "fuzz", body)
    with no_hang():
        try:
            decode_request(data.draw(mutated(frame)))
        except DecodeError:
            pass
    reply = encode_response(schema.api_key, version, 7, data.draw(message(schema.response, version)))
    with no_hang():
        try:
            decode_response(data.draw(mutated(reply)), schema.api_key, version)
        except DecodeError:
            pass


def test_huge_array_count_is_refused_quickly():
    from kconform.codecs.messages import MetadataRequest

    # topics array claiming 2**31-1 elements in a 4-byte body
    with no_hang(2), pytest.raises(DecodeError, match="topics"):
        MetadataRequest.decode(b"\x7f\xff\xff\xff", 1)
