"""The reference consumer, in the shape of Kafka's KafkaConsumer, on asyncio.

    async with Consumer({"bootstrap.servers": ..., "group.id": "g", "auto.offset.reset": "earliest"}) as c:
        c.subscribe(["orders"])                 # or subscribe(pattern="orders-.*"), or assign([("t", 0)])
        records = await c.poll(1000)            # [ConsumerRecord(topic, partition, offset, key, value, ...)]
        await c.commit()                        # synchronous; commit_async() does not wait

Group membership with the classic protocol (range, roundrobin, sticky, cooperative-sticky) or KIP-848
(``group.protocol=consumer``); positions from committed offsets, else auto.offset.reset; auto-commit
every auto.commit.interval.ms from poll and before partitions are given up; a rebalance listener with
``on_partitions_revoked`` / ``on_partitions_assigned`` / ``on_partitions_lost`` (plain or async)."""

from __future__ import annotations

import asyncio
import inspect
import re
import time
from collections.abc import Callable, Mapping
from typing import Any
from uuid import UUID

from kconform.codecs.messages import OffsetCommitRequest, OffsetFetchRequest

from .config import ClientConfigError, ConsumerConfig
from .errors import BrokerError, ClientError
from .fetcher import ConsumerRecord, Fetcher
from .group_classic import ClassicCoordinator
from .group_consumer import ConsumerGroupMember
from .network import NetworkClient
from .subscription import NoOffsetForPartition, SubscriptionState, TopicPartition

__all__ = ["Consumer", "ConsumerRebalanceListener", "ConsumerRecord", "NoOffsetForPartition"]

_OFFSET_COMMIT, _OFFSET_FETCH = 8, 9
_BY_NAME_MAX = 9  # OffsetCommit and OffsetFetch name topics up to v9, by id from v10
_ZERO_UUID = UUID(int=0)
_COMMIT_RETRY = {
    "COORDINATOR_NOT_AVAILABLE",
    "NOT_COORDINATOR",
    "COORDINATOR_LOAD_IN_PROGRESS",
    "REQUEST_TIMED_OUT",
}
_DESERIALIZERS: dict[str, Callable[[Any], Any]] = {
    "org.apache.kafka.common.serialization.StringDeserializer": lambda v: (
        None if v is None else bytes(v).decode()
    ),
    "org.apache.kafka.common.serialization.ByteArrayDeserializer": lambda v: v,
}


class ConsumerRebalanceListener:
    def on_partitions_revoked(self, partitions: set[TopicPartition]) -> Any:
        pass

    def on_partitions_assigned(self, partitions: set[TopicPartition]) -> Any:
        pass

    def on_partitions_lost(self, partitions: set[TopicPartition]) -> Any:
        return self.on_partitions_revoked(partitions)


class Consumer:
    def __init__(
        self,
        config: Mapping[str, Any] | ConsumerConfig,
        *,
        key_deserializer: Callable[[Any], Any] | None = None,
        value_deserializer: Callable[[Any], Any] | None = None,
        rebalance_listener: ConsumerRebalanceListener | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config if isinstance(config, ConsumerConfig) else ConsumerConfig(config)
        cfg = self.config
        if not cfg["bootstrap.servers"]:
            raise ClientConfigError("bootstrap.servers is required")
        self.group_id = cfg["group.id"]
        self.key_deserializer = key_deserializer or _deserializer(cfg["key.deserializer"], "key.deserializer")
        self.value_deserializer = value_deserializer or _deserializer(
            cfg["value.deserializer"], "value.deserializer"
        )
        self.listener = rebalance_listener or ConsumerRebalanceListener()
        self.clock = clock
        self.subscriptions = SubscriptionState(cfg["auto.offset.reset"])
        self.auto_commit = cfg["enable.auto.commit"] and self.group_id is not None
        self.auto_commit_interval = cfg["auto.commit.interval.ms"] / 1000
        self.max_poll_records = cfg["max.poll.records"]
        self.client: NetworkClient | None = None
        self.fetcher: Fetcher | None = None
        self.group: ClassicCoordinator | ConsumerGroupMember | None = None
        self._next_auto_commit = 0.0
        self._joining: asyncio.Future | None = None
        self._closed = False

    # ---- lifecycle -------------------------------------------------------------------------------

    async def start(self) -> Consumer:
        cfg = self.config
        self.client = NetworkClient.from_config(cfg)
        self.client.allow_auto_create = cfg["allow.auto.create.topics"]
        kd, vd = self.key_deserializer, self.value_deserializer
        deserialize = None
        if kd is not None or vd is not None:

            def deserialize(_topic, key, value):
                return (kd(key) if kd else key, vd(value) if vd else value)

        self.fetcher = Fetcher(
            self.client,
            self.subscriptions,
            read_committed=cfg["isolation.level"] == "read_committed",
            min_bytes=cfg["fetch.min.bytes"],
            max_bytes=cfg["fetch.max.bytes"],
            max_wait_ms=cfg["fetch.max.wait.ms"],
            partition_max_bytes=cfg["max.partition.fetch.bytes"],
            deserialize=deserialize,
        )
        await self.client.refresh_metadata()
        self._next_auto_commit = self.clock() + self.auto_commit_interval
        return self

    async def __aenter__(self) -> Consumer:
        return await self.start()

    async def __aexit__(self, *exc_info) -> None:
        await self.close()

    async def close(self) -> None:
        if self._closed or self.client is None:
            return
        self._closed = True
        if self._joining is not None:
            self._joining.cancel()
        try:
            if self.auto_commit and self.subscriptions.assignment:
                await self._commit_quietly()
            if self.group is not None:
                await self.group.leave()
        finally:
            await self.client.close()

    # ---- what to read ----------------------------------------------------------------------------

    def subscribe(self, topics: list[str] | None = None, *, pattern: str | re.Pattern | None = None) -> None:
        if self.group_id is None:
            raise ClientConfigError("subscribe() needs a group.id (or use assign())")
        self.subscriptions.subscribe(topics, pattern)
        if pattern is not None:
            self.client.track(None)
        else:
            self.client.track(topics)
        self._make_group()

    def assign(self, partitions: list[TopicPartition]) -> None:
        self.subscriptions.assign([tuple(tp) for tp in partitions])
        self.client.track({t for t, _ in partitions})

    def unsubscribe(self) -> None:
        self.subscriptions.unsubscribe()

    def assignment(self) -> set[TopicPartition]:
        return self.subscriptions.assigned()

    def _make_group(self) -> None:
        cfg = self.config
        if self.group is not None:
            if hasattr(self.group, "needs_join"):
                self.group.needs_join = True
            return
        common = dict(
            group_id=self.group_id,
            instance_id=cfg["group.instance.id"],
            topics_for_subscription=self._subscribed_topics,
            on_assignment=self._on_assignment,
        )
        if cfg["group.protocol"].lower() == "consumer":
            self.group = ConsumerGroupMember(
                self.client,
                server_assignor=cfg["group.remote.assignor"],
                rebalance_timeout_ms=cfg["max.poll.interval.ms"],
                **common,
            )
        else:
            self.group = ClassicCoordinator(
                self.client,
                assignors=cfg["partition.assignment.strategy"],
                session_timeout_ms=cfg["session.timeout.ms"],
                rebalance_timeout_ms=cfg["max.poll.interval.ms"],
                heartbeat_interval_ms=cfg["heartbeat.interval.ms"],
                **common,
            )

    def _subscribed_topics(self) -> set[str]:
        return self.subscriptions.matching(list(self.client.metadata.topics))

    async def _on_assignment(self, added: set, revoked: set, lost: bool) -> None:
        if revoked:
            if lost:
                await _call(self.listener.on_partitions_lost, set(revoked))
            else:
                if self.auto_commit:
                    await self._commit_quietly({tp for tp in revoked if tp in self.subscriptions.assignment})
                await _call(self.listener.on_partitions_revoked, set(revoked))
            keep = self.subscriptions.assigned() - revoked
            self.subscriptions.set_assignment(keep)
            self.fetcher.drop(revoked)
        if added:
            self.subscriptions.set_assignment(self.subscriptions.assigned() | added)
            await _call(self.listener.on_partitions_assigned, set(added))

    # ---- positions -------------------------------------------------------------------------------

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self.subscriptions.seek(tuple(tp), offset)
        self.fetcher.drop([tuple(tp)])

    def seek_to_beginning(self, tps=None) -> None:
        for tp in tps or self.subscriptions.assigned():
            self.subscriptions.request_reset(tuple(tp), "earliest")
            self.fetcher.drop([tuple(tp)])

    def seek_to_end(self, tps=None) -> None:
        for tp in tps or self.subscriptions.assigned():
            self.subscriptions.request_reset(tuple(tp), "latest")
            self.fetcher.drop([tuple(tp)])

    async def position(self, tp: TopicPartition) -> int:
        await self._update_positions()
        return self.subscriptions.position(tuple(tp))

    def pause(self, tps) -> None:
        self.subscriptions.pause([tuple(tp) for tp in tps])

    def resume(self, tps) -> None:
        self.subscriptions.resume([tuple(tp) for tp in tps])

    async def _update_positions(self) -> None:
        missing = self.subscriptions.needs_position()
        if missing and self.group_id is not None:
            committed = await self.committed(missing)
            for tp, offset in committed.items():
                if offset is not None and offset >= 0:
                    self.subscriptions.seek(tp, offset)
        for tp in self.subscriptions.needs_position():
            self.subscriptions.request_reset(tp)
        await self.fetcher.reset_offsets()

    # ---- polling ---------------------------------------------------------------------------------

    async def poll(self, timeout_ms: int = 1000) -> list[ConsumerRecord]:
        """Records from the assigned partitions, up to max.poll.records; waits at most ``timeout_ms``."""
        if self._closed:
            raise ClientError("poll() after close()")
        deadline = self.clock() + timeout_ms / 1000
        if self.group is not None and self.subscriptions.subscribed:
            # Joining may take a whole rebalance (every member must join): it goes on in the
            # background, and a poll that times out meanwhile returns nothing, as Kafka's does.
            if self._joining is None or self._joining.done():
                if self._joining is not None and not self._joining.cancelled() and self._joining.exception():
                    error, self._joining = self._joining.exception(), None
                    raise error
                self._joining = asyncio.ensure_future(self.group.ensure_active())
            try:
                await asyncio.wait_for(asyncio.shield(self._joining), max(deadline - self.clock(), 0.001))
            except TimeoutError:
                return []
        if self.auto_commit and self.clock() >= self._next_auto_commit:
            self._next_auto_commit = self.clock() + self.auto_commit_interval
            self.commit_async()
        while True:
            await self._update_positions()
            records = self.fetcher.collect(self.max_poll_records)
            self.fetcher.send_fetches()  # the next answers are on their way while these are processed
            if records:
                return records
            remaining = deadline - self.clock()
            if remaining <= 0:
                return []
            await self.fetcher.wait_for_data(min(remaining, 0.1))

    def __aiter__(self):
        return self

    async def __anext__(self) -> ConsumerRecord:
        while True:
            if getattr(self, "_pending", None):
                return self._pending.pop(0)
            self._pending = await self.poll(1000)

    # ---- committing ------------------------------------------------------------------------------

    def _positions(self, tps=None) -> dict[TopicPartition, tuple[int, int]]:
        out = {}
        for tp, state in self.subscriptions.assignment.items():
            if (tps is None or tp in tps) and state.position is not None:
                out[tp] = (state.position, state.leader_epoch)
        return out

    async def commit(self, offsets: Mapping[TopicPartition, int] | None = None) -> None:
        """Commit ``offsets`` (the next offsets to read), or every current position; waits for the answer."""
        if self.group_id is None:
            raise ClientConfigError("commit() needs a group.id")
        chosen = (
            {tuple(tp): (o, -1) for tp, o in offsets.items()} if offsets is not None else self._positions()
        )
        if chosen:
            await self._send_commit(chosen)

    def commit_async(self, offsets=None, callback=None) -> asyncio.Task:
        async def run():
            try:
                await self.commit(offsets)
            except ClientError as exc:
                if callback is not None:
                    callback(offsets, exc)
                return
            if callback is not None:
                callback(offsets, None)

        return asyncio.ensure_future(run())

    async def _commit_quietly(self, tps=None) -> None:
        try:
            positions = self._positions(tps)
            if positions:
                await self._send_commit(positions)
        except ClientError:
            pass

    def _topic_ids(self, topics) -> dict[str, UUID] | None:
        """The id of each topic, or None: Kafka's consumer names topics by id (OffsetCommit and
        OffsetFetch v10) only with the consumer group protocol and only when its metadata has the id of
        every topic in the request (``CommitRequestManager``: ``canUseTopicIds``; the classic
        ``ConsumerCoordinator`` always names them, up to v9)."""
        if str(self.config["group.protocol"]).lower() != "consumer":
            return None
        ids = {}
        for topic in topics:
            info = self.client.metadata.topics.get(topic)
            topic_id = getattr(info, "topic_id", None)
            if not isinstance(topic_id, UUID) or topic_id.int == 0:
                return None
            ids[topic] = topic_id
        return ids

    async def _send_commit(self, offsets: dict[TopicPartition, tuple[int, int]]) -> None:
        generation, member = self.group.commit_generation if self.group is not None else (-1, "")
        by_topic: dict[str, list] = {}
        for (topic, partition), (offset, epoch) in sorted(offsets.items()):
            by_topic.setdefault(topic, []).append(
                OffsetCommitRequest.OffsetCommitRequestPartition(
                    partition_index=partition,
                    committed_offset=offset,
                    committed_leader_epoch=epoch,
                    committed_metadata="",
                )
            )
        for attempt in range(10):
            node = await self.client.find_coordinator(self.group_id)
            conn = await self.client.connection(node)
            ids = self._topic_ids(by_topic)
            version = conn.version_for(_OFFSET_COMMIT, cap=None if ids else _BY_NAME_MAX)
            request = OffsetCommitRequest(
                group_id=self.group_id,
                generation_id_or_member_epoch=generation if version >= 1 else -1,
                member_id=member if version >= 1 else "",
                group_instance_id=self.config["group.instance.id"] if version >= 7 else None,
                topics=[
                    # the name goes on the wire up to v9, the id from v10
                    OffsetCommitRequest.OffsetCommitRequestTopic(
                        name=t, topic_id=(ids or {}).get(t, _ZERO_UUID), partitions=p
                    )
                    for t, p in by_topic.items()
                ],
            )
            response = await conn.send(_OFFSET_COMMIT, request, version=version)
            codes = {p.error_code for t in response.topics for p in t.partitions} - {0}
            if not codes:
                return
            error = BrokerError(min(codes), f"OffsetCommit for {self.group_id}")
            if error.name == "UNKNOWN_TOPIC_ID":  # our metadata is behind the broker's: look again
                await self.client.refresh_metadata()
                await asyncio.sleep(self.client.backoff.backoff_ms(attempt) / 1000)
                continue
            if error.name not in _COMMIT_RETRY:
                if error.name in (
                    "ILLEGAL_GENERATION",
                    "UNKNOWN_MEMBER_ID",
                    "REBALANCE_IN_PROGRESS",
                    "STALE_MEMBER_EPOCH",
                    "FENCED_MEMBER_EPOCH",
                ) and hasattr(self.group, "needs_join"):
                    self.group.needs_join = True
                raise error
            self.client.forget_coordinator(self.group_id)
            await asyncio.sleep(self.client.backoff.backoff_ms(attempt) / 1000)
        raise error

    def _offset_fetch(self, version: int, by_topic: dict[str, list[int]], ids) -> OffsetFetchRequest:
        """v8+ (one group, with the member's id and epoch from v9 as Kafka's consumer sends them, topic
        ids from v10) for the consumer protocol; the single-group form for the classic one."""
        if version < 8:
            return OffsetFetchRequest(
                group_id=self.group_id,
                require_stable=version >= 7,
                topics=[
                    OffsetFetchRequest.OffsetFetchRequestTopic(name=t, partition_indexes=p)
                    for t, p in by_topic.items()
                ],
            )
        member_id, member_epoch = None, -1
        if isinstance(self.group, ConsumerGroupMember) and self.group.epoch > 0:
            member_epoch, member_id = self.group.commit_generation
        group = OffsetFetchRequest.OffsetFetchRequestGroup(
            group_id=self.group_id,
            member_id=member_id,
            member_epoch=member_epoch,
            topics=[
                OffsetFetchRequest.OffsetFetchRequestTopics(
                    name=t, topic_id=(ids or {}).get(t, _ZERO_UUID), partition_indexes=p
                )
                for t, p in by_topic.items()
            ],
        )
        return OffsetFetchRequest(groups=[group], require_stable=True)

    async def committed(self, tps) -> dict[TopicPartition, int | None]:
        tps = [tuple(tp) for tp in tps]
        by_topic: dict[str, list[int]] = {}
        for topic, partition in tps:
            by_topic.setdefault(topic, []).append(partition)
        consumer_protocol = str(self.config["group.protocol"]).lower() == "consumer"
        for attempt in range(10):
            node = await self.client.find_coordinator(self.group_id)
            conn = await self.client.connection(node)
            ids = self._topic_ids(by_topic)
            cap = None if ids else (_BY_NAME_MAX if consumer_protocol else 7)
            version = conn.version_for(_OFFSET_FETCH, cap=cap)
            response = await conn.send(
                _OFFSET_FETCH, self._offset_fetch(version, by_topic, ids), version=version
            )
            if version >= 8:
                group = response.groups[0]
                names = {topic_id: name for name, topic_id in (ids or {}).items()}
                topics = [
                    (names.get(t.topic_id, t.name) if version >= 10 else t.name, t) for t in group.topics
                ]
                codes = {group.error_code}
            else:
                topics = [(t.name, t) for t in response.topics]
                codes = {response.error_code} if version >= 2 else set()
            codes |= {p.error_code for _, t in topics for p in t.partitions}
            codes.discard(0)
            if not codes:
                return {
                    (name, p.partition_index): (p.committed_offset if p.committed_offset >= 0 else None)
                    for name, t in topics
                    for p in t.partitions
                }
            error = BrokerError(min(codes), f"OffsetFetch for {self.group_id}")
            if error.name == "UNKNOWN_TOPIC_ID":
                await self.client.refresh_metadata()
                await asyncio.sleep(self.client.backoff.backoff_ms(attempt) / 1000)
                continue
            # STALE_MEMBER_EPOCH (v9+): the next attempt carries the epoch the heartbeat brings
            if error.name not in _COMMIT_RETRY | {"UNSTABLE_OFFSET_COMMIT", "STALE_MEMBER_EPOCH"}:
                raise error
            self.client.forget_coordinator(self.group_id)
            await asyncio.sleep(self.client.backoff.backoff_ms(attempt) / 1000)
        raise error


def _deserializer(name: str | None, setting: str):
    if name is None:
        return None
    try:
        return _DESERIALIZERS[name]
    except KeyError:
        raise ClientConfigError(
            f"{setting}={name!r}: pass a callable, or one of {', '.join(_DESERIALIZERS)}"
        ) from None


async def _call(callback, partitions) -> None:
    result = callback(partitions)
    if inspect.isawaitable(result):
        await result
