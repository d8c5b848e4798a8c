"""``kconform bench codecs``: our codecs against kio, kafka-python and aiokafka, in the same run.

Cases (as the codec goals state them):
- MetadataResponse v12, 100 topics x 10 partitions, encode and decode;
- FetchResponse at our highest version, 10 partitions x 64 KiB of records, encode and decode;
- a RecordBatch v2 of 1,000 records (16-byte keys, 100-byte values, one header), uncompressed and lz4,
  encode and decode, in records per second.
A peer that is not installed, or lacks a case's version, is reported as skipped, never guessed."""

from __future__ import annotations

import io
import os
import sys
import uuid
from collections.abc import Callable
from datetime import timedelta

from kconform.codecs.engines import NATIVE_AVAILABLE as native_available_flag
from kconform.codecs.engines import pure_python

from .report import Comparison, best_seconds, print_comparisons

TOPICS, PARTITIONS = 100, 10
FETCH_PARTITIONS, FETCH_RECORD_BYTES = 10, 64 * 1024
METADATA_VERSION = 12

_TOPIC_IDS = [uuid.UUID(int=i + 1) for i in range(TOPICS)]


def native_available() -> bool:
    return native_available_flag


def _skip(reason: str) -> None:
    print(f"skipped: {reason}", file=sys.stderr)


# ---- MetadataResponse ---------------------------------------------------------------------------


def _ours_metadata():
    from kconform.codecs.messages import MetadataResponse as M

    value = M(
        brokers=[
            M.MetadataResponseBroker(node_id=i, host=f"broker-{i}.example.com", port=9092, rack=f"rack-{i}")
            for i in range(3)
        ],
        cluster_id="cluster",
        controller_id=1,
        topics=[
            M.MetadataResponseTopic(
                name=f"topic-{t:03d}",
                topic_id=_TOPIC_IDS[t],
                partitions=[
                    M.MetadataResponsePartition(
                        partition_index=p,
                        leader_id=p % 3,
                        leader_epoch=5,
                        replica_nodes=[0, 1, 2],
                        isr_nodes=[0, 1, 2],
                    )
                    for p in range(PARTITIONS)
                ],
            )
            for t in range(TOPICS)
        ],
    )
    encoded = value.encode(METADATA_VERSION)
    return (lambda: value.encode(METADATA_VERSION)), (lambda: M.decode(encoded, METADATA_VERSION)), encoded


def _kafka_python_metadata():
    from kafka.protocol.metadata import MetadataResponse as R

    v = METADATA_VERSION
    T = R.MetadataResponseTopic
    value = R(
        version=v,
        throttle_time_ms=0,
        brokers=[
            R.MetadataResponseBroker(
                version=v, node_id=i, host=f"broker-{i}.example.com", port=9092, rack=f"rack-{i}"
            )
            for i in range(3)
        ],
        cluster_id="cluster",
        controller_id=1,
        authorized_operations=set(),
        topics=[
            T(
                version=v,
                error_code=0,
                name=f"topic-{t:03d}",
                topic_id=_TOPIC_IDS[t],
                is_internal=False,
                authorized_operations=set(),
                partitions=[
                    T.MetadataResponsePartition(
                        version=v,
                        error_code=0,
                        partition_index=p,
                        leader_id=p % 3,
                        leader_epoch=5,
                        replica_nodes=[0, 1, 2],
                        isr_nodes=[0, 1, 2],
                        offline_replicas=[],
                    )
                    for p in range(PARTITIONS)
                ],
            )
            for t in range(TOPICS)
        ],
    )
    encoded = value.encode(version=v)
    return (lambda: value.encode(version=v)), (lambda: R.decode(encoded, version=v)), encoded


def _kio_metadata():
    from kio.schema.errors import ErrorCode
    from kio.schema.metadata.v12 import response as k
    from kio.schema.types import BrokerId, TopicName
    from kio.serial import entity_reader, entity_writer
    from kio.static.primitive import i32

    value = k.MetadataResponse(
        throttle_time=timedelta(0),
        brokers=tuple(
            k.MetadataResponseBroker(
                node_id=BrokerId(i), host=f"broker-{i}.example.com", port=i32(9092), rack=f"rack-{i}"
            )
            for i in range(3)
        ),
        cluster_id="cluster",
        controller_id=BrokerId(1),
        topics=tuple(
            k.MetadataResponseTopic(
                error_code=ErrorCode.none,
                name=TopicName(f"topic-{t:03d}"),
                topic_id=_TOPIC_IDS[t],
                is_internal=False,
                topic_authorized_operations=i32(-2147483648),
                partitions=tuple(
                    k.MetadataResponsePartition(
                        error_code=ErrorCode.none,
                        partition_index=i32(p),
                        leader_id=BrokerId(p % 3),
                        leader_epoch=i32(5),
                        replica_nodes=(BrokerId(0), BrokerId(1), BrokerId(2)),
                        isr_nodes=(BrokerId(0), BrokerId(1), BrokerId(2)),
                        offline_replicas=(),
                    )
                    for p in range(PARTITIONS)
                ),
            )
            for t in range(TOPICS)
        ),
    )
    write, read = entity_writer(k.MetadataResponse), entity_reader(k.MetadataResponse)

    def encode():
        out = io.BytesIO()
        write(out, value)
        return out.getvalue()

    encoded = encode()
    return encode, (lambda: read(encoded, 0)), encoded


# ---- FetchResponse ------------------------------------------------------------------------------


def _fetch_records() -> list[bytes]:
    return [os.urandom(FETCH_RECORD_BYTES) for _ in range(FETCH_PARTITIONS)]


def _ours_fetch(records: list[bytes]):
    from kconform.codecs.messages import FetchResponse as F

    version = F._message_.valid_versions[1]
    value = F(
        responses=[
            F.FetchableTopicResponse(
                topic_id=_TOPIC_IDS[0],
                partitions=[
                    F.PartitionData(
                        partition_index=p,
                        high_watermark=1000,
                        last_stable_offset=1000,
                        log_start_offset=0,
                        aborted_transactions=None,
                        records=records[p],
                    )
                    for p in range(FETCH_PARTITIONS)
                ],
            )
        ]
    )
    encoded = value.encode(version)
    return version, (lambda: value.encode(version)), (lambda: F.decode(encoded, version)), encoded


def _kio_fetch(version: int, records: list[bytes]):
    import importlib

    from kio.schema.errors import ErrorCode
    from kio.serial import entity_reader, entity_writer
    from kio.static.primitive import i32, i64

    k = importlib.import_module(f"kio.schema.fetch.v{version}.response")
    value = k.FetchResponse(
        throttle_time=timedelta(0),
        error_code=ErrorCode.none,
        session_id=i32(0),
        responses=(
            k.FetchableTopicResponse(
                topic_id=_TOPIC_IDS[0],
                partitions=tuple(
                    k.PartitionData(
                        partition_index=i32(p),
                        error_code=ErrorCode.none,
                        high_watermark=i64(1000),
                        last_stable_offset=i64(1000),
                        log_start_offset=i64(0),
                        aborted_transactions=None,
                        records=records[p],
                    )
                    for p in range(FETCH_PARTITIONS)
                ),
            ),
        ),
        node_endpoints=(),
    )
    write, read = entity_writer(k.FetchResponse), entity_reader(k.FetchResponse)

    def encode():
        out = io.BytesIO()
        write(out, value)
        return out.getvalue()

    encoded = encode()
    return encode, (lambda: read(encoded, 0)), encoded


# ---- running ------------------------------------------------------------------------------------


def _compare(
    rows: list[Comparison],
    case: str,
    ours: Callable,
    peer_name: str,
    peer: Callable,
    quick: bool,
    metric: str = "ms",
    per_call_units: float | None = None,
) -> None:
    """Time both and record ms per call, or units per second when ``per_call_units`` is given."""
    min_time = 0.05 if quick else 0.3
    ours_s = best_seconds(ours, min_time=min_time, repeat=2 if quick else 5)
    peer_s = best_seconds(peer, min_time=min_time, repeat=2 if quick else 5)
    if per_call_units is None:
        rows.append(Comparison("codecs", case, metric, ours_s * 1000, peer_name, peer_s * 1000))
    else:
        rows.append(
            Comparison(
                "codecs",
                case,
                metric,
                per_call_units / ours_s,
                peer_name,
                per_call_units / peer_s,
                higher_is_better=True,
            )
        )


def _peer(name: str, build: Callable):
    try:
        return build()
    except ImportError as exc:
        _skip(f"{name} is not installed ({exc}); pip install 'kconform[peers]'")
    except Exception as exc:  # a peer lacking a version or a field: say so and go on
        _skip(f"{name}: {type(exc).__name__}: {exc}")
    return None


def message_rows(quick: bool) -> list[Comparison]:
    rows: list[Comparison] = []
    ours_enc, ours_dec, ours_bytes = _ours_metadata()
    case = f"MetadataResponse v{METADATA_VERSION} {TOPICS}x{PARTITIONS}"
    for name, build in (("kafka-python", _kafka_python_metadata), ("kio", _kio_metadata)):
        peer = _peer(name, build)
        if peer is None:
            continue
        peer_enc, peer_dec, peer_bytes = peer
        if len(peer_bytes) != len(ours_bytes):
            _skip(f"{name}'s MetadataResponse encodes to {len(peer_bytes)} bytes, ours {len(ours_bytes)}")
        _compare(rows, f"{case} encode", ours_enc, name, peer_enc, quick)
        _compare(rows, f"{case} decode", ours_dec, name, peer_dec, quick)
        if name == "kafka-python" and native_available():
            with pure_python():
                _compare(rows, f"{case} decode (pure Python)", ours_dec, name, peer_dec, quick)
    records = _fetch_records()
    version, ours_enc, ours_dec, ours_bytes = _ours_fetch(records)
    case = f"FetchResponse v{version} {FETCH_PARTITIONS}x64KiB"
    peer = _peer("kio", lambda: _kio_fetch(version, records))
    if peer is not None:
        peer_enc, peer_dec, peer_bytes = peer
        if peer_bytes != ours_bytes:
            _skip(
                f"kio's FetchResponse bytes differ from ours ({len(peer_bytes)} vs {len(ours_bytes)} bytes)"
            )
        _compare(rows, f"{case} encode", ours_enc, "kio", peer_enc, quick)
        _compare(rows, f"{case} decode", ours_dec, "kio", peer_dec, quick)
    return rows


def run(*, as_json: bool, quick: bool) -> list[Comparison]:
    rows = message_rows(quick)
    try:
        from .records_bench import record_rows
    except ImportError:
        record_rows = None
    if record_rows is not None:
        rows += record_rows(quick)
    print_comparisons(rows, as_json=as_json, title="kconform bench codecs (ratio > 1: ours is better)")
    return rows
