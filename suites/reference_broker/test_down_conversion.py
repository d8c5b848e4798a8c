"""Old fetchers on a broker that stores magic 2: Kafka 3.x down-converts for Fetch v0-3, Kafka 4.x
closes the connection on those versions (KIP-896).

Kafka's rules: ``KafkaApis.handleFetchRequest`` picks ``downConvertMagic`` (v0-1: magic 0, v2-3:
magic 1) and ``RecordsUtil.downConvert`` / ``convertRecordBatch`` rebuild each batch (control batches
dropped, headers dropped, codec and timestamp type kept, an uncompressed batch cut to the fetch offset,
zstd refused)."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kconform.codecs.compression import Compression
from kconform.codecs.errors import Errors
from kconform.codecs.messages import CreateTopicsRequest, FetchRequest, ProduceRequest
from kconform.codecs.records import (
    Record,
    TimestampType,
    encode_batch,
    encode_end_txn_marker_batch,
    iter_batches,
)
from kconform.reference_broker.down_conversion import (
    UnsupportedCompressionForDownConversion,
    down_convert,
    fetch_magic,
)
from kconform.reference_broker.process import start_broker_process

from ..support.rawclient import RawClient

TOPIC = "old-clients"


def test_fetch_versions_and_their_magic():
    assert [fetch_magic(v) for v in range(6)] == [0, 0, 1, 1, None, None]


_bytes = st.one_of(st.none(), st.binary(max_size=200))
_records = st.lists(
    st.tuples(
        _bytes,
        _bytes,
        st.integers(0, 2**40),
        st.lists(st.tuples(st.text(max_size=5), st.binary(max_size=5)), max_size=2),
    ),
    min_size=1,
    max_size=8,
)


@settings(max_examples=60)
@given(
    rows=_records,
    base=st.integers(0, 10**6),
    codec=st.sampled_from([Compression.NONE, Compression.GZIP, Compression.SNAPPY, Compression.LZ4]),
    to_magic=st.sampled_from([0, 1]),
    cut=st.integers(0, 8),
    log_append=st.booleans(),
)
def test_down_conversion_keeps_what_the_old_format_can_hold(rows, base, codec, to_magic, cut, log_append):
    records = [Record(base + i, ts, k, v, list(h)) for i, (k, v, ts, h) in enumerate(rows)]
    timestamp_type = TimestampType.LOG_APPEND_TIME if log_append else TimestampType.CREATE_TIME
    batch = encode_batch(
        records, base_offset=base, compression=codec, timestamp_type=timestamp_type, log_append_time=12345
    )
    first = base + min(cut, len(records) - 1)
    # uncompressed legacy messages stand one an entry; a compressed set is one wrapper
    converted = list(iter_batches(down_convert(batch, to_magic, first)))
    assert {(b.magic, b.compression) for b in converted} == {(to_magic, codec)}
    assert len(converted) == 1 or codec is Compression.NONE
    got = [r for b in converted for r in b.records]
    # an uncompressed batch is cut at the fetch offset; a compressed one stays whole
    kept = records if codec is not Compression.NONE else [r for r in records if r.offset >= first]
    assert [(r.offset, r.key, r.value) for r in got] == [(r.offset, r.key, r.value) for r in kept]
    assert all(not r.headers for r in got)
    if to_magic == 0:
        assert all(r.timestamp == -1 for r in got)
    elif log_append:
        assert all(b.timestamp_type is TimestampType.LOG_APPEND_TIME for b in converted)
        assert all(r.timestamp == 12345 for r in got)
    else:
        assert [r.timestamp for r in got] == [r.timestamp for r in kept]


def test_control_batches_vanish_old_batches_pass_and_zstd_is_refused():
    data = encode_batch(
        [Record(0, 5, b"k", b"v")],
        base_offset=0,
        producer_id=7,
        producer_epoch=0,
        base_sequence=0,
        is_transactional=True,
    )
    data += encode_end_txn_marker_batch(
        base_offset=1, producer_id=7, producer_epoch=0, coordinator_epoch=0, commit=True, timestamp=6
    )
    old = encode_batch([Record(2, 7, None, b"old")], magic=1, base_offset=2)
    out = list(iter_batches(down_convert(data + old, 1, 0)))
    assert [b.magic for b in out] == [1, 1] and out[1].records[0].value == b"old"
    zstd = encode_batch([Record(0, 5, b"k", b"v")], compression=Compression.ZSTD)
    with pytest.raises(UnsupportedCompressionForDownConversion):
        down_convert(zstd, 1, 0)
    assert down_convert(zstd, 2, 0) == zstd  # nothing above the target magic: untouched


# ---- live: a magic-1 producer and an old reader ------------------------------------------------


async def _produce_and_fetch(host: str, port: int, fetch_versions: tuple[int, ...]) -> dict:
    async with await RawClient.connect(host, port) as client:
        created = await client.call(
            19,
            1,  # CreateTopics v1: every release from 0.10.2 has it
            CreateTopicsRequest(
                topics=[
                    CreateTopicsRequest.CreatableTopic(name=TOPIC, num_partitions=1, replication_factor=1)
                ]
            ),
        )
        assert created.topics[0].error_code == 0
        # what kafka-go 0.2.1 writes: magic 1 messages with Produce v2
        written = [Record(i, 1_700_000_000_000 + i, f"k{i}".encode(), f"v{i}".encode()) for i in range(5)]
        message_set = encode_batch(written, magic=1)
        produce = ProduceRequest(
            acks=-1,
            timeout_ms=5000,
            topic_data=[
                ProduceRequest.TopicProduceData(
                    name=TOPIC,
                    partition_data=[ProduceRequest.PartitionProduceData(index=0, records=message_set)],
                )
            ],
        )
        answer = await client.call(0, 2, produce)
        assert answer.responses[0].partition_responses[0].error_code == 0
        fates = {}
        for version in fetch_versions:
            fetch = FetchRequest(
                max_wait_ms=0,
                max_bytes=1 << 20,
                topics=[
                    FetchRequest.FetchTopic(
                        topic=TOPIC,
                        partitions=[
                            FetchRequest.FetchPartition(
                                partition=0, fetch_offset=1, partition_max_bytes=1 << 20
                            )
                        ],
                    )
                ],
            )
            reply = await client.request(1, version, fetch, timeout=10)
            assert reply.answered, f"Fetch v{version} was not answered"
            part = reply.body.responses[0].partitions[0]
            fates[version] = (part.error_code, list(iter_batches(part.records)))
        return {"written": written, "fetched": fates}


@pytest.mark.parametrize(
    "release, fetch_versions", [("0.10.2", (0, 2)), ("2.8", (0, 2, 4)), ("3.9", (0, 2, 4))]
)  # Fetch v4 (and magic 2) arrived in 0.11
def test_a_magic_1_producer_reads_back_what_it_wrote(release, fetch_versions, tmp_path):
    node = start_broker_process(tmp_path, kafka_version=release)
    try:
        result = asyncio.run(asyncio.wait_for(_produce_and_fetch(node.host, node.port, fetch_versions), 60))
    finally:
        node.stop()
    written = result["written"][1:]  # fetched from offset 1
    for version, magic in ((0, 0), (2, 1), (4, 2))[: len(fetch_versions)]:
        code, batches = result["fetched"][version]
        assert code == Errors.NONE
        assert {b.magic for b in batches} == {magic}
        got = [(r.offset, r.key, r.value) for b in batches for r in b.records if r.offset >= 1]
        assert got == [(r.offset, r.key, r.value) for r in written]
        if magic == 1:
            assert [r.timestamp for b in batches for r in b.records] == [r.timestamp for r in written]


async def _old_versions_fate(host: str, port: int) -> list[str]:
    fates = []
    for api_key, version, body in ((1, 2, FetchRequest(max_wait_ms=0)), (0, 2, ProduceRequest(acks=1))):
        async with await RawClient.connect(host, port) as client:
            reply = await client.request(api_key, version, body, timeout=10)
            fates.append("closed" if reply.closed else "answered")
    return fates


def test_kafka_4_closes_the_connection_on_fetch_and_produce_v2(tmp_path):
    node = start_broker_process(tmp_path, kafka_version="4.1")
    try:
        assert asyncio.run(_old_versions_fate(node.host, node.port)) == ["closed", "closed"]
    finally:
        node.stop()
