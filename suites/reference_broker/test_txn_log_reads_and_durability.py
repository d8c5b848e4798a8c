"""Transactions in the partition log, as Kafka's storage layer keeps them: the aborted-transaction lists
a read_committed read returns, the ``.txnindex`` through restart, recovery, truncation and deletion,
and a read_committed reader over random interleavings, dropping aborted batches the way Kafka's
consumer does (``CompletedFetch``).

Kafka's classes: ``ProducerStateManager`` (``firstUnstableOffset``, ``lastStableOffset``,
``completeTxn``), ``TransactionIndex``, ``LogSegment.updateTxnIndex``/``collectAbortedTxns``,
``LocalLog.collectAbortedTransactions``/``addAbortedTransactions`` and ``LogLoader.recoverSegment``."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kconform.codecs.records import (
    ControlRecordType,
    decode_control_key,
    iter_batches,
)
from kconform.reference_broker.storage import (
    LogConfig,
    PartitionLog,
)

from ..support.txn_log import (
    P1,
    P2,
    P3,
    TxnLog,
    entry,
)

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
