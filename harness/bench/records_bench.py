"""Record-batch cases of ``kconform bench codecs``: ours against kafka-python's pure-Python record code
and aiokafka's Cython record code (the bar our native path has to meet). Where the native codec is
built, our pure-Python path is timed as well, against kafka-python's."""

from __future__ import annotations

import random
import sys

from .report import Comparison, interleaved_best

RECORDS = 1000
KEY_BYTES, VALUE_BYTES = 16, 100
_ALPHABET = b"abcdefghijklmnop"  # compressible, but not trivially


def _workload():
    rng = random.Random(1)
    rows = []
    for i in range(RECORDS):
        key = bytes(rng.choice(_ALPHABET) for _ in range(KEY_BYTES))
        value = bytes(rng.choice(_ALPHABET) for _ in range(VALUE_BYTES))
        rows.append((i, 1_700_000_000_000 + i, key, value, [("trace-id", b"0123456789abcdef")]))
    return rows


def _peer_functions(name: str, builder_cls, reader_cls, rows, codec: int):
    def encode():
        builder = builder_cls(2, codec, 0, -1, -1, -1, 1 << 24)
        for offset, timestamp, key, value, headers in rows:
            builder.append(offset, timestamp=timestamp, key=key, value=value, headers=headers)
        return bytes(builder.build())

    data = encode()

    def decode():  # touch every field, as a consumer would
        return [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in reader_cls(data)]

    return encode, decode, data


def record_rows(quick: bool) -> list[Comparison]:
    from kconform.codecs.compression import Compression
    from kconform.codecs.engines import NATIVE_AVAILABLE as native_available
    from kconform.codecs.engines import pure_python
    from kconform.codecs.records import Record, decode_batch, encode_batch

    rows = _workload()
    records = [Record(*row) for row in rows]
    peers = []
    try:
        from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

        peers.append(("kafka-python", DefaultRecordBatchBuilder, DefaultRecordBatch))
    except ImportError as exc:
        print(f"skipped: kafka-python is not installed ({exc})", file=sys.stderr)
    try:
        from aiokafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

        peers.append(("aiokafka", DefaultRecordBatchBuilder, DefaultRecordBatch))
    except ImportError as exc:
        print(f"skipped: aiokafka is not installed ({exc})", file=sys.stderr)
    out: list[Comparison] = []
    for codec, label in ((Compression.NONE, "uncompressed"), (Compression.LZ4, "lz4")):
        ours_data = encode_batch(records, compression=codec)

        def ours_encode(codec=codec):
            return encode_batch(records, compression=codec)

        def ours_decode(data=ours_data):
            return [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in decode_batch(data).records]

        def ours_decode_pure(data=ours_data):
            with pure_python():
                return ours_decode(data)

        def ours_encode_pure(codec=codec):
            with pure_python():
                return encode_batch(records, compression=codec)

        fns = {"ours encode": ours_encode, "ours decode": ours_decode}
        if native_available:
            assert ours_encode_pure() == ours_data  # both paths write the same bytes
            fns["ours encode (pure Python)"] = ours_encode_pure
            fns["ours decode (pure Python)"] = ours_decode_pure
        for name, builder_cls, reader_cls in peers:
            try:
                encode, decode, data = _peer_functions(name, builder_cls, reader_cls, rows, int(codec))
            except Exception as exc:  # e.g. a peer without its lz4 module
                print(f"skipped: {name} {label}: {type(exc).__name__}: {exc}", file=sys.stderr)
                continue
            # the same batch both ways, or the comparison means nothing
            assert [r[:4] for r in decode()] == [r[:4] for r in ours_decode()]
            fns[f"{name} encode"], fns[f"{name} decode"] = encode, decode
        best = interleaved_best(fns, rounds=5 if quick else 40)
        case = f"RecordBatch v2 {RECORDS} records {label}"
        for op in ("encode", "decode"):
            if native_available and f"kafka-python {op}" in best:
                out.append(
                    Comparison(
                        "codecs",
                        f"{case} {op} (pure Python)",
                        "records/s",
                        RECORDS / best[f"ours {op} (pure Python)"],
                        "kafka-python",
                        RECORDS / best[f"kafka-python {op}"],
                        higher_is_better=True,
                    )
                )
        for name, _b, _r in peers:
            for op in ("encode", "decode"):
                if f"{name} {op}" in best:
                    out.append(
                        Comparison(
                            "codecs",
                            f"{case} {op}",
                            "records/s",
                            RECORDS / best[f"ours {op}"],
                            name,
                            RECORDS / best[f"{name} {op}"],
                            higher_is_better=True,
                        )
                    )
    return out
