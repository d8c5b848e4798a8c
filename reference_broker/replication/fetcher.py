"""A follower's fetcher for the partitions one leader leads (Kafka's ``ReplicaFetcherThread`` over
``AbstractFetcherThread``): Fetch requests as a replica (``ReplicaState`` with this broker's id and
epoch), ``replica.fetch.wait.max.ms`` / ``replica.fetch.min.bytes`` / ``replica.fetch.max.bytes`` /
``replica.fetch.response.max.bytes``, each partition from its log end with its current leader epoch
and last fetched epoch. Per partition answer: records are appended; a diverging epoch truncates the
log there; OFFSET_OUT_OF_RANGE truncates to the leader's end (when the leader has less) or starts over
at the leader's log start (when it has deleted what this one needs); a leadership error parks the
partition for ``replica.fetch.backoff.ms`` until the metadata moves it. A lost connection backs off
``replica.fetch.backoff.ms`` and tries again."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from kconform.codecs.errors import Errors
from kconform.codecs.messages import FetchRequest, ListOffsetsRequest

from ..interbroker import NodeChannel, PeerUnavailable, UnsupportedByPeer, as_replica
from .follower_log import append_fetched, position, truncate_to_divergence

if TYPE_CHECKING:
    from ..partition import Partition

__all__ = ["ReplicaFetcher", "FetchSettings"]

log = logging.getLogger(__name__)
FETCH, LIST_OFFSETS = 1, 2
_LATEST, _EARLIEST = -1, -2
_PARK_ERRORS = frozenset(
    {
        Errors.NOT_LEADER_OR_FOLLOWER,
        Errors.FENCED_LEADER_EPOCH,
        Errors.UNKNOWN_LEADER_EPOCH,
        Errors.UNKNOWN_TOPIC_OR_PARTITION,
        Errors.UNKNOWN_TOPIC_ID,
        Errors.OFFSET_NOT_AVAILABLE,
    }
)


class FetchSettings:
    def __init__(self, config) -> None:
        self.wait_ms = int(config["replica.fetch.wait.max.ms"])
        self.min_bytes = int(config["replica.fetch.min.bytes"])
        self.partition_max_bytes = int(config["replica.fetch.max.bytes"])
        self.response_max_bytes = int(config["replica.fetch.response.max.bytes"])
        self.backoff_s = int(config["replica.fetch.backoff.ms"]) / 1000
        self.request_timeout_s = int(config["request.timeout.ms"]) / 1000


class ReplicaFetcher:
    def __init__(
        self,
        leader_id: int,
        *,
        node_id: int,
        broker_epoch: Callable[[], int],
        address: Callable[[], tuple[str, int] | None],
        settings: FetchSettings,
        clock,
        security=None,
    ) -> None:
        self.leader_id = leader_id
        self._node_id = node_id
        self._broker_epoch = broker_epoch
        self._settings = settings
        self._clock = clock
        self._channel = NodeChannel(
            address, client_id=f"replica-fetcher-{node_id}-{leader_id}", security=security
        )
        self.partitions: dict[tuple[str, int], Partition] = {}
        self._parked_until: dict[tuple[str, int], float] = {}
        self._changed = asyncio.Event()
        self._task: asyncio.Task | None = None

    def add(self, partition: Partition) -> None:
        """Start fetching a partition (again): from its log end when its log knows leader epochs,
        else from its high watermark (``ReplicaManager.initialFetchOffset``), truncating to it."""
        key = (partition.topic_name, partition.index)
        if partition.log.latest_epoch is None and partition.log.high_watermark < partition.log.log_end_offset:
            partition.log.truncate_to(partition.log.high_watermark)
        self.partitions[key] = partition
        self._parked_until.pop(key, None)
        self._changed.set()
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=f"replica-fetcher-{self.leader_id}")

    def remove(self, partition: Partition) -> None:
        key = (partition.topic_name, partition.index)
        if self.partitions.get(key) is partition:
            del self.partitions[key]
            self._parked_until.pop(key, None)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        self._channel.close()

    # ---- the loop -----------------------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            now = self._clock.monotonic()
            active = {k: p for k, p in self.partitions.items() if self._parked_until.get(k, 0) <= now}
            if not active:
                self._changed.clear()
                wait = min((t - now for t in self._parked_until.values() if t > now), default=None)
                try:
                    await asyncio.wait_for(self._changed.wait(), wait)
                except TimeoutError:
                    pass
                continue
            try:
                await self._fetch_once(active)
            except (PeerUnavailable, UnsupportedByPeer) as exc:
                log.info("fetch from leader %d failed (%s); retrying", self.leader_id, exc)
                await asyncio.sleep(self._settings.backoff_s)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("fetch from leader %d failed", self.leader_id)
                await asyncio.sleep(self._settings.backoff_s)

    def _request(self, partitions: dict, sent: dict) -> FetchRequest:
        topics: dict = {}
        for (name, index), partition in partitions.items():
            at = sent[(name, index)]
            topic = topics.get(name)
            if topic is None:
                topic_id = partition.log.topic_id
                topic = topics[name] = FetchRequest.FetchTopic(topic=name, topic_id=topic_id, partitions=[])
            topic.partitions.append(
                FetchRequest.FetchPartition(
                    partition=index,
                    current_leader_epoch=at.current_leader_epoch,
                    fetch_offset=at.fetch_offset,
                    last_fetched_epoch=at.last_fetched_epoch,
                    log_start_offset=at.log_start_offset,
                    partition_max_bytes=self._settings.partition_max_bytes,
                )
            )
        return FetchRequest(
            max_wait_ms=self._settings.wait_ms,
            min_bytes=self._settings.min_bytes,
            max_bytes=self._settings.response_max_bytes,
            isolation_level=0,
            session_id=0,
            session_epoch=-1,
            topics=list(topics.values()),
            forgotten_topics_data=[],
            rack_id="",
        )

    async def _fetch_once(self, partitions: dict) -> None:
        version = await self._version()
        sent = {key: position(p) for key, p in partitions.items()}
        request = as_replica(self._request(partitions, sent), version, self._node_id, self._broker_epoch())
        timeout_s = self._settings.request_timeout_s + self._settings.wait_ms / 1000
        response = await self._channel.send(FETCH, request, version=version, timeout_s=timeout_s)
        if response.error_code != Errors.NONE:
            raise PeerUnavailable(f"leader {self.leader_id} refused the fetch: error {response.error_code}")
        by_id = {p.log.topic_id: name for (name, _), p in partitions.items()}
        for topic in response.responses:
            name = topic.topic if version < 13 else by_id.get(topic.topic_id)
            for data in topic.partitions:
                key = (name, data.partition_index)
                partition = partitions.get(key)
                if partition is None or self.partitions.get(key) is not partition:
                    continue  # removed while the fetch was out
                now_at, was_at = position(partition), sent[key]
                if (now_at.fetch_offset, now_at.current_leader_epoch) != (
                    was_at.fetch_offset,
                    was_at.current_leader_epoch,
                ):
                    continue  # processFetchRequest: the log or the leader epoch moved meanwhile
                await self._handle(key, partition, data, sent[key])

    async def _version(self) -> int:
        try:
            return self._channel.version_for(FETCH)
        except PeerUnavailable:  # not connected yet: the first request connects
            await self._channel.send(18, _api_versions_request(), timeout_s=self._settings.request_timeout_s)
            return self._channel.version_for(FETCH)

    async def _handle(self, key, partition: Partition, data, sent) -> None:
        code = data.error_code
        if code == Errors.NONE:
            diverging = data.diverging_epoch
            if diverging is not None and (diverging.epoch >= 0 or diverging.end_offset >= 0):
                offset = truncate_to_divergence(partition, diverging.epoch, diverging.end_offset)
                log.info(
                    "%s-%s truncated to %d: the leader's epoch %d ends at %d",
                    *key,
                    offset,
                    diverging.epoch,
                    diverging.end_offset,
                )
                return
            append_fetched(
                partition,
                data.records,
                leader_epoch=sent.current_leader_epoch,
                high_watermark=data.high_watermark,
                log_start_offset=data.log_start_offset,
            )
        elif code == Errors.OFFSET_OUT_OF_RANGE:
            await self._out_of_range(partition)
        elif code == Errors.FENCED_LEADER_EPOCH and sent.current_leader_epoch == partition.leader_epoch:
            # onPartitionFenced: this broker's metadata is behind; new metadata adds it back
            log.info("%s-%s fenced by leader %d: waiting for metadata", *key, self.leader_id)
            self.remove(partition)
        else:
            if code not in _PARK_ERRORS:
                log.warning("fetch of %s-%s from leader %d: error %d", *key, self.leader_id, code)
            self._parked_until[key] = self._clock.monotonic() + self._settings.backoff_s

    async def _out_of_range(self, partition: Partition) -> None:
        """``AbstractFetcherThread.fetchOffsetAndTruncate``."""
        leader_end = await self._leader_offset(partition, _LATEST)
        log_ = partition.log
        if leader_end < log_.log_end_offset:
            log_.truncate_to(leader_end)
        else:
            leader_start = await self._leader_offset(partition, _EARLIEST)
            if leader_start > log_.log_end_offset:
                log_.truncate_fully_and_start_at(leader_start)
        partition.replica_progressed()

    async def _leader_offset(self, partition: Partition, timestamp: int) -> int:
        request = ListOffsetsRequest(
            replica_id=self._node_id,
            isolation_level=0,
            topics=[
                ListOffsetsRequest.ListOffsetsTopic(
                    name=partition.topic_name,
                    partitions=[
                        ListOffsetsRequest.ListOffsetsPartition(
                            partition_index=partition.index,
                            current_leader_epoch=partition.leader_epoch,
                            timestamp=timestamp,
                        )
                    ],
                )
            ],
        )
        version = self._channel.version_for(LIST_OFFSETS)
        response = await self._channel.send(
            LIST_OFFSETS, request, version=version, timeout_s=self._settings.request_timeout_s
        )
        found = response.topics[0].partitions[0]
        if found.error_code != Errors.NONE:
            raise PeerUnavailable(f"leader {self.leader_id} ListOffsets: error {found.error_code}")
        return found.offset


def _api_versions_request():
    from kconform.codecs.messages import ApiVersionsRequest

    return ApiVersionsRequest(client_software_name="kconform-replica-fetcher", client_software_version="1")
