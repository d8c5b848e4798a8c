"""This broker's replicas (Kafka's ``ReplicaManager.applyDelta`` with its fetcher manager, ISR expiry
and ``AlterPartitionManager``).

Each metadata change names the partitions it touched: a partition this broker no longer holds a
replica of is closed and deleted; one it leads stops being fetched and leads (``makeLeader``); one
it follows is fetched from its leader, starting again whenever the leader epoch moves
(``makeFollower``). Every ``replica.lag.time.max.ms`` / 2 the leaders drop lagging followers from
their ISR. ISR changes go to the controller as AlterPartition, batched, one request in flight
(``AlterPartitionManager``); a partition's answer settles its pending change, or leaves it pending
until new metadata arrives, or sends it again, as Kafka's ``Partition.handleAlterPartitionError``. The
replica selector ``replica.selector.class`` names is made here at start, as Kafka's
``ReplicaManager.createReplicaSelector`` does; leaders ask it where consumers should read (KIP-392)."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Protocol

from kconform.codecs.errors import Errors
from kconform.codecs.messages import AlterPartitionRequest

from ..cluster_metadata import ClusterImage, ImageChange
from ..storage import StorageError
from .fetcher import FetchSettings, ReplicaFetcher
from .leadership import IsrProposal
from .read_replica import preferred_read_replica, replica_selector

if TYPE_CHECKING:
    from ..partition import Partition

__all__ = ["ReplicaManager", "ReplicaHost"]

log = logging.getLogger(__name__)
ALTER_PARTITION = 56
_RETRY_S = 0.05
_SETTLED_BY_METADATA = frozenset(
    {
        Errors.UNKNOWN_TOPIC_OR_PARTITION,
        Errors.UNKNOWN_TOPIC_ID,
        Errors.FENCED_LEADER_EPOCH,
        Errors.INVALID_UPDATE_VERSION,
        Errors.INVALID_REQUEST,
        Errors.NEW_LEADER_ELECTED,
    }
)
_REFUSED = frozenset({Errors.OPERATION_NOT_ATTEMPTED, Errors.INELIGIBLE_REPLICA})


class ReplicaHost(Protocol):
    """What the replica manager needs from the node."""

    node_id: int
    config: object
    clock: object
    partitions: dict

    @property
    def image(self) -> ClusterImage: ...

    @property
    def broker_epoch(self) -> int: ...

    def open_partition(self, topic, index: int) -> Partition: ...

    def drop_partition(self, name: str, index: int) -> None: ...

    def peer_address(self, broker_id: int) -> tuple[str, int] | None:
        """Where this broker dials another: ``kconform.interbroker.addresses``, else the registered
        endpoint (None while unknown)."""

    def leadership_changed(self, name: str, index: int, partition: Partition | None) -> None:
        """The partition's role or leader epoch moved (None: no replica here any more)."""

    async def send_to_controller(self, api_key: int, request, *, version=None, timeout_s: float): ...

    async def controller_version(self, api_key: int) -> int: ...


class ReplicaManager:
    def __init__(self, host: ReplicaHost, *, listener_name: str) -> None:
        self._host = host
        self._listener = listener_name
        self.lag_ms = int(host.config["replica.lag.time.max.ms"])
        self._settings = FetchSettings(host.config)
        self.replica_selector = replica_selector(host.config["replica.selector.class"])
        self._fetchers: dict[int, ReplicaFetcher] = {}
        self._following: dict[tuple[str, int], int] = {}  # partition -> leader fetched from
        self._queued: dict[tuple[str, int], tuple[Partition, IsrProposal]] = {}
        self._wake_sender = asyncio.Event()
        self._tasks: list[asyncio.Task] = []

    # ---- the node's replication controls (``partition.ReplicationControl``) --------------------

    def isr_eligible(self, broker_id: int, broker_epoch: int = -1) -> bool:
        broker = self._host.image.brokers.get(broker_id)
        if broker is None or broker.fenced or broker.in_controlled_shutdown:
            return False
        return broker_epoch == -1 or broker_epoch == broker.epoch

    def alive_broker_epoch(self, broker_id: int) -> int:
        broker = self._host.image.brokers.get(broker_id)
        return -1 if broker is None or broker.fenced else broker.epoch

    def propose_isr(self, partition: Partition, proposal: IsrProposal) -> None:
        log.info("%s-%s: asking for ISR %s", partition.topic_name, partition.index, list(proposal.isr))
        self._queued[(partition.topic_name, partition.index)] = (partition, proposal)
        self._wake_sender.set()

    def address_of(self, broker_id: int) -> tuple[str, int] | None:
        """Where the fetchers dial a leader: the node's ``peer_address``, asked again at every connect,
        so a fetcher follows the leader's address as it changes."""
        return self._host.peer_address(broker_id)

    def preferred_read_replica(
        self, partition: Partition, *, client_rack: str, fetch_offset: int
    ) -> int | None:
        """``findPreferredReadReplica`` for a consumer's Fetch v11+: the follower to send it to, or None
        when this broker serves it (it does not lead the partition, no selector is configured, or the
        selector keeps the leader)."""
        if self.replica_selector is None or not partition.is_leader:
            return None
        racks = {
            b.broker_id: b.rack for b in self._host.image.unfenced_brokers() if b.endpoint(self._listener)
        }
        return preferred_read_replica(
            self.replica_selector,
            client_rack=client_rack,
            leader_id=self._host.node_id,
            leader_end_offset=partition.log_end_offset,
            followers=partition.leadership.followers,
            isr=partition.leadership.isr,
            racks=racks,
            fetch_offset=fetch_offset,
            now_ms=self._host.clock.now_ms(),
        )

    # ---- following the metadata -----------------------------------------------------------------

    def apply(self, change: ImageChange) -> None:
        image = self._host.image
        for name, topic in change.topics_removed.items():
            for partition in topic.partitions:
                self._stop_following((name, partition.index))
                self._host.drop_partition(name, partition.index)
                self._host.leadership_changed(name, partition.index, None)
        for name, index in sorted(change.partitions):
            topic = image.get(name)
            if topic is None or index >= len(topic.partitions):
                continue
            self.apply_partition(topic, topic.partitions[index])

    def apply_all(self) -> None:
        """Act on every partition of the image (at start, once the metadata has caught up)."""
        for topic in self._host.image:
            for info in topic.partitions:
                self.apply_partition(topic, info)

    def apply_partition(self, topic, info) -> None:
        key = (topic.name, info.index)
        node_id = self._host.node_id
        if node_id not in info.replicas:
            if key in self._host.partitions:
                self._stop_following(key)
                self._host.drop_partition(*key)
                self._host.leadership_changed(topic.name, info.index, None)
            return
        try:
            partition = self._host.open_partition(topic, info.index)
        except (OSError, StorageError) as exc:  # e.g. a full disk: the replica stays offline, others go on
            log.warning("%s-%s: cannot open its log, offline here: %s", topic.name, info.index, exc)
            return
        new_epoch = partition.apply_registration(info)
        if new_epoch:
            self._host.leadership_changed(topic.name, info.index, partition)
        if partition.is_leader:
            self._stop_following(key)
        elif info.leader < 0:
            self._stop_following(key)  # no leader to fetch from until one is elected
        elif new_epoch or self._following.get(key) != info.leader:
            self._stop_following(key)
            self._follow(key, partition, info.leader)

    def _follow(self, key, partition: Partition, leader: int) -> None:
        fetcher = self._fetchers.get(leader)
        if fetcher is None:
            fetcher = self._fetchers[leader] = ReplicaFetcher(
                leader,
                node_id=self._host.node_id,
                broker_epoch=lambda: self._host.broker_epoch,
                address=lambda: self.address_of(leader),
                settings=self._settings,
                clock=self._host.clock,
                security=getattr(self._host, "peer_security", None),  # the inter-broker listener's
            )
        fetcher.add(partition)
        self._following[key] = leader

    def _stop_following(self, key) -> None:
        leader = self._following.pop(key, None)
        if leader is not None:
            fetcher = self._fetchers.get(leader)
            partition = self._host.partitions.get(key)
            if fetcher is not None and partition is not None:
                fetcher.remove(partition)

    # ---- background work ------------------------------------------------------------------------

    def start(self) -> None:
        self._tasks = [
            asyncio.create_task(self._expire_isr(), name="isr-expiration"),
            asyncio.create_task(self._send_isr_changes(), name="alter-partition-sender"),
        ]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await asyncio.gather(*(f.stop() for f in self._fetchers.values()), return_exceptions=True)
        self._fetchers.clear()
        self._following.clear()

    async def _expire_isr(self) -> None:
        while True:
            await asyncio.sleep(self.lag_ms / 2000)
            for partition in list(self._host.partitions.values()):
                if partition.is_leader:
                    try:
                        partition.maybe_shrink_isr()
                    except Exception:
                        log.exception("ISR expiry of %s-%s failed", partition.topic_name, partition.index)

    async def _send_isr_changes(self) -> None:
        while True:
            await self._wake_sender.wait()
            self._wake_sender.clear()
            batch, self._queued = self._queued, {}
            live = {k: v for k, v in batch.items() if v[0].leadership.pending is v[1]}
            if not live:
                continue
            try:
                version = await self._host.controller_version(ALTER_PARTITION)
                response = await self._host.send_to_controller(
                    ALTER_PARTITION,
                    self._request(live, version),
                    version=version,
                    timeout_s=self._settings.request_timeout_s,
                )
            except ConnectionError as exc:
                log.info("AlterPartition not delivered (%s); sending again", exc)
                response = None
            except Exception:  # the sender must outlive one bad request
                log.exception("AlterPartition failed; sending again")
                response = None
            if response is None or response.error_code != Errors.NONE:
                for key, item in live.items():  # top-level errors are retried with the current epoch
                    self._queued.setdefault(key, item)
                await asyncio.sleep(_RETRY_S)
                self._wake_sender.set()
                continue
            self._settle(live, response)

    def _request(self, items: dict, version: int) -> AlterPartitionRequest:
        """v3 names each ISR member with its broker epoch (KIP-903); before, by id only."""
        topics: dict[str, AlterPartitionRequest.TopicData] = {}
        for (name, index), (partition, proposal) in items.items():
            topic = topics.get(name)
            if topic is None:
                topic_id = partition.log.topic_id
                topic = topics[name] = AlterPartitionRequest.TopicData(
                    topic_name=name, topic_id=topic_id, partitions=[]
                )
            with_epochs = []
            for broker_id in proposal.isr:
                if broker_id == self._host.node_id:
                    epoch = self._host.broker_epoch
                else:
                    progress = partition.leadership.followers.get(broker_id)
                    epoch = -1 if progress is None else progress.broker_epoch
                with_epochs.append(AlterPartitionRequest.BrokerState(broker_id=broker_id, broker_epoch=epoch))
            topic.partitions.append(
                AlterPartitionRequest.PartitionData(
                    partition_index=index,
                    leader_epoch=proposal.leader_epoch,
                    new_isr=list(proposal.isr) if version < 3 else [],
                    new_isr_with_epochs=with_epochs if version >= 3 else [],
                    leader_recovery_state=0,
                    partition_epoch=proposal.partition_epoch,
                )
            )
        return AlterPartitionRequest(
            broker_id=self._host.node_id, broker_epoch=self._host.broker_epoch, topics=list(topics.values())
        )

    def _settle(self, items: dict, response) -> None:
        answered = set()
        for topic in response.topics:
            for data in topic.partitions:
                name = topic.topic_name or next(
                    (k[0] for k, (p, _) in items.items() if p.log.topic_id == topic.topic_id), None
                )
                key = (name, data.partition_index)
                item = items.get(key)
                if item is None:
                    continue
                answered.add(key)
                partition, proposal = item
                if partition.leadership.pending is not proposal:
                    continue  # metadata replaced the proposal meanwhile
                log.info("%s-%s: AlterPartition answered %d isr %s", *key, data.error_code, list(data.isr))
                if data.error_code == Errors.NONE:
                    partition.isr_committed(data.isr, data.leader_epoch, data.partition_epoch)
                elif data.error_code in _REFUSED:
                    partition.isr_refused()
                elif data.error_code not in _SETTLED_BY_METADATA:
                    self._queued.setdefault(key, item)
                    self._wake_sender.set()
        for key, item in items.items():
            if key not in answered:  # a partition missing from the answer is sent again
                self._queued.setdefault(key, item)
                self._wake_sender.set()
