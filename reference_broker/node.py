"""One reference broker node: configuration, topics, partition logs, the network server and the
background work (retention, flushing), wired together. Handlers reach everything through this object.

On disk, under the first of ``log.dirs``: Kafka's ``meta.properties`` (cluster id, node id), one
``<topic>-<partition>`` directory per partition (see ``storage``), and ``kconform-metadata.json``, the
topic registry (Kafka keeps that in its KRaft metadata log)."""

from __future__ import annotations

import asyncio
import base64
import logging
import shutil
import uuid
from pathlib import Path

from kconform.codecs.releases import KafkaRelease, newest_covered_release

from .clock import Clock, SystemClock
from .config import BrokerConfig, TopicConfig, create_topics_config_error
from .dispatch import Dispatcher
from .fetch_sessions import FetchSessionCache
from .groups import GroupCoordinator
from .internal_topics import CONSUMER_OFFSETS, TRANSACTION_STATE, InternalTopic
from .partition import Partition
from .planted import install as install_planted_bugs
from .producer_ids import ProducerIdAllocator
from .purgatory import Purgatory
from .server import BrokerServer
from .storage import LogConfig, PartitionLog
from .topics import TopicRegistry, TopicState
from .transactions import TransactionCoordinator

__all__ = ["BrokerNode"]

log = logging.getLogger(__name__)
_TICK_S = 1.0


class BrokerNode:
    def __init__(
        self,
        config: BrokerConfig,
        *,
        clock: Clock | None = None,
        advertised: tuple[str, int] | None = None,
        kafka_release: KafkaRelease | None = None,
    ):
        install_planted_bugs()  # test only: KCONFORM_PLANTED_BUGS (planted.py); nothing when unset
        self.config = config
        # the Apache Kafka release this node answers as (ApiVersions and the versions it serves)
        self.kafka_release = kafka_release or newest_covered_release()
        self.clock = clock or SystemClock()
        self.node_id = int(config["node.id"])
        self.data_dir = Path(config.log_dirs[0])
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.cluster_id = self._load_or_create_meta()
        self.topics = TopicRegistry(self.data_dir / "kconform-metadata.json")
        self.producer_ids = ProducerIdAllocator(self.data_dir / "kconform-producer-ids")
        self.partitions: dict[tuple[str, int], Partition] = {}
        self.purgatory = Purgatory()
        self.fetch_sessions = FetchSessionCache(int(config["max.incremental.fetch.session.cache.slots"]))
        self.consumer_offsets = InternalTopic(self, CONSUMER_OFFSETS)
        self.transaction_state = InternalTopic(self, TRANSACTION_STATE)
        self.group_coordinator = GroupCoordinator(self)
        self.transaction_coordinator = TransactionCoordinator(self)
        self.dispatcher = Dispatcher(self, self.kafka_release)
        self.server = BrokerServer(
            self.dispatcher,
            max_request_bytes=int(config["socket.request.max.bytes"]),
            idle_timeout_s=int(config["connections.max.idle.ms"]) / 1000,
        )
        self._advertised = advertised
        self._bound: tuple[str, int] | None = None
        self._background: list[asyncio.Task] = []

    @classmethod
    def from_config_file(cls, path: Path | None, overrides: dict[str, str], **kwargs) -> BrokerNode:
        props = dict(overrides)
        props.setdefault("process.roles", "broker,controller")
        config = BrokerConfig.from_sources(path, props)
        if config.unknown_keys_message:
            log.warning("%s", config.unknown_keys_message)
        return cls(config, **kwargs)

    # ---- lifecycle ------------------------------------------------------------------------------

    async def start(self, host: str, port: int) -> tuple[str, int]:
        for topic in self.topics:
            self._open_partitions(topic)
        # Coordinator state is read back from the internal topics before the first request.
        await self.group_coordinator.start()
        await self.transaction_coordinator.start()
        self._bound = await self.server.start(host, port)
        self._background.append(asyncio.create_task(self._housekeeping()))
        return self._bound

    async def stop(self) -> None:
        for task in self._background:
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
        await self.transaction_coordinator.stop()
        await self.group_coordinator.stop()
        await self.server.stop()
        for partition in self.partitions.values():
            partition.log.close()
        self.partitions.clear()

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
                    if self.clock.monotonic() >= next_retention:
                        if partition.log.apply_retention():
                            self.purgatory.notify(partition.watch_key)
                except Exception:  # one partition's disk trouble must not stop the others' upkeep
                    log.exception("housekeeping of %s-%s failed", partition.topic_name, partition.index)
            if self.clock.monotonic() >= next_retention:
                next_retention = self.clock.monotonic() + interval_s

    def connection_closed(self, connection_id: int) -> None:
        pass

    # ---- identity -------------------------------------------------------------------------------

    def _load_or_create_meta(self) -> str:
        """Kafka's ``meta.properties``: the cluster id survives restarts."""
        path = self.data_dir / "meta.properties"
        if path.exists():
            from .config import load_properties

            props = load_properties(path)
            if "node.id" in props and int(props["node.id"]) != self.node_id:
                raise RuntimeError(
                    f"{path} belongs to node {props['node.id']}, not {self.node_id}: use that node id or "
                    "another data directory"
                )
            return props["cluster.id"]
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        directory_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        path.write_text(
            f"#\nversion=1\ncluster.id={cluster_id}\nnode.id={self.node_id}\ndirectory.id={directory_id}\n"
        )
        return cluster_id

    @property
    def advertised_address(self) -> tuple[str, int]:
        if self._advertised:
            return self._advertised
        host, port = self._bound
        return ("localhost" if host in ("0.0.0.0", "::") else host), port

    @property
    def live_broker_ids(self) -> list[int]:
        return [self.node_id]

    # ---- topic settings ---------------------------------------------------------------------------

    @property
    def auto_create_topics(self) -> bool:
        return bool(self.config["auto.create.topics.enable"])

    @property
    def default_partitions(self) -> int:
        return int(self.config["num.partitions"])

    @property
    def default_replication_factor(self) -> int:
        return int(self.config["default.replication.factor"])

    def topic_settings(self, overrides: dict[str, str]) -> dict[str, str]:
        resolved = TopicConfig.resolve(self.config, overrides, include_synonyms=False)
        return {name: entry.value for name, entry in resolved.items() if entry.value is not None}

    def topic_config_problem(self, configs: dict[str, str]) -> str | None:
        error = create_topics_config_error(configs.items(), broker=self.config)
        return None if error is None else error.message

    def describe_topic_configs(self, overrides: dict[str, str]):
        return TopicConfig.for_create_topics(self.config, overrides)

    def assign_replicas(self, partitions: int, factor: int, *, start: int = 0) -> list[list[int]]:
        brokers = self.live_broker_ids
        return [[brokers[(start + p + r) % len(brokers)] for r in range(factor)] for p in range(partitions)]

    # ---- topics and partitions --------------------------------------------------------------------

    def _open_partitions(self, topic: TopicState) -> None:
        settings = self.topic_settings(topic.configs)
        log_config = LogConfig.from_topic_configs(settings)
        for state in topic.partitions:
            key = (topic.name, state.index)
            if key in self.partitions:
                continue
            partition_log = PartitionLog.open(
                self.data_dir / f"{topic.name}-{state.index}",
                log_config,
                clock=self.clock.now_ms,
                topic_id=topic.topic_id,
            )
            if partition_log.recovered_bytes_truncated:
                log.warning(
                    "recovery of %s-%s truncated %d bytes of torn or corrupt batches; the log now ends at "
                    "offset %d",
                    topic.name,
                    state.index,
                    partition_log.recovered_bytes_truncated,
                    partition_log.log_end_offset,
                )
            self.partitions[key] = Partition(self, topic.name, state.index, partition_log, settings)

    def create_topic(self, name: str, replicas: list[list[int]], configs: dict[str, str]) -> TopicState:
        topic = self.topics.create(name, len(replicas), replicas, configs)
        self._open_partitions(topic)
        return topic

    def auto_create_topic(self, name: str) -> TopicState:
        factor = min(self.default_replication_factor, len(self.live_broker_ids))
        return self.create_topic(name, self.assign_replicas(self.default_partitions, factor), {})

    def add_partitions(self, name: str, replicas: list[list[int]]) -> TopicState:
        topic = self.topics.add_partitions(name, replicas)
        self._open_partitions(topic)
        return topic

    def alter_topic_configs(self, name: str, configs: dict[str, str]) -> None:
        """Replace a topic's stored config overrides and apply them to its open partitions."""
        self.topics.set_configs(name, configs)
        settings = self.topic_settings(configs)
        for (topic_name, _index), partition in self.partitions.items():
            if topic_name == name:
                partition.configure(settings)
                partition.log.update_config(LogConfig.from_topic_configs(settings))

    def delete_topic(self, name: str) -> None:
        topic = self.topics.delete(name)
        for state in topic.partitions:
            partition = self.partitions.pop((name, state.index), None)
            if partition is not None:
                partition.log.close()
                self.purgatory.notify(partition.watch_key)
            shutil.rmtree(self.data_dir / f"{name}-{state.index}", ignore_errors=True)

    def partition(self, topic_name: str, index: int) -> Partition | None:
        return self.partitions.get((topic_name, index))

    def partition_by_key(self, topic_key, index: int, *, by_id: bool) -> Partition | None:
        if by_id:
            topic = self.topics.by_id(topic_key)
            return None if topic is None else self.partitions.get((topic.name, index))
        return self.partitions.get((topic_key, index))

    def partition_watch_key(self, key, *, by_id: bool):
        topic_key, index = key
        if by_id:
            topic = self.topics.by_id(topic_key)
            return (topic.name if topic else topic_key, index)
        return (topic_key, index)

    # ---- admin (added for the admin handlers) -----------------------------------------------------

    def alter_broker_configs(
        self, *, per_broker: dict[str, str] | None = None, cluster_default: dict[str, str] | None = None
    ) -> None:
        """Replace a dynamic broker config layer (AlterConfigs / IncrementalAlterConfigs on a BROKER
        resource, already validated) and give every partition the topic settings that follow from it.
        Kept in memory: Kafka keeps these in its metadata log, this node does not persist them yet."""
        self.config = self.config.with_dynamic(cluster_default=cluster_default, per_broker=per_broker)
        for topic in self.topics:
            settings = self.topic_settings(topic.configs)
            for state in topic.partitions:
                partition = self.partitions.get((topic.name, state.index))
                if partition is not None:
                    partition.configure(settings)
                    partition.log.update_config(LogConfig.from_topic_configs(settings))
