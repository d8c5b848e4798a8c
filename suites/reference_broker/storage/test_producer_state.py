"""Idempotent producer state: Kafka's sequence and epoch decisions as a pure function, the log
answering retries with the original offsets, and the state surviving restarts through snapshots."""

from __future__ import annotations

import pytest

from kconform.codecs.records import encode_end_txn_marker_batch
from kconform.reference_broker.storage import (
    AppendOrigin,
    BatchMetadata,
    CorruptSnapshot,
    LogConfig,
    ProducerStateEntry,
    ProducerStateError,
    VerdictKind,
    append_data_batch,
    append_end_txn_marker,
    check_sequence,
    decrement_sequence,
    increment_sequence,
    read_snapshot,
    write_snapshot,
)

INT_MAX = 2**31 - 1
PID = 1000


def entry(epoch=0, *ranges, txn=None, coordinator_epoch=-1):
    """A producer entry whose cached batches cover the sequence ranges given, at offsets 100, 110..."""
    batches = tuple(
        BatchMetadata(
            last_seq=last, last_offset=100 + 10 * i + (last - first), offset_delta=last - first, timestamp=7
        )
        for i, (first, last) in enumerate(ranges)
    )
    return ProducerStateEntry(PID, epoch, coordinator_epoch, 7, txn, batches)


def kind(*args, **kwargs):
    return check_sequence(*args, **kwargs).kind


def test_sequence_arithmetic_wraps_at_int_max():
    assert increment_sequence(INT_MAX, 1) == 0
    assert increment_sequence(INT_MAX - 1, 3) == 1
    assert decrement_sequence(0, 1) == INT_MAX
    assert decrement_sequence(1, 3) == INT_MAX - 1
    assert BatchMetadata(last_seq=1, last_offset=50, offset_delta=3, timestamp=0).first_seq == INT_MAX - 1


def test_a_producer_the_log_does_not_know_may_start_anywhere():
    assert kind(None, 0, 0, 4) is VerdictKind.OK
    assert kind(None, 3, 17, 20) is VerdictKind.OK


def test_sequences_must_follow_within_an_epoch():
    state = entry(0, (0, 4))
    assert kind(state, 0, 5, 9) is VerdictKind.OK
    assert kind(state, 0, 6, 9) is VerdictKind.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert kind(state, 0, 3, 5) is VerdictKind.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert kind(entry(0, (INT_MAX - 2, INT_MAX)), 0, 0, 3) is VerdictKind.OK


def test_a_retry_of_a_cached_batch_is_a_duplicate_with_its_offsets():
    state = entry(0, (0, 4), (5, 9), (10, 14))
    verdict = check_sequence(state, 0, 5, 9)
    assert verdict.kind is VerdictKind.DUPLICATE and not verdict.is_error and verdict.error_code == 0
    assert (verdict.duplicate_of.first_offset, verdict.duplicate_of.last_offset) == (110, 114)
    assert kind(state, 0, 5, 8) is VerdictKind.OUT_OF_ORDER_SEQUENCE_NUMBER  # not the same range
    assert kind(state, 1, 5, 9) is VerdictKind.OUT_OF_ORDER_SEQUENCE_NUMBER  # another epoch


def test_only_the_last_five_batches_are_remembered():
    state = ProducerStateEntry(PID, 0)
    for n in range(6):
        state, verdict = append_data_batch(
            state,
            producer_epoch=0,
            last_seq=n * 2 + 1,
            first_offset=n * 2,
            last_offset=n * 2 + 1,
            max_timestamp=n,
            is_transactional=False,
        )
        assert verdict.ok
    assert len(state.batches) == 5 and state.first_seq == 2 and state.last_seq == 11
    assert kind(state, 0, 0, 1) is VerdictKind.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert kind(state, 0, 2, 3) is VerdictKind.DUPLICATE


def test_epochs_fence_and_a_new_epoch_starts_at_zero():
    state = entry(3, (0, 4))
    old = check_sequence(state, 2, 5, 9)
    assert old.kind is VerdictKind.INVALID_PRODUCER_EPOCH and old.error_code == 47
    assert kind(state, 4, 0, 0) is VerdictKind.OK
    bumped = check_sequence(state, 4, 5, 9)
    assert bumped.kind is VerdictKind.OUT_OF_ORDER_SEQUENCE_NUMBER and bumped.error_code == 45
    no_batches = ProducerStateEntry(PID, 3)  # e.g. after a marker: the epoch is known, no batch is
    assert kind(no_batches, 3, 0, 0) is VerdictKind.OK
    assert kind(no_batches, 3, 12, 12) is VerdictKind.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_origins_decide_what_is_checked():
    state = entry(3, (0, 4))
    assert kind(state, 3, 9, 9, origin=AppendOrigin.COORDINATOR) is VerdictKind.OK
    assert kind(state, 2, 9, 9, origin=AppendOrigin.COORDINATOR) is VerdictKind.INVALID_PRODUCER_EPOCH
    assert kind(state, 3, 0, 4, origin=AppendOrigin.COORDINATOR) is VerdictKind.OK  # no duplicate check
    assert kind(state, 1, 99, 99, origin=AppendOrigin.REPLICATION) is VerdictKind.OK


def test_batches_of_one_append_are_checked_against_each_other():
    state = entry(0, (0, 4))
    pending = ProducerStateEntry(PID, 0)
    pending, _ = append_data_batch(
        pending,
        producer_epoch=0,
        last_seq=9,
        first_offset=20,
        last_offset=24,
        max_timestamp=1,
        is_transactional=False,
    )
    assert kind(state, 0, 10, 12, updated=pending) is VerdictKind.OK
    assert kind(state, 0, 5, 9, updated=pending) is VerdictKind.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_transactions_open_and_close():
    state, verdict = append_data_batch(
        entry(1),
        producer_epoch=1,
        last_seq=0,
        first_offset=30,
        last_offset=30,
        max_timestamp=1,
        is_transactional=True,
    )
    assert verdict.ok and state.current_txn_first_offset == 30
    _, mixed = append_data_batch(
        state,
        producer_epoch=1,
        last_seq=1,
        first_offset=31,
        last_offset=31,
        max_timestamp=1,
        is_transactional=False,
    )
    assert mixed.kind is VerdictKind.INVALID_TXN_STATE and mixed.error_code == 48
    closed, verdict = append_end_txn_marker(
        state, producer_epoch=1, coordinator_epoch=4, timestamp=9, origin=AppendOrigin.COORDINATOR
    )
    assert verdict.ok and closed.current_txn_first_offset is None and closed.coordinator_epoch == 4
    _, fenced = append_end_txn_marker(
        closed, producer_epoch=1, coordinator_epoch=3, timestamp=9, origin=AppendOrigin.COORDINATOR
    )
    assert fenced.kind is VerdictKind.TRANSACTION_COORDINATOR_FENCED


# --- through the log --------------------------------------------------------------------------------


def idempotent(make_batch, first_seq, records=2, epoch=0):
    return make_batch(records, producer_id=PID, producer_epoch=epoch, base_sequence=first_seq)


def test_the_log_answers_a_retry_with_the_original_offsets(open_log, make_batch):
    log = open_log()
    log.append(make_batch(3), leader_epoch=0)
    first = log.append(idempotent(make_batch, 0), leader_epoch=0)
    second = log.append(idempotent(make_batch, 2), leader_epoch=0)
    assert (first.first_offset, second.first_offset) == (3, 5)
    size = log.size_in_bytes
    retry = log.append(idempotent(make_batch, 0), leader_epoch=0)
    assert retry.duplicate and (retry.first_offset, retry.last_offset) == (3, 4)
    assert log.size_in_bytes == size and log.log_end_offset == 7
    with pytest.raises(ProducerStateError) as gap:
        log.append(idempotent(make_batch, 9), leader_epoch=0)
    assert gap.value.error_code == 45
    with pytest.raises(ProducerStateError) as restart:
        log.append(idempotent(make_batch, 4, epoch=1), leader_epoch=0)  # a new epoch starts at 0
    assert restart.value.error_code == 45
    assert log.append(idempotent(make_batch, 0, epoch=1), leader_epoch=0).first_offset == 7
    with pytest.raises(ProducerStateError) as fenced:
        log.append(idempotent(make_batch, 4), leader_epoch=0)
    assert fenced.value.error_code == 47
    state = log.producer_state(PID)
    assert (state.producer_epoch, state.last_seq, state.last_data_offset) == (1, 1, 8)
    assert log.log_end_offset == 9
    follower_style = log.append(
        idempotent(make_batch, 50, epoch=1), leader_epoch=0, origin=AppendOrigin.REPLICATION
    )
    assert not follower_style.duplicate and log.producer_state(PID).last_seq == 51


def test_producer_state_survives_a_clean_restart(open_log, make_batch, log_dir):
    log = open_log(LogConfig(segment_bytes=3 * len(idempotent(make_batch, 0))))
    for n in range(7):
        log.append(idempotent(make_batch, 2 * n), leader_epoch=0)
    log.close()
    assert (log_dir / f"{14:020d}.snapshot").exists()
    reopened = open_log(LogConfig(segment_bytes=3 * len(idempotent(make_batch, 0))))
    state = reopened.producer_state(PID)
    assert (state.last_seq, state.last_data_offset, len(state.batches)) == (13, 13, 1)
    retry = reopened.append(idempotent(make_batch, 12), leader_epoch=0)
    assert retry.duplicate and retry.first_offset == 12
    with pytest.raises(ProducerStateError):  # only the last batch is in a snapshot, as in Kafka
        reopened.append(idempotent(make_batch, 10), leader_epoch=0)
    assert reopened.append(idempotent(make_batch, 14), leader_epoch=0).first_offset == 14


def test_producer_state_is_rebuilt_from_a_snapshot_and_the_log_after_a_crash(open_log, make_batch, log_dir):
    config = LogConfig(segment_bytes=3 * len(idempotent(make_batch, 0)))
    log = open_log(config)
    for n in range(8):
        log.append(idempotent(make_batch, 2 * n), leader_epoch=0)
    log.close_handlers()  # crash: no snapshot at the log end
    assert not (log_dir / f"{16:020d}.snapshot").exists()
    reopened = open_log(config)
    assert not reopened.had_clean_shutdown
    state = reopened.producer_state(PID)
    assert (state.last_seq, state.last_data_offset) == (15, 15)
    # Recovering each unflushed segment ends with a snapshot at its end (Kafka's recoverSegment), so
    # the state is reloaded from the snapshot at 16, which keeps only the producer's last batch.
    assert [b.last_seq for b in state.batches] == [15]
    assert (log_dir / f"{16:020d}.snapshot").exists()
    assert reopened.append(idempotent(make_batch, 14), leader_epoch=0).duplicate


def test_a_corrupt_snapshot_is_dropped_and_the_log_replayed(open_log, make_batch, log_dir):
    log = open_log()
    for n in range(3):
        log.append(idempotent(make_batch, 2 * n), leader_epoch=0)
    log.close()
    snapshot = log_dir / f"{6:020d}.snapshot"
    data = bytearray(snapshot.read_bytes())
    data[-1] ^= 0xFF
    snapshot.write_bytes(bytes(data))
    with pytest.raises(CorruptSnapshot):
        read_snapshot(snapshot)
    # A clean shutdown skips recovery (which would replace the snapshot), so loading meets the corrupt
    # snapshot, drops it and replays the whole log.
    reopened = open_log()
    assert reopened.had_clean_shutdown
    assert reopened.producer_state(PID).last_seq == 5
    assert len(reopened.producer_state(PID).batches) == 3


def test_snapshot_layout_round_trips(tmp_path):
    path = tmp_path / "00000000000000000042.snapshot"
    entries = [
        entry(3, (0, 4), (5, 9), txn=120, coordinator_epoch=2),
        ProducerStateEntry(7, 1, -1, 55, None, ()),
    ]
    write_snapshot(path, entries)
    data = path.read_bytes()
    assert data[:2] == b"\x00\x01" and len(data) == 2 + 4 + 4 + 2 * 46
    loaded = read_snapshot(path)
    assert loaded[0].batches == entries[0].batches[-1:]  # Kafka keeps the last batch
    assert (loaded[0].current_txn_first_offset, loaded[0].coordinator_epoch) == (120, 2)
    assert loaded[1] == entries[1]


def test_idle_producers_expire(open_log, make_batch, clock):
    log = open_log(LogConfig(producer_id_expiration_ms=1000))
    log.append(
        make_batch(1, timestamp=clock.now_ms, producer_id=PID, producer_epoch=0, base_sequence=0),
        leader_epoch=0,
    )
    clock.advance(999)
    log.remove_expired_producers()
    assert PID in log.active_producers
    clock.advance(1)
    log.remove_expired_producers()
    assert PID not in log.active_producers


def test_a_transaction_marker_closes_the_producers_transaction(open_log, make_batch, clock):
    log = open_log()
    log.append(
        make_batch(2, producer_id=PID, producer_epoch=1, base_sequence=0, transactional=True), leader_epoch=0
    )
    assert log.producer_state(PID).current_txn_first_offset == 0
    marker = encode_end_txn_marker_batch(
        producer_id=PID, producer_epoch=1, commit=True, coordinator_epoch=6, timestamp=clock.now_ms
    )
    log.append(marker, leader_epoch=0, origin=AppendOrigin.COORDINATOR)
    state = log.producer_state(PID)
    assert state.current_txn_first_offset is None and state.coordinator_epoch == 6
    stale = encode_end_txn_marker_batch(
        producer_id=PID, producer_epoch=1, commit=False, coordinator_epoch=5, timestamp=clock.now_ms
    )
    with pytest.raises(ProducerStateError) as fenced:
        log.append(stale, leader_epoch=0, origin=AppendOrigin.COORDINATOR)
    assert fenced.value.error_code == 52


def test_snapshot_bytes_are_kafkas_layout(tmp_path):
    """The bytes, built here field by field from Kafka's schema (``ProducerStateManager``:
    PID_SNAPSHOT_MAP_SCHEMA = version int16, crc uint32, producer_entries array;
    PRODUCER_SNAPSHOT_ENTRY_SCHEMA = producer_id int64, epoch int16, last_sequence int32, last_offset
    int64, offset_delta int32, timestamp int64, coordinator_epoch int32, current_txn_first_offset int64;
    the CRC-32C covers everything from PRODUCER_ENTRIES_OFFSET = 6 on), not by the snapshot writer."""
    import struct

    import crc32c

    path = tmp_path / "00000000000000000042.snapshot"
    first = entry(3, (0, 4), (5, 9), txn=120, coordinator_epoch=2)
    write_snapshot(path, [first, ProducerStateEntry(7, 1, -1, 55, None, ())])
    rows = [
        # the last batch only: sequence 5-9 at offsets 110-114, max timestamp 7; the open txn at 120
        struct.pack(">q", PID) + struct.pack(">h", 3) + struct.pack(">i", 9) + struct.pack(">q", 114)
        + struct.pack(">i", 4) + struct.pack(">q", 7) + struct.pack(">i", 2) + struct.pack(">q", 120),
        # no batch: last sequence -1, last offset -1, delta 0, the entry's own timestamp; no txn (-1)
        struct.pack(">q", 7) + struct.pack(">h", 1) + struct.pack(">i", -1) + struct.pack(">q", -1)
        + struct.pack(">i", 0) + struct.pack(">q", 55) + struct.pack(">i", -1) + struct.pack(">q", -1),
    ]  # fmt: skip
    entries = struct.pack(">i", len(rows)) + b"".join(rows)
    expected = struct.pack(">h", 1) + struct.pack(">I", crc32c.crc32c(entries)) + entries
    assert path.read_bytes() == expected
