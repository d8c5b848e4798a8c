"""What DescribeConfigs and CreateTopics report about configs: value strings, sources, synonyms, types.

Broker and topic entries follow ``ConfigHelper`` (Kafka's DescribeConfigs handler); the configs returned in a
CreateTopics response follow the controller's ``KafkaConfigSchema.resolveEffectiveTopicConfig``. The two
differ on purpose, as they do in Kafka: CreateTopics reports no synonyms and falls back to the topic
config's own default rather than to the broker's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from kconform.codecs.constants import ConfigSource

from ._broker import BrokerConfig
from ._definitions import BROKER_CONFIGS, REQUIRED, TOPIC_CONFIG_SYNONYMS, TOPIC_CONFIGS, UpdateMode
from ._values import ConfigType, java_trim, to_kafka_string

__all__ = [
    "ConfigSource",
    "ConfigSynonym",
    "ConfigEntry",
    "TopicConfig",
    "broker_synonyms",
    "describe_broker_configs",
    "describe_default_broker_configs",
]


@dataclass(frozen=True, slots=True)
class ConfigSynonym:
    name: str
    value: str | None
    source: ConfigSource


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    """One DescribeConfigsResourceResult (or CreatableTopicConfigs) as Kafka fills it."""

    name: str
    value: str | None  # None for sensitive configs, and for configs whose value is null
    source: ConfigSource
    read_only: bool
    is_sensitive: bool
    config_type: ConfigType
    synonyms: tuple[ConfigSynonym, ...] = ()


_JAVA_INT = re.compile(r"[+-]?[0-9]+\Z")
_LISTENER_PREFIXED = re.compile(r"listener\.name\.[^.]*\.(.*)")
_SYNONYM_GROUPS = (
    ("log.roll.ms", "log.roll.hours"),
    ("log.roll.jitter.ms", "log.roll.jitter.hours"),
    ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
)
_STATIC_DEFAULTS = {
    name: d.default_string
    for name, d in BROKER_CONFIGS.items()
    if d.default is not REQUIRED and d.default is not None
}


def broker_synonyms(name: str) -> list[str]:
    """``DynamicBrokerConfig.brokerConfigSynonyms(name, matchListenerOverride = true)``."""
    for group in _SYNONYM_GROUPS:
        if name in group:
            return list(group)
    if name == "log.flush.interval.ms":
        return [name, "log.flush.scheduler.interval.ms"]
    match = _LISTENER_PREFIXED.fullmatch(name)
    return [name, match.group(1)] if match else [name]


def _config_synonyms(config: BrokerConfig, name: str, sensitive: bool) -> list[ConfigSynonym]:
    """``ConfigHelper.configSynonyms``: by source first, then by synonym, then drop entries before ``name``.

    The last step is Kafka's own: describing ``log.retention.hours`` hides a ``log.retention.ms`` set at
    the same or a higher level, and a topic whose retention comes only from ``log.retention.hours`` is
    described with source DEFAULT_CONFIG and no synonyms.
    """
    names = broker_synonyms(name)
    layers = (
        (config.dynamic_broker, ConfigSource.DYNAMIC_BROKER_CONFIG),
        (config.dynamic_default, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
        (config.static_props, ConfigSource.STATIC_BROKER_CONFIG),
        (_STATIC_DEFAULTS, ConfigSource.DEFAULT_CONFIG),
    )
    found = [
        ConfigSynonym(synonym, None if sensitive else values[synonym], source)
        for values, source in layers
        for synonym in names
        if synonym in values
    ]
    while found and found[0].name != name:
        found.pop(0)
    return found


def _broker_type(name: str) -> ConfigType | None:
    for candidate in broker_synonyms(name):
        if candidate in BROKER_CONFIGS:
            return BROKER_CONFIGS[candidate].type
    return None


def _broker_entry(config: BrokerConfig, name: str, value: object, include_synonyms: bool, per_broker: bool):
    config_type = _broker_type(name)
    sensitive = config_type is None or config_type is ConfigType.PASSWORD
    shown = None if sensitive else (value if isinstance(value, str) else to_kafka_string(value, config_type))
    synonyms = _config_synonyms(config, name, sensitive)
    if not per_broker:
        synonyms = [s for s in synonyms if s.source is ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG]
    definition = BROKER_CONFIGS.get(name)
    return ConfigEntry(
        name=name,
        value=shown,
        source=synonyms[0].source if synonyms else ConfigSource.DEFAULT_CONFIG,
        read_only=definition is None or definition.update_mode is UpdateMode.READ_ONLY,
        is_sensitive=sensitive,
        config_type=config_type or ConfigType.UNKNOWN,
        synonyms=tuple(synonyms) if include_synonyms else (),
    )


def describe_broker_configs(config: BrokerConfig, *, include_synonyms: bool = False) -> list[ConfigEntry]:
    """DescribeConfigs on this node's BROKER resource: every known config, then the supplied unknown keys."""
    values: dict[str, object] = {n: v for n, v in config.items() if not BROKER_CONFIGS[n].internal}
    for name in config.static_props:
        values.setdefault(name, config[name] if name in BROKER_CONFIGS else config.static_props[name])
    return [_broker_entry(config, n, v, include_synonyms, per_broker=True) for n, v in values.items()]


def describe_default_broker_configs(
    config: BrokerConfig, *, include_synonyms: bool = False
) -> list[ConfigEntry]:
    """DescribeConfigs on the BROKER resource named "": only the dynamic cluster-wide defaults."""
    return [
        _broker_entry(config, name, value, include_synonyms, per_broker=False)
        for name, value in config.dynamic_default.items()
    ]


class TopicConfig:
    """A topic's effective configs: broker defaults under the topic's own overrides."""

    @staticmethod
    def values(broker: BrokerConfig, topic_overrides: Mapping[str, str]) -> dict[str, object]:
        """Typed effective values (``LogConfig.fromProps(extractLogConfigMap, topicProps)``)."""
        values = broker.log_config()
        for name, raw in topic_overrides.items():
            if name in TOPIC_CONFIGS:
                values[name] = TOPIC_CONFIGS[name].parse(raw)
        return values

    @staticmethod
    def resolve(
        broker: BrokerConfig, topic_overrides: Mapping[str, str], *, include_synonyms: bool = True
    ) -> dict[str, ConfigEntry]:
        """DescribeConfigs on a TOPIC resource (``ConfigHelper.createTopicConfigEntry``), by config name."""
        values: dict[str, object] = dict(TopicConfig.values(broker, topic_overrides))
        for name, raw in topic_overrides.items():
            values.setdefault(name, raw)  # Kafka lists stored keys it does not know, as sensitive
        return {
            name: _topic_entry(broker, topic_overrides, name, value, include_synonyms)
            for name, value in values.items()
        }

    @staticmethod
    def for_create_topics(broker: BrokerConfig, topic_overrides: Mapping[str, str]) -> list[ConfigEntry]:
        """The configs a CreateTopics response lists (controller's resolution), sorted by name."""
        return [_created_entry(broker, topic_overrides, name) for name in sorted(TOPIC_CONFIGS)]


def _topic_entry(broker, overrides, name, value, include_synonyms) -> ConfigEntry:
    definition = TOPIC_CONFIGS.get(name)
    config_type = definition.type if definition else None
    sensitive = config_type is None or config_type is ConfigType.PASSWORD
    shown = None if sensitive else to_kafka_string(value, config_type)
    synonyms: list[ConfigSynonym] = []
    if name in TOPIC_CONFIG_SYNONYMS:
        synonyms = _config_synonyms(broker, TOPIC_CONFIG_SYNONYMS[name][0].name, sensitive)
    if name in overrides:
        synonyms.insert(0, ConfigSynonym(name, shown, ConfigSource.DYNAMIC_TOPIC_CONFIG))
    return ConfigEntry(
        name=name,
        value=shown,
        source=synonyms[0].source if synonyms else ConfigSource.DEFAULT_CONFIG,
        read_only=False,
        is_sensitive=sensitive,
        config_type=config_type or ConfigType.UNKNOWN,
        synonyms=tuple(synonyms) if include_synonyms else (),
    )


def _to_millis(raw: str, ms_per_unit: int) -> str:
    """``ConfigSynonym.HOURS_TO_MILLISECONDS`` and friends: an unparsable or blank value counts as 0."""
    text = java_trim(raw)
    units = int(text) if _JAVA_INT.match(text) and -(2**31) <= int(text) < 2**31 else 0
    return str(units * ms_per_unit)


def _created_entry(broker: BrokerConfig, overrides: Mapping[str, str], name: str) -> ConfigEntry:
    definition = TOPIC_CONFIGS[name]
    value, source = definition.default_string, ConfigSource.DEFAULT_CONFIG
    if name in overrides:
        value, source = overrides[name], ConfigSource.DYNAMIC_TOPIC_CONFIG
    else:
        layers = (
            (broker.dynamic_broker, ConfigSource.DYNAMIC_BROKER_CONFIG),
            (broker.dynamic_default, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
            (broker.static_props, ConfigSource.STATIC_BROKER_CONFIG),
        )
        found = (
            (layer[s.name], src, s.ms_per_unit)
            for layer, src in layers
            for s in TOPIC_CONFIG_SYNONYMS.get(name, ())
            if s.name in layer
        )
        hit = next(found, None)
        if hit is not None:
            raw, source, per_unit = hit
            value = raw if per_unit == 1 else _to_millis(raw, per_unit)
    sensitive = definition.sensitive
    return ConfigEntry(name, None if sensitive else value, source, False, sensitive, definition.type)
