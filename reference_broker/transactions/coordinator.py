"""The transaction coordinator of one node (Kafka's ``TransactionCoordinator``): it holds each
transactional id's state, reads it back from ``__transaction_state`` on start, and hands requests, the
timed-out check and the load's unfinished transactions to the coordinator runtime, which carries out
what the rules decide (``effects``: records, then markers, then the completion). The markers are the one
effect of its own it carries out. It reaches the node only through ``TxnCoordinatorHost``.

Markers go to the leaders of the transaction's partitions (``marker_delivery``), in the background as
Kafka's ``TransactionMarkerChannelManager`` sends them: the EndTxn answer goes out once the prepare
record is committed, and the transaction stays in PrepareCommit/PrepareAbort (other requests get
CONCURRENT_TRANSACTIONS) until every marker is in, when the completion is written. A partition this
broker leads with no other in-sync replica takes its marker at once, so on a single node a transaction
completes within the EndTxn it ends. As Kafka's ``completeTransitionTo`` does, the state in memory
changes only once its record is written."""

from __future__ import annotations

import asyncio
import dataclasses
import logging

from kconform.codecs.errors import Errors

from ..coordinator_runtime import CoordinatorRuntime
from ..interbroker import BrokerChannels
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
from .effects import (
    AbortTimedOut,
    FinishPrepared,
    MarkersWritten,
    TxnContext,
    TxnRequest,
    WriteMarkers,
    decide,
)
from .host import TxnCoordinatorHost
from .log_records import TxnRecordError, decode_txn_key, decode_txn_value
from .marker_delivery import MarkerFate, deliver_markers, fate_of, route
from .marker_writer import write_markers_replicated, write_txn_markers
from .metadata import TxnMetadata
from .states import TxnState

# TxnError, ProducerIdAndEpoch and NO_PRODUCER are the handlers' vocabulary, kept importable from here.
__all__ = ["NO_PRODUCER", "ProducerIdAndEpoch", "TransactionCoordinator", "TxnError"]

log = logging.getLogger(__name__)
WRITE_TXN_MARKERS = 27


def _uncommitted(decision: TxnDecision, error: int) -> TxnDecision:
    """``TransactionStateManager.appendTransactionToLog``'s mapping: a write that leadership lost is
    NOT_COORDINATOR, one not replicated in time COORDINATOR_NOT_AVAILABLE."""
    code = (
        Errors.NOT_COORDINATOR if error == Errors.NOT_LEADER_OR_FOLLOWER else Errors.COORDINATOR_NOT_AVAILABLE
    )
    return dataclasses.replace(decision, error=code)


class TransactionCoordinator:
    def __init__(self, host: TxnCoordinatorHost) -> None:
        self._host = host
        self.txns: dict[str, TxnMetadata] = {}
        self.owned: dict[int, int] = {}  # __transaction_state partition -> the leader epoch it loaded at
        self._task: asyncio.Task | None = None
        self._deliveries: dict[str, tuple[int, asyncio.Task]] = {}  # id -> its partition, the sender
        self.peers = BrokerChannels(
            host.peer_address,
            client_id=f"kconform-txn-{host.node_id}",
            security=getattr(host, "peer_security", None),  # the inter-broker listener's
        )
        self.runtime = CoordinatorRuntime(
            "transaction coordinator",
            lambda event: decide(self.txns, event, self._context()),
            host.transaction_state,
            effects={WriteMarkers: self._write_markers},
            uncommitted=_uncommitted,
            commit_timeout_s=lambda: int(host.config["request.timeout.ms"]) / 1000,
        )

    @property
    def settings(self) -> TxnSettings:
        return TxnSettings.from_config(self._host.config)

    def now_ms(self) -> int:
        return self._host.clock.now_ms()

    def _context(self) -> TxnContext:
        return TxnContext(self.now_ms(), self.settings, self._host.producer_ids.next_id)

    # ---- lifecycle ---------------------------------------------------------------------------------

    async def start(self) -> None:
        """Partitions are read as this broker becomes their leader (``elect``)."""
        self._task = asyncio.create_task(self._abort_timed_out_loop())

    def elect(self, partition: int, leader_epoch: int) -> None:
        """This broker leads ``partition``: read its transactions back and finish the ones that were
        prepared (``TransactionStateManager.loadTransactionsForTxnTopicPartition``)."""
        if self.owned.get(partition) == leader_epoch:
            return
        self._unload(partition)
        self.runtime.load_partition(partition, self._load_partition)
        self.owned[partition] = leader_epoch
        self.runtime.submit(FinishPrepared())

    def resign(self, partition: int) -> None:
        if self.owned.pop(partition, None) is not None:
            self._unload(partition)

    def _unload(self, partition: int) -> None:
        for transactional_id, (owner, task) in list(self._deliveries.items()):
            if owner == partition:  # Kafka's removeMarkersForTxnTopicPartition
                task.cancel()
                del self._deliveries[transactional_id]
        topic = self._host.transaction_state
        for transactional_id in [t for t in self.txns if topic.partition_for(t) == partition]:
            del self.txns[transactional_id]

    def _owner_error(self, transactional_id: str) -> int:
        partition = self._host.transaction_state.partition_for(transactional_id)
        return Errors.NONE if partition in self.owned else Errors.NOT_COORDINATOR

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        deliveries = [task for _owner, task in self._deliveries.values()]
        self._deliveries.clear()
        for task in deliveries:
            task.cancel()
        await asyncio.gather(*deliveries, return_exceptions=True)
        self.peers.close()
        self.runtime.stop()

    def _load_partition(self, partition: int, stored_records) -> None:
        try:
            for stored in stored_records:
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

    # ---- the markers, the one effect of its own ------------------------------------------------------

    async def _answer(self, event) -> ProducerIdAndEpoch:
        if self._owner_error(event.transactional_id):
            raise TxnError(Errors.NOT_COORDINATOR)
        decision: TxnDecision = await self.runtime.request(lambda waiter: TxnRequest(waiter, event))
        if decision.error != Errors.NONE:
            raise TxnError(decision.error)
        return decision.producer

    def _write_markers(self, effect: WriteMarkers) -> MarkersWritten | None:
        """Write at once what can be written at once; send the rest in the background. The completion
        (``MarkersWritten``) is decided now when nothing is left, else when the delivery ends."""
        markers = effect.markers
        coordinator_epoch = self._coordinator_epoch(markers.transactional_id)
        routes = route(markers.partitions, self._leader_of)
        at_once = [tp for tp in routes.by_leader.get(self._host.node_id, ()) if self._sole_replica(tp)]
        left = set(markers.partitions) - set(routes.deleted) - set(at_once)
        codes = write_txn_markers(
            self._host,
            producer_id=markers.producer_id,
            producer_epoch=markers.producer_epoch,
            coordinator_epoch=coordinator_epoch,
            commit=markers.commit,
            partitions=at_once,
            transaction_version=markers.transaction_version,
        )
        for (topic, partition), code in codes.items():
            fate = fate_of(code)
            if fate is MarkerFate.ABANDON:
                log.error(
                    "markers for %s abandoned: %s-%d answered error %d",
                    markers.transactional_id,
                    topic,
                    partition,
                    code,
                )
                return None
            if fate is MarkerFate.RETRY:
                left.add((topic, partition))
        if not left:
            return MarkersWritten(markers)
        self._start_delivery(markers, coordinator_epoch, left)
        return None

    def _sole_replica(self, tp: tuple[str, int]) -> bool:
        """This broker leads the partition and no other replica is in sync: a marker written here is
        committed as it is appended."""
        partition = self._host.partition(*tp)
        if partition is None or not partition.is_leader:
            return False
        return tuple(partition.leadership.maximal_isr) == (self._host.node_id,)

    def _leader_of(self, topic: str, index: int) -> int | None:
        info = self._host.image.get(topic)
        if info is None or not 0 <= index < len(info.partitions):
            return None
        return info.partitions[index].leader

    def _start_delivery(self, markers: MarkerWrite, coordinator_epoch: int, left: set) -> None:
        transactional_id = markers.transactional_id
        owner = self._host.transaction_state.partition_for(transactional_id)
        owned_at = self.owned.get(owner)

        def still_current() -> bool:
            meta = self.txns.get(transactional_id)
            return (
                self.owned.get(owner) == owned_at
                and meta is not None
                and meta.in_prepare
                and (meta.producer_id, meta.producer_epoch) == (markers.producer_id, markers.producer_epoch)
            )

        async def write_local(partitions) -> dict:
            return await write_markers_replicated(
                self._host,
                producer_id=markers.producer_id,
                producer_epoch=markers.producer_epoch,
                coordinator_epoch=coordinator_epoch,
                commit=markers.commit,
                partitions=partitions,
                transaction_version=markers.transaction_version,
                timeout_s=self._request_timeout_s(),
            )

        async def run() -> None:
            try:
                delivered = await deliver_markers(
                    markers,
                    coordinator_epoch,
                    node_id=self._host.node_id,
                    leader_of=self._leader_of,
                    write_local=write_local,
                    send=self._send_markers,
                    still_current=still_current,
                    pending=left,
                )
            finally:
                if self._deliveries.get(transactional_id, (None, None))[1] is asyncio.current_task():
                    del self._deliveries[transactional_id]
            if delivered:
                self.runtime.submit(MarkersWritten(markers))

        previous = self._deliveries.pop(transactional_id, None)
        if previous is not None:
            previous[1].cancel()
        task = asyncio.get_running_loop().create_task(run())
        task.add_done_callback(_log_failure)
        self._deliveries[transactional_id] = (owner, task)

    async def _send_markers(self, broker_id: int, request):
        return await self.peers.send(
            broker_id, WRITE_TXN_MARKERS, request, timeout_s=self._request_timeout_s()
        )

    def _request_timeout_s(self) -> float:
        return int(self._host.config["request.timeout.ms"]) / 1000

    def _coordinator_epoch(self, transactional_id: str) -> int:
        topic = self._host.transaction_state
        partition = self._host.partition(topic.name, topic.partition_for(transactional_id))
        return 0 if partition is None else partition.leader_epoch

    # ---- requests ------------------------------------------------------------------------------------

    async def init_producer_id(
        self, transactional_id: str, timeout_ms: int, expected: ProducerIdAndEpoch | None
    ) -> ProducerIdAndEpoch:
        """The producer id and epoch for a transactional producer (raises TxnError)."""
        return await self._answer(InitProducerId(transactional_id, timeout_ms, expected))

    async def add_partitions(
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
        await self._answer(event)

    async def add_offsets(
        self, transactional_id: str, producer_id: int, producer_epoch: int, offsets_partition: tuple[str, int]
    ) -> None:
        """AddOffsetsToTxn, with the group's ``__consumer_offsets`` partition (raises TxnError)."""
        event = AddOffsets(transactional_id, producer_id, producer_epoch, offsets_partition)
        await self._answer(event)

    def verify_partitions_in_transaction(
        self, transactional_id: str, producer_id: int, producer_epoch: int, partitions: set[tuple[str, int]]
    ) -> dict[tuple[str, int], int]:
        """AddPartitionsToTxn's verify-only form: an error code for each partition."""
        event = VerifyPartitions(transactional_id, producer_id, producer_epoch, frozenset(partitions))
        return rules.verify_partitions(self.txns.get(transactional_id), event)

    async def end_txn(
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
        return await self._answer(event)

    # ---- timeouts ------------------------------------------------------------------------------------

    def abort_timed_out(self) -> None:
        """Abort every ongoing transaction past its timeout."""
        self.runtime.submit(AbortTimedOut())

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


def _log_failure(task: asyncio.Task) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("sending transaction markers failed", exc_info=task.exception())
