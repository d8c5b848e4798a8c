"""kconform.reference_broker.validation, what Kafka's produce path accepts and how it writes it: batches
kept in place or recompressed, log append time, max timestamps, legacy (Produce v0-2) input converted
to magic 2, properties over generated and mutated batches, and one read of each batch's framing."""

from __future__ import annotations

import asyncio
import sys
from collections import Counter
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kconform.codecs import records as codec_records
from kconform.codecs.compression import Compression
from kconform.codecs.errors import Errors
from kconform.codecs.messages import ProduceRequest
from kconform.codecs.records import (
    Record,
    TimestampType,
    decode_batch_header,
    encode_batch,
    patch_batch_header,
)
from kconform.codecs.strategies import record_batches
from kconform.reference_broker.handlers.produce import produce
from kconform.reference_broker.node import BrokerNode
from kconform.reference_broker.validation import (
    LogValidationConfig,
    RecordsRejected,
    RejectionScope,
    ValidatedAppend,
    validate_produce_records,
)

from ..support.validation_batches import (
    FIELDS,
    LONG_MAX,
    NOW,
    T0,
    assert_partition_error,
    batch,
    decoded,
    forge,
    make_records,
    rejected,
    validate,
)

# --- happy paths ----------------------------------------------------------------------------------------


def test_uncompressed_batch_is_kept_in_place():
    data = batch(producer_id=42, producer_epoch=3, base_sequence=10)
    result = validate(data, first_offset=1000, epoch=9)
    assert result.in_place
    out = bytes(result.records)
    assert out[8:12] == data[8:12] and out[16:] == data[16:]  # only base offset and leader epoch changed
    (b,) = decoded(result)
    assert (b.base_offset, b.partition_leader_epoch, b.last_offset) == (1000, 9, 1002)
    assert [r.offset for r in b.records] == [1000, 1001, 1002]
    assert [(r.key, r.value, r.headers) for r in b.records] == [
        (r.key, r.value, r.headers) for r in make_records()
    ]
    assert (result.first_offset, result.last_offset, result.record_count) == (1000, 1002, 3)
    assert (result.max_timestamp, result.offset_of_max_timestamp, result.log_append_time_ms) == (
        T0 + 2,
        1002,
        -1,
    )
    (info,) = result.batches
    assert (info.first_offset, info.last_offset, info.record_count) == (1000, 1002, 3)
    assert (info.producer_id, info.producer_epoch, info.base_sequence, info.last_sequence) == (42, 3, 10, 12)
    assert not info.is_transactional and not info.is_control and info.has_producer_id


@pytest.mark.parametrize("codec", [c for c in Compression if c])
def test_compressed_batch_is_kept_in_place(codec):
    data = batch(4, compression=codec)
    result = validate(data, compression_type="producer")
    assert result.in_place
    assert bytes(result.records)[61:] == data[61:]  # the producer's compressed bytes
    (b,) = decoded(result)
    assert b.compression == codec and b.base_offset == 100 and b.partition_leader_epoch == 5
    assert result.offset_of_max_timestamp == 103 and result.max_timestamp == T0 + 3
    # LogValidatorTest.testDifferentLevelDoesNotCauseRecompression: only the codec type counts
    levels = {Compression.GZIP: "compression_gzip_level", Compression.LZ4: "compression_lz4_level"}
    level = {levels[codec]: 1} if codec in levels else {}
    same_codec_topic = validate(data, compression_type=codec.name.lower(), **level)
    assert same_codec_topic.in_place and same_codec_topic.records == result.records


@pytest.mark.parametrize(
    ("source", "topic", "target"),
    [
        (Compression.NONE, "lz4", Compression.LZ4),
        (Compression.GZIP, "zstd", Compression.ZSTD),
        (Compression.SNAPPY, "uncompressed", Compression.NONE),
        (Compression.ZSTD, "gzip", Compression.GZIP),
    ],
)
def test_recompression_to_the_topic_codec(source, topic, target):
    data = batch(
        5, compression=source, producer_id=9, producer_epoch=2, base_sequence=40, is_transactional=True
    )
    result = validate(data, compression_type=topic, compression_gzip_level=9)
    assert not result.in_place
    (b,) = decoded(result)
    assert b.compression == target and b.base_offset == 100 and b.partition_leader_epoch == 5
    assert (b.producer_id, b.producer_epoch, b.base_sequence, b.is_transactional) == (9, 2, 40, True)
    expected = make_records(5)
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in b.records] == [
        (100 + i, r.timestamp, r.key, r.value, r.headers) for i, r in enumerate(expected)
    ]
    assert (result.max_timestamp, result.offset_of_max_timestamp) == (T0 + 4, 104)
    assert result.batches[0].last_sequence == 44


@pytest.mark.parametrize("topic", ["producer", "uncompressed", "gzip"])
@pytest.mark.parametrize("codec", [Compression.NONE, Compression.GZIP])
def test_log_append_time(topic, codec):
    data = batch(3, compression=codec)
    result = validate(data, timestamp_type="LogAppendTime", compression_type=topic)
    (b,) = decoded(result)
    assert b.timestamp_type == TimestampType.LOG_APPEND_TIME and b.max_timestamp == NOW
    assert {r.timestamp for r in b.records} == {NOW}
    assert (result.log_append_time_ms, result.max_timestamp, result.offset_of_max_timestamp) == (
        NOW,
        NOW,
        102,
    )
    assert result.batches[0].max_timestamp == NOW


def test_max_timestamp_and_its_offset_as_kafka_computes_them():
    records = [Record(0, T0 + 50, b"k", b"v"), Record(1, T0 + 90, b"k", b"v"), Record(2, T0 + 10, b"k", b"v")]
    for codec in (Compression.NONE, Compression.LZ4):
        result = validate(encode_batch(records, compression=codec))
        assert (result.max_timestamp, result.offset_of_max_timestamp) == (
            T0 + 90,
            102,
        )  # the batch's last offset
        assert decoded(result)[0].max_timestamp == T0 + 90
    no_timestamps = [Record(i, -1, b"k", b"v") for i in range(2)]
    in_place = validate(encode_batch(no_timestamps))
    assert (in_place.max_timestamp, in_place.offset_of_max_timestamp) == (-1, -1)
    compressed = validate(encode_batch(no_timestamps, compression=Compression.GZIP))
    assert (compressed.max_timestamp, compressed.offset_of_max_timestamp) == (-1, 101)  # in place compressed
    rebuilt = validate(encode_batch(no_timestamps, compression=Compression.GZIP), compression_type="lz4")
    assert (rebuilt.max_timestamp, rebuilt.offset_of_max_timestamp) == (-1, -1)  # MemoryRecordsBuilder.info


def test_stale_max_timestamp_is_rewritten_with_a_fresh_crc():
    data = forge(batch(), max_timestamp=T0 - 1000)
    (b,) = decoded(validate(data))  # iter_batches checks the CRC
    assert b.max_timestamp == T0 + 2


def test_non_consecutive_inner_offsets():
    # v2 inner offsets are not checked when kept in place uncompressed; compressed, Kafka rebuilds the batch
    uncompressed = forge(batch(offsets=[0, 1, 3]), last_offset_delta=2)
    result = validate(uncompressed)
    assert result.in_place and [r.offset for r in decoded(result)[0].records] == [100, 101, 103]
    compressed = forge(batch(offsets=[0, 1, 3], compression=Compression.GZIP), last_offset_delta=2)
    result = validate(compressed)
    assert not result.in_place
    (b,) = decoded(result)
    assert [r.offset for r in b.records] == [100, 101, 102] and b.compression == Compression.GZIP


def test_last_sequence_wraps():
    result = validate(batch(3, producer_id=1, producer_epoch=0, base_sequence=2**31 - 2))
    assert result.batches[0].last_sequence == 0


# --- legacy input (Produce v0-2): converted to magic 2 ----------------------------------------------------


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", [Compression.NONE, Compression.GZIP, Compression.LZ4])
def test_legacy_messages_are_converted(magic, codec):
    records = [Record(i, T0 + i, b"k%d" % i, b"v%d" % i) for i in range(3)]
    data = encode_batch(records, magic=magic, compression=codec)
    result = validate(data, version=2)
    assert not result.in_place
    (b,) = decoded(result)
    assert (b.magic, b.compression, b.base_offset, b.partition_leader_epoch) == (2, codec, 100, 5)
    assert [(r.offset, r.key, r.value) for r in b.records] == [
        (100 + i, r.key, r.value) for i, r in enumerate(records)
    ]
    expected_max = T0 + 2 if magic else -1
    assert [r.timestamp for r in b.records] == ([T0, T0 + 1, T0 + 2] if magic else [-1, -1, -1])
    assert (result.max_timestamp, result.offset_of_max_timestamp) == (expected_max, 102 if magic else -1)
    assert result.batches[0].producer_id == -1


def test_legacy_messages_follow_the_topic_codec_and_log_append_time():
    data = encode_batch(make_records(2, keyed=True)[:1], magic=1)
    result = validate(data, version=1, compression_type="zstd", timestamp_type="LogAppendTime")
    (b,) = decoded(result)
    assert b.compression == Compression.ZSTD and b.max_timestamp == NOW and result.log_append_time_ms == NOW


def test_legacy_mixed_with_magic_2_is_refused():
    data = encode_batch(make_records(1), magic=1) + batch()
    assert_partition_error(rejected(data, version=2), Errors.INVALID_RECORD, log_start=True)


def test_v2_batch_is_accepted_below_v3():
    assert validate(batch(), version=0).in_place  # Kafka does not check the magic below v3


# --- properties ------------------------------------------------------------------------------------------

CONFIGS = st.builds(
    LogValidationConfig,
    compression_type=st.sampled_from(["producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"]),
    timestamp_type=st.sampled_from(["CreateTime", "LogAppendTime"]),
    timestamp_after_max_ms=st.just(LONG_MAX),  # generated timestamps reach 2039
)


@settings(max_examples=200)
@given(drawn=record_batches(magics=(2,)), config=CONFIGS, first_offset=st.integers(0, 2**40))
def test_any_valid_batch_validates_and_reads_back(drawn, config, first_offset):
    encoded, records = drawn
    data = bytearray(encoded)
    patch_batch_header(data, base_offset=0)  # a producer always sends base offset 0
    result = validate_produce_records(
        bytes(data),
        produce_version=11,
        config=config,
        now_ms=NOW,
        first_offset=first_offset,
        partition_leader_epoch=3,
    )
    (b,) = decoded(result)
    assert [r.offset for r in b.records] == list(range(first_offset, first_offset + len(records)))
    assert [(r.key, r.value, r.headers) for r in b.records] == [(r.key, r.value, r.headers) for r in records]
    assert (result.first_offset, result.last_offset) == (first_offset, first_offset + len(records) - 1)
    assert b.partition_leader_epoch == 3 and b.base_offset == first_offset
    if config.timestamp_type == "LogAppendTime":
        assert {r.timestamp for r in b.records} == {NOW}
    else:
        assert [r.timestamp for r in b.records] == [r.timestamp for r in records]
        assert result.max_timestamp == max(r.timestamp for r in records) == b.max_timestamp
    header = decode_batch_header(encoded)
    assert (b.producer_id, b.base_sequence, b.is_transactional) == (
        header.producer_id,
        header.base_sequence,
        header.is_transactional,
    )
    # the header handed to the log append, derived rather than read back, is the appended batch's
    assert result.batches[0].header == decode_batch_header(bytes(result.records))


def _mutate(data: bytes, draw) -> bytes:
    kind = draw(st.sampled_from(["flip", "truncate", "insert", "field", "payload"]))
    buf = bytearray(data)
    if kind == "flip" and buf:
        at = draw(st.integers(0, len(buf) - 1))
        buf[at] ^= draw(st.integers(1, 255))
    elif kind == "truncate":
        del buf[draw(st.integers(0, len(buf))) :]
    elif kind == "insert":
        at = draw(st.integers(0, len(buf)))
        buf[at:at] = draw(st.binary(min_size=1, max_size=8))
    elif kind == "field" and len(buf) >= 61 and buf[16] == 2:  # a header field, CRC made valid again
        name = draw(st.sampled_from(sorted(FIELDS)))
        where, fmt = FIELDS[name]
        value = draw(
            st.integers(*{"q": (-(2**63), 2**63 - 1), "i": (-(2**31), 2**31 - 1)}.get(fmt[-1], (-128, 127)))
        )
        if fmt[-1] == "h":
            value = draw(st.integers(-(2**15), 2**15 - 1))
        return forge(bytes(buf), **{name: value})
    elif kind == "payload" and len(buf) > 61 and buf[16] == 2:  # record bytes, CRC made valid again
        at = draw(st.integers(61, len(buf) - 1))
        buf[at] ^= draw(st.integers(1, 255))
        return forge(bytes(buf))
    return bytes(buf)


@settings(max_examples=400)
@given(
    drawn=record_batches(),
    config=CONFIGS,
    version=st.integers(0, 11),
    compacted=st.booleans(),
    data=st.data(),
)
def test_mutated_batches_only_ever_get_records_rejected(drawn, config, version, compacted, data):
    encoded, _ = drawn
    buf = bytearray(encoded)
    if buf[16] == 2:
        patch_batch_header(buf, base_offset=0)
    mutated = bytes(buf)
    for _ in range(data.draw(st.integers(1, 3))):
        mutated = _mutate(mutated, data.draw)
    config = LogValidationConfig(
        compression_type=config.compression_type,
        timestamp_type=config.timestamp_type,
        compacted=compacted,
        timestamp_before_max_ms=data.draw(st.sampled_from([LONG_MAX, 10**12])),
        timestamp_after_max_ms=data.draw(st.sampled_from([LONG_MAX, 3_600_000])),
    )
    try:
        result = validate_produce_records(
            mutated,
            produce_version=version,
            config=config,
            now_ms=NOW,
            first_offset=7,
            partition_leader_epoch=1,
        )
    except RecordsRejected as exc:
        assert isinstance(exc.error_code, int) and exc.scope in RejectionScope
        return
    assert isinstance(result, ValidatedAppend)
    if result.record_count:
        (b,) = decoded(result)
        assert b.base_offset == 7 and len(b.records) == result.record_count
        assert result.batches[0].header == decode_batch_header(bytes(result.records))


def test_rejections_are_plain_values():
    exc = rejected(batch(keyed=False), compacted=True)
    again = eval(repr(exc), {"RecordsRejected": RecordsRejected})
    assert (again.error_code, again.record_errors, again.error_message, again.scope) == (
        exc.error_code,
        exc.record_errors,
        exc.error_message,
        exc.scope,
    )
    import pickle

    assert pickle.loads(pickle.dumps(exc)).record_errors == exc.record_errors


def test_config_is_checked_when_built():
    assert LogValidationConfig(compression_type="GZIP").compression_type == "gzip"
    assert LogValidationConfig().timestamp_after_max_ms == 3_600_000  # Kafka 4.0's default (KIP-1030)
    assert rejected(batch(1, timestamp=NOW + 3_600_001)).error_code == Errors.INVALID_TIMESTAMP
    for bad in (
        dict(compression_type="brotli"),
        dict(timestamp_type="create_time"),
        dict(compression_gzip_level=10),
        dict(compression_zstd_level=23),
        dict(max_message_bytes=-1),
        dict(segment_bytes=13),
        dict(timestamp_after_max_ms=-1),
    ):
        with pytest.raises(ValueError):
            LogValidationConfig(**bad)


# --- the produce path reads each batch's framing once ----------------------------------------------

FRAMING_READERS = ("iter_batch_extents", "iter_batch_headers", "decode_batch_header")


def count_calls(monkeypatch, names) -> Counter:
    """Count calls of the codecs functions ``names`` from anywhere in the reference broker."""
    counts: Counter = Counter()

    def counted(name, original):
        def wrapper(*args, **kwargs):
            counts[name] += 1
            return original(*args, **kwargs)

        return wrapper

    for name in names:
        original = getattr(codec_records, name)
        for module in list(sys.modules.values()):
            holder = getattr(module, "__name__", "")
            if holder.startswith("kconform.reference_broker.") and getattr(module, name, None) is original:
                monkeypatch.setattr(module, name, counted(name, original))
    return counts


@pytest.mark.parametrize(
    "records",
    [
        pytest.param(dict(), id="plain"),
        pytest.param(dict(producer_id=7, producer_epoch=0, base_sequence=0), id="idempotent"),
        pytest.param(dict(compression=Compression.GZIP), id="compressed-in-place"),
    ],
)
def test_one_produce_reads_its_batch_framing_once(tmp_path, monkeypatch, records):
    """Handler, validation and log append share one framing: the batch's header is read once (and its
    records once, by validation), where the handler once read it twice, validation twice more and the
    log once again."""

    def request(batch_bytes: bytes) -> ProduceRequest:
        data = ProduceRequest.PartitionProduceData(index=0, records=batch_bytes)
        topic = ProduceRequest.TopicProduceData(name="orders", partition_data=[data])
        return ProduceRequest(transactional_id=None, acks=1, timeout_ms=5000, topic_data=[topic])

    async def main():
        node = BrokerNode.from_config_file(None, {"node.id": "1", "log.dirs": str(tmp_path / "data")})
        await node.start("127.0.0.1", 0)
        try:
            node.create_topic("orders", node.assign_replicas(1, 1), {})
            ctx = SimpleNamespace(api_version=9)
            first = await produce(node, ctx, request(batch(3, **records)))  # the segment's first batch
            counts = count_calls(monkeypatch, (*FRAMING_READERS, "decode_batch", "iter_record_chunks"))
            more = dict(records, base_sequence=3) if "producer_id" in records else records
            second = await produce(node, ctx, request(batch(3, **more)))
            return first, second, counts
        finally:
            await node.stop()

    first, second, counts = asyncio.run(asyncio.wait_for(main(), 60))
    answers = [r.responses[0].partition_responses[0] for r in (first, second)]
    assert [(a.error_code, a.base_offset) for a in answers] == [(0, 0), (0, 3)]
    assert {name: counts[name] for name in FRAMING_READERS} == {
        "iter_batch_extents": 1,  # the handler's walk over the partition's records
        "iter_batch_headers": 0,  # the log append takes the validated batch's header
        "decode_batch_header": 1,  # the batch's header, CRC checked, in that same walk
    }
    # the records are read once: by validation, or (compressed) read ahead by the handler, which spares
    # validation from reading them again
    read_ahead = "compression" in records
    assert (counts["decode_batch"], counts["iter_record_chunks"]) == ((0, 1) if read_ahead else (1, 0))
