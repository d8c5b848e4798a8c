"""The transaction coordinator's rules (Kafka's ``TransactionCoordinator.scala`` and the transitions of
``TransactionMetadata``), as pure functions: each takes a transaction's state (None for a transactional
id never seen), an event, the time and what else it needs passed in (the settings; a producer id
source, called only when a new id is handed out so that none is wasted) and returns a ``TxnDecision``.
No I/O, no clock, no event loop: the coordinator (``coordinator.py``) carries decisions out.

The cluster's finalized ``transaction.version`` is below 1 (no finalized features are advertised, and
the log value is written at version 0). As in Kafka, that level decides only what the coordinator does
on its own (timeouts and fencing abort with the transactions-v1 rules) and the log format: for a
client's request Kafka takes the transaction version from the request version
(``TransactionVersion.transactionVersionForEndTxn``: EndTxn v5 is TV2;
``transactionVersionForAddPartitionsToTxn``: AddPartitionsToTxn v4+ is TV2), so an EndTxn v5 gets the
transactions-v2 rules here too (``TransactionCoordinator.endTransaction``): the epoch is bumped at every
commit or abort, and the answer carries the new producer id and epoch.

Markers follow the prepare record and the completion follows the markers; a crash in between leaves a
Prepare state in the log, which ``finish_prepared`` completes on load as Kafka's coordinator does when
it loads a partition."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from kconform.codecs.errors import Errors

from ..groups.re2 import compile_re2
from .decisions import (
    AddOffsets,
    AddPartitions,
    EndTxn,
    InitProducerId,
    MarkerWrite,
    ProducerIdAndEpoch,
    TxnDecision,
    TxnSettings,
    VerifyPartitions,
)
from .metadata import MAX_EPOCH, TxnMetadata
from .states import TxnState

__all__ = [
    "abort_timed_out",
    "add_offsets",
    "add_partitions",
    "complete_after_markers",
    "end_txn",
    "finish_prepared",
    "init_producer_id",
    "list_transactions",
    "verify_partitions",
]

ProducerIdSource = Callable[[], int]

_PREPARING = (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT)
_BUSY = (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT, TxnState.PREPARE_EPOCH_FENCE)
_COMPLETE = (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)


def _refused(code: int, created: TxnMetadata | None = None) -> TxnDecision:
    return TxnDecision(error=code, created=created)


def _markers(record: TxnMetadata, commit: bool, next_producer_id: int = -1) -> MarkerWrite:
    return MarkerWrite(
        transactional_id=record.transactional_id,
        producer_id=record.producer_id,
        producer_epoch=record.producer_epoch,
        commit=commit,
        partitions=tuple(sorted(record.partitions)),
        transaction_version=record.client_transaction_version,
        next_producer_id=next_producer_id,
    )


# ---- InitProducerId ------------------------------------------------------------------------------


def init_producer_id(
    meta: TxnMetadata | None,
    event: InitProducerId,
    now: int,
    settings: TxnSettings,
    next_producer_id: ProducerIdSource,
) -> TxnDecision:
    """``TransactionCoordinator.handleInitProducerId``: the producer id and epoch for a transactional
    producer, bumping the epoch (or moving to a new producer id when it is exhausted)."""
    if not event.transactional_id:
        return _refused(Errors.INVALID_REQUEST)
    if not 0 < event.timeout_ms <= settings.max_timeout_ms:
        return _refused(Errors.INVALID_TRANSACTION_TIMEOUT)
    created = None
    if meta is None:
        meta = created = TxnMetadata(
            event.transactional_id, next_producer_id(), -1, event.timeout_ms, TxnState.EMPTY
        )
    expected = event.expected
    if expected is not None and not _valid_expected(meta, expected):
        return _refused(Errors.PRODUCER_FENCED, created)
    if meta.state in _BUSY or meta.state is TxnState.DEAD:
        return _refused(Errors.CONCURRENT_TRANSACTIONS, created)
    if meta.state is TxnState.ONGOING:
        # Fence the current producer: abort its transaction under a bumped epoch, and have this
        # caller retry, which bumps the epoch once more for it (Kafka's PrepareEpochFence path).
        fenced = _fence_and_abort(meta, now)
        return TxnDecision(
            error=Errors.CONCURRENT_TRANSACTIONS, records=fenced.records, markers=fenced.markers
        )
    if (
        expected is not None
        and expected.producer_id == meta.producer_id
        and expected.producer_epoch == meta.last_producer_epoch
        and expected.producer_epoch != meta.producer_epoch
    ):
        # A retry of a bump whose answer was lost, or a producer recovering after its
        # transaction timed out: it gets the current epoch without another bump.
        return TxnDecision(
            producer=ProducerIdAndEpoch(meta.producer_id, meta.producer_epoch), created=created
        )
    if (
        expected is not None
        and expected.producer_id == meta.producer_id
        and expected.producer_epoch != meta.producer_epoch
    ):
        return _refused(Errors.PRODUCER_FENCED, created)
    if meta.epoch_exhausted:
        ids = dict(producer_id=next_producer_id(), producer_epoch=0, last_producer_id=meta.producer_id)
    else:
        ids = dict(producer_epoch=meta.producer_epoch + 1)
    record = meta.transition(
        TxnState.EMPTY,
        last_producer_epoch=meta.producer_epoch,
        timeout_ms=event.timeout_ms,
        partitions=frozenset(),
        start_ms=-1,
        last_update_ms=now,
        **ids,
    )
    return TxnDecision(
        producer=ProducerIdAndEpoch(record.producer_id, record.producer_epoch),
        created=created,
        records=(record,),
    )


def _valid_expected(meta: TxnMetadata, expected: ProducerIdAndEpoch) -> bool:
    """Kafka's ``isValidProducerId``: the request's id is the current one, or the previous one with an
    exhausted epoch (a retry after a bump to a new id), or the metadata is brand new."""
    return (
        meta.producer_epoch == -1
        or expected.producer_id == meta.producer_id
        or (expected.producer_id == meta.last_producer_id and expected.producer_epoch >= MAX_EPOCH - 1)
    )


def _fence_and_abort(meta: TxnMetadata, now: int) -> TxnDecision:
    """Kafka's ``prepareFenceProducerEpoch`` then an abort with the cluster's transaction version (below
    2 here: ``handleInitProducerId`` and ``abortTimedOutTransactions`` pass
    ``txnManager.transactionVersionLevel()``). Kafka holds PrepareEpochFence only as a pending state
    and writes Ongoing -> PrepareAbort, as this does; an exhausted epoch is not bumped further."""
    record = meta.transition(
        TxnState.PREPARE_ABORT,
        last_producer_epoch=meta.producer_epoch,
        producer_epoch=meta.producer_epoch if meta.epoch_exhausted else meta.producer_epoch + 1,
        client_transaction_version=0,
        last_update_ms=now,
    )
    return TxnDecision(records=(record,), markers=_markers(record, commit=False))


# ---- AddPartitionsToTxn / AddOffsetsToTxn --------------------------------------------------------


def _producer_error(meta: TxnMetadata | None, producer_id: int, producer_epoch: int) -> int:
    if meta is None or meta.producer_id != producer_id:
        return Errors.INVALID_PRODUCER_ID_MAPPING
    if meta.producer_epoch != producer_epoch:
        return Errors.PRODUCER_FENCED
    return Errors.NONE


def add_partitions(meta: TxnMetadata | None, event: AddPartitions, now: int) -> TxnDecision:
    """``handleAddPartitionsToTransaction``; the client's transaction version is kept with the
    transaction when this call changes it (Kafka's ``prepareAddPartitions``)."""
    if not event.transactional_id:
        return _refused(Errors.INVALID_REQUEST)
    code = _producer_error(meta, event.producer_id, event.producer_epoch)
    if code != Errors.NONE:
        return _refused(code)
    if meta.state in _BUSY:
        return _refused(Errors.CONCURRENT_TRANSACTIONS)
    if meta.state is TxnState.DEAD:
        return _refused(Errors.INVALID_TXN_STATE)
    if meta.state is TxnState.ONGOING and event.partitions <= meta.partitions:
        return TxnDecision()
    ongoing = meta.state is TxnState.ONGOING
    record = meta.transition(
        TxnState.ONGOING,
        partitions=(meta.partitions if ongoing else frozenset()) | event.partitions,
        start_ms=meta.start_ms if ongoing else now,
        client_transaction_version=event.transaction_version,
        last_update_ms=now,
    )
    return TxnDecision(records=(record,))


def add_offsets(meta: TxnMetadata | None, event: AddOffsets, now: int) -> TxnDecision:
    """``KafkaApis.handleAddOffsetsToTxnRequest``: the group's offsets partition is added as any
    partition is, at transaction version 0."""
    added = AddPartitions(
        event.transactional_id,
        event.producer_id,
        event.producer_epoch,
        frozenset({event.offsets_partition}),
        transaction_version=0,
    )
    return add_partitions(meta, added, now)


def verify_partitions(meta: TxnMetadata | None, event: VerifyPartitions) -> dict[tuple[str, int], int]:
    """AddPartitionsToTxn's verify-only form, Kafka's ``handleVerifyPartitionsInTransaction``:
    INVALID_REQUEST without a transactional id, INVALID_PRODUCER_ID_MAPPING for an unknown one or
    another producer id, PRODUCER_FENCED for another epoch, CONCURRENT_TRANSACTIONS while the
    transaction is being completed; otherwise NONE for each partition in the transaction and
    TRANSACTION_ABORTABLE for the others. Nothing is written."""
    if not event.transactional_id:
        return dict.fromkeys(event.partitions, Errors.INVALID_REQUEST)
    code = _producer_error(meta, event.producer_id, event.producer_epoch)
    if code == Errors.NONE and meta.state in _PREPARING:
        code = Errors.CONCURRENT_TRANSACTIONS
    if code != Errors.NONE:
        return dict.fromkeys(event.partitions, code)
    return {
        tp: Errors.NONE if tp in meta.partitions else Errors.TRANSACTION_ABORTABLE for tp in event.partitions
    }


# ---- EndTxn --------------------------------------------------------------------------------------


def end_txn(
    meta: TxnMetadata | None, event: EndTxn, now: int, next_producer_id: ProducerIdSource
) -> TxnDecision:
    """EndTxn. The answer's producer is what an EndTxn v5 response carries: the new id and epoch after
    a transactions-v2 completion, none (-1, -1) under the v1 rules."""
    if not event.transactional_id:
        return _refused(Errors.INVALID_REQUEST)
    if event.transaction_version >= 2:
        return _end_txn_v2(meta, event, now, next_producer_id)
    # TransactionCoordinator.endTransactionWithTV1
    code = _producer_error(meta, event.producer_id, event.producer_epoch)
    if code != Errors.NONE:
        return _refused(code)
    commit, state = event.commit, meta.state
    if state is TxnState.ONGOING:
        record = meta.transition(
            TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT,
            client_transaction_version=0,
            last_update_ms=now,
        )
        return TxnDecision(records=(record,), markers=_markers(record, commit))
    if state is TxnState.COMPLETE_COMMIT:
        return TxnDecision() if commit else _refused(Errors.INVALID_TXN_STATE)  # a retried commit
    if state is TxnState.COMPLETE_ABORT:
        return _refused(Errors.INVALID_TXN_STATE) if commit else TxnDecision()
    return _refused(_prepare_or_other_state_error(state, commit))  # Empty, Dead, PrepareEpochFence


def _prepare_or_other_state_error(state: TxnState, commit: bool) -> int:
    """An EndTxn that finds the transaction being completed: CONCURRENT_TRANSACTIONS when it asks for
    the same outcome (it will be answered once the markers are in), INVALID_TXN_STATE otherwise and in
    any state where nothing can be ended."""
    if state is TxnState.PREPARE_COMMIT:
        return Errors.CONCURRENT_TRANSACTIONS if commit else Errors.INVALID_TXN_STATE
    if state is TxnState.PREPARE_ABORT:
        return Errors.INVALID_TXN_STATE if commit else Errors.CONCURRENT_TRANSACTIONS
    return Errors.INVALID_TXN_STATE


def _end_txn_v2(
    meta: TxnMetadata | None, event: EndTxn, now: int, next_producer_id: ProducerIdSource
) -> TxnDecision:
    """``TransactionCoordinator.endTransaction`` for a client at transaction version 2: a retry is
    recognised by its epoch (one below the bumped one, or the last epoch of the previous producer id
    after an overflow), an abort is allowed with no transaction open (Empty, CompleteCommit,
    CompleteAbort; the epoch is bumped all the same), and a commit or abort bumps the epoch, or moves to
    a new producer id at epoch 0 when the epoch is exhausted."""
    if meta is None:
        return _refused(Errors.INVALID_PRODUCER_ID_MAPPING)
    producer_id, producer_epoch, commit = event.producer_id, event.producer_epoch, event.commit
    # Kafka's prevProducerId is the id before the last transition; this coordinator keeps the id
    # before the last rotation, which is the same right after one (the only time it matters here).
    retry_on_overflow = (
        meta.last_producer_id == producer_id and producer_epoch == MAX_EPOCH - 1 and meta.producer_epoch == 0
    )
    retry_on_epoch_bump = meta.producer_epoch == producer_epoch + 1
    state = meta.state
    if state in _PREPARING:
        valid_epoch = retry_on_epoch_bump
    elif state in _COMPLETE:
        valid_epoch = retry_on_epoch_bump or retry_on_overflow or producer_epoch == meta.producer_epoch
    else:  # Ongoing, Empty, Dead, PrepareEpochFence: the same epoch is the next endTransaction call
        valid_epoch = producer_epoch == meta.producer_epoch
    retry = retry_on_epoch_bump or retry_on_overflow
    if meta.producer_id != producer_id and not retry_on_overflow:
        return _refused(Errors.INVALID_PRODUCER_ID_MAPPING)
    if not valid_epoch:
        return _refused(Errors.PRODUCER_FENCED)
    current = TxnDecision(producer=ProducerIdAndEpoch(meta.producer_id, meta.producer_epoch))
    if state is TxnState.ONGOING:
        return _prepare_v2(meta, commit, now, next_producer_id, no_partition_added=False)
    if state is TxnState.COMPLETE_COMMIT:
        if commit and retry:
            return current
        if not commit and not retry:
            return _prepare_v2(meta, False, now, next_producer_id, no_partition_added=True)
        return _refused(Errors.INVALID_TXN_STATE)
    if state is TxnState.COMPLETE_ABORT:
        if commit:
            return _refused(Errors.INVALID_TXN_STATE)
        if retry:
            return current
        return _prepare_v2(meta, False, now, next_producer_id, no_partition_added=True)
    if state is TxnState.EMPTY and not commit:
        return _prepare_v2(meta, False, now, next_producer_id, no_partition_added=True)
    # a commit with nothing open; PrepareCommit, PrepareAbort, Dead, PrepareEpochFence
    return _refused(_prepare_or_other_state_error(state, commit))


def _prepare_v2(
    meta: TxnMetadata, commit: bool, now: int, next_producer_id: ProducerIdSource, *, no_partition_added: bool
) -> TxnDecision:
    """``TransactionMetadata.prepareAbortOrCommit`` with a transaction version that bumps the epoch;
    the markers go out at the bumped epoch, and ``prepareComplete`` moves to the next producer id when
    the epoch was exhausted. The answer is the producer as it will be once complete."""
    next_id = next_producer_id() if meta.epoch_exhausted else -1
    record = meta.transition(
        TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT,
        last_producer_epoch=meta.producer_epoch,
        producer_epoch=meta.producer_epoch + 1,
        # the start time of a transaction that added nothing is the abort's
        start_ms=now if no_partition_added else meta.start_ms,
        client_transaction_version=2,
        last_update_ms=now,
    )
    answer = (
        ProducerIdAndEpoch(next_id, 0)
        if next_id >= 0
        else ProducerIdAndEpoch(record.producer_id, record.producer_epoch)
    )
    return TxnDecision(producer=answer, records=(record,), markers=_markers(record, commit, next_id))


# ---- after the markers ---------------------------------------------------------------------------


def complete_after_markers(meta: TxnMetadata, markers: MarkerWrite, now: int) -> TxnDecision:
    """Kafka's ``prepareComplete`` once the markers are written: CompleteCommit or CompleteAbort with no
    partitions, under ``markers.next_producer_id`` at epoch 0 when a transactions-v2 completion
    exhausted the epoch. Kafka retries a marker until its partition takes it; on one node the answer
    would not change, so the coordinator logs a failed marker and the transaction completes all the
    same (as for a deleted partition)."""
    changes: dict = dict(partitions=frozenset(), last_update_ms=now)
    if markers.next_producer_id >= 0:
        changes.update(
            last_producer_id=meta.producer_id, producer_id=markers.next_producer_id, producer_epoch=0
        )
    target = TxnState.COMPLETE_COMMIT if markers.commit else TxnState.COMPLETE_ABORT
    return TxnDecision(records=(meta.transition(target, **changes),))


def finish_prepared(meta: TxnMetadata) -> TxnDecision:
    """A PrepareCommit or PrepareAbort read back on load: a crash came between the prepare record and
    the completion, so the markers are written again (Kafka's ``TransactionMarkerChannelManager``
    resends them when it loads the partition). Nothing for a transaction in any other state."""
    if not meta.in_prepare:
        return TxnDecision()
    return TxnDecision(markers=_markers(meta, commit=meta.state is TxnState.PREPARE_COMMIT))


# ---- timeouts ------------------------------------------------------------------------------------


def abort_timed_out(txns: Iterable[TxnMetadata], now: int) -> tuple[TxnDecision, ...]:
    """Kafka's ``abortTimedOutTransactions``: every ongoing transaction older than its timeout is
    fenced and aborted, with an epoch bump."""
    return tuple(
        _fence_and_abort(meta, now)
        for meta in txns
        if meta.state is TxnState.ONGOING and meta.start_ms + meta.timeout_ms < now
    )


# ---- ListTransactions ----------------------------------------------------------------------------


def list_transactions(
    txns: Mapping[str, TxnMetadata],
    states: set[TxnState],
    producer_ids: set[int],
    min_duration_ms: int,
    transactional_id_pattern: str | None,
    now: int,
) -> list[TxnMetadata]:
    """``TransactionStateManager.listTransactionStates``: never Dead; then the producer id, state and
    duration filters (a transaction is kept only when ``now - its start time`` exceeds the duration,
    whatever its state), and the transactional id pattern (RE2/J, the whole id must match; an empty
    one filters nothing). A pattern RE2/J refuses raises Re2SyntaxError, which Kafka throws as
    InvalidRegularExpression."""
    pattern = compile_re2(transactional_id_pattern) if transactional_id_pattern else None
    return [
        meta
        for meta in txns.values()
        if meta.state is not TxnState.DEAD
        and (not producer_ids or meta.producer_id in producer_ids)
        and (not states or meta.state in states)
        and (min_duration_ms < 0 or now - meta.start_ms > min_duration_ms)
        and (pattern is None or pattern.fullmatch(meta.transactional_id))
    ]
