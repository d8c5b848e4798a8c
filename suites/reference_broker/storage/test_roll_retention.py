"""Rolling (segment.bytes, segment.ms with its jitter, full indexes), retention (retention.ms,
retention.bytes, never past the high watermark), DeleteRecords and delayed file deletion."""

from __future__ import annotations

import random

import pytest

from kconform.reference_broker.storage import LogConfig, OffsetOutOfRange

HOUR = 3_600_000


class FixedJitter(random.Random):
    def __init__(self, jitter: int) -> None:
        super().__init__(0)
        self.jitter = jitter

    def randrange(self, *args, **kwargs) -> int:  # type: ignore[override]
        return self.jitter


def bases(log):
    return [s.base_offset for s in log.segments]


def test_a_segment_rolls_before_it_would_pass_segment_bytes(open_log, make_batch):
    one = len(make_batch(1, value_size=50))
    log = open_log(LogConfig(segment_bytes=3 * one + 10))
    for _ in range(10):
        log.append(make_batch(1, value_size=50), leader_epoch=0)
    assert bases(log) == [0, 3, 6, 9]
    assert [s.size_in_bytes for s in log.segments] == [3 * one] * 3 + [one]


def test_segment_ms_counts_from_the_first_batch_timestamp(open_log, make_batch, clock):
    log = open_log(LogConfig(segment_ms=1000))
    t = clock.now_ms
    log.append(make_batch(1, timestamp=t), leader_epoch=0)
    log.append(make_batch(1, timestamp=t + 1000), leader_epoch=0)
    assert bases(log) == [0]
    log.append(make_batch(1, timestamp=t + 1001), leader_epoch=0)
    assert bases(log) == [0, 2]
    clock.advance(10 * HOUR)  # the wall clock plays no part while batches carry timestamps
    log.append(make_batch(1, timestamp=t + 1500), leader_epoch=0)
    assert bases(log) == [0, 2]


def test_segment_ms_counts_from_creation_when_batches_have_no_timestamp(open_log, make_batch, clock):
    log = open_log(LogConfig(segment_ms=1000))
    log.append(make_batch(1, timestamp=-1), leader_epoch=0)
    clock.advance(1000)
    log.append(make_batch(1, timestamp=-1), leader_epoch=0)
    assert bases(log) == [0]
    clock.advance(1)
    log.append(make_batch(1, timestamp=-1), leader_epoch=0)
    assert bases(log) == [0, 2]


def test_log_append_time_rolls_by_the_clock(open_log, make_batch, clock):
    log = open_log(LogConfig(segment_ms=60_000))
    start = clock.now_ms
    for elapsed in (0, 10_000, 50_000, 60_000, 60_001):  # ms since the first append
        clock.now_ms = start + elapsed
        log.append(make_batch(1, timestamp=0), leader_epoch=0, stamp_log_append_time=True)
    assert bases(log) == [0, 4]


def test_segment_jitter_shortens_the_roll_time(open_log, make_batch, clock):
    log = open_log(LogConfig(segment_ms=1000, segment_jitter_ms=5000), rng=FixedJitter(300))
    t = clock.now_ms
    log.append(make_batch(1, timestamp=t), leader_epoch=0)
    log.append(make_batch(1, timestamp=t + 700), leader_epoch=0)
    assert bases(log) == [0]
    log.append(make_batch(1, timestamp=t + 701), leader_epoch=0)
    assert bases(log) == [0, 2]


def test_a_full_index_rolls_the_segment(open_log, make_batch):
    log = open_log(LogConfig(segment_index_bytes=24, index_interval_bytes=0))
    for _ in range(7):
        log.append(make_batch(1), leader_epoch=0)
    assert bases(log) == [0, 2, 4, 6]  # the time index holds 2 entries and keeps one for the roll


def test_a_roll_checkpoints_the_producer_state_and_flushes_below_it(open_log, make_batch, log_dir):
    log = open_log(LogConfig(segment_bytes=2 * len(make_batch(1))))
    for _ in range(5):
        log.append(make_batch(1), leader_epoch=0)
    assert bases(log) == [0, 2, 4]
    assert log.recovery_point == 4
    assert (log_dir / "00000000000000000004.snapshot").exists()
    assert (log_dir / "recovery-point-offset-checkpoint").read_text() == "0\n1\norders 0 0\n"  # on a timer
    log.checkpoint()
    assert (log_dir / "recovery-point-offset-checkpoint").read_text() == "0\n1\norders 0 4\n"


def _fill(log, make_batch, clock, count, step_ms=HOUR):
    for _ in range(count):
        log.append(make_batch(2, timestamp=clock.now_ms, value_size=30), leader_epoch=0)
        clock.advance(step_ms)
    log.update_high_watermark(log.log_end_offset)


def test_retention_ms_deletes_old_segments_and_moves_the_log_start_offset(
    open_log, make_batch, clock, log_dir
):
    one = len(make_batch(2, value_size=30))
    config = LogConfig(segment_bytes=2 * one, retention_ms=10 * HOUR, file_delete_delay_ms=1000)
    log = open_log(config)
    _fill(log, make_batch, clock, 10)  # batch i has timestamp start + i hours; two per segment
    assert bases(log) == [0, 4, 8, 12, 16]
    clock.advance(3 * HOUR)  # now = start + 13h: the segment ending at 1h is older than 10h, not 3h
    assert log.apply_retention() == 1
    clock.advance(1)  # now the one ending at 3h is too
    assert log.apply_retention() == 1
    assert bases(log) == [8, 12, 16] and log.log_start_offset == 8
    assert (log_dir / "00000000000000000000.log.deleted").exists()
    with pytest.raises(OffsetOutOfRange):
        log.read(7, 100)
    clock.advance(1000)
    log.apply_retention()
    assert not list(log_dir.glob("*.deleted"))


def test_retention_never_passes_the_high_watermark(open_log, make_batch, clock):
    one = len(make_batch(2, value_size=30))
    log = open_log(LogConfig(segment_bytes=2 * one, retention_ms=HOUR))
    _fill(log, make_batch, clock, 6)
    log.update_high_watermark(5)  # inside the second segment
    clock.advance(100 * HOUR)
    assert log.apply_retention() == 1
    assert bases(log) == [4, 8] and log.log_start_offset == 4


def test_retention_can_take_the_active_segment_by_rolling_first(open_log, make_batch, clock):
    one = len(make_batch(2, value_size=30))
    log = open_log(LogConfig(segment_bytes=2 * one, retention_ms=HOUR, file_delete_delay_ms=0))
    _fill(log, make_batch, clock, 3)
    clock.advance(100 * HOUR)
    assert log.apply_retention() == 2
    assert bases(log) == [6] and log.log_start_offset == 6 == log.log_end_offset
    assert log.segments[0].size_in_bytes == 0
    assert log.apply_retention() == 0  # an empty last segment is never deleted
    assert log.read(6, 100).region is None


def test_retention_bytes_deletes_the_oldest_while_the_rest_stays_above_it(open_log, make_batch, clock):
    one = len(make_batch(2, value_size=30))
    log = open_log(LogConfig(segment_bytes=2 * one, retention_ms=-1, retention_bytes=3 * one))
    _fill(log, make_batch, clock, 7)  # segments of 2, 2, 2, 1 batches
    assert log.apply_retention() == 2  # 7 -> 5 -> 3 batches; one more would leave 1 < 3
    assert log.size_in_bytes == 3 * one and log.log_start_offset == 8
    assert log.apply_retention() == 0


def test_compact_only_topics_delete_only_below_the_log_start_offset(open_log, make_batch, clock):
    one = len(make_batch(2, value_size=30))
    log = open_log(
        LogConfig(segment_bytes=2 * one, retention_ms=1, retention_bytes=1, cleanup_policy="compact")
    )
    _fill(log, make_batch, clock, 6)
    clock.advance(100 * HOUR)
    assert log.apply_retention() == 0
    log.delete_records_before(9)
    assert bases(log) == [8]


def test_delete_records_moves_the_log_start_offset_and_drops_whole_segments(open_log, make_batch, clock):
    one = len(make_batch(2, value_size=30))
    log = open_log(LogConfig(segment_bytes=2 * one))
    for epoch in range(6):
        log.append(make_batch(2, value_size=30), leader_epoch=epoch)
    with pytest.raises(OffsetOutOfRange):
        log.delete_records_before(3)  # above the high watermark (still 0)
    log.update_high_watermark(10)
    assert log.delete_records_before(5) == 5
    assert bases(log) == [4, 8]
    assert [(e.epoch, e.start_offset) for e in log.epoch_entries] == [(2, 5), (3, 6), (4, 8), (5, 10)]
    assert log.delete_records_before(3) == 5  # never backwards
    assert log.delete_records_before(-1) == 10  # -1: up to the high watermark
    assert bases(log) == [8]
    with pytest.raises(OffsetOutOfRange):
        log.delete_records_before(11)
    with pytest.raises(OffsetOutOfRange):
        log.delete_records_before(-2)
