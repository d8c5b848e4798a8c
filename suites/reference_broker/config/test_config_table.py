"""The config table against Apache Kafka 4.0: defaults, types, validators, synonyms and update modes."""

from __future__ import annotations

import math

import pytest

from kconform.reference_broker.config import (
    BROKER_CONFIGS,
    REQUIRED,
    TOPIC_CONFIG_SYNONYMS,
    TOPIC_CONFIGS,
    ConfigError,
    ConfigType,
    UpdateMode,
    parse_value,
    to_kafka_string,
)
from kconform.reference_broker.config._validators import (
    CaseInsensitiveValidString,
    GzipLevel,
    KnownAuthorizer,
    PeerAddressList,
    Range,
    ThrottledReplicaList,
    ValidList,
    ValidString,
)

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1

# (name, Kafka 4.0 default as DescribeConfigs prints it): ServerLogConfigs, LogConfig, ServerConfigs,
# SocketServerConfigs, ReplicationConfigs, GroupCoordinatorConfig, Transaction*Config, KIP-1030.
BROKER_DEFAULTS = [
    ("num.partitions", "1"),
    ("default.replication.factor", "1"),
    ("auto.create.topics.enable", "true"),
    ("delete.topic.enable", "true"),
    ("message.max.bytes", "1048588"),
    ("socket.request.max.bytes", "104857600"),
    ("connections.max.idle.ms", "600000"),
    ("listeners", "PLAINTEXT://:9092"),
    ("advertised.listeners", None),
    ("log.dir", "/tmp/kafka-logs"),
    ("log.dirs", None),
    ("log.segment.bytes", "1073741824"),
    ("log.roll.ms", None),
    ("log.roll.hours", "168"),
    ("log.roll.jitter.hours", "0"),
    ("log.retention.ms", None),
    ("log.retention.minutes", None),
    ("log.retention.hours", "168"),
    ("log.retention.bytes", "-1"),
    ("log.retention.check.interval.ms", "300000"),
    ("log.index.interval.bytes", "4096"),
    ("log.index.size.max.bytes", "10485760"),
    ("log.flush.interval.messages", str(LONG_MAX)),
    ("log.flush.interval.ms", None),
    ("log.flush.scheduler.interval.ms", str(LONG_MAX)),
    ("log.cleanup.policy", "delete"),
    ("log.message.timestamp.type", "CreateTime"),
    ("log.message.timestamp.before.max.ms", str(LONG_MAX)),
    ("log.message.timestamp.after.max.ms", "3600000"),  # KIP-1030: 1 hour from 4.0
    ("num.recovery.threads.per.data.dir", "2"),  # KIP-1030: 2 from 4.0
    ("compression.type", "producer"),
    ("compression.gzip.level", "-1"),
    ("compression.lz4.level", "9"),
    ("compression.zstd.level", "3"),
    ("min.insync.replicas", "1"),
    ("unclean.leader.election.enable", "false"),
    ("replica.fetch.max.bytes", "1048576"),
    ("replica.lag.time.max.ms", "30000"),
    ("fetch.max.bytes", "57671680"),
    ("max.incremental.fetch.session.cache.slots", "1000"),
    ("offsets.topic.num.partitions", "50"),
    ("offsets.topic.replication.factor", "3"),
    ("offsets.retention.minutes", "10080"),
    ("group.initial.rebalance.delay.ms", "3000"),
    ("group.min.session.timeout.ms", "6000"),
    ("group.max.session.timeout.ms", "1800000"),
    ("group.max.size", str(INT_MAX)),
    ("group.consumer.session.timeout.ms", "45000"),
    ("group.consumer.heartbeat.interval.ms", "5000"),
    ("group.consumer.max.size", str(INT_MAX)),
    ("transaction.max.timeout.ms", "900000"),
    ("transactional.id.expiration.ms", "604800000"),
    ("transaction.state.log.num.partitions", "50"),
    ("producer.id.expiration.ms", "86400000"),
    ("max.connections", str(INT_MAX)),
    ("queued.max.requests", "500"),
    ("num.network.threads", "3"),
    ("num.io.threads", "8"),
    ("log.cleaner.io.max.bytes.per.second", "1.7976931348623157E308"),
    ("log.cleaner.min.cleanable.ratio", "0.5"),
]

TOPIC_DEFAULTS = [
    ("cleanup.policy", "delete"),
    ("compression.type", "producer"),
    ("delete.retention.ms", "86400000"),
    ("file.delete.delay.ms", "60000"),
    ("flush.messages", str(LONG_MAX)),
    ("flush.ms", str(LONG_MAX)),
    ("index.interval.bytes", "4096"),
    ("max.compaction.lag.ms", str(LONG_MAX)),
    ("min.compaction.lag.ms", "0"),
    ("max.message.bytes", "1048588"),
    ("message.timestamp.type", "CreateTime"),
    ("message.timestamp.before.max.ms", str(LONG_MAX)),
    ("message.timestamp.after.max.ms", "3600000"),
    ("min.cleanable.dirty.ratio", "0.5"),
    ("min.insync.replicas", "1"),
    ("preallocate", "false"),
    ("retention.bytes", "-1"),
    ("retention.ms", "604800000"),
    ("segment.bytes", "1073741824"),
    ("segment.index.bytes", "10485760"),
    ("segment.jitter.ms", "0"),
    ("segment.ms", "604800000"),
    ("unclean.leader.election.enable", "false"),
    ("message.downconversion.enable", "true"),
    ("local.retention.ms", "-2"),
    ("local.retention.bytes", "-2"),
    ("remote.storage.enable", "false"),
    ("leader.replication.throttled.replicas", ""),
]


@pytest.mark.parametrize(("name", "default"), BROKER_DEFAULTS)
def test_broker_default_matches_kafka_4_0(name, default):
    assert BROKER_CONFIGS[name].default_string == default


@pytest.mark.parametrize(("name", "default"), TOPIC_DEFAULTS)
def test_topic_default_matches_kafka_4_0(name, default):
    assert TOPIC_CONFIGS[name].default_string == default


def test_configs_removed_in_4_0_are_absent():
    for removed in ("message.format.version", "message.timestamp.difference.max.ms"):
        assert removed not in TOPIC_CONFIGS
    for removed in (
        "log.message.format.version",
        "log.message.timestamp.difference.max.ms",
        "zookeeper.connect",
    ):
        assert removed not in BROKER_CONFIGS
    assert "offsets.commit.required.acks" not in BROKER_CONFIGS


def test_types_match_kafka():
    assert TOPIC_CONFIGS["cleanup.policy"].type is ConfigType.LIST
    assert TOPIC_CONFIGS["min.cleanable.dirty.ratio"].type is ConfigType.DOUBLE
    assert TOPIC_CONFIGS["segment.bytes"].type is ConfigType.INT
    assert TOPIC_CONFIGS["retention.ms"].type is ConfigType.LONG
    assert BROKER_CONFIGS["offsets.topic.replication.factor"].type is ConfigType.SHORT
    assert BROKER_CONFIGS["ssl.keystore.password"].type is ConfigType.PASSWORD
    assert BROKER_CONFIGS["ssl.keystore.password"].sensitive
    assert BROKER_CONFIGS["create.topic.policy.class.name"].type is ConfigType.CLASS
    assert [t.value for t in ConfigType] == list(range(10))


def test_kraft_identity_is_required():
    assert BROKER_CONFIGS["node.id"].default is REQUIRED
    assert BROKER_CONFIGS["process.roles"].default is REQUIRED


def test_every_topic_synonym_is_a_broker_config_of_matching_type():
    for topic_name, synonyms in TOPIC_CONFIG_SYNONYMS.items():
        assert topic_name in TOPIC_CONFIGS
        for synonym in synonyms:
            broker = BROKER_CONFIGS[synonym.name]
            if synonym.ms_per_unit == 1:
                assert broker.type is TOPIC_CONFIGS[topic_name].type, synonym.name
        # The last synonym always has a default, so a broker always supplies the topic default.
        assert BROKER_CONFIGS[synonyms[-1].name].default is not None, topic_name


def test_topic_configs_without_server_default():
    no_synonym = set(TOPIC_CONFIGS) - set(TOPIC_CONFIG_SYNONYMS)
    assert no_synonym == {
        "remote.storage.enable",
        "remote.log.copy.disable",
        "remote.log.delete.on.disable",
        "leader.replication.throttled.replicas",
        "follower.replication.throttled.replicas",
    }


def test_retention_synonyms_in_kafka_order():
    names = [(s.name, s.ms_per_unit) for s in TOPIC_CONFIG_SYNONYMS["retention.ms"]]
    assert names == [
        ("log.retention.ms", 1),
        ("log.retention.minutes", 60_000),
        ("log.retention.hours", 3_600_000),
    ]


def test_update_modes():
    # DynamicLogConfig: the first broker synonym of every topic config is cluster-wide ...
    for synonyms in TOPIC_CONFIG_SYNONYMS.values():
        assert BROKER_CONFIGS[synonyms[0].name].update_mode is UpdateMode.CLUSTER_WIDE, synonyms[0].name
    # ... and the hours/minutes forms are not dynamic.
    for name in ("log.retention.hours", "log.retention.minutes", "log.roll.hours", "log.roll.jitter.hours"):
        assert BROKER_CONFIGS[name].update_mode is UpdateMode.READ_ONLY
    for name in (
        "listeners",
        "advertised.listeners",
        "listener.security.protocol.map",
        "ssl.keystore.password",
    ):
        assert BROKER_CONFIGS[name].update_mode is UpdateMode.PER_BROKER
    for name in ("num.io.threads", "num.network.threads", "max.connections", "log.cleaner.threads"):
        assert BROKER_CONFIGS[name].update_mode is UpdateMode.CLUSTER_WIDE
    for name in ("node.id", "log.dirs", "num.partitions", "offsets.topic.num.partitions"):
        assert BROKER_CONFIGS[name].update_mode is UpdateMode.READ_ONLY


def test_threads_are_documented_as_ignored():
    for name in ("num.network.threads", "num.io.threads"):
        assert "asyncio" in BROKER_CONFIGS[name].note


def _bad_values(definition) -> list[str]:
    """Values the definition's validator must refuse, chosen from the validator's own bounds."""
    validator, bad = definition.validator, []
    if isinstance(validator, Range):
        step = 0.5 if definition.type is ConfigType.DOUBLE else 1  # doubles print as Java prints them
        if validator.min is not None and validator.min > -(2**31):
            bad.append(str(validator.min - step))
        if validator.max is not None:
            bad.append(str(validator.max + step))
    elif isinstance(validator, ValidList | ValidString | CaseInsensitiveValidString):
        bad.append("no-such-value")
    elif isinstance(validator, GzipLevel):
        bad += ["10", "0", "-2"]
    elif isinstance(validator, ThrottledReplicaList):
        bad.append("0:1,x")
    elif isinstance(validator, PeerAddressList):
        bad.append("2=no-port")
    elif isinstance(validator, KnownAuthorizer):
        bad.append("kafka.security.authorizer.AclAuthorizer")  # ZooKeeper's: gone in KRaft
    return bad


ALL_DEFINITIONS = [*BROKER_CONFIGS.values(), *TOPIC_CONFIGS.values()]
VALIDATED = [(d, bad) for d in ALL_DEFINITIONS for bad in _bad_values(d)]


@pytest.mark.parametrize(("definition", "bad"), VALIDATED, ids=[f"{d.name}={b}" for d, b in VALIDATED])
def test_every_validator_rejects_with_a_message_naming_the_key(definition, bad):
    with pytest.raises(ConfigError) as caught:
        definition.parse(bad)
    message = str(caught.value)
    listed = definition.name.endswith("throttled.replicas") or isinstance(
        definition.validator, PeerAddressList
    )
    shown = f"[{bad.replace(',', ', ')}]" if listed else bad
    assert message.startswith(f"Invalid value {shown} for configuration {definition.name}: ")
    assert caught.value.name == definition.name


def test_every_validated_config_is_covered():
    assert {d.name for d, _ in VALIDATED} == {d.name for d in ALL_DEFINITIONS if d.validator is not None}


def test_every_default_passes_its_own_validator():
    for definition in ALL_DEFINITIONS:
        if definition.validator is not None and definition.default not in (None, REQUIRED):
            definition.validator.check(definition.name, definition.default)


@pytest.mark.parametrize(
    ("name", "raw", "message"),
    [
        (
            "log.segment.bytes",
            "12",
            "Invalid value 12 for configuration log.segment.bytes: Value must be at least 1048576",
        ),
        ("segment.bytes", "1048575", "Value must be at least 1048576"),
        (
            "min.cleanable.dirty.ratio",
            "1.5",
            "Invalid value 1.5 for configuration min.cleanable.dirty.ratio: ",
        ),
        (
            "compression.type",
            "brotli",
            "String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer",
        ),
        ("cleanup.policy", "delete,compacted", "Invalid value compacted for configuration cleanup.policy"),
        ("compression.gzip.level", "0", "Value must be between 1 and 9 or equal to -1"),
        ("compression.zstd.level", "23", "Value must be no more than 22"),
        ("message.timestamp.type", "createtime", "String must be one of: CreateTime, LogAppendTime"),
        ("retention.ms", "-2", "Value must be at least -1"),
        (
            "num.partitions",
            "many",
            "Invalid value many for configuration num.partitions: Not a number of type INT",
        ),
        ("segment.ms", "1.5", "Not a number of type LONG"),
        ("segment.bytes", "2147483648", "Not a number of type INT"),
        ("preallocate", "yes", "Expected value to be either true or false"),
        ("offsets.topic.replication.factor", "40000", "Not a number of type SHORT"),
    ],
)
def test_kafka_messages(name, raw, message):
    definition = BROKER_CONFIGS.get(name) or TOPIC_CONFIGS[name]
    with pytest.raises(ConfigError) as caught:
        definition.parse(raw)
    assert message in str(caught.value)
    assert f" for configuration {name}: " in str(caught.value)


def test_validator_descriptions_are_kafkas_valid_values_text():
    assert str(TOPIC_CONFIGS["segment.bytes"].validator) == "[1048576,...]"
    assert str(TOPIC_CONFIGS["min.cleanable.dirty.ratio"].validator) == "[0,...,1]"
    assert str(TOPIC_CONFIGS["cleanup.policy"].validator) == "[compact, delete]"
    assert str(TOPIC_CONFIGS["compression.gzip.level"].validator) == "[1,...,9] or -1"


def test_list_values_print_as_java_lists_in_messages():
    with pytest.raises(ConfigError) as caught:
        TOPIC_CONFIGS["leader.replication.throttled.replicas"].parse("0:1, x")
    assert str(caught.value) == (
        "Invalid value [0:1, x] for configuration leader.replication.throttled.replicas: "
        "leader.replication.throttled.replicas must be the literal '*' or a list of replicas in the "
        "following format: [partitionId]:[brokerId],[partitionId]:[brokerId],..."
    )
    assert TOPIC_CONFIGS["leader.replication.throttled.replicas"].parse("*") == ["*"]


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.5, "0.5"),
        (2.0, "2.0"),
        (100.0, "100.0"),
        (0.001, "0.001"),
        (0.0001, "1.0E-4"),
        (1e7, "1.0E7"),
        (1234567.0, "1234567.0"),
        (12345678.9, "1.23456789E7"),
        (-0.0, "-0.0"),
        (float("inf"), "Infinity"),
    ],
)
def test_doubles_print_as_java_prints_them(value, text):
    assert to_kafka_string(value, ConfigType.DOUBLE) == text


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        ("0.25", 0.25),
        (" 1e-1 ", 0.1),
        ("1.5f", 1.5),
        ("2D", 2.0),
        (".5", 0.5),
        ("5.", 5.0),
        ("-Infinity", -math.inf),
    ],
)
def test_doubles_parse_as_java_parses_them(raw, value):
    assert parse_value("x", ConfigType.DOUBLE, raw) == value


def test_nan_parses_and_passes_range_checks_as_in_java():
    assert math.isnan(TOPIC_CONFIGS["min.cleanable.dirty.ratio"].parse("NaN"))


@pytest.mark.parametrize("raw", ["", "1e", "0x10", "one", "1,5", "nan"])
def test_bad_doubles(raw):
    with pytest.raises(ConfigError, match="Not a number of type DOUBLE"):
        parse_value("x", ConfigType.DOUBLE, raw)


def test_integers_accept_a_sign_and_reject_underscores():
    assert parse_value("x", ConfigType.INT, "+5") == 5
    for raw in ("1_000", "٣", "0x10", ""):
        with pytest.raises(ConfigError, match="Not a number of type INT"):
            parse_value("x", ConfigType.INT, raw)


def test_list_parsing_keeps_empty_elements_as_java_does():
    assert parse_value("x", ConfigType.LIST, "a, b ,") == ["a", "b", ""]
    assert parse_value("x", ConfigType.LIST, "   ") == []
