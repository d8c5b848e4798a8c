"""The producer's sender (Kafka's Sender): drains ready batches per leader into ProduceRequests, keeps
at most max.in.flight.requests.per.connection of them on each connection, and settles every batch as
acknowledged, retried or failed. ``produce_outcome`` is the decision, a pure function of the answer;
the loop around it is the only part that touches sockets and the clock."""

from __future__ import annotations

import asyncio
import collections
import logging
from dataclasses import dataclass
from enum import Enum

from kconform.codecs.constants import ZERO_UUID
from kconform.codecs.errors import error_for
from kconform.codecs.messages import ProduceRequest

from .accumulator import BatchResult, ProducerBatch, RecordAccumulator
from .errors import BrokerError, ClientError, DeliveryTimedOut, RequestTimedOut
from .network import NetworkClient
from .transaction_manager import TransactionManager

__all__ = ["Outcome", "Sender", "produce_outcome", "produce_version_cap"]

log = logging.getLogger(__name__)

_PRODUCE = 0
_MESSAGE_TOO_LARGE = 10
_OUT_OF_ORDER_SEQUENCE_NUMBER = 45
_DUPLICATE_SEQUENCE_NUMBER = 46
_PRODUCE_MIN_V2 = 3  # Produce v3 is the first to carry record batches (magic 2)
_PRODUCE_TXN_V1_MAX = 11  # newer versions let the broker add partitions itself (transactions v2)
_PRODUCE_BY_NAME_MAX = 12  # v13 names topics by id only (KIP-516)


class Outcome(Enum):
    COMPLETE = "complete"
    RETRY = "retry"
    FAIL = "fail"


@dataclass(frozen=True, slots=True)
class Decision:
    outcome: Outcome
    refresh_metadata: bool = False


def produce_outcome(
    code: int,
    *,
    attempts: int,
    retries: int,
    delivery_expired: bool,
    idempotent: bool,
    next_in_flight: bool,
) -> Decision:
    """What to do with a batch after the broker's answer (Sender.completeBatch and
    TransactionManager.canRetry). ``code`` -1 stands for a lost connection or a timed-out request."""
    if code == 0:
        return Decision(Outcome.COMPLETE)
    if code == -1:
        error_retriable, invalid_metadata = True, True
    else:
        error = error_for(code)
        error_retriable, invalid_metadata = error.retriable, error.invalid_metadata
    if code == _DUPLICATE_SEQUENCE_NUMBER and idempotent:
        return Decision(Outcome.COMPLETE)  # the broker already has it: the first write succeeded
    may_retry = attempts < retries and not delivery_expired
    if may_retry and idempotent and code == _OUT_OF_ORDER_SEQUENCE_NUMBER and not next_in_flight:
        # An older batch of this partition failed first, so the broker saw a gap: this one is fine.
        return Decision(Outcome.RETRY)
    if may_retry and error_retriable:
        return Decision(Outcome.RETRY, invalid_metadata)
    return Decision(Outcome.FAIL, invalid_metadata)


def produce_version_cap(*, transactional: bool, every_topic_id_known: bool) -> int | None:
    """The highest Produce version a request may use, or None for no cap of its own.

    A transactional producer stays at v11: this producer adds partitions with AddPartitionsToTxn
    (transactions v1), and v12 would tell the broker to add them itself (Sender.sendProduceRequest's
    ``useTransactionV1Version``, ProduceRequest.LAST_STABLE_VERSION_BEFORE_TRANSACTION_V2). v13 names
    topics by id alone, so a request with a topic whose id the metadata lacks (a broker below Metadata
    v10) stays at v12, as a consumer's Fetch stays at v12 without ids (AbstractFetch.createFetchRequest)."""
    if transactional:
        return _PRODUCE_TXN_V1_MAX
    if not every_topic_id_known:
        return _PRODUCE_BY_NAME_MAX
    return None


class Sender:
    def __init__(
        self,
        client: NetworkClient,
        accumulator: RecordAccumulator,
        txn: TransactionManager | None,
        *,
        acks: int,
        retries: int,
        request_timeout_ms: int,
        max_in_flight: int,
        max_request_size: int,
        clock,
    ) -> None:
        self.client = client
        self.accumulator = accumulator
        self.txn = txn
        self.acks = acks
        self.retries = retries
        self.request_timeout_ms = request_timeout_ms
        self.max_in_flight = max_in_flight
        self.max_request_size = max_request_size
        self.clock = clock
        self.in_flight: dict[int, int] = {}
        self.stats: collections.Counter[str] = collections.Counter()  # requests, retries, errors by name
        self.on_wire = 0
        self.fatal: BaseException | None = None
        self._wake = asyncio.Event()
        self._running = True
        self._connecting: dict[int, asyncio.Task] = {}
        self._side_tasks: set[asyncio.Task] = set()
        self._adding_partitions = False
        self._metadata_task: asyncio.Task | None = None
        self._idle = asyncio.Event()
        self.memory_freed = asyncio.Event()  # set when a batch gives its buffer memory back

    def wakeup(self) -> None:
        self._wake.set()

    def stop(self) -> None:
        self._running = False
        self._wake.set()

    # ---- the loop -------------------------------------------------------------------------------

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        while self._running or self.accumulator.has_queued() or self.on_wire:
            self._wake.clear()
            try:
                delay = await self._run_once()
            except ClientError as exc:  # producer id or transaction errors: fail what is queued
                log.warning("producer sender: %s", exc)
                self.fatal = exc
                self._fail_all(exc)
                delay = 0.1
            if not self._running and not self.accumulator.has_queued() and not self.on_wire:
                break
            handle = loop.call_later(max(delay, 0.0005), self._wake.set) if delay != float("inf") else None
            await self._wake.wait()
            if handle is not None:
                handle.cancel()

    async def _run_once(self) -> float:
        acc = self.accumulator
        now = self.clock()
        for batch in acc.expired(now):
            self._settle(
                batch,
                None,
                DeliveryTimedOut(
                    f"{batch.count} record(s) for {batch.topic}-{batch.partition} expired: "
                    f"{now - batch.created:.3f}s since the batch was created"
                ),
            )
        txn = self.txn
        if txn is not None:
            if txn.epoch_bump_required and not txn.transactional and self.on_wire == 0:
                await self._init_producer_id(bump=True)
            elif not txn.has_producer_id and not txn.transactional:
                await self._init_producer_id(bump=False)
            if txn.transactional and txn.pending_partitions and not self._adding_partitions:
                self._spawn(self._add_partitions())
        metadata = self.client.metadata
        leader_for = metadata.leader_for
        nodes, delay, unknown = acc.ready(leader_for, now)
        if unknown:
            self._refresh_metadata()
            delay = min(delay, self.client.retry_backoff)
        elif self.client.metadata_stale:  # metadata.max.age.ms: look again even without errors
            self._refresh_metadata()
        may_send = txn.may_send if txn is not None else _always
        for node in nodes:
            if self.in_flight.get(node, 0) >= self.max_in_flight:
                continue
            conn = self.client._connections.get(node)
            if conn is None or conn.closed:
                self._connect(node)
                continue
            batches = acc.drain(leader_for, node, self.max_request_size, now, may_send)
            if batches:
                self._send(conn, node, batches, now)
        return delay

    def _send(self, conn, node: int, batches: list[ProducerBatch], now: float) -> None:
        txn = self.txn
        by_topic: dict[str, list] = {}
        compression = self.accumulator.compression
        for batch in batches:
            if txn is not None:
                txn.assign(batch)
            by_topic.setdefault(batch.topic, []).append(
                ProduceRequest.PartitionProduceData(index=batch.partition, records=batch.encode(compression))
            )
        # Sender.sendProduceRequest: each topic carries its name and its id from the metadata
        # (topicIdsForBatches); the version decides which one goes on the wire.
        metadata = self.client.metadata
        topic_ids = {topic: metadata.known_topic_id(topic) for topic in by_topic}
        request = ProduceRequest(
            transactional_id=txn.transactional_id if txn is not None else None,
            acks=self.acks,
            timeout_ms=self.request_timeout_ms,
            topic_data=[
                ProduceRequest.TopicProduceData(name=t, topic_id=topic_ids[t] or ZERO_UUID, partition_data=p)
                for t, p in by_topic.items()
            ],
        )
        cap = produce_version_cap(
            transactional=txn is not None and txn.transactional,
            every_topic_id_known=all(topic_ids.values()),
        )
        try:
            version = conn.version_for(_PRODUCE, cap=cap, floor=_PRODUCE_MIN_V2)
            future = conn.send_nowait(_PRODUCE, request, version=version, expect_response=self.acks != 0)
        except ClientError as exc:
            for batch in batches:
                self._handle_error(batch, -1, exc, now)
            return
        self.in_flight[node] = self.in_flight.get(node, 0) + 1
        self.stats["requests"] += 1
        self.on_wire += len(batches)
        # v13 answers name topics by id alone: read them back with the ids this request was sent with
        # (Sender.handleProduceResponse, with the topic names taken before sending).
        names = {topic_id: topic for topic, topic_id in topic_ids.items() if topic_id is not None}
        epochs = {(b.topic, b.partition): metadata.leader_epoch(b.topic, b.partition) for b in batches}
        future.add_done_callback(lambda f: self._on_response(node, batches, f, names, epochs))

    def _on_response(
        self,
        node: int,
        batches: list[ProducerBatch],
        future: asyncio.Future,
        names: dict | None = None,
        epochs: dict | None = None,
    ) -> None:
        self.in_flight[node] -= 1
        self.on_wire -= len(batches)
        now = self.clock()
        exc = future.exception()
        if exc is not None:
            if isinstance(exc, RequestTimedOut | ClientError):
                self.client.disconnect(node)
            for batch in batches:
                self._handle_error(batch, -1, exc, now)
        elif self.acks == 0:
            for batch in batches:
                self._settle(batch, BatchResult(-1, -1, -1), None)
        else:
            answers = {}
            for topic in future.result().responses:
                # By id when the answer carries one this request used (v13), else by name.
                name = (names or {}).get(topic.topic_id, topic.name)
                for part in topic.partition_responses:
                    answers[(name, part.index)] = part
            for batch in batches:
                part = answers.get((batch.topic, batch.partition))
                if part is None:
                    missing = ClientError("the broker's answer left the partition out")
                    self._handle_error(batch, -1, missing, now)
                elif part.error_code == 0 or (
                    part.error_code == _DUPLICATE_SEQUENCE_NUMBER and self.txn is not None
                ):
                    epoch = (epochs or {}).get((batch.topic, batch.partition), -1)
                    result = BatchResult(
                        part.base_offset, part.log_append_time_ms, part.log_start_offset, node, epoch
                    )
                    self._settle(batch, result, None)
                else:
                    self._handle_error(batch, part.error_code, None, now, part.error_message)
        self._wake.set()

    def _handle_error(self, batch, code: int, exc, now: float, message: str | None = None) -> None:
        acc = self.accumulator
        txn = self.txn
        decision = produce_outcome(
            code,
            attempts=batch.attempts,
            retries=self.retries,
            delivery_expired=now - batch.created >= acc.delivery_timeout,
            idempotent=txn is not None,
            next_in_flight=txn is not None and txn.is_next_in_flight(batch),
        )
        self.stats[error_for(code).name if code != -1 else type(exc).__name__] += 1
        if code == _MESSAGE_TOO_LARGE and batch.count > 1 and now - batch.created < acc.delivery_timeout:
            # Kafka's Sender splits a batch the broker finds too large and sends the pieces instead.
            pieces = acc.reenqueue_split(batch, now)
            if txn is not None:
                txn.replace_with_pieces(batch, pieces)
            self.stats["splits"] += 1
            return
        if decision.refresh_metadata:
            self._refresh_metadata()
        if decision.outcome is Outcome.RETRY:
            log.debug(
                "retrying %s-%s (attempt %d): %s",
                batch.topic,
                batch.partition,
                batch.attempts + 1,
                exc or error_for(code).name,
            )
            self.stats["retries"] += 1
            acc.reenqueue(batch, now)
            return
        if decision.outcome is Outcome.COMPLETE:
            self._settle(batch, BatchResult(-1, -1, -1), None)
            return
        where = f"produce to {batch.topic}-{batch.partition}"
        error = exc if exc is not None else BrokerError(code, where, message)
        if now - batch.created >= acc.delivery_timeout and exc is not None:
            error = DeliveryTimedOut(f"{batch.topic}-{batch.partition}: delivery timed out after {exc}")
        self._settle(batch, None, error)

    def _settle(self, batch: ProducerBatch, result: BatchResult | None, error: BaseException | None) -> None:
        parent = batch.parent
        if parent is not None:  # a piece of a split batch: the original settles with its last piece
            if self.txn is not None:
                self.txn.done(batch, failed=error is not None)
            batch.complete(result, error)
            if parent.future.done():
                return
            if error is not None:
                self._settle(parent, None, error)
            else:
                whole = parent.piece_done(batch, result)
                if whole is not None:
                    self._settle(parent, whole, None)
            return
        txn = self.txn
        if txn is not None:
            txn.done(batch, failed=error is not None)
            if error is not None and txn.transactional:
                txn.fail(error, fatal=False)
        self.accumulator.release(batch)
        if self.accumulator.memory_waiters:
            self.memory_freed.set()
        batch.complete(result, error)
        if not self.accumulator.incomplete:
            self._idle.set()

    def _fail_all(self, error: BaseException) -> None:
        for batch in self.accumulator.undrained():
            self._settle(batch, None, error)

    def abort_undrained(self, error: BaseException) -> None:
        self._fail_all(error)

    # ---- side work ------------------------------------------------------------------------------

    def _spawn(self, coro) -> None:
        task = asyncio.ensure_future(coro)
        self._side_tasks.add(task)
        task.add_done_callback(self._side_tasks.discard)

    def _connect(self, node: int) -> None:
        if node in self._connecting:
            return

        async def connect():
            try:
                await self.client.connection(node)
            except ClientError as exc:
                log.debug("connecting to node %d: %s", node, exc)
                await asyncio.sleep(self.client.retry_backoff)
                self._refresh_metadata()
            finally:
                self._connecting.pop(node, None)
                self._wake.set()

        self._connecting[node] = asyncio.ensure_future(connect())

    def _refresh_metadata(self) -> None:
        if self._metadata_task is not None and not self._metadata_task.done():
            return

        async def refresh():
            try:
                await self.client.refresh_metadata()
            except ClientError as exc:
                log.debug("metadata refresh: %s", exc)
            self._wake.set()

        self._metadata_task = asyncio.ensure_future(refresh())

    async def _init_producer_id(self, *, bump: bool) -> None:
        from .transactions import init_producer_id

        txn = self.txn
        producer_id, epoch = await init_producer_id(self.client, txn, bump=bump)
        if bump:
            txn.bump_epoch(producer_id, epoch)
        else:
            txn.set_producer(producer_id, epoch)

    async def _add_partitions(self) -> None:
        from .transactions import add_partitions

        self._adding_partitions = True
        try:
            await add_partitions(self.client, self.txn)
        except ClientError as exc:
            self.txn.fail(exc, fatal=isinstance(exc, BrokerError) and exc.name in _FATAL_TXN_ERRORS)
            self._fail_all(exc)
        finally:
            self._adding_partitions = False
            self._wake.set()

    async def wait_idle(self, timeout: float | None = None) -> None:
        """Until every batch appended so far is settled (flush)."""
        acc = self.accumulator
        acc.flushing += 1
        self._wake.set()
        try:
            while acc.incomplete:
                self._idle.clear()
                await asyncio.wait_for(self._idle.wait(), timeout)
        finally:
            acc.flushing -= 1


def _always(_batch) -> bool:
    return True


_FATAL_TXN_ERRORS = frozenset(
    {
        "PRODUCER_FENCED",
        "INVALID_PRODUCER_EPOCH",
        "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
        "INVALID_TXN_STATE",
        "UNSUPPORTED_VERSION",
        "UNSUPPORTED_FOR_MESSAGE_FORMAT",
    }
)
