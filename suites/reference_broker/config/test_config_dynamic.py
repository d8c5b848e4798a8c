"""Dynamic broker configs read back from the metadata log, against Kafka's DynamicBrokerConfig
(core/src/main/scala/kafka/server/DynamicBrokerConfig.scala: fromPersistentProps, updateDefaultConfig,
updateBrokerConfig): what a node ignores there and what it keeps when a layer is refused."""

from __future__ import annotations

from kconform.reference_broker.config import BrokerConfig, persisted_layer, with_persisted_dynamic

MINIMAL = {"node.id": "1", "process.roles": "broker,controller", "message.max.bytes": "1500000"}


def test_a_stored_layer_loses_what_cannot_be_dynamic():
    """removeInvalidConfigs (values), nonDynamicConfigs, securityConfigsWithoutListenerPrefix and, at
    cluster level, perBrokerConfigs are removed; unknown names (plugins' configs) stay."""
    stored = {
        "log.retention.ms": "x",
        "log.dirs": "/elsewhere",
        "ssl.key.password": "p",
        "listeners": "PLAINTEXT://:1",
        "message.max.bytes": "2000",
        "my.plugin.setting": "y",
    }
    kept, problems = persisted_layer(stored, per_broker=False)
    assert kept == {"message.max.bytes": "2000", "my.plugin.setting": "y"}
    assert len(problems) == 4 and "log.dirs" in problems[1]
    kept, _ = persisted_layer(stored, per_broker=True)
    assert kept == {"listeners": "PLAINTEXT://:1", "message.max.bytes": "2000", "my.plugin.setting": "y"}


def test_layers_apply_default_then_per_broker_and_a_refused_layer_keeps_the_old_one():
    """updateCurrentConfig: a configuration KafkaConfig refuses (here: less than 1MB of dedupe buffer per
    cleaner thread) is logged and the node keeps the configuration it had."""
    config, problems = with_persisted_dynamic(
        BrokerConfig(MINIMAL),
        cluster_default={"message.max.bytes": "2000", "log.retention.ms": "60000"},
        per_broker={"message.max.bytes": "3000"},
    )
    assert (config["message.max.bytes"], config["log.retention.ms"], problems) == (3000, 60000, [])
    refused, problems = with_persisted_dynamic(
        config,
        cluster_default={"log.cleaner.threads": "2", "log.cleaner.dedupe.buffer.size": "1048576"},
        per_broker={"message.max.bytes": "4000"},
    )
    assert refused["log.cleaner.threads"] == config["log.cleaner.threads"]
    assert refused["log.retention.ms"] == 60000 and refused["message.max.bytes"] == 4000
    assert len(problems) == 1 and "could not be applied" in problems[0]
