"""What the client knows of the cluster: brokers, topics, partition leaders. Pure data, built from a
MetadataResponse; the network client keeps the newest and replaces it whole.

Metadata v13 (KIP-1102) has a top-level error code. Kafka's client acts on one value,
REBOOTSTRAP_REQUIRED: it takes nothing from that answer and starts again from its bootstrap servers
(NetworkClient.DefaultMetadataUpdater.handleSuccessfulResponse); any other value changes nothing. Here
such an answer leaves the metadata as it was (the network client owns the connections)."""

from __future__ import annotations

from dataclasses import dataclass, field

from kconform.codecs.constants import ZERO_UUID
from kconform.codecs.errors import error_for

__all__ = ["BrokerInfo", "ClusterMetadata", "PartitionInfo", "TopicInfo"]

NO_LEADER = -1
# Errors.REBOOTSTRAP_REQUIRED (Kafka 4.0, KIP-1102): the metadata is stale, rebootstrap. The codecs'
# error table (errors.tsv, to code 128) does not name it yet.
REBOOTSTRAP_REQUIRED = 129


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    node_id: int
    host: str
    port: int
    rack: str | None = None


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    error_code: int = 0


@dataclass(frozen=True, slots=True)
class TopicInfo:
    name: str
    error_code: int
    topic_id: bytes | None
    is_internal: bool
    partitions: dict[int, PartitionInfo]
    available: tuple[int, ...] = ()  # partitions with a known leader, in order

    @classmethod
    def of(cls, name, error_code, topic_id, is_internal, partitions: dict[int, PartitionInfo]) -> TopicInfo:
        available = tuple(sorted(p for p, info in partitions.items() if info.leader != NO_LEADER))
        return cls(name, error_code, topic_id, is_internal, partitions, available)

    @property
    def error_name(self) -> str:
        return error_for(self.error_code).name


def _keep_newer_epochs(partitions: dict[int, PartitionInfo], cached: dict[int, PartitionInfo]) -> None:
    """KIP-320 (Kafka's ``Metadata.updateLatestMetadata``): a partition answered with an older leader
    epoch than the client already knows comes from a broker behind the cluster, say a deposed leader
    still naming itself; the client keeps what it knows."""
    for index, answer in partitions.items():
        known = cached.get(index)
        if known is not None and answer.leader_epoch >= 0 and known.leader_epoch > answer.leader_epoch:
            partitions[index] = known


@dataclass(frozen=True, slots=True)
class ClusterMetadata:
    brokers: dict[int, BrokerInfo] = field(default_factory=dict)
    topics: dict[str, TopicInfo] = field(default_factory=dict)
    cluster_id: str | None = None
    controller_id: int = -1

    @classmethod
    def from_response(cls, response, previous: ClusterMetadata | None = None, *, merge: bool = True):
        """Metadata from a MetadataResponse. With ``merge`` the topics the response does not mention
        keep what ``previous`` knew (a client asking about a few topics must not forget the others).
        A v13 answer that asks for a rebootstrap is not taken: ``previous`` stays (empty without one)."""
        if getattr(response, "error_code", 0) == REBOOTSTRAP_REQUIRED:
            return previous if previous is not None else cls()
        brokers = {b.node_id: BrokerInfo(b.node_id, b.host, b.port, b.rack) for b in response.brokers}
        topics = dict(previous.topics) if (merge and previous is not None) else {}
        for t in response.topics:
            if t.name is None:
                continue
            partitions = {
                p.partition_index: PartitionInfo(
                    p.partition_index,
                    p.leader_id,
                    p.leader_epoch,
                    tuple(p.replica_nodes),
                    tuple(p.isr_nodes),
                    p.error_code,
                )
                for p in t.partitions
            }
            topic_id = getattr(t, "topic_id", None)
            known = previous.topics.get(t.name) if previous is not None else None
            if known is not None and known.topic_id == topic_id:
                _keep_newer_epochs(partitions, known.partitions)
            topics[t.name] = TopicInfo.of(t.name, t.error_code, topic_id, bool(t.is_internal), partitions)
        return cls(brokers, topics, response.cluster_id, response.controller_id)

    def leader_for(self, topic: str, partition: int) -> int:
        info = self.topics.get(topic)
        if info is None:
            return NO_LEADER
        part = info.partitions.get(partition)
        return NO_LEADER if part is None else part.leader

    def leader_epoch(self, topic: str, partition: int) -> int:
        info = self.topics.get(topic)
        part = info.partitions.get(partition) if info else None
        return -1 if part is None else part.leader_epoch

    def partition_count(self, topic: str) -> int | None:
        info = self.topics.get(topic)
        if info is None or info.error_code or not info.partitions:
            return None
        return len(info.partitions)

    def topic_id(self, topic: str) -> bytes | None:
        info = self.topics.get(topic)
        return None if info is None else info.topic_id

    def known_topic_id(self, topic: str):
        """The topic's id, or None when the metadata has none for it (an unknown topic, or a broker
        below Metadata v10, whose answers carry the zero id): what a request naming topics by id needs."""
        topic_id = self.topic_id(topic)
        return None if topic_id is None or topic_id == ZERO_UUID else topic_id

    def topic_name(self, topic_id) -> str | None:
        for info in self.topics.values():
            if info.topic_id == topic_id:
                return info.name
        return None
