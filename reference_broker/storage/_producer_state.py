"""Idempotent and transactional producer state as values, and the pure decisions made on them
(Kafka's ``ProducerStateEntry``, ``BatchMetadata`` and ``ProducerAppendInfo``).

An entry holds a producer's epoch, coordinator epoch, open transaction and the metadata of its last
five data batches. ``check_sequence`` says whether a batch is new, a duplicate of a cached batch or
an error; ``append_data_batch`` and ``append_end_txn_marker`` return the updated entry. Nothing here
does I/O or reads a clock."""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum

from kconform.codecs import Errors

__all__ = [
    "NO_PRODUCER_EPOCH",
    "NO_PRODUCER_ID",
    "NO_SEQUENCE",
    "NUM_BATCHES_TO_RETAIN",
    "AppendOrigin",
    "BatchMetadata",
    "ProducerStateEntry",
    "ProducerStateError",
    "Verdict",
    "VerdictKind",
    "append_data_batch",
    "append_end_txn_marker",
    "check_sequence",
    "decrement_sequence",
    "increment_sequence",
    "merge_entries",
]

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NUM_BATCHES_TO_RETAIN = 5
_INT32_MAX = 0x7FFFFFFF


class AppendOrigin(Enum):
    """Who is appending, which decides how much is checked (Kafka's ``AppendOrigin``)."""

    CLIENT = "client"  # a producer: duplicates, epochs and sequences are checked
    COORDINATOR = "coordinator"  # group or transaction coordinator: epochs checked, sequences not
    REPLICATION = "replication"  # a follower copying the leader: nothing is refused


def increment_sequence(sequence: int, increment: int) -> int:
    """Sequences wrap from Int.MaxValue to 0 (``DefaultRecordBatch.incrementSequence``)."""
    if sequence > _INT32_MAX - increment:
        return increment - (_INT32_MAX - sequence) - 1
    return sequence + increment


def decrement_sequence(sequence: int, decrement: int) -> int:
    if sequence < decrement:
        return _INT32_MAX - (decrement - sequence) + 1
    return sequence - decrement


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    """What is kept of a producer's appended batch: enough to answer a retry with its offsets."""

    last_seq: int
    last_offset: int
    offset_delta: int
    timestamp: int

    @property
    def first_seq(self) -> int:
        return decrement_sequence(self.last_seq, self.offset_delta)

    @property
    def first_offset(self) -> int:
        return self.last_offset - self.offset_delta


@dataclass(frozen=True, slots=True)
class ProducerStateEntry:
    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    coordinator_epoch: int = -1
    last_timestamp: int = -1
    current_txn_first_offset: int | None = None
    batches: tuple[BatchMetadata, ...] = ()

    @property
    def is_empty(self) -> bool:
        return not self.batches

    @property
    def first_seq(self) -> int:
        return self.batches[0].first_seq if self.batches else NO_SEQUENCE

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    @property
    def first_data_offset(self) -> int:
        return self.batches[0].first_offset if self.batches else -1

    @property
    def last_data_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    @property
    def last_offset_delta(self) -> int:
        return self.batches[-1].offset_delta if self.batches else 0

    def find_duplicate(self, producer_epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        """The cached batch with exactly this epoch and sequence range, if any."""
        if producer_epoch != self.producer_epoch:
            return None
        for batch in self.batches:
            if batch.first_seq == first_seq and batch.last_seq == last_seq:
                return batch
        return None

    def with_epoch(self, producer_epoch: int) -> ProducerStateEntry:
        """A new epoch forgets the cached batches (``maybeUpdateProducerEpoch``)."""
        if producer_epoch == self.producer_epoch:
            return self
        return replace(self, producer_epoch=producer_epoch, batches=())

    def with_batch(self, batch: BatchMetadata) -> ProducerStateEntry:
        return replace(self, batches=(self.batches + (batch,))[-NUM_BATCHES_TO_RETAIN:])


class VerdictKind(Enum):
    OK = "ok"
    DUPLICATE = "duplicate"
    OUT_OF_ORDER_SEQUENCE_NUMBER = "out_of_order_sequence_number"
    INVALID_PRODUCER_EPOCH = "invalid_producer_epoch"
    INVALID_TXN_STATE = "invalid_txn_state"
    TRANSACTION_COORDINATOR_FENCED = "transaction_coordinator_fenced"


_ERROR_CODES = {
    VerdictKind.OK: Errors.NONE,
    VerdictKind.DUPLICATE: Errors.NONE,  # Kafka answers a duplicate with the original offsets
    VerdictKind.OUT_OF_ORDER_SEQUENCE_NUMBER: Errors.OUT_OF_ORDER_SEQUENCE_NUMBER,
    VerdictKind.INVALID_PRODUCER_EPOCH: Errors.INVALID_PRODUCER_EPOCH,
    VerdictKind.INVALID_TXN_STATE: Errors.INVALID_TXN_STATE,
    VerdictKind.TRANSACTION_COORDINATOR_FENCED: Errors.TRANSACTION_COORDINATOR_FENCED,
}


@dataclass(frozen=True, slots=True)
class Verdict:
    kind: VerdictKind
    duplicate_of: BatchMetadata | None = None
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.kind is VerdictKind.OK

    @property
    def is_error(self) -> bool:
        return self.kind not in (VerdictKind.OK, VerdictKind.DUPLICATE)

    @property
    def error_code(self) -> int:
        return _ERROR_CODES[self.kind]


_OK = Verdict(VerdictKind.OK)


class ProducerStateError(Exception):
    """An append refused by the producer state; ``verdict.error_code`` is the Kafka error to answer."""

    def __init__(self, verdict: Verdict) -> None:
        self.verdict = verdict
        super().__init__(verdict.message)

    @property
    def error_code(self) -> int:
        return self.verdict.error_code


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == _INT32_MAX)


def _check_epoch(updated: ProducerStateEntry, producer_epoch: int, transaction_version: int) -> Verdict:
    current = updated.producer_epoch
    invalid = producer_epoch <= current if transaction_version >= 2 else producer_epoch < current
    if not invalid:
        return _OK
    if transaction_version >= 2 and producer_epoch == current and updated.current_txn_first_offset is None:
        return _OK  # a retried TV2 marker for a transaction that has already ended
    return Verdict(
        VerdictKind.INVALID_PRODUCER_EPOCH,
        message=f"epoch {producer_epoch} of producer {updated.producer_id} is below its epoch {current}",
    )


def check_sequence(
    state: ProducerStateEntry | None,
    producer_epoch: int,
    first_seq: int,
    last_seq: int,
    *,
    updated: ProducerStateEntry | None = None,
    origin: AppendOrigin = AppendOrigin.CLIENT,
) -> Verdict:
    """Kafka's decision for a data batch from a producer whose state before this append is ``state``
    (None for a producer the log does not know).

    In order: a batch whose epoch and sequence range match one of the five cached batches is a
    DUPLICATE (answer with its offsets; CLIENT appends only); an epoch below the current one is
    INVALID_PRODUCER_EPOCH; a new epoch must start at sequence 0 unless the producer has no epoch yet;
    within an epoch the first sequence must follow the last one (Int.MaxValue wraps to 0), unless the
    producer has no epoch (its state was removed, e.g. by retention or DeleteRecords: any sequence is
    accepted). ``updated`` is the entry after the earlier batches of the same append, as Kafka's
    ``ProducerAppendInfo`` carries it. REPLICATION appends are never refused."""
    if origin is AppendOrigin.REPLICATION:
        return _OK
    current = state if state is not None else ProducerStateEntry(NO_PRODUCER_ID)
    if origin is AppendOrigin.CLIENT:
        duplicate = current.find_duplicate(producer_epoch, first_seq, last_seq)
        if duplicate is not None:
            return Verdict(
                VerdictKind.DUPLICATE,
                duplicate_of=duplicate,
                message=f"producer {current.producer_id} already wrote {first_seq}..{last_seq}",
            )
    pending = updated if updated is not None else replace(current, batches=())
    verdict = _check_epoch(pending, producer_epoch, 0)
    if not verdict.ok or origin is not AppendOrigin.CLIENT:
        return verdict
    if producer_epoch != pending.producer_epoch:
        if first_seq != 0 and pending.producer_epoch != NO_PRODUCER_EPOCH:
            return Verdict(
                VerdictKind.OUT_OF_ORDER_SEQUENCE_NUMBER,
                message=f"new epoch {producer_epoch} of producer {current.producer_id} starts at sequence "
                f"{first_seq}, not 0",
            )
        return _OK
    if pending.batches:
        current_last_seq = pending.last_seq
    elif producer_epoch == current.producer_epoch:
        current_last_seq = current.last_seq
    else:
        current_last_seq = NO_SEQUENCE
    if current.producer_epoch == NO_PRODUCER_EPOCH or _in_sequence(current_last_seq, first_seq):
        return _OK
    return Verdict(
        VerdictKind.OUT_OF_ORDER_SEQUENCE_NUMBER,
        message=f"producer {current.producer_id} sent sequence {first_seq} after {current_last_seq}",
    )


def append_data_batch(
    updated: ProducerStateEntry,
    *,
    producer_epoch: int,
    last_seq: int,
    first_offset: int,
    last_offset: int,
    max_timestamp: int,
    is_transactional: bool,
) -> tuple[ProducerStateEntry, Verdict]:
    """The entry after a data batch (``ProducerAppendInfo.appendDataBatch`` after its checks), and
    INVALID_TXN_STATE if a non-transactional batch arrives while a transaction is open."""
    entry = updated.with_epoch(producer_epoch)
    entry = replace(
        entry.with_batch(BatchMetadata(last_seq, last_offset, last_offset - first_offset, max_timestamp)),
        last_timestamp=max_timestamp,
    )
    if entry.current_txn_first_offset is not None and not is_transactional:
        return entry, Verdict(
            VerdictKind.INVALID_TXN_STATE,
            message=f"non-transactional write from producer {entry.producer_id} inside its open transaction",
        )
    if entry.current_txn_first_offset is None and is_transactional:
        entry = replace(entry, current_txn_first_offset=first_offset)
    return entry, _OK


def append_end_txn_marker(
    updated: ProducerStateEntry,
    *,
    producer_epoch: int,
    coordinator_epoch: int,
    timestamp: int,
    origin: AppendOrigin,
    transaction_version: int = 0,
) -> tuple[ProducerStateEntry, Verdict]:
    """The entry after a COMMIT or ABORT marker (``appendEndTxnMarker``): the producer and coordinator
    epochs are checked (errors only for non-replication appends), then the transaction is closed."""
    if origin is not AppendOrigin.REPLICATION:
        verdict = _check_epoch(updated, producer_epoch, transaction_version)
        if not verdict.ok:
            return updated, verdict
        if updated.coordinator_epoch > coordinator_epoch:
            return updated, Verdict(
                VerdictKind.TRANSACTION_COORDINATOR_FENCED,
                message=f"coordinator epoch {coordinator_epoch} is below {updated.coordinator_epoch}",
            )
    entry = replace(
        updated.with_epoch(producer_epoch),
        coordinator_epoch=coordinator_epoch,
        current_txn_first_offset=None,
        last_timestamp=timestamp,
    )
    return entry, _OK


def merge_entries(current: ProducerStateEntry | None, updated: ProducerStateEntry) -> ProducerStateEntry:
    """The stored entry after an append (``ProducerStateEntry.update``): a changed epoch forgets the
    old batches, the new batches are added (five kept), the rest is taken from ``updated``."""
    if current is None:
        return updated
    merged = current.with_epoch(updated.producer_epoch)
    for batch in updated.batches:
        merged = merged.with_batch(batch)
    return replace(
        merged,
        coordinator_epoch=updated.coordinator_epoch,
        current_txn_first_offset=updated.current_txn_first_offset,
        last_timestamp=updated.last_timestamp,
    )
