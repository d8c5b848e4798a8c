"""Producer id, sequence numbers and transaction state (Kafka's TransactionManager), without I/O.

Idempotence: each partition's batches carry consecutive sequence numbers from 0 under one producer
id and epoch. A batch keeps its sequence across retries, so the broker can drop a duplicate; a
retried batch goes out only when it is the oldest one in flight for its partition, so a retry never
overtakes an older batch. When a batch fails for good after taking a sequence, the partition's
sequence has a hole the broker will never see filled: the producer bumps its epoch (KIP-360). As in the
Java client, only the partitions with a hole start again from 0 at once (their retries re-sequenced:
TransactionManager.partitionsToRewriteSequences); every other partition finishes what it has in flight
under the old epoch, retries included, and starts from 0 under the new one only when nothing is left.
Re-sequencing a retry there could put it behind a later batch the broker already took (a new leader
that never saw the retry's first attempt takes any sequence from an unknown producer).

Transactions: the states and the moves between them are the table below (TransactionManager.State);
a move not in the table is the caller's mistake and raises ``IllegalTransactionState``."""

from __future__ import annotations

from enum import Enum

from .accumulator import ProducerBatch
from .errors import ClientError

__all__ = ["IllegalTransactionState", "ProducerTxnState", "TransactionManager"]


class ProducerTxnState(Enum):
    """The producer-side transaction manager's state (Kafka's ``TransactionManager.State``), not the
    transaction coordinator's ``TxnState`` of ``reference_broker.transactions``."""

    UNINITIALIZED = "uninitialized"
    INITIALIZING = "initializing"
    READY = "ready"
    IN_TRANSACTION = "in_transaction"
    COMMITTING = "committing_transaction"
    ABORTING = "aborting_transaction"
    ABORTABLE_ERROR = "abortable_error"
    FATAL_ERROR = "fatal_error"


S = ProducerTxnState
# Kafka's TransactionManager.State.isTransitionValid, as a table: state -> states it may come from.
_ALLOWED_FROM: dict[ProducerTxnState, frozenset[ProducerTxnState]] = {
    S.UNINITIALIZED: frozenset(S),
    S.INITIALIZING: frozenset({S.UNINITIALIZED, S.ABORTING}),
    S.READY: frozenset({S.INITIALIZING, S.COMMITTING, S.ABORTING}),
    S.IN_TRANSACTION: frozenset({S.READY}),
    S.COMMITTING: frozenset({S.IN_TRANSACTION}),
    S.ABORTING: frozenset({S.IN_TRANSACTION, S.ABORTABLE_ERROR}),
    S.ABORTABLE_ERROR: frozenset({S.IN_TRANSACTION, S.COMMITTING, S.ABORTABLE_ERROR, S.ABORTING}),
    S.FATAL_ERROR: frozenset(S),
}


class IllegalTransactionState(ClientError):
    """A transactional call out of turn (commit without begin, begin twice, anything after a fatal
    error)."""


class TransactionManager:
    def __init__(self, transactional_id: str | None, transaction_timeout_ms: int) -> None:
        self.transactional_id = transactional_id
        self.transaction_timeout_ms = transaction_timeout_ms
        self.producer_id = -1
        self.producer_epoch = -1
        self.state = ProducerTxnState.UNINITIALIZED
        self.last_error: BaseException | None = None
        self.epoch_bump_required = False
        self._next_sequence: dict[tuple[str, int], int] = {}
        self._in_flight: dict[tuple[str, int], list[ProducerBatch]] = {}
        self._epoch_of: dict[tuple[str, int], int] = {}  # the epoch a partition's sequences run under
        self._rewrite: set[tuple[str, int]] = set()  # partitions with a hole: from 0 at the next bump
        self.partitions_in_txn: set[tuple[str, int]] = set()
        self.pending_partitions: set[tuple[str, int]] = set()  # written to, not yet added
        self.offsets_group_added = False

    @property
    def transactional(self) -> bool:
        return self.transactional_id is not None

    @property
    def started(self) -> bool:
        """Whether the coordinator knows of this transaction (a partition or offsets were added)."""
        return bool(self.partitions_in_txn) or self.offsets_group_added

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id >= 0

    # ---- transaction states ---------------------------------------------------------------------

    def transition(self, target: ProducerTxnState, error: BaseException | None = None) -> None:
        if self.state not in _ALLOWED_FROM[target]:
            raise IllegalTransactionState(
                f"transactional id {self.transactional_id!r}: cannot move from {self.state.value} "
                f"to {target.value}"
            )
        self.state = target
        if target in (S.ABORTABLE_ERROR, S.FATAL_ERROR):
            self.last_error = error
        elif target is S.READY:
            self.last_error = None

    def fail(self, error: BaseException, *, fatal: bool) -> None:
        if not fatal and self.state is S.ABORTING:
            return  # records failing while the transaction aborts change nothing
        if fatal or not self.transactional or self.state not in _ALLOWED_FROM[S.ABORTABLE_ERROR]:
            self.state = S.FATAL_ERROR
            self.last_error = error
        else:
            self.transition(S.ABORTABLE_ERROR, error)

    def require(self, *states: ProducerTxnState, action: str) -> None:
        if self.state is S.FATAL_ERROR:
            raise IllegalTransactionState(f"cannot {action}: the producer failed: {self.last_error}")
        if self.state not in states:
            if self.state is S.ABORTABLE_ERROR:
                raise IllegalTransactionState(
                    f"cannot {action}: the transaction must be aborted after: {self.last_error}"
                )
            raise IllegalTransactionState(f"cannot {action} in state {self.state.value}")

    def set_producer(self, producer_id: int, epoch: int) -> None:
        changed = producer_id != self.producer_id or epoch != self.producer_epoch
        self.producer_id = producer_id
        self.producer_epoch = epoch
        if changed:  # a new producer (or a transactional one after its transaction): all from 0
            self._next_sequence.clear()
            self._in_flight.clear()
            self._epoch_of.clear()
            self._rewrite.clear()
        self.epoch_bump_required = False

    def bump_epoch(self, producer_id: int, epoch: int) -> None:
        """An idempotent producer's epoch bump (TransactionManager.bumpIdempotentProducerEpoch): the
        partitions with a hole start again from 0; the others keep their sequences under the old epoch
        until their last batch in flight is done."""
        if producer_id != self.producer_id:
            self.set_producer(producer_id, epoch)
            return
        self.producer_epoch = epoch
        for tp in self._rewrite:
            self._next_sequence.pop(tp, None)
            self._in_flight.pop(tp, None)
            self._epoch_of.pop(tp, None)
        self._rewrite.clear()
        self.epoch_bump_required = False

    def begin(self) -> None:
        self.require(S.READY, action="begin a transaction")
        self.transition(S.IN_TRANSACTION)
        self.partitions_in_txn.clear()
        self.pending_partitions.clear()
        self.offsets_group_added = False

    def note_partition(self, topic: str, partition: int) -> None:
        """A record was sent to this partition inside the transaction."""
        tp = (topic, partition)
        if tp not in self.partitions_in_txn:
            self.pending_partitions.add(tp)

    def partitions_added(self, added: set[tuple[str, int]]) -> None:
        self.partitions_in_txn |= added
        self.pending_partitions -= added

    def end(self) -> None:
        """EndTxn answered: back to READY for the next transaction."""
        self.transition(S.READY)
        self.partitions_in_txn.clear()
        self.pending_partitions.clear()
        self.offsets_group_added = False

    # ---- sequences ------------------------------------------------------------------------------

    def may_send(self, batch: ProducerBatch) -> bool:
        """Whether the sender may drain this (first-in-queue) batch now."""
        if not self.has_producer_id or self.epoch_bump_required:
            return False
        tp = (batch.topic, batch.partition)
        if self.transactional and tp not in self.partitions_in_txn:
            return False
        in_flight = self._in_flight.get(tp)
        if self._keeps_sequence(batch):
            # A retry goes only as the oldest batch in flight, so it cannot overtake anything.
            return not in_flight or in_flight[0] is batch
        # A new (or re-sequenced) batch waits while the partition's older-epoch batches are still out.
        return not in_flight or self._epoch_of.get(tp) == self.producer_epoch

    def _keeps_sequence(self, batch: ProducerBatch) -> bool:
        """Whether a batch's sequence still stands: it was stamped under the epoch its partition's
        sequences run under."""
        tp = (batch.topic, batch.partition)
        return batch.has_sequence and batch.producer_epoch == self._epoch_of.get(tp)

    def assign(self, batch: ProducerBatch) -> None:
        """Stamp producer id, epoch and (first time, or after an epoch bump) a sequence."""
        tp = (batch.topic, batch.partition)
        in_flight = self._in_flight.setdefault(tp, [])
        if self._keeps_sequence(batch):
            if batch not in in_flight:
                in_flight.append(batch)
                in_flight.sort(key=lambda b: b.base_sequence)
            return
        if self._epoch_of.get(tp) != self.producer_epoch:  # nothing older in flight (may_send): from 0
            self._epoch_of[tp] = self.producer_epoch
            self._next_sequence[tp] = 0
        sequence = self._next_sequence.get(tp, 0)
        batch.producer_id = self.producer_id
        batch.producer_epoch = self.producer_epoch
        batch.base_sequence = sequence
        batch.transactional = self.transactional
        self._next_sequence[tp] = (sequence + batch.count) & 0x7FFFFFFF
        if batch in in_flight:
            in_flight.remove(batch)
        in_flight.append(batch)

    def is_next_in_flight(self, batch: ProducerBatch) -> bool:
        in_flight = self._in_flight.get((batch.topic, batch.partition))
        return bool(in_flight) and in_flight[0] is batch

    def done(self, batch: ProducerBatch, *, failed: bool) -> None:
        """A batch is finished for good. A failed one that held a sequence leaves a hole."""
        in_flight = self._in_flight.get((batch.topic, batch.partition))
        if in_flight and batch in in_flight:
            in_flight.remove(batch)
        if failed and self._keeps_sequence(batch):
            self._rewrite.add((batch.topic, batch.partition))
            self.epoch_bump_required = True

    def replace_with_pieces(self, big: ProducerBatch, pieces: list[ProducerBatch]) -> None:
        """A too-large batch was split; its pieces carry its sequences on."""
        in_flight = self._in_flight.setdefault((big.topic, big.partition), [])
        if big in in_flight:
            in_flight.remove(big)
        in_flight.extend(p for p in pieces if self._keeps_sequence(p))
        in_flight.sort(key=lambda b: b.base_sequence)

    def in_flight_batches(self) -> int:
        return sum(len(v) for v in self._in_flight.values())
