"""One reference broker node: configuration, the cluster metadata it follows, partition replicas, the
network server and the background work (retention, flushing, replication), wired together. Handlers
reach everything through this object.

The node follows the cluster's metadata image (``cluster_metadata``): in combined mode
(``process.roles=broker,controller``, the single node) the controller runs in this process and the
node shares its image; otherwise the node replicates ``__cluster_metadata`` from the controller at
``controller.quorum.bootstrap.servers`` (``metadata_follower``). Either way it registers and
heartbeats (``broker_lifecycle``), its replicas follow every change (``replication.manager``) and
its configuration the dynamic broker configs stored for the cluster and for it (``node_settings``).

On disk, under the first of ``log.dirs``: Kafka's ``meta.properties`` (cluster id, node id), one
``<topic>-<partition>`` directory per partition replica (see ``storage``) and
``__cluster_metadata-0``, the metadata log (the controller's own, or this broker's copy)."""

from __future__ import annotations

import asyncio
import logging
import random
import shutil
from pathlib import Path

from kconform.codecs.errors import Errors
from kconform.codecs.releases import KafkaRelease, newest_covered_release

from .broker_lifecycle import BrokerLifecycle
from .clock import Clock, SystemClock
from .cluster_metadata import (
    BROKER_RESOURCE,
    TOPIC_RESOURCE,
    ClusterImage,
    ImageChange,
    MetadataLog,
    TopicInfo,
)
from .config import BrokerConfig, check_supported, peer_addresses
from .controller.node import ControllerNode
from .dispatch import Dispatcher
from .fetch_sessions import FetchSessionCache
from .forwarding import broker_handlers
from .groups import GroupCoordinator
from .interbroker import NodeChannel
from .internal_topics import CONSUMER_OFFSETS, TRANSACTION_STATE, InternalTopic
from .legacy_topics import import_legacy_topics
from .meta_properties import load_or_create, read_cluster_id
from .metadata_follower import MetadataFollower, discover_cluster_id
from .node_listeners import (
    NodeListeners,
    checked_listener_setup,
    connection_limits,
    controller_security,
    inter_broker_security,
)
from .node_settings import NodeSettings
from .partition import Partition
from .planted import install as install_planted_bugs
from .producer_ids import ProducerIdBlocks
from .purgatory import Purgatory
from .quotas import ClientQuotaManagers
from .replication.manager import ReplicaManager
from .server import BrokerServer
from .storage import LogConfig, PartitionLog
from .transactions import TransactionCoordinator

__all__ = ["BrokerNode", "controller_address"]

log = logging.getLogger(__name__)
_TICK_S = 1.0
ALLOCATE_PRODUCER_IDS = 67
_REGISTRATION_TIMEOUT_S = 60.0  # initial.broker.registration.timeout.ms


def controller_address(config: BrokerConfig) -> tuple[str, int] | None:
    """The controller from ``controller.quorum.bootstrap.servers`` (HOST:PORT) or
    ``controller.quorum.voters`` (ID@HOST:PORT); the first one given."""
    for item in list(config["controller.quorum.bootstrap.servers"]) + list(
        config["controller.quorum.voters"]
    ):
        address = item.split("@", 1)[-1].strip()
        host, sep, port = address.rpartition(":")
        if sep and port.isdigit():
            return host or "localhost", int(port)
    return None


class BrokerNode(NodeSettings, NodeListeners):
    def __init__(
        self,
        config: BrokerConfig,
        *,
        clock: Clock | None = None,
        advertised: tuple[str, int] | None = None,
        kafka_release: KafkaRelease | None = None,
    ):
        check_supported(config)  # a setting it does not implement stops it here, before any side effect
        install_planted_bugs()  # test only: KCONFORM_PLANTED_BUGS (planted.py); nothing when unset
        self.config = config
        # the Apache Kafka release this node answers as (ApiVersions and the versions it serves)
        self.kafka_release = kafka_release or newest_covered_release()
        self.clock = clock or SystemClock()
        self.node_id = int(config["node.id"])
        self.listeners = checked_listener_setup(config)
        self.peer_security = inter_broker_security(config, self.listeners)  # None: PLAINTEXT
        self._peer_addresses = peer_addresses(config["kconform.interbroker.addresses"])  # read-only
        self.data_dir = Path(config.log_dirs[0])
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.purgatory = Purgatory()
        self.quotas = ClientQuotaManagers(
            int(config["quota.window.num"]), int(config["quota.window.size.seconds"])
        )
        self.controller_node: ControllerNode | None = None
        self._controller_channel: NodeChannel | None = None
        if "controller" in config["process.roles"]:
            self.cluster_id = load_or_create(self.data_dir, self.node_id)
            self.controller_node = ControllerNode(
                config, clock=self.clock, purgatory=self.purgatory, cluster_id=self.cluster_id
            )
            self.metadata = self.controller_node.controller.metadata
        else:
            address = controller_address(config)
            if address is None:
                raise ValueError(
                    "a broker without the controller role needs controller.quorum.bootstrap.servers "
                    "(HOST:PORT of the controller)"
                )
            self._controller_channel = NodeChannel(
                address, client_id=f"broker-{self.node_id}", security=controller_security(config)
            )
            self.cluster_id = read_cluster_id(self.data_dir)
            self.metadata = MetadataLog.open(self.data_dir, clock=self.clock.now_ms)
        self.metadata.listeners.append(self._metadata_changed)
        self.partitions: dict[tuple[str, int], Partition] = {}
        self.follow_dynamic_config()  # what the metadata on disk holds; the rest follows as it arrives
        self.replication = ReplicaManager(self, listener_name=self.listeners.inter_broker)
        self.producer_ids = ProducerIdBlocks(self._producer_id_block)
        self.fetch_sessions = FetchSessionCache(int(config["max.incremental.fetch.session.cache.slots"]))
        self.consumer_offsets = InternalTopic(self, CONSUMER_OFFSETS)
        self.transaction_state = InternalTopic(self, TRANSACTION_STATE)
        self.group_coordinator = GroupCoordinator(self)
        self.transaction_coordinator = TransactionCoordinator(self)
        self.dispatcher = Dispatcher(self, self.kafka_release, broker_handlers())
        self.server = BrokerServer(
            self.dispatcher,
            max_request_bytes=int(config["socket.request.max.bytes"]),
            idle_timeout_s=int(config["connections.max.idle.ms"]) / 1000,
            limits=connection_limits(config, self.listeners),
        )
        self._advertised = advertised
        self.prepare_listener_security()
        self._bound: tuple[str, int] | None = None
        self._background: list[asyncio.Task] = []
        self.lifecycle: BrokerLifecycle | None = None
        self._follower: MetadataFollower | None = None
        self._started = False

    @classmethod
    def from_config_file(cls, path: Path | None, overrides: dict[str, str], **kwargs) -> BrokerNode:
        props = dict(overrides)
        props.setdefault("process.roles", "broker,controller")
        config = BrokerConfig.from_sources(path, props)
        check_supported(config)  # a refused setting is named once, not also logged as unused
        if config.unknown_keys_message:
            log.warning("%s", config.unknown_keys_message)
        return cls(config, **kwargs)

    @property
    def topics(self) -> ClusterImage:
        return self.metadata.image

    @property
    def image(self) -> ClusterImage:
        return self.metadata.image

    @property
    def authorizer(self):
        """The ``Authorizer`` over the image's ACLs (rebuilt only when they or its settings change), or
        None when ``authorizer.class.name`` names none."""
        from .acl_authorizer import authorizer_for

        return authorizer_for(self.config, self.image.acl_entries)

    @property
    def broker_epoch(self) -> int:
        return -1 if self.lifecycle is None else self.lifecycle.epoch

    # ---- talking to the controller ----------------------------------------------------------

    async def send_to_controller(
        self, api_key: int, request, *, version: int | None = None, timeout_s: float
    ):
        if self.controller_node is not None:
            return await self.controller_node.call(api_key, request, version=version)
        return await self._controller_channel.send(api_key, request, version=version, timeout_s=timeout_s)

    async def controller_version(self, api_key: int) -> int:
        """The highest version of an API both this broker and its controller speak."""
        if self.controller_node is not None:
            return self.controller_node.version_for(api_key)
        try:
            return self._controller_channel.version_for(api_key)
        except ConnectionError:  # not connected yet: ApiVersions connects
            from kconform.codecs.messages import ApiVersionsRequest

            await self._controller_channel.send(18, ApiVersionsRequest(), timeout_s=10)
            return self._controller_channel.version_for(api_key)

    async def _producer_id_block(self) -> tuple[int, int]:
        from .producer_ids import ProducerIdsUnavailable

        timeout_s = int(self.config["request.timeout.ms"]) / 1000
        from kconform.codecs.messages import AllocateProducerIdsRequest

        request = AllocateProducerIdsRequest(broker_id=self.node_id, broker_epoch=self.broker_epoch)
        response = await self.send_to_controller(ALLOCATE_PRODUCER_IDS, request, timeout_s=timeout_s)
        if response.error_code:
            raise ProducerIdsUnavailable(f"AllocateProducerIds: error {response.error_code}")
        return response.producer_id_start, response.producer_id_len

    # ---- lifecycle ------------------------------------------------------------------------------

    async def start(self, host: str | None = None, port: int | None = None) -> tuple[str, int]:
        """Listen (``host``/``port`` place the first listener; else ``listeners`` says where),
        register with the controller, catch up with the metadata, take up every replica,
        load the coordinators and wait to be unfenced; returns the bound address."""
        request_timeout_s = int(self.config["request.timeout.ms"]) / 1000
        if self.controller_node is not None:
            await self.controller_node.start()
        self._bound = await self.bind_listeners(host, port)
        if self.cluster_id is None:
            self.cluster_id = await discover_cluster_id(self._controller_channel, _REGISTRATION_TIMEOUT_S)
            load_or_create(self.data_dir, self.node_id, self.cluster_id)
        else:
            load_or_create(self.data_dir, self.node_id, self.cluster_id)
        self.lifecycle = BrokerLifecycle(
            node_id=self.node_id,
            cluster_id=self.cluster_id,
            data_dir=self.data_dir,
            rack=self.config["broker.rack"],
            listeners=self.registered_listeners,
            metadata_offset=lambda: self.image.offset,
            send=self.send_to_controller,
            heartbeat_interval_s=int(self.config["broker.heartbeat.interval.ms"]) / 1000,
            request_timeout_s=request_timeout_s,
        )
        await self.lifecycle.register(_REGISTRATION_TIMEOUT_S)
        if self._controller_channel is not None:
            self._follower = MetadataFollower(self.metadata, self._controller_channel, self.node_id)
            self._follower.start()
        self.lifecycle.start()
        await self.lifecycle.wait_until(lambda: self.lifecycle.caught_up, _REGISTRATION_TIMEOUT_S)
        self.replication.apply_all()
        self.replication.start()
        self._started = True
        self.lifecycle.ready_to_unfence = True
        if not await self.lifecycle.wait_until(lambda: not self.lifecycle.fenced, _REGISTRATION_TIMEOUT_S):
            raise RuntimeError(f"broker {self.node_id} was not unfenced by the controller")
        if self.controller_node is not None:
            import_legacy_topics(self.data_dir, self.controller_node.controller)
        await self.producer_ids.start()
        # Coordinator state is read back from the internal topics before the first request.
        await self.group_coordinator.start()
        await self.transaction_coordinator.start()
        self._background.append(asyncio.create_task(self._housekeeping()))
        return self._bound

    async def stop(self) -> None:
        """A clean stop: a controlled shutdown first (leaderships move away) when other brokers can
        take them, then everything closes and the clean-shutdown marker is written."""
        if self.lifecycle is not None and self._started and self.controller_node is None:
            # past the session timeout the controller fences this broker anyway
            await self.lifecycle.controlled_shutdown(int(self.config["broker.session.timeout.ms"]) / 1000)
        for task in self._background:
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
        await self.transaction_coordinator.stop()
        await self.group_coordinator.stop()
        await self.server.stop()
        await self.replication.stop()
        if self._follower is not None:
            await self._follower.stop()
        if self.lifecycle is not None:
            await self.lifecycle.stop()
        self.producer_ids.stop()
        for partition in self.partitions.values():
            partition.log.close()
        self.partitions.clear()
        if self.lifecycle is not None:
            self.lifecycle.write_clean_shutdown()
        if self.controller_node is not None:
            await self.controller_node.stop()
        else:
            self.metadata.close()
            self._controller_channel.close()

    async def _housekeeping(self) -> None:
        """Retention every log.retention.check.interval.ms; flush.ms and delayed file deletes every tick."""
        interval_s = int(self.config["log.retention.check.interval.ms"]) / 1000
        next_retention = self.clock.monotonic() + interval_s
        while True:
            await asyncio.sleep(_TICK_S)
            for partition in list(self.partitions.values()):
                try:
                    partition.log.flush_if_due()
                    partition.log.delete_expired_files()
                    if self.clock.monotonic() >= next_retention and partition.is_leader:
                        if partition.log.apply_retention():
                            self.purgatory.notify(partition.watch_key)
                except Exception:  # one partition's disk trouble must not stop the others' upkeep
                    log.exception("housekeeping of %s-%s failed", partition.topic_name, partition.index)
            if self.clock.monotonic() >= next_retention:
                next_retention = self.clock.monotonic() + interval_s

    def connection_closed(self, connection_id: int) -> None:
        pass

    # ---- identity -------------------------------------------------------------------------------

    @property
    def advertised_address(self) -> tuple[str, int]:
        """Where clients reach this node on its first advertised listener."""
        _name, host, port, _protocol = self.registered_listeners()[0]
        return host, port

    # ---- replicas (the replica manager's host) ----------------------------------------------------

    def open_partition(self, topic: TopicInfo, index: int) -> Partition:
        key = (topic.name, index)
        partition = self.partitions.get(key)
        if partition is not None:
            return partition
        settings = self.topic_settings(topic.configs)
        partition_log = PartitionLog.open(
            self.data_dir / f"{topic.name}-{index}",
            LogConfig.from_topic_configs(settings),
            clock=self.clock.now_ms,
            topic_id=topic.topic_id,
        )
        if partition_log.recovered_bytes_truncated:
            log.warning(
                "recovery of %s-%s truncated %d bytes of torn or corrupt batches; the log now ends at %d",
                topic.name,
                index,
                partition_log.recovered_bytes_truncated,
                partition_log.log_end_offset,
            )
        partition = self.partitions[key] = Partition(self, topic.name, index, partition_log, settings)
        return partition

    def drop_partition(self, name: str, index: int) -> None:
        """This broker holds no replica of the partition any more (topic deleted, or reassigned)."""
        partition = self.partitions.pop((name, index), None)
        if partition is not None:
            partition.log.close()
            self.purgatory.notify(partition.watch_key)
        shutil.rmtree(self.data_dir / f"{name}-{index}", ignore_errors=True)

    def leadership_changed(self, name: str, index: int, partition: Partition | None) -> None:
        """Coordinators follow the leadership of their partitions (``BrokerMetadataPublisher
        .updateCoordinator``): elected with the leader epoch as coordinator epoch, resigned otherwise."""
        coordinator = {
            CONSUMER_OFFSETS: self.group_coordinator,
            TRANSACTION_STATE: self.transaction_coordinator,
        }
        target = coordinator.get(name)
        if target is None:
            return
        if partition is not None and partition.is_leader:
            target.elect(index, partition.leader_epoch)
        else:
            target.resign(index)

    def _metadata_changed(self, change: ImageChange) -> None:
        """``BrokerMetadataPublisher``: this node's dynamic config first (``DynamicConfigPublisher``), so
        the topics reconfigured next see it, then the replicas (``ReplicaManager.applyDelta``)."""
        own = ("", str(self.node_id))
        broker_config = any(kind == BROKER_RESOURCE and name in own for kind, name in change.configs)
        if broker_config:
            self.follow_dynamic_config()
        if not self._started:
            return  # start() takes up every replica at once when the metadata has caught up
        if broker_config:  # every topic's settings may follow from the broker's
            topics = {name for name, _ in self.partitions}
        else:
            topics = {name for kind, name in change.configs if kind == TOPIC_RESOURCE}
        for name in sorted(topics):
            self._configure_topic(name)
        self.replication.apply(change)

    def _configure_topic(self, name: str) -> None:
        topic = self.image.get(name)
        if topic is None:
            return
        settings = self.topic_settings(topic.configs)
        for state in topic.partitions:
            partition = self.partitions.get((name, state.index))
            if partition is not None:
                partition.configure(settings)
                partition.log.update_config(LogConfig.from_topic_configs(settings))

    # ---- topic changes (the controller's) ---------------------------------------------------------

    def _controller(self):
        if self.controller_node is None:
            return None
        return self.controller_node.controller

    def create_topic(self, name: str, replicas: list[list[int]], configs: dict[str, str]) -> TopicInfo | None:
        """Create a topic (internal topics, auto-creation). A broker without the controller asks the
        controller and returns None: the topic appears when its metadata arrives."""
        controller = self._controller()
        if controller is not None:
            return controller.create_topic(name, replicas, configs)
        self._ask_controller_to_create(name, replicas, configs)
        return None

    def _ask_controller_to_create(
        self, name: str, replicas: list[list[int]], configs: dict[str, str]
    ) -> None:
        from kconform.codecs.messages import CreateTopicsRequest

        request = CreateTopicsRequest(
            topics=[
                CreateTopicsRequest.CreatableTopic(
                    name=name,
                    num_partitions=-1,
                    replication_factor=-1,
                    assignments=[
                        CreateTopicsRequest.CreatableReplicaAssignment(partition_index=i, broker_ids=list(r))
                        for i, r in enumerate(replicas)
                    ],
                    configs=[
                        CreateTopicsRequest.CreatableTopicConfig(name=k, value=v) for k, v in configs.items()
                    ],
                )
            ],
            timeout_ms=int(self.config["request.timeout.ms"]),
            validate_only=False,
        )

        async def send() -> None:
            try:
                await self.send_to_controller(
                    19, request, timeout_s=int(self.config["request.timeout.ms"]) / 1000
                )
            except ConnectionError as exc:
                log.info("asking the controller to create %s failed: %s", name, exc)

        self._background.append(asyncio.get_running_loop().create_task(send()))

    def add_partitions(self, name: str, replicas: list[list[int]]) -> TopicInfo:
        return self._controller().add_partitions(name, replicas)

    def delete_topic(self, name: str) -> None:
        self._controller().delete_topic(name)

    def partition(self, topic_name: str, index: int) -> Partition | None:
        return self.partitions.get((topic_name, index))

    def partition_by_key(self, topic_key, index: int, *, by_id: bool) -> Partition | None:
        if by_id:
            topic = self.topics.by_id(topic_key)
            return None if topic is None else self.partitions.get((topic.name, index))
        return self.partitions.get((topic_key, index))

    def missing_partition_error(self, topic_key, index: int, *, by_id: bool) -> int:
        """Why a partition is not here: NOT_LEADER_OR_FOLLOWER when the cluster has it on other brokers
        (``ReplicaManager.getPartitionOrError``), else the unknown-topic error of the request's kind."""
        topic = self.topics.by_id(topic_key) if by_id else self.topics.get(topic_key)
        if topic is not None and 0 <= index < len(topic.partitions):
            return Errors.NOT_LEADER_OR_FOLLOWER
        # UNKNOWN_TOPIC_ID only when the id names no topic (KafkaApis.handleFetchRequest resolves ids
        # first); a known topic without that partition is UNKNOWN_TOPIC_OR_PARTITION either way.
        return Errors.UNKNOWN_TOPIC_ID if by_id and topic is None else Errors.UNKNOWN_TOPIC_OR_PARTITION

    def peer_address(self, broker_id: int) -> tuple[str, int] | None:
        """Where this broker dials a peer: ``kconform.interbroker.addresses`` when it names the peer
        (a proxy per link in a chaos run), else the peer's registered endpoint."""
        given = self._peer_addresses.get(broker_id)
        if given is not None:
            return given
        broker = self.image.brokers.get(broker_id)
        endpoint = None if broker is None else broker.endpoint(self.inter_broker_listener)
        endpoint = endpoint or (None if broker is None else broker.endpoint())
        return None if endpoint is None else (endpoint.host, endpoint.port)

    def random_alive_broker_id(self) -> int:
        """What a KRaft broker names as the controller to clients (``getRandomAliveBrokerId``)."""
        alive = [b.broker_id for b in self.image.unfenced_brokers()]
        return random.choice(alive) if alive else -1

    def partition_watch_key(self, key, *, by_id: bool):
        topic_key, index = key
        if by_id:
            topic = self.topics.by_id(topic_key)
            return (topic.name if topic else topic_key, index)
        return (topic_key, index)
