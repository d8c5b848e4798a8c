"""Transactions in the partition log, as Kafka's storage layer keeps them: the per-segment ``.txnindex``
of aborted transactions (its byte layout and ordering rules) and the last stable offset (open
transactions of several producers, the high watermark, stale markers).

Kafka's classes: ``ProducerStateManager`` (``firstUnstableOffset``, ``lastStableOffset``,
``completeTxn``), ``TransactionIndex``, ``LogSegment.updateTxnIndex``/``collectAbortedTxns``,
``LocalLog.collectAbortedTransactions``/``addAbortedTransactions`` and ``LogLoader.recoverSegment``."""

from __future__ import annotations

import pytest

from kconform.codecs.errors import Errors
from kconform.codecs.records import (
    encode_end_txn_marker_batch,
    iter_batches,
)
from kconform.reference_broker.storage import (
    TXN_INDEX_ENTRY_SIZE,
    AbortedTxn,
    CorruptIndex,
    ProducerStateError,
    TransactionIndex,
)

from ..support.txn_log import (
    EPOCH,
    P1,
    P2,
    P3,
    START_MS,
    entry,
)

# ---- the index file ----------------------------------------------------------------------------


def test_an_aborted_txn_entry_is_34_bytes_in_kafkas_layout():
    """``TransactionIndex``/``AbortedTxn``: version int16 0, producer id, first offset, last offset,
    last stable offset, all int64 big-endian."""
    txn = AbortedTxn(producer_id=0x0102030405060708, first_offset=5, last_offset=9, last_stable_offset=7)
    encoded = txn.encode()
    assert TXN_INDEX_ENTRY_SIZE == 34
    assert encoded == bytes.fromhex("00000102030405060708000000000000000500000000000000090000000000000007")
    assert AbortedTxn.decode(encoded) == txn
    with pytest.raises(CorruptIndex):
        AbortedTxn.decode(b"\x00\x01" + encoded[2:])


def test_an_abort_writes_its_entry_with_the_lso_left_by_the_other_open_txns(txlog):
    """``UnifiedLog.append``: ``lastStableOffset(completedTxn)`` is the first offset of the oldest
    transaction of another producer still open, else the marker's offset + 1; only aborts are indexed
    (``LogSegment.updateTxnIndex``), and the file appears with the first entry."""
    txlog.data(P1, 2)  # 0-1
    txlog.data(P2)  # 2
    txlog.data(P3)  # 3
    txlog.data(P1)  # 4
    assert txlog.txn_index_files() == {}
    assert txlog.marker(P1, commit=False) == 5
    assert txlog.txn_index_files() == {"00000000000000000000.txnindex": entry(P1, 0, 5, 2)}
    assert txlog.marker(P3, commit=True) == 6  # commits are not indexed
    assert txlog.marker(P2, commit=False) == 7
    assert txlog.txn_index_files() == {
        "00000000000000000000.txnindex": entry(P1, 0, 5, 2) + entry(P2, 2, 7, 8)
    }
    assert txlog.aborted() == [(P1, 0, 5, 2), (P2, 2, 7, 8)]


def test_a_marker_closing_an_empty_transaction_changes_nothing(txlog):
    """``ProducerAppendInfo.appendEndTxnMarker`` completes a transaction only when one is open
    (``currentTxnFirstOffset`` present)."""
    txlog.data(None, 3)
    txlog.marker(P1, commit=False)
    assert txlog.txn_index_files() == {}
    assert txlog.log.last_stable_offset == txlog.log.high_watermark == 4


def test_the_index_refuses_entries_out_of_order_and_below_its_segment(tmp_path):
    """``TransactionIndex.append`` refuses a marker offset not above the last one; ``sanityCheck``
    refuses entries ending below the segment's base offset (the loader then recovers the segment)."""
    path = tmp_path / "00000000000000000100.txnindex"
    index = TransactionIndex(path, 100)
    index.append(AbortedTxn(1, 100, 105, 106))
    with pytest.raises(ValueError):
        index.append(AbortedTxn(2, 101, 105, 106))
    index.close()
    assert path.read_bytes() == entry(1, 100, 105, 106)
    path.write_bytes(entry(1, 90, 99, 100))
    with pytest.raises(CorruptIndex):
        TransactionIndex.open(path, 100)
    path.write_bytes(entry(1, 100, 105, 106) + entry(2, 100, 104, 106))
    with pytest.raises(CorruptIndex):
        TransactionIndex.open(path, 100)
    path.write_bytes(entry(1, 100, 105, 106) + entry(2, 100, 107, 108)[:20])  # a torn last entry
    assert [e.last_offset for e in TransactionIndex.open(path, 100).entries] == [105]
    assert path.read_bytes() == entry(1, 100, 105, 106)


def test_collecting_stops_once_an_entrys_lso_reaches_the_upper_bound(tmp_path):
    """``TransactionIndex.collectAbortedTxns``: a transaction overlaps ``[fetch, upper)`` when its
    marker is at or after the fetch offset and it starts below the upper bound; an entry whose LSO
    is at or past the upper bound ends the search (nothing completed later started below it)."""
    index = TransactionIndex(tmp_path / "00000000000000000000.txnindex", 0)
    for txn in [AbortedTxn(1, 0, 4, 2), AbortedTxn(2, 2, 8, 9), AbortedTxn(3, 10, 12, 13)]:
        index.append(txn)
    ids = lambda found: ([t.producer_id for t in found[0]], found[1])  # noqa: E731
    assert ids(index.collect(0, 3)) == ([1, 2], True)  # 2's LSO (9) reaches 3: 3 is not looked at
    assert ids(index.collect(5, 9)) == ([2], True)
    assert ids(index.collect(9, 11)) == ([3], True)
    assert ids(index.collect(0, 20)) == ([1, 2, 3], False)  # a later segment may hold more
    assert ids(index.collect(13, 20)) == ([], False)
    # the rule, not the overlap, ends the search: an entry past the stop is skipped even if it overlaps
    odd = TransactionIndex(tmp_path / "00000000000000000100.txnindex", 100)
    odd.append(AbortedTxn(1, 100, 104, 105))
    odd.append(AbortedTxn(2, 101, 106, 107))
    assert ids(odd.collect(100, 103)) == ([1], True)
    assert ids(odd.collect(100, 106)) == ([1, 2], True)
    odd.close()
    index.close()


# ---- last stable offset ------------------------------------------------------------------------


def test_the_lso_stops_at_the_oldest_open_transaction_of_any_producer(txlog):
    """``ProducerStateManager.firstUnstableOffset`` over ``ongoingTxns``: the LSO is the first offset
    of the oldest open transaction, whichever producer's, and plain batches never hold it back."""
    log = txlog.log
    txlog.data(None, 2)  # 0-1
    assert log.last_stable_offset == 2
    txlog.data(P1)  # 2
    txlog.data(None)  # 3
    txlog.data(P2)  # 4
    assert (log.last_stable_offset, log.high_watermark) == (2, 5)
    assert dict(log.ongoing_transactions) == {P1: 2, P2: 4}
    txlog.marker(P2, commit=True)  # 5: the younger one ends first
    assert log.last_stable_offset == 2
    txlog.marker(P1, commit=False)  # 6
    assert log.last_stable_offset == 7
    txlog.data(P1)  # 7: a new transaction of the same producer
    assert log.last_stable_offset == 7
    assert dict(log.ongoing_transactions) == {P1: 7}


def test_a_completed_txn_holds_the_lso_until_the_high_watermark_passes_its_marker(txlog):
    """``ProducerStateManager.completeTxn`` moves the transaction to ``unreplicatedTxns``, which
    still count for ``firstUnstableOffset`` until ``onHighWatermarkUpdated`` passes the marker; and
    ``UnifiedLog.lastStableOffset`` is never above the high watermark."""
    log = txlog.log
    txlog.data(None, 3)  # 0-2
    txlog.hold_hw = True
    txlog.data(P1, 2)  # 3-4
    assert (log.last_stable_offset, log.high_watermark) == (3, 3)
    log.update_high_watermark(2)
    assert log.last_stable_offset == 2  # capped by the high watermark
    log.update_high_watermark(5)
    assert log.last_stable_offset == 3
    txlog.marker(P1, commit=True)  # 5
    assert log.ongoing_transactions == {}
    assert log.last_stable_offset == 3  # the marker is not replicated yet
    log.update_high_watermark(5)
    assert log.last_stable_offset == 3
    log.update_high_watermark(6)
    assert log.last_stable_offset == 6


def test_several_txns_completed_by_one_append_see_each_other_as_open(txlog):
    """``UnifiedLog.append`` computes each completed transaction's LSO before ``completeTxn`` of the
    next one: a replicated append carrying two ABORT markers indexes the first with the second's
    first offset."""
    txlog.data(P1)  # 0
    txlog.data(P2)  # 1
    markers = b"".join(
        encode_end_txn_marker_batch(
            producer_id=pid, producer_epoch=EPOCH, commit=False, coordinator_epoch=0, timestamp=START_MS
        )
        for pid in (P1, P2)
    )
    data = bytearray(markers)
    batches = list(iter_batches(markers))
    second = batches[0].batch_length + 12
    data[0:8] = (2).to_bytes(8, "big")
    data[second : second + 8] = (3).to_bytes(8, "big")
    txlog.log.append(data, assign_offsets=False)
    assert txlog.aborted() == [(P1, 0, 2, 1), (P2, 1, 3, 4)]


def test_a_marker_with_a_stale_producer_epoch_or_coordinator_epoch_is_refused(txlog):
    """``ProducerAppendInfo.checkProducerEpoch``/``appendEndTxnMarker``: an older producer epoch is
    INVALID_PRODUCER_EPOCH (for a coordinator's marker), a lower coordinator epoch
    TRANSACTION_COORDINATOR_FENCED; nothing is written."""
    txlog.data(P1)
    txlog.marker(P1, commit=True, coordinator_epoch=5)
    txlog.data(P1)
    end = txlog.log.log_end_offset
    with pytest.raises(ProducerStateError) as stale:
        txlog.marker(P1, commit=False, epoch=EPOCH - 1, coordinator_epoch=5)
    assert stale.value.error_code == Errors.INVALID_PRODUCER_EPOCH
    with pytest.raises(ProducerStateError) as fenced:
        txlog.marker(P1, commit=False, coordinator_epoch=4)
    assert fenced.value.error_code == Errors.TRANSACTION_COORDINATOR_FENCED
    assert txlog.log.log_end_offset == end
    assert txlog.log.last_stable_offset == 2
