"""Opening a partition directory after a crash or a clean close: torn tails and corrupt batches cut
the log at the last good batch, missing or broken index files are rebuilt, and a clean close keeps
the log start offset, leader epochs, producer state and high watermark."""

from __future__ import annotations

import os
import uuid

import pytest

from kconform.codecs.records import iter_batch_headers, iter_batches
from kconform.reference_broker.storage import InconsistentTopicId, LogConfig

CONFIG = LogConfig(segment_bytes=2000, index_interval_bytes=200)


def fill(log, make_batch, count, epoch=0):
    for i in range(count):
        log.append(make_batch(1 + i % 3, value_size=60), leader_epoch=epoch)


def snapshot_of(log):
    """Every (offset, value) in the log, read segment by segment."""
    out = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        batches = list(iter_batches(log.read(offset, 10**7).read_bytes()))
        for batch in batches:
            out.extend((r.offset, r.value) for r in batch.records)
        offset = batches[-1].last_offset + 1
    return out


def last_segment_file(log_dir):
    return sorted(log_dir.glob("*.log"))[-1]


def test_a_torn_last_batch_is_cut_off(open_log, make_batch, log_dir):
    log = open_log(CONFIG)
    fill(log, make_batch, 30)
    active = last_segment_file(log_dir)
    last = list(iter_batch_headers(active.read_bytes()))[-1]
    before = [x for x in snapshot_of(log) if x[0] < last.base_offset]
    log.close_handlers()
    size = active.stat().st_size
    os.truncate(active, size - last.size_in_bytes // 2)
    reopened = open_log(CONFIG)
    assert not reopened.had_clean_shutdown
    assert reopened.log_end_offset == last.base_offset
    assert reopened.recovered_bytes_truncated == last.size_in_bytes - last.size_in_bytes // 2
    assert snapshot_of(reopened) == before
    assert reopened.append(make_batch(1), leader_epoch=0).first_offset == last.base_offset


@pytest.mark.parametrize("garbage", [b"\x00" * 40, bytes(range(200, 256)) * 3, b"\x7f\xff"])
def test_garbage_after_the_last_batch_is_cut_off(open_log, make_batch, log_dir, garbage):
    log = open_log(CONFIG)
    fill(log, make_batch, 12)
    expected = snapshot_of(log)
    end = log.log_end_offset
    log.close_handlers()
    with open(last_segment_file(log_dir), "ab") as f:
        f.write(garbage)
    reopened = open_log(CONFIG)
    assert reopened.log_end_offset == end
    assert reopened.recovered_bytes_truncated == len(garbage)
    assert snapshot_of(reopened) == expected


def test_a_bad_crc_in_the_middle_cuts_the_log_there_and_drops_later_segments(open_log, make_batch, log_dir):
    log = open_log(CONFIG)
    fill(log, make_batch, 60)
    assert len(log.segments) >= 4
    victim_segment = log.segments[1]
    headers = list(iter_batch_headers(victim_segment.path.read_bytes()))
    position = sum(h.size_in_bytes for h in headers[:3])
    victim = headers[3]
    expected = [x for x in snapshot_of(log) if x[0] < victim.base_offset]
    log.close_handlers()
    (log_dir / "recovery-point-offset-checkpoint").write_text("0\n1\norders 0 0\n")  # crash before flushing
    with open(victim_segment.path, "r+b") as f:
        f.seek(position + victim.size_in_bytes - 1)
        byte = f.read(1)
        f.seek(position + victim.size_in_bytes - 1)
        f.write(bytes([byte[0] ^ 0x55]))
    reopened = open_log(CONFIG)
    assert reopened.log_end_offset == victim.base_offset
    assert [s.base_offset for s in reopened.segments] == [0, victim_segment.base_offset]
    assert snapshot_of(reopened) == expected
    assert sorted(p.name for p in log_dir.glob("*.log")) == [
        f"{0:020d}.log",
        f"{victim_segment.base_offset:020d}.log",
    ]


def test_recovery_point_bounds_what_is_rechecked(open_log, make_batch, log_dir):
    log = open_log(CONFIG)
    fill(log, make_batch, 60)
    first = log.segments[0]
    log.checkpoint()  # the recovery point (the active segment's base) reaches the checkpoint file
    log.close_handlers()
    with open(first.path, "r+b") as f:  # corrupt a flushed segment: below the recovery point
        f.seek(first.size_in_bytes - 1)
        f.write(b"\xee")
    reopened = open_log(CONFIG)
    assert reopened.log_end_offset == log.log_end_offset  # Kafka trusts flushed segments too


def test_missing_index_files_are_rebuilt(open_log, make_batch, log_dir, clock):
    log = open_log(CONFIG)
    for i in range(40):
        log.append(make_batch(2, timestamp=clock.now_ms + i * 10, value_size=60), leader_epoch=0)
    expected = snapshot_of(log)
    by_time = log.offset_for_timestamp(clock.now_ms + 205)
    log.close()
    old_indexes = {p.name: p.read_bytes() for p in log_dir.glob("*index")}
    for path in log_dir.glob("*index"):
        path.unlink()
    reopened = open_log(CONFIG)
    assert reopened.had_clean_shutdown
    assert snapshot_of(reopened) == expected
    assert reopened.offset_for_timestamp(clock.now_ms + 205) == by_time
    assert sorted(p.name for p in log_dir.glob("*index")) == sorted(old_indexes)
    assert all(len(p.read_bytes()) % 8 == 0 for p in log_dir.glob("*.index"))
    assert any(len(p.read_bytes()) for p in log_dir.glob("*.index"))


def test_a_corrupt_index_file_is_rebuilt(open_log, make_batch, log_dir):
    log = open_log(CONFIG)
    fill(log, make_batch, 40)
    expected = snapshot_of(log)
    log.close()
    index = sorted(log_dir.glob("*.index"))[0]
    index.write_bytes(index.read_bytes() + b"\x01\x02\x03")
    timeindex = sorted(log_dir.glob("*.timeindex"))[1]
    timeindex.write_bytes(b"\xff" * 24)
    reopened = open_log(CONFIG)
    assert snapshot_of(reopened) == expected
    assert len(index.read_bytes()) % 8 == 0


def test_a_clean_close_keeps_everything(open_log, make_batch, log_dir, clock):
    topic_id = uuid.uuid4()
    log = open_log(CONFIG, topic_id=topic_id)
    for epoch in (1, 1, 2, 4):
        for _ in range(8):
            log.append(make_batch(2, value_size=60), leader_epoch=epoch)
    log.append(make_batch(2, producer_id=9, producer_epoch=3, base_sequence=0), leader_epoch=4)
    log.update_high_watermark(log.log_end_offset - 1)
    log.delete_records_before(20)
    expected = snapshot_of(log)
    epochs = log.epoch_entries
    segments = log.segments
    state = (log.log_start_offset, log.log_end_offset, log.high_watermark)
    log.close()
    assert (log_dir / ".kafka_cleanshutdown").exists()
    assert (log_dir / "partition.metadata").read_text().startswith("version: 0\ntopic_id: ")
    assert (log_dir / "log-start-offset-checkpoint").read_text() == "0\n1\norders 0 20\n"
    reopened = open_log(CONFIG)
    assert reopened.had_clean_shutdown and not (log_dir / ".kafka_cleanshutdown").exists()
    assert (reopened.log_start_offset, reopened.log_end_offset, reopened.high_watermark) == state
    assert reopened.epoch_entries == epochs
    assert reopened.segments == segments
    assert snapshot_of(reopened) == expected
    assert reopened.topic_id == topic_id
    assert reopened.producer_state(9).last_seq == 1
    assert reopened.append(
        make_batch(2, producer_id=9, producer_epoch=3, base_sequence=0), leader_epoch=4
    ).duplicate
    reopened.close()
    with pytest.raises(InconsistentTopicId):
        open_log(CONFIG, topic_id=uuid.uuid4())


def test_a_torn_tail_takes_its_leader_epoch_with_it(open_log, make_batch, log_dir):
    log = open_log(CONFIG)
    log.append(make_batch(2), leader_epoch=1)
    log.append(make_batch(2), leader_epoch=5)
    log.close_handlers()
    active = last_segment_file(log_dir)
    os.truncate(active, active.stat().st_size - 3)
    reopened = open_log(CONFIG)
    assert reopened.log_end_offset == 2
    assert [(e.epoch, e.start_offset) for e in reopened.epoch_entries] == [(1, 0)]


def test_leftovers_of_interrupted_deletions_are_removed(open_log, make_batch, log_dir):
    log = open_log(CONFIG)
    fill(log, make_batch, 5)
    log.close()
    (log_dir / f"{0:020d}.log.deleted").write_bytes(b"old")
    (log_dir / "leader-epoch-checkpoint.tmp").write_text("partial")
    (log_dir / f"{999:020d}.index").write_bytes(b"")  # an index without its log
    open_log(CONFIG)
    names = {p.name for p in log_dir.iterdir()}
    assert f"{0:020d}.log.deleted" not in names
    assert "leader-epoch-checkpoint.tmp" not in names
    assert f"{999:020d}.index" not in names


def test_a_log_whose_segments_vanished_starts_at_its_log_start_offset(open_log, make_batch, log_dir):
    log = open_log(CONFIG)
    fill(log, make_batch, 40)
    log.update_high_watermark(log.log_end_offset)
    log.delete_records_before(30)
    log.close()
    for path in log_dir.glob("0*"):
        path.unlink()
    reopened = open_log(CONFIG)
    assert reopened.log_start_offset == reopened.log_end_offset == 30
    assert [s.base_offset for s in reopened.segments] == [30]
    assert reopened.append(make_batch(1), leader_epoch=0).first_offset == 30


def test_a_torn_tail_under_a_clean_shutdown_marker_is_recovered_too(tmp_path):
    """Kafka trusts the marker; we check the last segment's tail first, so a log damaged after a clean
    stop still opens and serves everything that was whole."""
    from kconform.codecs.records import Record, encode_batch
    from kconform.reference_broker.storage import PartitionLog

    now = [1_700_000_000_000]
    directory = tmp_path / "t-0"
    log = PartitionLog.open(directory, clock=lambda: now[0])
    for i in range(5):
        log.append(bytearray(encode_batch([Record(0, now[0], b"k", b"v%d" % i)])), leader_epoch=0)
    log.close()
    segment = next(directory.glob("*.log"))
    whole = segment.stat().st_size
    with open(segment, "ab") as fh:
        fh.write(encode_batch([Record(0, now[0], b"k", b"torn")])[:30])
    reopened = PartitionLog.open(directory, clock=lambda: now[0])
    try:
        assert reopened.log_end_offset == 5
        assert reopened.recovered_bytes_truncated == 30
        assert segment.stat().st_size == whole
    finally:
        reopened.close()
