"""Transactions in the partition log, below the network: the ``.txnindex`` files (Kafka's
``TransactionIndex``, ``LogSegment.updateTxnIndex``), the last stable offset (``ProducerStateManager``
ongoing and unreplicated transactions, ``UnifiedLog.lastStableOffset``) and the aborted transactions a
read_committed read returns (``LocalLog.addAbortedTransactions``, ``collectAbortedTransactions``).

The property test plays random interleavings of transactional writes, commits, aborts, plain writes,
high watermark moves, rolls, crashes and restarts, and reads the log back the way Kafka's consumer does
(``CompletedFetch.nextFetchedRecord``): it must see exactly the committed and plain records below the
LSO, in offset order; the LSO must never pass the first offset of an open transaction; the index files
must hold exactly the aborted transactions, each with the LSO Kafka records."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kconform.codecs.records import (
    ControlRecordType,
    Record,
    decode_control_key,
    encode_batch,
    encode_end_txn_marker_batch,
    iter_batches,
)
from kconform.reference_broker.storage import (
    AppendOrigin,
    LogConfig,
    PartitionLog,
    ProducerStateError,
    VerdictKind,
)
from kconform.reference_broker.storage._txn_index import AbortedTxn, TransactionIndex

START_MS = 1_700_000_000_000
ENTRY_SIZE = 34


def entry_bytes(producer_id: int, first: int, last: int, lso: int, version: int = 0) -> bytes:
    """One ``.txnindex`` entry, spelled out field by field."""
    return (
        version.to_bytes(2, "big", signed=True)
        + producer_id.to_bytes(8, "big", signed=True)
        + first.to_bytes(8, "big", signed=True)
        + last.to_bytes(8, "big", signed=True)
        + lso.to_bytes(8, "big", signed=True)
    )


def txn_index_path(directory: Path, base_offset: int) -> Path:
    return directory / f"{base_offset:020d}.txnindex"


def txn_index_bytes(directory: Path, base_offset: int = 0) -> bytes:
    path = txn_index_path(directory, base_offset)
    return path.read_bytes() if path.exists() else b""


@dataclass
class Writer:
    """Appends to a log as producers and the transaction coordinator would: data with the client's
    origin and sequence numbers, markers with the coordinator's. With ``follow`` the high watermark
    moves to the log end after every append (a leader alone in its ISR)."""

    log: PartitionLog
    follow: bool = True
    sequences: dict[int, int] = field(default_factory=dict)
    counter: int = 0

    def _append(self, batch: bytes, origin: AppendOrigin) -> tuple[int, int]:
        info = self.log.append(batch, leader_epoch=0, origin=origin)
        if self.follow:
            self.log.update_high_watermark(self.log.log_end_offset)
        return info.first_offset, info.last_offset

    def _records(self, n: int, tag: str) -> list[Record]:
        records = []
        for i in range(n):
            records.append(Record(i, START_MS, None, f"{tag}-{self.counter}".encode()))
            self.counter += 1
        return records

    def txn(self, producer_id: int, n: int = 1, *, epoch: int = 0) -> tuple[int, int]:
        seq = self.sequences.get(producer_id, 0)
        batch = encode_batch(
            self._records(n, f"p{producer_id}"),
            producer_id=producer_id,
            producer_epoch=epoch,
            base_sequence=seq,
            is_transactional=True,
        )
        offsets = self._append(batch, AppendOrigin.CLIENT)
        self.sequences[producer_id] = seq + n
        return offsets

    def plain(self, n: int = 1) -> tuple[int, int]:
        return self._append(encode_batch(self._records(n, "plain")), AppendOrigin.CLIENT)

    def end(self, producer_id: int, commit: bool, *, epoch: int = 0, coordinator_epoch: int = 0) -> int:
        batch = encode_end_txn_marker_batch(
            producer_id=producer_id,
            producer_epoch=epoch,
            commit=commit,
            coordinator_epoch=coordinator_epoch,
            timestamp=START_MS,
        )
        return self._append(batch, AppendOrigin.COORDINATOR)[0]


def aborted(log: PartitionLog, start: int, upper: int) -> list[tuple[int, int, int, int]]:
    return [
        (a.producer_id, a.first_offset, a.last_offset, a.last_stable_offset)
        for a in log.aborted_transactions(start, upper)
    ]


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


# ---- recovery, restart, truncation, deletion ---------------------------------------------------------


def test_recovery_after_an_unclean_shutdown_rebuilds_the_index(open_log, log_dir):
    """LogSegment.recover empties the transaction index and replays the segment's batches into the
    producer state as of its base offset (LogLoader.recoverSegment), re-adding every aborted one."""
    config = LogConfig(segment_bytes=250)
    log = open_log(config)
    w = Writer(log)
    w.txn(1)
    w.txn(2)
    w.end(2, commit=False)
    w.txn(3, 3)
    w.end(1, commit=False)
    w.txn(2)
    w.end(3, commit=False)
    w.end(2, commit=False)
    bases = [s.base_offset for s in log.segments]
    assert len(bases) > 2  # the transactions span segments
    before = {base: txn_index_bytes(log_dir, base) for base in bases}
    assert sum(len(data) for data in before.values()) == 4 * ENTRY_SIZE
    wanted = aborted(log, 0, log.log_end_offset)
    log.close_handlers()  # a crash: nothing flushed, so every segment is recovered
    for base in bases:
        txn_index_path(log_dir, base).unlink(missing_ok=True)
    reopened = open_log(config)
    assert not reopened.had_clean_shutdown
    assert {base: txn_index_bytes(log_dir, base) for base in bases} == before
    assert aborted(reopened, 0, reopened.log_end_offset) == wanted


def test_recovery_drops_the_entry_of_a_torn_marker_and_reopens_its_transaction(open_log, log_dir):
    """A marker cut by the crash is not in the recovered log, so neither is its index entry: the
    transaction is open again and holds the LSO back."""
    log = open_log()
    w = Writer(log)
    w.txn(5, 2)  # 0-1
    marker = w.end(5, commit=False)  # 2
    assert txn_index_bytes(log_dir) == entry_bytes(5, 0, 2, 3)
    log.close_handlers()
    segment = log_dir / f"{0:020d}.log"
    segment.write_bytes(segment.read_bytes()[:-5])  # the marker batch is torn
    reopened = open_log()
    assert reopened.log_end_offset == marker
    assert txn_index_bytes(log_dir) == b""
    reopened.update_high_watermark(reopened.log_end_offset)
    assert (dict(reopened.ongoing_transactions), reopened.last_stable_offset) == ({5: 0}, 0)


def test_a_clean_restart_keeps_the_index_and_a_corrupt_one_is_rebuilt(open_log, log_dir):
    """After a clean shutdown the files are trusted, but a failed TransactionIndex.sanityCheck (or an
    unknown entry version) sends the segment to recovery, which writes the index again."""
    log = open_log()
    w = Writer(log)
    w.txn(1)
    w.end(1, commit=False)
    good = txn_index_bytes(log_dir)
    log.close()
    reopened = open_log()
    assert reopened.had_clean_shutdown and txn_index_bytes(log_dir) == good
    assert aborted(reopened, 0, 2) == [(1, 0, 1, 2)]
    for bad in (entry_bytes(1, 0, 1, 2, version=1), good + good):  # unknown version; not increasing
        reopened.close()
        txn_index_path(log_dir, 0).write_bytes(bad)
        reopened = open_log()
        assert reopened.had_clean_shutdown
        assert aborted(reopened, 0, 2) == [(1, 0, 1, 2)]
        assert txn_index_bytes(log_dir) == good


def test_truncation_cuts_the_index_and_reopens_the_transaction(open_log, log_dir):
    """LogSegment.truncateTo cuts the transaction index at the first marker at or past the offset;
    the producer state is rebuilt, so the cut-off marker's transaction is open again."""
    log = open_log()
    w = Writer(log)
    w.txn(1)  # 0
    w.end(1, commit=False)  # 1
    w.txn(2, 2)  # 2-3
    w.end(2, commit=False)  # 4
    assert len(txn_index_bytes(log_dir)) == 2 * ENTRY_SIZE
    log.truncate_to(4)
    assert txn_index_bytes(log_dir) == entry_bytes(1, 0, 1, 2)
    assert (dict(log.ongoing_transactions), log.last_stable_offset) == ({2: 2}, 2)
    log.truncate_to(1)
    assert txn_index_bytes(log_dir) == b""
    assert log.last_stable_offset == 0


def test_the_index_goes_with_its_segment(open_log, log_dir, clock):
    """A deleted segment's files, transaction index included, are renamed ``.deleted`` and removed
    after file.delete.delay.ms; an index file without a log file is removed when the log opens."""
    log = open_log(LogConfig(file_delete_delay_ms=1000))
    w = Writer(log)
    w.txn(1)
    w.end(1, commit=False)
    log.roll()
    w.plain()
    log.delete_records_before(2)
    assert not txn_index_path(log_dir, 0).exists()
    deleted = log_dir / f"{0:020d}.txnindex.deleted"
    assert deleted.exists()
    clock.advance(1000)
    log.delete_expired_files()
    assert not deleted.exists()
    assert aborted(log, 2, 3) == []
    log.close()
    orphan = txn_index_path(log_dir, 99)
    orphan.write_bytes(entry_bytes(1, 99, 100, 101))
    open_log()
    assert not orphan.exists()


# ---- the property: what a read_committed consumer sees -------------------------------------------------


def consume_committed(log: PartitionLog, max_bytes: int) -> Iterator[tuple[int, bytes]]:
    """(offset, value) of every record a read_committed consumer returns, fetching from 0 up to the
    LSO ``max_bytes`` at a time with Kafka's consumer rules: a fetch's aborted transactions, ordered by
    first offset, mark their producers aborted once a batch reaches them; a transactional batch of an
    aborted producer is dropped; that producer's ABORT marker clears it; control batches are skipped."""
    offset = 0
    while True:
        read = log.read(
            offset,
            max_bytes,
            max_offset=log.last_stable_offset,
            whole_batches=True,
            include_aborted_txns=True,
        )
        batches = list(iter_batches(read.read_bytes()))
        if not batches:
            return
        pending = sorted(read.aborted_transactions, key=lambda a: a.first_offset)
        aborted_producers: set[int] = set()
        for batch in batches:
            if batch.producer_id >= 0:
                while pending and pending[0].first_offset <= batch.last_offset:
                    aborted_producers.add(pending.pop(0).producer_id)
                if batch.is_control and _is_abort(batch):
                    aborted_producers.discard(batch.producer_id)
                elif batch.is_transactional and batch.producer_id in aborted_producers:
                    offset = batch.next_offset
                    continue
            if not batch.is_control:
                yield from ((r.offset, r.value) for r in batch.records if r.offset >= offset)
            offset = batch.next_offset


def _is_abort(batch) -> bool:
    return bool(batch.records) and decode_control_key(batch.records[0].key)[1] == ControlRecordType.ABORT


PRODUCERS = (11, 12, 13)
_txn = st.tuples(st.just("txn"), st.sampled_from(PRODUCERS), st.integers(1, 3))
_end = st.tuples(st.just("end"), st.sampled_from(PRODUCERS), st.booleans())
operations = st.lists(
    st.one_of(
        _txn,
        _txn,
        _end,
        _end,
        st.tuples(st.just("plain"), st.integers(1, 2)),
        st.tuples(st.just("hw"), st.integers(0, 3)),
        st.tuples(st.just("roll")),
        st.tuples(st.just("crash")),
        st.tuples(st.just("restart")),
    ),
    max_size=40,
)


@dataclass
class Model:
    """What should be in the log: each record's transaction (None for plain records), each producer's
    open transaction, the completed ones whose markers the high watermark may not have passed, the
    expected index entries and the batch boundaries (where a high watermark can be)."""

    records: dict[int, tuple[bytes, list | None]] = field(default_factory=dict)  # offset -> (value, fate)
    open_txn: dict[int, tuple[int, list]] = field(default_factory=dict)  # producer -> (first, fate)
    completed: list[tuple[int, int]] = field(default_factory=list)  # (first offset, marker offset)
    index: list[tuple[int, int, int, int]] = field(default_factory=list)
    boundaries: list[int] = field(default_factory=lambda: [0])
    high_watermark: int = 0

    def expected_lso(self) -> int:
        firsts = [first for first, _ in self.open_txn.values()]
        firsts += [first for first, marker in self.completed if marker >= self.high_watermark]
        return min([*firsts, self.high_watermark])


def apply(op: tuple, w: Writer, model: Model) -> None:
    if op[0] == "txn":
        _, pid, n = op
        first, last = w.txn(pid, n)
        fate = model.open_txn.setdefault(pid, (first, ["open"]))[1]
        for offset in range(first, last + 1):
            model.records[offset] = (f"p{pid}-{w.counter - (last - offset) - 1}".encode(), fate)
        model.boundaries.append(last + 1)
    elif op[0] == "plain":
        first, last = w.plain(op[1])
        for offset in range(first, last + 1):
            model.records[offset] = (f"plain-{w.counter - (last - offset) - 1}".encode(), None)
        model.boundaries.append(last + 1)
    elif op[0] == "end":
        _, pid, commit = op
        marker = w.end(pid, commit)
        model.boundaries.append(marker + 1)
        txn = model.open_txn.pop(pid, None)
        if txn is not None:
            txn[1][0] = "committed" if commit else "aborted"
            model.completed.append((txn[0], marker))
            if not commit:
                others = [first for first, _ in model.open_txn.values()]
                model.index.append((pid, txn[0], marker, min(others, default=marker + 1)))
    elif op[0] == "hw":  # a follower caught up to some batch boundary
        target = model.boundaries[max(0, len(model.boundaries) - 1 - op[1])]
        model.high_watermark = max(model.high_watermark, target)
        w.log.update_high_watermark(model.high_watermark)
    elif op[0] == "roll":
        w.log.roll()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=operations, max_bytes=st.integers(1, 600), segment_bytes=st.sampled_from([300, 700, 1 << 20]))
def test_read_committed_sees_exactly_the_committed_records_in_order(ops, max_bytes, segment_bytes, new_clock):
    config = LogConfig(segment_bytes=segment_bytes, index_interval_bytes=100)
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp) / "orders-0"
        clock = new_clock()
        w = Writer(PartitionLog.open(directory, config, clock=clock), follow=False)
        model = Model()
        try:
            for op in ops:
                if op[0] in ("crash", "restart"):
                    if op[0] == "crash":
                        w.log.close_handlers()
                    else:
                        w.log.close()
                    w.log = PartitionLog.open(directory, config, clock=clock)
                    model.high_watermark = w.log.log_end_offset  # a leader alone in its ISR
                    w.log.update_high_watermark(model.high_watermark)
                else:
                    apply(op, w, model)
                lso = w.log.last_stable_offset
                assert lso == model.expected_lso()
                assert all(lso <= first for first, _ in model.open_txn.values())

            on_disk = b"".join(p.read_bytes() for p in sorted(directory.glob("*.txnindex")))
            assert on_disk == b"".join(entry_bytes(*e) for e in model.index)
            lso = w.log.last_stable_offset
            wanted = [
                (offset, value)
                for offset, (value, fate) in sorted(model.records.items())
                if offset < lso and (fate is None or fate[0] == "committed")
            ]
            assert list(consume_committed(w.log, max_bytes)) == wanted
        finally:
            if not w.log.closed:
                w.log.close_handlers()
