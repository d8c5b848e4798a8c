"""What the ``kconform.codecs.records`` suites (``codecs/test_records_*.py``) share: the magic/codec
pairs, sample records and their expected decoded form, a Hypothesis strategy for record rows and a
blob of batches of mixed magics."""

from __future__ import annotations

from hypothesis import strategies as st

from kconform.codecs.compression import Compression
from kconform.codecs.records import (
    Record,
    encode_batch,
    iter_batches,
)

__all__ = [
    "MAGIC_CODECS",
    "T0",
    "as_tuples",
    "expected",
    "mixed_blob",
    "record_strategy",
    "sample_records",
]


MAGIC_CODECS = [(magic, codec) for magic in (0, 1, 2) for codec in Compression if codec != 4 or magic == 2]
T0 = 1_700_000_000_000


def sample_records(magic: int, base_offset: int = 0, n: int = 6) -> list[Record]:
    records = []
    for i in range(n):
        key = None if i == 1 else (b"" if i == 4 else b"key-%d" % i)
        value = None if i == 2 else (b"" if i == 5 else b"value-%d-" % i * 20)
        headers = [] if magic < 2 or i % 3 == 0 else [("trace", b"t%d" % i), ("null", None), ("ünï", b"")]
        records.append(Record(base_offset + i, T0 + 5 * i, key, value, headers))
    return records


def expected(records: list[Record], magic: int) -> list[tuple]:
    return [(r.offset, r.timestamp if magic else -1, r.key, r.value, r.headers) for r in records]


def as_tuples(data) -> list[tuple]:
    return [(r.offset, r.timestamp, r.key, r.value, r.headers) for b in iter_batches(data) for r in b.records]


record_strategy = st.tuples(
    st.integers(min_value=0, max_value=1 << 40),
    st.none() | st.binary(max_size=300),
    st.none() | st.binary(max_size=300),
    st.lists(st.tuples(st.text(max_size=10), st.none() | st.binary(max_size=20)), max_size=3),
)


def mixed_blob() -> bytes:
    return b"".join(
        [
            encode_batch(sample_records(0, 0, 2), magic=0),
            encode_batch(sample_records(1, 2, 3), magic=1, compression=Compression.SNAPPY, base_offset=2),
            encode_batch(sample_records(2, 5, 4), compression=Compression.ZSTD, base_offset=5),
            encode_batch(sample_records(1, 9, 2), magic=1, base_offset=9),
            encode_batch(sample_records(2, 11, 3), base_offset=11),
        ]
    )
