"""Request builders and response readers for the topic, config, partition and cluster APIs: plain
functions of data, without I/O. The group APIs' are in ``_group_requests``."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping

from kconform.codecs.constants import ConfigResourceType, ConfigSource, IsolationLevel
from kconform.codecs.messages import (
    CreateTopicsRequest,
    DeleteRecordsRequest,
    DeleteTopicsRequest,
    DescribeClusterRequest,
    DescribeConfigsRequest,
    IncrementalAlterConfigsRequest,
    ListOffsetsRequest,
    MetadataRequest,
)

from ..metadata import BrokerInfo, ClusterMetadata
from ._types import (
    UNKNOWN_EPOCH,
    AlterConfigOp,
    ClusterDescription,
    ConfigEntry,
    ConfigResource,
    ConfigSynonym,
    CreatedTopic,
    ListOffsetsResult,
    NewTopic,
    OffsetSpec,
    PartitionDescription,
    TopicDescription,
    TopicListing,
)

__all__ = [
    "CREATE_TOPICS",
    "DELETE_RECORDS",
    "DELETE_TOPICS",
    "DESCRIBE_CLUSTER",
    "DESCRIBE_CONFIGS",
    "INCREMENTAL_ALTER_CONFIGS",
    "LIST_OFFSETS",
    "METADATA",
    "build_create_topics",
    "build_delete_records",
    "build_delete_topics",
    "build_describe_cluster",
    "build_describe_configs",
    "build_incremental_alter_configs",
    "build_list_offsets",
    "build_metadata",
    "by_topic",
    "cluster_from_metadata",
    "read_cluster",
    "read_config_entry",
    "read_created_topic",
    "read_listed_offset",
    "read_topic_description",
    "read_topic_listings",
]

LIST_OFFSETS = 2
METADATA = 3
CREATE_TOPICS = 19
DELETE_TOPICS = 20
DELETE_RECORDS = 21
DESCRIBE_CONFIGS = 32
INCREMENTAL_ALTER_CONFIGS = 44
DESCRIBE_CLUSTER = 60

_NO_NODE = -1


def by_topic(keys: Iterable[tuple[str, int]]) -> dict[str, list[int]]:
    grouped: dict[str, list[int]] = defaultdict(list)
    for topic, partition in keys:
        grouped[topic].append(partition)
    return grouped


# ---- topics ---------------------------------------------------------------------------------------


def build_metadata(topics: list[str] | None, version: int) -> MetadataRequest:
    """``None`` asks for every topic, ``[]`` for brokers only (which v0 cannot say)."""
    wire_topics = None if topics is None else [MetadataRequest.MetadataRequestTopic(name=t) for t in topics]
    if version == 0 and wire_topics is None:
        wire_topics = []  # v0 has no null: an empty list means every topic
    return MetadataRequest(topics=wire_topics, allow_auto_topic_creation=False)


def build_create_topics(topics: list[NewTopic], timeout_ms: int, validate_only: bool) -> CreateTopicsRequest:
    creatable = []
    for t in topics:
        assignments = [
            CreateTopicsRequest.CreatableReplicaAssignment(partition_index=p, broker_ids=list(brokers))
            for p, brokers in sorted((t.assignments or {}).items())
        ]
        configs = [CreateTopicsRequest.CreatableTopicConfig(name=k, value=v) for k, v in t.configs.items()]
        creatable.append(
            CreateTopicsRequest.CreatableTopic(
                name=t.name,
                num_partitions=t.num_partitions,
                replication_factor=t.replication_factor,
                assignments=assignments,
                configs=configs,
            )
        )
    return CreateTopicsRequest(topics=creatable, timeout_ms=timeout_ms, validate_only=validate_only)


def read_created_topic(result, version: int) -> CreatedTopic:
    if version < 5:
        return CreatedTopic(result.name)
    configs = None
    if result.configs is not None and result.topic_config_error_code == 0:
        configs = {
            c.name: ConfigEntry(c.name, c.value, _config_source(c.config_source), c.read_only, c.is_sensitive)
            for c in result.configs
        }
    topic_id = result.topic_id if version >= 7 else None
    return CreatedTopic(result.name, topic_id, result.num_partitions, result.replication_factor, configs)


def build_delete_topics(names: list[str], timeout_ms: int, version: int) -> DeleteTopicsRequest:
    if version >= 6:
        return DeleteTopicsRequest(
            topics=[DeleteTopicsRequest.DeleteTopicState(name=n) for n in names],
            timeout_ms=timeout_ms,
        )
    return DeleteTopicsRequest(topic_names=list(names), timeout_ms=timeout_ms)


def read_topic_description(info) -> TopicDescription:
    partitions = [
        PartitionDescription(
            p.partition,
            None if p.leader == _NO_NODE else p.leader,
            p.replicas,
            p.isr,
            p.leader_epoch,
        )
        for p in sorted(info.partitions.values(), key=lambda p: p.partition)
    ]
    return TopicDescription(info.name, info.topic_id, info.is_internal, partitions)


def read_topic_listings(metadata: ClusterMetadata, include_internal: bool) -> dict[str, TopicListing]:
    return {
        name: TopicListing(name, info.topic_id, info.is_internal)
        for name, info in sorted(metadata.topics.items())
        if include_internal or not info.is_internal
    }


# ---- configs --------------------------------------------------------------------------------------


def build_describe_configs(
    resources: list[ConfigResource], include_synonyms: bool, include_documentation: bool
) -> DescribeConfigsRequest:
    return DescribeConfigsRequest(
        resources=[
            DescribeConfigsRequest.DescribeConfigsResource(
                resource_type=int(r.type), resource_name=r.name, configuration_keys=None
            )
            for r in resources
        ],
        include_synonyms=include_synonyms,
        include_documentation=include_documentation,
    )


def _config_source(code: int) -> ConfigSource:
    try:
        return ConfigSource(code)
    except ValueError:
        return ConfigSource.UNKNOWN


def read_config_entry(entry, resource: ConfigResource, version: int) -> ConfigEntry:
    if version == 0:
        # v0 has only is_default; Java's reading of it: a non-default topic value is a topic override,
        # a non-default broker value is the broker's static configuration.
        if entry.is_default:
            source = ConfigSource.DEFAULT_CONFIG
        elif resource.type == ConfigResourceType.TOPIC:
            source = ConfigSource.DYNAMIC_TOPIC_CONFIG
        else:
            source = ConfigSource.STATIC_BROKER_CONFIG
        synonyms: tuple[ConfigSynonym, ...] = ()
    else:
        source = _config_source(entry.config_source)
        synonyms = tuple(ConfigSynonym(s.name, s.value, _config_source(s.source)) for s in entry.synonyms)
    return ConfigEntry(
        entry.name,
        entry.value,
        source,
        entry.read_only,
        entry.is_sensitive,
        synonyms,
        entry.config_type if version >= 3 else 0,
        entry.documentation if version >= 3 else None,
    )


def build_incremental_alter_configs(
    resources: list[ConfigResource],
    ops: Mapping[ConfigResource, list[AlterConfigOp]],
    validate_only: bool,
) -> IncrementalAlterConfigsRequest:
    resource_class = IncrementalAlterConfigsRequest.AlterConfigsResource
    return IncrementalAlterConfigsRequest(
        resources=[
            resource_class(
                resource_type=int(r.type),
                resource_name=r.name,
                configs=[
                    IncrementalAlterConfigsRequest.AlterableConfig(
                        name=o.name, config_operation=int(o.op), value=o.value
                    )
                    for o in ops[r]
                ],
            )
            for r in resources
        ],
        validate_only=validate_only,
    )


# ---- partitions -----------------------------------------------------------------------------------


def build_list_offsets(
    specs: Mapping[tuple[str, int], OffsetSpec], isolation: IsolationLevel, timeout_ms: int
) -> ListOffsetsRequest:
    topics = [
        ListOffsetsRequest.ListOffsetsTopic(
            name=topic,
            partitions=[
                ListOffsetsRequest.ListOffsetsPartition(
                    partition_index=p,
                    current_leader_epoch=UNKNOWN_EPOCH,
                    timestamp=specs[topic, p].timestamp,
                )
                for p in partitions
            ],
        )
        for topic, partitions in by_topic(specs).items()
    ]
    return ListOffsetsRequest(
        replica_id=-1, isolation_level=int(isolation), topics=topics, timeout_ms=timeout_ms
    )


def read_listed_offset(partition, version: int) -> ListOffsetsResult:
    epoch = partition.leader_epoch if version >= 4 else UNKNOWN_EPOCH
    return ListOffsetsResult(partition.offset, partition.timestamp, None if epoch == UNKNOWN_EPOCH else epoch)


def build_delete_records(
    keys: list[tuple[str, int]], before: Mapping[tuple[str, int], int], timeout_ms: int
) -> DeleteRecordsRequest:
    topic_class = DeleteRecordsRequest.DeleteRecordsTopic
    return DeleteRecordsRequest(
        topics=[
            topic_class(
                name=topic,
                partitions=[
                    DeleteRecordsRequest.DeleteRecordsPartition(partition_index=p, offset=before[topic, p])
                    for p in partitions
                ],
            )
            for topic, partitions in by_topic(keys).items()
        ],
        timeout_ms=timeout_ms,
    )


# ---- cluster --------------------------------------------------------------------------------------


def build_describe_cluster(include_fenced_brokers: bool) -> DescribeClusterRequest:
    return DescribeClusterRequest(
        include_cluster_authorized_operations=False,
        endpoint_type=1,
        include_fenced_brokers=include_fenced_brokers,
    )


def read_cluster(response) -> ClusterDescription:
    brokers = {b.broker_id: BrokerInfo(b.broker_id, b.host, b.port, b.rack) for b in response.brokers}
    controller = _known(response.controller_id, brokers)
    fenced = frozenset(b.broker_id for b in response.brokers if b.is_fenced)
    return ClusterDescription(response.cluster_id, controller, brokers, fenced)


def cluster_from_metadata(metadata: ClusterMetadata) -> ClusterDescription:
    """What Metadata says of the cluster, for a broker without DescribeCluster."""
    brokers = dict(metadata.brokers)
    return ClusterDescription(metadata.cluster_id, _known(metadata.controller_id, brokers), brokers)


def _known(node: int, brokers: Mapping[int, BrokerInfo]) -> int | None:
    """A controller id only when it names a listed broker, as Java's describeCluster reports it
    (librdkafka's mock, for one, names node 0 of brokers 1..n)."""
    return node if node in brokers else None
