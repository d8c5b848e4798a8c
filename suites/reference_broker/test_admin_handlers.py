"""The admin handlers against an in-process broker node, one rule of Kafka's a test: DescribeConfigs,
AlterConfigs, IncrementalAlterConfigs, DescribeCluster, DeleteRecords, OffsetForLeaderEpoch,
DescribeProducers and DescribeLogDirs; then the same APIs driven by confluent-kafka and kafka-python
against a broker process."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Awaitable, Callable

import pytest

from kconform.codecs.errors import Errors
from kconform.codecs.messages import (
    AlterConfigsRequest,
    CreateTopicsRequest,
    DeleteRecordsRequest,
    DescribeClusterRequest,
    DescribeConfigsRequest,
    DescribeLogDirsRequest,
    DescribeProducersRequest,
    IncrementalAlterConfigsRequest,
    InitProducerIdRequest,
    ListOffsetsRequest,
    OffsetForLeaderEpochRequest,
    ProduceRequest,
)
from kconform.codecs.records import Record, encode_batch
from kconform.codecs.releases import kafka_release
from kconform.reference_broker.node import BrokerNode

from ..support.rawclient import RawClient

TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
DEFAULT_CONFIG, TOPIC_CONFIG, DYNAMIC_BROKER, DYNAMIC_DEFAULT, STATIC_BROKER = 5, 1, 2, 3, 4
INT_MIN = -(2**31)


class AdminTestClient(RawClient):
    """The shared raw client, plus the requests these tests share."""

    # ---- requests the tests share -------------------------------------------------------------

    async def create_topic(self, name: str, partitions: int = 1, **configs: str) -> None:
        topic = CreateTopicsRequest.CreatableTopic(
            name=name,
            num_partitions=partitions,
            replication_factor=1,
            configs=[
                CreateTopicsRequest.CreatableTopicConfig(name=k.replace("_", "."), value=v)
                for k, v in configs.items()
            ],
        )
        response = await self.call(19, 7, CreateTopicsRequest(topics=[topic], timeout_ms=5000))
        assert response.topics[0].error_code == Errors.NONE, response

    async def produce(self, topic: str, partition: int, count: int, **batch_fields) -> int:
        records = [Record(i, 1_700_000_000_000 + i, b"k%d" % i, b"v%d" % i) for i in range(count)]
        data = ProduceRequest.TopicProduceData(
            name=topic,
            partition_data=[
                ProduceRequest.PartitionProduceData(
                    index=partition, records=encode_batch(records, **batch_fields)
                )
            ],
        )
        response = await self.call(0, 9, ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[data]))
        result = response.responses[0].partition_responses[0]
        assert result.error_code == Errors.NONE, result
        return result.base_offset

    async def describe(self, kind: int, name: str, keys=None, *, version: int = 4, synonyms: bool = False):
        resource = DescribeConfigsRequest.DescribeConfigsResource(
            resource_type=kind, resource_name=name, configuration_keys=keys
        )
        request = DescribeConfigsRequest(resources=[resource], include_synonyms=synonyms)
        return (await self.call(32, version, request)).results[0]

    async def topic_configs(self, name: str) -> dict[str, tuple[str | None, int]]:
        result = await self.describe(TOPIC, name)
        assert result.error_code == Errors.NONE, result
        return {c.name: (c.value, c.config_source) for c in result.configs}

    async def alter(self, *resources: tuple[int, str, dict], validate_only: bool = False):
        request = AlterConfigsRequest(
            resources=[
                AlterConfigsRequest.AlterConfigsResource(
                    resource_type=kind,
                    resource_name=name,
                    configs=[
                        AlterConfigsRequest.AlterableConfig(name=k, value=v) for k, v in configs.items()
                    ],
                )
                for kind, name, configs in resources
            ],
            validate_only=validate_only,
        )
        return (await self.call(33, 2, request)).responses

    async def incremental(self, *resources: tuple[int, str, list], validate_only: bool = False):
        request = IncrementalAlterConfigsRequest(
            resources=[
                IncrementalAlterConfigsRequest.AlterConfigsResource(
                    resource_type=kind,
                    resource_name=name,
                    configs=[
                        IncrementalAlterConfigsRequest.AlterableConfig(name=k, config_operation=op, value=v)
                        for k, op, v in ops
                    ],
                )
                for kind, name, ops in resources
            ],
            validate_only=validate_only,
        )
        return (await self.call(44, 1, request)).responses

    async def delete_records(self, topic: str, offsets: dict[int, int]):
        partitions = [
            DeleteRecordsRequest.DeleteRecordsPartition(partition_index=p, offset=o)
            for p, o in offsets.items()
        ]
        request = DeleteRecordsRequest(
            topics=[DeleteRecordsRequest.DeleteRecordsTopic(name=topic, partitions=partitions)],
            timeout_ms=5000,
        )
        return {
            p.partition_index: (p.error_code, p.low_watermark)
            for p in (await self.call(21, 2, request)).topics[0].partitions
        }

    async def epoch_end(
        self, topic: str, partition: int, leader_epoch: int, current: int = -1, version: int = 4
    ):
        request = OffsetForLeaderEpochRequest(
            topics=[
                OffsetForLeaderEpochRequest.OffsetForLeaderTopic(
                    topic=topic,
                    partitions=[
                        OffsetForLeaderEpochRequest.OffsetForLeaderPartition(
                            partition=partition, current_leader_epoch=current, leader_epoch=leader_epoch
                        )
                    ],
                )
            ]
        )
        out = (await self.call(23, version, request)).topics[0].partitions[0]
        return out.error_code, out.leader_epoch, out.end_offset


def run(
    tmp_path,
    scenario: Callable[[RawClient, BrokerNode], Awaitable[object]],
    *,
    kafka_version: str | None = None,
    **overrides: str,
):
    """Start a node on a free port with ``overrides`` (answering as ``kafka_version``, default the
    newest release the codecs cover), run the scenario with a raw client, stop it."""

    async def main():
        props = {"node.id": "1", "log.dirs": str(tmp_path / "data")}
        props.update(overrides)
        release = kafka_release(kafka_version) if kafka_version else None
        node = BrokerNode.from_config_file(None, props, kafka_release=release)
        host, port = await node.start("127.0.0.1", 0)
        try:
            reader, writer = await asyncio.open_connection(host, port)
            try:
                return await scenario(AdminTestClient(reader, writer, client_id="admin-tests"), node)
            finally:
                writer.close()
        finally:
            await node.stop()

    return asyncio.run(asyncio.wait_for(main(), 60))


def error(result) -> tuple[int, str | None]:
    return result.error_code, result.error_message


# ---- DescribeConfigs ------------------------------------------------------------------------------

# `kafka-configs --describe --all` of a topic on a Kafka 3.x broker, in the order it printed them: the
# iteration order of the Scala mutable.HashMap ConfigHelper builds.
KAFKA_3_TOPIC_CONFIG_ORDER = (
    "compression.type leader.replication.throttled.replicas message.downconversion.enable "
    "min.insync.replicas segment.jitter.ms cleanup.policy flush.ms follower.replication.throttled.replicas "
    "segment.bytes retention.ms flush.messages message.format.version max.compaction.lag.ms "
    "file.delete.delay.ms max.message.bytes min.compaction.lag.ms message.timestamp.type preallocate "
    "min.cleanable.dirty.ratio index.interval.bytes unclean.leader.election.enable retention.bytes "
    "delete.retention.ms segment.ms message.timestamp.difference.max.ms segment.index.bytes"
).split()


def test_config_entries_come_in_the_order_of_kafkas_scala_hash_map():
    from kconform.reference_broker.config import ConfigEntry, ConfigSource, ConfigType
    from kconform.reference_broker.handlers.configs import _scala_hash_map_order

    entries = [
        ConfigEntry(name, "", ConfigSource.DEFAULT_CONFIG, False, False, ConfigType.STRING)
        for name in sorted(KAFKA_3_TOPIC_CONFIG_ORDER)
    ]
    ordered = _scala_hash_map_order(entries, repeated_puts=True)
    assert [e.name for e in ordered] == KAFKA_3_TOPIC_CONFIG_ORDER


def test_describe_topic_lists_every_config_with_the_overrides_as_topic_configs(tmp_path):
    async def scenario(client, node):
        await client.create_topic("orders", retention_ms="3600000")
        return await client.describe(TOPIC, "orders", synonyms=True)

    result = run(tmp_path, scenario)
    assert error(result) == (Errors.NONE, "")
    configs = {c.name: c for c in result.configs}
    assert {"segment.bytes", "cleanup.policy", "retention.ms", "min.insync.replicas"} <= set(configs)
    retention = configs["retention.ms"]
    assert (retention.value, retention.config_source, retention.read_only) == ("3600000", TOPIC_CONFIG, False)
    # Kafka drops the broker synonyms listed before log.retention.ms, which nothing sets here
    assert [(s.name, s.value, s.source) for s in retention.synonyms] == [
        ("retention.ms", "3600000", TOPIC_CONFIG)
    ]
    segment = configs["segment.bytes"]
    assert (segment.value, segment.config_source, segment.config_type) == ("1073741824", DEFAULT_CONFIG, 3)
    assert segment.documentation is None


def test_describe_without_synonyms_sends_none(tmp_path):
    async def scenario(client, node):
        await client.create_topic("plain", retention_ms="1000")
        return await client.describe(TOPIC, "plain", synonyms=False)

    result = run(tmp_path, scenario)
    assert all(c.synonyms == [] for c in result.configs)


def test_describe_configuration_keys_select_configs_and_unknown_keys_are_left_out(tmp_path):
    async def scenario(client, node):
        await client.create_topic("picked")
        return await client.describe(TOPIC, "picked", ["retention.ms", "no.such.config", "cleanup.policy"])

    result = run(tmp_path, scenario)
    assert sorted(c.name for c in result.configs) == ["cleanup.policy", "retention.ms"]


def test_describe_unknown_topic_is_unknown_topic_or_partition(tmp_path):
    async def scenario(client, node):
        return await client.describe(TOPIC, "missing")

    result = run(tmp_path, scenario)
    assert error(result) == (Errors.UNKNOWN_TOPIC_OR_PARTITION, "")
    assert result.configs == [] and (result.resource_type, result.resource_name) == (TOPIC, "missing")


def test_describe_illegal_topic_name_is_invalid_topic(tmp_path):
    result = run(tmp_path, lambda client, node: client.describe(TOPIC, "bad name"))
    assert result.error_code == Errors.INVALID_TOPIC_EXCEPTION and "bad name" in result.error_message


def test_describe_unknown_resource_type_fails_every_resource(tmp_path):
    async def scenario(client, node):
        await client.create_topic("fine")
        resources = [
            DescribeConfigsRequest.DescribeConfigsResource(resource_type=TOPIC, resource_name="fine"),
            DescribeConfigsRequest.DescribeConfigsResource(resource_type=3, resource_name="x"),
        ]
        return await client.call(32, 4, DescribeConfigsRequest(resources=resources))

    response = run(tmp_path, scenario)
    assert [(r.resource_type, r.error_code, r.configs) for r in response.results] == [
        (TOPIC, Errors.INVALID_REQUEST, []),
        (3, Errors.INVALID_REQUEST, []),
    ]
    assert response.results[0].error_message.startswith("This most likely occurs because of a request")


def test_describe_this_broker_shows_static_and_default_configs_and_hides_sensitive_values(tmp_path):
    async def scenario(client, node):
        return await client.describe(BROKER, "1", synonyms=True)

    result = run(tmp_path, scenario, **{"ssl.key.password": "secret", "num.io.threads": "4"})
    assert result.error_code == Errors.NONE
    configs = {c.name: c for c in result.configs}
    io = configs["num.io.threads"]
    assert (io.value, io.config_source, io.read_only) == ("4", STATIC_BROKER, False)
    assert [(s.name, s.value, s.source) for s in io.synonyms] == [
        ("num.io.threads", "4", STATIC_BROKER),
        ("num.io.threads", "8", DEFAULT_CONFIG),
    ]
    password = configs["ssl.key.password"]
    assert (password.value, password.is_sensitive) == (None, True)
    assert configs["log.dirs"].read_only and configs["node.id"].value == "1"


def test_describe_another_broker_id_is_invalid_request(tmp_path):
    async def scenario(client, node):
        return [await client.describe(BROKER, "2"), await client.describe(BROKER, "one")]

    other, word = run(tmp_path, scenario)
    assert error(other) == (
        Errors.INVALID_REQUEST,
        "Unexpected broker id, expected 1 or empty string, but received 2",
    )
    assert error(word) == (Errors.INVALID_REQUEST, "Broker id must be an integer, but it is: one")


def test_describe_default_broker_resource_lists_only_dynamic_defaults(tmp_path):
    async def scenario(client, node):
        before = await client.describe(BROKER, "")
        responses = await client.alter((BROKER, "", {"log.retention.ms": "7200000"}))
        after = await client.describe(BROKER, "", synonyms=True)
        return before, responses, after

    before, responses, after = run(tmp_path, scenario)
    assert before.error_code == Errors.NONE and before.configs == []
    assert error(responses[0]) == (Errors.NONE, None)
    assert [(c.name, c.value, c.config_source) for c in after.configs] == [
        ("log.retention.ms", "7200000", DYNAMIC_DEFAULT)
    ]


# ---- AlterConfigs ---------------------------------------------------------------------------------


def test_alter_configs_replaces_the_whole_override_set(tmp_path):
    async def scenario(client, node):
        await client.create_topic("whole", retention_ms="1000", segment_ms="2000")
        responses = await client.alter((TOPIC, "whole", {"max.message.bytes": "2000"}))
        return responses, await client.topic_configs("whole"), node.topics.get("whole").configs

    responses, configs, stored = run(tmp_path, scenario)
    assert error(responses[0]) == (Errors.NONE, None)
    assert stored == {"max.message.bytes": "2000"}
    assert configs["max.message.bytes"] == ("2000", TOPIC_CONFIG)
    assert configs["retention.ms"] == ("604800000", DEFAULT_CONFIG)


def test_alter_configs_validate_only_changes_nothing(tmp_path):
    async def scenario(client, node):
        await client.create_topic("dry", retention_ms="1000")
        responses = await client.alter((TOPIC, "dry", {"retention.ms": "5"}), validate_only=True)
        return responses, node.topics.get("dry").configs

    responses, stored = run(tmp_path, scenario)
    assert error(responses[0]) == (Errors.NONE, None) and stored == {"retention.ms": "1000"}


def test_alter_configs_resource_named_twice_fails_both(tmp_path):
    async def scenario(client, node):
        await client.create_topic("twice")
        return await client.alter(
            (TOPIC, "twice", {"retention.ms": "1"}), (TOPIC, "twice", {"retention.ms": "2"})
        )

    responses = run(tmp_path, scenario)
    assert [error(r) for r in responses] == [
        (Errors.INVALID_REQUEST, "Each resource must appear at most once.")
    ] * 2


def test_alter_configs_duplicate_keys_and_null_values_are_invalid_request(tmp_path):
    async def scenario(client, node):
        await client.create_topic("keys")
        duplicate = AlterConfigsRequest.AlterConfigsResource(
            resource_type=TOPIC,
            resource_name="keys",
            configs=[AlterConfigsRequest.AlterableConfig(name="retention.ms", value=v) for v in ("1", "2")],
        )
        first = await client.call(33, 2, AlterConfigsRequest(resources=[duplicate]))
        nulls = await client.alter((TOPIC, "keys", {"retention.ms": None, "segment.ms": None}))
        return first.responses[0], nulls[0]

    duplicate, nulls = run(tmp_path, scenario)
    assert error(duplicate) == (Errors.INVALID_REQUEST, "Error due to duplicate config keys")
    assert error(nulls) == (Errors.INVALID_REQUEST, "Null value not supported for : retention.ms, segment.ms")


def test_alter_configs_bad_value_is_invalid_config(tmp_path):
    async def scenario(client, node):
        await client.create_topic("values")
        return await client.alter(
            (TOPIC, "values", {"segment.bytes": "12"}), (TOPIC, "values2", {"x.y": "1"})
        )

    bad_value, unknown_name = run(tmp_path, scenario)
    assert error(bad_value) == (
        Errors.INVALID_CONFIG,
        "Invalid value 12 for configuration segment.bytes: Value must be at least 1048576",
    )
    assert error(unknown_name) == (Errors.INVALID_CONFIG, "Unknown topic config name: x.y")


def test_alter_configs_unknown_topic_is_unknown_topic_or_partition(tmp_path):
    responses = run(tmp_path, lambda client, node: client.alter((TOPIC, "ghost", {"retention.ms": "10"})))
    assert error(responses[0]) == (Errors.UNKNOWN_TOPIC_OR_PARTITION, "The topic 'ghost' does not exist.")


def test_alter_configs_default_topic_resource_and_unknown_types_are_invalid_request(tmp_path):
    async def scenario(client, node):
        return await client.alter((TOPIC, "", {}), (3, "x", {}), (BROKER_LOGGER, "1", {}))

    responses = run(tmp_path, scenario)
    assert [error(r) for r in responses] == [
        (Errors.INVALID_REQUEST, "Default topic resources are not allowed."),
        (Errors.INVALID_REQUEST, "Unknown resource type 3"),
        (Errors.INVALID_REQUEST, "Unknown resource type 8"),
    ]


def test_alter_broker_read_only_config_is_invalid_request(tmp_path):
    responses = run(tmp_path, lambda client, node: client.alter((BROKER, "1", {"log.dirs": "/elsewhere"})))
    assert error(responses[0]) == (
        Errors.INVALID_REQUEST,
        "Cannot update these configs dynamically: Set(log.dirs)",
    )


def test_alter_broker_per_broker_config_at_cluster_level_is_invalid_request(tmp_path):
    responses = run(
        tmp_path, lambda client, node: client.alter((BROKER, "", {"listeners": "PLAINTEXT://:1"}))
    )
    assert error(responses[0]) == (
        Errors.INVALID_REQUEST,
        "Cannot update these configs at default cluster level, broker id must be specified: Set(listeners)",
    )


def test_alter_broker_listener_only_security_config_is_invalid_request(tmp_path):
    responses = run(tmp_path, lambda client, node: client.alter((BROKER, "1", {"ssl.key.password": "p"})))
    assert error(responses[0]) == (
        Errors.INVALID_REQUEST,
        "These security configs can be dynamically updated only per-listener using the listener prefix: "
        "Set(ssl.key.password)",
    )


def test_alter_broker_other_node_id_is_invalid_request(tmp_path):
    async def scenario(client, node):
        return await client.alter((BROKER, "2", {"log.retention.ms": "1"}), (BROKER, "x", {}))

    other, word = run(tmp_path, scenario)
    assert error(other) == (Errors.INVALID_REQUEST, "Unexpected broker id, expected 1, but received 2")
    assert error(word) == (Errors.INVALID_REQUEST, "Node id must be an integer, but it is: x")


def test_alter_broker_bad_value_is_invalid_request_with_the_config_message(tmp_path):
    responses = run(tmp_path, lambda client, node: client.alter((BROKER, "1", {"log.segment.bytes": "12"})))
    assert error(responses[0]) == (
        Errors.INVALID_REQUEST,
        "Invalid value 12 for configuration log.segment.bytes: Value must be at least 1048576",
    )


def test_alter_broker_thread_count_beyond_double_is_invalid_dynamic_configuration(tmp_path):
    async def scenario(client, node):
        too_many = await client.alter((BROKER, "", {"num.io.threads": "17"}))
        doubled = await client.alter((BROKER, "", {"num.io.threads": "16"}))
        return too_many[0], doubled[0], node.config["num.io.threads"]

    too_many, doubled, now = run(tmp_path, scenario)
    assert error(too_many) == (Errors.INVALID_REQUEST, "Invalid dynamic configuration")
    assert error(doubled) == (Errors.NONE, None) and now == 16


def test_alter_broker_config_reaches_topics_without_their_own_override(tmp_path):
    async def scenario(client, node):
        await client.create_topic("inherit")
        responses = await client.alter((BROKER, "1", {"log.retention.ms": "120000"}))
        broker_view = await client.describe(BROKER, "1", ["log.retention.ms"])
        return responses, broker_view, await client.topic_configs("inherit"), node.partition("inherit", 0)

    responses, broker_view, configs, partition = run(tmp_path, scenario)
    assert error(responses[0]) == (Errors.NONE, None)
    entry = broker_view.configs[0]
    assert (entry.name, entry.value, entry.config_source) == ("log.retention.ms", "120000", DYNAMIC_BROKER)
    assert configs["retention.ms"] == ("120000", DYNAMIC_BROKER)
    assert partition.settings["retention.ms"] == "120000" and partition.log.config.retention_ms == 120000


# ---- IncrementalAlterConfigs ----------------------------------------------------------------------


def test_incremental_set_and_delete_keep_the_other_overrides(tmp_path):
    async def scenario(client, node):
        await client.create_topic("inc", retention_ms="1000", segment_ms="3600000")
        ops = [
            ("retention.ms", SET, "2000"),
            ("segment.ms", DELETE, None),
            ("max.message.bytes", SET, "5000"),
        ]
        responses = await client.incremental((TOPIC, "inc", ops))
        return responses, node.topics.get("inc").configs

    responses, stored = run(tmp_path, scenario)
    assert error(responses[0]) == (Errors.NONE, None)
    assert stored == {"retention.ms": "2000", "max.message.bytes": "5000"}


def test_incremental_append_and_subtract_work_on_lists(tmp_path):
    async def scenario(client, node):
        await client.create_topic("lists")
        appended = await client.incremental((TOPIC, "lists", [("cleanup.policy", APPEND, "compact")]))
        after_append = dict(node.topics.get("lists").configs)
        subtracted = await client.incremental((TOPIC, "lists", [("cleanup.policy", SUBTRACT, "delete")]))
        return appended, after_append, subtracted, node.topics.get("lists").configs

    appended, after_append, subtracted, stored = run(tmp_path, scenario)
    assert error(appended[0]) == error(subtracted[0]) == (Errors.NONE, None)
    assert after_append == {"cleanup.policy": "delete,compact"}
    assert stored == {"cleanup.policy": "compact"}


def test_incremental_append_to_a_non_list_config_is_invalid_config(tmp_path):
    async def scenario(client, node):
        await client.create_topic("scalar")
        topic = await client.incremental((TOPIC, "scalar", [("retention.ms", APPEND, "1")]))
        broker = await client.incremental((BROKER, "1", [("log.retention.ms", APPEND, "1")]))
        return topic[0], broker[0]

    topic, broker = run(tmp_path, scenario)
    assert error(topic) == (
        Errors.INVALID_CONFIG,
        "Can't APPEND to key retention.ms because its type is not LIST.",
    )
    assert error(broker) == (
        Errors.INVALID_CONFIG,
        "Config value append is not allowed for config key: log.retention.ms",
    )


def test_incremental_null_value_is_refused_except_for_delete(tmp_path):
    async def scenario(client, node):
        await client.create_topic("nulls", retention_ms="1000")
        refused = await client.incremental((TOPIC, "nulls", [("segment.ms", SET, None)]))
        deleted = await client.incremental((TOPIC, "nulls", [("retention.ms", DELETE, None)]))
        return refused[0], deleted[0], node.topics.get("nulls").configs

    refused, deleted, stored = run(tmp_path, scenario)
    assert error(refused) == (Errors.INVALID_REQUEST, "Null value not supported for : segment.ms")
    assert error(deleted) == (Errors.NONE, None) and stored == {}


def test_incremental_unknown_topic_and_duplicate_resources(tmp_path):
    async def scenario(client, node):
        missing = await client.incremental((TOPIC, "nowhere", [("retention.ms", SET, "1")]))
        twice = await client.incremental((BROKER, "", []), (BROKER, "", []))
        return missing, twice

    missing, twice = run(tmp_path, scenario)
    assert error(missing[0]) == (Errors.UNKNOWN_TOPIC_OR_PARTITION, "The topic 'nowhere' does not exist.")
    assert [error(r) for r in twice] == [
        (Errors.INVALID_REQUEST, "Each resource must appear at most once.")
    ] * 2


def test_incremental_broker_set_then_delete_returns_to_the_static_value(tmp_path):
    async def scenario(client, node):
        await client.incremental((BROKER, "1", [("message.max.bytes", SET, "2000000")]))
        set_value = node.config["message.max.bytes"]
        await client.incremental((BROKER, "1", [("message.max.bytes", DELETE, None)]))
        return set_value, node.config["message.max.bytes"], dict(node.config.dynamic_broker)

    set_value, after_delete, dynamic = run(tmp_path, scenario, **{"message.max.bytes": "1500000"})
    assert (set_value, after_delete, dynamic) == (2000000, 1500000, {})


# ---- DescribeCluster ------------------------------------------------------------------------------


def test_describe_cluster_names_this_broker_as_broker_and_controller(tmp_path):
    async def scenario(client, node):
        plain = await client.call(60, 1, DescribeClusterRequest())
        with_ops = await client.call(
            60, 0, DescribeClusterRequest(include_cluster_authorized_operations=True)
        )
        return plain, with_ops, node.cluster_id, node.advertised_address

    plain, with_ops, cluster_id, (host, port) = run(tmp_path, scenario, **{"broker.rack": "r1"})
    assert (plain.error_code, plain.cluster_id, plain.controller_id, plain.endpoint_type) == (
        0,
        cluster_id,
        1,
        1,
    )
    assert [(b.broker_id, b.host, b.port, b.rack) for b in plain.brokers] == [(1, host, port, "r1")]
    assert plain.cluster_authorized_operations == INT_MIN
    assert with_ops.cluster_authorized_operations == sum(1 << op for op in (5, 7, 8, 9, 10, 11, 12))


def test_describe_cluster_endpoint_types(tmp_path):
    async def scenario(client, node):
        return [await client.call(60, 1, DescribeClusterRequest(endpoint_type=t)) for t in (2, 3)]

    controllers, unknown = run(tmp_path, scenario)
    assert error(controllers) == (
        Errors.MISMATCHED_ENDPOINT_TYPE,
        "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER",
    )
    assert error(unknown) == (Errors.UNSUPPORTED_ENDPOINT_TYPE, "Unsupported endpoint type 3")
    assert (unknown.cluster_id, unknown.controller_id, unknown.brokers) == ("", -1, [])


def test_describe_cluster_v2_marks_brokers_fenced_or_not(tmp_path):
    """KafkaApis.handleDescribeCluster (KIP-1073): a broker is listed when ``!node.isFenced ||
    includeFencedBrokers``, with is_fenced from v2. This node answers, so it is not fenced: listed with
    is_fenced false whether fenced brokers are asked for or not."""

    async def scenario(client, node):
        return [
            await client.call(60, 2, DescribeClusterRequest(include_fenced_brokers=flag))
            for flag in (False, True)
        ]

    for answer in run(tmp_path, scenario):
        assert answer.error_code == Errors.NONE
        assert [(b.broker_id, b.is_fenced) for b in answer.brokers] == [(1, False)]


# ---- DeleteRecords --------------------------------------------------------------------------------


def test_delete_records_to_an_offset_moves_the_low_watermark(tmp_path):
    async def scenario(client, node):
        await client.create_topic("trim", partitions=2)
        await client.produce("trim", 0, 10)
        await client.produce("trim", 1, 4)
        result = await client.delete_records("trim", {0: 6, 1: -1})
        earliest = await client.call(
            2,
            7,
            ListOffsetsRequest(
                replica_id=-1,
                topics=[
                    ListOffsetsRequest.ListOffsetsTopic(
                        name="trim",
                        partitions=[ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=-2)],
                    )
                ],
            ),
        )
        return result, earliest.topics[0].partitions[0].offset

    result, earliest = run(tmp_path, scenario)
    assert result == {0: (Errors.NONE, 6), 1: (Errors.NONE, 4)}  # -1 is the high watermark
    assert earliest == 6


def test_delete_records_beyond_the_high_watermark_is_offset_out_of_range(tmp_path):
    async def scenario(client, node):
        await client.create_topic("short")
        await client.produce("short", 0, 3)
        return await client.delete_records("short", {0: 4}), node.partition("short", 0).log_start_offset

    result, start = run(tmp_path, scenario)
    assert result == {0: (Errors.OFFSET_OUT_OF_RANGE, -1)} and start == 0


def test_delete_records_unknown_partition_is_unknown_topic_or_partition(tmp_path):
    async def scenario(client, node):
        await client.create_topic("one")
        return await client.delete_records("one", {3: 0}), await client.delete_records("none", {0: 0})

    known_topic, unknown_topic = run(tmp_path, scenario)
    assert known_topic == {3: (Errors.UNKNOWN_TOPIC_OR_PARTITION, -1)}
    assert unknown_topic == {0: (Errors.UNKNOWN_TOPIC_OR_PARTITION, -1)}


def test_delete_records_on_a_compacted_topic_is_policy_violation(tmp_path):
    async def scenario(client, node):
        await client.create_topic("compacted", cleanup_policy="compact")
        return await client.delete_records("compacted", {0: 0})

    assert run(tmp_path, scenario) == {0: (Errors.POLICY_VIOLATION, -1)}


def test_delete_records_on_an_internal_topic_is_invalid_topic(tmp_path):
    async def scenario(client, node):
        await client.create_topic("__consumer_offsets")
        return await client.delete_records("__consumer_offsets", {0: 0})

    assert run(tmp_path, scenario) == {0: (Errors.INVALID_TOPIC_EXCEPTION, -1)}


# ---- OffsetForLeaderEpoch -------------------------------------------------------------------------


def test_offset_for_leader_epoch_current_epoch_ends_at_the_log_end(tmp_path):
    async def scenario(client, node):
        await client.create_topic("epochs", partitions=2)
        await client.produce("epochs", 0, 5)
        return await client.epoch_end("epochs", 0, 0), await client.epoch_end("epochs", 1, 0)

    written, empty = run(tmp_path, scenario)
    assert written == (Errors.NONE, 0, 5)
    assert empty == (Errors.NONE, 0, 0)  # the leader records its epoch when it takes over


def test_offset_for_leader_epoch_unknown_epochs_are_undefined(tmp_path):
    async def scenario(client, node):
        await client.create_topic("later")
        await client.produce("later", 0, 2)
        return await client.epoch_end("later", 0, 7), await client.epoch_end("later", 0, -1)

    above, undefined = run(tmp_path, scenario)
    assert above == undefined == (Errors.NONE, -1, -1)


def test_offset_for_leader_epoch_checks_the_current_leader_epoch(tmp_path):
    async def scenario(client, node):
        await client.create_topic("fence")
        return [await client.epoch_end("fence", 0, 0, current=c) for c in (-1, 0, 1, -2)]

    unchecked, same, newer, below = run(tmp_path, scenario)
    assert unchecked == same == (Errors.NONE, 0, 0)
    assert newer == (Errors.UNKNOWN_LEADER_EPOCH, -1, -1)
    assert below == (Errors.FENCED_LEADER_EPOCH, -1, -1)  # only -1 means "no epoch"


def test_offset_for_leader_epoch_unknown_partition_and_replica_ids(tmp_path):
    async def scenario(client, node):
        await client.create_topic("replicas")
        missing = await client.epoch_end("replicas", 4, 0)
        as_follower = OffsetForLeaderEpochRequest(
            replica_id=2,
            topics=[
                OffsetForLeaderEpochRequest.OffsetForLeaderTopic(
                    topic=t, partitions=[OffsetForLeaderEpochRequest.OffsetForLeaderPartition(partition=0)]
                )
                for t in ("replicas", "replicas")
            ],
        )
        return missing, await client.call(23, 4, as_follower)

    missing, as_follower = run(tmp_path, scenario)
    assert missing == (Errors.UNKNOWN_TOPIC_OR_PARTITION, -1, -1)
    assert [
        (t.topic, [(p.error_code, p.leader_epoch, p.end_offset) for p in t.partitions])
        for t in as_follower.topics
    ] == [("replicas", [(Errors.NONE, 0, 0)])] * 2


# ---- DescribeProducers ----------------------------------------------------------------------------


def test_describe_producers_lists_the_idempotent_producers_of_a_partition(tmp_path):
    async def scenario(client, node):
        await client.create_topic("idem")
        init = await client.call(
            22, 4, InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000)
        )
        pid = init.producer_id
        await client.produce("idem", 0, 3, producer_id=pid, producer_epoch=0, base_sequence=0)
        await client.produce("idem", 0, 2, producer_id=pid, producer_epoch=0, base_sequence=3)
        request = DescribeProducersRequest(
            topics=[DescribeProducersRequest.TopicRequest(name="idem", partition_indexes=[0])]
        )
        return pid, await client.call(61, 0, request)

    pid, response = run(tmp_path, scenario)
    partition = response.topics[0].partitions[0]
    assert (partition.error_code, partition.error_message) == (Errors.NONE, None)
    [state] = partition.active_producers
    assert (state.producer_id, state.producer_epoch, state.last_sequence) == (pid, 0, 4)
    assert state.last_timestamp == 1_700_000_000_001
    assert (state.coordinator_epoch, state.current_txn_start_offset) == (-1, -1)


def test_describe_producers_errors(tmp_path):
    async def scenario(client, node):
        await client.create_topic("known")
        request = DescribeProducersRequest(
            topics=[
                DescribeProducersRequest.TopicRequest(name="known", partition_indexes=[9]),
                DescribeProducersRequest.TopicRequest(name="unknown", partition_indexes=[0, 1]),
                DescribeProducersRequest.TopicRequest(name="bad name", partition_indexes=[0]),
            ]
        )
        return await client.call(61, 0, request)

    known, unknown, bad = run(tmp_path, scenario).topics
    assert [error(p) for p in known.partitions] == [(Errors.UNKNOWN_TOPIC_OR_PARTITION, None)]
    assert [error(p) for p in unknown.partitions] == [
        (Errors.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition.")
    ] * 2
    assert bad.partitions[0].error_code == Errors.INVALID_TOPIC_EXCEPTION


# ---- DescribeLogDirs ------------------------------------------------------------------------------


def test_describe_log_dirs_reports_partition_sizes_and_disk_space(tmp_path):
    async def scenario(client, node):
        await client.create_topic("sized", partitions=2)
        await client.produce("sized", 1, 20)
        all_topics = await client.call(35, 4, DescribeLogDirsRequest(topics=None))
        return all_topics, node.partition("sized", 1).log.size_in_bytes

    response, size = run(tmp_path, scenario)
    [result] = response.results
    assert (response.error_code, result.error_code, result.log_dir) == (0, 0, str(tmp_path / "data"))
    [topic] = result.topics
    assert topic.name == "sized"
    assert [
        (p.partition_index, p.partition_size, p.offset_lag, p.is_future_key) for p in topic.partitions
    ] == [
        (0, 0, 0, False),
        (1, size, 0, False),
    ]
    assert size > 0
    stats = os.statvfs(tmp_path)
    assert (
        result.total_bytes == stats.f_blocks * stats.f_frsize
        and 0 <= result.usable_bytes <= result.total_bytes
    )


def test_describe_log_dirs_only_the_partitions_asked_for(tmp_path):
    async def scenario(client, node):
        await client.create_topic("a", partitions=2)
        await client.create_topic("b")
        only = DescribeLogDirsRequest(
            topics=[
                DescribeLogDirsRequest.DescribableLogDirTopic(topic="a", partitions=[1, 7]),
                DescribeLogDirsRequest.DescribableLogDirTopic(topic="zzz", partitions=[0]),
            ]
        )
        return await client.call(35, 3, only), await client.call(35, 1, DescribeLogDirsRequest(topics=[]))

    only, none = run(tmp_path, scenario)
    assert [(t.name, [p.partition_index for p in t.partitions]) for t in only.results[0].topics] == [
        ("a", [1])
    ]
    assert only.results[0].total_bytes == -1  # v4+ only
    assert none.results[0].topics == []


def test_describe_log_dirs_v5_says_whether_a_dir_is_cordoned(tmp_path):
    """DescribeLogDirs v5 (KIP-1066, Kafka 4.3): is_cordoned per log dir, true only for the dirs
    ``cordoned.log.dirs`` names (ServerLogConfigs.CORDONED_LOG_DIRS_CONFIG). This broker has no such
    setting, as a Kafka 4.3 broker with it unset: every dir answers false."""

    async def scenario(client, node):
        return await client.call(35, 5, DescribeLogDirsRequest(topics=None))

    answer = run(tmp_path, scenario, kafka_version="4.3")
    assert [(r.error_code, r.is_cordoned) for r in answer.results] == [(Errors.NONE, False)]


# ---- real clients ---------------------------------------------------------------------------------


@pytest.mark.peer
@pytest.mark.slow
def test_real_admin_clients_drive_the_admin_apis(tmp_path):
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        NewTopic,
    )
    from kafka import KafkaProducer
    from kafka import TopicPartition as KTopicPartition
    from kafka.admin import ConfigResource as KConfigResource
    from kafka.admin import ConfigResourceType, KafkaAdminClient

    from kconform.reference_broker.process import start_broker_process

    broker = start_broker_process(tmp_path / "broker")
    try:
        topic = f"admin-{uuid.uuid4().hex[:8]}"
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)])[topic].result(15)

        resource = ConfigResource("TOPIC", topic)
        described = admin.describe_configs([resource])[resource].result(15)
        assert described["retention.ms"].value == "604800000" and described["retention.ms"].is_default

        resource.set_config("retention.ms", "3600000")
        admin.alter_configs([resource])[resource].result(15)
        ops = [
            ConfigEntry("segment.ms", "7200000", incremental_operation=AlterConfigOpType.SET),
            ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND),
        ]
        incremental = ConfigResource("TOPIC", topic, incremental_configs=ops)
        admin.incremental_alter_configs([incremental])[incremental].result(15)
        described = admin.describe_configs([ConfigResource("TOPIC", topic)])
        described = next(iter(described.values())).result(15)
        assert described["retention.ms"].value == "3600000"
        assert described["segment.ms"].value == "7200000"
        assert described["cleanup.policy"].value == "delete,compact"

        cluster = admin.describe_cluster(include_authorized_operations=True).result(15)
        assert [n.id for n in cluster.nodes] == [1] and cluster.controller.id == 1 and cluster.cluster_id

        producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all", enable_idempotence=True)
        for i in range(10):
            producer.send(topic, key=b"k%d" % i, value=b"v%d" % i, partition=0)
        producer.flush(15)
        producer.close()
        deleted = admin.delete_records([TopicPartition(topic, 0, 4)])
        low = next(iter(deleted.values())).result(15)
        assert low.low_watermark == 4

        kadmin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
        try:
            configs = kadmin.describe_configs(
                [KConfigResource(ConfigResourceType.TOPIC, topic, configs={"retention.ms": None})],
                config_filter="all",
            )
            retention = configs["topic"][topic]["retention.ms"]
            assert (retention["value"], retention["config_source"]) == ("3600000", "DYNAMIC_TOPIC_CONFIG")
            producers = kadmin.describe_producers([KTopicPartition(topic, 0)])
            [state] = producers[KTopicPartition(topic, 0)].active_producers
            assert state.last_sequence == 9
            [dirs] = kadmin.describe_log_dirs()
            [log_dir] = dirs["log_dirs"]
            sizes = {t["name"]: [p["partition_index"] for p in t["partitions"]] for t in log_dir["topics"]}
            assert sizes[topic] == [0, 1]
            assert kadmin.describe_cluster()["controller_id"] == 1
        finally:
            kadmin.close()
    finally:
        broker.stop()
    assert broker.process.returncode == 0, "\n".join(broker.output[-40:])


# ---- every version ----------------------------------------------------------------------------------


def test_every_version_of_the_admin_apis_is_answered(tmp_path):
    from kconform.codecs import api_schema

    def requests():
        keys = DescribeConfigsRequest.DescribeConfigsResource(resource_type=TOPIC, resource_name="v")
        yield 32, DescribeConfigsRequest(resources=[keys], include_synonyms=True)
        resource = AlterConfigsRequest.AlterConfigsResource(
            resource_type=TOPIC,
            resource_name="v",
            configs=[AlterConfigsRequest.AlterableConfig("retention.ms", "9")],
        )
        yield 33, AlterConfigsRequest(resources=[resource])
        op = IncrementalAlterConfigsRequest.AlterableConfig(
            name="segment.ms", config_operation=SET, value="9999"
        )
        yield (
            44,
            IncrementalAlterConfigsRequest(
                resources=[IncrementalAlterConfigsRequest.AlterConfigsResource(TOPIC, "v", [op])]
            ),
        )
        yield 60, DescribeClusterRequest(include_cluster_authorized_operations=True)
        yield (
            21,
            DeleteRecordsRequest(
                topics=[
                    DeleteRecordsRequest.DeleteRecordsTopic(
                        "v", [DeleteRecordsRequest.DeleteRecordsPartition(0, -1)]
                    )
                ]
            ),
        )
        yield (
            23,
            OffsetForLeaderEpochRequest(
                topics=[
                    OffsetForLeaderEpochRequest.OffsetForLeaderTopic(
                        "v",
                        [OffsetForLeaderEpochRequest.OffsetForLeaderPartition(partition=0, leader_epoch=0)],
                    )
                ]
            ),
        )
        yield 61, DescribeProducersRequest(topics=[DescribeProducersRequest.TopicRequest("v", [0])])
        yield 35, DescribeLogDirsRequest(topics=None)

    async def scenario(client, node):
        await client.create_topic("v")
        await client.produce("v", 0, 2)
        answers = {}
        for api_key, body in requests():
            low, high = api_schema(api_key).valid_versions
            answers[api_key] = {}
            for version in range(low, high + 1):
                if not node.dispatcher.serves(api_key, version):
                    continue
                if api_key == 32:
                    body.include_synonyms = version >= 1
                answers[api_key][version] = await client.call(api_key, version, body)
        return answers

    # Kafka 3.9 serves the versions 4.0 removed; the default release the newest ones but DescribeLogDirs
    # v5, which is Kafka 4.3's
    old, new = run(tmp_path / "3.9", scenario, kafka_version="3.9"), run(tmp_path / "new", scenario)
    newest = run(tmp_path / "4.3", scenario, kafka_version="4.3")
    answers = {key: list({**old[key], **new[key], **newest[key]}.values()) for key in old}
    for key, by_version in answers.items():
        low, high = api_schema(key).valid_versions
        assert len(by_version) == high - low + 1, f"{api_schema(key).name}: some version never served"
    assert all(r.error_code == 0 and len(r.configs) > 30 for r in (x.results[0] for x in answers[32]))
    assert all(x.responses[0].error_code == 0 for x in answers[33] + answers[44])
    assert all(x.error_code == 0 and x.controller_id == 1 for x in answers[60])
    assert all(x.topics[0].partitions[0].error_code == 0 for x in answers[21] + answers[23] + answers[61])
    assert all(x.results[0].topics[0].name == "v" for x in answers[35])
