"""Transactions in the partition log, as Kafka's storage layer keeps them: the last stable offset, the
per-segment ``.txnindex`` of aborted transactions (its byte layout, rebuild on recovery, truncation,
deletion, restart) and the aborted-transaction lists a read_committed read returns.

Kafka's classes: ``ProducerStateManager`` (``firstUnstableOffset``, ``lastStableOffset``,
``completeTxn``), ``TransactionIndex``, ``LogSegment.updateTxnIndex``/``collectAbortedTxns``,
``LocalLog.collectAbortedTransactions``/``addAbortedTransactions`` and ``LogLoader.recoverSegment``.
The reader at the end drops aborted batches the way Kafka's consumer does (``CompletedFetch``)."""

from __future__ import annotations

import os
import struct
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kconform.codecs.errors import Errors
from kconform.codecs.records import (
    ControlRecordType,
    Record,
    decode_control_key,
    encode_batch,
    encode_end_txn_marker_batch,
    iter_batches,
)
from kconform.reference_broker.storage import (
    TXN_INDEX_ENTRY_SIZE,
    AbortedTxn,
    AppendOrigin,
    CorruptIndex,
    LogConfig,
    PartitionLog,
    ProducerStateError,
    TransactionIndex,
)

START_MS = 1_700_000_000_000
EPOCH = 3
P1, P2, P3 = 1001, 1002, 1003


class Clock:
    def __init__(self) -> None:
        self.now_ms = START_MS

    def __call__(self) -> int:
        return self.now_ms


class TxnLog:
    """A ``PartitionLog`` with a producer per id (sequences counted here) and marker helpers. The high
    watermark follows the log end unless ``hold_hw`` is set (a follower lagging behind)."""

    def __init__(self, directory: Path, config: LogConfig | None = None) -> None:
        self.directory = directory
        self.config = config or LogConfig()
        self.clock = Clock()
        self.sequences: dict[int, int] = {}
        self.hold_hw = False
        self.log = self._open(None)

    def _open(self, clean_shutdown: bool | None) -> PartitionLog:
        return PartitionLog.open(self.directory, self.config, clock=self.clock, clean_shutdown=clean_shutdown)

    def data(self, producer_id: int | None, count: int = 1, *, values: list[bytes] | None = None) -> int:
        """A transactional batch of ``producer_id`` (None: a plain batch); returns its first offset."""
        values = values or [b"v%d" % i for i in range(count)]
        records = [Record(i, START_MS, b"k", value) for i, value in enumerate(values)]
        if producer_id is None:
            batch = encode_batch(records)
        else:
            sequence = self.sequences.get(producer_id, 0)
            self.sequences[producer_id] = sequence + len(records)
            batch = encode_batch(
                records,
                producer_id=producer_id,
                producer_epoch=EPOCH,
                base_sequence=sequence,
                is_transactional=True,
            )
        return self._append(batch, AppendOrigin.CLIENT)

    def marker(
        self, producer_id: int, *, commit: bool, epoch: int = EPOCH, coordinator_epoch: int = 0
    ) -> int:
        batch = encode_end_txn_marker_batch(
            producer_id=producer_id,
            producer_epoch=epoch,
            commit=commit,
            coordinator_epoch=coordinator_epoch,
            timestamp=START_MS,
        )
        return self._append(batch, AppendOrigin.COORDINATOR)

    def _append(self, batch: bytes, origin: AppendOrigin) -> int:
        info = self.log.append(batch, leader_epoch=0, origin=origin)
        if not self.hold_hw:
            self.log.update_high_watermark(self.log.log_end_offset)
        return info.first_offset

    def restart(self, *, clean: bool) -> None:
        if clean:
            self.log.close()
        else:
            self.log.close_handlers()
        self.log = self._open(None if clean else False)
        # a single-node leader: everything in its log is replicated (Partition does the same)
        self.log.update_high_watermark(self.log.log_end_offset)

    def txn_index_files(self) -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in sorted(self.directory.glob("*.txnindex"))}

    def aborted(self, start: int = 0, upper: int | None = None) -> list[tuple[int, int, int, int]]:
        upper = self.log.log_end_offset if upper is None else upper
        return [
            (a.producer_id, a.first_offset, a.last_offset, a.last_stable_offset)
            for a in self.log.aborted_transactions(start, upper)
        ]


@pytest.fixture
def txlog(tmp_path):
    owner = TxnLog(tmp_path / "orders-0")
    yield owner
    if not owner.log.closed:
        owner.log.close_handlers()


def entry(producer_id: int, first: int, last: int, lso: int) -> bytes:
    return struct.pack(">hqqqq", 0, producer_id, first, last, lso)


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


# ---- reads -------------------------------------------------------------------------------------


def test_a_read_committed_read_lists_the_aborted_txns_up_to_kafkas_upper_bound(tmp_path):
    """``LocalLog.addAbortedTransactions``: the upper bound is the first offset index entry at or
    past the end of the bytes read (``fetchUpperBoundOffset``), so an aborted transaction that starts
    after the read is not listed, one that started before the fetch offset and ends after it is."""
    owner = TxnLog(tmp_path / "orders-0", LogConfig(index_interval_bytes=0))
    owner.data(P1)  # 0
    owner.data(P1)  # 1
    owner.marker(P1, commit=False)  # 2
    owner.data(None)  # 3
    owner.data(P2)  # 4
    owner.marker(P2, commit=False)  # 5
    log = owner.log
    one_batch = log.read(1, 1, include_aborted_txns=True)
    assert [b.base_offset for b in iter_batches(one_batch.read_bytes())] == [1]
    assert [(a.producer_id, a.first_offset) for a in one_batch.aborted_transactions] == [(P1, 0)]
    upto_3 = log.read(3, 1, include_aborted_txns=True)
    assert upto_3.aborted_transactions == []
    everything = log.read(0, 1 << 20, include_aborted_txns=True)
    assert [a.producer_id for a in everything.aborted_transactions] == [P1, P2]
    assert log.read(0, 1 << 20).aborted_transactions is None  # read_uncommitted: no list at all
    at_limit = log.read(6, 1 << 20, include_aborted_txns=True)
    assert at_limit.region is None and at_limit.aborted_transactions == []
    log.close()


def test_aborted_txns_are_collected_across_segments(tmp_path):
    """``LocalLog.collectAbortedTransactions`` walks from the segment holding the start offset through
    the later ones until an entry's LSO reaches the upper bound."""
    owner = TxnLog(tmp_path / "orders-0")
    owner.data(P1)  # 0
    owner.data(P2)  # 1
    owner.log.roll()
    owner.marker(P1, commit=False)  # 2 (segment 2)
    owner.log.roll()
    owner.marker(P2, commit=False)  # 3 (segment 3)
    assert owner.txn_index_files() == {
        "00000000000000000002.txnindex": entry(P1, 0, 2, 1),
        "00000000000000000003.txnindex": entry(P2, 1, 3, 4),
    }
    assert owner.aborted(0, 1) == [(P1, 0, 2, 1)]  # P1's LSO (1) reaches the bound: P2 is not looked at
    assert owner.aborted(0, 2) == [(P1, 0, 2, 1), (P2, 1, 3, 4)]
    assert owner.aborted(3, 4) == [(P2, 1, 3, 4)]
    owner.log.close()


# ---- durability --------------------------------------------------------------------------------


def test_the_txn_index_and_open_txns_survive_a_clean_restart(txlog):
    """A clean close keeps the ``.txnindex`` files and the producer snapshot, which restores the
    open transactions (``ProducerStateManager.loadProducerEntry``)."""
    txlog.data(P1)
    txlog.data(P2)
    txlog.marker(P1, commit=False)
    txlog.data(None)
    before = txlog.txn_index_files()
    txlog.restart(clean=True)
    assert txlog.log.had_clean_shutdown
    assert txlog.txn_index_files() == before
    assert txlog.aborted() == [(P1, 0, 2, 1)]
    assert txlog.log.last_stable_offset == 1
    txlog.marker(P2, commit=True)
    assert txlog.log.last_stable_offset == 5


@pytest.mark.parametrize("damage", ["delete", "garbage", "empty"])
def test_recovery_after_an_unclean_shutdown_rebuilds_the_txn_index(tmp_path, damage):
    """``LogLoader.recoverSegment`` rebuilds the producer state up to the segment's base offset (the
    snapshot below it plus a replay) and ``LogSegment.recover`` re-indexes every ABORT marker it
    replays, with the LSO it had: here a transaction open since an earlier segment."""
    owner = TxnLog(tmp_path / "orders-0", LogConfig(segment_bytes=400))
    owner.data(P2)  # 0: stays open through everything below
    for _ in range(6):
        owner.data(P1, 3)
        owner.data(None, 2)
        owner.marker(P1, commit=False)
    expected = owner.txn_index_files()
    assert len(expected) > 1 and len(list(owner.directory.glob("*.log"))) > 2
    aborted = owner.aborted()
    assert all(lso == 0 for *_, lso in aborted)
    owner.restart(clean=False)  # nothing flushed: every segment is recovered
    owner.log.close_handlers()
    for path in owner.directory.glob("*.txnindex"):
        if damage == "delete":
            path.unlink()
        elif damage == "garbage":
            path.write_bytes(b"\x00\x07" + os.urandom(32) + b"\x01")
        else:
            path.write_bytes(b"")
    for path in owner.directory.glob("*.snapshot"):
        path.unlink()  # force the replay from the log start
    owner.log = PartitionLog.open(owner.directory, owner.config, clock=owner.clock, clean_shutdown=False)
    owner.log.update_high_watermark(owner.log.log_end_offset)
    assert owner.txn_index_files() == expected
    assert owner.aborted() == aborted
    assert owner.log.last_stable_offset == 0
    owner.log.close()


def test_a_torn_marker_is_cut_and_its_transaction_is_open_again(txlog):
    """Recovery cuts a torn last batch; the marker was in it, so no entry is rebuilt for it and the
    transaction holds the LSO again."""
    txlog.data(None)
    txlog.data(P1, 2)  # 1-2
    txlog.marker(P1, commit=False)  # 3
    assert txlog.aborted() == [(P1, 1, 3, 4)]
    txlog.log.close_handlers()
    segment = txlog.directory / "00000000000000000000.log"
    os.truncate(segment, segment.stat().st_size - 5)
    txlog.log = PartitionLog.open(txlog.directory, txlog.config, clock=txlog.clock, clean_shutdown=False)
    txlog.log.update_high_watermark(txlog.log.log_end_offset)
    assert txlog.log.log_end_offset == 3
    assert txlog.aborted() == []
    assert txlog.txn_index_files() == {"00000000000000000000.txnindex": b""}
    assert txlog.log.last_stable_offset == 1


def test_truncation_cuts_the_txn_index_with_the_log(txlog):
    """``LogSegment.truncateTo`` truncates the transaction index to the offset; the producer state is
    rebuilt, so a transaction whose marker went is open again."""
    txlog.data(P1)  # 0
    txlog.marker(P1, commit=False)  # 1
    txlog.data(P2)  # 2
    txlog.marker(P2, commit=False)  # 3
    name = "00000000000000000000.txnindex"
    assert txlog.txn_index_files() == {name: entry(P1, 0, 1, 2) + entry(P2, 2, 3, 4)}
    assert txlog.log.truncate_to(3)
    assert txlog.txn_index_files() == {name: entry(P1, 0, 1, 2)}
    assert txlog.log.last_stable_offset == 2
    assert txlog.log.truncate_to(1)
    assert txlog.txn_index_files() == {name: b""}
    assert txlog.log.last_stable_offset == 0
    txlog.restart(clean=True)
    assert txlog.aborted() == [] and txlog.log.last_stable_offset == 0


def test_the_txn_index_is_deleted_with_its_segment(txlog):
    """Deleting a segment renames all its files ``.deleted`` and removes them after
    ``file.delete.delay.ms`` (``LogSegment.deleteIfExists`` includes the transaction index)."""
    txlog.data(P1)
    txlog.marker(P1, commit=False)
    txlog.log.roll()
    txlog.data(None)
    assert "00000000000000000000.txnindex" in txlog.txn_index_files()
    txlog.log.delete_records_before(2)
    names = {p.name for p in txlog.directory.iterdir()}
    assert "00000000000000000000.txnindex" not in names
    assert "00000000000000000000.txnindex.deleted" in names
    txlog.clock.now_ms += 60_000
    txlog.log.delete_expired_files()
    assert not list(txlog.directory.glob("*.txnindex*"))
    assert txlog.aborted(2) == []


# ---- a read_committed consumer over random interleavings ---------------------------------------


def read_committed(log: PartitionLog, max_bytes: int) -> list[bytes]:
    """Everything a read_committed consumer gets, fetching ``max_bytes`` at a time: each fetch's own
    aborted list drives Kafka's ``CompletedFetch`` filter (a producer's batches are dropped from its
    aborted transaction's first offset until its ABORT marker)."""
    values: list[bytes] = []
    offset = log.log_start_offset
    limit = log.last_stable_offset
    while offset < limit:
        result = log.read(offset, max_bytes, max_offset=limit, include_aborted_txns=True)
        assert result.aborted_transactions is not None
        pending = sorted((a.first_offset, a.producer_id) for a in result.aborted_transactions)
        aborted_producers: set[int] = set()
        batches = list(iter_batches(result.read_bytes()))
        assert batches, f"no whole batch at {offset} below the LSO {limit}"
        for batch in batches:
            if batch.last_offset < offset:
                continue
            while pending and pending[0][0] <= batch.last_offset:
                aborted_producers.add(pending.pop(0)[1])
            if batch.is_control:
                if decode_control_key(batch.records[0].key)[1] == ControlRecordType.ABORT:
                    aborted_producers.discard(batch.producer_id)
            elif not (batch.is_transactional and batch.producer_id in aborted_producers):
                values.extend(r.value for r in batch.records if r.offset >= offset)
            offset = batch.last_offset + 1
    return values


@dataclass
class Model:
    """What was written: (offset, value, transaction) per record; a transaction is a dict with its
    first offset, fate (None while open) and marker offset."""

    records: list[tuple[int, bytes, dict | None]] = field(default_factory=list)
    open: dict[int, dict] = field(default_factory=dict)
    completed: list[dict] = field(default_factory=list)

    def visible_below(self, lso: int) -> list[bytes]:
        return [
            v for offset, v, txn in self.records if offset < lso and (txn is None or txn["fate"] == "commit")
        ]

    def expected_lso(self, high_watermark: int) -> int:
        """Kafka's: the first offset of the oldest open transaction, or of a completed one whose
        marker the high watermark has not passed, but never above the high watermark."""
        unstable = [t["first"] for t in self.open.values()]
        unstable += [t["first"] for t in self.completed if t["marker"] >= high_watermark]
        return min([high_watermark, *unstable])


operations = st.lists(
    st.one_of(
        st.tuples(st.just("data"), st.sampled_from([None, P1, P2, P3]), st.integers(1, 3)),
        st.tuples(st.sampled_from(["commit", "abort"]), st.sampled_from([P1, P2, P3]), st.just(0)),
        st.tuples(st.sampled_from(["roll", "restart", "crash", "lag", "catch_up"]), st.none(), st.just(0)),
    ),
    max_size=30,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(operations, st.integers(40, 400))
def test_a_read_committed_reader_sees_exactly_the_committed_records(ops, max_bytes):
    """Random interleavings of transactional and plain writes, commits, aborts, rolls, restarts,
    crashes and a high watermark that lags: the LSO always equals Kafka's and never passes an open
    transaction's first offset, and a read_committed reader filtering with the returned aborted
    lists sees exactly the committed and plain records below it, in offset order."""
    with tempfile.TemporaryDirectory() as tmp:
        owner = TxnLog(Path(tmp) / "orders-0", LogConfig(index_interval_bytes=64))
        model = Model()
        counter = 0
        try:
            for kind, producer_id, count in ops:
                if kind == "data":
                    values = [b"r%d" % (counter + i) for i in range(count)]
                    counter += count
                    first = owner.data(producer_id, values=values)
                    txn = None
                    if producer_id is not None:
                        txn = model.open.setdefault(producer_id, {"first": first, "fate": None})
                    model.records.extend((first + i, v, txn) for i, v in enumerate(values))
                elif kind in ("commit", "abort"):
                    offset = owner.marker(producer_id, commit=kind == "commit")
                    txn = model.open.pop(producer_id, None)
                    if txn is not None:
                        txn.update(fate=kind, marker=offset)
                        model.completed.append(txn)
                elif kind == "roll":
                    owner.log.roll()
                elif kind == "lag":
                    owner.hold_hw = True
                elif kind == "catch_up":
                    owner.hold_hw = False
                    owner.log.update_high_watermark(owner.log.log_end_offset)
                else:
                    owner.restart(clean=kind == "restart")
                lso = owner.log.last_stable_offset
                assert lso == model.expected_lso(owner.log.high_watermark)
                assert all(lso <= t["first"] for t in model.open.values())
                assert dict(owner.log.ongoing_transactions) == {p: t["first"] for p, t in model.open.items()}
            lso = owner.log.last_stable_offset
            assert read_committed(owner.log, max_bytes) == model.visible_below(lso)
            owner.restart(clean=False)
            assert read_committed(owner.log, max_bytes) == model.visible_below(owner.log.last_stable_offset)
        finally:
            owner.log.close_handlers()
