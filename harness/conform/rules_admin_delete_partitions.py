"""Rules of deleting topics and adding partitions: DeleteTopics and CreatePartitions."""

from __future__ import annotations

import uuid

from kconform.codecs.errors import Errors
from kconform.codecs.messages import (
    CreatePartitionsRequest,
    DeleteTopicsRequest,
)

from .catalogue import Rule, add, rule
from .rules_admin import (
    CREATE_PARTITIONS,
    DELETE_TOPICS,
    TIMEOUT_MS,
    broker_ids,
    expect_gone,
    settled_state,
    topic_state,
)
from .session import RuleSession, expect, expect_error

# ---- DeleteTopics ----------------------------------------------------------------------------------


def _delete_request(version: int, names=(), ids=()) -> DeleteTopicsRequest:
    """Names go in topic_names before v6 and in topics from v6 (where ids can go too)."""
    if version < 6:
        return DeleteTopicsRequest(topic_names=list(names), timeout_ms=TIMEOUT_MS)
    states = [DeleteTopicsRequest.DeleteTopicState(name=n) for n in names]
    states += [DeleteTopicsRequest.DeleteTopicState(name=None, topic_id=i) for i in ids]
    return DeleteTopicsRequest(topics=states, timeout_ms=TIMEOUT_MS)


async def delete_topics(s: RuleSession, version: int, request: DeleteTopicsRequest):
    return (await s.call(await s.raw(), DELETE_TOPICS, version, request)).responses


@rule(
    "delete-topics.by-name",
    api=DELETE_TOPICS,
    versions=(1, 6),
    source="ReplicationControlManager.deleteTopics",
    family="delete-topics",
)
async def delete_by_name(s: RuleSession, version: int) -> None:
    """DeleteTopics by name answers NONE and the topic is gone from Metadata."""
    topic, _ = await s.create_topic()
    [result] = await delete_topics(s, version, _delete_request(version, [topic]))
    expect_error("responses[0].error_code", result.error_code, Errors.NONE)
    expect("responses[0].name", result.name, topic)
    await expect_gone(s, topic)


@rule(
    "delete-topics.unknown-name",
    api=DELETE_TOPICS,
    versions=(1, 6),
    source="ReplicationControlManager.deleteTopics UNKNOWN_TOPIC_OR_PARTITION",
    family="delete-topics",
)
async def delete_unknown_name(s: RuleSession, version: int) -> None:
    """DeleteTopics of a name no topic has answers it with UNKNOWN_TOPIC_OR_PARTITION."""
    [result] = await delete_topics(s, version, _delete_request(version, [s.name("absent")]))
    expect_error("responses[0].error_code", result.error_code, Errors.UNKNOWN_TOPIC_OR_PARTITION)


@rule(
    "delete-topics.by-id",
    api=DELETE_TOPICS,
    versions=(6, 6),
    source="ControllerApis.deleteTopics providedIds",
    family="delete-topics",
)
async def delete_by_id(s: RuleSession, version: int) -> None:
    """From v6, DeleteTopics by topic id answers NONE with the topic's name and id, and deletes it."""
    topic, topic_id = await s.create_topic()
    [result] = await delete_topics(s, version, _delete_request(version, ids=[topic_id]))
    expect_error("responses[0].error_code", result.error_code, Errors.NONE)
    expect("responses[0].topic_id", result.topic_id, topic_id)
    expect("responses[0].name", result.name, topic)
    await expect_gone(s, topic)


@rule(
    "delete-topics.unknown-id",
    api=DELETE_TOPICS,
    versions=(6, 6),
    source="ControllerApis.deleteTopics UNKNOWN_TOPIC_ID",
    family="delete-topics",
)
async def delete_unknown_id(s: RuleSession, version: int) -> None:
    """From v6, DeleteTopics of a topic id no topic has answers it with UNKNOWN_TOPIC_ID."""
    missing = uuid.uuid4()
    [result] = await delete_topics(s, version, _delete_request(version, ids=[missing]))
    expect_error("responses[0].error_code", result.error_code, Errors.UNKNOWN_TOPIC_ID)


@rule(
    "delete-topics.name-and-id-together",
    api=DELETE_TOPICS,
    versions=(6, 6),
    source="ControllerApis.deleteTopics both name and id",
    family="delete-topics",
)
async def delete_name_and_id(s: RuleSession, version: int) -> None:
    """From v6, a DeleteTopics entry giving both a name and an id is refused with INVALID_REQUEST and
    the topic stays."""
    topic, topic_id = await s.create_topic()
    request = DeleteTopicsRequest(
        topics=[DeleteTopicsRequest.DeleteTopicState(name=topic, topic_id=topic_id)], timeout_ms=TIMEOUT_MS
    )
    [result] = await delete_topics(s, version, request)
    expect_error("responses[0].error_code", result.error_code, Errors.INVALID_REQUEST)
    expect_error("metadata error_code", (await topic_state(s, topic)).error_code, Errors.NONE)


@rule(
    "delete-topics.duplicate-name",
    api=DELETE_TOPICS,
    versions=(1, 6),
    source="ControllerApis.deleteTopics duplicateProvidedNames",
    family="delete-topics",
)
async def delete_duplicate_name(s: RuleSession, version: int) -> None:
    """A name given twice in one DeleteTopics is refused with INVALID_REQUEST and the topic stays."""
    topic, _ = await s.create_topic()
    results = await delete_topics(s, version, _delete_request(version, [topic, topic]))
    expect("error codes", {r.error_code for r in results}, {Errors.INVALID_REQUEST})
    expect_error("metadata error_code", (await topic_state(s, topic)).error_code, Errors.NONE)


# ---- CreatePartitions ------------------------------------------------------------------------------


async def create_partitions(s: RuleSession, version: int, *topics, validate_only: bool = False):
    request = CreatePartitionsRequest(topics=list(topics), timeout_ms=TIMEOUT_MS, validate_only=validate_only)
    return (await s.call(await s.raw(), CREATE_PARTITIONS, version, request)).results


def _grow(name: str, count: int, assignments=None):
    return CreatePartitionsRequest.CreatePartitionsTopic(
        name=name,
        count=count,
        assignments=None
        if assignments is None
        else [CreatePartitionsRequest.CreatePartitionsAssignment(broker_ids=ids) for ids in assignments],
    )


def _partitions_refused(count_of, error: Errors, assignments_of=None, validate_only=False):
    async def check(s: RuleSession, version: int) -> None:
        topic, _ = await s.create_topic(partitions=3)
        first = (await broker_ids(s))[0]
        assignments = assignments_of(first) if assignments_of else None
        [result] = await create_partitions(
            s, version, _grow(topic, count_of, assignments), validate_only=validate_only
        )
        expect_error("results[0].error_code", result.error_code, error)
        expect("partitions afterwards", len((await topic_state(s, topic)).partitions), 3)

    return check


_PARTITIONS = [
    ("decrease", 2, None, Errors.INVALID_PARTITIONS, "createPartitions",
     "asking for fewer partitions than the topic has is refused with INVALID_PARTITIONS"),
    ("same-count", 3, None, Errors.INVALID_PARTITIONS, "createPartitions",
     "asking for as many partitions as the topic has is refused with INVALID_PARTITIONS"),
    ("assignment-count-mismatch", 5, lambda b: [[b]], Errors.INVALID_REPLICA_ASSIGNMENT,
     "createPartitions assignments size", "assignments for fewer new partitions than added are refused "
     "with INVALID_REPLICA_ASSIGNMENT"),
]  # fmt: skip
for _case, _count, _assign, _error, _branch, _text in _PARTITIONS:
    add(
        Rule(
            id=f"create-partitions.{_case}",
            api=CREATE_PARTITIONS,
            versions=(0, 3),
            source=f"ReplicationControlManager.{_branch}",
            text=f"In CreatePartitions, {_text}, and the topic keeps its partitions.",
            check=_partitions_refused(_count, _error, _assign),
            family="create-partitions",
        )
    )


@rule(
    "create-partitions.unknown-topic",
    api=CREATE_PARTITIONS,
    versions=(0, 3),
    source="ReplicationControlManager.createPartitions UNKNOWN_TOPIC_OR_PARTITION",
    family="create-partitions",
)
async def partitions_unknown_topic(s: RuleSession, version: int) -> None:
    """CreatePartitions for a topic that does not exist answers it with UNKNOWN_TOPIC_OR_PARTITION."""
    [result] = await create_partitions(s, version, _grow(s.name("absent"), 3))
    expect_error("results[0].error_code", result.error_code, Errors.UNKNOWN_TOPIC_OR_PARTITION)


@rule(
    "create-partitions.increase",
    api=CREATE_PARTITIONS,
    versions=(0, 3),
    source="ReplicationControlManager.createPartitions",
    family="create-partitions",
)
async def partitions_increase(s: RuleSession, version: int) -> None:
    """CreatePartitions to a larger count answers NONE and the topic then has that many partitions."""
    topic, _ = await s.create_topic(partitions=1)
    [result] = await create_partitions(s, version, _grow(topic, 3))
    expect_error("results[0].error_code", result.error_code, Errors.NONE)
    state = await settled_state(s, topic, lambda t: len(t.partitions) == 3)
    expect("partitions afterwards", len(state.partitions), 3)


@rule(
    "create-partitions.validate-only-changes-nothing",
    api=CREATE_PARTITIONS,
    versions=(0, 3),
    source="ControllerApis.createPartitions validateOnly",
    family="create-partitions",
)
async def partitions_validate_only(s: RuleSession, version: int) -> None:
    """A validate_only CreatePartitions to a larger count answers NONE and adds no partition."""
    topic, _ = await s.create_topic(partitions=1)
    [result] = await create_partitions(s, version, _grow(topic, 3), validate_only=True)
    expect_error("results[0].error_code", result.error_code, Errors.NONE)
    expect("partitions afterwards", len((await topic_state(s, topic)).partitions), 1)


@rule(
    "create-partitions.duplicate-topic",
    api=CREATE_PARTITIONS,
    versions=(0, 3),
    source="ControllerApis.createPartitions duplicateTopicNames",
    family="create-partitions",
)
async def partitions_duplicate(s: RuleSession, version: int) -> None:
    """A topic named twice in one CreatePartitions is refused with INVALID_REQUEST and not grown."""
    topic, _ = await s.create_topic(partitions=1)
    results = await create_partitions(s, version, _grow(topic, 2), _grow(topic, 3))
    expect("error codes", {r.error_code for r in results}, {Errors.INVALID_REQUEST})
    expect("partitions afterwards", len((await topic_state(s, topic)).partitions), 1)
