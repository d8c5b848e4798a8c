"""The transaction coordinator of one node (Kafka's ``TransactionCoordinator``): transactional producer
ids and epochs, the partitions of each transaction, commit and abort through markers, timeouts, all
persisted in ``__transaction_state`` and read back on start.

The cluster's finalized ``transaction.version`` is below 1 (no finalized features are advertised, and
the log value is written at version 0). As in Kafka, that level decides only what the coordinator does
on its own (timeouts and fencing abort with the transactions-v1 rules) and the log format: for a
client's request Kafka takes the transaction version from the request version
(``TransactionVersion.transactionVersionForEndTxn``: EndTxn v5 is TV2;
``transactionVersionForAddPartitionsToTxn``: AddPartitionsToTxn v4+ is TV2), so an EndTxn v5 gets the
transactions-v2 rules here too (``TransactionCoordinator.endTransaction``): the epoch is bumped at every
commit or abort, and the answer carries the new producer id and epoch.

Markers are written to this node's own partitions directly, so a transaction passes through
PrepareCommit/PrepareAbort only for as long as the writes take; a crash in between leaves a Prepare
state in the log, which ``start`` completes as Kafka's coordinator does when it loads a partition."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from kconform.codecs.errors import Errors

from ..groups.re2 import compile_re2
from ..internal_topics import CorruptInternalTopic
from ..txn_markers import write_txn_markers
from .metadata import MAX_EPOCH, TxnMetadata, TxnState
from .records import TxnRecordError, decode_txn_key, decode_txn_value, encode_txn_key, encode_txn_value

__all__ = ["NO_PRODUCER", "ProducerIdAndEpoch", "TransactionCoordinator", "TxnError"]

log = logging.getLogger(__name__)


class TxnError(Exception):
    def __init__(self, code: int, message: str = "") -> None:
        super().__init__(message or str(code))
        self.code = code


@dataclass(frozen=True)
class ProducerIdAndEpoch:
    producer_id: int
    producer_epoch: int


NO_PRODUCER = ProducerIdAndEpoch(-1, -1)  # RecordBatch.NO_PRODUCER_ID, NO_PRODUCER_EPOCH
_PREPARING = (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT)


class TransactionCoordinator:
    def __init__(self, broker) -> None:
        self.broker = broker
        self.txns: dict[str, TxnMetadata] = {}
        self._task: asyncio.Task | None = None

    # ---- lifecycle ---------------------------------------------------------------------------------

    async def start(self) -> None:
        topic = self.broker.transaction_state
        if topic.exists:
            for partition in range(topic.partition_count):
                self._load_partition(partition)
        for meta in list(self.txns.values()):
            if meta.in_prepare:  # a crash between the prepare record and the markers: finish the job
                self._complete(meta, commit=meta.state is TxnState.PREPARE_COMMIT)
        self._task = asyncio.create_task(self._abort_timed_out_loop())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    def _load_partition(self, partition: int) -> None:
        try:
            for stored in self.broker.transaction_state.read(partition):
                if stored.key is None or stored.control is not None:
                    continue
                try:
                    txn_id = decode_txn_key(stored.key)
                    if stored.value is None:
                        self.txns.pop(txn_id, None)
                    else:
                        self.txns[txn_id] = decode_txn_value(txn_id, stored.value)
                except TxnRecordError as exc:
                    log.error(
                        "skipping unreadable record at %d of __transaction_state-%d: %s",
                        stored.offset,
                        partition,
                        exc,
                    )
        except CorruptInternalTopic as exc:
            log.error("%s; transactions after that point are not loaded", exc)

    def _persist(self, meta: TxnMetadata) -> None:
        topic = self.broker.transaction_state
        topic.ensure()
        partition = topic.partition_for(meta.transactional_id)
        topic.append(partition, [(encode_txn_key(meta.transactional_id), encode_txn_value(meta))])

    def _coordinator_epoch(self, transactional_id: str) -> int:
        topic = self.broker.transaction_state
        partition = self.broker.partition(topic.name, topic.partition_for(transactional_id))
        return 0 if partition is None else partition.leader_epoch

    def now_ms(self) -> int:
        return self.broker.clock.now_ms()

    # ---- InitProducerId ------------------------------------------------------------------------------

    def init_producer_id(
        self, transactional_id: str, timeout_ms: int, expected: ProducerIdAndEpoch | None
    ) -> ProducerIdAndEpoch:
        """The producer id and epoch for a transactional producer (raises TxnError)."""
        if not transactional_id:
            raise TxnError(Errors.INVALID_REQUEST)
        if not 0 < timeout_ms <= int(self.broker.config["transaction.max.timeout.ms"]):
            raise TxnError(Errors.INVALID_TRANSACTION_TIMEOUT)
        meta = self.txns.get(transactional_id)
        if meta is None:
            meta = TxnMetadata(
                transactional_id, self.broker.producer_ids.next_id(), -1, timeout_ms, TxnState.EMPTY
            )
            self.txns[transactional_id] = meta
        if expected is not None and not self._valid_expected(meta, expected):
            raise TxnError(Errors.PRODUCER_FENCED)
        if meta.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT, TxnState.PREPARE_EPOCH_FENCE):
            raise TxnError(Errors.CONCURRENT_TRANSACTIONS)
        if meta.state is TxnState.ONGOING:
            # Fence the current producer: abort its transaction under a bumped epoch, and have this
            # caller retry, which bumps the epoch once more for it (Kafka's PrepareEpochFence path).
            self._fence_and_abort(meta)
            raise TxnError(Errors.CONCURRENT_TRANSACTIONS)
        if meta.state is TxnState.DEAD:
            raise TxnError(Errors.CONCURRENT_TRANSACTIONS)
        if (
            expected is not None
            and expected.producer_id == meta.producer_id
            and expected.producer_epoch == meta.last_producer_epoch
            and expected.producer_epoch != meta.producer_epoch
        ):
            # A retry of a bump whose answer was lost, or a producer recovering after its
            # transaction timed out: it gets the current epoch without another bump.
            return ProducerIdAndEpoch(meta.producer_id, meta.producer_epoch)
        if (
            expected is not None
            and expected.producer_id == meta.producer_id
            and (expected.producer_epoch != meta.producer_epoch)
        ):
            raise TxnError(Errors.PRODUCER_FENCED)
        self._bump_epoch(meta)
        meta.timeout_ms = timeout_ms
        meta.state = TxnState.EMPTY
        meta.partitions = set()
        meta.start_ms = -1
        meta.last_update_ms = self.now_ms()
        self._persist(meta)
        return ProducerIdAndEpoch(meta.producer_id, meta.producer_epoch)

    def _valid_expected(self, meta: TxnMetadata, expected: ProducerIdAndEpoch) -> bool:
        """Kafka's ``isValidProducerId``: the request's id is the current one, or the previous one
        with an exhausted epoch (a retry after a bump to a new id), or the metadata is brand new."""
        return (
            meta.producer_epoch == -1
            or expected.producer_id == meta.producer_id
            or (expected.producer_id == meta.last_producer_id and expected.producer_epoch >= 32766)
        )

    def _bump_epoch(self, meta: TxnMetadata) -> None:
        meta.last_producer_epoch = meta.producer_epoch
        if meta.epoch_exhausted:
            meta.last_producer_id = meta.producer_id
            meta.producer_id = self.broker.producer_ids.next_id()
            meta.producer_epoch = 0
        else:
            meta.producer_epoch += 1

    def _fence_and_abort(self, meta: TxnMetadata) -> None:
        # The coordinator's own abort runs with the cluster's transaction version (below 2 here):
        # handleInitProducerId and abortTimedOutTransactions pass txnManager.transactionVersionLevel().
        meta.last_producer_epoch = meta.producer_epoch
        if not meta.epoch_exhausted:
            meta.producer_epoch += 1
        meta.state = TxnState.PREPARE_ABORT
        meta.client_transaction_version = 0
        meta.last_update_ms = self.now_ms()
        self._persist(meta)
        self._complete(meta, commit=False)

    # ---- AddPartitionsToTxn / AddOffsetsToTxn ----------------------------------------------------

    def _check_producer(self, transactional_id: str, producer_id: int, producer_epoch: int) -> TxnMetadata:
        meta = self.txns.get(transactional_id)
        if meta is None or meta.producer_id != producer_id:
            raise TxnError(Errors.INVALID_PRODUCER_ID_MAPPING)
        if meta.producer_epoch != producer_epoch:
            raise TxnError(Errors.PRODUCER_FENCED)
        return meta

    def add_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: set[tuple[str, int]],
        *,
        transaction_version: int = 0,
    ) -> None:
        """``handleAddPartitionsToTransaction``; ``transaction_version`` is the client's (2 for an
        AddPartitionsToTxn v4+ or a TxnOffsetCommit v5 adding its offsets partition), kept with the
        transaction when this call changes it."""
        if not transactional_id:
            raise TxnError(Errors.INVALID_REQUEST)
        meta = self._check_producer(transactional_id, producer_id, producer_epoch)
        if meta.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT, TxnState.PREPARE_EPOCH_FENCE):
            raise TxnError(Errors.CONCURRENT_TRANSACTIONS)
        if meta.state is TxnState.DEAD:
            raise TxnError(Errors.INVALID_TXN_STATE)
        if meta.state is TxnState.ONGOING and partitions <= meta.partitions:
            return
        now = self.now_ms()
        if meta.state is not TxnState.ONGOING:
            meta.partitions = set()
            meta.start_ms = now
        meta.partitions |= partitions
        meta.state = TxnState.ONGOING
        meta.client_transaction_version = transaction_version
        meta.last_update_ms = now
        self._persist(meta)

    def verify_partitions_in_transaction(
        self, transactional_id: str, producer_id: int, producer_epoch: int, partitions: set[tuple[str, int]]
    ) -> dict[tuple[str, int], int]:
        """AddPartitionsToTxn's verify-only form, Kafka's ``handleVerifyPartitionsInTransaction``:
        INVALID_REQUEST without a transactional id, INVALID_PRODUCER_ID_MAPPING for an unknown one or
        another producer id, PRODUCER_FENCED for another epoch, CONCURRENT_TRANSACTIONS while the
        transaction is being completed; otherwise NONE for each partition in the transaction and
        TRANSACTION_ABORTABLE for the others."""
        if not transactional_id:
            return dict.fromkeys(partitions, Errors.INVALID_REQUEST)
        meta = self.txns.get(transactional_id)
        if meta is None or meta.producer_id != producer_id:
            code = Errors.INVALID_PRODUCER_ID_MAPPING
        elif meta.producer_epoch != producer_epoch:
            code = Errors.PRODUCER_FENCED
        elif meta.state in _PREPARING:
            code = Errors.CONCURRENT_TRANSACTIONS
        else:
            return {
                tp: Errors.NONE if tp in meta.partitions else Errors.TRANSACTION_ABORTABLE
                for tp in partitions
            }
        return dict.fromkeys(partitions, code)

    def verify_partitions(
        self, transactional_id: str, producer_id: int, producer_epoch: int, partitions: set[tuple[str, int]]
    ) -> dict[tuple[str, int], int]:
        """The verification as a leader of Produce v10 and below hears it: AddPartitionsToTxnManager
        turns TRANSACTION_ABORTABLE into INVALID_TXN_STATE for such (DEFAULT_ERROR) clients."""
        codes = self.verify_partitions_in_transaction(
            transactional_id, producer_id, producer_epoch, partitions
        )
        return {
            tp: Errors.INVALID_TXN_STATE if code == Errors.TRANSACTION_ABORTABLE else code
            for tp, code in codes.items()
        }

    def add_offsets(
        self, transactional_id: str, producer_id: int, producer_epoch: int, group_id: str
    ) -> None:
        offsets = self.broker.consumer_offsets
        offsets.ensure()
        self.add_partitions(
            transactional_id, producer_id, producer_epoch, {(offsets.name, offsets.partition_for(group_id))}
        )

    # ---- EndTxn ------------------------------------------------------------------------------------

    def end_txn(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        *,
        transaction_version: int = 0,
    ) -> ProducerIdAndEpoch:
        """EndTxn (raises TxnError). ``transaction_version`` is the client's, from the request version
        (2 for EndTxn v5); the answer is the producer id and epoch an EndTxn v5 response carries:
        the new ones after a transactions-v2 completion, none (-1, -1) under the v1 rules."""
        if transaction_version >= 2:
            return self._end_txn_v2(transactional_id, producer_id, producer_epoch, commit)
        # TransactionCoordinator.endTransactionWithTV1
        if not transactional_id:
            raise TxnError(Errors.INVALID_REQUEST)
        meta = self._check_producer(transactional_id, producer_id, producer_epoch)
        state = meta.state
        if state is TxnState.ONGOING:
            meta.state = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
            meta.client_transaction_version = 0
            meta.last_update_ms = self.now_ms()
            self._persist(meta)
            self._complete(meta, commit=commit)
            return NO_PRODUCER
        if state is TxnState.COMPLETE_COMMIT:
            if commit:
                return NO_PRODUCER  # a retried commit
            raise TxnError(Errors.INVALID_TXN_STATE)
        if state is TxnState.COMPLETE_ABORT:
            if not commit:
                return NO_PRODUCER
            raise TxnError(Errors.INVALID_TXN_STATE)
        if state is TxnState.PREPARE_COMMIT:
            raise TxnError(Errors.CONCURRENT_TRANSACTIONS if commit else Errors.INVALID_TXN_STATE)
        if state is TxnState.PREPARE_ABORT:
            raise TxnError(Errors.INVALID_TXN_STATE if commit else Errors.CONCURRENT_TRANSACTIONS)
        raise TxnError(Errors.INVALID_TXN_STATE)  # Empty, Dead, PrepareEpochFence

    def _end_txn_v2(
        self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool
    ) -> ProducerIdAndEpoch:
        """``TransactionCoordinator.endTransaction`` for a client at transaction version 2: a retry is
        recognised by its epoch (one below the bumped one, or the last epoch of the previous producer
        id after an overflow), an abort is allowed with no transaction open (Empty, CompleteCommit,
        CompleteAbort; the epoch is bumped all the same), and a commit or abort bumps the epoch, or
        moves to a new producer id at epoch 0 when the epoch is exhausted."""
        if not transactional_id:
            raise TxnError(Errors.INVALID_REQUEST)
        meta = self.txns.get(transactional_id)
        if meta is None:
            raise TxnError(Errors.INVALID_PRODUCER_ID_MAPPING)
        # Kafka's prevProducerId is the id before the last transition; this coordinator keeps the id
        # before the last rotation, which is the same right after one (the only time it matters here).
        retry_on_overflow = (
            meta.last_producer_id == producer_id
            and producer_epoch == MAX_EPOCH - 1
            and meta.producer_epoch == 0
        )
        retry_on_epoch_bump = meta.producer_epoch == producer_epoch + 1
        state = meta.state
        if state in _PREPARING:
            valid_epoch = retry_on_epoch_bump
        elif state in (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT):
            valid_epoch = retry_on_epoch_bump or retry_on_overflow or producer_epoch == meta.producer_epoch
        else:  # Ongoing, Empty, Dead, PrepareEpochFence: the same epoch is the next endTransaction call
            valid_epoch = producer_epoch == meta.producer_epoch
        retry = retry_on_epoch_bump or retry_on_overflow
        if meta.producer_id != producer_id and not retry_on_overflow:
            raise TxnError(Errors.INVALID_PRODUCER_ID_MAPPING)
        if not valid_epoch:
            raise TxnError(Errors.PRODUCER_FENCED)
        current = ProducerIdAndEpoch(meta.producer_id, meta.producer_epoch)
        if state is TxnState.ONGOING:
            return self._prepare_and_complete_v2(meta, commit, no_partition_added=False)
        if state is TxnState.COMPLETE_COMMIT:
            if commit and retry:
                return current
            if not commit and not retry:
                return self._prepare_and_complete_v2(meta, False, no_partition_added=True)
            raise TxnError(Errors.INVALID_TXN_STATE)
        if state is TxnState.COMPLETE_ABORT:
            if commit:
                raise TxnError(Errors.INVALID_TXN_STATE)
            if retry:
                return current
            return self._prepare_and_complete_v2(meta, False, no_partition_added=True)
        if state is TxnState.PREPARE_COMMIT:
            raise TxnError(Errors.CONCURRENT_TRANSACTIONS if commit else Errors.INVALID_TXN_STATE)
        if state is TxnState.PREPARE_ABORT:
            raise TxnError(Errors.INVALID_TXN_STATE if commit else Errors.CONCURRENT_TRANSACTIONS)
        if state is TxnState.EMPTY and not commit:
            return self._prepare_and_complete_v2(meta, False, no_partition_added=True)
        raise TxnError(Errors.INVALID_TXN_STATE)  # a commit with nothing open; Dead, PrepareEpochFence

    def _prepare_and_complete_v2(
        self, meta: TxnMetadata, commit: bool, *, no_partition_added: bool
    ) -> ProducerIdAndEpoch:
        """``TransactionMetadata.prepareAbortOrCommit`` with a transaction version that bumps the
        epoch, the markers at the bumped epoch, then ``prepareComplete``."""
        next_producer_id = self.broker.producer_ids.next_id() if meta.epoch_exhausted else -1
        now = self.now_ms()
        meta.last_producer_epoch = meta.producer_epoch
        meta.producer_epoch += 1
        meta.state = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
        if no_partition_added:  # the start time of a transaction that added nothing is the abort's
            meta.start_ms = now
        meta.client_transaction_version = 2
        meta.last_update_ms = now
        self._persist(meta)
        self._complete(meta, commit=commit, next_producer_id=next_producer_id)
        return ProducerIdAndEpoch(meta.producer_id, meta.producer_epoch)

    def _complete(self, meta: TxnMetadata, *, commit: bool, next_producer_id: int = -1) -> None:
        """Write the markers, then record the transaction as complete (under ``next_producer_id`` at
        epoch 0 when a transactions-v2 completion exhausted the epoch)."""
        results = write_txn_markers(
            self.broker,
            producer_id=meta.producer_id,
            producer_epoch=meta.producer_epoch,
            coordinator_epoch=self._coordinator_epoch(meta.transactional_id),
            commit=commit,
            partitions=sorted(meta.partitions),
            transaction_version=meta.client_transaction_version,
        )
        for (topic, partition), code in results.items():
            if code not in (Errors.NONE, Errors.UNKNOWN_TOPIC_OR_PARTITION):
                # Kafka retries until the partition takes the marker; on one node the answer will not
                # change, so it is logged and the transaction completes (as for a deleted partition).
                log.error(
                    "marker for %s on %s-%d failed with error %d",
                    meta.transactional_id,
                    topic,
                    partition,
                    code,
                )
        meta.state = TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT
        if next_producer_id >= 0:
            meta.last_producer_id = meta.producer_id
            meta.producer_id = next_producer_id
            meta.producer_epoch = 0
        meta.partitions = set()
        meta.last_update_ms = self.now_ms()
        self._persist(meta)

    # ---- timeouts ------------------------------------------------------------------------------------

    def abort_timed_out(self) -> list[str]:
        """Abort, with an epoch bump, every ongoing transaction older than its timeout (Kafka's
        ``abortTimedOutTransactions``). Returns the transactional ids aborted."""
        now = self.now_ms()
        aborted = []
        for meta in list(self.txns.values()):
            if meta.state is TxnState.ONGOING and meta.start_ms + meta.timeout_ms < now:
                log.info(
                    "aborting transaction %s: it passed its %d ms timeout",
                    meta.transactional_id,
                    meta.timeout_ms,
                )
                self._fence_and_abort(meta)
                aborted.append(meta.transactional_id)
        return aborted

    async def _abort_timed_out_loop(self) -> None:
        interval = (
            int(self.broker.config["transaction.abort.timed.out.transaction.cleanup.interval.ms"]) / 1000
        )
        while True:
            await asyncio.sleep(interval)
            try:
                self.abort_timed_out()
            except Exception:
                log.exception("aborting timed-out transactions failed")

    # ---- describe / list -----------------------------------------------------------------------------

    def describe(self, transactional_id: str) -> TxnMetadata | None:
        return self.txns.get(transactional_id)

    def list(
        self,
        states: set[TxnState],
        producer_ids: set[int],
        min_duration_ms: int,
        transactional_id_pattern: str | None = None,
    ) -> list[TxnMetadata]:
        """``TransactionStateManager.listTransactionStates``: never Dead; then the producer id, state
        and duration filters (a transaction is kept only when ``now - its start time`` exceeds the
        duration, whatever its state), and the transactional id pattern (RE2/J, the whole id must
        match; an empty one filters nothing). A pattern RE2/J refuses raises Re2SyntaxError, which
        Kafka throws as InvalidRegularExpression."""
        pattern = compile_re2(transactional_id_pattern) if transactional_id_pattern else None
        now = self.now_ms()
        listed = []
        for meta in self.txns.values():
            if meta.state is TxnState.DEAD:
                continue
            if producer_ids and meta.producer_id not in producer_ids:
                continue
            if states and meta.state not in states:
                continue
            if min_duration_ms >= 0 and now - meta.start_ms <= min_duration_ms:
                continue
            if pattern is not None and not pattern.fullmatch(meta.transactional_id):
                continue
            listed.append(meta)
        return listed
