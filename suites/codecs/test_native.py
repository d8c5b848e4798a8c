"""The native codec (``kconform.codecs._speedups``) against the pure-Python one it accelerates.

For every (message, version) pair and for record batches: Hypothesis-generated encodings decode to
the same objects both ways, and mutated or truncated encodings are never accepted natively when the
pure path rejects them (the native decoder gives up and the pure path raises its DecodeError).
The native v2 record encoder writes the pure encoder's bytes, and declines what it is not sure of."""

from __future__ import annotations

import os
import shutil
import sysconfig

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kconform.codecs import DecodeError, _native
from kconform.codecs._v2_writer import v2_body
from kconform.codecs.compression import Compression
from kconform.codecs.records import Record, TimestampType, decode_batch, encode_batch, encode_record_v2
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


# --- the native v2 record encoder ------------------------------------------------------------------
# It must write exactly the bytes the pure-Python encoder writes, and decline (hand the input to the
# pure path) wherever it is not sure to, so errors stay the pure path's too.

# Lengths whose zig-zag varint changes size (63/64 and 8191/8192) and their neighbours.
BOUNDARY_LENGTHS = [0, 1, 62, 63, 64, 65, 127, 128, 8190, 8191, 8192, 8193]
payloads = (
    st.none()
    | st.binary(max_size=80)
    | st.builds(lambda n, fill: bytes([fill]) * n, st.sampled_from(BOUNDARY_LENGTHS), st.integers(0, 255))
)
header_lists = st.none() | st.lists(st.tuples(st.text(max_size=8), payloads), max_size=4)
timestamps = st.integers(-1, 2**41) | st.integers(-(2**63), 2**63 - 1)
# gaps between offsets, so that offset deltas cross the varint boundaries too
gaps = st.integers(1, 3) | st.sampled_from([63, 64, 65, 8191, 8192, 8193, 2**20])
record_rows = st.lists(st.tuples(gaps, timestamps, payloads, payloads, header_lists), max_size=12)


def _records(base_offset: int, rows) -> list[Record]:
    records, offset = [], base_offset - 1
    for gap, ts, key, value, headers in rows:
        offset += gap
        records.append(Record(offset, ts, key, value, headers))
    return records


def _fits_int64(value: int) -> bool:
    return -(2**63) <= value < 2**63


def _pure_encode(records, **kwargs) -> bytes:
    with _native.pure_python():
        return encode_batch(records, **kwargs)


@needs_native
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    rows=record_rows,
    codec=st.sampled_from(list(Compression)),
    base_offset=st.integers(0, 2**40) | st.just(2**63 - 2**21),
    base_timestamp=st.none() | timestamps,
    log_append=st.booleans(),
)
def test_native_encoder_writes_the_pure_encoders_bytes(rows, codec, base_offset, base_timestamp, log_append):
    records = _records(base_offset, rows)
    kwargs = dict(compression=codec, base_offset=base_offset, base_timestamp=base_timestamp)
    if log_append:
        kwargs.update(timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=2**41)
    expected = _pure_encode(records, **kwargs)
    assert encode_batch(records, **kwargs) == expected
    # and the native encoder really wrote them, except where an offset or a timestamp delta leaves the
    # int64 range (the pure path decides those)
    first = base_timestamp if base_timestamp is not None else (records[0].timestamp if records else 0)
    found = _native.encode_records(Record, records, base_offset, base_timestamp)
    if all(_fits_int64(r.offset) and _fits_int64(r.timestamp - first) for r in records):
        assert found is not None, "the native encoder declined valid records"
    if found is not None:
        with _native.pure_python():
            assert found == v2_body(records, base_offset, base_timestamp)
    assert [(r.offset, r.key, r.value) for r in decode_batch(expected).records] == [
        (r.offset, r.key, r.value) for r in records
    ]


@needs_native
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    offset_delta=st.integers(0, 2**31) | st.integers(-(2**70), 2**70),
    timestamp_delta=timestamps | st.integers(-(2**70), 2**70),
    key=payloads,
    value=payloads | st.binary(max_size=8).map(bytearray),
    headers=header_lists | st.lists(st.tuples(st.text(max_size=3), payloads), max_size=2).map(tuple),
)
def test_native_record_encoder_writes_the_pure_encoders_bytes(
    offset_delta, timestamp_delta, key, value, headers
):
    """The producer's path: one record at a time (``encode_record_v2``), sealed by ``seal_v2_batch``."""
    args = (offset_delta, timestamp_delta, key, value, headers)
    with _native.pure_python():
        expected = encode_record_v2(*args)
    found = _native.encode_record(*args)
    if _fits_int64(offset_delta) and _fits_int64(timestamp_delta):
        assert found == expected
    else:
        assert found is None  # beyond an int64 the pure path decides (its varint keeps the low 64 bits)
    assert encode_record_v2(*args) == expected


class _Duck:
    """Not a Record, but with its attributes: the pure encoder takes it, the native one declines."""

    def __init__(self, offset, timestamp, key, value, headers):
        self.offset, self.timestamp, self.key, self.value, self.headers = (
            offset,
            timestamp,
            key,
            value,
            headers,
        )


class _RecordSubclass(Record):
    __slots__ = ()


class _Int(int):
    pass


DECLINED_BUT_VALID = {
    "generator": lambda: (Record(i, i, b"k", b"v") for i in range(3)),
    "tuple of records": lambda: tuple(Record(i, i, b"k", b"v") for i in range(3)),
    "memoryview value": lambda: [Record(0, 1, None, memoryview(b"abc"))],
    "bytes subclass key": lambda: [Record(0, 1, type("B", (bytes,), {})(b"abc"), None)],
    "list header pairs": lambda: [Record(0, 1, None, None, [["k", b"v"], ["k2", None]])],
    "duck-typed records": lambda: [_Duck(0, 1, b"k", b"v", [("h", b"x")])],
    "record subclass": lambda: [_RecordSubclass(0, 1, b"k", b"v")],
    "timestamp delta past int64": lambda: [Record(0, -(2**63), None, None), Record(1, 2**63 - 1, None, None)],
    "bool offsets": lambda: [Record(False, 1, None, None), Record(True, 2, None, None)],
    "int subclass offsets": lambda: [Record(_Int(0), _Int(1), None, None), Record(_Int(1), 2, None, None)],
}


@needs_native
@pytest.mark.parametrize("make", DECLINED_BUT_VALID.values(), ids=list(DECLINED_BUT_VALID))
def test_inputs_the_native_encoder_declines_still_encode_as_the_pure_path(make):
    assert encode_batch(make()) == _pure_encode(make())
    for codec in (Compression.GZIP, Compression.ZSTD):
        assert encode_batch(make(), compression=codec) == _pure_encode(make(), compression=codec)


BAD_RECORDS = {
    "offsets not increasing": lambda: [Record(5, 1, None, None), Record(5, 2, None, None)],
    "offset below the base": lambda: [Record(-1, 1, None, None)],
    "offset delta past int32": lambda: [Record(0, 1, None, None), Record(2**31, 1, None, None)],
    "offset past int64": lambda: [Record(2**64, 1, None, None)],
    "timestamp past int64": lambda: [Record(0, 2**64, None, None)],
    "str value": lambda: [Record(0, 1, None, "text")],
    "bytes header key": lambda: [Record(0, 1, None, None, [(b"k", b"v")])],
    "lone surrogate header key": lambda: [Record(0, 1, None, None, [("\ud800", b"v")])],
    "header of three": lambda: [Record(0, 1, None, None, [("k", b"v", b"w")])],
    "int header value": lambda: [Record(0, 1, None, None, [("k", 5)])],
    "not a record": lambda: [(0, 1, None, None, [])],
}


def _outcome(fn):
    try:
        return fn()
    except Exception as exc:  # the type and message, to compare across the two paths
        return type(exc), str(exc)


@needs_native
@pytest.mark.parametrize("make", BAD_RECORDS.values(), ids=list(BAD_RECORDS))
def test_bad_records_raise_the_pure_encoders_error(make):
    native = _outcome(lambda: encode_batch(make()))
    pure = _outcome(lambda: _pure_encode(make()))
    assert isinstance(pure, tuple) and native == pure


@needs_native
def test_native_encoder_keeps_records_and_references_intact():
    """No reference is leaked or stolen: encoding many times leaves every input's refcount as it was."""
    import sys

    key, value, hkey, hvalue = b"k" * 70, bytearray(b"v" * 9000), "h\u00e9", b"x"
    headers = [(hkey, hvalue)]
    records = [Record(i, i, key, value, headers) for i in range(50)]
    before = [sys.getrefcount(o) for o in (key, value, hkey, hvalue, headers, records[0])]
    for _ in range(200):
        encode_batch(records)
        encode_record_v2(1, 2, key, value, headers)
    after = [sys.getrefcount(o) for o in (key, value, hkey, hvalue, headers, records[0])]
    assert before == after


@needs_native
def test_native_reader_leaves_offsets_past_int64_to_the_pure_path():
    data = encode_batch(
        [Record(2**63 - 1, 2**63 - 1, None, None), Record(2**63 + 4, -(2**63), None, None)],
        base_offset=2**63 - 1,
    )
    assert decode_batch(data) == _pure_batch(data)
    assert decode_batch(data).records[1].offset == 2**63 + 4
