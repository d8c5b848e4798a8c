"""The consumer's fetcher (Kafka's Fetcher, FetchCollector and OffsetFetcher): one Fetch in flight per
leader, sent again as soon as its answer is in, so the next records are on the way while the caller
processes these; answers are kept whole and turned into records only as ``poll`` asks for them.

Full fetch requests (no incremental session), topic names up to Fetch v12 and topic ids from v13; a
v18 request leaves each partition's HighWatermark (KIP-1166, a follower's) at its default, as Kafka's
consumer does.
read_committed skips the batches of aborted transactions as Kafka's FetchCollector does: from the first
offset the broker lists for an aborted transaction of a producer until that producer's abort marker."""

from __future__ import annotations

import asyncio
import heapq
from collections import deque
from typing import Any

from kconform.codecs import DecodeError
from kconform.codecs.constants import ZERO_UUID
from kconform.codecs.errors import error_for
from kconform.codecs.messages import FetchRequest, ListOffsetsRequest
from kconform.codecs.records import decode_batch_header, iter_batches

from .errors import BrokerError, ClientError
from .network import NetworkClient
from .subscription import NoOffsetForPartition, SubscriptionState, TopicPartition

__all__ = ["ConsumerRecord", "Fetcher"]

_FETCH = 1
_LIST_OFFSETS = 2
_EARLIEST, _LATEST = -2, -1
_OFFSET_OUT_OF_RANGE = 1


class ConsumerRecord:
    """A record as ``poll`` returns it: ``topic``, ``partition``, ``offset``, ``timestamp``,
    ``timestamp_type`` (0 create time, 1 log append time), ``key``, ``value``, ``headers``,
    ``leader_epoch``.

    The decoder builds these directly: each partition (and batch flavour) has its own subclass that
    carries the topic, partition, timestamp type and leader epoch as class attributes, and the record
    fields in slots, so a million records cost a million objects, not two million."""

    __slots__ = ()
    topic: str
    partition: int
    timestamp_type: int
    leader_epoch: int

    def __repr__(self) -> str:
        return (
            f"ConsumerRecord({self.topic!r}, {self.partition}, offset={self.offset}, key={self.key!r}, "
            f"value={self.value!r})"
        )

    def __eq__(self, other) -> bool:
        return isinstance(other, ConsumerRecord) and _fields(self) == _fields(other)

    __hash__ = None  # records compare by value


_RECORD_SLOTS = ("offset", "timestamp", "key", "value", "headers")
_classes: dict[tuple, type] = {}


def record_class(topic: str, partition: int, timestamp_type: int, leader_epoch: int) -> type:
    key = (topic, partition, timestamp_type, leader_epoch)
    cls = _classes.get(key)
    if cls is None:
        cls = _classes[key] = type(
            "ConsumerRecord",
            (ConsumerRecord,),
            {
                "__slots__": _RECORD_SLOTS,
                "topic": topic,
                "partition": partition,
                "timestamp_type": timestamp_type,
                "leader_epoch": leader_epoch,
            },
        )
    return cls


def _fields(r: ConsumerRecord) -> tuple:
    return (
        r.topic,
        r.partition,
        r.offset,
        r.timestamp,
        r.timestamp_type,
        r.key,
        r.value,
        r.headers,
        r.leader_epoch,
    )


class _CompletedFetch:
    """One partition's part of a Fetch answer, consumed batch by batch across polls."""

    __slots__ = ("tp", "batches", "records", "index", "aborted", "aborting", "read_committed", "done", "cls")

    def __init__(self, tp: TopicPartition, data: bytes, aborted, read_committed: bool) -> None:
        self.tp = tp
        # Records decode straight into the class of the first batch's flavour; a later batch of
        # another flavour (a new leader epoch) has its records re-classed.
        try:
            first = decode_batch_header(data, 0, verify_crc=False)
            flavour = (int(first.timestamp_type), first.partition_leader_epoch)
        except DecodeError:
            flavour = (0, -1)  # iter_batches below reports the problem
        self.cls = record_class(tp[0], tp[1], *flavour)
        self.batches = iter_batches(data, record_class=self.cls)
        self.records: list = []
        self.index = 0
        self.aborted = sorted((a.first_offset, a.producer_id) for a in aborted or ())
        self.aborting: set[int] = set()
        self.read_committed = read_committed
        self.done = False

    def take(self, position: int, limit: int, deserialize) -> tuple[list[ConsumerRecord], int, int]:
        """Up to ``limit`` records from ``position`` on: (records, next position, leader epoch)."""
        out: list[ConsumerRecord] = []
        epoch = -1
        while len(out) < limit:
            if self.index >= len(self.records):
                batch = next(self.batches, None)
                if batch is None:
                    self.done = True
                    break
                if batch.is_control or (
                    self.read_committed and batch.is_transactional and self._aborted(batch)
                ):
                    if batch.is_control and self.read_committed:
                        self.aborting.discard(batch.producer_id)
                    position = max(position, batch.next_offset)
                    continue
                if batch.next_offset <= position:
                    continue
                records = batch.records
                ts_type, epoch = int(batch.timestamp_type), batch.partition_leader_epoch
                if (ts_type, epoch) != (self.cls.timestamp_type, self.cls.leader_epoch):
                    cls = record_class(self.tp[0], self.tp[1], ts_type, epoch)
                    for record in records:
                        record.__class__ = cls
                start = 0
                while start < len(records) and records[start].offset < position:
                    start += 1
                self.records, self.index = records, start
            stop = min(len(self.records), self.index + limit - len(out))
            chunk = self.records[self.index : stop]
            if deserialize is not None:
                topic = self.tp[0]
                for record in chunk:
                    record.key, record.value = deserialize(topic, record.key, record.value)
            out += chunk
            self.index = stop
            if chunk:
                position = chunk[-1].offset + 1
                epoch = chunk[-1].leader_epoch
        return out, position, epoch

    def _aborted(self, batch) -> bool:
        aborted = self.aborted
        while aborted and aborted[0][0] <= batch.last_offset:
            self.aborting.add(heapq.heappop(aborted)[1])
        return batch.producer_id in self.aborting

    @property
    def exhausted(self) -> bool:
        return self.done and self.index >= len(self.records)


class Fetcher:
    def __init__(
        self,
        client: NetworkClient,
        subscriptions: SubscriptionState,
        *,
        read_committed: bool,
        min_bytes: int,
        max_bytes: int,
        max_wait_ms: int,
        partition_max_bytes: int,
        deserialize=None,
    ) -> None:
        self.client = client
        self.subscriptions = subscriptions
        self.read_committed = read_committed
        self.min_bytes = min_bytes
        self.max_bytes = max_bytes
        self.max_wait_ms = max_wait_ms
        self.partition_max_bytes = partition_max_bytes
        self.deserialize = deserialize
        self._in_flight: dict[int, set[TopicPartition]] = {}
        self._completed: deque[_CompletedFetch] = deque()
        self._arrived = asyncio.Event()
        self._errors: list[Exception] = []

    # ---- sending --------------------------------------------------------------------------------

    def send_fetches(self) -> None:
        """A Fetch to every leader that has fetchable partitions and none in flight or buffered."""
        subs = self.subscriptions
        buffered = {c.tp for c in self._completed}
        busy = set().union(*self._in_flight.values()) if self._in_flight else set()
        by_node: dict[int, list[TopicPartition]] = {}
        metadata = self.client.metadata
        for tp in subs.fetchable():
            if tp in buffered or tp in busy:
                continue
            leader = metadata.leader_for(*tp)
            if leader < 0:
                self._refresh_metadata()
                continue
            if leader in self._in_flight:
                continue
            by_node.setdefault(leader, []).append(tp)
        for node, tps in by_node.items():
            conn = self.client._connections.get(node)
            if conn is None or conn.closed:
                self._connect(node)
                continue
            self._send(conn, node, tps)

    def _send(self, conn, node: int, tps: list[TopicPartition]) -> None:
        version = conn.version_for(_FETCH, floor=4)
        metadata = self.client.metadata
        by_topic: dict[str, list] = {}
        for topic, partition in tps:
            state = self.subscriptions.assignment[(topic, partition)]
            by_topic.setdefault(topic, []).append(
                FetchRequest.FetchPartition(
                    partition=partition,
                    fetch_offset=state.position,
                    current_leader_epoch=-1,
                    log_start_offset=-1,
                    partition_max_bytes=self.partition_max_bytes,
                )
            )
        topics = []
        for topic, parts in by_topic.items():
            # AbstractFetch.createFetchRequest: v12 at most unless every topic has an id (a zero id is
            # none, as from a broker below Metadata v10).
            topic_id = metadata.known_topic_id(topic)
            if version >= 13 and topic_id is None:
                version = 12  # no topic id known: ask by name
            topics.append(
                FetchRequest.FetchTopic(topic=topic, topic_id=topic_id or ZERO_UUID, partitions=parts)
            )
        request = FetchRequest(
            replica_id=-1,
            max_wait_ms=self.max_wait_ms,
            min_bytes=self.min_bytes,
            max_bytes=self.max_bytes,
            isolation_level=1 if self.read_committed else 0,
            session_id=0,
            session_epoch=-1,
            topics=topics,
        )
        try:
            future = conn.send_nowait(_FETCH, request, version=version, timeout=self.max_wait_ms / 1000 + 30)
        except ClientError:
            self.client.disconnect(node)
            return
        self._in_flight[node] = set(tps)
        future.add_done_callback(lambda f: self._on_answer(node, version, f))

    def _on_answer(self, node: int, version: int, future: asyncio.Future) -> None:
        asked = self._in_flight.pop(node, set())
        self._arrived.set()
        exc = future.exception()
        if exc is not None:
            self.client.disconnect(node)
            self._refresh_metadata()
            return
        response = future.result()
        if response.error_code:
            self._errors.append(BrokerError(response.error_code, "fetch"))
            return
        names = None
        for topic in response.responses:
            name = topic.topic
            if version >= 13:
                names = names or {
                    v: k
                    for k, v in ((t, self.client.metadata.topic_id(t)) for t in self.client.metadata.topics)
                    if v
                }
                name = names.get(topic.topic_id)
            for part in topic.partitions:
                tp = (name, part.partition_index)
                state = self.subscriptions.assignment.get(tp)
                if state is None or tp not in asked:
                    continue  # no longer assigned: drop what came
                code = part.error_code
                if code == _OFFSET_OUT_OF_RANGE:
                    self.subscriptions.request_reset(tp)
                    continue
                if code:
                    if error_for(code).invalid_metadata or error_for(code).retriable:
                        self._refresh_metadata()
                    else:
                        self._errors.append(BrokerError(code, f"fetch {tp}"))
                    continue
                state.high_watermark = part.high_watermark
                state.last_stable_offset = part.last_stable_offset
                if part.records:
                    self._completed.append(
                        _CompletedFetch(tp, part.records, part.aborted_transactions, self.read_committed)
                    )

    # ---- collecting ------------------------------------------------------------------------------

    def collect(self, max_records: int) -> list[ConsumerRecord]:
        out: list[ConsumerRecord] = []
        subs = self.subscriptions.assignment
        while self._completed and len(out) < max_records:
            completed = self._completed[0]
            state = subs.get(completed.tp)
            if state is None or state.position is None or state.paused:
                if state is None or state.position is None:
                    self._completed.popleft()
                    continue
                self._completed.rotate(-1)
                if all(subs.get(c.tp) is not None and subs[c.tp].paused for c in self._completed):
                    break
                continue
            records, position, epoch = completed.take(
                state.position, max_records - len(out), self.deserialize
            )
            out += records
            state.position = position
            if epoch >= 0:
                state.leader_epoch = epoch
            if completed.exhausted:
                self._completed.popleft()
        if self._errors:
            error, self._errors = self._errors[0], []
            if not out:
                raise error
        return out

    async def wait_for_data(self, timeout: float) -> None:
        if self._completed:
            return
        self._arrived.clear()
        try:
            await asyncio.wait_for(self._arrived.wait(), timeout)
        except TimeoutError:
            pass

    def drop(self, tps) -> None:
        """Forget buffered data of partitions no longer assigned (or sought elsewhere)."""
        tps = set(tps)
        self._completed = deque(c for c in self._completed if c.tp not in tps)

    # ---- positions -------------------------------------------------------------------------------

    async def reset_offsets(self) -> None:
        """Resolve pending resets (earliest / latest / none) with ListOffsets to each leader."""
        subs = self.subscriptions
        pending = subs.needs_reset()
        if not pending:
            return
        refuse = [tp for tp in pending if subs.assignment[tp].reset == "none"]
        if refuse:
            raise NoOffsetForPartition(refuse)
        by_node: dict[int, list[TopicPartition]] = {}
        for tp in pending:
            leader = self.client.metadata.leader_for(*tp)
            if leader < 0:
                await self.client.refresh_metadata()
                leader = self.client.metadata.leader_for(*tp)
                if leader < 0:
                    continue
            by_node.setdefault(leader, []).append(tp)
        for node, tps in by_node.items():
            offsets = await self.list_offsets(node, {tp: _strategy(subs.assignment[tp].reset) for tp in tps})
            for tp, offset in offsets.items():
                state = subs.assignment.get(tp)
                if state is not None and state.reset is not None and offset >= 0:
                    state.position, state.reset = offset, None

    async def list_offsets(
        self, node: int, timestamps: dict[TopicPartition, int]
    ) -> dict[TopicPartition, int]:
        conn = await self.client.connection(node)
        by_topic: dict[str, list] = {}
        for (topic, partition), ts in timestamps.items():
            by_topic.setdefault(topic, []).append(
                ListOffsetsRequest.ListOffsetsPartition(
                    partition_index=partition, timestamp=ts, current_leader_epoch=-1, max_num_offsets=1
                )
            )
        request = ListOffsetsRequest(
            replica_id=-1,
            isolation_level=1 if self.read_committed else 0,
            topics=[ListOffsetsRequest.ListOffsetsTopic(name=t, partitions=p) for t, p in by_topic.items()],
        )
        response = await conn.send(_LIST_OFFSETS, request, version=conn.version_for(_LIST_OFFSETS, floor=1))
        out: dict[TopicPartition, int] = {}
        for topic in response.topics:
            for part in topic.partitions:
                if part.error_code:
                    if error_for(part.error_code).retriable:
                        self._refresh_metadata()
                        continue
                    raise BrokerError(part.error_code, f"list offsets {topic.name}-{part.partition_index}")
                out[(topic.name, part.partition_index)] = part.offset
        return out

    # ---- plumbing --------------------------------------------------------------------------------

    def _refresh_metadata(self) -> None:
        asyncio.ensure_future(_quietly(self.client.refresh_metadata()))

    def _connect(self, node: int) -> None:
        asyncio.ensure_future(_quietly(self.client.connection(node)))


def _strategy(reset: Any) -> int:
    if reset == "earliest":
        return _EARLIEST
    if reset == "latest":
        return _LATEST
    return int(reset)


async def _quietly(awaitable) -> None:
    try:
        await awaitable
    except ClientError:
        pass
