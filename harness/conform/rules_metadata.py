"""Rules of what a broker describes of the cluster: Metadata (topics asked for by name, by id or all of
them, unknown and illegal topic names, without auto-creation: a target's auto.create.topics.enable is
not ours to rely on; brokers and partitions), DescribeCluster, DescribeLogDirs and DescribeProducers."""

from __future__ import annotations

import uuid

from kconform.codecs import CodecError
from kconform.codecs.errors import Errors
from kconform.codecs.messages import (
    MetadataRequest,
)

from .catalogue import Rule, RuleFailed, add, rule
from .requests import metadata_request
from .session import RuleSession, expect, expect_error

METADATA, PRODUCE, INIT_PRODUCER_ID = 3, 0, 22
DESCRIBE_LOG_DIRS, DESCRIBE_CLUSTER, DESCRIBE_PRODUCERS = 35, 60, 61
INT_MIN = -(2**31)
FAMILY = "metadata"

# Topic.validate: at most 249 characters of [a-zA-Z0-9._-], and neither "." nor "..".
ILLEGAL_NAMES = {
    "empty": "",
    "dot": ".",
    "dot-dot": "..",
    "too-long": "x" * 250,
    "bad-characters": "bad name!",
}


def _request(version: int, *names: str) -> MetadataRequest:
    """Named topics without auto-creation (the flag exists from v4; before, Kafka always allowed it)."""
    return metadata_request(*names, auto_create=version < 4)


async def _metadata(s: RuleSession, version: int, *names: str):
    return await _call(s, version, _request(version, *names))


async def _call(s: RuleSession, version: int, request: MetadataRequest):
    """The Metadata answer at ``version``; one that does not decode at that version fails the rule (a
    Kafka broker answers in the layout of the version asked for)."""
    try:
        return await s.call(await s.raw(), METADATA, version, request)
    except CodecError as exc:
        raise RuleFailed("response", f"a MetadataResponse v{version}", f"not readable: {exc}") from None


def _illegal_name_check(name: str):
    async def check(s: RuleSession, version: int) -> None:
        body = await _metadata(s, version, name)
        expect("topics count", len(body.topics), 1)
        expect_error("topics[0].error_code", body.topics[0].error_code, Errors.INVALID_TOPIC_EXCEPTION)

    return check


# KafkaApis.getTopicMetadata: a topic the cache does not know is checked with Topic.validate before
# anything else (with or without auto-creation): an illegal name is INVALID_TOPIC_EXCEPTION.
for _case, _name in ILLEGAL_NAMES.items():
    add(
        Rule(
            id=f"metadata.illegal-topic-name.{_case}",
            api=METADATA,
            versions=(4, 13),
            source="KafkaApis.getTopicMetadata Topic.validate",
            text=f"Metadata for a topic whose name is illegal ({_case.replace('-', ' ')}) answers that "
            "topic with INVALID_TOPIC_EXCEPTION.",
            check=_illegal_name_check(_name),
            family=FAMILY,
        )
    )


@rule(
    "metadata.unknown-topic-without-auto-creation",
    api=METADATA,
    versions=(4, 13),
    source="KafkaApis.getTopicMetadata allowAutoTopicCreation",
    family=FAMILY,
)
async def unknown_topic_without_auto_creation(s: RuleSession, version: int) -> None:
    """Metadata for an unknown topic with allow_auto_topic_creation false answers it with
    UNKNOWN_TOPIC_OR_PARTITION and no partitions, and does not create it."""
    name = s.name("absent")
    for attempt in ("first", "second"):
        body = await _metadata(s, version, name)
        topic = body.topics[0]
        expect(f"{attempt} topics[0].name", topic.name, name)
        expect_error(f"{attempt} topics[0].error_code", topic.error_code, Errors.UNKNOWN_TOPIC_OR_PARTITION)
        expect(f"{attempt} topics[0].partitions", topic.partitions, [])


@rule(
    "metadata.longest-legal-name-is-unknown-not-illegal",
    api=METADATA,
    versions=(4, 13),
    source="KafkaApis.getTopicMetadata Topic.validate",
    family=FAMILY,
)
async def longest_legal_name(s: RuleSession, version: int) -> None:
    """A topic name of exactly 249 legal characters passes Topic.validate: unknown, it is answered with
    UNKNOWN_TOPIC_OR_PARTITION rather than INVALID_TOPIC_EXCEPTION."""
    name = s.name("n").ljust(249, "x")
    body = await _metadata(s, version, name)
    expect_error("topics[0].error_code", body.topics[0].error_code, Errors.UNKNOWN_TOPIC_OR_PARTITION)


@rule(
    "metadata.named-topic-lists-its-partitions",
    api=METADATA,
    versions=(0, 13),
    source="KafkaApis.getTopicMetadata metadataCache.getTopicMetadata",
    family=FAMILY,
)
async def named_topic_partitions(s: RuleSession, version: int) -> None:
    """Metadata for an existing topic answers it with NONE and every partition, each with NONE and a
    leader that is one of its replicas and in its ISR."""
    topic, _ = await s.create_topic(partitions=3)
    body = await _metadata(s, version, topic)
    [answer] = body.topics
    expect_error("topics[0].error_code", answer.error_code, Errors.NONE)
    expect("partition indexes", sorted(p.partition_index for p in answer.partitions), [0, 1, 2])
    for p in answer.partitions:
        expect_error(f"partitions[{p.partition_index}].error_code", p.error_code, Errors.NONE)
        expect(f"partitions[{p.partition_index}] leader in replicas", p.leader_id in p.replica_nodes, True)
        expect(f"partitions[{p.partition_index}] leader in isr", p.leader_id in p.isr_nodes, True)


@rule(
    "metadata.leaders-are-listed-brokers",
    api=METADATA,
    versions=(0, 13),
    source="KafkaApis.handleTopicMetadataRequest metadataCache.getAliveBrokerNodes",
    family=FAMILY,
)
async def leaders_are_listed_brokers(s: RuleSession, version: int) -> None:
    """Every partition leader a Metadata answer names is one of the brokers the same answer lists."""
    topic, _ = await s.create_topic(partitions=2)
    body = await _metadata(s, version, topic)
    brokers = {b.node_id for b in body.brokers}
    leaders = {p.leader_id for t in body.topics for p in t.partitions}
    expect("leaders not among brokers", sorted(leaders - brokers), [])


@rule(
    "metadata.all-topics-when-topics-null",
    api=METADATA,
    versions=(1, 13),
    source="KafkaApis.getTopicMetadata MetadataRequest.isAllTopics",
    family=FAMILY,
)
async def all_topics_when_null(s: RuleSession, version: int) -> None:
    """From v1, Metadata with a null topic list answers every topic, including one just created."""
    topic, _ = await s.create_topic()
    body = await _call(s, version, _request(version))
    names = {t.name: t.error_code for t in body.topics}
    expect(f"topic {topic} listed", topic in names, True)
    expect_error(f"topics[{topic}].error_code", names[topic], Errors.NONE)


@rule(
    "metadata.no-topics-when-topics-empty",
    api=METADATA,
    versions=(1, 13),
    source="KafkaApis.handleTopicMetadataRequest topics.isEmpty",
    family=FAMILY,
)
async def no_topics_when_empty(s: RuleSession, version: int) -> None:
    """From v1, Metadata with an empty (not null) topic list answers no topics, only the brokers."""
    await s.create_topic()
    body = await _call(s, version, MetadataRequest(topics=[]))
    expect("topics", [t.name for t in body.topics], [])
    expect("brokers listed", len(body.brokers) > 0, True)


@rule(
    "metadata.topic-named-twice-answered-once",
    api=METADATA,
    versions=(1, 13),
    source="KafkaApis.handleTopicMetadataRequest topics.toSet",
    family=FAMILY,
)
async def topic_named_twice(s: RuleSession, version: int) -> None:
    """A topic named twice in one Metadata request is answered once (Kafka takes the names as a set)."""
    topic, _ = await s.create_topic()
    body = await _metadata(s, version, topic, topic)
    expect("topics", [t.name for t in body.topics], [topic])


@rule(
    "metadata.user-topic-is-not-internal",
    api=METADATA,
    versions=(1, 13),
    source="MetadataResponse.TopicMetadata Topic.isInternal",
    family=FAMILY,
)
async def user_topic_not_internal(s: RuleSession, version: int) -> None:
    """From v1, a topic created by a client is answered with is_internal false."""
    topic, _ = await s.create_topic()
    body = await _metadata(s, version, topic)
    expect("topics[0].is_internal", body.topics[0].is_internal, False)


@rule(
    "metadata.controller-id-is-a-listed-broker",
    api=METADATA,
    versions=(1, 13),
    source="KafkaApis.handleTopicMetadataRequest metadataCache.getRandomAliveBrokerId",
    family=FAMILY,
)
async def controller_id_listed(s: RuleSession, version: int) -> None:
    """From v1, the controller_id of a Metadata answer is one of the brokers it lists (a KRaft broker
    names a live broker, as clients send controller requests to brokers)."""
    body = await _metadata(s, version)
    expect("controller_id among brokers", body.controller_id in {b.node_id for b in body.brokers}, True)


@rule(
    "metadata.cluster-id-set",
    api=METADATA,
    versions=(2, 13),
    source="KafkaApis.handleTopicMetadataRequest clusterId",
    family=FAMILY,
)
async def cluster_id_set(s: RuleSession, version: int) -> None:
    """From v2, a Metadata answer carries the cluster id, the same on every request."""
    first = await _metadata(s, version)
    second = await _metadata(s, version)
    expect("cluster_id set", bool(first.cluster_id), True)
    expect("cluster_id again", second.cluster_id, first.cluster_id)


@rule(
    "metadata.leader-epoch-known",
    api=METADATA,
    versions=(7, 13),
    source="KRaftMetadataCache.getPartitionMetadata leaderEpoch",
    family=FAMILY,
)
async def leader_epoch_known(s: RuleSession, version: int) -> None:
    """From v7, each partition of an existing topic carries its leader epoch, 0 or more."""
    topic, _ = await s.create_topic(partitions=2)
    body = await _metadata(s, version, topic)
    epochs = [p.leader_epoch for p in body.topics[0].partitions]
    expect("leader epochs below 0", [e for e in epochs if e < 0], [])


@rule(
    "metadata.topic-authorized-operations-omitted",
    api=METADATA,
    versions=(8, 13),
    source="KafkaApis.handleTopicMetadataRequest includeTopicAuthorizedOperations",
    family=FAMILY,
)
async def topic_operations_omitted(s: RuleSession, version: int) -> None:
    """From v8, a topic's authorized operations are left at INT_MIN unless the request asks for them."""
    topic, _ = await s.create_topic()
    body = await _metadata(s, version, topic)
    expect("topics[0].topic_authorized_operations", body.topics[0].topic_authorized_operations, INT_MIN)


@rule(
    "metadata.topic-id-returned",
    api=METADATA,
    versions=(10, 13),
    source="KRaftMetadataCache.getTopicMetadata topicId",
    family=FAMILY,
)
async def topic_id_returned(s: RuleSession, version: int) -> None:
    """From v10, an existing topic is answered with its topic id, not the zero UUID; an unknown one with
    the zero UUID."""
    topic, _ = await s.create_topic()
    absent = s.name("absent")
    body = await _metadata(s, version, topic, absent)
    ids = {t.name: t.topic_id for t in body.topics}
    expect(f"topics[{topic}].topic_id non-zero", ids.get(topic, uuid.UUID(int=0)).int != 0, True)
    expect(f"topics[{absent}].topic_id", ids.get(absent), uuid.UUID(int=0))


def _by_id(topic_id, name: str | None = None) -> MetadataRequest:
    return MetadataRequest(
        topics=[MetadataRequest.MetadataRequestTopic(name=name, topic_id=topic_id)],
        allow_auto_topic_creation=False,
    )


@rule(
    "metadata.topic-id-below-v12-invalid-request",
    api=METADATA,
    versions=(10, 11),
    source="KafkaApis.handleTopicMetadataRequest topicId before v12",
    family=FAMILY,
)
async def topic_id_below_v12(s: RuleSession, version: int) -> None:
    """Before v12, a topic asked for with a topic id fails the request: every topic is answered with
    INVALID_REQUEST."""
    topic, topic_id = await s.create_topic()
    body = await _call(s, version, _by_id(topic_id, topic))
    expect("error codes", [t.error_code for t in body.topics], [Errors.INVALID_REQUEST])


@rule(
    "metadata.null-name-below-v12-invalid-request",
    api=METADATA,
    versions=(10, 11),
    source="KafkaApis.handleTopicMetadataRequest null name before v12",
    family=FAMILY,
)
async def null_name_below_v12(s: RuleSession, version: int) -> None:
    """Before v12, a topic asked for with a null name fails the request: every topic is answered with
    INVALID_REQUEST."""
    _, topic_id = await s.create_topic()
    body = await _call(s, version, _by_id(topic_id))
    expect("error codes", [t.error_code for t in body.topics], [Errors.INVALID_REQUEST])


@rule(
    "metadata.by-topic-id",
    api=METADATA,
    versions=(12, 13),
    source="KafkaApis.handleTopicMetadataRequest metadataCache.getTopicName",
    family=FAMILY,
)
async def by_topic_id(s: RuleSession, version: int) -> None:
    """From v12, a topic asked for by id alone (null name) is answered with its name, id and
    partitions."""
    topic, topic_id = await s.create_topic(partitions=2)
    body = await _call(s, version, _by_id(topic_id))
    [answer] = body.topics
    expect_error("topics[0].error_code", answer.error_code, Errors.NONE)
    expect("topics[0].name", answer.name, topic)
    expect("topics[0].topic_id", answer.topic_id, topic_id)
    expect("partitions", len(answer.partitions), 2)


@rule(
    "metadata.unknown-topic-id",
    api=METADATA,
    versions=(12, 13),
    source="KafkaApis.handleTopicMetadataRequest unknownTopicIds",
    family=FAMILY,
)
async def unknown_topic_id(s: RuleSession, version: int) -> None:
    """From v12, a topic id no topic has is answered with UNKNOWN_TOPIC_ID and a null name."""
    missing = uuid.uuid4()
    body = await _call(s, version, _by_id(missing))
    [answer] = body.topics
    expect_error("topics[0].error_code", answer.error_code, Errors.UNKNOWN_TOPIC_ID)
    expect("topics[0].topic_id", answer.topic_id, missing)
    expect("topics[0].name", answer.name, None)


@rule(
    "metadata.v13-top-level-error-none",
    api=METADATA,
    versions=(13, 13),
    source="MetadataResponse.prepareResponse errorCode",
    family=FAMILY,
    since="4.0",
)
async def v13_top_level_error(s: RuleSession, version: int) -> None:
    """At v13 the top-level error code is NONE, also when the topics asked for are unknown (KIP-1102)."""
    body = await _metadata(s, version, s.name("absent"))
    expect_error("error_code", body.error_code, Errors.NONE)
