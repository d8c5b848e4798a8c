"""Malformed and borderline request frames for the raw-bytes differential, and how two targets' fates
for one frame compare. Sans-I/O: the sending lives in ``frame_runner``.

Every frame starts as a valid request the codecs build (a body drawn by ``kconform.codecs.strategies
.sample`` for an API and version both targets advertise) and is then damaged in one way, a *mutation*.
The same seed gives the same frames, byte for byte; the mutations take turns, so any ``len(MUTATIONS)``
frames in a row hold each mutation once. Each frame says what was done to it (``Frame.description``).

How a target's answer becomes a fate, and how two fates compare, is in ``frame_fates`` (re-exported
here); sending frames and writing the report is ``frame_runner.run_frame_differential``."""

from __future__ import annotations

import random
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kconform.codecs import DEFAULT_MAX_FRAME_SIZE, CodecError, api_schema, api_schemas
from kconform.codecs.messages import ApiVersionsRequest, ProduceRequest, RequestHeader
from kconform.codecs.records import Record, encode_batch, encode_record_v2
from kconform.codecs.spans import FieldSpan, field_spans
from kconform.codecs.strategies import sample

from ..targets.base import common_versions
from .frame_fates import FateDifference, answer_fate, compare_fates, normalise_fate

__all__ = [
    "BASE_APIS",
    "FRAME_TOPIC",
    "MUTATIONS",
    "Frame",
    "FrameSpaceError",
    "FrameSpace",
    "FateDifference",
    "answer_fate",
    "compare_fates",
    "generate_frames",
    "normalise_fate",
]

MUTATIONS = (
    "truncate-field",  # the body cut at a field boundary; the size prefix says the shorter length
    "truncate-anywhere",  # the frame cut at any byte, header included; the size prefix matches
    "size-over",  # a size prefix larger than the bytes that follow (the rest never comes)
    "size-under",  # a size prefix smaller than the request: its tail starts a next frame
    "size-negative",  # a negative size prefix
    "size-over-max",  # only a size prefix, one over socket.request.max.bytes' default
    "zero-length",  # a size prefix of 0 and nothing else
    "unknown-api-key",  # a header naming an API key no Kafka has
    "version-above",  # a version above the highest either target advertises
    "api-versions-unsupported",  # ApiVersions at a version above the highest either target advertises
    "compact-length-negative",  # a compact length prefix Java reads as -2, the field's content dropped
    "compact-length-huge",  # a compact length prefix far past the end of the frame
    "array-count-negative",  # a non-compact array count of -2, the elements dropped
    "record-batch-crc",  # a Produce whose v2 record batch has one record byte flipped
    "trailing-bytes",  # bytes after the body, counted in the size prefix
)

# The APIs frames start from: each is answered at once whatever its body holds (no long poll, no
# rebalance to wait for, no coordinator to load), so a fate is the frame's doing, not timing's.
BASE_APIS = (0, 1, 2, 3, 18, 22, 23)  # Produce Fetch ListOffsets Metadata ApiVersions InitProducerId OLE
# Fields set after sampling so that no request waits, creates topics or joins a transaction.
_TAME: dict[int, dict[str, Any]] = {
    0: {"acks": 1, "timeout_ms": 1000},
    1: {"max_wait_ms": 0},
    3: {"allow_auto_topic_creation": False},
    22: {"transactional_id": None},
}
FRAME_TOPIC = "kconform-frames"  # created on both targets: the record-batch frames produce to it
CLIENT_ID = "kconform-frames"
NO_HEADER = -1  # api key and version of a frame that carries no request header
_PRODUCE, _API_VERSIONS = 0, 18
_PRODUCE_V2_BATCHES = (3, 12)  # record batches v2 from Produce v3; v13 names topics by id only
_SIZE = struct.Struct(">i")
_HUGE_LENGTHS = (0x8001, 0x10000, 0x7FFFFFFE)  # every one far past the end of any frame built here


class FrameSpaceError(ValueError):
    """The targets share nothing a frame can be built from."""


@dataclass(frozen=True, slots=True)
class Frame:
    index: int
    mutation: str
    api_key: int  # as the header says (NO_HEADER when there is none)
    api_version: int
    data: bytes  # every byte written to the connection, size prefix included
    answer_as: tuple[int, int] | None  # (API key, version) an answer is laid out in, if one can be read
    detail: str = ""

    @property
    def api_name(self) -> str:
        if self.api_key == NO_HEADER and self.api_version == NO_HEADER:
            return "no-header"
        try:
            return api_schema(self.api_key).name
        except KeyError:
            return "unknown"

    @property
    def description(self) -> str:
        version = "" if self.api_name == "no-header" else f" v{self.api_version}"
        return f"{self.mutation} {self.api_name}{version}" + (f": {self.detail}" if self.detail else "")


@dataclass(frozen=True, slots=True)
class FrameSpace:
    """What frames are built from: the (API, version range) both targets advertise, and the highest
    version either advertises of each API (one above it is unsupported by both)."""

    common: dict[int, tuple[int, int]]
    highest: dict[int, int]
    topic: str = FRAME_TOPIC

    @classmethod
    def of(cls, a: dict[int, tuple[int, int]], b: dict[int, tuple[int, int]], topic: str = FRAME_TOPIC):
        shared, _ = common_versions(a, b)
        highest = {key: max(r[1] for r in (a.get(key), b.get(key)) if r) for key in set(a) | set(b)}
        return cls(shared, highest, topic)

    def base_ranges(self) -> dict[int, tuple[int, int]]:
        """The base APIs both targets offer, cut to the versions the codecs know."""
        out = {}
        for key in BASE_APIS:
            if key in self.common:
                schema = api_schema(key)
                lo, hi = (
                    max(self.common[key][0], schema.min_version),
                    min(self.common[key][1], schema.max_version),
                )
                if lo <= hi:
                    out[key] = (lo, hi)
        return out


def generate_frames(count: int, seed: int, space: FrameSpace) -> list[Frame]:
    """``count`` frames, the same for the same seed and space. A mutation this space cannot express
    (no non-flexible version both targets offer, for a non-compact array count) is left out."""
    ranges = space.base_ranges()
    if not ranges:
        names = ", ".join(api_schema(k).name for k in BASE_APIS)
        raise FrameSpaceError(f"the targets share no version of any API frames are built from ({names})")
    rng = random.Random(seed)
    usable = list(MUTATIONS)
    frames: list[Frame] = []
    turn: list[str] = []
    while len(frames) < count:
        if not turn:
            turn = list(usable)
            rng.shuffle(turn)
        mutation = turn.pop()
        frame = _BUILDERS[mutation](_Draw(rng, space, ranges, len(frames)))
        if frame is None:
            usable.remove(mutation)
            if not usable:
                raise FrameSpaceError("no mutation can be built from the versions both targets offer")
            continue
        frames.append(frame)
    return frames


# ---- building blocks --------------------------------------------------------------------------------


@dataclass(slots=True)
class _Draw:
    rng: random.Random
    space: FrameSpace
    ranges: dict[int, tuple[int, int]]
    index: int

    @property
    def correlation_id(self) -> int:
        return self.index + 1

    def header(self, api_key: int, version: int, header_version: int) -> bytes:
        return RequestHeader(
            request_api_key=api_key,
            request_api_version=version,
            correlation_id=self.correlation_id,
            client_id=CLIENT_ID,
        ).encode(header_version)

    def base(self, wanted: Callable[[_Base], bool] = lambda base: True, tries: int = 40) -> _Base | None:
        """A valid request of a base API at a version both targets offer, that ``wanted`` accepts."""
        for _ in range(tries):
            api_key = self.rng.choice(sorted(self.ranges))
            version = self.rng.randint(*self.ranges[api_key])
            base = self.request(api_key, version)
            if base is not None and wanted(base):
                return base
        return None

    def request(self, api_key: int, version: int, body: Any = None) -> _Base | None:
        schema = api_schema(api_key)
        if body is None:
            body = sample(schema.request, version, self.rng)
            for attr, value in _TAME.get(api_key, {}).items():
                if any(f.attr == attr and f.present(version) for f in schema.request._fields_):
                    setattr(body, attr, value)
        try:
            encoded = body.encode(version)
        except CodecError:  # a drawn value the version cannot carry: draw again
            return None
        header = self.header(api_key, version, schema.request_header_version(version))
        return _Base(api_key, version, header, encoded, schema.request)

    def frame(self, mutation: str, base: _Base, data: bytes, detail: str, answer_as=True) -> Frame:
        answer = (base.api_key, base.version) if answer_as is True else answer_as
        return Frame(self.index, mutation, base.api_key, base.version, data, answer, detail)


@dataclass(frozen=True, slots=True)
class _Base:
    api_key: int
    version: int
    header: bytes
    body: bytes
    cls: type

    @property
    def payload(self) -> bytes:
        return self.header + self.body

    def spans(self) -> list[FieldSpan]:
        return field_spans(self.cls, self.body, self.version)

    def damageable(self, compact: bool, kinds: tuple[str, ...]) -> list[FieldSpan]:
        """Length-prefixed fields of ``kinds``, in the encoding asked for, outside any tagged field."""
        spans = self.spans()
        tagged = [(s.start, s.end) for s in spans if s.tagged]
        return [
            s
            for s in spans
            if s.length_prefixed
            and s.compact == compact
            and s.kind in kinds
            and not any(lo <= s.start < hi for lo, hi in tagged)
        ]


def _framed(payload: bytes) -> bytes:
    return _SIZE.pack(len(payload)) + payload


# ---- the mutations ----------------------------------------------------------------------------------


def _truncate_field(d: _Draw) -> Frame | None:
    base = d.base(lambda b: len(b.body) > 0)
    if base is None:
        return None
    spans = base.spans()
    cuts = sorted({s.start for s in spans} | {s.end for s in spans} | {0})
    cut = d.rng.choice([c for c in cuts if c < len(base.body)])
    before = next((s.path for s in spans if s.start == cut), None)
    after = next((s.path for s in spans if s.end == cut), None)
    where = f"cut before {before}" if before else f"cut after {after}" if after else "cut before the body"
    detail = f"{where} ({cut} of {len(base.body)} body bytes kept)"
    return d.frame("truncate-field", base, _framed(base.header + base.body[:cut]), detail)


def _truncate_anywhere(d: _Draw) -> Frame | None:
    base = d.base()
    payload = base.payload
    cut = d.rng.randint(1, len(payload) - 1)
    inside = " (inside the header)" if cut < len(base.header) else ""
    return d.frame(
        "truncate-anywhere", base, _framed(payload[:cut]), f"{cut} of {len(payload)} bytes kept{inside}"
    )


def _size_over(d: _Draw) -> Frame | None:
    base = d.base()
    extra = d.rng.randint(1, 64)
    size = len(base.payload) + extra
    detail = f"size prefix {size} for {len(base.payload)} bytes"
    return d.frame("size-over", base, _SIZE.pack(size) + base.payload, detail)


def _size_under(d: _Draw) -> Frame | None:
    base = d.base(lambda b: len(b.body) > 0)
    if base is None:
        return None
    short = d.rng.randint(1, min(len(base.body), 8))
    size = len(base.payload) - short
    detail = f"size prefix {size} for {len(base.payload)} bytes (the last {short} start a next frame)"
    return d.frame("size-under", base, _SIZE.pack(size) + base.payload, detail)


def _size_negative(d: _Draw) -> Frame | None:
    base = d.base()
    size = d.rng.choice((-1, -2, -(2**31)))
    return d.frame("size-negative", base, _SIZE.pack(size) + base.payload, f"size prefix {size}", None)


def _size_over_max(d: _Draw) -> Frame | None:
    size = DEFAULT_MAX_FRAME_SIZE + 1
    detail = f"size prefix {size} (socket.request.max.bytes default + 1), nothing after it"
    return Frame(d.index, "size-over-max", NO_HEADER, NO_HEADER, _SIZE.pack(size), None, detail)


def _zero_length(d: _Draw) -> Frame | None:
    return Frame(d.index, "zero-length", NO_HEADER, NO_HEADER, _SIZE.pack(0), None, "size prefix 0")


def _unknown_api_key(d: _Draw) -> Frame | None:
    known = {s.api_key for s in api_schemas()} | set(d.space.highest)
    key = 0
    while key in known:
        key = d.rng.choice((-1, -(2**15), d.rng.randint(1000, 2**15 - 1)))
    version = d.rng.randint(0, 3)
    body = d.rng.randbytes(d.rng.randint(0, 16))
    data = _framed(d.header(key, version, 1) + body)
    return Frame(d.index, "unknown-api-key", key, version, data, None, f"API key {key}")


def _version_above(d: _Draw) -> Frame | None:
    choices = [k for k in d.ranges if k != _API_VERSIONS and d.space.highest.get(k, 2**15) < 2**15 - 1]
    if not choices:
        return None
    api_key = d.rng.choice(sorted(choices))
    schema = api_schema(api_key)
    version = d.space.highest[api_key] + 1
    known = schema.supports(version)
    for _ in range(10):  # the body of that version if the codecs know it, else of their newest
        base = d.request(api_key, version if known else schema.max_version)
        if base is not None:
            break
    else:
        return None
    data = _framed(d.header(api_key, version, schema.request_header_version(version)) + base.body)
    detail = f"highest advertised is v{version - 1}" + ("" if known else f"; body of v{schema.max_version}")
    return Frame(
        d.index, "version-above", api_key, version, data, (api_key, version) if known else None, detail
    )


def _api_versions_unsupported(d: _Draw) -> Frame | None:
    highest = d.space.highest.get(_API_VERSIONS)
    if highest is None or highest >= 2**15 - 1:
        return None
    version = d.rng.choice((highest + 1, d.rng.randint(highest + 1, 2**15 - 1)))
    # As a KIP-511 client sends it: its newest body (v3+, flexible), at a version the broker lacks.
    body = ApiVersionsRequest(client_software_name="kconform", client_software_version="0.1").encode(3)
    schema = api_schema(_API_VERSIONS)
    data = _framed(d.header(_API_VERSIONS, version, schema.request_header_version(version)) + body)
    detail = f"highest advertised is v{highest}; body of v3"
    return Frame(
        d.index, "api-versions-unsupported", _API_VERSIONS, version, data, (_API_VERSIONS, 0), detail
    )


def _replace(d: _Draw, mutation: str, compact: bool, kinds: tuple[str, ...], damage) -> Frame | None:
    base = d.base(lambda b: bool(b.damageable(compact, kinds)))
    if base is None:
        return None
    span = d.rng.choice(base.damageable(compact, kinds))
    body, what = damage(base.body, span)
    nullable = "nullable" if span.nullable else "not nullable"
    return d.frame(
        mutation, base, _framed(base.header + body), f"{span.path} ({nullable} {span.kind}): {what}"
    )


def _compact_length_negative(d: _Draw) -> Frame | None:
    def damage(body: bytes, span: FieldSpan):
        # varint 0xfffffffe: readUnsignedVarint gives -2 (an int), the length -3
        prefix = span.prefix_for(-3)
        return body[: span.start] + prefix + body[span.end :], f"length prefix {prefix.hex()}, no content"

    return _replace(d, "compact-length-negative", True, ("string", "bytes", "records", "array"), damage)


def _compact_length_huge(d: _Draw) -> Frame | None:
    def damage(body: bytes, span: FieldSpan):
        length = d.rng.choice(_HUGE_LENGTHS)
        prefix = span.prefix_for(length)
        return body[: span.start] + prefix + body[span.prefix_end :], f"length {length}, content kept"

    return _replace(d, "compact-length-huge", True, ("string", "bytes", "records", "array"), damage)


def _array_count_negative(d: _Draw) -> Frame | None:
    def damage(body: bytes, span: FieldSpan):
        return body[: span.start] + span.prefix_for(-2) + body[span.end :], "count -2, no elements"

    return _replace(d, "array-count-negative", False, ("array",), damage)


def _record_batch_crc(d: _Draw) -> Frame | None:
    span = d.ranges.get(_PRODUCE)
    if span is None:
        return None
    lo, hi = max(span[0], _PRODUCE_V2_BATCHES[0]), min(span[1], _PRODUCE_V2_BATCHES[1])
    if lo > hi:
        return None
    version = d.rng.randint(lo, hi)
    stamp = 1_700_000_000_000
    rows = [(d.rng.randbytes(4), d.rng.randbytes(d.rng.randint(4, 24))) for _ in range(d.rng.randint(1, 3))]
    batch = bytearray(encode_batch([Record(i, stamp, k, v) for i, (k, v) in enumerate(rows)]))
    # The records are the batch's last bytes (uncompressed), all covered by the CRC-32C.
    records = sum(len(encode_record_v2(i, 0, k, v, [])) for i, (k, v) in enumerate(rows))
    at = len(batch) - d.rng.randint(1, records)
    batch[at] ^= d.rng.randint(1, 255)
    partition = ProduceRequest.PartitionProduceData(index=0, records=bytes(batch))
    topic = ProduceRequest.TopicProduceData(name=d.space.topic, partition_data=[partition])
    body = ProduceRequest(transactional_id=None, acks=1, timeout_ms=1000, topic_data=[topic])
    base = d.request(_PRODUCE, version, body)
    if base is None:
        return None
    detail = f"byte {at} of a {len(batch)}-byte batch to {d.space.topic} flipped"
    return d.frame("record-batch-crc", base, _framed(base.payload), detail)


def _trailing_bytes(d: _Draw) -> Frame | None:
    base = d.base()
    extra = d.rng.randbytes(d.rng.randint(1, 16))
    return d.frame(
        "trailing-bytes", base, _framed(base.payload + extra), f"{len(extra)} bytes after the body"
    )


_BUILDERS: dict[str, Callable[[_Draw], Frame | None]] = {
    "truncate-field": _truncate_field,
    "truncate-anywhere": _truncate_anywhere,
    "size-over": _size_over,
    "size-under": _size_under,
    "size-negative": _size_negative,
    "size-over-max": _size_over_max,
    "zero-length": _zero_length,
    "unknown-api-key": _unknown_api_key,
    "version-above": _version_above,
    "api-versions-unsupported": _api_versions_unsupported,
    "compact-length-negative": _compact_length_negative,
    "compact-length-huge": _compact_length_huge,
    "array-count-negative": _array_count_negative,
    "record-batch-crc": _record_batch_crc,
    "trailing-bytes": _trailing_bytes,
}
