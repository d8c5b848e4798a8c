"""Broker and topic configuration, Apache Kafka 4.0's way: the config table, typed parsing, synonyms,
DescribeConfigs entries and the admin-API checks.

A broker starts from ``BrokerConfig.from_sources(path, overrides)``; a topic's effective configs come from
``TopicConfig.resolve(broker_config, topic_overrides)``; CreateTopics, AlterConfigs and
IncrementalAlterConfigs use ``topic_config_error``, ``create_topics_config_error`` and
``apply_incremental`` (``apply_operations`` for any resource type); a node takes the dynamic broker configs
stored in the metadata log with ``with_persisted_dynamic``. Every refusal carries Kafka's own message.

A node refuses to start with a setting it does not implement (``check_supported``, raising
``UnsupportedConfigError``); ``_support`` classifies every config as implemented, accepted-and-ignored
(with the reason) or not implemented.
"""

from ._alter import (
    AlterOp,
    apply_incremental,
    apply_operations,
    create_topics_config_error,
    topic_config_error,
    validate_topic_configs,
)
from ._broker import BrokerConfig
from ._definitions import (
    BROKER_CONFIGS,
    COMPRESSION_TYPES,
    REQUIRED,
    TOPIC_CONFIG_SYNONYMS,
    TOPIC_CONFIGS,
    ConfigDefinition,
    Importance,
    Synonym,
    UpdateMode,
)
from ._describe import (
    ConfigEntry,
    ConfigSource,
    ConfigSynonym,
    TopicConfig,
    broker_synonyms,
    describe_broker_configs,
    describe_default_broker_configs,
)
from ._dynamic import LISTENER_ONLY_CONFIGS, persisted_layer, with_persisted_dynamic
from ._errors import AdminError, ConfigError
from ._properties import load_properties, parse_properties
from ._refusals import (
    VALUE_CHECKS,
    Refusal,
    UnsupportedConfigError,
    carried_config,
    check_supported,
    refused_settings,
)
from ._support import IGNORED, IMPLEMENTED, NOT_IMPLEMENTED
from ._validators import peer_addresses
from ._values import ConfigType, java_int, parse_value, to_kafka_string

__all__ = [
    "peer_addresses",
    "AdminError",
    "AlterOp",
    "BROKER_CONFIGS",
    "BrokerConfig",
    "COMPRESSION_TYPES",
    "ConfigDefinition",
    "ConfigEntry",
    "ConfigError",
    "ConfigSource",
    "ConfigSynonym",
    "ConfigType",
    "Importance",
    "LISTENER_ONLY_CONFIGS",
    "REQUIRED",
    "Synonym",
    "TOPIC_CONFIGS",
    "TOPIC_CONFIG_SYNONYMS",
    "TopicConfig",
    "UpdateMode",
    "apply_incremental",
    "apply_operations",
    "broker_synonyms",
    "create_topics_config_error",
    "describe_broker_configs",
    "describe_default_broker_configs",
    "java_int",
    "load_properties",
    "parse_properties",
    "parse_value",
    "persisted_layer",
    "to_kafka_string",
    "topic_config_error",
    "validate_topic_configs",
    "with_persisted_dynamic",
    "IGNORED",
    "IMPLEMENTED",
    "NOT_IMPLEMENTED",
    "Refusal",
    "UnsupportedConfigError",
    "VALUE_CHECKS",
    "carried_config",
    "check_supported",
    "refused_settings",
]
