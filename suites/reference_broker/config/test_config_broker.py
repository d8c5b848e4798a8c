"""BrokerConfig: sources, typed access, synonyms, unknown keys and KafkaConfig's start-up checks."""

from __future__ import annotations

import pytest

from kconform.reference_broker.config import BrokerConfig, ConfigError

MINIMAL = {"node.id": "1", "process.roles": "broker,controller"}


def broker(**settings: str) -> BrokerConfig:
    return BrokerConfig({**MINIMAL, **{k.replace("_", "."): v for k, v in settings.items()}})


def test_from_file_and_overrides(tmp_path):
    path = tmp_path / "server.properties"
    path.write_text(
        "# KRaft combined node\n"
        "process.roles=broker,controller\n"
        "node.id=3\n"
        "log.dirs=/data/a, /data/b\n"
        "num.partitions=3\n"
        "listeners=PLAINTEXT://:9092,\\\n"
        "          CONTROLLER://:9093\n"
    )
    config = BrokerConfig.from_sources(path, {"num.partitions": "6", "auto.create.topics.enable": "false"})
    assert config["node.id"] == 3
    assert config["broker.id"] == 3  # KafkaConfig.populateSynonyms
    assert config["process.roles"] == ["broker", "controller"]
    assert config.num_partitions == 6  # overrides win over the file
    assert config.auto_create_topics_enable is False
    assert config.listeners == "PLAINTEXT://:9092,CONTROLLER://:9093"
    assert config.log_dirs == ["/data/a", "/data/b"]


def test_typed_defaults():
    config = BrokerConfig.from_sources(None, MINIMAL)
    assert config["log.segment.bytes"] == 1024**3
    assert config["log.retention.ms"] is None
    assert config["log.retention.hours"] == 168
    assert config["log.cleanup.policy"] == ["delete"]
    assert config["log.cleaner.min.cleanable.ratio"] == 0.5
    assert config.log_dirs == ["/tmp/kafka-logs"]
    assert len(config) == len(list(config))


def test_attribute_access_for_unknown_names_raises_attribute_error():
    with pytest.raises(AttributeError, match="no config 'no.such.thing'"):
        _ = broker().no_such_thing


def test_values_are_trimmed_as_kafka_trims_them():
    assert broker(num_partitions=" 4 ").num_partitions == 4
    assert broker(compression_type=" lz4\t").compression_type == "lz4"
    assert broker(log_cleanup_policy=" compact , delete ").log_cleanup_policy == ["compact", "delete"]


@pytest.mark.parametrize(
    ("settings", "retention_ms"),
    [
        ({}, 168 * 3_600_000),
        ({"log.retention.hours": "1"}, 3_600_000),
        ({"log.retention.minutes": "5", "log.retention.hours": "1"}, 300_000),
        ({"log.retention.ms": "1234", "log.retention.minutes": "5", "log.retention.hours": "1"}, 1234),
        ({"log.retention.ms": "-1"}, -1),
        ({"log.retention.ms": "-7"}, -1),  # any negative means unlimited
        ({"log.retention.hours": "-1"}, -1),
    ],
)
def test_retention_synonym_precedence(settings, retention_ms):
    assert BrokerConfig({**MINIMAL, **settings}).log_config()["retention.ms"] == retention_ms


def test_roll_and_flush_synonyms():
    log = broker(
        log_roll_hours="2", log_roll_jitter_hours="1", log_flush_scheduler_interval_ms="500"
    ).log_config()
    assert (log["segment.ms"], log["segment.jitter.ms"], log["flush.ms"]) == (7_200_000, 3_600_000, 500)
    log = broker(log_roll_ms="10", log_roll_hours="2", log_flush_interval_ms="9").log_config()
    assert (log["segment.ms"], log["flush.ms"]) == (10, 9)


def test_log_config_maps_broker_names_to_topic_names():
    log = broker(
        message_max_bytes="2000", log_cleaner_min_cleanable_ratio="0.25", log_segment_delete_delay_ms="5"
    ).log_config()
    assert log["max.message.bytes"] == 2000
    assert log["min.cleanable.dirty.ratio"] == 0.25
    assert log["file.delete.delay.ms"] == 5
    assert log["remote.storage.enable"] is False  # no server default: the topic default


def test_unknown_keys_are_kept_and_reported():
    config = broker(**{"no.such.config": "x", "another_one": "y"})
    assert set(config.unknown_keys) == {"no.such.config", "another.one"}
    assert config.unknown["no.such.config"] == "x"
    assert config.unknown_keys_message == (
        "These configurations '[another.one, no.such.config]' were supplied but are not used yet."
    )
    assert "no.such.config" not in config
    assert broker().unknown_keys_message is None


def test_missing_required_configs():
    with pytest.raises(
        ConfigError, match='^Missing required configuration "process.roles" which has no default value.$'
    ):
        BrokerConfig({"node.id": "1"})
    with pytest.raises(
        ConfigError, match='^Missing required configuration "node.id" which has no default value.$'
    ):
        BrokerConfig({"process.roles": "broker"})


def test_broker_id_stands_in_for_node_id():
    assert BrokerConfig({"broker.id": "7", "process.roles": "broker"})["node.id"] == 7


def test_node_id_and_broker_id_must_agree():
    with pytest.raises(ConfigError, match="You must set `node.id` to the same value as `broker.id`."):
        broker(broker_id="2")


GROUP = "group.consumer."
BAD_SETTINGS = [
    (
        {"log.segment.bytes": "12"},
        "Invalid value 12 for configuration log.segment.bytes: Value must be at least 1048576",
    ),
    (
        {"process.roles": "broker,observer"},
        "Invalid value observer for configuration process.roles: String must be",
    ),
    ({"node.id": "-1"}, "Invalid value -1 for configuration node.id: Value must be at least 0"),
    ({"num.io.threads": "0"}, "Invalid value 0 for configuration num.io.threads: Value must be at least 1"),
    ({"log.roll.ms": "0"}, "requirement failed: log.roll.ms must be greater than or equal to 1"),
    (
        {"log.retention.ms": "0"},
        "requirement failed: log.retention.ms must be unlimited (-1) or, greater than",
    ),
    (
        {"log.dirs": " , "},
        "requirement failed: At least one log directory must be defined via log.dirs or log.dir.",
    ),
    (
        {"replica.fetch.wait.max.ms": "40000"},
        "replica.socket.timeout.ms should always be at least replica.fetch",
    ),
    (
        {GROUP + "heartbeat.interval.ms": "50000"},
        f"{GROUP}heartbeat.interval.ms must be less than or equal to",
    ),
    ({GROUP + "session.timeout.ms": "1000"}, f"{GROUP}session.timeout.ms must be greater than or equal to"),
    (
        {"log.cleaner.dedupe.buffer.size": "1048576"},
        "log.cleaner.dedupe.buffer.size must be at least 1MB per",
    ),
    (
        {"auto.create.topics.enable": "yes"},
        "auto.create.topics.enable: Expected value to be either true or false",
    ),
]


@pytest.mark.parametrize(("settings", "message"), BAD_SETTINGS)
def test_invalid_values_raise_config_error_with_kafkas_message(settings, message):
    with pytest.raises(ConfigError) as caught:
        BrokerConfig({**MINIMAL, **settings})
    assert message in str(caught.value)


def test_first_bad_value_in_definition_order_is_reported():
    with pytest.raises(ConfigError) as caught:
        broker(num_partitions="0", node_id="x")
    assert caught.value.name == "node.id"


def test_dynamic_layers_override_static_values():
    config = broker(log_retention_bytes="100").with_dynamic(
        cluster_default={"log.retention.bytes": "200", "num.io.threads": "4"},
        per_broker={"log.retention.bytes": "300"},
    )
    assert config["log.retention.bytes"] == 300
    assert config.num_io_threads == 4
    assert config.with_dynamic(per_broker={})["log.retention.bytes"] == 200


def test_dynamic_layers_refuse_read_only_and_per_broker_configs():
    with pytest.raises(
        ConfigError,
        match=r"Cannot update these configs dynamically: Set\(log.retention.hours, num.partitions\)",
    ):
        broker().with_dynamic(per_broker={"num.partitions": "2", "log.retention.hours": "1"})
    with pytest.raises(ConfigError, match="broker id must be specified: Set\\(listeners\\)"):
        broker().with_dynamic(cluster_default={"listeners": "PLAINTEXT://:9094"})
    with pytest.raises(ConfigError, match="Invalid value -5 for configuration message.max.bytes"):
        broker().with_dynamic(cluster_default={"message.max.bytes": "-5"})


def test_typed_values_are_accepted_as_their_strings():
    config = BrokerConfig({"node.id": 2, "process.roles": "broker", "auto.create.topics.enable": False})
    assert (config.node_id, config.auto_create_topics_enable) == (2, False)


def test_unknown_configs_may_be_set_dynamically():
    config = broker().with_dynamic(cluster_default={"my.plugin.setting": "x"})
    assert config.unknown == {"my.plugin.setting": "x"}


def test_from_sources_never_raises_anything_but_config_error(tmp_path):
    path = tmp_path / "server.properties"
    path.write_bytes(b"node.id=1\nprocess.roles=broker\nnum.partitions=\xff\n")
    with pytest.raises(ConfigError, match="Not a number of type INT"):
        BrokerConfig.from_sources(path, {})
