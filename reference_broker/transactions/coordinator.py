"""The transaction coordinator of one node (Kafka's ``TransactionCoordinator``), the runtime side of the
rules in ``rules.py``: it holds each transactional id's state, reads it back from
``__transaction_state`` on start, carries out the rules' decisions (records, then markers, then the
completion) and runs the timer that aborts timed-out transactions. It reaches the node only through
``TxnCoordinatorHost``.

A decision is carried out at once: markers are written to this node's own partitions directly, so a
transaction passes through PrepareCommit/PrepareAbort only for as long as the writes take. As Kafka's
``completeTransitionTo`` does, the state in memory changes only once its record is written."""

from __future__ import annotations

import asyncio
import logging

from kconform.codecs.errors import Errors

from ..internal_topics import CorruptInternalTopic
from . import rules
from .decisions import (
    NO_PRODUCER,
    AddOffsets,
    AddPartitions,
    EndTxn,
    InitProducerId,
    MarkerWrite,
    ProducerIdAndEpoch,
    TxnDecision,
    TxnError,
    TxnSettings,
    VerifyPartitions,
)
from .host import TxnCoordinatorHost
from .log_records import TxnRecordError, decode_txn_key, decode_txn_value, encode_txn_key, encode_txn_value
from .marker_writer import write_txn_markers
from .metadata import TxnMetadata
from .states import TxnState

# TxnError, ProducerIdAndEpoch and NO_PRODUCER are the handlers' vocabulary, kept importable from here.
__all__ = ["NO_PRODUCER", "ProducerIdAndEpoch", "TransactionCoordinator", "TxnError"]

log = logging.getLogger(__name__)


class TransactionCoordinator:
    def __init__(self, host: TxnCoordinatorHost) -> None:
        self._host = host
        self.txns: dict[str, TxnMetadata] = {}
        self._task: asyncio.Task | None = None

    @property
    def settings(self) -> TxnSettings:
        return TxnSettings.from_config(self._host.config)

    def now_ms(self) -> int:
        return self._host.clock.now_ms()

    # ---- lifecycle ---------------------------------------------------------------------------------

    async def start(self) -> None:
        topic = self._host.transaction_state
        if topic.exists:
            for partition in range(topic.partition_count):
                self._load_partition(partition)
        for meta in list(self.txns.values()):
            self._execute(rules.finish_prepared(meta))
        self._task = asyncio.create_task(self._abort_timed_out_loop())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    def _load_partition(self, partition: int) -> None:
        try:
            for stored in self._host.transaction_state.read(partition):
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

    # ---- carrying out decisions ----------------------------------------------------------------------

    def _execute(self, decision: TxnDecision) -> None:
        if decision.created is not None:
            self.txns.setdefault(decision.created.transactional_id, decision.created)
        for record in decision.records:
            self._write(record)
        if decision.markers is not None:
            self._write_markers(decision.markers)
            meta = self.txns[decision.markers.transactional_id]
            self._execute(rules.complete_after_markers(meta, decision.markers, self.now_ms()))

    def _answer(self, decision: TxnDecision) -> ProducerIdAndEpoch:
        self._execute(decision)
        if decision.error != Errors.NONE:
            raise TxnError(decision.error)
        return decision.producer

    def _write(self, record: TxnMetadata) -> None:
        topic = self._host.transaction_state
        topic.ensure()
        partition = topic.partition_for(record.transactional_id)
        topic.append(partition, [(encode_txn_key(record.transactional_id), encode_txn_value(record))])
        self.txns[record.transactional_id] = record

    def _write_markers(self, markers: MarkerWrite) -> None:
        results = write_txn_markers(
            self._host,
            producer_id=markers.producer_id,
            producer_epoch=markers.producer_epoch,
            coordinator_epoch=self._coordinator_epoch(markers.transactional_id),
            commit=markers.commit,
            partitions=markers.partitions,
            transaction_version=markers.transaction_version,
        )
        for (topic, partition), code in results.items():
            if code not in (Errors.NONE, Errors.UNKNOWN_TOPIC_OR_PARTITION):
                log.error(
                    "marker for %s on %s-%d failed with error %d",
                    markers.transactional_id,
                    topic,
                    partition,
                    code,
                )

    def _coordinator_epoch(self, transactional_id: str) -> int:
        topic = self._host.transaction_state
        partition = self._host.partition(topic.name, topic.partition_for(transactional_id))
        return 0 if partition is None else partition.leader_epoch

    # ---- requests ------------------------------------------------------------------------------------

    def init_producer_id(
        self, transactional_id: str, timeout_ms: int, expected: ProducerIdAndEpoch | None
    ) -> ProducerIdAndEpoch:
        """The producer id and epoch for a transactional producer (raises TxnError)."""
        event = InitProducerId(transactional_id, timeout_ms, expected)
        return self._answer(
            rules.init_producer_id(
                self.txns.get(transactional_id),
                event,
                self.now_ms(),
                self.settings,
                self._host.producer_ids.next_id,
            )
        )

    def add_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: set[tuple[str, int]],
        *,
        transaction_version: int = 0,
    ) -> None:
        """AddPartitionsToTxn, and Produce v12+ or TxnOffsetCommit v5 adding a partition themselves
        (``transaction_version`` 2); raises TxnError."""
        event = AddPartitions(
            transactional_id, producer_id, producer_epoch, frozenset(partitions), transaction_version
        )
        self._answer(rules.add_partitions(self.txns.get(transactional_id), event, self.now_ms()))

    def add_offsets(
        self, transactional_id: str, producer_id: int, producer_epoch: int, offsets_partition: tuple[str, int]
    ) -> None:
        """AddOffsetsToTxn, with the group's ``__consumer_offsets`` partition (raises TxnError)."""
        event = AddOffsets(transactional_id, producer_id, producer_epoch, offsets_partition)
        self._answer(rules.add_offsets(self.txns.get(transactional_id), event, self.now_ms()))

    def verify_partitions_in_transaction(
        self, transactional_id: str, producer_id: int, producer_epoch: int, partitions: set[tuple[str, int]]
    ) -> dict[tuple[str, int], int]:
        """AddPartitionsToTxn's verify-only form: an error code for each partition."""
        event = VerifyPartitions(transactional_id, producer_id, producer_epoch, frozenset(partitions))
        return rules.verify_partitions(self.txns.get(transactional_id), event)

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
        (2 for EndTxn v5); the answer is the producer id and epoch an EndTxn v5 response carries."""
        event = EndTxn(transactional_id, producer_id, producer_epoch, commit, transaction_version)
        return self._answer(
            rules.end_txn(
                self.txns.get(transactional_id), event, self.now_ms(), self._host.producer_ids.next_id
            )
        )

    # ---- timeouts ------------------------------------------------------------------------------------

    def abort_timed_out(self) -> list[str]:
        """Abort every ongoing transaction past its timeout; returns the transactional ids aborted."""
        aborted = []
        for decision in rules.abort_timed_out(list(self.txns.values()), self.now_ms()):
            (record,) = decision.records
            log.info(
                "aborting transaction %s: it passed its %d ms timeout",
                record.transactional_id,
                record.timeout_ms,
            )
            self._execute(decision)
            aborted.append(record.transactional_id)
        return aborted

    async def _abort_timed_out_loop(self) -> None:
        interval = self.settings.abort_interval_ms / 1000
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
        """ListTransactions' filters (``rules.list_transactions``)."""
        return rules.list_transactions(
            self.txns, states, producer_ids, min_duration_ms, transactional_id_pattern, self.now_ms()
        )
