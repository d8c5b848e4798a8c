"""What the reference broker does with each broker config of the table, as data: every row of
``BROKER_CONFIGS`` is in exactly one of three classes, so a new row cannot be forgotten (a suite checks).

- ``IMPLEMENTED``: the broker honours the value (read where it acts, or through the topic-config synonyms
  of ``BrokerConfig.log_config()``).
- ``IGNORED``: accepted and ignored, each with the reason it cannot change what a client observes (thread
  counts, socket buffers, metrics, housekeeping cadence). These are the tuning properties a Kafka
  ``server.properties`` may carry that the reference broker accepts without acting on them.
- ``NOT_IMPLEMENTED``: each with the feature it belongs to. Setting one to anything but Kafka's default
  stops the broker at start (``_refusals.refused_settings``); at its default it changes nothing.

Move a row from ``NOT_IMPLEMENTED`` to ``IMPLEMENTED`` when the feature lands.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

__all__ = ["IGNORED", "IMPLEMENTED", "NOT_IMPLEMENTED", "PER_LISTENER", "PER_MECHANISM"]

IMPLEMENTED = frozenset(
    {
        # node identity, KRaft and the controller (node.py, controller/controller.py, broker_lifecycle.py)
        "process.roles",
        "node.id",
        "broker.id",
        "controller.quorum.voters",
        "controller.quorum.bootstrap.servers",
        "broker.session.timeout.ms",
        "broker.heartbeat.interval.ms",
        "unclean.leader.election.interval.ms",
        "auto.leader.rebalance.enable",
        "leader.imbalance.check.interval.seconds",
        "broker.rack",
        "kconform.interbroker.addresses",  # the project's own test hook
        # StandardAuthorizer, the one class authorizer.class.name may name (acl_authorizer.py)
        "authorizer.class.name",
        "super.users",
        "allow.everyone.if.no.acl.found",
        # listeners and security (security/listeners.py, tls.py, jaas.py, listener_security.py)
        "listeners",
        "advertised.listeners",
        "listener.security.protocol.map",
        "inter.broker.listener.name",
        "security.inter.broker.protocol",
        "controller.listener.names",
        "ssl.keystore.location",
        "ssl.keystore.password",
        "ssl.key.password",
        "ssl.keystore.type",
        "ssl.keystore.certificate.chain",
        "ssl.keystore.key",
        "ssl.truststore.location",
        "ssl.truststore.password",
        "ssl.truststore.type",
        "ssl.truststore.certificates",
        "ssl.client.auth",
        "ssl.principal.mapping.rules",
        "ssl.enabled.protocols",
        "ssl.protocol",
        "ssl.cipher.suites",
        "sasl.enabled.mechanisms",
        "sasl.mechanism.inter.broker.protocol",
        "sasl.mechanism.controller.protocol",
        "ssl.endpoint.identification.algorithm",
        "sasl.jaas.config",
        "connections.max.reauth.ms",
        "connection.failed.authentication.delay.ms",
        # connections (server.py; the limits: connection_limits.py, node_listeners.py)
        "socket.request.max.bytes",
        "max.connections",
        "max.connections.per.ip",
        "max.connections.per.ip.overrides",
        "max.connection.creation.rate",  # and the ip quota's rate: connection_rates.py
        "connections.max.idle.ms",
        "request.timeout.ms",  # inter-broker requests: markers, verification, replica fetches
        # client quota sensors (quotas/)
        "quota.window.num",
        "quota.window.size.seconds",
        # the log: log.dirs (only one directory: see _refusals) and the topic defaults of log_config()
        "log.dir",
        "log.dirs",
        "log.retention.check.interval.ms",
        "message.max.bytes",
        "log.segment.bytes",
        "log.roll.ms",
        "log.roll.hours",
        "log.roll.jitter.ms",
        "log.roll.jitter.hours",
        "log.retention.ms",
        "log.retention.minutes",
        "log.retention.hours",
        "log.retention.bytes",
        "log.cleanup.policy",
        "log.index.size.max.bytes",
        "log.index.interval.bytes",
        "log.flush.interval.messages",
        "log.flush.interval.ms",
        "log.flush.scheduler.interval.ms",  # flush.ms's last synonym; the node checks flushes every tick
        "log.segment.delete.delay.ms",
        "log.message.timestamp.type",
        "log.message.timestamp.before.max.ms",
        "log.message.timestamp.after.max.ms",
        "log.message.downconversion.enable",
        "min.insync.replicas",
        "compression.type",
        "compression.gzip.level",
        "compression.lz4.level",
        "compression.zstd.level",
        "unclean.leader.election.enable",
        # The reference broker has no log cleaner: it never compacts, which is what false asks for. The
        # default (true) is not honoured, but a default is never refused.
        "log.cleaner.enable",
        # topics
        "num.partitions",
        "default.replication.factor",
        "auto.create.topics.enable",
        # replication (replication/manager.py, fetcher.py, read_replica.py)
        "replica.lag.time.max.ms",
        "replica.fetch.max.bytes",
        "replica.fetch.wait.max.ms",
        "replica.fetch.min.bytes",
        "replica.fetch.backoff.ms",
        "replica.fetch.response.max.bytes",
        "replica.selector.class",  # only RackAwareReplicaSelector passes its validator
        "max.incremental.fetch.session.cache.slots",
        # groups and offsets (groups/coordinator.py, internal_topics.py)
        "group.initial.rebalance.delay.ms",
        "group.min.session.timeout.ms",
        "group.max.session.timeout.ms",
        "group.max.size",
        "group.consumer.session.timeout.ms",
        "group.consumer.heartbeat.interval.ms",
        # The bounds apply to the configured values at start (GroupCoordinatorConfig, BrokerConfig checks)
        # and to per-group configs, which the reference broker does not take: that is all they do.
        "group.consumer.min.session.timeout.ms",
        "group.consumer.max.session.timeout.ms",
        "group.consumer.min.heartbeat.interval.ms",
        "group.consumer.max.heartbeat.interval.ms",
        "group.consumer.max.size",
        "group.consumer.assignors",
        "group.consumer.migration.policy",
        "offsets.topic.num.partitions",
        "offsets.topic.replication.factor",
        "offsets.topic.segment.bytes",
        "offsets.commit.timeout.ms",
        "offset.metadata.max.bytes",
        # transactions and producer ids (transactions/, internal_topics.py, storage/)
        "transaction.max.timeout.ms",
        "transaction.state.log.num.partitions",
        "transaction.state.log.replication.factor",
        "transaction.state.log.min.isr",
        "transaction.state.log.segment.bytes",
        "transaction.abort.timed.out.transaction.cleanup.interval.ms",
        "transaction.partition.verification.enable",
        "producer.id.expiration.ms",
    }
)

_THREADS = "thread pool size; the reference broker is one asyncio process per node"
_BUFFER = "socket buffer size: throughput only"
_CHECKPOINT = "checkpoint cadence: how much a restart has to recover, not what it recovers to"
_CLEANER = "log cleaner resources: how fast compaction proceeds (the reference broker never compacts)"
_PURGATORY = "purgatory housekeeping cadence"

IGNORED: Mapping[str, str] = MappingProxyType(
    {
        "num.network.threads": _THREADS,
        "num.io.threads": _THREADS,
        "background.threads": _THREADS,
        "num.replica.fetchers": _THREADS,
        "num.recovery.threads.per.data.dir": _THREADS,
        "socket.send.buffer.bytes": _BUFFER,
        "socket.receive.buffer.bytes": _BUFFER,
        "replica.socket.receive.buffer.bytes": _BUFFER,
        "socket.listen.backlog.size": "listen backlog: how many connection attempts wait to be accepted",
        "queued.max.requests": "request queue size: back-pressure on a busy broker, not outcomes",
        "queued.max.request.bytes": "request queue size: back-pressure on a busy broker, not outcomes",
        "metric.reporters": "metrics reporting (JMX and plug-ins)",
        "log.preallocate": "preallocation of segment files on disk, invisible to clients",
        "log.flush.offset.checkpoint.interval.ms": _CHECKPOINT,
        "log.flush.start.offset.checkpoint.interval.ms": _CHECKPOINT,
        "replica.high.watermark.checkpoint.interval.ms": _CHECKPOINT,
        "log.cleaner.threads": _CLEANER,
        "log.cleaner.io.max.bytes.per.second": _CLEANER,
        "log.cleaner.dedupe.buffer.size": _CLEANER,
        "log.cleaner.io.buffer.size": _CLEANER,
        "log.cleaner.io.buffer.load.factor": _CLEANER,
        "log.cleaner.backoff.ms": _CLEANER,
        "offsets.load.buffer.size": "read buffer for loading __consumer_offsets at start",
        "transaction.state.log.load.buffer.size": "read buffer for loading __transaction_state at start",
        "fetch.purgatory.purge.interval.requests": _PURGATORY,
        "producer.purgatory.purge.interval.requests": _PURGATORY,
        "delete.records.purgatory.purge.interval.requests": _PURGATORY,
        # read only by the ZooKeeper-mode KafkaController, which 4.0 removed: a no-op under KRaft
        "leader.imbalance.per.broker.percentage": "a no-op under KRaft (ZooKeeper-mode controller only)",
        # the reference follower times a fetch out after request.timeout.ms plus replica.fetch.wait.max.ms
        "replica.socket.timeout.ms": "replica fetcher socket timeout; the follower uses request.timeout.ms",
    }
)

_COMPACTION = "log compaction: the reference broker has no log cleaner"
_TIERED = "tiered storage"
_OAUTH = "SASL/OAUTHBEARER"

NOT_IMPLEMENTED: Mapping[str, str] = MappingProxyType(
    {
        "principal.builder.class": "principal builder plug-ins",
        "sasl.server.callback.handler.class": "SASL callback handler plug-ins",
        "sasl.server.max.receive.size": "SASL receive size limit",
        "sasl.oauthbearer.expected.audience": _OAUTH,
        "sasl.oauthbearer.expected.issuer": _OAUTH,
        "sasl.oauthbearer.jwks.endpoint.url": _OAUTH,
        "sasl.oauthbearer.scope.claim.name": _OAUTH,
        "sasl.oauthbearer.sub.claim.name": _OAUTH,
        "sasl.oauthbearer.clock.skew.seconds": _OAUTH,
        "metadata.log.dir": "a separate metadata log directory: it lives under the first of log.dirs",
        "delete.topic.enable": "refusing topic deletion",
        "fetch.max.bytes": "the broker-side cap on a Fetch response",
        "log.dir.failure.timeout.ms": "log directory failure handling",
        "create.topic.policy.class.name": "topic policy plug-ins",
        "alter.config.policy.class.name": "config policy plug-ins",
        "group.coordinator.rebalance.protocols": "turning group protocols off",
        "offsets.topic.compression.codec": "compressing __consumer_offsets",
        "offsets.retention.minutes": "expiring committed offsets",
        "offsets.retention.check.interval.ms": "expiring committed offsets",
        "transactional.id.expiration.ms": "expiring transactional ids",
        "transaction.remove.expired.transaction.cleanup.interval.ms": "expiring transactional ids",
        "log.cleaner.min.cleanable.ratio": _COMPACTION,
        "log.cleaner.delete.retention.ms": _COMPACTION,
        "log.cleaner.min.compaction.lag.ms": _COMPACTION,
        "log.cleaner.max.compaction.lag.ms": _COMPACTION,
        "log.local.retention.ms": _TIERED,
        "log.local.retention.bytes": _TIERED,
        "remote.log.storage.system.enable": _TIERED,
    }
)

# Configs Kafka also reads under a listener prefix, ``listener.name.<listener>.<config>``: the channel
# builders' security configs (ListenerName.configPrefix) and the per-listener connection quotas
# (SocketServer's ListenerConnectionQuota). A prefixed name with any other config is unknown to Kafka.
PER_LISTENER = frozenset(
    {name for name in IMPLEMENTED | NOT_IMPLEMENTED.keys() if name.startswith(("ssl.", "sasl."))}
    | {
        "principal.builder.class",
        "connections.max.reauth.ms",
        "connection.failed.authentication.delay.ms",
        "max.connections",
        "max.connection.creation.rate",
    }
)

# Configs Kafka reads per SASL mechanism, ``listener.name.<listener>.<mechanism>.<config>``
# (DynamicBrokerConfig.ListenerMechanismConfigs; ListenerName.saslMechanismConfigPrefix).
PER_MECHANISM = frozenset(
    {"sasl.jaas.config", "sasl.server.callback.handler.class", "connections.max.reauth.ms"}
)
