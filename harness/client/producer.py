"""The reference producer: serializer, interceptors, partitioner, record accumulator and sender, in the
shape of Kafka's KafkaProducer, on asyncio.

    async with Producer({"bootstrap.servers": "127.0.0.1:9092", "linger.ms": 5}) as producer:
        future = await producer.send("orders", b"value", key=b"key")   # waits only for metadata/memory
        metadata = await future                                       # RecordMetadata(offset=...)

``send`` returns once the record is in a batch (as KafkaProducer.send does), handing back an awaitable
of the record's metadata; a callback ``callback(metadata, exception)`` runs when the batch settles.
It waits for topic metadata and for buffer memory up to max.block.ms, then raises."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kconform.codecs.compression import Compression

from .accumulator import RecordAccumulator, RecordFuture, RecordMetadata
from .config import ClientConfigError, ProducerConfig
from .errors import BrokerError, ClientError
from .network import NetworkClient
from .partitioner import BuiltInPartitioner, Partitioner, RoundRobinPartitioner
from .sender import Sender
from .transaction_manager import ProducerTxnState, TransactionManager
from .transactions import add_offsets, end_txn, init_producer_id, txn_offset_commit

__all__ = ["Producer", "ProducerInterceptor", "ProducerRecord", "RecordMetadata", "RecordTooLarge"]

_HEADER_OVERHEAD = 61 + 21  # batch header plus a record's worst-case framing, as Kafka's estimate


class RecordTooLarge(ClientError):
    """A record bigger than max.request.size or buffer.memory (Kafka's RecordTooLargeException)."""


class BufferExhausted(ClientError):
    """No buffer memory freed up within max.block.ms."""


@dataclass(slots=True)
class ProducerRecord:
    """A record as interceptors see it, before partitioning."""

    topic: str
    value: Any = None
    key: Any = None
    partition: int | None = None
    timestamp: int | None = None
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)


class ProducerInterceptor:
    """Kafka's ProducerInterceptor: ``on_send`` may replace the record; ``on_acknowledgement`` sees each
    outcome. Errors raised by an interceptor are swallowed, as in Java."""

    def on_send(self, record: ProducerRecord) -> ProducerRecord:
        return record

    def on_acknowledgement(self, metadata: RecordMetadata | None, exception: BaseException | None) -> None:
        pass


_SERIALIZERS: dict[str, Callable[[str, Any], bytes | None]] = {
    "org.apache.kafka.common.serialization.StringSerializer": lambda _t, v: (
        None if v is None else str(v).encode()
    ),
    "org.apache.kafka.common.serialization.ByteArraySerializer": lambda _t, v: v,
    "org.apache.kafka.common.serialization.BytesSerializer": lambda _t, v: v,
}

_FENCED = ("PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH")
_ROUND_ROBIN = {"org.apache.kafka.clients.producer.RoundRobinPartitioner", "round_robin", "roundrobin"}


def _serializer(config, name: str, given):
    if given is not None:
        return given
    configured = config[name]
    if configured is None:
        return None
    try:
        return _SERIALIZERS[configured]
    except KeyError:
        raise ClientConfigError(
            f"{name}={configured!r}: pass a callable, or one of {', '.join(sorted(_SERIALIZERS))}"
        ) from None


class Producer:
    def __init__(
        self,
        config: Mapping[str, Any] | ProducerConfig,
        *,
        key_serializer: Callable[[str, Any], bytes | None] | None = None,
        value_serializer: Callable[[str, Any], bytes | None] | None = None,
        partitioner: Partitioner | None = None,
        interceptors: Sequence[ProducerInterceptor] = (),
        clock: Callable[[], float] = time.monotonic,
        wall_clock_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000,
    ) -> None:
        self.config = config if isinstance(config, ProducerConfig) else ProducerConfig(config)
        cfg = self.config
        if not cfg["bootstrap.servers"]:
            raise ClientConfigError("bootstrap.servers is required")
        self.key_serializer = _serializer(cfg, "key.serializer", key_serializer)
        self.value_serializer = _serializer(cfg, "value.serializer", value_serializer)
        if partitioner is None:
            name = cfg["partitioner.class"]
            if name is None:
                partitioner = BuiltInPartitioner(cfg["batch.size"])
            elif name in _ROUND_ROBIN:
                partitioner = RoundRobinPartitioner()
            else:
                raise ClientConfigError(
                    f"partitioner.class={name!r}: pass a partitioner object, or use the default or "
                    "org.apache.kafka.clients.producer.RoundRobinPartitioner"
                )
        self.partitioner = partitioner
        self._sticky = isinstance(partitioner, BuiltInPartitioner)
        self.ignore_keys = cfg["partitioner.ignore.keys"]
        self.interceptors = list(interceptors)
        self.clock = clock
        self.wall_clock_ms = wall_clock_ms
        self.max_block = cfg["max.block.ms"] / 1000
        self.max_request_size = cfg["max.request.size"]
        self.buffer_memory = cfg["buffer.memory"]
        self.idempotent = cfg["enable.idempotence"]
        self._transactional_id = cfg["transactional.id"]
        self._record_limit = min(self.max_request_size, self.buffer_memory)
        self.client: NetworkClient | None = None
        self.accumulator: RecordAccumulator | None = None
        self.sender: Sender | None = None
        self.txn: TransactionManager | None = None
        if self.idempotent:
            self.txn = TransactionManager(cfg["transactional.id"], cfg["transaction.timeout.ms"])
        self._sender_task: asyncio.Task | None = None
        self._memory_freed: asyncio.Event | None = None
        self._closed = False

    # ---- lifecycle ------------------------------------------------------------------------------

    async def start(self) -> Producer:
        cfg = self.config
        loop = asyncio.get_running_loop()
        self.client = NetworkClient.from_config(cfg)
        self.client.allow_auto_create = True  # the Java producer's metadata requests allow it too
        codec = Compression[cfg["compression.type"].upper()]
        level = {
            Compression.GZIP: cfg["compression.gzip.level"],
            Compression.LZ4: cfg["compression.lz4.level"],
            Compression.ZSTD: cfg["compression.zstd.level"],
        }.get(codec)
        if codec is Compression.GZIP and level == -1:
            level = None  # the codec's default
        self.accumulator = RecordAccumulator(
            batch_size=cfg["batch.size"],
            linger_ms=cfg["linger.ms"],
            compression=codec,
            compression_level=level,
            delivery_timeout_ms=cfg["delivery.timeout.ms"],
            retry_backoff_ms=cfg["retry.backoff.ms"],
            buffer_memory=self.buffer_memory,
            loop=loop,
        )
        self.sender = Sender(
            self.client,
            self.accumulator,
            self.txn,
            acks=cfg.acks,
            retries=cfg["retries"],
            request_timeout_ms=cfg["request.timeout.ms"],
            max_in_flight=cfg["max.in.flight.requests.per.connection"],
            max_request_size=self.max_request_size,
            clock=self.clock,
        )
        self._memory_freed = asyncio.Event()
        await self.client.refresh_metadata()
        self._sender_task = loop.create_task(self.sender.run())
        return self

    async def __aenter__(self) -> Producer:
        return await self.start()

    async def __aexit__(self, *exc_info) -> None:
        await self.close()

    async def close(self, timeout: float | None = None) -> None:
        """Send what is queued (up to ``timeout`` seconds, then fail the rest) and disconnect."""
        if self._closed or self.sender is None:
            return
        self._closed = True
        self.accumulator.closing = True
        self.sender.stop()
        try:
            await asyncio.wait_for(asyncio.shield(self._sender_task), timeout)
        except TimeoutError:
            self.sender.abort_undrained(ClientError("the producer closed before these records were sent"))
            self._sender_task.cancel()
        await self.client.close()

    # ---- sending --------------------------------------------------------------------------------

    async def send(
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        *,
        partition: int | None = None,
        timestamp_ms: int | None = None,
        headers: Sequence[tuple[str, bytes | None]] | None = None,
        callback: Callable[[RecordMetadata | None, BaseException | None], None] | None = None,
    ) -> RecordFuture:
        if self._closed:
            raise ClientError("cannot send after the producer is closed")
        txn = self.txn
        if txn is not None:
            self._check_may_send(txn)
        if self.interceptors:
            record = ProducerRecord(topic, value, key, partition, timestamp_ms, list(headers or []))
            for interceptor in self.interceptors:
                try:
                    record = interceptor.on_send(record)
                except Exception:  # noqa: BLE001 - Java logs and carries on
                    pass
            topic, value, key, partition = record.topic, record.value, record.key, record.partition
            timestamp_ms, headers = record.timestamp, record.headers
        key_bytes = self.key_serializer(topic, key) if self.key_serializer is not None else key
        value_bytes = self.value_serializer(topic, value) if self.value_serializer is not None else value
        info = self.client.metadata.topics.get(topic)
        if info is None or not info.partitions or info.error_code:
            await self.client.wait_for_topic(topic, self.max_block)
            info = self.client.metadata.topics[topic]
        count = len(info.partitions)
        if partition is None:
            partition = self.partitioner.partition(
                topic, None if self.ignore_keys else key_bytes, count, info.available
            )
        elif not 0 <= partition < count:
            raise BrokerError(3, f"partition {partition} of topic {topic} (it has {count})")
        timestamp = self.wall_clock_ms() if timestamp_ms is None else timestamp_ms
        size = (0 if key_bytes is None else len(key_bytes)) + (0 if value_bytes is None else len(value_bytes))
        if size + _HEADER_OVERHEAD > self._record_limit:
            raise RecordTooLarge(
                f"a record of about {size + _HEADER_OVERHEAD} bytes is larger than max.request.size "
                f"({self.max_request_size}) or buffer.memory ({self.buffer_memory})"
            )
        headers = list(headers) if headers else None
        appended = self.accumulator.append(
            topic, partition, timestamp, key_bytes, value_bytes, headers, self.clock()
        )
        if appended is None:
            appended = await self._append_when_memory_frees(
                topic, partition, timestamp, key_bytes, value_bytes, headers
            )
        batch, relative, ready = appended
        if self._transactional_id is not None:
            txn.note_partition(topic, partition)
        if self._sticky and (key_bytes is None or self.ignore_keys):
            self.partitioner.record_appended(topic, size + _HEADER_OVERHEAD, count, info.available)
        ksize = -1 if key_bytes is None else len(key_bytes)
        vsize = -1 if value_bytes is None else len(value_bytes)
        if callback is not None or self.interceptors:
            if batch.callbacks is None:
                batch.callbacks = []
            batch.callbacks.append((relative, self._wrap_callback(callback), timestamp, ksize, vsize))
        if relative == 0:
            self.sender.wakeup()  # a new batch: its linger starts now
            if ready:
                # The one before it is full. Give the sender a turn, or a producer that never waits
                # would queue everything before the first byte goes out.
                await asyncio.sleep(0)
        return RecordFuture(batch, relative, timestamp, ksize, vsize)

    def _check_may_send(self, txn: TransactionManager) -> None:
        if txn.state is ProducerTxnState.FATAL_ERROR or self.sender.fatal:
            raise ClientError(f"the producer failed and cannot send: {txn.last_error or self.sender.fatal}")
        if self._transactional_id is not None:
            txn.require(ProducerTxnState.IN_TRANSACTION, action="send outside a transaction")

    async def send_and_wait(self, topic: str, value: Any = None, key: Any = None, **kw) -> RecordMetadata:
        return await (await self.send(topic, value, key, **kw))

    def _wrap_callback(self, callback):
        interceptors = self.interceptors

        def on_completion(metadata, exception):
            for interceptor in interceptors:
                try:
                    interceptor.on_acknowledgement(metadata, exception)
                except Exception:  # noqa: BLE001
                    pass
            if callback is not None:
                callback(metadata, exception)

        return on_completion

    async def _append_when_memory_frees(self, topic, partition, timestamp, key, value, headers):
        acc = self.accumulator
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.max_block
        acc.memory_waiters += 1
        self.sender.wakeup()  # memory pressure makes every batch ready
        try:
            while True:
                appended = acc.append(topic, partition, timestamp, key, value, headers, self.clock())
                if appended is not None:
                    return appended
                remaining = deadline - loop.time()
                if remaining <= 0:
                    raise BufferExhausted(
                        f"no room in buffer.memory ({self.buffer_memory} bytes) within max.block.ms "
                        f"({self.max_block * 1000:.0f} ms)"
                    )
                await self._wait_for_memory(remaining)
        finally:
            acc.memory_waiters -= 1

    async def _wait_for_memory(self, timeout: float) -> None:
        freed = self.sender.memory_freed
        freed.clear()
        try:
            await asyncio.wait_for(freed.wait(), timeout)
        except TimeoutError:
            pass

    async def flush(self, timeout: float | None = None) -> None:
        """Wait until every record sent so far is acknowledged or failed."""
        await self.sender.wait_idle(timeout)

    async def partitions_for(self, topic: str) -> list[int]:
        await self.client.wait_for_topic(topic, self.max_block)
        return sorted(self.client.metadata.topics[topic].partitions)

    # ---- transactions ---------------------------------------------------------------------------

    def _transactional(self) -> TransactionManager:
        if self.txn is None or not self.txn.transactional:
            raise ClientError("this producer has no transactional.id")
        return self.txn

    async def init_transactions(self) -> None:
        txn = self._transactional()
        txn.transition(ProducerTxnState.INITIALIZING)
        try:
            producer_id, epoch = await init_producer_id(self.client, txn, bump=False)
        except ClientError as exc:
            txn.fail(exc, fatal=True)
            raise
        txn.set_producer(producer_id, epoch)
        txn.transition(ProducerTxnState.READY)

    def begin_transaction(self) -> None:
        self._transactional().begin()

    async def send_offsets_to_transaction(
        self,
        offsets: Mapping[tuple[str, int], int | tuple[int, str | None]],
        group_id: str,
        *,
        generation_id: int = -1,
        member_id: str = "",
        group_instance_id: str | None = None,
    ) -> None:
        txn = self._transactional()
        txn.require(ProducerTxnState.IN_TRANSACTION, action="send offsets outside a transaction")
        normalised = {tp: v if isinstance(v, tuple) else (v, None) for tp, v in offsets.items()}
        try:
            await add_offsets(self.client, txn, group_id)
            txn.offsets_group_added = True
            await txn_offset_commit(
                self.client,
                txn,
                group_id,
                normalised,
                generation_id=generation_id,
                member_id=member_id,
                group_instance_id=group_instance_id,
            )
        except ClientError as exc:
            txn.fail(exc, fatal=isinstance(exc, BrokerError) and exc.name in _FENCED)
            raise

    async def commit_transaction(self) -> None:
        txn = self._transactional()
        txn.require(ProducerTxnState.IN_TRANSACTION, action="commit")
        await self.flush()
        if txn.state is ProducerTxnState.ABORTABLE_ERROR:
            raise ClientError(f"the transaction cannot commit, abort it: {txn.last_error}")
        txn.transition(ProducerTxnState.COMMITTING)
        try:
            if txn.started:  # nothing was added: the coordinator has no transaction to end
                await end_txn(self.client, txn, commit=True)
        except ClientError as exc:
            txn.fail(exc, fatal=isinstance(exc, BrokerError) and exc.name in _FENCED)
            raise
        txn.end()

    async def abort_transaction(self) -> None:
        txn = self._transactional()
        txn.require(ProducerTxnState.IN_TRANSACTION, ProducerTxnState.ABORTABLE_ERROR, action="abort")
        txn.transition(ProducerTxnState.ABORTING)
        # Records not yet sent are dropped (Java's TransactionAbortedException); those on the wire finish.
        self.sender.abort_undrained(ClientError("the transaction was aborted before these records were sent"))
        await self.flush()
        try:
            if txn.started:
                await end_txn(self.client, txn, commit=False)
        except ClientError as exc:
            txn.fail(exc, fatal=True)
            raise
        if txn.epoch_bump_required:  # a failed batch left a sequence hole: continue under a new epoch
            producer_id, epoch = await init_producer_id(self.client, txn, bump=True)
            txn.set_producer(producer_id, epoch)
        txn.end()
