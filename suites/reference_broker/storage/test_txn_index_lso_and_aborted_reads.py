"""Transactions in the partition log, below the network: the ``.txnindex`` files (Kafka's
``TransactionIndex``, ``LogSegment.updateTxnIndex``), the last stable offset (``ProducerStateManager``
ongoing and unreplicated transactions, ``UnifiedLog.lastStableOffset``) and the aborted transactions a
read_committed read returns (``LocalLog.addAbortedTransactions``, ``collectAbortedTransactions``)."""

from __future__ import annotations

import shutil

import pytest

from kconform.codecs.records import (
    iter_batches,
)
from kconform.reference_broker.storage import (
    LogConfig,
    PartitionLog,
    ProducerStateError,
    VerdictKind,
)
from kconform.reference_broker.storage._txn_index import AbortedTxn, TransactionIndex

from ...support.txn_index_writer import (
    ENTRY_SIZE,
    Writer,
    aborted,
    entry_bytes,
    txn_index_bytes,
    txn_index_path,
)

# ---- the index file ------------------------------------------------------------------------------------


def test_an_abort_writes_one_entry_in_kafkas_34_byte_layout(open_log, log_dir):
    """AbortedTxn: version int16 0, producer id, first offset, last offset (the marker's) and the LSO
    after the transaction, all big-endian int64; commits and empty transactions write nothing."""
    w = Writer(open_log())
    w.txn(7, 2)  # 0-1
    w.plain()  # 2
    w.end(7, commit=False)  # 3
    assert txn_index_bytes(log_dir) == entry_bytes(7, 0, 3, 4)
    assert len(txn_index_bytes(log_dir)) == ENTRY_SIZE
    w.txn(8)  # 4
    w.end(8, commit=True)  # 5: a commit leaves no entry
    w.end(9, commit=False)  # 6: nor does the abort of a transaction with no data
    assert txn_index_bytes(log_dir) == entry_bytes(7, 0, 3, 4)


def test_no_index_file_exists_until_a_transaction_is_aborted(open_log, log_dir):
    """Kafka's TransactionIndex creates its file on the first append only."""
    w = Writer(open_log())
    w.txn(1)
    w.end(1, commit=True)
    w.plain()
    assert not txn_index_path(log_dir, 0).exists()
    w.txn(1)
    w.end(1, commit=False)
    assert txn_index_path(log_dir, 0).exists()


def test_the_recorded_lso_is_the_first_offset_of_another_producers_open_transaction(open_log, log_dir):
    """ProducerStateManager.lastStableOffset(completedTxn): the oldest open transaction of any other
    producer, else the offset after the marker."""
    log = open_log()
    w = Writer(log)
    w.txn(1)  # 0, stays open
    w.txn(2)  # 1
    assert w.end(2, commit=False) == 2
    w.txn(3)  # 3
    w.end(1, commit=True)  # 4
    w.end(3, commit=False)  # 5
    assert txn_index_bytes(log_dir) == entry_bytes(2, 1, 2, 0) + entry_bytes(3, 3, 5, 6)
    assert aborted(log, 0, log.log_end_offset) == [(2, 1, 2, 0), (3, 3, 5, 6)]


# ---- the last stable offset ----------------------------------------------------------------------------


def test_lso_arithmetic_with_interleaved_producers(open_log):
    """UnifiedLog.lastStableOffset: the first offset of the oldest open transaction, else the HW."""
    log = open_log()
    w = Writer(log)
    steps = []

    def note() -> None:
        steps.append((log.last_stable_offset, log.high_watermark))

    w.plain()  # 0
    note()
    w.txn(1)  # 1
    note()
    w.txn(2)  # 2
    w.txn(1)  # 3: the transaction goes on, its first offset stays 1
    note()
    w.end(1, commit=True)  # 4
    note()
    w.plain()  # 5
    w.end(2, commit=False)  # 6
    note()
    assert steps == [(1, 1), (1, 2), (1, 4), (2, 5), (7, 7)]
    assert dict(log.ongoing_transactions) == {}


def test_lso_waits_for_the_high_watermark_to_pass_the_marker(open_log):
    """ProducerStateManager.unreplicatedTxns: a completed transaction stays unstable until the high
    watermark passes its marker (onHighWatermarkUpdated), so no reader sees an undecided record."""
    log = open_log()
    w = Writer(log, follow=False)
    w.txn(1, 2)  # 0-1
    log.update_high_watermark(2)
    assert log.last_stable_offset == 0
    w.end(1, commit=True)  # 2, not yet replicated
    assert (log.high_watermark, log.first_unstable_offset, log.last_stable_offset) == (2, 0, 0)
    log.update_high_watermark(3)
    assert (log.first_unstable_offset, log.last_stable_offset) == (None, 3)


def test_the_first_unstable_offset_is_never_below_the_log_start_offset(open_log):
    """UnifiedLog.maybeIncrementFirstUnstableOffset takes max(first unstable offset, log start)."""
    log = open_log()
    w = Writer(log)
    w.txn(1)  # 0, open
    w.plain(3)  # 1-3
    assert log.delete_records_before(2) == 2
    assert (log.first_unstable_offset, log.last_stable_offset) == (2, 2)


def test_a_marker_below_the_producer_or_coordinator_epoch_is_refused_and_changes_nothing(open_log, log_dir):
    """ProducerAppendInfo.checkProducerEpoch and checkCoordinatorEpoch refuse the marker before it is
    written: no entry, no change to the LSO."""
    log = open_log()
    w = Writer(log)
    w.txn(1, epoch=3)
    w.end(1, commit=True, epoch=3, coordinator_epoch=5)
    w.txn(1, epoch=3)  # 2, open
    with pytest.raises(ProducerStateError) as stale_epoch:
        w.end(1, commit=False, epoch=2, coordinator_epoch=5)
    with pytest.raises(ProducerStateError) as stale_coordinator:
        w.end(1, commit=False, epoch=3, coordinator_epoch=4)
    assert stale_epoch.value.verdict.kind is VerdictKind.INVALID_PRODUCER_EPOCH
    assert stale_coordinator.value.verdict.kind is VerdictKind.TRANSACTION_COORDINATOR_FENCED
    assert (log.log_end_offset, log.last_stable_offset, txn_index_bytes(log_dir)) == (3, 2, b"")


# ---- collecting aborted transactions -------------------------------------------------------------------


def test_aborted_transactions_overlapping_a_range_across_segments(open_log):
    """collectAbortedTxns: lastOffset >= fetch offset and firstOffset < upper bound, searched from the
    segment holding the fetch offset on, stopping once an entry's LSO reaches the upper bound."""
    log = open_log()
    w = Writer(log)
    w.txn(1, 2)  # 0-1
    w.end(1, commit=False)  # 2
    w.txn(2)  # 3
    w.end(2, commit=False)  # 4
    log.roll()
    w.txn(3, 2)  # 5-6
    w.end(3, commit=False)  # 7
    assert [s.base_offset for s in log.segments] == [0, 5]
    p1, p2, p3 = (1, 0, 2, 3), (2, 3, 4, 5), (3, 5, 7, 8)
    assert aborted(log, 0, 1) == [p1]
    assert aborted(log, 2, 3) == [p1]
    assert aborted(log, 3, 5) == [p2]
    assert aborted(log, 4, 6) == [p2, p3]
    assert aborted(log, 0, 8) == [p1, p2, p3]
    assert aborted(log, 6, 8) == [p3]
    assert aborted(log, 8, 9) == []


def test_the_search_stops_at_an_entry_whose_lso_reaches_the_upper_bound(tmp_path):
    """TransactionIndex.collectAbortedTxns returns at the first entry (kept if it overlaps) whose LSO
    is at or past the upper bound, and says the search is complete; in a consistent log no later
    transaction can overlap then, so these entries are hand-made to show the loop itself."""
    index = TransactionIndex(tmp_path / f"{0:020d}.txnindex", 0)
    a, b, c = AbortedTxn(1, 0, 4, 2), AbortedTxn(2, 2, 8, 9), AbortedTxn(3, 5, 12, 13)
    for txn in (a, b, c):
        index.append(txn)
    assert index.collect(0, 6) == ([a, b], True)  # c overlaps but is never reached
    assert index.collect(0, 2) == ([a], True)
    assert index.collect(9, 20) == ([c], False)
    with pytest.raises(ValueError):  # markers must come in offset order
        index.append(AbortedTxn(4, 0, 12, 13))
    assert (tmp_path / f"{0:020d}.txnindex").read_bytes() == b"".join(
        entry_bytes(t.producer_id, t.first_offset, t.last_offset, t.last_stable_offset) for t in (a, b, c)
    )


def test_a_read_committed_read_uses_kafkas_upper_bound(log_dir, clock):
    """LocalLog.addAbortedTransactions bounds the search by the first offset index entry past the bytes
    read, else the next segment's base offset, else the log end offset: with no index entry an
    aborted transaction above the LSO is still listed; with an entry for every batch it is not. A
    read at the LSO gets an empty list, a read without the flag none at all."""

    def scenario(config: LogConfig) -> tuple[list, list | None, list]:
        log = PartitionLog.open(log_dir, config, clock=clock)
        try:
            w = Writer(log)
            w.plain()  # 0
            w.txn(1)  # 1, open
            w.txn(2)  # 2
            w.end(2, commit=False)  # 3
            assert log.last_stable_offset == 1
            read = log.read(0, 1 << 20, max_offset=1, include_aborted_txns=True)
            assert [b.base_offset for b in iter_batches(read.read_bytes())] == [0]
            plain = log.read(0, 1 << 20, max_offset=1)
            nothing = log.read(1, 1 << 20, max_offset=1, include_aborted_txns=True)
            found = [(a.producer_id, a.first_offset) for a in read.aborted_transactions]
            return found, plain.aborted_transactions, nothing.aborted_transactions
        finally:
            log.close()
            shutil.rmtree(log_dir)

    assert scenario(LogConfig()) == ([(2, 2)], None, [])
    assert scenario(LogConfig(index_interval_bytes=0)) == ([], None, [])
