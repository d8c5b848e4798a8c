"""The producer's record accumulator (Kafka's RecordAccumulator and ProducerBatch), without I/O.

Records are encoded into their partition's open batch as they are appended, as Kafka's
MemoryRecordsBuilder writes them, so a batch's size is known exactly and sealing it at send time only
compresses once and writes the 61-byte header. The producer state in the header (producer id, epoch,
base sequence) is written at each send, because a retry after an epoch bump carries new values.

The accumulator decides, it does not wait: ``ready`` says which leaders have sendable batches and when
to look again, ``drain`` takes batches for chosen nodes, ``expired`` gives up on batches past
delivery.timeout.ms. The sender owns the clock and the sockets."""

from __future__ import annotations

import asyncio
import bisect
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from kconform.codecs.compression import Compression, compress
from kconform.codecs.records import decode_batch, encode_record_v2, seal_v2_batch

__all__ = ["BatchResult", "ProducerBatch", "RecordAccumulator", "RecordFuture", "RecordMetadata"]

_V2_HEADER_SIZE = 61
_NO_TIMESTAMP = -1


@dataclass(frozen=True, slots=True)
class RecordMetadata:
    """What the broker said of one record: where it landed. ``offset`` is -1 with acks=0. Beyond
    KafkaProducer's fields, which broker acknowledged it and the partition's leader epoch in the
    metadata the producer routed it by (-1 when unknown): the chaos checkers' evidence of who led."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    serialized_key_size: int
    serialized_value_size: int
    broker: int = -1
    leader_epoch: int = -1


@dataclass(frozen=True, slots=True)
class BatchResult:
    base_offset: int
    log_append_time: int  # -1 unless the topic uses LogAppendTime
    log_start_offset: int
    broker: int = -1  # the node that acknowledged the batch
    leader_epoch: int = -1  # the partition's leader epoch in the metadata the batch was routed by

    def offset_for(self, relative: int) -> int:
        return -1 if self.base_offset < 0 else self.base_offset + relative


@dataclass(frozen=True, slots=True)
class SplitResult:
    """The outcome of a batch the broker found too large, sent again as smaller batches: record
    ``relative`` of the original is record ``relative - starts[i]`` of piece ``i``."""

    starts: tuple[int, ...]
    pieces: tuple[BatchResult, ...]

    @property
    def log_append_time(self) -> int:
        return self.pieces[0].log_append_time

    def offset_for(self, relative: int) -> int:
        index = bisect.bisect_right(self.starts, relative) - 1
        return self.pieces[index].offset_for(relative - self.starts[index])


class RecordFuture:
    """The awaitable ``Producer.send`` hands back: one record's share of its batch's outcome."""

    __slots__ = ("batch", "relative_offset", "timestamp", "key_size", "value_size")

    def __init__(self, batch: ProducerBatch, relative_offset: int, timestamp: int, key_size, value_size):
        self.batch = batch
        self.relative_offset = relative_offset
        self.timestamp = timestamp
        self.key_size = key_size
        self.value_size = value_size

    def __await__(self):
        result = yield from self.batch.future.__await__()
        return self._metadata(result)

    def done(self) -> bool:
        return self.batch.future.done()

    def result(self) -> RecordMetadata:
        return self._metadata(self.batch.future.result())

    def exception(self) -> BaseException | None:
        return self.batch.future.exception()

    def _metadata(self, result: BatchResult | SplitResult) -> RecordMetadata:
        batch = self.batch
        offset = result.offset_for(self.relative_offset)
        timestamp = result.log_append_time if result.log_append_time >= 0 else self.timestamp
        pieces = result.pieces if isinstance(result, SplitResult) else (result,)
        return RecordMetadata(
            batch.topic,
            batch.partition,
            offset,
            timestamp,
            self.key_size,
            self.value_size,
            pieces[-1].broker,
            pieces[-1].leader_epoch,
        )


class ProducerBatch:
    """Records for one partition, encoded as they come, sent (and maybe retried) as one batch."""

    __slots__ = (
        "topic",
        "partition",
        "body",
        "count",
        "first_timestamp",
        "max_timestamp",
        "created",
        "last_attempt",
        "attempts",
        "producer_id",
        "producer_epoch",
        "base_sequence",
        "transactional",
        "future",
        "callbacks",
        "reserved",
        "_compressed",
        "in_retry",
        "drained_at",
        "limit",
        "sequence_reset",
        "parent",
        "pieces_left",
        "piece_results",
        "split_starts",
        "split_index",
    )

    def __init__(self, topic: str, partition: int, now: float, limit: int, reserved: int, future) -> None:
        self.topic = topic
        self.partition = partition
        self.body = bytearray()
        self.count = 0
        self.first_timestamp = _NO_TIMESTAMP
        self.max_timestamp = _NO_TIMESTAMP
        self.created = now
        self.last_attempt = now
        self.attempts = 0
        self.producer_id = -1
        self.producer_epoch = -1
        self.base_sequence = -1
        self.transactional = False
        self.future: asyncio.Future = future
        self.callbacks: list | None = None
        self.reserved = reserved
        self._compressed: bytes | None = None
        self.in_retry = False
        self.drained_at = 0.0
        self.limit = limit  # bytes the batch may grow to (batch.size, or one big record's size)
        self.sequence_reset = False
        self.parent: ProducerBatch | None = None  # the too-large batch this one was split from
        self.pieces_left = 0
        self.piece_results: list | None = None
        self.split_starts: tuple[int, ...] = ()
        self.split_index = 0

    @property
    def size(self) -> int:
        return _V2_HEADER_SIZE + len(self.body)

    @property
    def closed(self) -> bool:
        return self._compressed is not None

    @property
    def has_sequence(self) -> bool:
        return self.base_sequence >= 0

    def try_append(self, timestamp: int, key, value, headers) -> int:
        """Append one record; its offset within the batch, or -1 when it does not fit."""
        if self._compressed is not None:
            return -1
        if self.count == 0:
            self.first_timestamp = timestamp
        record = encode_record_v2(self.count, timestamp - self.first_timestamp, key, value, headers)
        if self.count and _V2_HEADER_SIZE + len(self.body) + len(record) > self.limit:
            return -1
        self.body += record
        if timestamp > self.max_timestamp:
            self.max_timestamp = timestamp
        self.count += 1
        return self.count - 1

    def is_full(self) -> bool:
        return self._compressed is not None or _V2_HEADER_SIZE + len(self.body) >= self.limit

    def close(self, compression: Compression, level: int | None) -> None:
        """No more records: compress the body once (retries reuse it)."""
        if self._compressed is None:
            body = bytes(self.body)
            self._compressed = compress(compression, body, magic=2, level=level) if compression else body
            self.body = bytearray()  # the compressed copy is what goes out from now on

    def encode(self, compression: Compression) -> bytes:
        return seal_v2_batch(
            self._compressed,
            count=self.count,
            last_offset_delta=self.count - 1,
            base_timestamp=self.first_timestamp,
            max_timestamp=self.max_timestamp,
            compression=compression,
            producer_id=self.producer_id,
            producer_epoch=self.producer_epoch,
            base_sequence=self.base_sequence,
            is_transactional=self.transactional,
        )

    def split(self, batch_size: int, compression: Compression, now: float) -> list[ProducerBatch]:
        """This batch's records as batches of at most ``batch_size`` bytes (Kafka's ProducerBatch.split),
        numbered on from this batch's sequence, so the partition's later sequences still follow."""
        records = decode_batch(self.encode(compression)).records
        pieces: list[ProducerBatch] = []
        starts: list[int] = []
        for index, record in enumerate(records):
            headers = record.headers or None
            if not pieces or pieces[-1].try_append(record.timestamp, record.key, record.value, headers) < 0:
                future = self.future.get_loop().create_future()
                piece = ProducerBatch(self.topic, self.partition, self.created, batch_size, 0, future)
                piece.try_append(record.timestamp, record.key, record.value, headers)
                piece.parent = self
                piece.split_index = len(pieces)
                piece.attempts = self.attempts
                piece.last_attempt = now
                pieces.append(piece)
                starts.append(index)
        sequence = self.base_sequence
        for piece in pieces:
            if sequence >= 0:
                piece.producer_id, piece.producer_epoch = self.producer_id, self.producer_epoch
                piece.base_sequence, piece.transactional = sequence, self.transactional
                sequence += piece.count
        self.pieces_left = len(pieces)
        self.piece_results = [None] * len(pieces)
        self.split_starts = tuple(starts)
        return pieces

    def piece_done(self, piece: ProducerBatch, result: BatchResult | None) -> SplitResult | None:
        """Note a piece's success; the whole outcome once every piece has one."""
        pieces = self.piece_results
        pieces[piece.split_index] = result
        self.pieces_left -= 1
        if self.pieces_left:
            return None
        return SplitResult(self.split_starts, tuple(pieces))

    def complete(self, result: BatchResult | None, error: BaseException | None) -> None:
        future = self.future
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
            future.exception()  # retrieved here: a send whose outcome nobody awaits is not an error
        else:
            future.set_result(result)
        if self.callbacks:
            for relative, callback, timestamp, ksize, vsize in self.callbacks:
                metadata = None
                if error is None:
                    metadata = RecordFuture(self, relative, timestamp, ksize, vsize)._metadata(result)
                callback(metadata, error)


class RecordAccumulator:
    def __init__(
        self,
        *,
        batch_size: int,
        linger_ms: float,
        compression: Compression,
        compression_level: int | None,
        delivery_timeout_ms: float,
        retry_backoff_ms: float,
        buffer_memory: int,
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        self.batch_size = max(batch_size, 1)
        self.linger = linger_ms / 1000
        self.compression = compression
        self.compression_level = compression_level
        self.delivery_timeout = delivery_timeout_ms / 1000
        self.retry_backoff = retry_backoff_ms / 1000
        self.buffer_memory = buffer_memory
        self.used_memory = 0
        self.batches: dict[tuple[str, int], deque[ProducerBatch]] = {}
        self.incomplete: set[ProducerBatch] = set()
        self.flushing = 0
        self.closing = False
        self.memory_waiters = 0
        self._loop = loop

    # ---- appending ------------------------------------------------------------------------------

    def reservation_for(self, record_size: int) -> int:
        return max(self.batch_size, record_size + _V2_HEADER_SIZE)

    def can_reserve(self, size: int) -> bool:
        return self.used_memory + size <= self.buffer_memory or not self.incomplete

    def append(
        self, topic: str, partition: int, timestamp: int, key, value, headers, now: float
    ) -> tuple[ProducerBatch, int, bool] | None:
        """Add a record to its partition's open batch, opening one if needed. Returns (batch, offset
        in batch, whether the batch is now worth sending), or None when a new batch is needed and the
        memory for it is not free (the producer then waits for memory and calls again)."""
        tp = (topic, partition)
        queue = self.batches.get(tp)
        if queue is None:
            queue = self.batches[tp] = deque()
        if queue:
            last = queue[-1]
            relative = last.try_append(timestamp, key, value, headers)
            if relative >= 0:
                return last, relative, len(queue) > 1 or last.is_full()
        size = len(key or b"") + len(value or b"") + 64
        reserve = self.reservation_for(size)
        if not self.can_reserve(reserve):
            return None
        batch = ProducerBatch(topic, partition, now, reserve, reserve, self._loop.create_future())
        self.used_memory += reserve
        relative = batch.try_append(timestamp, key, value, headers)
        queue.append(batch)
        self.incomplete.add(batch)
        return batch, relative, len(queue) > 1 or batch.is_full()

    # ---- deciding what to send ------------------------------------------------------------------

    def ready(self, leader_for: Callable[[str, int], int], now: float) -> tuple[set[int], float, set[str]]:
        """Nodes with at least one sendable batch, seconds until the next batch could become
        sendable, and topics whose partitions have no known leader (metadata to refresh)."""
        nodes: set[int] = set()
        unknown: set[str] = set()
        next_check = float("inf")
        exhausted = self.memory_waiters > 0
        for (topic, partition), queue in self.batches.items():
            if not queue:
                continue
            leader = leader_for(topic, partition)
            if leader < 0:
                unknown.add(topic)
                continue
            if leader in nodes:
                continue
            first = queue[0]
            backing_off = first.in_retry and now - first.last_attempt < self.retry_backoff
            wait = self.retry_backoff if first.in_retry else self.linger
            waited = now - first.last_attempt
            full = len(queue) > 1 or first.is_full()
            sendable = full or waited >= wait or exhausted or self.flushing or self.closing
            if sendable and not backing_off:
                nodes.add(leader)
            else:
                next_check = min(next_check, max(wait - waited, 0.0))
        return nodes, next_check, unknown

    def drain(
        self,
        leader_for: Callable[[str, int], int],
        node: int,
        max_request_size: int,
        now: float,
        may_send: Callable[[ProducerBatch], bool],
    ) -> list[ProducerBatch]:
        """Take at most one batch per partition led by ``node``, up to ``max_request_size`` bytes in
        all (one oversized batch still goes alone). ``may_send`` lets idempotence and transactions hold
        a partition back (sequence order after a retry, a partition not yet in the transaction)."""
        taken: list[ProducerBatch] = []
        size = 0
        for (topic, partition), queue in self.batches.items():
            if not queue or leader_for(topic, partition) != node:
                continue
            first = queue[0]
            if first.in_retry and now - first.last_attempt < self.retry_backoff:
                continue
            if not may_send(first):
                continue
            first.close(self.compression, self.compression_level)
            batch_size = first.size
            if taken and size + batch_size > max_request_size:
                break
            queue.popleft()
            first.drained_at = now
            taken.append(first)
            size += batch_size
        return taken

    def expired(self, now: float) -> list[ProducerBatch]:
        """Queued batches older than delivery.timeout.ms, taken out of their queues."""
        gone = []
        for queue in self.batches.values():
            while queue and now - queue[0].created >= self.delivery_timeout:
                gone.append(queue.popleft())
        return gone

    def reenqueue(self, batch: ProducerBatch, now: float) -> None:
        """Put a batch back for a retry, ahead of newer batches and in sequence order."""
        batch.attempts += 1
        batch.last_attempt = now
        batch.in_retry = True
        _insert_in_sequence_order(self.batches.setdefault((batch.topic, batch.partition), deque()), batch)

    def reenqueue_split(self, big: ProducerBatch, now: float) -> list[ProducerBatch]:
        """Split a batch the broker refused as too large and queue the pieces in its place."""
        # At most half the refused size, so that every split makes progress.
        pieces = big.split(min(self.batch_size, max(big.size // 2, 1)), self.compression, now)
        queue = self.batches.setdefault((big.topic, big.partition), deque())
        for piece in reversed(pieces):
            _insert_in_sequence_order(queue, piece)
        return pieces

    def release(self, batch: ProducerBatch) -> None:
        """The batch is done (acknowledged or failed for good): give back its memory."""
        if batch in self.incomplete:
            self.incomplete.discard(batch)
            self.used_memory -= batch.reserved

    def undrained(self) -> list[ProducerBatch]:
        """Take every queued batch out (aborting a transaction, or closing without waiting)."""
        out = []
        for queue in self.batches.values():
            out.extend(queue)
            queue.clear()
        return out

    def has_queued(self) -> bool:
        return any(self.batches.values())

    def queued_for(self, topic: str, partition: int) -> deque[ProducerBatch]:
        return self.batches.get((topic, partition), deque())


def _insert_in_sequence_order(queue: deque[ProducerBatch], batch: ProducerBatch) -> None:
    """A batch going back for a retry goes ahead of newer batches, and among sequenced ones in
    sequence order (RecordAccumulator.insertInSequenceOrder)."""
    if not batch.has_sequence:
        queue.appendleft(batch)
        return
    index = 0
    sequence = batch.base_sequence
    while index < len(queue) and queue[index].has_sequence and queue[index].base_sequence < sequence:
        index += 1
    queue.insert(index, batch)
