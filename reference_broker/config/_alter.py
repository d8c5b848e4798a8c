"""Topic config checks for CreateTopics, AlterConfigs and IncrementalAlterConfigs, as pure functions.

They return what Kafka 4.0 (KRaft) puts in the response for the topic: an error code and message. The
checks and their order are the controller's (``ReplicationControlManager.computeConfigChanges``,
``ConfigurationControlManager.incrementalAlterConfigResource``, ``ControllerConfigurationValidator``,
``LogConfig.validate``) plus the forwarding broker's ``ConfigAdminManager.preprocess``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kconform.codecs.constants import AlterConfigOpType
from kconform.codecs.errors import Errors

from ._broker import BrokerConfig
from ._definitions import TOPIC_CONFIGS, ConfigDefinition
from ._describe import TopicConfig
from ._errors import AdminError, ConfigError
from ._values import ConfigType

__all__ = [
    "AlterOp",
    "validate_topic_configs",
    "topic_config_error",
    "create_topics_config_error",
    "apply_incremental",
    "apply_operations",
]


AlterOp = AlterConfigOpType  # the ConfigOperation ids of IncrementalAlterConfigs


def _invalid_config(message: str) -> AdminError:
    return AdminError(Errors.INVALID_CONFIG, message)


def _invalid_request(message: str) -> AdminError:
    return AdminError(Errors.INVALID_REQUEST, message)


def validate_topic_configs(
    changes: Mapping[str, str | None], *, broker: BrokerConfig | None = None
) -> dict[str, AdminError]:
    """Every key of ``changes`` that Kafka would refuse, each with the INVALID_CONFIG error it causes.

    Kafka answers with one error per topic; ``topic_config_error`` picks that one. Problems that involve
    several keys (compaction lags, remote storage) are reported under the key Kafka's message names first.
    """
    errors: dict[str, AdminError] = {}
    for name, raw in changes.items():
        if raw is None:
            errors[name] = _invalid_config(f"Null value not supported for topic configs: {name}")
        elif name not in TOPIC_CONFIGS:
            errors[name] = _invalid_config(f"Unknown topic config name: {name}")
        else:
            try:
                TOPIC_CONFIGS[name].parse(raw)
            except ConfigError as e:
                errors[name] = _invalid_config(str(e))
    if not errors:
        cross = _cross_check(changes, broker, existing={})
        if cross is not None:
            errors[cross[0]] = cross[1]
    return errors


def topic_config_error(
    configs: Mapping[str, str | None],
    *,
    broker: BrokerConfig | None = None,
    existing: Mapping[str, str] | None = None,
) -> AdminError | None:
    """The single error Kafka returns for a topic whose whole stored config would become ``configs``.

    Order: null values (all named), an unknown name, the first bad value in LogConfig's definition order,
    then the checks across keys. Without ``broker`` it is ``LogConfig.validate(props)`` on its own.
    """
    nulls = [name for name, raw in configs.items() if raw is None]
    if nulls:
        return _invalid_config("Null value not supported for topic configs: " + ",".join(nulls))
    unknown = next((name for name in configs if name not in TOPIC_CONFIGS), None)
    if unknown is not None:
        return _invalid_config(f"Unknown topic config name: {unknown}")
    for name, definition in TOPIC_CONFIGS.items():
        if name in configs:
            try:
                definition.parse(configs[name])
            except ConfigError as e:
                return _invalid_config(str(e))
    cross = _cross_check(configs, broker, existing or {})
    return None if cross is None else cross[1]


def create_topics_config_error(
    configs: Iterable[tuple[str, str | None]], *, broker: BrokerConfig | None = None
) -> AdminError | None:
    """CreateTopics: the request's (name, value) pairs; a later duplicate replaces an earlier one."""
    pairs = list(configs)
    nulls = [name for name, raw in pairs if raw is None]
    if nulls:
        return _invalid_config("Null value not supported for topic configs: " + ",".join(nulls))
    return topic_config_error(dict(pairs), broker=broker)


def _cross_check(configs, broker, existing) -> tuple[str, AdminError] | None:
    """``LogConfig.validateValues`` and, with a broker, ``validateTopicLogConfigValues``."""
    if broker is not None:
        values = TopicConfig.values(broker, configs)
    else:
        values = {name: d.default for name, d in TOPIC_CONFIGS.items()}
        values.update({name: TOPIC_CONFIGS[name].parse(raw) for name, raw in configs.items()})
    low, high = values["min.compaction.lag.ms"], values["max.compaction.lag.ms"]
    if low > high:
        message = (
            f"conflict topic config setting min.compaction.lag.ms ({low}) > max.compaction.lag.ms ({high})"
        )
        return "min.compaction.lag.ms", _invalid_config(message)
    if broker is None:
        return None
    return _remote_storage_check(values, broker, existing)


def _remote_storage_check(values, broker, existing) -> tuple[str, AdminError] | None:
    if values["remote.storage.enable"]:
        if not broker["remote.log.storage.system.enable"]:
            message = (
                "Tiered Storage functionality is disabled in the broker. "
                "Topic cannot be configured with remote log storage."
            )
            return "remote.storage.enable", _invalid_config(message)
        if "compact" in ",".join(values["cleanup.policy"]).lower():
            return "cleanup.policy", _invalid_config(
                "Remote log storage is unsupported for the compacted topics"
            )
        return _local_retention_check(values)
    was_enabled = existing.get("remote.storage.enable", "false").strip().lower() == "true"
    if was_enabled and not values["remote.log.delete.on.disable"]:
        message = (
            "It is invalid to disable remote storage without deleting remote data. If you want to keep the "
            "remote data and turn to read only, please set "
            "`remote.storage.enable=true,remote.log.copy.disable=true`. "
            "If you want to disable remote storage and delete all remote data, please set "
            "`remote.storage.enable=false,remote.log.delete.on.disable=true`."
        )
        return "remote.storage.enable", _invalid_config(message)
    return None


def _local_retention_check(values) -> tuple[str, AdminError] | None:
    """``validateRemoteStorageRetentionSize`` then ``...Time``: local retention within total retention."""
    for local_name, total_name, unlimited in (
        ("local.retention.bytes", "retention.bytes", lambda v: v <= -1),
        ("local.retention.ms", "retention.ms", lambda v: v == -1),
    ):
        local, total = values[local_name], values[total_name]
        if unlimited(total) or local == -2:
            continue
        if local == -1:
            reason = f"Value must not be -1 as {total_name} value is set as {total}."
        elif local > total:
            reason = f"Value must not be more than {total_name} property value: {total}"
        else:
            continue
        return local_name, _invalid_config(str(ConfigError(local_name, local, reason)))
    return None


def _java_split(value: str) -> list[str]:
    """``String.split(",")``: trailing empty strings are dropped (and "" splits to [""])."""
    parts = value.split(",")
    while len(parts) > 1 and parts[-1] == "":
        parts.pop()
    return [] if parts == [""] and value != "" else parts


def _list_parts(current: str | None, definition: ConfigDefinition) -> list[str]:
    """``ConfigurationControlManager.getParts``: the stored value, else the default, minus empties."""
    if current is None:
        current = definition.default_string
    return [part for part in (current or "").split(",") if part]


def apply_operations(
    current: Mapping[str, str],
    ops: Iterable[tuple[str, int, str | None]],
    definitions: Mapping[str, ConfigDefinition],
) -> dict[str, str] | AdminError:
    """One resource's stored configs after IncrementalAlterConfigs operations, as the controller applies
    them (``ConfigurationControlManager.incrementalAlterConfigResource``), or the error that stops it.

    ``ops`` are (name, operation, value) with operation SET 0, DELETE 1, APPEND 2, SUBTRACT 3. APPEND adds
    each comma-separated element not already present; SUBTRACT removes the first occurrence of each; both
    start from the config's default when the key is not stored, and work only on the LIST configs of
    ``definitions`` (the resource type's config table).
    """
    updated: dict[str, str] = dict(current)
    for name, op, value in ops:
        if op not in set(AlterOp):
            return _invalid_request(f"Unknown operations type {op}")
        op = AlterOp(op)
        if op is AlterOp.SET:
            updated[name] = value
        elif op is AlterOp.DELETE:
            updated.pop(name, None)
        else:
            definition = definitions.get(name)
            if definition is None or definition.type is not ConfigType.LIST:
                return _invalid_config(f"Can't {op.name} to key {name} because its type is not LIST.")
            parts = _list_parts(updated.get(name), definition)
            for element in _java_split(value):
                if op is AlterOp.APPEND and element not in parts:
                    parts.append(element)
                elif op is AlterOp.SUBTRACT and element in parts:
                    parts.remove(element)
            updated[name] = ",".join(parts)
    return updated


def apply_incremental(
    current: Mapping[str, str],
    ops: Iterable[tuple[str, int, str | None]],
    *,
    broker: BrokerConfig | None = None,
) -> dict[str, str] | AdminError:
    """IncrementalAlterConfigs on a topic: the new stored configs, or the error Kafka answers with
    (duplicate keys and null values, then ``apply_operations``, then ``topic_config_error``)."""
    ops = list(ops)
    names = [name for name, _, _ in ops]
    if len(set(names)) != len(names):
        return _invalid_request("Error due to duplicate config keys")
    nulls = [name for name, op, value in ops if op != AlterOp.DELETE and value is None]
    if nulls:
        return _invalid_request("Null value not supported for : " + ", ".join(nulls))
    updated = apply_operations(current, ops, TOPIC_CONFIGS)
    if isinstance(updated, AdminError):
        return updated
    error = topic_config_error(updated, broker=broker, existing=current)
    return error if error is not None else updated
