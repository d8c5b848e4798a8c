"""Kafka's Metadata, CreateTopics, DeleteTopics, CreatePartitions and ApiVersions error rules, one test
per rule, against a reference broker node in this process, and when the connection is closed.

Each test names where Apache Kafka 4.0 makes the decision (class and method in the Kafka source); the
broker must give the same error code in the same place of the response, or close the connection
where Kafka closes it."""

from __future__ import annotations

import uuid

import pytest

from kconform.codecs.errors import Errors
from kconform.codecs.messages import (
    ApiVersionsRequest,
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteTopicsRequest,
    MetadataRequest,
)

from ..support.error_rules_broker import (
    API_VERSIONS,
    CREATE_PARTITIONS,
    CREATE_TOPICS,
    DELETE_TOPICS,
    METADATA,
    TOPIC,
    Broker,
    run,
)

# ---- Metadata -------------------------------------------------------------------------------------


def test_metadata_auto_creates_an_unknown_topic(tmp_path):
    # KafkaApis.getTopicMetadata -> AutoTopicCreationManager.createTopics: a KRaft broker forwards a
    # CreateTopics to the controller (sendCreateTopicRequest) and answers UNKNOWN_TOPIC_OR_PARTITION
    # for now; the next Metadata request finds the topic.
    async def scenario(broker: Broker):
        first = await broker.metadata("fresh")
        second = await broker.metadata("fresh")
        return first.topics[0], second.topics[0]

    first, second = run(tmp_path, scenario)
    assert (first.name, first.error_code, first.partitions) == (
        "fresh",
        Errors.UNKNOWN_TOPIC_OR_PARTITION,
        [],
    )
    assert (second.name, second.error_code) == ("fresh", Errors.NONE)
    assert [p.partition_index for p in second.partitions] == [0]


@pytest.mark.parametrize("auto_create", [True, False])
def test_metadata_illegal_topic_name_is_invalid_topic_exception(tmp_path, auto_create):
    # AutoTopicCreationManager.filterCreatableTopics / KafkaApis.getTopicMetadata: Topic.validate fails.
    async def scenario(broker: Broker):
        body = await broker.metadata("bad name!", "x" * 250, "..", auto_create=auto_create)
        return body.topics, len(broker.node.topics)

    topics, created = run(tmp_path, scenario)
    assert [t.error_code for t in topics] == [Errors.INVALID_TOPIC_EXCEPTION] * 3
    assert created == 0


def test_metadata_without_auto_creation_is_unknown_topic_or_partition(tmp_path):
    # KafkaApis.getTopicMetadata: allowAutoTopicCreation false -> UNKNOWN_TOPIC_OR_PARTITION, nothing made.
    async def scenario(broker: Broker):
        body = await broker.metadata("absent", auto_create=False)
        again = await broker.metadata("absent", auto_create=False)
        return body.topics[0], again.topics[0]

    first, again = run(tmp_path, scenario)
    assert first.error_code == again.error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION


@pytest.mark.parametrize("version", [10, 11])
def test_metadata_topic_ids_below_v12_are_invalid_request(tmp_path, version):
    # KafkaApis.handleTopicMetadataRequest: before v12 a null topic name, or a topic id, throws
    # InvalidRequestException; MetadataRequest.getErrorResponse answers every topic asked for with
    # INVALID_REQUEST (a null name as ""), and no brokers.
    async def scenario(broker: Broker):
        topic_id = await broker.create_topic()
        request = MetadataRequest(
            topics=[
                MetadataRequest.MetadataRequestTopic(name=None, topic_id=topic_id),
                MetadataRequest.MetadataRequestTopic(name=TOPIC),
            ],
            allow_auto_topic_creation=False,
        )
        body = await broker.client.call(METADATA, version, request)
        return body, topic_id

    body, topic_id = run(tmp_path, scenario)
    assert [(t.error_code, t.name, t.topic_id) for t in body.topics] == [
        (Errors.INVALID_REQUEST, "", topic_id),
        (Errors.INVALID_REQUEST, TOPIC, uuid.UUID(int=0)),
    ]
    assert body.brokers == []


def test_metadata_by_topic_id_at_v12(tmp_path):
    # KafkaApis.handleTopicMetadataRequest (v12+): topics asked for by id; unknown ids UNKNOWN_TOPIC_ID.
    async def scenario(broker: Broker):
        topic_id = await broker.create_topic()
        missing = uuid.uuid4()
        request = MetadataRequest(
            topics=[MetadataRequest.MetadataRequestTopic(name=None, topic_id=i) for i in (topic_id, missing)],
            allow_auto_topic_creation=False,
        )
        return await broker.client.call(METADATA, 12, request), topic_id, missing

    body, topic_id, missing = run(tmp_path, scenario)
    found = {t.topic_id: (t.error_code, t.name) for t in body.topics}
    assert found == {topic_id: (Errors.NONE, TOPIC), missing: (Errors.UNKNOWN_TOPIC_ID, None)}


# ---- CreateTopics, DeleteTopics, CreatePartitions ----------------------------------------------


async def create_topics(broker: Broker, *topics, validate_only: bool = False):
    request = CreateTopicsRequest(topics=list(topics), timeout_ms=5000, validate_only=validate_only)
    return (await broker.client.call(CREATE_TOPICS, 7, request)).topics


def new_topic(name: str, partitions: int = 1, factor: int = 1, **configs: str):
    return CreateTopicsRequest.CreatableTopic(
        name=name,
        num_partitions=partitions,
        replication_factor=factor,
        configs=[CreateTopicsRequest.CreatableTopicConfig(name=k, value=v) for k, v in configs.items()],
    )


def test_create_topics_error_rules(tmp_path):
    # ReplicationControlManager.createTopic: TOPIC_ALREADY_EXISTS; numPartitions 0 or below -1
    # INVALID_PARTITIONS; a replication factor above the registered brokers INVALID_REPLICATION_FACTOR;
    # ConfigurationControlManager.validate: unknown or malformed configs INVALID_CONFIG.
    async def scenario(broker: Broker):
        await broker.create_topic("taken")
        return {
            "exists": await create_topics(broker, new_topic("taken")),
            "zero": await create_topics(broker, new_topic("t1", partitions=0)),
            "negative": await create_topics(broker, new_topic("t2", partitions=-5)),
            "factor": await create_topics(broker, new_topic("t3", factor=3)),
            "bad_value": await create_topics(broker, new_topic("t4", **{"cleanup.policy": "shred"})),
            "unknown_name": await create_topics(broker, new_topic("t5", **{"no.such.config": "1"})),
        }, sorted(t.name for t in broker.node.topics)

    results, existing = run(tmp_path, scenario)
    codes = {name: [r.error_code for r in rs] for name, rs in results.items()}
    assert codes == {
        "exists": [Errors.TOPIC_ALREADY_EXISTS],
        "zero": [Errors.INVALID_PARTITIONS],
        "negative": [Errors.INVALID_PARTITIONS],
        "factor": [Errors.INVALID_REPLICATION_FACTOR],
        "bad_value": [Errors.INVALID_CONFIG],
        "unknown_name": [Errors.INVALID_CONFIG],
    }
    assert existing == ["taken"]


def test_create_topics_validate_only_creates_nothing(tmp_path):
    # ControllerApis.createTopics / ReplicationControlManager: validateOnly runs every check and
    # writes no records.
    async def scenario(broker: Broker):
        results = await create_topics(broker, new_topic("dry", partitions=3), validate_only=True)
        meta = await broker.metadata("dry", auto_create=False)
        return results[0], meta.topics[0], len(broker.node.topics)

    result, meta, count = run(tmp_path, scenario)
    assert (result.error_code, result.num_partitions, result.replication_factor) == (Errors.NONE, 3, 1)
    assert meta.error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert count == 0


def test_delete_unknown_topic_is_unknown_topic_or_partition(tmp_path):
    # ReplicationControlManager.deleteTopics (via ControllerApis.deleteTopics): no such name ->
    # UNKNOWN_TOPIC_OR_PARTITION.
    async def scenario(broker: Broker):
        body = await broker.client.call(
            DELETE_TOPICS,
            6,
            DeleteTopicsRequest(
                topics=[DeleteTopicsRequest.DeleteTopicState(name="nowhere")], timeout_ms=5000
            ),
        )
        return body.responses[0]

    result = run(tmp_path, scenario)
    assert result.error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION


def test_create_partitions_decrease_is_invalid_partitions(tmp_path):
    # ReplicationControlManager.createPartitions: a count below (or equal to) the current one is
    # INVALID_PARTITIONS.
    async def scenario(broker: Broker):
        await broker.create_topic(partitions=3)
        results = []
        for count in (2, 3):
            request = CreatePartitionsRequest(
                topics=[
                    CreatePartitionsRequest.CreatePartitionsTopic(name=TOPIC, count=count, assignments=None)
                ],
                timeout_ms=5000,
            )
            results.append((await broker.client.call(CREATE_PARTITIONS, 3, request)).results[0])
        return results, len(broker.node.topics.get(TOPIC).partitions)

    (decrease, same), count = run(tmp_path, scenario)
    assert decrease.error_code == same.error_code == Errors.INVALID_PARTITIONS
    assert count == 3


# ---- ApiVersions and the connection ---------------------------------------------------------------


def test_api_versions_unknown_version_answers_v0_unsupported_version(tmp_path):
    # RequestContext.parseRequest keeps an ApiVersions request of an unknown version;
    # KafkaApis.handleApiVersionsRequest answers ApiVersionsRequest.getErrorResponse at version 0:
    # UNSUPPORTED_VERSION with the versions of ApiVersions itself (KIP-511).
    async def scenario(broker: Broker):
        await broker.client.send_raw(API_VERSIONS, 99, b"\x00\x00\x00", response_version=0)
        return await broker.client.receive()

    reply = run(tmp_path, scenario)
    assert reply.answered
    assert reply.body.error_code == Errors.UNSUPPORTED_VERSION
    assert [(k.api_key, k.min_version, k.max_version) for k in reply.body.api_keys] == [(API_VERSIONS, 0, 4)]


def test_api_versions_bad_client_software_name_is_invalid_request(tmp_path):
    # KafkaApis.handleApiVersionsRequest: !apiVersionRequest.isValid (v3+ name and version must match
    # [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?) -> INVALID_REQUEST.
    async def scenario(broker: Broker):
        bad = ApiVersionsRequest(client_software_name="bad name!", client_software_version="1.0")
        good = ApiVersionsRequest(client_software_name="kconform", client_software_version="1.0")
        return await broker.client.call(API_VERSIONS, 3, bad), await broker.client.call(API_VERSIONS, 3, good)

    bad, good = run(tmp_path, scenario)
    assert bad.error_code == Errors.INVALID_REQUEST and bad.api_keys == []
    assert good.error_code == Errors.NONE and good.api_keys


def test_unsupported_version_of_another_api_closes_the_connection(tmp_path):
    # SocketServer.Processor.parseRequestHeader: a version apiVersionManager.isApiEnabled refuses
    # (ApiVersions excepted) throws InvalidRequestException and the channel is closed.
    async def scenario(broker: Broker):
        await broker.client.send_raw(METADATA, 99, b"\x00")
        return await broker.client.receive(5)

    assert run(tmp_path, scenario).closed


def test_unknown_api_key_closes_the_connection(tmp_path):
    # RequestHeader.parse / SocketServer: an API key Kafka does not know -> InvalidRequestException,
    # the channel is closed.
    async def scenario(broker: Broker):
        await broker.client.send_raw(999, 0, b"")
        return await broker.client.receive(5)

    assert run(tmp_path, scenario).closed


def test_create_topics_beyond_one_controller_operation_is_policy_violation(tmp_path):
    # ReplicationControlManager.createTopics: at most 10,000 records (topic + partitions) per operation;
    # more fails the request with POLICY_VIOLATION and creates nothing.
    async def scenario(broker: Broker):
        request = CreateTopicsRequest(
            topics=[
                CreateTopicsRequest.CreatableTopic(name="huge", num_partitions=20_000, replication_factor=1)
            ],
            timeout_ms=5000,
        )
        created = await broker.client.call(19, 7, request)
        described = await broker.client.call(3, 12, MetadataRequest(topics=None))
        return created, described

    created, described = run(tmp_path, scenario)
    assert [(t.name, t.error_code) for t in created.topics] == [("huge", Errors.POLICY_VIOLATION)]
    assert "huge" not in {t.name for t in described.topics}
