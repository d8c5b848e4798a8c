"""The admin client's values: what the caller passes in and what the calls return."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kconform.codecs.constants import (
    LIST_OFFSETS_TIMESTAMP_MIN_VERSION,
    AlterConfigOpType,
    ConfigResourceType,
    ConfigSource,
    ListOffsetsTimestamp,
)

from ..metadata import BrokerInfo

__all__ = [
    "UNKNOWN_EPOCH",
    "AlterConfigOp",
    "ClusterDescription",
    "ConfigEntry",
    "ConfigResource",
    "ConfigSynonym",
    "CreatedTopic",
    "GroupDescription",
    "GroupListing",
    "ListOffsetsResult",
    "MemberDescription",
    "NewTopic",
    "OffsetAndMetadata",
    "OffsetSpec",
    "PartitionDescription",
    "TopicDescription",
    "TopicListing",
]

UNKNOWN_EPOCH = -1


# ---- values the caller passes in ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NewTopic:
    """A topic to create. -1 partitions or replication factor means the broker's default;
    ``assignments`` (partition -> broker ids) replaces both."""

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    configs: Mapping[str, str | None] = field(default_factory=dict)
    assignments: Mapping[int, Iterable[int]] | None = None


@dataclass(frozen=True, slots=True)
class ConfigResource:
    type: ConfigResourceType
    name: str

    @property
    def is_broker_specific(self) -> bool:
        """A resource that only one broker can answer for: a broker (other than the cluster default
        ``""``) or a broker's loggers."""
        return self.type in (ConfigResourceType.BROKER, ConfigResourceType.BROKER_LOGGER) and self.name != ""


@dataclass(frozen=True, slots=True)
class AlterConfigOp:
    name: str
    value: str | None = None
    op: AlterConfigOpType = AlterConfigOpType.SET


@dataclass(frozen=True, slots=True)
class OffsetSpec:
    """What ListOffsets looks for: a special timestamp, or the first offset at or after a time.
    ``min_version`` is the oldest ListOffsets version that knows the special timestamp."""

    timestamp: int
    min_version: int = 0

    @classmethod
    def special(cls, timestamp: ListOffsetsTimestamp) -> OffsetSpec:
        return cls(timestamp, LIST_OFFSETS_TIMESTAMP_MIN_VERSION[timestamp] if timestamp < -2 else 0)

    @classmethod
    def earliest(cls) -> OffsetSpec:
        return cls.special(ListOffsetsTimestamp.EARLIEST)

    @classmethod
    def latest(cls) -> OffsetSpec:
        return cls.special(ListOffsetsTimestamp.LATEST)

    @classmethod
    def max_timestamp(cls) -> OffsetSpec:
        return cls.special(ListOffsetsTimestamp.MAX_TIMESTAMP)

    @classmethod
    def earliest_local(cls) -> OffsetSpec:
        return cls.special(ListOffsetsTimestamp.EARLIEST_LOCAL)

    @classmethod
    def for_timestamp(cls, timestamp_ms: int) -> OffsetSpec:
        if timestamp_ms < 0:
            raise ValueError(f"a timestamp to look up must not be negative, not {timestamp_ms}")
        return cls(timestamp_ms)


# ---- values the calls return --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ConfigSynonym:
    name: str
    value: str | None
    source: ConfigSource


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    name: str
    value: str | None
    source: ConfigSource = ConfigSource.UNKNOWN
    read_only: bool = False
    is_sensitive: bool = False
    synonyms: tuple[ConfigSynonym, ...] = ()
    config_type: int = 0
    documentation: str | None = None

    @property
    def is_default(self) -> bool:
        return self.source == ConfigSource.DEFAULT_CONFIG


@dataclass(frozen=True, slots=True)
class CreatedTopic:
    """What CreateTopics v5+ reports about a topic it created (or would create, with validate_only);
    older versions report only success, leaving the rest unknown."""

    name: str
    topic_id: bytes | None = None
    num_partitions: int = -1
    replication_factor: int = -1
    configs: dict[str, ConfigEntry] | None = None


@dataclass(frozen=True, slots=True)
class PartitionDescription:
    partition: int
    leader: int | None
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader_epoch: int = UNKNOWN_EPOCH


@dataclass(frozen=True, slots=True)
class TopicDescription:
    name: str
    topic_id: bytes | None
    is_internal: bool
    partitions: list[PartitionDescription]


@dataclass(frozen=True, slots=True)
class TopicListing:
    name: str
    topic_id: bytes | None
    is_internal: bool


@dataclass(frozen=True, slots=True)
class ListOffsetsResult:
    offset: int
    timestamp: int
    leader_epoch: int | None


@dataclass(frozen=True, slots=True)
class OffsetAndMetadata:
    offset: int
    leader_epoch: int | None
    metadata: str | None


@dataclass(frozen=True, slots=True)
class GroupListing:
    group_id: str
    protocol_type: str
    state: str | None  # None: the broker's ListGroups version is too old to say
    type: str | None


@dataclass(frozen=True, slots=True)
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    # (topic, partition) pairs; None when a classic group's protocol is not "consumer" (see raw bytes)
    assignment: list[tuple[str, int]] | None
    subscribed_topics: list[str] | None = None
    subscribed_topic_regex: str | None = None
    target_assignment: list[tuple[str, int]] | None = None  # consumer (KIP-848) groups only
    member_epoch: int | None = None  # consumer (KIP-848) groups only
    rack_id: str | None = None
    raw_metadata: bytes | None = None  # classic groups: the member's bytes as the broker keeps them
    raw_assignment: bytes | None = None
    # consumer (KIP-848) groups, ConsumerGroupDescribe v1+ (KIP-1099): True for a member on the consumer
    # protocol, False for a classic member of the group; None when the broker does not say (Java's
    # MemberDescription.upgraded)
    upgraded: bool | None = None


@dataclass(frozen=True, slots=True)
class GroupDescription:
    group_id: str
    type: str  # "classic" or "consumer"
    state: str
    protocol_type: str
    protocol: str  # classic: the chosen protocol (the assignor); consumer: the server assignor
    members: list[MemberDescription]
    coordinator: int
    group_epoch: int | None = None
    assignment_epoch: int | None = None


@dataclass(frozen=True, slots=True)
class ClusterDescription:
    cluster_id: str | None
    controller_id: int | None
    brokers: dict[int, BrokerInfo]
    fenced: frozenset[int] = frozenset()  # DescribeCluster v2+: the listed brokers that are fenced
