"""Appending and reading: offsets assigned in the header, Kafka's read rules (start at the batch that
holds the offset, max_bytes and min-one-batch, the max-offset cap, out-of-range offsets), and what
the log refuses."""

from __future__ import annotations

import os

import pytest

from kconform.codecs.records import TimestampType, iter_batch_headers, iter_batches
from kconform.reference_broker.storage import (
    AppendOrigin,
    CorruptRecord,
    InvalidAppend,
    LogConfig,
    OffsetOutOfRange,
    RecordBatchTooLarge,
    UnexpectedAppendOffset,
)

SMALL = LogConfig(segment_bytes=1200, index_interval_bytes=150)


def consume(log, start=0, max_bytes=100_000, **kwargs):
    """Read like a consumer: from ``start`` to the end, whole batches, returning (offset, value)."""
    out = []
    offset = start
    while offset < log.log_end_offset:
        data = log.read(offset, max_bytes, **kwargs).read_bytes()
        batches = list(iter_batches(data))
        assert batches, f"no progress at offset {offset}"
        for batch in batches:
            out.extend((r.offset, r.value) for r in batch.records if r.offset >= offset)
        offset = batches[-1].last_offset + 1
    return out


def test_round_trip_across_many_segments(open_log, make_batch):
    log = open_log(SMALL)
    expected = []
    for i in range(120):
        records = 1 + i % 4
        data = make_batch(records, value_size=5 + (i * 7) % 60)
        info = log.append(data, leader_epoch=3)
        assert info.first_offset == len(expected)
        assert info.last_offset == len(expected) + records - 1
        assert info.record_count == records and info.batch_count == 1
        expected.extend(
            (info.first_offset + j, r.value) for j, r in enumerate(next(iter_batches(data)).records)
        )
    assert log.log_end_offset == len(expected)
    assert len(log.segments) > 10
    assert all(s.size_in_bytes <= SMALL.segment_bytes for s in log.segments)
    assert log.size_in_bytes == sum(s.size_in_bytes for s in log.segments)
    assert consume(log) == expected
    for batch in iter_batches(log.read(0, 10**6).read_bytes()):
        assert batch.partition_leader_epoch == 3


def test_each_segment_is_named_by_its_base_offset_and_holds_the_next_offsets(open_log, log_dir, make_batch):
    log = open_log(SMALL)
    for _ in range(40):
        log.append(make_batch(2, value_size=40), leader_epoch=0)
    infos = log.segments
    for info, following in zip(infos, infos[1:], strict=False):
        assert info.path.name == f"{info.base_offset:020d}.log"
        headers = list(iter_batch_headers(info.path.read_bytes()))
        assert headers[0].base_offset == info.base_offset
        assert headers[-1].next_offset == following.base_offset
        assert (log_dir / f"{info.base_offset:020d}.index").exists()
        assert (log_dir / f"{info.base_offset:020d}.timeindex").exists()


def test_offsets_are_written_into_a_bytearray_in_place(open_log, make_batch):
    log = open_log()
    log.append(make_batch(3), leader_epoch=0)
    data = bytearray(make_batch(2))
    original = bytes(data)
    info = log.append(data, leader_epoch=7)
    header = next(iter_batch_headers(data))
    assert (header.base_offset, header.partition_leader_epoch) == (3, 7)
    assert info.first_offset == 3
    immutable = make_batch(2)
    log.append(immutable, leader_epoch=7)
    assert next(iter_batch_headers(immutable)).base_offset == 0
    assert data[21:] == original[21:]  # only base offset and leader epoch changed


def test_read_starts_at_the_batch_holding_the_offset(open_log, make_batch):
    log = open_log()
    log.append(make_batch(5), leader_epoch=0)
    log.append(make_batch(5), leader_epoch=0)
    for start in range(10):
        first = next(iter_batch_headers(log.read(start, 10_000).read_bytes()))
        assert first.base_offset == (start // 5) * 5
        assert first.base_offset <= start <= first.last_offset


def test_max_bytes_cuts_like_kafka_and_min_one_batch_returns_the_first_whole(open_log, make_batch):
    log = open_log()
    sizes = [len(make_batch(4, value_size=100))] * 3
    for _ in range(3):
        log.append(make_batch(4, value_size=100), leader_epoch=0)
    one = sizes[0]
    whole = log.read(0, 10)
    assert whole.size == one and not whole.first_entry_incomplete
    cut = log.read(0, 10, min_one_batch=False)
    assert cut.size == 10 and cut.first_entry_incomplete
    assert log.read(0, 0, min_one_batch=False).region is None
    partial = log.read(0, one + one // 2)
    assert partial.size == one + one // 2  # Kafka's slice may end inside a batch
    assert len(list(iter_batch_headers(partial.read_bytes()))) == 1
    trimmed = log.read(0, one + one // 2, whole_batches=True)
    assert trimmed.size == one
    assert log.read(0, 10, min_one_batch=False, whole_batches=True).region is None
    assert log.read(0, 10**6).size == 3 * one


def test_max_offset_stops_before_the_batch_holding_it(open_log, make_batch):
    log = open_log()
    for _ in range(4):
        log.append(make_batch(3), leader_epoch=0)
    one = len(make_batch(3))

    def bases(result):
        return [h.base_offset for h in iter_batch_headers(result.read_bytes())]

    assert bases(log.read(0, 10**6, max_offset=6)) == [0, 3]
    assert bases(log.read(0, 10**6, max_offset=7)) == [0, 3]  # 6..8 holds 7: not served
    assert bases(log.read(0, 10**6, max_offset=12)) == [0, 3, 6, 9]
    assert log.read(6, 10**6, max_offset=6).region is None
    assert log.read(9, 10**6, max_offset=6).region is None
    assert log.read(7, 10**6, max_offset=8).region is None  # same batch as the cap
    assert log.read(0, 10, max_offset=3).size == one  # min-one-batch never passes the cap
    assert log.read(3, 10, max_offset=3).region is None


def test_max_offset_in_a_later_segment_allows_the_whole_segment(open_log, make_batch):
    log = open_log(LogConfig(segment_bytes=3 * len(make_batch(2))))
    for _ in range(9):
        log.append(make_batch(2), leader_epoch=0)
    second = log.segments[1]
    result = log.read(second.base_offset, 10**6, max_offset=log.log_end_offset - 1)
    assert result.size == second.size_in_bytes
    edge = log.read(0, 10**6, max_offset=second.base_offset)
    assert edge.size == log.segments[0].size_in_bytes


def test_out_of_range_offsets(open_log, make_batch):
    log = open_log()
    for _ in range(5):
        log.append(make_batch(2), leader_epoch=0)
    log.update_high_watermark(log.log_end_offset)
    with pytest.raises(OffsetOutOfRange):
        log.read(11, 100)
    at_end = log.read(10, 100)
    assert at_end.region is None and at_end.log_end_offset == 10
    log.delete_records_before(4)
    assert log.log_start_offset == 4
    with pytest.raises(OffsetOutOfRange) as caught:
        log.read(3, 100)
    assert caught.value.error_code == 1
    first = next(iter_batch_headers(log.read(4, 100).read_bytes()))
    assert first.base_offset == 4
    assert log.read(5, 100).region.position == log.read(4, 100).region.position


def test_the_region_can_be_sent_with_sendfile(open_log, tmp_path, make_batch):
    log = open_log()
    for _ in range(3):
        log.append(make_batch(2), leader_epoch=0)
    region = log.read(2, 10**6).region
    out = tmp_path / "sent"
    with open(out, "wb") as sink:
        sent = os.sendfile(sink.fileno(), region.fd, region.position, region.size)
    assert sent == region.size
    assert out.read_bytes() == region.read()


def test_input_that_is_not_whole_valid_batches_is_refused(open_log, make_batch):
    log = open_log()
    good = make_batch(2)
    with pytest.raises(InvalidAppend):
        log.append(good + good[:30], leader_epoch=0)
    corrupt = bytearray(good)
    corrupt[-1] ^= 0xFF
    with pytest.raises(CorruptRecord):
        log.append(corrupt, leader_epoch=0)
    from kconform.codecs.records import Record, encode_batch

    with pytest.raises(InvalidAppend, match="magic"):
        log.append(encode_batch([Record(0, 5, None, b"x")], magic=1), leader_epoch=0)
    with pytest.raises(ValueError):
        log.append(good)  # a leader append needs the leader epoch
    assert log.log_end_offset == 0 and log.size_in_bytes == 0
    empty = log.append(b"", leader_epoch=0)
    assert (empty.first_offset, empty.last_offset, empty.batch_count) == (-1, -1, 0)


def test_an_append_larger_than_a_segment_is_refused(open_log, make_batch):
    log = open_log(LogConfig(segment_bytes=200))
    with pytest.raises(RecordBatchTooLarge) as caught:
        log.append(make_batch(5, value_size=100), leader_epoch=0)
    assert caught.value.error_code == 18


def test_log_append_time_is_stamped_from_the_clock(open_log, clock, make_batch):
    log = open_log()
    info = log.append(make_batch(3, timestamp=5), leader_epoch=0, stamp_log_append_time=True)
    assert info.log_append_time == clock.now_ms == info.max_timestamp
    assert info.offset_of_max_timestamp == 2
    batch = next(iter_batches(log.read(0, 10**6).read_bytes(), verify_crc=True))
    assert batch.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert [r.timestamp for r in batch.records] == [clock.now_ms] * 3
    plain = log.append(make_batch(1, timestamp=5), leader_epoch=0)
    assert plain.log_append_time == -1 and plain.max_timestamp == 5


def test_a_follower_append_keeps_the_leaders_offsets_and_epochs(open_log, clock, make_batch):
    leader_dir_log = open_log()
    for epoch in (1, 1, 2):
        leader_dir_log.append(make_batch(2), leader_epoch=epoch)
    replicated = leader_dir_log.read(0, 10**6).read_bytes()
    leader_dir_log.close()

    from kconform.reference_broker.storage import PartitionLog

    follower = PartitionLog.open(leader_dir_log.directory.parent / "orders-1", clock=clock)
    try:
        info = follower.append(replicated, assign_offsets=False)
        assert (info.first_offset, info.last_offset) == (0, 5)
        assert follower.read(0, 10**6).read_bytes() == replicated
        assert [(e.epoch, e.start_offset) for e in follower.epoch_entries] == [(1, 0), (2, 4)]
        with pytest.raises(UnexpectedAppendOffset):
            follower.append(replicated, assign_offsets=False)
        gap = bytearray(make_batch(1))
        from kconform.codecs.records import patch_batch_header

        patch_batch_header(gap, base_offset=100, partition_leader_epoch=2)
        follower.append(gap, assign_offsets=False, origin=AppendOrigin.REPLICATION)
        assert follower.log_end_offset == 101
        assert [s.base_offset for s in follower.segments] == [0]  # still fits the segment's index
        far = bytearray(make_batch(1))
        patch_batch_header(far, base_offset=2**31 + 50, partition_leader_epoch=2)
        follower.append(far, assign_offsets=False)
        assert [s.base_offset for s in follower.segments] == [0, 2**31 + 50]  # relative offsets overflow
        assert next(iter_batch_headers(follower.read(2**31 + 50, 100).read_bytes())).base_offset == 2**31 + 50
    finally:
        follower.close()
