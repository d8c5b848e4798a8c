"""The config handlers against an in-process broker node, one rule of Kafka's a test: DescribeConfigs
(order, synonyms, keys, brokers and defaults), AlterConfigs (whole override sets, validation, broker
configs) and IncrementalAlterConfigs (set, delete, append, subtract)."""

from __future__ import annotations

from kconform.codecs.errors import Errors
from kconform.codecs.messages import (
    AlterConfigsRequest,
    DescribeConfigsRequest,
)

from ..support.admin_handlers_client import (
    APPEND,
    BROKER,
    BROKER_LOGGER,
    DELETE,
    SET,
    SUBTRACT,
    TOPIC,
    error,
    run,
)

DEFAULT_CONFIG, TOPIC_CONFIG, DYNAMIC_BROKER, DYNAMIC_DEFAULT, STATIC_BROKER = 5, 1, 2, 3, 4


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


def test_dynamic_broker_configs_are_kept_in_the_metadata_log_across_a_restart(tmp_path):
    """ConfigurationControlManager writes them as ConfigRecords; a node replays the log on start and takes
    the cluster default and its own layer (DynamicConfigPublisher)."""

    async def alter(client, node):
        return await client.incremental(
            (BROKER, "", [("log.retention.ms", SET, "7200000")]),
            (BROKER, "1", [("message.max.bytes", SET, "2000000")]),
        )

    async def describe(client, node):
        return await client.describe(BROKER, "1", ["log.retention.ms", "message.max.bytes"])

    assert [error(r) for r in run(tmp_path, alter)] == [(Errors.NONE, None)] * 2
    result = run(tmp_path, describe)
    assert {c.name: (c.value, c.config_source) for c in result.configs} == {
        "log.retention.ms": ("7200000", DYNAMIC_DEFAULT),
        "message.max.bytes": ("2000000", DYNAMIC_BROKER),
    }
