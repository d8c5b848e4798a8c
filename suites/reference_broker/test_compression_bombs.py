"""Compressed records read ahead of validation (``scan_compressed_records``), so a compression bomb holds
neither the event loop nor the memory: the read-ahead changes no answer (every rule, code and message
as without it), spares validation from reading the records again when the batch is kept as it came
(Kafka's in-place path, LogValidator.validateMessagesAndAssignOffsetsCompressed with
DefaultRecordBatch.skipKeyValueIterator), gives the loop back between pieces, and runs only a few at
once. The latency and memory goals themselves are shown by ``kconform bench bombs``, not timed here."""

from __future__ import annotations

import asyncio
import itertools
import json

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kconform.codecs._v2_stream import PIECE_SIZE
from kconform.codecs.compression import Compression
from kconform.codecs.errors import Errors
from kconform.codecs.records import Record, TimestampType, encode_batch
from kconform.reference_broker.validation import (
    RecordsRejected,
    ValidatedAppend,
    _paced,
    frame_records,
    scan_compressed_records,
)

from ..support.validation_batches import NOW, T0, forge, validate

COMPRESSED = [c for c in Compression if c != Compression.NONE]


def scanned(data: bytes, **pacing):
    return asyncio.run(scan_compressed_records(frame_records(data), **pacing))


def outcome(records, **config):
    """What validation answers, in the terms a Produce response and the log see."""
    try:
        result: ValidatedAppend = validate(records, **config)
    except RecordsRejected as exc:
        return ("rejected", exc.error_code, exc.scope, exc.record_errors, exc.error_message)
    return (
        "appended",
        bytes(result.records),
        result.first_offset,
        result.last_offset,
        result.max_timestamp,
        result.offset_of_max_timestamp,
        result.log_append_time_ms,
        result.record_count,
        result.in_place,
    )


# --- the read-ahead changes no answer -----------------------------------------------------------------

_MUTATIONS = ["none", "truncate", "flip", "append", "count_up", "count_down", "offsets"]


@st.composite
def produced_batches(draw):
    n = draw(st.integers(1, 30))
    codec = draw(st.sampled_from(COMPRESSED))
    stamps = draw(
        st.lists(
            st.sampled_from([T0, T0 + 5, NOW + 10 * 3_600_000, -1, 0, 2**62 + 7]), min_size=n, max_size=n
        )
    )
    keyed = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    records = [
        Record(i, stamps[i], b"k%d" % i if keyed[i] else None, b"v" * (i % 7), [("h", b"x")] if i % 3 else [])
        for i in range(n)
    ]
    mutation = draw(st.sampled_from(_MUTATIONS))
    if mutation == "offsets" and n >= 2:  # an inner offset out of step: the batch is rebuilt
        last = records[-1]
        records[-1] = Record(n + 3, last.timestamp, last.key, last.value, last.headers)
    log_append = draw(st.booleans())
    data = encode_batch(
        records,
        compression=codec,
        timestamp_type=TimestampType.LOG_APPEND_TIME if log_append else TimestampType.CREATE_TIME,
        log_append_time=T0 if log_append else None,
    )
    cut = draw(st.integers(1, 8))
    if mutation == "truncate":
        data = forge(data, payload=lambda p: p[: max(0, len(p) - cut)])
    elif mutation == "flip":
        where = draw(st.integers(0, 10_000))
        data = forge(data, payload=lambda p: _flipped(p, where % len(p)))
    elif mutation == "append":
        data = forge(data, payload=lambda p: p + b"\x00" * cut)
    elif mutation == "count_up":
        data = forge(data, record_count=n + 1, last_offset_delta=n)
    elif mutation == "count_down" and n >= 2:
        data = forge(data, record_count=n - 1, last_offset_delta=n - 2)
    elif mutation == "offsets" and n >= 2:
        data = forge(data, last_offset_delta=n - 1)
    return data


def _flipped(payload: bytes, where: int) -> bytes:
    return payload[:where] + bytes([payload[where] ^ 0x5A]) + payload[where + 1 :]


@st.composite
def topic_configs(draw):
    return {
        "compacted": draw(st.booleans()),
        "timestamp_type": draw(st.sampled_from(["CreateTime", "LogAppendTime"])),
        "timestamp_after_max_ms": draw(st.sampled_from([3_600_000, 2**63 - 1])),
        "timestamp_before_max_ms": draw(st.sampled_from([2**63 - 1, 120_000])),
        "compression_type": draw(st.sampled_from(["producer", "producer", "gzip", "zstd"])),
    }


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=produced_batches(), config=topic_configs())
def test_read_ahead_gives_the_same_answer_as_reading_the_records_whole(data, config):
    assert outcome(scanned(data), **config) == outcome(frame_records(data), **config)


# --- what the read-ahead spares --------------------------------------------------------------------


def bomb(records: int, codec: Compression = Compression.ZSTD) -> bytes:
    return encode_batch([Record(i, T0, None, None, []) for i in range(records)], compression=codec)


@pytest.mark.parametrize("codec", COMPRESSED)
def test_a_kept_bomb_is_not_read_again(codec, monkeypatch):
    framing = scanned(bomb(50_000, codec))
    assert framing.batches[0].records_scan.count == 50_000

    def refuse(*args, **kwargs):
        raise AssertionError("the records were read whole")

    monkeypatch.setattr("kconform.reference_broker.validation._log.decode_batch", refuse)
    result = validate(framing, first_offset=7)
    assert (result.first_offset, result.last_offset, result.record_count) == (7, 50_006, 50_000)
    assert result.in_place and result.max_timestamp == T0
    assert bytes(result.records[61:]) == bomb(50_000, codec)[61:]  # stored as the producer compressed it


def test_a_bomb_whose_records_break_a_rule_is_answered_as_before():
    # LogValidator.validateRecord: a compacted topic refuses keyless records, each one listed
    data = bomb(2_000)
    exc = outcome(scanned(data), compacted=True)
    assert exc[:2] == ("rejected", Errors.INVALID_RECORD) and len(exc[3]) == 2_000
    assert exc == outcome(frame_records(data), compacted=True)


def test_a_bomb_declaring_more_records_than_it_holds_is_refused():
    # DefaultRecordBatch: a count the records do not fill is INVALID_RECORD
    data = forge(bomb(10_000), record_count=10_001, last_offset_delta=10_000)
    assert outcome(scanned(data))[:2] == ("rejected", Errors.INVALID_RECORD)


def test_a_truncated_zstd_bomb_is_a_failed_decompression():
    # a stream the codec cannot finish: KafkaException, UNKNOWN_SERVER_ERROR
    data = forge(bomb(10_000), payload=lambda p: p[:-3])
    assert outcome(scanned(data))[:2] == ("rejected", Errors.UNKNOWN_SERVER_ERROR)
    assert outcome(scanned(data)) == outcome(frame_records(data))


# --- the loop is given back, and few scans run at once ---------------------------------------------


def test_the_scan_gives_the_loop_back_between_pieces():
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
        clock = itertools.count().__next__  # every reading is a slice later: pause at every step
        framing = await scan_compressed_records(frame_records(bomb(100_000)), time_slice_s=0.5, clock=clock)
        done.set()
        await task
        return framing

    framing = asyncio.run(main())
    assert framing.batches[0].records_scan.count == 100_000
    assert ticks >= 100_000 * 7 // PIECE_SIZE  # once per piece at least: a record takes 7 bytes or more


def test_only_a_few_scans_run_at_once(monkeypatch):
    active = peak = 0
    real_steps = _paced.scan_steps

    def counted_steps(data, batch):
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        try:
            return (yield from real_steps(data, batch))
        finally:
            active -= 1

    monkeypatch.setattr(_paced, "scan_steps", counted_steps)
    framings = [frame_records(bomb(20_000)) for _ in range(5)]

    async def main():
        clock = itertools.count().__next__
        return await asyncio.gather(
            *(scan_compressed_records(f, time_slice_s=0.5, clock=clock) for f in framings)
        )

    results = asyncio.run(main())
    assert all(r.batches[0].records_scan.count == 20_000 for r in results)
    assert peak == _paced.SCANS_AT_ONCE


def test_uncompressed_null_and_oversized_records_are_left_as_they_are():
    plain = frame_records(encode_batch([Record(0, T0, b"k", b"v", [])]))
    assert asyncio.run(scan_compressed_records(plain)) is plain
    assert asyncio.run(scan_compressed_records(None)) is None
    # UnifiedLog.analyzeAndValidateRecords refuses a batch above max.message.bytes before its records
    big = frame_records(bomb(1_000))
    assert asyncio.run(scan_compressed_records(big, max_batch_bytes=big.batches[0].extent.size - 1)) is big


# --- kconform bench bombs ----------------------------------------------------------------------------


def test_bench_bombs_command_reports_its_figures():
    from kconform.harness.cli import cli

    result = CliRunner().invoke(cli, ["bench", "bombs", "--bombs", "2", "--records", "20000", "--json"])
    rows = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert len(rows) == 1, result.output
    row = rows[0]
    assert row["bench"] == "bombs" and row["goal"] == "goal: p99 < 100 ms, RSS +32 MB"
    assert row["bombs"] == 2 and row["records_per_bomb"] == 20_000
    assert row["bomb_error_codes"] == [0, 0]  # both answered, both appended
    assert row["samples"] >= 1 and 0 < row["p50_ms"] <= row["p99_ms"] <= row["max_ms"]
    assert row["bombs_seconds"] > 0 and row["baseline_rss_mb"] > 0
    assert result.exit_code == (0 if row["goal_met"] else 1)
