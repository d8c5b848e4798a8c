"""Hypothesis strategies for any message at any version, built from the generated schema.

``messages(ProduceRequest, 9)`` draws ProduceRequest values that are valid at version 9: fields the
version lacks keep their defaults, nullable fields are sometimes None, flexible structs sometimes carry
unknown tagged fields. ``all_message_versions()`` lists every (class, version) pair the codecs know."""

from __future__ import annotations

from functools import cache
from uuid import UUID

from hypothesis import strategies as st

from ._schema import FieldSchema
from .messages import message_class
from .messages._index import MODULE_OF

__all__ = [
    "boundary_lengths",
    "sized_binary",
    "sized_lists",
    "sized_text",
    "records",
    "record_batches",
    "message",
    "request",
    "response",
    "all_message_versions",
    "field_value",
    "sample",
]

_INT_BOUNDS = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
}


def all_message_versions() -> list[tuple[type, int]]:
    """Every (message class, version) the definitions give: headers, data messages, and the coordinator
    and KRaft metadata records included."""
    from . import coordinator_records, metadata_records

    classes = [message_class(name) for name in sorted(MODULE_OF)]
    for package in (coordinator_records, metadata_records):
        classes += [getattr(package, name) for name in sorted(package.MODULE_OF)]
    return [(cls, version) for cls in classes for version in cls._message_.versions]


# Lengths around the points where a length prefix grows a byte: a compact (unsigned varint, length + 1)
# prefix at 127/128 and 16383/16384, an int16 string length's top at 32767, and the empty value.
_COMPACT_EDGES = (0, 1, 125, 126, 127, 128, 129)
_WIDE_EDGES = (16382, 16383, 16384)


def boundary_lengths(*, wide: bool = False) -> st.SearchStrategy:
    """Lengths either side of the varint length-prefix boundaries (``wide`` adds the two-byte one)."""
    return st.sampled_from(_COMPACT_EDGES + (_WIDE_EDGES if wide else ()))


def sized_text(max_size: int) -> st.SearchStrategy:
    """Short strings mostly, and now and then one whose UTF-8 length sits on a length boundary."""
    edge = boundary_lengths().map(lambda n: "k" * n)
    return st.one_of(st.text(max_size=max_size), st.text(max_size=max_size), edge)


def sized_binary(max_size: int) -> st.SearchStrategy:
    edge = st.tuples(boundary_lengths(wide=True), st.binary(min_size=1, max_size=1)).map(
        lambda t: t[1] * t[0]
    )
    return st.one_of(st.binary(max_size=max_size), st.binary(max_size=max_size), edge)


def sized_lists(element: st.SearchStrategy, max_list: int, *, scalar: bool) -> st.SearchStrategy:
    """Short lists mostly; for scalar elements, now and then one of 126-129 (a compact array length
    prefix crossing into two bytes)."""
    short = st.lists(element, max_size=max_list)
    if not scalar:
        return short
    return st.one_of(short, short, st.lists(element, min_size=126, max_size=129))


def _scalar(kind: str, max_size: int) -> st.SearchStrategy:
    if kind in _INT_BOUNDS:
        lo, hi = _INT_BOUNDS[kind]
        return st.integers(lo, hi)
    if kind == "bool":
        return st.booleans()
    if kind == "float64":
        return st.floats(allow_nan=False)
    if kind == "uuid":
        return st.binary(min_size=16, max_size=16).map(lambda b: UUID(bytes=b))
    if kind == "string":
        return sized_text(max_size)
    if kind in ("bytes", "records"):
        return sized_binary(max_size * 4)
    raise ValueError(f"no strategy for {kind}")


def field_value(f: FieldSchema, version: int, flexible: bool, max_list: int = 3) -> st.SearchStrategy:
    """Values of one field that are valid at ``version``."""
    kind = f.element_type
    scalar = not kind[:1].isupper()
    if scalar:
        element = _scalar(kind, max_size=12)
    else:
        element = _struct(f.struct, version, flexible, max_list)
    value = sized_lists(element, max_list, scalar=scalar) if f.is_array else element
    if f.nullable(version):
        value = st.none() | value
    return value


@cache
def _struct(cls: type, version: int, flexible: bool, max_list: int) -> st.SearchStrategy:
    kwargs = {}
    known_tags = set()
    for f in cls._fields_:
        if f.tag is not None and f.tagged(version):
            known_tags.add(f.tag)
            kwargs[f.attr] = field_value(f, version, flexible, max_list)
        elif f.present(version) and f.tag is None:
            kwargs[f.attr] = field_value(f, version, flexible, max_list)
    if flexible and "unknown_tagged_fields" in cls.__dataclass_fields__:
        tag = st.integers(0, 300).filter(lambda t: t not in known_tags)
        kwargs["unknown_tagged_fields"] = st.dictionaries(tag, st.binary(max_size=8), max_size=2).map(
            lambda d: tuple(sorted(d.items()))
        )
    return st.builds(cls, **kwargs)


def message(cls: type | str, version: int, *, max_list: int = 3) -> st.SearchStrategy:
    """Instances of ``cls`` (a class or its spec name) valid at ``version``."""
    if isinstance(cls, str):
        cls = message_class(cls)
    schema = cls._message_
    if version not in schema.versions:
        raise ValueError(f"{schema.name} has no version {version}")
    return _struct(cls, version, schema.flexible(version), max_list)


def request(api_key: int, version: int, **kwargs) -> st.SearchStrategy:
    from .registry import api_schema

    return message(api_schema(api_key).request, version, **kwargs)


def response(api_key: int, version: int, **kwargs) -> st.SearchStrategy:
    from .registry import api_schema

    return message(api_schema(api_key).response, version, **kwargs)


# ---- record batches -------------------------------------------------------------------------------


def records(*, magic: int = 2, max_records: int = 5, base_offset: int = 0) -> st.SearchStrategy:
    """Lists of ``Record`` with consecutive offsets from ``base_offset``, valid for ``magic``."""
    from .records import Record

    timestamps = st.integers(0, 2**41) if magic > 0 else st.just(-1)
    header = st.tuples(st.text(max_size=8), st.none() | st.binary(max_size=8))
    headers = st.lists(header, max_size=2) if magic == 2 else st.just([])
    one = st.tuples(
        timestamps, st.none() | st.binary(max_size=16), st.none() | st.binary(max_size=32), headers
    )
    return st.lists(one, min_size=1, max_size=max_records).map(
        lambda rows: [Record(base_offset + i, *row) for i, row in enumerate(rows)]
    )


@st.composite
def record_batches(draw, *, magics=(0, 1, 2), max_records: int = 5) -> tuple[bytes, list]:
    """``(encoded batch, its records)`` for any magic and compression codec the magic allows."""
    from .compression import Compression
    from .records import encode_batch

    magic = draw(st.sampled_from(magics))
    codecs = [c for c in Compression if magic == 2 or c != Compression.ZSTD]
    compression = draw(st.sampled_from(codecs))
    base_offset = draw(st.integers(0, 2**40))
    drawn = draw(records(magic=magic, max_records=max_records, base_offset=base_offset))
    kwargs = {}
    if magic == 2 and draw(st.booleans()):
        kwargs = dict(
            producer_id=draw(st.integers(0, 2**62)),
            producer_epoch=draw(st.integers(0, 2**15 - 1)),
            base_sequence=draw(st.integers(0, 2**31 - 1 - len(drawn))),
            is_transactional=draw(st.booleans()),
        )
    encoded = encode_batch(drawn, magic=magic, compression=compression, base_offset=base_offset, **kwargs)
    return encoded, drawn


# ---- plain random samples (no Hypothesis engine), for self-checks and benchmarks -------------------


def sample(cls: type, version: int, rng, *, max_list: int = 3):
    """One value of ``cls`` valid at ``version``, drawn from ``rng`` (a ``random.Random``): every field
    the version carries is filled, so a round trip exercises all of them."""
    return _sample_struct(cls, version, cls._message_.flexible(version), rng, max_list)


def _sample_struct(cls, version, flexible, rng, max_list):
    kwargs = {}
    for f in cls._fields_:
        if (f.tag is not None and f.tagged(version)) or (f.tag is None and f.present(version)):
            kwargs[f.attr] = _sample_field(f, version, flexible, rng, max_list)
    return cls(**kwargs)


def _sample_field(f: FieldSchema, version, flexible, rng, max_list):
    if f.nullable(version) and rng.random() < 0.2:
        return None
    kind = f.element_type

    def one():
        if kind[:1].isupper():
            return _sample_struct(f.struct, version, flexible, rng, max_list)
        return _sample_scalar(kind, rng)

    if f.is_array:
        return [one() for _ in range(rng.randint(1, max_list))]
    return one()


def _sample_scalar(kind, rng):
    if kind in _INT_BOUNDS:
        lo, hi = _INT_BOUNDS[kind]
        return rng.choice([lo, hi, 0, 1, -1 if lo < 0 else 2, rng.randint(lo, hi)])
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "float64":
        return rng.uniform(-1e9, 1e9)
    if kind == "uuid":
        return UUID(int=rng.getrandbits(128))
    if kind == "string":
        return "".join(rng.choice("abcxyz-_.é€") for _ in range(rng.randint(0, 12)))
    return bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 24)))
