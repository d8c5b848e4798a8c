"""Rules of topic administration: CreateTopics (names, counts, assignments, configs, validate_only),
DeleteTopics (by name and by id) and CreatePartitions. A KRaft broker forwards these to the controller,
so the decisions are the controller's (ReplicationControlManager, ConfigurationControlManager)."""

from __future__ import annotations

import asyncio
import time

from kconform.codecs.errors import Errors
from kconform.codecs.messages import (
    CreateTopicsRequest,
    MetadataRequest,
)

from .catalogue import Rule, add, rule
from .requests import metadata_request
from .rules_metadata import ILLEGAL_NAMES
from .session import RuleSession, _error_name, expect, expect_error

METADATA, CREATE_TOPICS, DELETE_TOPICS, CREATE_PARTITIONS = 3, 19, 20, 37
CREATE_TOPICS_VERSIONS = (2, 7)  # Kafka 4.0 serves 2-7; every check below reads fields of v2 on
TIMEOUT_MS = 10_000


def new_topic(name: str, partitions: int = 1, factor: int = -1, assignments=(), **configs: str):
    """A topic to create; replication factor -1 (the broker default) unless given, from v4 on."""
    return CreateTopicsRequest.CreatableTopic(
        name=name,
        num_partitions=partitions,
        replication_factor=factor,
        assignments=[
            CreateTopicsRequest.CreatableReplicaAssignment(partition_index=i, broker_ids=list(ids))
            for i, ids in assignments
        ],
        configs=[CreateTopicsRequest.CreatableTopicConfig(name=k, value=v) for k, v in configs.items()],
    )


def _factor(version: int) -> int:
    """The default replication factor (-1) is understood from v4; before, ask for one replica."""
    return -1 if version >= 4 else 1


async def create_topics(s: RuleSession, version: int, *topics, validate_only: bool = False):
    request = CreateTopicsRequest(topics=list(topics), timeout_ms=TIMEOUT_MS, validate_only=validate_only)
    return (await s.call(await s.raw(), CREATE_TOPICS, version, request)).topics


async def topic_state(s: RuleSession, name: str):
    """The Metadata answer for ``name`` (no auto-creation), at the target's newest version up to 12."""
    version = s.setup_version(METADATA, 12)
    body = await s.call(await s.raw(), METADATA, version, metadata_request(name))
    return body.topics[0]


async def eventually(read, ok, timeout_s: float = 10.0):
    """``read()`` again until ``ok`` holds of it or the time is up; the last value read. Brokers learn
    a controller's change from the metadata log, so a change shows on every broker only after a while."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = await read()
        if ok(value) or time.monotonic() > deadline:
            return value
        await asyncio.sleep(0.2)


async def settled_state(s: RuleSession, name: str, ok):
    return await eventually(lambda: topic_state(s, name), ok)


async def expect_gone(s: RuleSession, name: str) -> None:
    """A deleted topic: unknown to Metadata, once the broker has learnt of the deletion."""
    state = await settled_state(s, name, lambda t: t.error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION)
    expect_error("metadata error_code afterwards", state.error_code, Errors.UNKNOWN_TOPIC_OR_PARTITION)


async def broker_ids(s: RuleSession) -> list[int]:
    version = s.setup_version(METADATA, 12)
    body = await s.call(await s.raw(), METADATA, version, MetadataRequest(topics=[]))
    return sorted(b.node_id for b in body.brokers)


async def expect_not_created(s: RuleSession, name: str) -> None:
    state = await topic_state(s, name)
    expect_error("metadata error_code afterwards", state.error_code, Errors.UNKNOWN_TOPIC_OR_PARTITION)


def _refused(error: Errors, **spec):
    """A check creating one topic from ``spec`` that must fail with ``error`` and create nothing."""

    async def check(s: RuleSession, version: int) -> None:
        name = spec.get("name", s.name("t"))
        partitions = spec.get("partitions", 1)
        factor = spec.get("factor", _factor(version))
        configs = spec.get("configs", {})
        [result] = await create_topics(s, version, new_topic(name, partitions, factor, **configs))
        expect_error("topics[0].error_code", result.error_code, error)
        if "name" not in spec:  # an illegal name is not looked up afterwards
            await expect_not_created(s, name)

    return check


# ---- CreateTopics: names ---------------------------------------------------------------------------

# ReplicationControlManager.createTopics validates every name with Topic.validate first.
for _case, _name in ILLEGAL_NAMES.items():
    add(
        Rule(
            id=f"create-topics.illegal-name.{_case}",
            api=CREATE_TOPICS,
            versions=CREATE_TOPICS_VERSIONS,
            source="ReplicationControlManager.createTopics validateName",
            text=f"CreateTopics refuses a topic whose name is illegal ({_case.replace('-', ' ')}) with "
            "INVALID_TOPIC_EXCEPTION.",
            check=_refused(Errors.INVALID_TOPIC_EXCEPTION, name=_name),
            family="create-topics",
            once=True,
        )
    )


@rule(
    "create-topics.longest-legal-name",
    api=CREATE_TOPICS,
    versions=CREATE_TOPICS_VERSIONS,
    source="ReplicationControlManager.createTopics validateName",
    family="create-topics",
    once=True,
)
async def longest_legal_name(s: RuleSession, version: int) -> None:
    """CreateTopics accepts a name of exactly 249 legal characters, the longest Topic.validate allows."""
    name = s.name("n").ljust(249, "x")
    [result] = await create_topics(s, version, new_topic(name, factor=_factor(version)))
    expect_error("topics[0].error_code", result.error_code, Errors.NONE)


@rule(
    "create-topics.existing-topic",
    api=CREATE_TOPICS,
    versions=CREATE_TOPICS_VERSIONS,
    source="ReplicationControlManager.createTopic TOPIC_ALREADY_EXISTS",
    family="create-topics",
)
async def existing_topic(s: RuleSession, version: int) -> None:
    """Creating a topic that exists fails it with TOPIC_ALREADY_EXISTS and leaves it as it was."""
    topic, _ = await s.create_topic(partitions=2)
    [result] = await create_topics(s, version, new_topic(topic, 5, _factor(version)))
    expect_error("topics[0].error_code", result.error_code, Errors.TOPIC_ALREADY_EXISTS)
    expect("partitions afterwards", len((await topic_state(s, topic)).partitions), 2)


@rule(
    "create-topics.duplicate-name-in-request",
    api=CREATE_TOPICS,
    versions=CREATE_TOPICS_VERSIONS,
    source="ControllerApis.createTopics duplicateTopicNames",
    family="create-topics",
)
async def duplicate_name(s: RuleSession, version: int) -> None:
    """A topic named twice in one CreateTopics request is refused with INVALID_REQUEST and not created."""
    name = s.name("t")
    topic = new_topic(name, factor=_factor(version))
    results = await create_topics(s, version, topic, topic)
    expect("error codes", {r.error_code for r in results if r.name == name}, {Errors.INVALID_REQUEST})
    await expect_not_created(s, name)


# ---- CreateTopics: counts ----------------------------------------------------------------------------

_COUNTS = [
    ("zero-partitions", "partitions", 0, Errors.INVALID_PARTITIONS, "createTopic numPartitions"),
    ("partitions-below-minus-one", "partitions", -5, Errors.INVALID_PARTITIONS, "createTopic numPartitions"),
    (
        "zero-replication-factor",
        "factor",
        0,
        Errors.INVALID_REPLICATION_FACTOR,
        "createTopic replicationFactor",
    ),
    (
        "replication-factor-below-minus-one",
        "factor",
        -3,
        Errors.INVALID_REPLICATION_FACTOR,
        "createTopic replicationFactor",
    ),
]
for _case, _what, _value, _error, _branch in _COUNTS:
    add(
        Rule(
            id=f"create-topics.{_case}",
            api=CREATE_TOPICS,
            versions=CREATE_TOPICS_VERSIONS,
            source=f"ReplicationControlManager.{_branch}",
            text=f"CreateTopics with {'num_partitions' if _what == 'partitions' else 'replication_factor'} "
            f"{_value} refuses the topic with {_error_name(_error)} and creates nothing.",
            check=_refused(_error, **{_what: _value}),
            family="create-topics",
        )
    )


@rule(
    "create-topics.replication-factor-above-brokers",
    api=CREATE_TOPICS,
    versions=CREATE_TOPICS_VERSIONS,
    source="StripedReplicaPlacer.place InvalidReplicationFactorException",
    family="create-topics",
)
async def factor_above_brokers(s: RuleSession, version: int) -> None:
    """A replication factor above the number of registered brokers refuses the topic with
    INVALID_REPLICATION_FACTOR."""
    name = s.name("t")
    factor = len(await broker_ids(s)) + 1
    [result] = await create_topics(s, version, new_topic(name, 1, factor))
    expect_error("topics[0].error_code", result.error_code, Errors.INVALID_REPLICATION_FACTOR)
    await expect_not_created(s, name)


@rule(
    "create-topics.default-partitions-and-factor",
    api=CREATE_TOPICS,
    versions=(5, 7),
    source="ReplicationControlManager.createTopic defaultNumPartitions",
    family="create-topics",
)
async def default_counts(s: RuleSession, version: int) -> None:
    """num_partitions and replication_factor -1 take the broker defaults; from v5 the answer says the
    counts the topic was created with."""
    name = s.name("t")
    [result] = await create_topics(s, version, new_topic(name, -1, -1))
    expect_error("topics[0].error_code", result.error_code, Errors.NONE)
    state = await settled_state(s, name, lambda t: bool(t.partitions))
    expect("num_partitions", result.num_partitions, len(state.partitions))
    expect("replication_factor", result.replication_factor, len(state.partitions[0].replica_nodes))


@rule(
    "create-topics.returns-topic-id",
    api=CREATE_TOPICS,
    versions=(7, 7),
    source="ReplicationControlManager.createTopic setTopicId",
    family="create-topics",
)
async def returns_topic_id(s: RuleSession, version: int) -> None:
    """From v7, CreateTopics answers a created topic with the topic id Metadata then reports."""
    name = s.name("t")
    [result] = await create_topics(s, version, new_topic(name))
    expect_error("topics[0].error_code", result.error_code, Errors.NONE)
    expect("topic_id non-zero", result.topic_id.int != 0, True)
    state = await settled_state(s, name, lambda t: t.error_code == Errors.NONE)
    expect("metadata topic_id", state.topic_id, result.topic_id)


@rule(
    "create-topics.returns-configs",
    api=CREATE_TOPICS,
    versions=(5, 7),
    source="ReplicationControlManager.createTopic computeEffectiveTopicConfigs",
    family="create-topics",
)
async def returns_configs(s: RuleSession, version: int) -> None:
    """From v5, CreateTopics answers a created topic with its configs, a config given in the request
    with that value and source TOPIC_CONFIG (1)."""
    name = s.name("t")
    topic = new_topic(name, **{"retention.ms": "3600000"})
    [result] = await create_topics(s, version, topic)
    expect_error("topics[0].error_code", result.error_code, Errors.NONE)
    configs = {c.name: (c.value, c.config_source) for c in result.configs or []}
    expect("configs[retention.ms]", configs.get("retention.ms"), ("3600000", 1))


# ---- CreateTopics: validate_only ---------------------------------------------------------------------


@rule(
    "create-topics.validate-only-creates-nothing",
    api=CREATE_TOPICS,
    versions=CREATE_TOPICS_VERSIONS,
    source="ControllerApis.createTopics validateOnly",
    family="create-topics",
)
async def validate_only_creates_nothing(s: RuleSession, version: int) -> None:
    """A valid topic in a validate_only CreateTopics is answered NONE but not created."""
    name = s.name("dry")
    [result] = await create_topics(s, version, new_topic(name, 3, _factor(version)), validate_only=True)
    expect_error("topics[0].error_code", result.error_code, Errors.NONE)
    await expect_not_created(s, name)


@rule(
    "create-topics.validate-only-still-validates",
    api=CREATE_TOPICS,
    versions=CREATE_TOPICS_VERSIONS,
    source="ReplicationControlManager.createTopic validateOnly",
    family="create-topics",
)
async def validate_only_validates(s: RuleSession, version: int) -> None:
    """A validate_only CreateTopics runs every check: zero partitions are still INVALID_PARTITIONS."""
    name = s.name("dry")
    [result] = await create_topics(s, version, new_topic(name, 0, _factor(version)), validate_only=True)
    expect_error("topics[0].error_code", result.error_code, Errors.INVALID_PARTITIONS)


# ---- CreateTopics: manual assignments ----------------------------------------------------------------


def _assignment_check(kind: str, error: Errors):
    async def check(s: RuleSession, version: int) -> None:
        name = s.name("t")
        first = (await broker_ids(s))[0]
        partitions, assignments = -1, [(0, [first])]
        if kind == "with-partition-count":
            partitions = 1
        elif kind == "unknown-broker":
            assignments = [(0, [first + 100_000])]
        elif kind == "duplicate-broker":
            assignments = [(0, [first, first])]
        elif kind == "gap-in-partitions":
            assignments = [(1, [first])]
        elif kind == "empty-replica-list":
            assignments = [(0, [first]), (1, [])]
        topic = new_topic(name, partitions, -1, assignments)
        [result] = await create_topics(s, version, topic)
        expect_error("topics[0].error_code", result.error_code, error)
        if error == Errors.NONE:
            state = await settled_state(s, name, lambda t: bool(t.partitions))
            expect("replicas of partition 0", state.partitions[0].replica_nodes, [first])
        else:
            await expect_not_created(s, name)

    return check


_ASSIGNMENTS = [
    ("accepted", Errors.NONE, "createTopic manual assignment", "a manual replica assignment on a "
     "registered broker is created as asked"),
    ("with-partition-count", Errors.INVALID_REQUEST, "createTopic numPartitions", "a manual assignment "
     "with num_partitions other than -1 is refused with INVALID_REQUEST"),
    ("unknown-broker", Errors.INVALID_REPLICA_ASSIGNMENT, "validateManualPartitionAssignment",
     "an assignment naming an unregistered broker is refused with INVALID_REPLICA_ASSIGNMENT"),
    ("duplicate-broker", Errors.INVALID_REPLICA_ASSIGNMENT, "validateManualPartitionAssignment",
     "an assignment naming a broker twice is refused with INVALID_REPLICA_ASSIGNMENT"),
    ("gap-in-partitions", Errors.INVALID_REPLICA_ASSIGNMENT, "createTopic partitionIndex",
     "assignments whose partition indexes do not run from 0 are refused with INVALID_REPLICA_ASSIGNMENT"),
    ("empty-replica-list", Errors.INVALID_REPLICA_ASSIGNMENT, "validateManualPartitionAssignment",
     "an assignment with no replicas is refused with INVALID_REPLICA_ASSIGNMENT"),
]  # fmt: skip
for _case, _error, _branch, _text in _ASSIGNMENTS:
    add(
        Rule(
            id=f"create-topics.assignment.{_case}",
            api=CREATE_TOPICS,
            versions=(4, 7),
            source=f"ReplicationControlManager.{_branch}",
            text=f"In CreateTopics, {_text}.",
            check=_assignment_check(_case, _error),
            family="create-topics",
        )
    )


# ---- CreateTopics: configs -------------------------------------------------------------------------

# LogConfig's ConfigDef: each topic config with a validator (or a type a string can fail), and a value
# it refuses. ConfigurationControlManager.validate parses them: a ConfigException is INVALID_CONFIG.
INVALID_TOPIC_CONFIGS = {
    "cleanup.policy": ("shred", "2.8"),
    "compression.type": ("brotli", "2.8"),
    "min.insync.replicas": ("0", "2.8"),
    "retention.ms": ("-2", "2.8"),
    "retention.bytes": ("lots", "2.8"),
    "segment.bytes": ("12", "2.8"),
    "segment.ms": ("0", "2.8"),
    "segment.jitter.ms": ("-1", "2.8"),
    "segment.index.bytes": ("3", "2.8"),
    "flush.messages": ("0", "2.8"),
    "flush.ms": ("-1", "2.8"),
    "max.message.bytes": ("-1", "2.8"),
    "index.interval.bytes": ("-1", "2.8"),
    "delete.retention.ms": ("-1", "2.8"),
    "min.compaction.lag.ms": ("-1", "2.8"),
    "max.compaction.lag.ms": ("0", "2.8"),
    "file.delete.delay.ms": ("-1", "2.8"),
    "min.cleanable.dirty.ratio": ("1.5", "2.8"),
    "message.timestamp.type": ("WallClock", "2.8"),
    "unclean.leader.election.enable": ("maybe", "2.8"),
    "preallocate": ("maybe", "2.8"),
    "leader.replication.throttled.replicas": ("everything", "2.8"),
    "follower.replication.throttled.replicas": ("everything", "2.8"),
    "message.timestamp.before.max.ms": ("-1", "3.6"),
    "message.timestamp.after.max.ms": ("-1", "3.6"),
    "local.retention.ms": ("-3", "3.6"),
    "local.retention.bytes": ("-3", "3.6"),
    "compression.gzip.level": ("10", "3.8"),
    "compression.lz4.level": ("18", "3.8"),
    "compression.zstd.level": ("23", "3.8"),
}


def _config_refused(name: str, value: str):
    async def check(s: RuleSession, version: int) -> None:
        topic = s.name("t")
        [result] = await create_topics(s, version, new_topic(topic, 1, _factor(version), **{name: value}))
        expect_error("topics[0].error_code", result.error_code, Errors.INVALID_CONFIG)
        await expect_not_created(s, topic)

    return check


for _config, (_value, _since) in INVALID_TOPIC_CONFIGS.items():
    add(
        Rule(
            id=f"create-topics.invalid-config.{_config.replace('.', '-')}",
            api=CREATE_TOPICS,
            versions=CREATE_TOPICS_VERSIONS,
            source=f"ConfigurationControlManager.validate LogConfig {_config}",
            text=f"CreateTopics refuses a topic with {_config}={_value!r}, a value LogConfig's validator "
            "rejects, with INVALID_CONFIG and creates nothing.",
            check=_config_refused(_config, _value),
            family="create-topics",
            since=_since,
            once=True,
        )
    )

add(
    Rule(
        id="create-topics.invalid-config.unknown-name",
        api=CREATE_TOPICS,
        versions=CREATE_TOPICS_VERSIONS,
        source="ControllerConfigurationValidator.validate unknown topic config",
        text="CreateTopics refuses a topic with a config name Kafka does not define with INVALID_CONFIG.",
        check=_config_refused("no.such.config", "1"),
        family="create-topics",
        once=True,
    )
)
