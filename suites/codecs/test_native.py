"""The native decoder (``kconform.codecs._speedups``) against the pure-Python one it accelerates.

For every (message, version) pair and for record batches: Hypothesis-generated encodings decode to
the same objects both ways, and mutated or truncated encodings are never accepted natively when the
pure path rejects them (the native decoder gives up and the pure path raises its DecodeError)."""

from __future__ import annotations

import os
import shutil
import sysconfig

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kconform.codecs import DecodeError, _native
from kconform.codecs.records import Record, decode_batch, encode_batch
from kconform.codecs.strategies import all_message_versions, message

PAIRS = all_message_versions()
needs_native = pytest.mark.skipif(not _native.AVAILABLE, reason="native decoder not built")


def _ids(pair) -> str:
    return f"{pair[0].__name__}-v{pair[1]}"


def _pure(cls, data: bytes, version: int):
    with _native.pure_python():
        message_, end, _ = cls._decode_at(data, 0, version)
    return message_, end


def test_the_extension_is_built_where_a_compiler_is():
    """`pip install` builds it when it can; a silent fallback would hide a broken build."""
    if os.environ.get("KCONFORM_PURE_CODECS"):
        pytest.skip("KCONFORM_PURE_CODECS turns the native decoder off")
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    headers = os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h"))
    if shutil.which(compiler) is None or not headers:
        pytest.skip("no C compiler or Python headers here: the pure-Python codecs are used")
    assert _native.AVAILABLE, "a compiler is present but kconform.codecs._speedups was not built"


@needs_native
@pytest.mark.parametrize("pair", PAIRS, ids=[_ids(p) for p in PAIRS])
@settings(max_examples=5, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_native_decodes_every_message_as_the_pure_path_does(pair, data):
    cls, version = pair
    value = data.draw(message(cls, version))
    encoded = value.encode(version)
    decoder = _native.decoder_for(cls, version)
    found = decoder(memoryview(encoded), 0)
    assert found is not None, "the native decoder gave up on a valid encoding"
    assert found[1] == len(encoded)
    assert found[0] == value == _pure(cls, encoded, version)[0]
    assert type(found[0]) is type(value)


@needs_native
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_native_never_accepts_what_the_pure_path_rejects(data):
    cls, version = data.draw(st.sampled_from(PAIRS))
    encoded = bytearray(data.draw(message(cls, version)).encode(version))
    for _ in range(data.draw(st.integers(1, 4))):
        if encoded and data.draw(st.booleans()):
            encoded[data.draw(st.integers(0, len(encoded) - 1))] = data.draw(st.integers(0, 255))
        else:
            del encoded[data.draw(st.integers(0, len(encoded))) :]
    found = _native.decoder_for(cls, version)(memoryview(bytes(encoded)), 0)
    try:
        expected = _pure(cls, bytes(encoded), version)
    except DecodeError:
        assert found is None, "native accepted an encoding the pure path rejects"
        return
    if found is not None:
        assert found == expected


batches = st.lists(
    st.tuples(
        st.none() | st.binary(max_size=40),
        st.none() | st.binary(max_size=200),
        st.lists(st.tuples(st.text(max_size=6), st.none() | st.binary(max_size=6)), max_size=3),
        st.integers(0, 2**40),
    ),
    min_size=1,
    max_size=20,
)


def _batch(rows, codec: int) -> bytes:
    return encode_batch(
        [Record(5 + i, ts, k, v, h) for i, (k, v, h, ts) in enumerate(rows)], base_offset=5, compression=codec
    )


def _pure_batch(data: bytes):
    with _native.pure_python():
        return decode_batch(data)


@needs_native
@settings(max_examples=200)
@given(batches, st.sampled_from([0, 1, 2, 3, 4]))
def test_native_records_match_the_pure_reader(rows, codec):
    data = _batch(rows, codec)
    assert decode_batch(data) == _pure_batch(data)


@needs_native
@settings(max_examples=300)
@given(batches, st.data())
def test_native_records_never_accept_what_the_pure_reader_rejects(rows, data):
    raw = bytearray(_batch(rows, 0))
    position = data.draw(st.integers(61, len(raw) - 1))  # in the records, past the CRC-checked header
    raw[position] = data.draw(st.integers(0, 255))
    # The records are read whatever the checksum says (the CRC check is the caller's choice).
    try:
        expected = _pure_batch_unchecked(bytes(raw))
    except DecodeError:
        with pytest.raises(DecodeError):
            decode_batch(bytes(raw), verify_crc=False)
        return
    assert decode_batch(bytes(raw), verify_crc=False) == expected


def _pure_batch_unchecked(data: bytes):
    with _native.pure_python():
        return decode_batch(data, verify_crc=False)
