"""The sparse indexes: Kafka's entry layouts and rules, and lookups through them agreeing with a
linear scan of the log, before and after the index files are rebuilt."""

from __future__ import annotations

import struct
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kconform.codecs.records import iter_batch_headers, iter_batches
from kconform.reference_broker.storage import LogConfig, PartitionLog
from kconform.reference_broker.storage._offset_index import OffsetIndex
from kconform.reference_broker.storage._time_index import TimeIndex


def test_offset_index_entries_are_relative_offset_and_position(tmp_path):
    path = tmp_path / "00000000000000000100.index"
    index = OffsetIndex.create(path, 100, 64)
    index.append(105, 0)
    index.append(110, 4000)
    index.flush()
    assert path.read_bytes() == struct.pack(">iiii", 5, 0, 10, 4000)
    assert index.lookup(99) == (100, 0)
    assert index.lookup(105) == (105, 0)
    assert index.lookup(109) == (105, 0)
    assert index.lookup(10**9) == (110, 4000)
    reloaded = OffsetIndex.load(path, 100, 64, log_size=5000)
    assert [reloaded.entry(i) for i in range(reloaded.entries)] == [(105, 0), (110, 4000)]


def test_offset_index_truncation_follows_kafkas_three_cases(tmp_path):
    def fresh():
        index = OffsetIndex.create(tmp_path / "00000000000000000000.index", 0, 1024)
        for offset in (10, 20, 30):
            index.append(offset, offset * 10)
        return index

    cases = {5: [], 10: [], 15: [10], 20: [10], 25: [10, 20], 31: [10, 20, 30]}
    for target, kept in cases.items():
        index = fresh()
        index.truncate_to(target)
        assert [index.entry(i)[0] for i in range(index.entries)] == kept, target
        assert (tmp_path / "00000000000000000000.index").stat().st_size == 8 * len(kept)


def test_offset_index_fullness_and_relative_offset_range(tmp_path):
    index = OffsetIndex.create(tmp_path / "00000000000000000000.index", 1000, 17)
    assert index.max_entries == 2
    assert index.can_append_offset(1000) and index.can_append_offset(1000 + 2**31 - 1)
    assert not index.can_append_offset(999) and not index.can_append_offset(1000 + 2**31)
    index.append(1001, 0)
    with pytest.raises(ValueError):
        index.append(1001, 10)  # offsets must increase
    index.append(1002, 10)
    assert index.is_full
    with pytest.raises(ValueError):
        index.append(1003, 20)


def test_time_index_keeps_only_rising_timestamps_and_reserves_a_slot(tmp_path):
    path = tmp_path / "00000000000000000050.timeindex"
    index = TimeIndex.create(path, 50, 12 * 3)
    assert index.last_entry == (-1, 50)
    index.maybe_append(-1, 50)  # no timestamp: nothing to record
    assert index.entries == 0
    index.maybe_append(1000, 52)
    index.maybe_append(1000, 52)  # the same entry again (close after roll) is ignored
    assert index.entries == 1
    with pytest.raises(ValueError):
        index.maybe_append(999, 60)
    with pytest.raises(ValueError):
        index.maybe_append(2000, 51)
    index.maybe_append(1500, 60)
    assert index.is_full  # one slot is kept for the entry written on roll
    with pytest.raises(ValueError):
        index.maybe_append(1600, 61)
    index.maybe_append(1600, 61, skip_full_check=True)
    assert path.read_bytes() == struct.pack(">qiqiqi", 1000, 2, 1500, 10, 1600, 11)
    assert index.lookup(999) == (-1, 50)
    assert index.lookup(1000) == (1000, 52)
    assert index.lookup(1599) == (1500, 60)
    assert index.lookup(10**15) == (1600, 61)
    index.truncate_to(60)
    assert index.last_entry == (1000, 52)


def _linear_first_batch(headers, offset):
    return next(h for h in headers if h.last_offset >= offset)


def _check_lookups(log):
    headers = [h for seg in log.segments for h in iter_batch_headers(seg.path.read_bytes())]
    records = [r for seg in log.segments for b in iter_batches(seg.path.read_bytes()) for r in b.records]
    for offset in range(log.log_end_offset):
        got = next(iter_batch_headers(log.read(offset, 1).read_bytes()))
        assert got == _linear_first_batch(headers, offset)
    for target in sorted({r.timestamp for r in records} | {0, 10**13}):
        expected = next((r for r in records if r.timestamp >= target), None)
        found = log.offset_for_timestamp(target)
        if expected is None:
            assert found is None
        else:
            assert (found.offset, found.timestamp) == (expected.offset, expected.timestamp)
    best = max(r.timestamp for r in records)
    newest = next(r for r in records if r.timestamp == best)
    found = log.latest_timestamp_offset()
    assert (found.offset, found.timestamp) == (newest.offset, newest.timestamp)
    for seg in log.segments:
        data = seg.path.read_bytes()
        starts = {0}
        for h in iter_batch_headers(data):
            starts.add(max(starts) + h.size_in_bytes)
        index_bytes = seg.path.with_suffix(".index").read_bytes()
        for relative, position in struct.iter_unpack(">ii", index_bytes):
            assert position in starts  # every entry points at a batch boundary
            assert next(iter_batch_headers(data[position:])).base_offset <= seg.base_offset + relative


batch_plans = st.lists(
    st.tuples(st.lists(st.integers(1_000, 1_400), min_size=1, max_size=4), st.integers(0, 300)),
    min_size=1,
    max_size=50,
)


@settings(max_examples=25)
@given(plan=batch_plans, interval=st.integers(0, 700), segment_bytes=st.integers(1400, 4000))
def test_index_lookups_equal_a_linear_scan(make_batch, new_clock, plan, interval, segment_bytes):
    config = LogConfig(segment_bytes=segment_bytes, index_interval_bytes=interval)
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp) / "t-0"
        log = PartitionLog.open(directory, config, clock=new_clock())
        for timestamps, value_size in plan:
            log.append(make_batch(timestamps=timestamps, value_size=value_size), leader_epoch=0)
        _check_lookups(log)
        log.close()
        reopened = PartitionLog.open(directory, config, clock=new_clock())
        _check_lookups(reopened)  # indexes loaded from their files
        reopened.close()
        for index_file in list(directory.glob("*.index")) + list(directory.glob("*.timeindex")):
            index_file.unlink()
        rebuilt = PartitionLog.open(directory, config, clock=new_clock())
        _check_lookups(rebuilt)  # indexes rebuilt from the log
        rebuilt.close()
