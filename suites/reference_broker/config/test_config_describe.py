"""DescribeConfigs and CreateTopics config entries: values, sources, synonyms, types, sensitivity."""

from __future__ import annotations

from kconform.reference_broker.config import (
    BrokerConfig,
    ConfigSource,
    ConfigType,
    TopicConfig,
    describe_broker_configs,
    describe_default_broker_configs,
)

MINIMAL = {"node.id": "1", "process.roles": "broker,controller"}
STATIC, DEFAULT = ConfigSource.STATIC_BROKER_CONFIG, ConfigSource.DEFAULT_CONFIG
TOPIC, DYN_BROKER, DYN_DEFAULT = (
    ConfigSource.DYNAMIC_TOPIC_CONFIG,
    ConfigSource.DYNAMIC_BROKER_CONFIG,
    ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
)


def synonyms(entry):
    return [(s.name, s.value, s.source) for s in entry.synonyms]


def test_source_ids_match_describe_configs_response():
    assert [s.value for s in ConfigSource] == list(range(9))
    assert ConfigSource.DYNAMIC_TOPIC_CONFIG == 1 and ConfigSource.DEFAULT_CONFIG == 5


def test_topic_defaults_come_from_the_broker():
    entries = TopicConfig.resolve(BrokerConfig(MINIMAL), {})
    segment = entries["segment.bytes"]
    assert (segment.value, segment.source, segment.config_type) == ("1073741824", DEFAULT, ConfigType.INT)
    assert synonyms(segment) == [("log.segment.bytes", "1073741824", DEFAULT)]
    assert not segment.read_only and not segment.is_sensitive
    assert entries["cleanup.policy"].value == "delete"
    assert entries["min.cleanable.dirty.ratio"].value == "0.5"
    assert entries["preallocate"].value == "false"
    assert entries["remote.storage.enable"].synonyms == ()  # no server default
    assert set(entries) >= {"retention.ms", "message.timestamp.after.max.ms", "local.retention.bytes"}


def test_topic_override_comes_first():
    config = BrokerConfig({**MINIMAL, "log.segment.bytes": "2097152"})
    entry = TopicConfig.resolve(config, {"segment.bytes": " 3145728 "})["segment.bytes"]
    assert (entry.value, entry.source) == ("3145728", TOPIC)
    assert synonyms(entry) == [
        ("segment.bytes", "3145728", TOPIC),
        ("log.segment.bytes", "2097152", STATIC),
        ("log.segment.bytes", "1073741824", DEFAULT),
    ]


def test_list_and_boolean_string_forms():
    entries = TopicConfig.resolve(
        BrokerConfig(MINIMAL), {"cleanup.policy": "compact , delete", "preallocate": "TRUE"}
    )
    assert entries["cleanup.policy"].value == "compact,delete"
    assert entries["preallocate"].value == "true"


def test_retention_synonyms_when_only_hours_is_set():
    # Kafka drops synonyms listed before log.retention.ms itself, so hours alone leaves the topic entry
    # with source DEFAULT_CONFIG and no synonyms (ConfigHelper.configSynonyms' dropWhile).
    config = BrokerConfig({**MINIMAL, "log.retention.hours": "1"})
    entry = TopicConfig.resolve(config, {})["retention.ms"]
    assert (entry.value, entry.source, entry.synonyms) == ("3600000", DEFAULT, ())


def test_retention_synonyms_as_kafkas_dynamic_broker_reconfiguration_test_expects():
    config = BrokerConfig({**MINIMAL, "log.retention.ms": "1680000000", "log.retention.hours": "168"})
    by_name = {e.name: e for e in describe_broker_configs(config, include_synonyms=True)}
    assert [(n, s) for n, _, s in synonyms(by_name["log.retention.ms"])] == [
        ("log.retention.ms", STATIC),
        ("log.retention.hours", STATIC),
        ("log.retention.hours", DEFAULT),
    ]
    assert [(n, s) for n, _, s in synonyms(by_name["log.retention.hours"])] == [
        ("log.retention.hours", STATIC),
        ("log.retention.hours", DEFAULT),
    ]
    assert [(n, s) for n, _, s in synonyms(by_name["log.roll.hours"])] == [("log.roll.hours", DEFAULT)]
    assert not by_name["log.retention.ms"].read_only
    assert by_name["log.retention.hours"].read_only
    topic = TopicConfig.resolve(config, {})["retention.ms"]
    assert (topic.value, topic.source) == ("1680000000", STATIC)


def test_dynamic_sources_in_precedence_order():
    config = BrokerConfig({**MINIMAL, "log.retention.bytes": "100"}).with_dynamic(
        cluster_default={"log.retention.bytes": "200"}, per_broker={"log.retention.bytes": "300"}
    )
    entry = TopicConfig.resolve(config, {})["retention.bytes"]
    assert (entry.value, entry.source) == ("300", DYN_BROKER)
    assert synonyms(entry) == [
        ("log.retention.bytes", "300", DYN_BROKER),
        ("log.retention.bytes", "200", DYN_DEFAULT),
        ("log.retention.bytes", "100", STATIC),
        ("log.retention.bytes", "-1", DEFAULT),
    ]
    default_entries = describe_default_broker_configs(config, include_synonyms=True)
    assert [(e.name, e.value, e.source) for e in default_entries] == [
        ("log.retention.bytes", "200", DYN_DEFAULT)
    ]
    assert synonyms(default_entries[0]) == [("log.retention.bytes", "200", DYN_DEFAULT)]


def test_synonyms_only_when_asked():
    entry = TopicConfig.resolve(BrokerConfig(MINIMAL), {"segment.ms": "100"}, include_synonyms=False)[
        "segment.ms"
    ]
    assert entry.synonyms == () and entry.source is TOPIC


def test_broker_entries():
    config = BrokerConfig(
        {**MINIMAL, "ssl.keystore.password": "secret", "made.up.key": "v", "num.partitions": " 3"}
    )
    by_name = {e.name: e for e in describe_broker_configs(config, include_synonyms=True)}
    partitions = by_name["num.partitions"]
    assert (partitions.value, partitions.source, partitions.read_only) == ("3", STATIC, True)
    assert synonyms(partitions) == [("num.partitions", " 3", STATIC), ("num.partitions", "1", DEFAULT)]
    password = by_name["ssl.keystore.password"]
    assert (password.value, password.is_sensitive, password.config_type) == (None, True, ConfigType.PASSWORD)
    assert synonyms(password) == [("ssl.keystore.password", None, STATIC)]
    unknown = by_name["made.up.key"]  # Kafka cannot type it, so it treats it as sensitive
    assert (unknown.value, unknown.is_sensitive, unknown.config_type, unknown.read_only) == (
        None,
        True,
        ConfigType.UNKNOWN,
        True,
    )
    unset = by_name["log.retention.ms"]
    assert (unset.value, unset.source, unset.synonyms) == (None, DEFAULT, ())  # hours' default is dropped
    assert by_name["message.max.bytes"].read_only is False
    assert by_name["log.cleaner.io.max.bytes.per.second"].value == "1.7976931348623157E308"
    assert "group.consumer.migration.policy" not in by_name  # internal


def test_create_topics_uses_the_controllers_resolution():
    config = BrokerConfig({**MINIMAL, "log.retention.hours": "2", "log.segment.bytes": "2097152"})
    entries = TopicConfig.for_create_topics(config, {"cleanup.policy": "compact"})
    assert [e.name for e in entries] == sorted(e.name for e in entries)
    by_name = {e.name: e for e in entries}
    assert (by_name["retention.ms"].value, by_name["retention.ms"].source) == ("7200000", STATIC)
    assert (by_name["segment.bytes"].value, by_name["segment.bytes"].source) == ("2097152", STATIC)
    assert (by_name["cleanup.policy"].value, by_name["cleanup.policy"].source) == ("compact", TOPIC)
    assert (by_name["flush.ms"].value, by_name["flush.ms"].source) == (str(2**63 - 1), DEFAULT)
    assert all(e.synonyms == () and not e.read_only for e in entries)
