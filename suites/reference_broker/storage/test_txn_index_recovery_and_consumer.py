"""Transactions in the partition log, below the network: the ``.txnindex`` files through recovery after
an unclean shutdown, a clean restart, truncation and segment deletion, and a property test.

The property test plays random interleavings of transactional writes, commits, aborts, plain writes,
high watermark moves, rolls, crashes and restarts, and reads the log back the way Kafka's consumer does
(``CompletedFetch.nextFetchedRecord``): it must see exactly the committed and plain records below the
LSO, in offset order; the LSO must never pass the first offset of an open transaction; the index files
must hold exactly the aborted transactions, each with the LSO Kafka records."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

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

from ...support.txn_index_writer import (
    ENTRY_SIZE,
    Writer,
    aborted,
    entry_bytes,
    txn_index_bytes,
    txn_index_path,
)

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
