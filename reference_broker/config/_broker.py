"""A node's configuration: properties file plus overrides, typed and checked as ``KafkaConfig`` does."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from types import MappingProxyType

from ._definitions import BROKER_CONFIGS, REQUIRED, TOPIC_CONFIG_SYNONYMS, TOPIC_CONFIGS, UpdateMode
from ._errors import ConfigError
from ._prefixes import carried_config
from ._properties import load_properties
from ._values import split_java_list

__all__ = ["BrokerConfig"]


class BrokerConfig(Mapping[str, object]):
    """Typed broker configuration with Kafka's layers: dynamic per-broker, dynamic cluster default, static.

    ``config["log.segment.bytes"]`` and ``config.log_segment_bytes`` give the effective typed value of a
    known config (``None`` where Kafka's value is null). Supplied keys Kafka does not know are kept, as
    strings, in ``unknown`` and reported by ``unknown_keys_message`` (Kafka logs them and starts anyway).
    Construction raises ``ConfigError`` with Kafka's message for the first bad value, in Kafka's order.
    """

    def __init__(
        self,
        static: Mapping[str, str],
        *,
        dynamic_default: Mapping[str, str] | None = None,
        dynamic_broker: Mapping[str, str] | None = None,
    ) -> None:
        self.static_props: Mapping[str, str] = MappingProxyType(_populate_id_synonyms(_strings(static)))
        self.dynamic_default: Mapping[str, str] = MappingProxyType(_strings(dynamic_default or {}))
        self.dynamic_broker: Mapping[str, str] = MappingProxyType(_strings(dynamic_broker or {}))
        _check_dynamic(self.dynamic_default, per_broker=False)
        _check_dynamic(self.dynamic_broker, per_broker=True)
        effective = {**self.static_props, **self.dynamic_default, **self.dynamic_broker}
        self.unknown: Mapping[str, str] = MappingProxyType(
            {k: v for k, v in effective.items() if carried_config(k) is None}
        )
        self._values = {
            name: _parse(definition, effective.get(name)) for name, definition in BROKER_CONFIGS.items()
        }
        _check_values(self)

    @classmethod
    def from_sources(
        cls, properties_file: Path | str | None, overrides: Mapping[str, str] | None = None
    ) -> BrokerConfig:
        """A properties file (optional) with ``overrides`` on top, as ``kafka-server-start.sh --override``."""
        static = load_properties(Path(properties_file)) if properties_file is not None else {}
        static.update(overrides or {})
        return cls(static)

    def with_dynamic(
        self, *, cluster_default: Mapping[str, str] | None = None, per_broker: Mapping[str, str] | None = None
    ) -> BrokerConfig:
        """This configuration with its dynamic layers replaced (what IncrementalAlterConfigs sets)."""
        return BrokerConfig(
            self.static_props,
            dynamic_default=self.dynamic_default if cluster_default is None else cluster_default,
            dynamic_broker=self.dynamic_broker if per_broker is None else per_broker,
        )

    # Mapping over the known configs, by Kafka name.
    def __getitem__(self, name: str) -> object:
        return self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __getattr__(self, attribute: str) -> object:
        values = self.__dict__.get("_values", {})
        name = attribute.replace("_", ".")
        if name in values:
            return values[name]
        raise AttributeError(f"{type(self).__name__} has no config {name!r}")

    def __repr__(self) -> str:
        return f"BrokerConfig({dict(self.static_props)!r})"

    @property
    def unknown_keys(self) -> tuple[str, ...]:
        return tuple(self.unknown)

    @property
    def unknown_keys_message(self) -> str | None:
        """The line Kafka logs for supplied keys it does not use (``AbstractConfig.logUnused``), or None."""
        if not self.unknown:
            return None
        return (
            f"These configurations '[{', '.join(sorted(self.unknown))}]' were supplied but are not used yet."
        )

    @property
    def log_dirs(self) -> list[str]:
        """``log.dirs``, or ``log.dir`` when it is unset, as a list (``KafkaConfig.logDirs``)."""
        chosen = self["log.dirs"] if self["log.dirs"] is not None else self["log.dir"]
        return [d for d in split_java_list(chosen or "") if d]

    def log_config(self) -> dict[str, object]:
        """The topic-level defaults this broker gives every topic (``KafkaConfig.extractLogConfigMap``)."""
        values = {}
        for name, definition in TOPIC_CONFIGS.items():
            synonyms = TOPIC_CONFIG_SYNONYMS.get(name)
            values[name] = self._first_synonym(synonyms) if synonyms else definition.default
        values["retention.ms"] = -1 if values["retention.ms"] < 0 else values["retention.ms"]
        return values

    def _first_synonym(self, synonyms) -> object:
        for synonym in synonyms:
            value = self._values[synonym.name]
            if value is not None:
                return value * synonym.ms_per_unit if synonym.ms_per_unit != 1 else value
        raise AssertionError(f"the last synonym of {synonyms[0].name} always has a default")


def _parse(definition, raw: str | None) -> object:
    if raw is not None:
        return definition.parse(raw)
    if definition.default is REQUIRED:
        raise ConfigError.plain(
            f'Missing required configuration "{definition.name}" which has no default value.'
        )
    return definition.default


def _strings(props: Mapping[str, object]) -> dict[str, str]:
    """Values as a properties file holds them (``True`` -> ``true``), for callers passing typed values."""
    return {k: ("true" if v else "false") if isinstance(v, bool) else str(v) for k, v in props.items()}


def _populate_id_synonyms(props: dict[str, str]) -> dict[str, str]:
    """``KafkaConfig.populateSynonyms``: ``node.id`` and ``broker.id`` stand in for each other."""
    if "broker.id" not in props and "node.id" in props:
        props["broker.id"] = props["node.id"]
    elif "node.id" not in props and "broker.id" in props:
        props["node.id"] = props["broker.id"]
    return props


def _scala_set(names) -> str:
    return "Set(" + ", ".join(sorted(names)) + ")"


def _check_dynamic(props: Mapping[str, str], *, per_broker: bool) -> None:
    """``DynamicBrokerConfig.validateConfigs``; names Kafka does not know may be set (plugins' configs)."""
    modes = {name: BROKER_CONFIGS[name].update_mode for name in props if name in BROKER_CONFIGS}
    fixed = [name for name, mode in modes.items() if mode is UpdateMode.READ_ONLY]
    if fixed:
        raise ConfigError.plain(f"Cannot update these configs dynamically: {_scala_set(fixed)}")
    if not per_broker:
        only_per_broker = [name for name, mode in modes.items() if mode is UpdateMode.PER_BROKER]
        if only_per_broker:
            raise ConfigError.plain(
                "Cannot update these configs at default cluster level, broker id must be specified: "
                + _scala_set(only_per_broker)
            )


def _require(condition: bool, message: str, *, scala: bool = True) -> None:
    """Scala's ``require`` prefixes "requirement failed: "; Java's ``Utils.require`` does not."""
    if not condition:
        raise ConfigError.plain(f"requirement failed: {message}" if scala else message)


def _check_values(config: BrokerConfig) -> None:
    """The cross-config checks of ``KafkaConfig.validateValues`` and ``GroupCoordinatorConfig``, in order."""
    if config["node.id"] != config["broker.id"]:
        raise ConfigError.plain("You must set `node.id` to the same value as `broker.id`.")
    log = config.log_config()
    _require(log["segment.ms"] >= 1, "log.roll.ms must be greater than or equal to 1")
    _require(log["segment.jitter.ms"] >= 0, "log.roll.jitter.ms must be greater than or equal to 0")
    retention = log["retention.ms"]
    _require(
        retention >= 1 or retention == -1,
        "log.retention.ms must be unlimited (-1) or, greater than or equal to 1",
    )
    _require(bool(config.log_dirs), "At least one log directory must be defined via log.dirs or log.dir.")
    threads = config["log.cleaner.threads"]
    if threads > 0:  # Kafka divides by zero here when there are no cleaner threads
        _require(
            config["log.cleaner.dedupe.buffer.size"] // threads > 1024 * 1024,
            "log.cleaner.dedupe.buffer.size must be at least 1MB per cleaner thread.",
        )
    wait = config["replica.fetch.wait.max.ms"]
    _require(
        wait <= config["replica.socket.timeout.ms"],
        "replica.socket.timeout.ms should always be at least replica.fetch.wait.max.ms"
        " to prevent unnecessary socket timeouts",
    )
    _require(
        wait <= config["replica.lag.time.max.ms"],
        "replica.fetch.wait.max.ms should always be less than or equal to replica.lag.time.max.ms to prevent "
        "frequent changes in ISR",
    )
    _check_consumer_group_bounds(config)


def _check_consumer_group_bounds(config: BrokerConfig) -> None:
    prefix = "group.consumer."
    for kind in ("heartbeat.interval.ms", "session.timeout.ms"):
        low, high = prefix + "min." + kind, prefix + "max." + kind
        value = prefix + kind
        _require(config[high] >= config[low], f"{high} must be greater than or equal to {low}", scala=False)
        _require(config[value] >= config[low], f"{value} must be greater than or equal to {low}", scala=False)
        _require(config[value] <= config[high], f"{value} must be less than or equal to {high}", scala=False)
    heartbeat, session = prefix + "heartbeat.interval.ms", prefix + "session.timeout.ms"
    _require(config[heartbeat] < config[session], f"{heartbeat} must be less than {session}", scala=False)
