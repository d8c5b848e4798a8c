"""The producer's decisions without a broker: batch building, readiness and draining, retry decisions,
sequence numbering and the transaction state table."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kconform.codecs.compression import Compression
from kconform.codecs.errors import Errors
from kconform.codecs.records import decode_batch
from kconform.harness.client.accumulator import BatchResult, ProducerBatch, RecordAccumulator
from kconform.harness.client.sender import Outcome, produce_outcome
from kconform.harness.client.transaction_manager import (
    IllegalTransactionState,
    ProducerTxnState,
    TransactionManager,
)


def _accumulator(loop, **kw) -> RecordAccumulator:
    settings = dict(
        batch_size=1000,
        linger_ms=10,
        compression=Compression.NONE,
        compression_level=None,
        delivery_timeout_ms=1000,
        retry_backoff_ms=100,
        buffer_memory=10_000,
        loop=loop,
    )
    settings.update(kw)
    return RecordAccumulator(**settings)


records = st.lists(
    st.tuples(
        st.integers(0, 2**40),
        st.none() | st.binary(max_size=40),
        st.none() | st.binary(max_size=200),
        st.lists(st.tuples(st.text(max_size=5), st.none() | st.binary(max_size=5)), max_size=2),
    ),
    min_size=1,
    max_size=60,
)


@given(records, st.sampled_from(list(Compression)))
def test_a_batch_built_record_by_record_decodes_to_what_was_appended(items, codec):
    loop = asyncio.new_event_loop()
    try:
        batch = ProducerBatch("t", 0, 0.0, 1 << 20, 1 << 20, loop.create_future())
        for timestamp, key, value, headers in items:
            assert batch.try_append(timestamp, key, value, headers or None) >= 0
        batch.close(codec, None)
        batch.producer_id, batch.producer_epoch, batch.base_sequence = 7, 2, 40
        decoded = decode_batch(batch.encode(codec))
    finally:
        loop.close()
    assert decoded.compression == codec
    assert (decoded.producer_id, decoded.producer_epoch, decoded.base_sequence) == (7, 2, 40)
    assert decoded.max_timestamp == max(t for t, *_ in items)
    got = [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in decoded.records]
    want = [(i, t, k, v, h) for i, (t, k, v, h) in enumerate(items)]
    assert got == want


def test_a_batch_refuses_a_record_that_would_pass_its_limit_but_always_takes_the_first():
    loop = asyncio.new_event_loop()
    batch = ProducerBatch("t", 0, 0.0, 200, 200, loop.create_future())
    assert batch.try_append(1, None, b"x" * 500, None) == 0  # alone it may exceed the limit
    assert batch.try_append(1, None, b"x", None) == -1
    loop.close()


def test_readiness_follows_linger_fullness_and_backoff():
    loop = asyncio.new_event_loop()
    acc = _accumulator(loop)
    leader = {("t", 0): 1, ("t", 1): 2, ("u", 0): -1}.get

    def leader_for(topic, partition):
        return leader((topic, partition), -1)

    acc.append("t", 0, 1, None, b"v", None, now=0.0)
    acc.append("u", 0, 1, None, b"v", None, now=0.0)
    nodes, delay, unknown = acc.ready(leader_for, now=0.004)
    assert nodes == set() and delay == pytest.approx(0.006) and unknown == {"u"}
    nodes, _, _ = acc.ready(leader_for, now=0.010)
    assert nodes == {1}  # linger passed
    for _ in range(30):  # fill partition 1 past one batch: sendable at once
        acc.append("t", 1, 1, None, b"x" * 100, None, now=0.0)
    nodes, _, _ = acc.ready(leader_for, now=0.0)
    assert nodes == {2}
    drained = acc.drain(leader_for, 2, 1 << 20, 0.0, lambda b: True)
    assert len(drained) == 1 and drained[0].partition == 1  # one batch per partition per request
    acc.reenqueue(drained[0], now=1.0)
    assert acc.drain(leader_for, 2, 1 << 20, 1.05, lambda b: True) == []  # backing off
    assert acc.drain(leader_for, 2, 1 << 20, 1.2, lambda b: True)[0] is drained[0]
    loop.close()


def test_memory_is_reserved_per_batch_and_given_back():
    loop = asyncio.new_event_loop()
    acc = _accumulator(loop, buffer_memory=2500)
    assert acc.append("t", 0, 1, None, b"v", None, 0.0) is not None
    assert acc.append("t", 1, 1, None, b"v", None, 0.0) is not None
    assert acc.append("t", 2, 1, None, b"v", None, 0.0) is None  # a third 1000-byte batch: no room
    assert acc.append("t", 0, 1, None, b"v", None, 0.0) is not None  # an open batch still takes records
    first = acc.drain(lambda t, p: 1, 1, 1 << 20, 1.0, lambda b: True)
    for batch in first:
        acc.release(batch)
        batch.complete(BatchResult(0, -1, 0), None)
    assert acc.append("t", 2, 1, None, b"v", None, 1.0) is not None
    loop.close()


def test_expired_batches_leave_their_queues():
    loop = asyncio.new_event_loop()
    acc = _accumulator(loop, delivery_timeout_ms=500)
    acc.append("t", 0, 1, None, b"v", None, 0.0)
    assert acc.expired(0.4) == []
    gone = acc.expired(0.5)
    assert len(gone) == 1 and not acc.has_queued()
    loop.close()


@pytest.mark.parametrize(
    ("code", "idempotent", "next_in_flight", "attempts", "expired", "outcome"),
    [
        (0, False, False, 0, False, Outcome.COMPLETE),
        (Errors.NOT_LEADER_OR_FOLLOWER, False, False, 0, False, Outcome.RETRY),
        (Errors.REQUEST_TIMED_OUT, True, True, 3, False, Outcome.RETRY),
        (-1, False, False, 0, False, Outcome.RETRY),  # connection lost
        (Errors.NOT_LEADER_OR_FOLLOWER, False, False, 5, False, Outcome.FAIL),  # retries spent
        (Errors.NOT_LEADER_OR_FOLLOWER, False, False, 0, True, Outcome.FAIL),  # delivery timeout
        (Errors.MESSAGE_TOO_LARGE, False, False, 0, False, Outcome.FAIL),
        (Errors.CORRUPT_MESSAGE, False, False, 0, False, Outcome.RETRY),  # Kafka calls it retriable
        (Errors.DUPLICATE_SEQUENCE_NUMBER, True, True, 1, False, Outcome.COMPLETE),
        (Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, True, False, 1, False, Outcome.RETRY),
        (Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, True, True, 1, False, Outcome.FAIL),
        (Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, False, False, 1, False, Outcome.FAIL),
    ],
)
def test_produce_outcome(code, idempotent, next_in_flight, attempts, expired, outcome):
    decision = produce_outcome(
        code,
        attempts=attempts,
        retries=5,
        delivery_expired=expired,
        idempotent=idempotent,
        next_in_flight=next_in_flight,
    )
    assert decision.outcome is outcome


def test_invalid_metadata_errors_ask_for_a_metadata_refresh():
    assert produce_outcome(
        Errors.NOT_LEADER_OR_FOLLOWER,
        attempts=0,
        retries=5,
        delivery_expired=False,
        idempotent=False,
        next_in_flight=False,
    ).refresh_metadata
    assert not produce_outcome(
        Errors.NOT_ENOUGH_REPLICAS,
        attempts=0,
        retries=5,
        delivery_expired=False,
        idempotent=False,
        next_in_flight=False,
    ).refresh_metadata


def _batch(loop, count=3, partition=0):
    batch = ProducerBatch("t", partition, 0.0, 1 << 20, 0, loop.create_future())
    for _ in range(count):
        batch.try_append(1, None, b"v", None)
    return batch


def test_sequences_are_consecutive_per_partition_and_kept_across_retries():
    loop = asyncio.new_event_loop()
    txn = TransactionManager(None, 60_000)
    txn.set_producer(5, 0)
    a, b, c = _batch(loop, 3), _batch(loop, 2), _batch(loop, 4, partition=1)
    for batch in (a, b, c):
        assert txn.may_send(batch)
        txn.assign(batch)
    assert (a.base_sequence, b.base_sequence, c.base_sequence) == (0, 3, 0)
    # a fails and is retried: it keeps its sequence and goes first; b must wait for it
    assert txn.may_send(a) and not txn.may_send(b)
    txn.assign(a)
    assert a.base_sequence == 0
    txn.done(a, failed=False)
    assert txn.may_send(b)
    loop.close()


def test_a_failed_sequenced_batch_needs_an_epoch_bump_that_restarts_sequences():
    loop = asyncio.new_event_loop()
    txn = TransactionManager(None, 60_000)
    txn.set_producer(5, 0)
    a, b = _batch(loop), _batch(loop)
    txn.assign(a)
    txn.assign(b)
    txn.done(a, failed=True)
    assert txn.epoch_bump_required and not txn.may_send(b)
    txn.bump_epoch(5, 1)
    assert txn.may_send(b)  # b now counts as new: re-sequenced from 0 under epoch 1
    txn.assign(b)
    assert (b.producer_epoch, b.base_sequence) == (1, 0)
    loop.close()


def test_an_epoch_bump_restarts_only_the_partition_with_the_hole():
    """Partition 0 lost batch c for good; partition 1's a went out, had no answer and waits to be
    retried, and b, sent after it to a new leader that never saw a, was acknowledged. The bump
    rewrites partition 0 only: a keeps (epoch 0, sequence 0), so the broker that took b's sequence 3
    refuses it as out of order rather than writing it after b under a fresh epoch; a new batch of
    partition 1 waits for a, then starts from 0 under epoch 1 (Java's partitionsToRewriteSequences
    and RecordAccumulator's hold on new batches while older-epoch ones are in flight)."""
    loop = asyncio.new_event_loop()
    txn = TransactionManager(None, 60_000)
    txn.set_producer(5, 0)
    a, b = _batch(loop, partition=1), _batch(loop, partition=1)
    c, d = _batch(loop, partition=0), _batch(loop, partition=0)
    for batch in (a, b, c, d):
        txn.assign(batch)
    txn.done(b, failed=False)
    txn.done(c, failed=True)
    assert txn.epoch_bump_required
    txn.bump_epoch(5, 1)
    assert not txn.epoch_bump_required
    assert txn.may_send(d)  # partition 0 starts again: its retry re-sequenced from 0 under epoch 1
    txn.assign(d)
    assert (d.producer_epoch, d.base_sequence) == (1, 0)
    assert txn.may_send(a) and txn.is_next_in_flight(a)
    txn.assign(a)
    assert (a.producer_epoch, a.base_sequence) == (0, 0)  # not re-sequenced
    e = _batch(loop, partition=1)
    assert not txn.may_send(e)  # waits while partition 1 has an epoch-0 batch in flight
    txn.done(a, failed=True)  # OUT_OF_ORDER_SEQUENCE_NUMBER: a fails, and partition 1 has a hole now
    assert txn.epoch_bump_required
    txn.bump_epoch(5, 2)
    assert txn.may_send(e)
    txn.assign(e)
    assert (e.producer_epoch, e.base_sequence) == (2, 0)
    f = _batch(loop, partition=0)
    assert not txn.may_send(f)  # partition 0 had no hole at the second bump: d finishes under epoch 1
    txn.done(d, failed=False)
    assert txn.may_send(f)
    txn.assign(f)
    assert (f.producer_epoch, f.base_sequence) == (2, 0)
    loop.close()


def test_transactional_batches_wait_for_their_partition_to_join_the_transaction():
    loop = asyncio.new_event_loop()
    txn = TransactionManager("tx", 60_000)
    txn.set_producer(9, 0)
    txn.transition(ProducerTxnState.INITIALIZING)
    txn.transition(ProducerTxnState.READY)
    txn.begin()
    batch = _batch(loop)
    txn.note_partition("t", 0)
    assert not txn.may_send(batch) and txn.pending_partitions == {("t", 0)}
    txn.partitions_added({("t", 0)})
    assert txn.may_send(batch) and txn.started
    loop.close()


@pytest.mark.parametrize(
    ("start", "target", "allowed"),
    [
        (ProducerTxnState.READY, ProducerTxnState.IN_TRANSACTION, True),
        (ProducerTxnState.READY, ProducerTxnState.COMMITTING, False),
        (ProducerTxnState.IN_TRANSACTION, ProducerTxnState.COMMITTING, True),
        (ProducerTxnState.ABORTABLE_ERROR, ProducerTxnState.COMMITTING, False),
        (ProducerTxnState.ABORTABLE_ERROR, ProducerTxnState.ABORTING, True),
        (ProducerTxnState.UNINITIALIZED, ProducerTxnState.IN_TRANSACTION, False),
        (ProducerTxnState.COMMITTING, ProducerTxnState.READY, True),
    ],
)
def test_transaction_state_table(start, target, allowed):
    txn = TransactionManager("tx", 60_000)
    txn.state = start
    if allowed:
        txn.transition(target)
        assert txn.state is target
    else:
        with pytest.raises(IllegalTransactionState):
            txn.transition(target)
        assert txn.state is start


def test_an_abortable_error_must_be_aborted_before_anything_else():
    txn = TransactionManager("tx", 60_000)
    txn.state = ProducerTxnState.IN_TRANSACTION
    txn.fail(RuntimeError("boom"), fatal=False)
    assert txn.state is ProducerTxnState.ABORTABLE_ERROR
    with pytest.raises(IllegalTransactionState, match="must be aborted"):
        txn.require(ProducerTxnState.IN_TRANSACTION, action="commit")
    txn.fail(RuntimeError("fenced"), fatal=True)
    with pytest.raises(IllegalTransactionState, match="failed"):
        txn.require(ProducerTxnState.IN_TRANSACTION, ProducerTxnState.ABORTABLE_ERROR, action="abort")
