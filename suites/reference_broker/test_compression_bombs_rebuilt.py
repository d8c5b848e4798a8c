"""Compression bombs whose records the read-ahead must judge or rewrite, not only count: batches with
record errors (LogValidator.validateRecord, processRecordErrors) and batches that are rebuilt
(LogValidator.validateMessagesAndAssignOffsetsCompressed: the topic's codec differs, or the inner
offsets are out of step; buildRecordsAndAssignOffsets). Read ahead with the topic's config and the
clock (``scan_compressed_records(config=..., now_ms=...)``), they are answered exactly as when read
whole, without being read again, and with the loop given back."""

from __future__ import annotations

import asyncio
import itertools
import json
import zlib

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kconform.codecs.compression import Compression
from kconform.codecs.errors import Errors
from kconform.codecs.records import Record, TimestampType, decode_batch, encode_batch
from kconform.reference_broker.validation import (
    LogValidationConfig,
    RecordsRejected,
    frame_records,
    scan_compressed_records,
)
from kconform.reference_broker.validation._suspects import WINDOW_MS

from ..support.validation_batches import NOW, T0, forge, validate
from .test_compression_bombs import COMPRESSED, bomb, outcome, produced_batches, topic_configs

# a codec stream that fails: Kafka's DefaultRecordBatch.StreamRecordIterator throws InvalidRecordException
# for a premature end, KafkaException (UNKNOWN_SERVER_ERROR) for a stream the codec cannot read
FAILED_READ_CODES = {Errors.CORRUPT_MESSAGE, Errors.INVALID_RECORD, Errors.UNKNOWN_SERVER_ERROR}


def judged(data: bytes, scan_now: int = NOW, **config):
    """``data`` read ahead with the topic's rules, as the produce handler reads it."""
    framing = frame_records(data)
    return asyncio.run(
        scan_compressed_records(framing, config=LogValidationConfig(**config), now_ms=scan_now)
    )


def refuse_whole_reads(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the records were read whole")

    monkeypatch.setattr("kconform.reference_broker.validation._log.decode_batch", refuse)


@st.composite
def uncompressed_batches(draw):
    """Plain batches, which a topic with a codec rebuilds."""
    n = draw(st.integers(1, 30))
    stamps = st.sampled_from([T0, NOW + 10 * 3_600_000, -1, -5])
    records = [Record(i, draw(stamps), b"k" if i % 2 else None, b"v" * i, []) for i in range(n)]
    if n >= 2 and draw(st.booleans()):
        records[-1] = Record(n + 3, T0, None, None, [])
    return encode_batch(records)


@st.composite
def rebuild_configs(draw):
    config = draw(topic_configs())
    config["compression_type"] = draw(
        st.sampled_from(["producer", "gzip", "snappy", "lz4", "zstd", "uncompressed"])
    )
    config["max_message_bytes"] = draw(st.sampled_from([1048588, 1048588, 400]))
    return config


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.one_of(produced_batches(), uncompressed_batches()),
    config=rebuild_configs(),
    scan_before=st.sampled_from([0, 1, 60_000, WINDOW_MS, WINDOW_MS + 1, -1]),
)
def test_judging_and_rebuilding_ahead_gives_the_answer_of_reading_the_records_whole(
    data, config, scan_before
):
    # scan_before: how long before the append the read-ahead read the clock (-1: after it; beyond the
    # window: the append reads the records whole again)
    ahead = outcome(judged(data, NOW - scan_before, **config), **config)
    assert ahead == outcome(frame_records(data), **config)


@pytest.mark.parametrize("codec", COMPRESSED)
@pytest.mark.parametrize("topic", ["gzip", "snappy", "lz4", "zstd"])
def test_a_bomb_rebuilt_for_the_topic_codec_is_not_read_again(codec, topic, monkeypatch):
    data = bomb(50_000, codec)
    framing = judged(data, compression_type=topic)
    expected = outcome(frame_records(data), compression_type=topic)
    refuse_whole_reads(monkeypatch)
    assert outcome(framing, compression_type=topic) == expected
    assert expected[0] == "appended" and expected[-1] is (codec.name.lower() == topic)  # kept or rebuilt
    written = decode_batch(expected[1])
    assert written.compression == Compression[topic.upper()] and written.record_count == 50_000


def test_a_rebuilt_bomb_too_large_for_the_topic_keeps_at_most_max_message_bytes(monkeypatch):
    # UnifiedLog.append: the rebuilt batch is checked against max.message.bytes
    data = bomb(200_000, Compression.ZSTD)
    config = {"compression_type": "uncompressed", "max_message_bytes": 1_048_588}
    framing = judged(data, **config)
    built = framing.batches[0].records_scan.rebuilt
    assert built.size > 1_048_588 and built.seal(**_SEAL) is None  # counted, not kept
    framing = judged(data, **config)
    refuse_whole_reads(monkeypatch)
    answer = outcome(framing, **config)
    assert answer[:2] == ("rejected", Errors.MESSAGE_TOO_LARGE)
    monkeypatch.undo()
    assert answer == outcome(frame_records(data), **config)


_SEAL = dict(
    base_offset=0,
    producer_id=-1,
    producer_epoch=-1,
    base_sequence=-1,
    is_transactional=False,
    partition_leader_epoch=0,
    log_append_time=None,
)


@pytest.mark.parametrize("topic", ["producer", "lz4"])
def test_a_bomb_with_record_errors_is_judged_without_reading_it_again(topic, monkeypatch):
    # a compacted topic refuses keyless records, and a timestamp far ahead is out of range: every one
    # listed, as processRecordErrors lists them
    records = [Record(i, NOW + 2 * 3_600_000 if i % 1000 == 7 else T0, None, None, []) for i in range(20_000)]
    data = encode_batch(records, compression=Compression.ZSTD)
    for config in ({"compacted": True}, {}):
        config["compression_type"] = topic
        expected = outcome(frame_records(data), **config)
        framing = judged(data, **config)
        with monkeypatch.context() as patched:
            refuse_whole_reads(patched)
            assert outcome(framing, **config) == expected
        assert expected[0] == "rejected"
    assert expected[1] == Errors.INVALID_TIMESTAMP and len(expected[3]) == 20


@pytest.mark.parametrize("codec", COMPRESSED)
@pytest.mark.parametrize("damage", ["truncate", "flip"])
def test_a_damaged_bomb_stream_is_a_clear_answer(codec, damage):
    if damage == "truncate":
        data = forge(bomb(20_000, codec), payload=lambda p: p[: len(p) // 2])
    else:
        data = forge(
            bomb(20_000, codec), payload=lambda p: p[:40] + bytes(b ^ 0xA5 for b in p[40:80]) + p[80:]
        )
    for config in ({}, {"compression_type": "gzip"}):
        answer = outcome(judged(data, **config), **config)
        assert answer[0] == "rejected" and answer[1] in FAILED_READ_CODES
        assert answer == outcome(frame_records(data), **config)


def test_the_rebuilding_read_ahead_gives_the_loop_back():
    ticks = 0

    async def main():
        nonlocal ticks
        done = asyncio.Event()

        async def ticker():
            nonlocal ticks
            while not done.is_set():
                ticks += 1
                await asyncio.sleep(0)

        task = asyncio.create_task(ticker())
        framing = await scan_compressed_records(
            frame_records(bomb(100_000, Compression.LZ4)),
            time_slice_s=0.5,
            clock=itertools.count().__next__,  # every reading a slice later: a pause at every step
            config=LogValidationConfig(compression_type="gzip"),
            now_ms=NOW,
        )
        done.set()
        await task
        return framing

    scan = asyncio.run(main()).batches[0].records_scan
    assert scan.count == 100_000 and scan.rebuilt is not None and scan.rebuilt.count == 100_000
    assert ticks >= 100_000 * 7 // (64 * 1024)  # at least once per lz4 block


# --- legacy message sets (Produce v0-2): a compressed wrapper is always rebuilt as magic 2 ----------------


def legacy_outcome(records, **config):
    try:
        result = validate(records, version=2, **config)
    except RecordsRejected as exc:
        return ("rejected", exc.error_code, exc.scope, exc.record_errors, exc.error_message)
    return ("appended", bytes(result.records), result.last_offset, result.max_timestamp, result.in_place)


@st.composite
def legacy_wrappers(draw):
    magic = draw(st.sampled_from([0, 1]))
    codec = draw(st.sampled_from([Compression.GZIP, Compression.SNAPPY, Compression.LZ4]))
    n = draw(st.integers(1, 40))
    stamps = st.sampled_from([T0, NOW + 10 * 3_600_000, -1])
    records = [Record(i, draw(stamps), b"k" if i % 2 else None, b"v" * (i % 9), []) for i in range(n)]
    log_append = magic == 1 and draw(st.booleans())
    data = encode_batch(
        records,
        magic=magic,
        compression=codec,
        timestamp_type=TimestampType.LOG_APPEND_TIME if log_append else TimestampType.CREATE_TIME,
        log_append_time=T0 if log_append else None,
    )
    if draw(st.booleans()):  # damage the wrapper's value, then make its CRC right again
        at = draw(st.integers(0, 10_000))
        data = _legacy_damaged(data, magic, at, draw(st.integers(1, 255)))
    return data


def _legacy_damaged(data: bytes, magic: int, at: int, mask: int) -> bytes:
    value_at = (26 if magic else 18) + 4
    key_length = int.from_bytes(data[value_at - 4 : value_at], "big", signed=True)
    value_at += max(key_length, 0) + 4
    where = value_at + at % (len(data) - value_at)
    out = bytearray(data)
    out[where] ^= mask
    out[12:16] = zlib.crc32(bytes(out[16:])).to_bytes(4, "big")
    return bytes(out)


@st.composite
def legacy_message_sets(draw):
    """Uncompressed legacy messages, each its own batch."""
    magic = draw(st.sampled_from([0, 1]))
    stamps = st.sampled_from([T0, NOW + 10 * 3_600_000, -1])
    n = draw(st.integers(1, 12))
    return b"".join(
        encode_batch(
            [Record(i, draw(stamps), b"k" if i % 3 else None, b"v" * i, [])], magic=magic, base_offset=i
        )
        for i in range(n)
    )


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.one_of(legacy_wrappers(), legacy_message_sets()),
    config=rebuild_configs(),
    scan_before=st.sampled_from([0, 60_000, -1]),
)
def test_a_legacy_wrapper_read_ahead_gets_the_answer_of_reading_it_whole(data, config, scan_before):
    ahead = legacy_outcome(judged(data, NOW - scan_before, **config), **config)
    assert ahead == legacy_outcome(frame_records(data), **config)


def test_a_legacy_gzip_bomb_is_rebuilt_without_reading_it_again(monkeypatch):
    records = [Record(i, T0, b"k", None, []) for i in range(30_000)]
    data = encode_batch(records, magic=1, compression=Compression.GZIP)
    expected = legacy_outcome(frame_records(data))
    framing = judged(data)
    refuse_whole_reads(monkeypatch)
    assert legacy_outcome(framing) == expected
    assert expected[0] == "appended" and decode_batch(expected[1]).record_count == 30_000


@pytest.mark.parametrize("topic", ["producer", "zstd"])
def test_a_large_legacy_message_set_is_read_ahead_in_slices_and_not_read_again(topic, monkeypatch):
    data = b"".join(
        encode_batch([Record(i, T0, b"k", None, [])], magic=1, base_offset=i) for i in range(20_000)
    )
    config = {"compression_type": topic}
    expected = legacy_outcome(frame_records(data), **config)
    pauses = 0
    real_sleep = asyncio.sleep

    async def counted_sleep(delay):
        nonlocal pauses
        pauses += 1
        await real_sleep(0)

    monkeypatch.setattr("kconform.reference_broker.validation._paced.asyncio.sleep", counted_sleep)
    framing = asyncio.run(
        scan_compressed_records(
            frame_records(data),
            time_slice_s=0.5,
            clock=itertools.count().__next__,
            config=LogValidationConfig(**config),
            now_ms=NOW,
        )
    )
    assert pauses >= 20_000  # one slice per message here: the clock jumps a slice at every reading
    refuse_whole_reads(monkeypatch)
    assert legacy_outcome(framing, **config) == expected
    assert expected[0] == "appended" and decode_batch(expected[1]).record_count == 20_000


def test_bench_bombs_takes_a_codec_and_a_rebuilt_kind():
    from kconform.harness.cli import cli

    args = ["bench", "bombs", "--bombs", "2", "--records", "20000", "--codec", "snappy", "--kind", "rebuilt"]
    result = CliRunner().invoke(cli, [*args, "--json"])
    rows = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert len(rows) == 1, result.output
    row = rows[0]
    assert (row["codec"], row["kind"], row["topic_compression"]) == ("snappy", "rebuilt", "zstd")
    assert row["bomb_error_codes"] == [0, 0]  # both rebuilt with zstd and appended
    assert row["samples"] >= 1 and row["p99_ms"] > 0
