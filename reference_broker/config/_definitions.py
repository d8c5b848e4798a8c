"""The config table: every broker and topic config the reference broker knows, as data, Kafka 4.0's way.

Each row is what Kafka's ``ConfigDef.define(...)`` says: name, type, default, validator, importance. Broker
rows add the update mode Kafka's documentation prints (from ``DynamicBrokerConfig``: per-broker,
cluster-wide or read-only). Topic rows add their broker synonyms in Kafka's order of precedence
(``ServerTopicConfigSynonyms``), with the unit conversion for the ``*.hours``/``*.minutes`` forms.

Sources, Apache Kafka trunk of October 2024 with the 4.0 changes from its upgrade notes and KIP-1030 applied:
``LogConfig`` (topic table and ``SERVER_CONFIG_DEF``), ``ServerLogConfigs``, ``ServerConfigs``,
``KRaftConfigs``, ``SocketServerConfigs``, ``ReplicationConfigs``, ``GroupCoordinatorConfig``,
``TransactionLogConfig``, ``TransactionStateManagerConfig``, ``CleanerConfig``, ``RemoteLogManagerConfig``,
``QuotaConfig``, ``BrokerSecurityConfigs``, ``QuorumConfig``, ``CompressionType``, ``BrokerCompressionType``.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from types import MappingProxyType

from ._validators import (
    CaseInsensitiveValidString,
    GzipLevel,
    KnownAuthorizer,
    PeerAddressList,
    ThrottledReplicaList,
    Validator,
    ValidList,
    ValidString,
    at_least,
    between,
)
from ._values import ConfigType, parse_value, to_kafka_string

__all__ = [
    "Importance",
    "UpdateMode",
    "REQUIRED",
    "ConfigDefinition",
    "Synonym",
    "BROKER_CONFIGS",
    "TOPIC_CONFIGS",
    "TOPIC_CONFIG_SYNONYMS",
    "COMPRESSION_TYPES",
]


class Importance(Enum):
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


class UpdateMode(Enum):
    """How a broker config may change while the broker runs (the "Update Mode" of Kafka's docs)."""

    READ_ONLY = "read-only"
    PER_BROKER = "per-broker"
    CLUSTER_WIDE = "cluster-wide"


class _Required:
    """``ConfigDef.NO_DEFAULT_VALUE``: the config must be supplied."""

    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED = _Required()


@dataclass(frozen=True)
class Synonym:
    """A broker config that supplies a topic config's value; ``ms_per_unit`` converts hours or minutes."""

    name: str
    ms_per_unit: int = 1


@dataclass(frozen=True)
class ConfigDefinition:
    name: str
    type: ConfigType
    default: object
    validator: Validator | None
    importance: Importance
    update_mode: UpdateMode | None = None  # None for topic configs, which are always dynamic
    internal: bool = False  # accepted, but not listed by DescribeConfigs (ConfigDef.defineInternal)
    note: str = ""  # what the reference broker does with it, where that differs from Kafka

    @property
    def has_default(self) -> bool:
        return self.default is not REQUIRED

    @property
    def sensitive(self) -> bool:
        return self.type is ConfigType.PASSWORD

    @property
    def default_string(self) -> str | None:
        return None if self.default is REQUIRED else to_kafka_string(self.default, self.type)

    def parse(self, raw: str) -> object:
        """Parse and validate a supplied value, as ``ConfigDef.parseValue`` does; raises ConfigError."""
        value = parse_value(self.name, self.type, raw)
        if self.validator is not None:
            self.validator.check(self.name, value)
        return value


# One-letter type names keep the table to one line a row (N is INT: ruff reserves I).
B, S, N, SH, L, D, LI, C, P = (
    ConfigType.BOOLEAN,
    ConfigType.STRING,
    ConfigType.INT,
    ConfigType.SHORT,
    ConfigType.LONG,
    ConfigType.DOUBLE,
    ConfigType.LIST,
    ConfigType.CLASS,
    ConfigType.PASSWORD,
)
HIGH, MEDIUM, LOW = Importance.HIGH, Importance.MEDIUM, Importance.LOW
RO, PB, CW = UpdateMode.READ_ONLY, UpdateMode.PER_BROKER, UpdateMode.CLUSTER_WIDE

INT_MAX = 2**31 - 1
LONG_MAX = 2**63 - 1
DOUBLE_MAX = sys.float_info.max
HOUR_MS = 3_600_000
MINUTE_MS = 60_000
WEEK_MS = 7 * 24 * HOUR_MS

# BrokerCompressionType, in its declaration order (the order Kafka's error message lists them).
COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
_GZIP_LEVEL = GzipLevel()
_LZ4_LEVEL = between(1, 17)
_ZSTD_LEVEL = between(-131072, 22)  # ZSTD_minCLevel() .. ZSTD_MAX_CLEVEL
_SEGMENT_BYTES_MIN = 1024 * 1024  # KIP-1030, Kafka 4.0 (14 bytes before)
MAX_MESSAGE_BYTES_DEFAULT = 1024 * 1024 + 12  # 1 MiB + Records.LOG_OVERHEAD

THREADS_NOTE = (
    "accepted and reported; the reference broker is one asyncio process per node and sizes no thread pool"
)
TIERED_NOTE = "refused unless at its default (config/_support.py): the reference broker has no tiered storage"
AUTHORIZER_NOTE = "StandardAuthorizer's own setting, not KafkaConfig's"
NO_OP_NOTE = "accepted and reported; a no-op in Kafka 4.0 as well"
PEER_NOTE = (
    "kconform's own test hook, not a Kafka property: where this broker dials each peer broker "
    "(replication, markers, AddPartitionsToTxn), e.g. a proxy per link in a chaos run"
)
SELECTOR_NOTE = (
    "Kafka loads any ReplicaSelector on its class path; the reference broker has only "
    "org.apache.kafka.common.replica.RackAwareReplicaSelector"
)


def _index(rows: list[ConfigDefinition]) -> Mapping[str, ConfigDefinition]:
    table = {row.name: row for row in rows}
    assert len(table) == len(rows), "duplicate config name in the table"
    return MappingProxyType(table)


def _b(name, type_, default, validator, importance, mode=RO, *, note="", internal=False) -> ConfigDefinition:
    return ConfigDefinition(name, type_, default, validator, importance, mode, internal, note)


def _t(name, type_, default, validator, importance=MEDIUM, *, note="") -> ConfigDefinition:
    return ConfigDefinition(name, type_, default, validator, importance, None, False, note)


# The topic configs, in LogConfig's definition order (the order Kafka validates them in).
TOPIC_CONFIGS = _index(
    [
        _t("segment.bytes", N, 1024**3, at_least(_SEGMENT_BYTES_MIN)),
        _t("segment.ms", L, WEEK_MS, at_least(1)),
        _t("segment.jitter.ms", L, 0, at_least(0)),
        _t("segment.index.bytes", N, 10 * 1024 * 1024, at_least(4)),
        _t("flush.messages", L, LONG_MAX, at_least(1)),
        _t("flush.ms", L, LONG_MAX, at_least(0)),
        _t("retention.bytes", L, -1, None),
        _t("retention.ms", L, WEEK_MS, at_least(-1)),
        _t("max.message.bytes", N, MAX_MESSAGE_BYTES_DEFAULT, at_least(0)),
        _t("index.interval.bytes", N, 4096, at_least(0)),
        _t("delete.retention.ms", L, 24 * HOUR_MS, at_least(0)),
        _t("min.compaction.lag.ms", L, 0, at_least(0)),
        _t("max.compaction.lag.ms", L, LONG_MAX, at_least(1)),
        _t("file.delete.delay.ms", L, 60_000, at_least(0)),
        _t("min.cleanable.dirty.ratio", D, 0.5, between(0, 1)),
        _t("cleanup.policy", LI, ["delete"], ValidList(("compact", "delete"))),
        _t("unclean.leader.election.enable", B, False, None),
        _t("min.insync.replicas", N, 1, at_least(1)),
        _t("compression.type", S, "producer", ValidString(COMPRESSION_TYPES)),
        _t("compression.gzip.level", N, -1, _GZIP_LEVEL),
        _t("compression.lz4.level", N, 9, _LZ4_LEVEL),
        _t("compression.zstd.level", N, 3, _ZSTD_LEVEL),
        _t("preallocate", B, False, None),
        _t("message.timestamp.type", S, "CreateTime", ValidString(("CreateTime", "LogAppendTime"))),
        _t("message.timestamp.before.max.ms", L, LONG_MAX, at_least(0)),
        _t("message.timestamp.after.max.ms", L, HOUR_MS, at_least(0)),  # KIP-1030: 1 hour in 4.0
        _t("leader.replication.throttled.replicas", LI, [], ThrottledReplicaList()),
        _t("follower.replication.throttled.replicas", LI, [], ThrottledReplicaList()),
        _t("message.downconversion.enable", B, True, None, LOW, note=NO_OP_NOTE),
        _t("remote.storage.enable", B, False, None, note=TIERED_NOTE),
        _t("local.retention.ms", L, -2, at_least(-2), note=TIERED_NOTE),
        _t("local.retention.bytes", L, -2, at_least(-2), note=TIERED_NOTE),
        _t("remote.log.copy.disable", B, False, None, note=TIERED_NOTE),
        _t("remote.log.delete.on.disable", B, False, None, note=TIERED_NOTE),
    ]
)


def _same(prefix: str, topic_name: str) -> tuple[Synonym, ...]:
    return (Synonym(prefix + topic_name),)


# ServerTopicConfigSynonyms.ALL_TOPIC_CONFIG_SYNONYMS: the first synonym that is set wins.
TOPIC_CONFIG_SYNONYMS: Mapping[str, tuple[Synonym, ...]] = MappingProxyType(
    {
        "segment.bytes": _same("log.", "segment.bytes"),
        "segment.ms": (Synonym("log.roll.ms"), Synonym("log.roll.hours", HOUR_MS)),
        "segment.jitter.ms": (Synonym("log.roll.jitter.ms"), Synonym("log.roll.jitter.hours", HOUR_MS)),
        "segment.index.bytes": (Synonym("log.index.size.max.bytes"),),
        "flush.messages": (Synonym("log.flush.interval.messages"),),
        "flush.ms": (Synonym("log.flush.interval.ms"), Synonym("log.flush.scheduler.interval.ms")),
        "retention.bytes": _same("log.", "retention.bytes"),
        "retention.ms": (
            Synonym("log.retention.ms"),
            Synonym("log.retention.minutes", MINUTE_MS),
            Synonym("log.retention.hours", HOUR_MS),
        ),
        "max.message.bytes": (Synonym("message.max.bytes"),),
        "index.interval.bytes": _same("log.", "index.interval.bytes"),
        "delete.retention.ms": _same("log.cleaner.", "delete.retention.ms"),
        "min.compaction.lag.ms": _same("log.cleaner.", "min.compaction.lag.ms"),
        "max.compaction.lag.ms": _same("log.cleaner.", "max.compaction.lag.ms"),
        "file.delete.delay.ms": (Synonym("log.segment.delete.delay.ms"),),
        "min.cleanable.dirty.ratio": (Synonym("log.cleaner.min.cleanable.ratio"),),
        "cleanup.policy": _same("log.", "cleanup.policy"),
        "unclean.leader.election.enable": _same("", "unclean.leader.election.enable"),
        "min.insync.replicas": _same("", "min.insync.replicas"),
        "compression.type": _same("", "compression.type"),
        "compression.gzip.level": _same("", "compression.gzip.level"),
        "compression.lz4.level": _same("", "compression.lz4.level"),
        "compression.zstd.level": _same("", "compression.zstd.level"),
        "preallocate": _same("log.", "preallocate"),
        "message.timestamp.type": _same("log.", "message.timestamp.type"),
        "message.timestamp.before.max.ms": _same("log.", "message.timestamp.before.max.ms"),
        "message.timestamp.after.max.ms": _same("log.", "message.timestamp.after.max.ms"),
        "message.downconversion.enable": _same("log.", "message.downconversion.enable"),
        "local.retention.ms": _same("log.", "local.retention.ms"),
        "local.retention.bytes": _same("log.", "local.retention.bytes"),
    }
)

_PROTOCOL_MAP_DEFAULT = "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"
_SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_PRINCIPAL_BUILDER = "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder"
_GROUP_TYPES = ("consumer", "classic", "share", "unknown")  # Utils.enumOptions(Group.GroupType.class)

BROKER_CONFIGS = _index(
    [
        # Node identity and KRaft (KRaftConfigs, QuorumConfig, ServerConfigs); 4.0 runs KRaft only.
        _b("process.roles", LI, REQUIRED, ValidList(("broker", "controller")), HIGH),
        _b("node.id", N, REQUIRED, at_least(0), HIGH),
        _b("broker.id", N, -1, None, HIGH),
        _b("controller.listener.names", S, None, None, HIGH),
        _b("controller.quorum.voters", LI, [], None, HIGH),
        _b("controller.quorum.bootstrap.servers", LI, [], None, HIGH),
        _b("metadata.log.dir", S, None, None, HIGH),
        _b("broker.session.timeout.ms", N, 9000, None, MEDIUM),  # the controller fences past it
        _b("broker.heartbeat.interval.ms", N, 2000, None, MEDIUM),
        _b("unclean.leader.election.interval.ms", L, 300_000, at_least(1), MEDIUM),
        _b("broker.rack", S, None, None, MEDIUM),
        _b("kconform.interbroker.addresses", LI, [], PeerAddressList(), LOW, note=PEER_NOTE, internal=True),
        # Listeners and sockets (SocketServerConfigs, ReplicationConfigs).
        _b("listeners", S, "PLAINTEXT://:9092", None, HIGH, PB),
        _b("advertised.listeners", S, None, None, HIGH, PB),
        _b("listener.security.protocol.map", S, _PROTOCOL_MAP_DEFAULT, None, LOW, PB),
        _b("inter.broker.listener.name", S, None, None, MEDIUM),
        _b("security.inter.broker.protocol", S, "PLAINTEXT", ValidString(_SECURITY_PROTOCOLS), MEDIUM),
        _b("socket.send.buffer.bytes", N, 100 * 1024, None, HIGH),
        _b("socket.receive.buffer.bytes", N, 100 * 1024, None, HIGH),
        _b("socket.request.max.bytes", N, 100 * 1024 * 1024, at_least(1), HIGH),
        _b("socket.listen.backlog.size", N, 50, at_least(1), MEDIUM),
        _b("connections.max.idle.ms", L, 10 * MINUTE_MS, None, MEDIUM),
        _b("max.connections", N, INT_MAX, at_least(0), MEDIUM, CW),
        _b("max.connections.per.ip", N, INT_MAX, at_least(0), MEDIUM, CW),
        _b("max.connections.per.ip.overrides", S, "", None, MEDIUM, CW),
        _b("max.connection.creation.rate", N, INT_MAX, at_least(0), MEDIUM, CW),
        _b("queued.max.requests", N, 500, at_least(1), HIGH),
        _b("queued.max.request.bytes", L, -1, None, MEDIUM),
        _b("request.timeout.ms", N, 30_000, None, HIGH),
        _b("num.network.threads", N, 3, at_least(1), HIGH, CW, note=THREADS_NOTE),
        _b("num.io.threads", N, 8, at_least(1), HIGH, CW, note=THREADS_NOTE),
        _b("background.threads", N, 10, at_least(1), HIGH, CW, note=THREADS_NOTE),
        _b("num.replica.fetchers", N, 1, None, HIGH, CW, note=THREADS_NOTE),
        _b("num.recovery.threads.per.data.dir", N, 2, at_least(1), HIGH, CW, note=THREADS_NOTE),  # KIP-1030
        # Security (BrokerSecurityConfigs.CONFIG_DEF, SslConfigs, SaslConfigs, SocketServerConfigs); the
        # per-broker ones are DynamicListenerConfig.ReconfigurableConfigs.
        _b("ssl.keystore.location", S, None, None, MEDIUM, PB),
        _b("ssl.keystore.password", P, None, None, MEDIUM, PB),
        _b("ssl.key.password", P, None, None, MEDIUM, PB),
        _b("ssl.keystore.type", S, "JKS", None, MEDIUM, PB),
        _b("ssl.keystore.certificate.chain", P, None, None, MEDIUM, PB),
        _b("ssl.keystore.key", P, None, None, MEDIUM, PB),
        _b("ssl.truststore.location", S, None, None, MEDIUM, PB),
        _b("ssl.truststore.password", P, None, None, MEDIUM, PB),
        _b("ssl.truststore.type", S, "JKS", None, MEDIUM, PB),
        _b("ssl.truststore.certificates", P, None, None, MEDIUM, PB),
        _b("ssl.client.auth", S, "none", ValidString(("required", "requested", "none")), MEDIUM, PB),
        _b("ssl.principal.mapping.rules", S, "DEFAULT", None, LOW),
        _b("ssl.enabled.protocols", LI, ["TLSv1.2", "TLSv1.3"], None, MEDIUM, PB),
        _b("ssl.protocol", S, "TLSv1.3", None, MEDIUM, PB),
        _b("ssl.cipher.suites", LI, [], None, MEDIUM, PB),
        _b("ssl.endpoint.identification.algorithm", S, "https", None, LOW, PB),
        _b("principal.builder.class", C, _PRINCIPAL_BUILDER, None, MEDIUM, PB),
        _b("sasl.enabled.mechanisms", LI, ["GSSAPI"], None, MEDIUM, PB),
        _b("sasl.mechanism.inter.broker.protocol", S, "GSSAPI", None, MEDIUM, PB),
        _b("sasl.mechanism.controller.protocol", S, "GSSAPI", None, HIGH),
        _b("sasl.jaas.config", P, None, None, MEDIUM, PB),
        _b("sasl.server.callback.handler.class", C, None, None, MEDIUM),
        _b("sasl.server.max.receive.size", N, 524288, None, MEDIUM),
        _b("sasl.oauthbearer.expected.audience", LI, None, None, LOW),
        _b("sasl.oauthbearer.expected.issuer", S, None, None, LOW),
        _b("sasl.oauthbearer.jwks.endpoint.url", S, None, None, MEDIUM),
        _b("sasl.oauthbearer.scope.claim.name", S, "scope", None, LOW),
        _b("sasl.oauthbearer.sub.claim.name", S, "sub", None, LOW),
        _b("sasl.oauthbearer.clock.skew.seconds", N, 30, None, LOW),
        _b("connections.max.reauth.ms", L, 0, None, MEDIUM),
        _b("connection.failed.authentication.delay.ms", N, 100, at_least(0), LOW),
        _b("authorizer.class.name", S, "", KnownAuthorizer(), LOW),
        # StandardAuthorizer reads these itself; KafkaConfig does not define them, so DescribeConfigs
        # does not list them (internal), but they are rows so that they are classified.
        _b("super.users", S, None, None, LOW, internal=True, note=AUTHORIZER_NOTE),
        _b("allow.everyone.if.no.acl.found", B, False, None, LOW, internal=True, note=AUTHORIZER_NOTE),
        _b("metric.reporters", LI, ["org.apache.kafka.common.metrics.JmxReporter"], None, LOW, CW),
        # Topics and the log (LogConfig.SERVER_CONFIG_DEF, ServerConfigs, CleanerConfig).
        _b("log.dir", S, "/tmp/kafka-logs", None, HIGH),
        _b("log.dirs", S, None, None, HIGH),
        _b("num.partitions", N, 1, at_least(1), MEDIUM),
        _b("default.replication.factor", N, 1, None, MEDIUM),
        _b("auto.create.topics.enable", B, True, None, HIGH),
        _b("delete.topic.enable", B, True, None, HIGH),
        _b("message.max.bytes", N, MAX_MESSAGE_BYTES_DEFAULT, at_least(0), HIGH, CW),
        _b("log.segment.bytes", N, 1024**3, at_least(_SEGMENT_BYTES_MIN), HIGH, CW),
        _b("log.roll.ms", L, None, None, HIGH, CW),
        _b("log.roll.hours", N, 168, at_least(1), HIGH),
        _b("log.roll.jitter.ms", L, None, None, HIGH, CW),
        _b("log.roll.jitter.hours", N, 0, at_least(0), HIGH),
        _b("log.retention.ms", L, None, None, HIGH, CW),
        _b("log.retention.minutes", N, None, None, HIGH),
        _b("log.retention.hours", N, 168, None, HIGH),
        _b("log.retention.bytes", L, -1, None, HIGH, CW),
        _b("log.retention.check.interval.ms", L, 5 * MINUTE_MS, at_least(1), MEDIUM),
        _b("log.cleanup.policy", LI, ["delete"], ValidList(("compact", "delete")), MEDIUM, CW),
        _b("log.index.size.max.bytes", N, 10 * 1024 * 1024, at_least(4), MEDIUM, CW),
        _b("log.index.interval.bytes", N, 4096, at_least(0), MEDIUM, CW),
        _b("log.flush.interval.messages", L, LONG_MAX, at_least(1), HIGH, CW),
        _b("log.segment.delete.delay.ms", L, 60_000, at_least(0), HIGH, CW),
        _b("log.flush.scheduler.interval.ms", L, LONG_MAX, None, HIGH),
        _b("log.flush.interval.ms", L, None, None, HIGH, CW),
        _b("log.flush.offset.checkpoint.interval.ms", N, 60_000, at_least(0), HIGH),
        _b("log.flush.start.offset.checkpoint.interval.ms", N, 60_000, at_least(0), HIGH),
        _b("log.preallocate", B, False, None, MEDIUM, CW),
        _b(
            "log.message.timestamp.type",
            S,
            "CreateTime",
            ValidString(("CreateTime", "LogAppendTime")),
            MEDIUM,
            CW,
        ),
        _b("log.message.timestamp.before.max.ms", L, LONG_MAX, at_least(0), MEDIUM, CW),
        _b("log.message.timestamp.after.max.ms", L, HOUR_MS, at_least(0), MEDIUM, CW),  # KIP-1030
        _b("log.message.downconversion.enable", B, True, None, LOW, CW, note=NO_OP_NOTE),
        _b("log.dir.failure.timeout.ms", L, 30_000, at_least(1), LOW),
        _b("create.topic.policy.class.name", C, None, None, LOW),
        _b("alter.config.policy.class.name", C, None, None, LOW),
        _b("min.insync.replicas", N, 1, at_least(1), HIGH, CW),
        _b("compression.type", S, "producer", ValidString(COMPRESSION_TYPES), HIGH, CW),
        _b("compression.gzip.level", N, -1, _GZIP_LEVEL, MEDIUM, CW),
        _b("compression.lz4.level", N, 9, _LZ4_LEVEL, MEDIUM, CW),
        _b("compression.zstd.level", N, 3, _ZSTD_LEVEL, MEDIUM, CW),
        _b("unclean.leader.election.enable", B, False, None, HIGH, CW),
        _b("log.cleaner.enable", B, True, None, MEDIUM),
        _b("log.cleaner.threads", N, 1, at_least(0), MEDIUM, CW),
        _b("log.cleaner.io.max.bytes.per.second", D, DOUBLE_MAX, None, MEDIUM, CW),
        _b("log.cleaner.dedupe.buffer.size", L, 128 * 1024 * 1024, None, MEDIUM, CW),
        _b("log.cleaner.io.buffer.size", N, 512 * 1024, at_least(0), MEDIUM, CW),
        _b("log.cleaner.io.buffer.load.factor", D, 0.9, None, MEDIUM, CW),
        _b("log.cleaner.backoff.ms", L, 15_000, at_least(0), MEDIUM, CW),
        _b("log.cleaner.min.cleanable.ratio", D, 0.5, between(0, 1), MEDIUM, CW),
        _b("log.cleaner.delete.retention.ms", L, 24 * HOUR_MS, at_least(0), MEDIUM, CW),
        _b("log.cleaner.min.compaction.lag.ms", L, 0, at_least(0), MEDIUM, CW),
        _b("log.cleaner.max.compaction.lag.ms", L, LONG_MAX, at_least(1), MEDIUM, CW),
        _b("log.local.retention.ms", L, -2, at_least(-2), MEDIUM, CW, note=TIERED_NOTE),
        _b("log.local.retention.bytes", L, -2, at_least(-2), MEDIUM, CW, note=TIERED_NOTE),
        _b("remote.log.storage.system.enable", B, False, None, MEDIUM, note=TIERED_NOTE),
        # Client quotas (QuotaConfig): the sensors' windows.
        _b("quota.window.num", N, 11, at_least(1), LOW),
        _b("quota.window.size.seconds", N, 1, at_least(1), LOW),
        # Replication and fetch (ReplicationConfigs, ServerConfigs).
        _b("replica.lag.time.max.ms", L, 30_000, None, HIGH),
        _b("replica.fetch.max.bytes", N, 1024 * 1024, at_least(0), MEDIUM),
        _b("replica.fetch.wait.max.ms", N, 500, None, HIGH),
        _b("replica.fetch.min.bytes", N, 1, None, HIGH),
        _b("replica.fetch.backoff.ms", N, 1000, at_least(0), MEDIUM),
        _b("replica.fetch.response.max.bytes", N, 10 * 1024 * 1024, at_least(0), MEDIUM),
        _b("replica.socket.timeout.ms", N, 30_000, None, HIGH),
        _b("replica.socket.receive.buffer.bytes", N, 64 * 1024, None, HIGH),
        _b("replica.high.watermark.checkpoint.interval.ms", L, 5000, None, HIGH),
        _b("replica.selector.class", S, None, None, MEDIUM, note=SELECTOR_NOTE),
        _b("auto.leader.rebalance.enable", B, True, None, HIGH),
        _b("leader.imbalance.per.broker.percentage", N, 10, None, HIGH),
        _b("leader.imbalance.check.interval.seconds", L, 300, at_least(1), HIGH),
        _b("fetch.max.bytes", N, 55 * 1024 * 1024, at_least(1024), MEDIUM),
        _b("max.incremental.fetch.session.cache.slots", N, 1000, at_least(0), MEDIUM),
        _b("fetch.purgatory.purge.interval.requests", N, 1000, None, MEDIUM),
        _b("producer.purgatory.purge.interval.requests", N, 1000, None, MEDIUM),
        _b("delete.records.purgatory.purge.interval.requests", N, 1, None, MEDIUM),
        # Groups and offsets (GroupCoordinatorConfig).
        _b("group.initial.rebalance.delay.ms", N, 3000, None, MEDIUM),
        _b("group.min.session.timeout.ms", N, 6000, None, MEDIUM),
        _b("group.max.session.timeout.ms", N, 1_800_000, None, MEDIUM),
        _b("group.max.size", N, INT_MAX, at_least(1), MEDIUM),
        _b(
            "group.coordinator.rebalance.protocols",
            LI,
            ["classic", "consumer"],
            ValidList(_GROUP_TYPES),
            MEDIUM,
        ),
        _b("group.consumer.session.timeout.ms", N, 45_000, at_least(1), MEDIUM),
        _b("group.consumer.min.session.timeout.ms", N, 45_000, at_least(1), MEDIUM),
        _b("group.consumer.max.session.timeout.ms", N, 60_000, at_least(1), MEDIUM),
        _b("group.consumer.heartbeat.interval.ms", N, 5000, at_least(1), MEDIUM),
        _b("group.consumer.min.heartbeat.interval.ms", N, 5000, at_least(1), MEDIUM),
        _b("group.consumer.max.heartbeat.interval.ms", N, 15_000, at_least(1), MEDIUM),
        _b("group.consumer.max.size", N, INT_MAX, at_least(1), MEDIUM),
        _b("group.consumer.assignors", LI, ["uniform", "range"], None, MEDIUM),
        _b(
            "group.consumer.migration.policy",
            S,
            "bidirectional",
            CaseInsensitiveValidString(("bidirectional", "upgrade", "downgrade", "disabled")),
            MEDIUM,
            internal=True,
        ),
        _b("offsets.topic.num.partitions", N, 50, at_least(1), HIGH),
        _b("offsets.topic.replication.factor", SH, 3, at_least(1), HIGH),
        _b("offsets.topic.segment.bytes", N, 100 * 1024 * 1024, at_least(1), HIGH),
        _b("offsets.topic.compression.codec", N, 0, None, HIGH),
        _b("offsets.retention.minutes", N, 7 * 24 * 60, at_least(1), HIGH),
        _b("offsets.retention.check.interval.ms", L, 600_000, at_least(1), HIGH),
        _b("offsets.commit.timeout.ms", N, 5000, at_least(1), HIGH),
        _b("offsets.load.buffer.size", N, 5 * 1024 * 1024, at_least(1), HIGH),
        _b("offset.metadata.max.bytes", N, 4096, None, HIGH),
        # Transactions and producer ids (TransactionStateManagerConfig, TransactionLogConfig).
        _b("transaction.max.timeout.ms", N, 15 * MINUTE_MS, at_least(1), HIGH),
        _b("transactional.id.expiration.ms", N, 7 * 24 * HOUR_MS, at_least(1), HIGH),
        _b("transaction.state.log.num.partitions", N, 50, at_least(1), HIGH),
        _b("transaction.state.log.replication.factor", SH, 3, at_least(1), HIGH),
        _b("transaction.state.log.min.isr", N, 2, at_least(1), HIGH),
        _b("transaction.state.log.segment.bytes", N, 100 * 1024 * 1024, at_least(1), HIGH),
        _b("transaction.state.log.load.buffer.size", N, 5 * 1024 * 1024, at_least(1), HIGH),
        _b("transaction.abort.timed.out.transaction.cleanup.interval.ms", N, 10_000, at_least(1), LOW),
        _b("transaction.remove.expired.transaction.cleanup.interval.ms", N, HOUR_MS, at_least(1), LOW),
        _b("transaction.partition.verification.enable", B, True, None, LOW, CW),
        _b("producer.id.expiration.ms", N, 24 * HOUR_MS, at_least(1), LOW, CW),
    ]
)
