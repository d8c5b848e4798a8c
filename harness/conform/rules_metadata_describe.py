"""Rules of describing the cluster: DescribeCluster, DescribeLogDirs and DescribeProducers."""

from __future__ import annotations

from kconform.codecs.errors import Errors
from kconform.codecs.messages import (
    DescribeClusterRequest,
    DescribeLogDirsRequest,
    DescribeProducersRequest,
    InitProducerIdRequest,
    MetadataRequest,
)

from .catalogue import Rule, add, rule
from .requests import batch, produce_request
from .rules_metadata import (
    DESCRIBE_CLUSTER,
    DESCRIBE_LOG_DIRS,
    DESCRIBE_PRODUCERS,
    INIT_PRODUCER_ID,
    INT_MIN,
    METADATA,
    PRODUCE,
)
from .session import RuleSession, expect, expect_error

# ---- DescribeCluster -------------------------------------------------------------------------------


async def describe_cluster(s: RuleSession, version: int, **fields):
    return await s.call(await s.raw(), DESCRIBE_CLUSTER, version, DescribeClusterRequest(**fields))


@rule(
    "describe-cluster.brokers-and-cluster-id-as-metadata",
    api=DESCRIBE_CLUSTER,
    versions=(0, 2),
    source="KafkaApis.handleDescribeCluster",
    family="describe-cluster",
)
async def cluster_as_metadata(s: RuleSession, version: int) -> None:
    """DescribeCluster answers NONE with the cluster id and the broker ids Metadata gives, and a
    controller id among those brokers."""
    body = await describe_cluster(s, version)
    meta = await s.call(await s.raw(), METADATA, s.setup_version(METADATA, 12), MetadataRequest(topics=[]))
    expect_error("error_code", body.error_code, Errors.NONE)
    expect("cluster_id", body.cluster_id, meta.cluster_id)
    brokers = sorted(b.broker_id for b in body.brokers)
    expect("broker ids", brokers, sorted(b.node_id for b in meta.brokers))
    expect("controller_id among brokers", body.controller_id in brokers, True)


@rule(
    "describe-cluster.authorized-operations-omitted",
    api=DESCRIBE_CLUSTER,
    versions=(0, 2),
    source="KafkaApis.handleDescribeCluster includeClusterAuthorizedOperations",
    family="describe-cluster",
)
async def cluster_operations_omitted(s: RuleSession, version: int) -> None:
    """The cluster's authorized operations are left at INT_MIN unless the request asks for them."""
    body = await describe_cluster(s, version)
    expect("cluster_authorized_operations", body.cluster_authorized_operations, INT_MIN)


@rule(
    "describe-cluster.controller-endpoint-on-broker",
    api=DESCRIBE_CLUSTER,
    versions=(1, 2),
    source="KafkaApis.handleDescribeCluster MISMATCHED_ENDPOINT_TYPE",
    family="describe-cluster",
    since="3.7",
)
async def cluster_controller_endpoint(s: RuleSession, version: int) -> None:
    """From v1, a broker asked for controller endpoints (endpoint_type 2) answers MISMATCHED_ENDPOINT_TYPE."""
    body = await describe_cluster(s, version, endpoint_type=2)
    expect_error("error_code", body.error_code, Errors.MISMATCHED_ENDPOINT_TYPE)


@rule(
    "describe-cluster.unknown-endpoint-type",
    api=DESCRIBE_CLUSTER,
    versions=(1, 2),
    source="KafkaApis.handleDescribeCluster UNSUPPORTED_ENDPOINT_TYPE",
    family="describe-cluster",
    since="3.7",
)
async def cluster_unknown_endpoint(s: RuleSession, version: int) -> None:
    """From v1, an endpoint type Kafka does not define (3) is answered UNSUPPORTED_ENDPOINT_TYPE."""
    body = await describe_cluster(s, version, endpoint_type=3)
    expect_error("error_code", body.error_code, Errors.UNSUPPORTED_ENDPOINT_TYPE)


@rule(
    "describe-cluster.live-brokers-not-fenced",
    api=DESCRIBE_CLUSTER,
    versions=(2, 2),
    source="KafkaApis.handleDescribeCluster includeFencedBrokers",
    family="describe-cluster",
    since="4.0",
)
async def cluster_not_fenced(s: RuleSession, version: int) -> None:
    """From v2, the brokers of a healthy cluster are listed with is_fenced false, whether fenced brokers
    are asked for or not."""
    for flag in (False, True):
        body = await describe_cluster(s, version, include_fenced_brokers=flag)
        expect(f"fenced brokers (include={flag})", [b.broker_id for b in body.brokers if b.is_fenced], [])
        expect(f"brokers listed (include={flag})", len(body.brokers) > 0, True)


# ---- DescribeLogDirs -------------------------------------------------------------------------------


async def log_dirs(s: RuleSession, version: int, topic: str, topics):
    leader = await s.leader(topic)
    return await s.call(leader, DESCRIBE_LOG_DIRS, version, DescribeLogDirsRequest(topics=topics))


def _partitions_in(body, topic: str) -> list[int]:
    return sorted(
        p.partition_index for r in body.results for t in r.topics if t.name == topic for p in t.partitions
    )


@rule(
    "describe-log-dirs.only-partitions-asked-for",
    api=DESCRIBE_LOG_DIRS,
    versions=(1, 4),
    source="ReplicaManager.describeLogDirs partitions",
    family="describe-log-dirs",
)
async def log_dirs_only_asked(s: RuleSession, version: int) -> None:
    """DescribeLogDirs for named partitions lists only those the broker hosts: a partition the topic
    lacks and an unknown topic are left out."""
    topic, _ = await s.create_topic(partitions=1)
    asked = [
        DescribeLogDirsRequest.DescribableLogDirTopic(topic=topic, partitions=[0, 7]),
        DescribeLogDirsRequest.DescribableLogDirTopic(topic=s.name("absent"), partitions=[0]),
    ]
    body = await log_dirs(s, version, topic, asked)
    expect("partitions of the topic", _partitions_in(body, topic), [0])
    names = {t.name for r in body.results for t in r.topics}
    expect("topics listed", names, {topic})


@rule(
    "describe-log-dirs.all-when-topics-null",
    api=DESCRIBE_LOG_DIRS,
    versions=(1, 4),
    source="ReplicaManager.describeLogDirs",
    family="describe-log-dirs",
)
async def log_dirs_all(s: RuleSession, version: int) -> None:
    """DescribeLogDirs with a null topic list lists every partition the broker hosts, one it leads too."""
    topic, _ = await s.create_topic()
    body = await log_dirs(s, version, topic, None)
    expect(f"partitions of {topic}", _partitions_in(body, topic), [0])


@rule(
    "describe-log-dirs.none-when-topics-empty",
    api=DESCRIBE_LOG_DIRS,
    versions=(1, 4),
    source="KafkaApis.handleDescribeLogDirsRequest",
    family="describe-log-dirs",
)
async def log_dirs_none(s: RuleSession, version: int) -> None:
    """DescribeLogDirs with an empty topic list describes the log dirs with no partitions."""
    topic, _ = await s.create_topic()
    body = await log_dirs(s, version, topic, [])
    expect("topics", [t.name for r in body.results for t in r.topics], [])


@rule(
    "describe-log-dirs.size-counts-appended-bytes",
    api=DESCRIBE_LOG_DIRS,
    versions=(1, 4),
    source="ReplicaManager.describeLogDirs UnifiedLog.size",
    family="describe-log-dirs",
)
async def log_dirs_size(s: RuleSession, version: int) -> None:
    """A partition's size is 0 before any append and grows by at least the batch appended to it."""
    topic, topic_id = await s.create_topic()
    asked = [DescribeLogDirsRequest.DescribableLogDirTopic(topic=topic, partitions=[0])]

    async def size() -> int:
        body = await log_dirs(s, version, topic, asked)
        sizes = [p.partition_size for r in body.results for t in r.topics for p in t.partitions]
        expect("partition listed once", len(sizes), 1)
        return sizes[0]

    expect("size before", await size(), 0)
    records = batch(5)
    produce = s.versions[PRODUCE][1]
    leader = await s.leader(topic)
    answer = await s.call(leader, PRODUCE, produce, produce_request(topic, records, topic_id=topic_id))
    expect_error("produce error_code", answer.responses[0].partition_responses[0].error_code, Errors.NONE)
    expect("size grew by the batch", await size() >= len(records), True)


@rule(
    "describe-log-dirs.top-level-error-none",
    api=DESCRIBE_LOG_DIRS,
    versions=(3, 4),
    source="KafkaApis.handleDescribeLogDirsRequest",
    family="describe-log-dirs",
)
async def log_dirs_error_none(s: RuleSession, version: int) -> None:
    """From v3, an authorized DescribeLogDirs answers with top-level error NONE and each dir NONE."""
    topic, _ = await s.create_topic()
    body = await log_dirs(s, version, topic, None)
    expect_error("error_code", body.error_code, Errors.NONE)
    expect("dir error codes", {r.error_code for r in body.results}, {Errors.NONE})


# ---- DescribeProducers -----------------------------------------------------------------------------


async def describe_producers(s: RuleSession, topic: str, *asked: tuple[str, list[int]]):
    request = DescribeProducersRequest(
        topics=[DescribeProducersRequest.TopicRequest(name=n, partition_indexes=p) for n, p in asked]
    )
    return (await s.call(await s.leader(topic), DESCRIBE_PRODUCERS, 0, request)).topics


_PRODUCERS_REFUSED = [
    ("unknown-partition", Errors.UNKNOWN_TOPIC_OR_PARTITION, lambda s, t: (t, [9]),
     "ReplicaManager.activeProducerState getPartitionOrError",
     "a partition the topic lacks is answered UNKNOWN_TOPIC_OR_PARTITION"),
    ("unknown-topic", Errors.UNKNOWN_TOPIC_OR_PARTITION, lambda s, t: (s.name("absent"), [0]),
     "KafkaApis.handleDescribeProducersRequest metadataCache.contains",
     "a topic that does not exist is answered UNKNOWN_TOPIC_OR_PARTITION"),
    ("illegal-topic-name", Errors.INVALID_TOPIC_EXCEPTION, lambda s, t: ("bad name!", [0]),
     "KafkaApis.handleDescribeProducersRequest Topic.validate",
     "a topic whose name is illegal is answered INVALID_TOPIC_EXCEPTION"),
]  # fmt: skip
for _case, _error, _asked, _source, _text in _PRODUCERS_REFUSED:

    def _producers_check(error=_error, asked=_asked):
        async def check(s: RuleSession, version: int) -> None:
            topic, _ = await s.create_topic()
            [answer] = await describe_producers(s, topic, asked(s, topic))
            expect("partition error codes", [p.error_code for p in answer.partitions], [error])

        return check

    add(
        Rule(
            id=f"describe-producers.{_case}",
            api=DESCRIBE_PRODUCERS,
            versions=(0, 0),
            source=_source,
            text=f"In DescribeProducers, {_text}.",
            check=_producers_check(),
            family="describe-producers",
        )
    )


@rule(
    "describe-producers.none-before-idempotent-appends",
    api=DESCRIBE_PRODUCERS,
    versions=(0, 0),
    source="ReplicaManager.activeProducerState",
    family="describe-producers",
)
async def producers_none(s: RuleSession, version: int) -> None:
    """A partition no idempotent producer has written to is answered NONE with no active producers."""
    topic, _ = await s.create_topic()
    [answer] = await describe_producers(s, topic, (topic, [0]))
    [part] = answer.partitions
    expect_error("error_code", part.error_code, Errors.NONE)
    expect("active_producers", part.active_producers, [])


@rule(
    "describe-producers.lists-idempotent-producer",
    api=DESCRIBE_PRODUCERS,
    versions=(0, 0),
    source="ReplicaManager.activeProducerState ProducerStateManager.activeProducers",
    family="describe-producers",
)
async def producers_listed(s: RuleSession, version: int) -> None:
    """After an idempotent producer appends 3 then 2 records, the partition lists it with its epoch and
    last sequence 4, and no transaction (current_txn_start_offset -1)."""
    topic, topic_id = await s.create_topic()
    init_version = min(s.versions[INIT_PRODUCER_ID][1], 4)
    init = await s.call(
        await s.raw(),
        INIT_PRODUCER_ID,
        init_version,
        InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000),
    )
    expect_error("init error_code", init.error_code, Errors.NONE)
    pid, epoch = init.producer_id, init.producer_epoch
    leader = await s.leader(topic)
    produce = s.versions[PRODUCE][1]
    for base, count in ((0, 3), (3, 2)):
        records = batch(count, producer_id=pid, producer_epoch=epoch, base_sequence=base)
        answer = await s.call(leader, PRODUCE, produce, produce_request(topic, records, topic_id=topic_id))
        expect_error("produce error_code", answer.responses[0].partition_responses[0].error_code, Errors.NONE)
    [answer] = await describe_producers(s, topic, (topic, [0]))
    [part] = answer.partitions
    expect_error("error_code", part.error_code, Errors.NONE)
    got = [
        (p.producer_id, p.producer_epoch, p.last_sequence, p.current_txn_start_offset)
        for p in part.active_producers
    ]
    expect("active_producers", got, [(pid, epoch, 4, -1)])
