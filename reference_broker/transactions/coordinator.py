"""The transaction coordinator of one node (Kafka's ``TransactionCoordinator`` with transaction
version 1): transactional producer ids and epochs, the partitions of each transaction, commit and abort
through markers, timeouts, all persisted in ``__transaction_state`` and read back on start.

Markers are written to this node's own partitions directly, so a transaction passes through
PrepareCommit/PrepareAbort only for as long as the writes take; a crash in between leaves a Prepare
state in the log, which ``start`` completes as Kafka's coordinator does when it loads a partition."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from kconform.codecs.errors import Errors

from ..internal_topics import CorruptInternalTopic
from ..txn_markers import write_txn_markers
from .metadata import TxnMetadata, TxnState
from .records import TxnRecordError, decode_txn_key, decode_txn_value, encode_txn_key, encode_txn_value

__all__ = ["TransactionCoordinator", "TxnError"]

log = logging.getLogger(__name__)


class TxnError(Exception):
    def __init__(self, code: int, message: str = "") -> None:
        super().__init__(message or str(code))
        self.code = code


@dataclass(frozen=True)
class ProducerIdAndEpoch:
    producer_id: int
    producer_epoch: int


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
        meta.last_producer_epoch = meta.producer_epoch
        if not meta.epoch_exhausted:
            meta.producer_epoch += 1
        meta.state = TxnState.PREPARE_ABORT
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
        self, transactional_id: str, producer_id: int, producer_epoch: int, partitions: set[tuple[str, int]]
    ) -> None:
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
        meta.last_update_ms = now
        self._persist(meta)

    def verify_partitions(
        self, transactional_id: str, producer_id: int, producer_epoch: int, partitions: set[tuple[str, int]]
    ) -> dict[tuple[str, int], int]:
        """AddPartitionsToTxn's verify-only form: which partitions are already in the transaction."""
        try:
            meta = self._check_producer(transactional_id, producer_id, producer_epoch)
        except TxnError as exc:
            return dict.fromkeys(partitions, exc.code)
        ongoing = meta.state is TxnState.ONGOING
        return {
            tp: Errors.NONE if ongoing and tp in meta.partitions else Errors.INVALID_TXN_STATE
            for tp in partitions
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

    def end_txn(self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool) -> None:
        if not transactional_id:
            raise TxnError(Errors.INVALID_REQUEST)
        meta = self._check_producer(transactional_id, producer_id, producer_epoch)
        state = meta.state
        if state is TxnState.ONGOING:
            meta.state = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
            meta.last_update_ms = self.now_ms()
            self._persist(meta)
            self._complete(meta, commit=commit)
            return
        if state is TxnState.COMPLETE_COMMIT:
            if commit:
                return  # a retried commit
            raise TxnError(Errors.INVALID_TXN_STATE)
        if state is TxnState.COMPLETE_ABORT:
            if not commit:
                return
            raise TxnError(Errors.INVALID_TXN_STATE)
        if state is TxnState.PREPARE_COMMIT:
            raise TxnError(Errors.CONCURRENT_TRANSACTIONS if commit else Errors.INVALID_TXN_STATE)
        if state is TxnState.PREPARE_ABORT:
            raise TxnError(Errors.INVALID_TXN_STATE if commit else Errors.CONCURRENT_TRANSACTIONS)
        raise TxnError(Errors.INVALID_TXN_STATE)  # Empty, Dead, PrepareEpochFence

    def _complete(self, meta: TxnMetadata, *, commit: bool) -> None:
        """Write the markers, then record the transaction as complete."""
        results = write_txn_markers(
            self.broker,
            producer_id=meta.producer_id,
            producer_epoch=meta.producer_epoch,
            coordinator_epoch=self._coordinator_epoch(meta.transactional_id),
            commit=commit,
            partitions=sorted(meta.partitions),
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

    def list(self, states: set[TxnState], producer_ids: set[int], min_duration_ms: int) -> list[TxnMetadata]:
        now = self.now_ms()
        listed = []
        for meta in self.txns.values():
            if states and meta.state not in states:
                continue
            if producer_ids and meta.producer_id not in producer_ids:
                continue
            if min_duration_ms >= 0 and (
                meta.state is not TxnState.ONGOING or now - meta.start_ms <= min_duration_ms
            ):
                continue
            listed.append(meta)
        return listed
