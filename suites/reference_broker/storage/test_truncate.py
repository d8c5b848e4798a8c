"""Truncation for replica divergence: everything at or after the target goes, with its index
entries, leader epochs and producer state; truncating below the first segment starts over."""

from __future__ import annotations

from kconform.codecs.records import iter_batch_headers
from kconform.reference_broker.storage import LogConfig

CONFIG = LogConfig(segment_bytes=1500, index_interval_bytes=100, file_delete_delay_ms=0)
PID = 77


def headers(log, start=None):
    start = log.log_start_offset if start is None else start
    out = []
    offset = start
    while offset < log.log_end_offset:
        batch = list(iter_batch_headers(log.read(offset, 10**7).read_bytes()))
        if not batch:
            break  # a truncation inside a batch leaves no data below the log end offset
        out.extend(batch)
        offset = batch[-1].next_offset
    return out


def build(open_log, make_batch, clock):
    log = open_log(CONFIG)
    for i in range(30):
        log.append(
            make_batch(
                2,
                timestamp=clock.now_ms + i,
                value_size=50,
                producer_id=PID,
                producer_epoch=0,
                base_sequence=2 * i,
            ),
            leader_epoch=i // 10,
        )
    log.update_high_watermark(log.log_end_offset)
    return log


def test_truncate_to_drops_everything_from_the_target(open_log, make_batch, clock, log_dir):
    log = build(open_log, make_batch, clock)
    assert len(log.segments) > 3
    assert log.truncate_to(31)
    assert log.log_end_offset == 31 and log.high_watermark == 31
    assert all(s.base_offset <= 31 for s in log.segments)
    assert len(list(log_dir.glob("*.log"))) == len(log.segments)
    assert [h.last_offset for h in headers(log)][-1] == 29  # the batch 30..31 held the target
    assert log.read(30, 1000).region is None  # as in Kafka, offset 30 is gone though below the end
    assert [(e.epoch, e.start_offset) for e in log.epoch_entries] == [(0, 0), (1, 20)]
    state = log.producer_state(PID)
    assert (state.last_seq, state.last_data_offset) == (29, 29)
    assert log.offset_for_timestamp(clock.now_ms + 15) is None
    assert log.latest_timestamp_offset().offset == 28
    info = log.append(make_batch(2, producer_id=PID, producer_epoch=0, base_sequence=30), leader_epoch=3)
    assert info.first_offset == 31 and not info.duplicate
    assert [(e.epoch, e.start_offset) for e in log.epoch_entries][-1] == (3, 31)


def test_truncate_at_or_past_the_end_changes_nothing_but_stray_epochs(open_log, make_batch, clock):
    log = build(open_log, make_batch, clock)
    log.assign_epoch_start_offset(7, log.log_end_offset)  # a leader that never wrote
    end = log.log_end_offset
    assert not log.truncate_to(end)
    assert not log.truncate_to(end + 10)
    assert log.log_end_offset == end
    assert log.latest_epoch == 2


def test_truncate_below_the_first_segment_starts_over(open_log, make_batch, clock, log_dir):
    log = build(open_log, make_batch, clock)
    log.delete_records_before(40)
    first = log.segments[0].base_offset
    assert first > 0
    assert log.truncate_to(first - 5)
    assert log.log_start_offset == log.log_end_offset == first - 5
    assert [s.base_offset for s in log.segments] == [first - 5]
    assert log.epoch_entries == [] and not log.active_producers


def test_truncate_fully_and_start_at(open_log, make_batch, clock, log_dir):
    log = build(open_log, make_batch, clock)
    log.truncate_fully_and_start_at(500)
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (500, 500, 500)
    assert [p.name for p in sorted(log_dir.glob("*.log"))] == [f"{500:020d}.log"]
    assert not list(log_dir.glob("*.snapshot")) or all(
        int(p.name[:20]) >= 500 for p in log_dir.glob("*.snapshot")
    )
    assert log.append(make_batch(1), leader_epoch=9).first_offset == 500
    log.truncate_fully_and_start_at(400, log_start_offset=350)
    assert (log.log_start_offset, log.log_end_offset) == (350, 400)


def test_truncation_survives_a_restart(open_log, make_batch, clock):
    log = build(open_log, make_batch, clock)
    log.truncate_to(24)  # a batch boundary, as replication truncates
    before = headers(log)
    log.close()
    reopened = open_log(CONFIG)
    assert reopened.log_end_offset == 24
    assert headers(reopened) == before
    assert reopened.producer_state(PID).last_seq == 23
