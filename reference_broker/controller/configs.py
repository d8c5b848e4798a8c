"""The controller's half of AlterConfigs and IncrementalAlterConfigs, as pure functions of the image:
each resource's ConfigRecords, or the error that refuses them (Kafka's ``ConfigurationControlManager``
with ``ControllerConfigurationValidator`` and ``QuorumController.ConfigResourceExistenceChecker``).

Every resource is judged against the image as it was before the request: Kafka computes them all, then
writes the records of those that passed as one atomic batch (``ControllerResult.atomicOf``). The order
of checks is Kafka's: the operations are applied (APPEND and SUBTRACT only on LIST configs:
INVALID_CONFIG), then the validator looks at the name and, for a topic, the whole new config
(``LogConfig.validate`` against the controller's own config: INVALID_CONFIG), then the resource must
exist (UNKNOWN_TOPIC_OR_PARTITION; BROKER_ID_NOT_REGISTERED for a broker id that is neither registered
nor the controller's). BROKER changes are checked only for their name here: the forwarding broker
validated them (``ConfigAdminManager.preprocess``).

A topic config becomes a record only when its value changes; a BROKER config always does, so that
brokers reload it (KAFKA-14136). A record with a null value deletes the config; AlterConfigs also
deletes every stored config it does not name. Records come in key order (Kafka's follow its HashMaps).
"""

from __future__ import annotations

from collections.abc import Mapping

from kconform.codecs.constants import ConfigResourceType
from kconform.codecs.errors import Errors
from kconform.codecs.metadata_records import ConfigRecord

from ..cluster_metadata import ClusterImage
from ..config import (
    BROKER_CONFIGS,
    TOPIC_CONFIGS,
    AdminError,
    BrokerConfig,
    apply_incremental,
    apply_operations,
    java_int,
    topic_config_error,
)
from ..topic_names import topic_name_error

__all__ = ["incremental_change", "legacy_change", "not_served"]

TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = (
    ConfigResourceType.TOPIC,
    ConfigResourceType.BROKER,
    ConfigResourceType.BROKER_LOGGER,
    ConfigResourceType.CLIENT_METRICS,
    ConfigResourceType.GROUP,
)
Ops = list[tuple[str, int, str | None]]
Change = tuple[list[ConfigRecord], AdminError | None]


def _invalid_request(message: str) -> AdminError:
    return AdminError(Errors.INVALID_REQUEST, message)


def not_served(resource_type: int) -> AdminError:
    return _invalid_request(
        f"{ConfigResourceType(resource_type).name} resources are not supported by the kconform reference "
        "broker yet"
    )


def incremental_change(
    image: ClusterImage, config: BrokerConfig, controller_id: int, resource_type: int, name: str, ops: Ops
) -> Change:
    """``ConfigurationControlManager.incrementalAlterConfigResource`` for one resource; ``ops`` are
    (name, operation, value), one per config name."""
    if resource_type == TOPIC:
        current = image.topic_configs(name)
        name_error = topic_resource_error(name)
        if name_error is not None:  # the operations are applied before the validator reads the name
            applied = apply_operations(current, ops, TOPIC_CONFIGS)
            return [], applied if isinstance(applied, AdminError) else name_error
        updated = apply_incremental(current, ops, broker=config)
        if isinstance(updated, AdminError):
            return [], updated
        if name not in image:
            return [], _unknown_topic(name)
        changed = sorted({key for key, _, _ in ops if updated.get(key) != current.get(key)})
        return [_record(TOPIC, name, key, updated.get(key)) for key in changed], None
    if resource_type == BROKER:
        updated = apply_operations(image.resource_configs(BROKER, name), ops, BROKER_CONFIGS)
        if isinstance(updated, AdminError):
            return [], updated
        error = _broker_name_error(name) or _broker_existence_error(image, controller_id, name)
        if error is not None:
            return [], error
        return [_record(BROKER, name, key, updated.get(key)) for key in sorted({k for k, _, _ in ops})], None
    return [], _other_type_error(resource_type)


def legacy_change(
    image: ClusterImage,
    config: BrokerConfig,
    controller_id: int,
    resource_type: int,
    name: str,
    configs: Mapping[str, str | None],
) -> Change:
    """``ConfigurationControlManager.legacyAlterConfigResource`` for one resource: ``configs`` become its
    whole stored config."""
    if resource_type == TOPIC:
        current = image.topic_configs(name)
        error = topic_resource_error(name) or topic_config_error(configs, broker=config, existing=current)
        if error is None and name not in image:
            error = _unknown_topic(name)
        if error is not None:
            return [], error
        return _replacement(TOPIC, name, current, configs, always=False), None
    if resource_type == BROKER:
        error = _broker_name_error(name) or _broker_existence_error(image, controller_id, name)
        if error is not None:
            return [], error
        return _replacement(BROKER, name, image.resource_configs(BROKER, name), configs, always=True), None
    return [], _other_type_error(resource_type)


def _replacement(
    resource_type: int, name: str, current: Mapping[str, str], configs: Mapping[str, str | None], *, always
) -> list[ConfigRecord]:
    """The records that make ``configs`` the whole stored config: each named value (changed ones only,
    unless ``always``), then a deletion for each stored key not named."""
    records = [
        _record(resource_type, name, key, configs[key])
        for key in sorted(configs)
        if always or current.get(key) != configs[key]
    ]
    deleted = [key for key in sorted(current) if key not in configs]
    return records + [_record(resource_type, name, key, None) for key in deleted]


def _record(resource_type: int, name: str, key: str, value: str | None) -> ConfigRecord:
    return ConfigRecord(resource_type=int(resource_type), resource_name=name, name=key, value=value)


def topic_resource_error(name: str) -> AdminError | None:
    """``ControllerConfigurationValidator.validateTopicName``."""
    if not name:
        return _invalid_request("Default topic resources are not allowed.")
    reason = topic_name_error(name)
    return None if reason is None else AdminError(Errors.INVALID_TOPIC_EXCEPTION, reason)


def _unknown_topic(name: str) -> AdminError:
    return AdminError(Errors.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.")


def _broker_name_error(name: str) -> AdminError | None:
    """``ControllerConfigurationValidator.validateBrokerName``: "" (the cluster default) or a node id."""
    if not name:
        return None
    node_id = java_int(name)
    if node_id is None:
        return _invalid_request("Unable to parse broker name as a base 10 number.")
    if node_id < 0:
        return _invalid_request("Invalid negative broker ID.")
    return None


def _broker_existence_error(image: ClusterImage, controller_id: int, name: str) -> AdminError | None:
    """``ConfigResourceExistenceChecker``: a node id must be a registered broker or the controller."""
    if not name:
        return None
    node_id = java_int(name)
    if node_id in image.brokers or node_id == controller_id:
        return None
    return AdminError(Errors.BROKER_ID_NOT_REGISTERED, f"No node with id {node_id} found.")


def _other_type_error(resource_type: int) -> AdminError:
    if resource_type in (CLIENT_METRICS, GROUP):
        return not_served(resource_type)
    # ControllerConfigurationValidator: BROKER_LOGGER changes are never stored in the metadata
    return _invalid_request(f"Unknown resource type {ConfigResourceType(resource_type).name}")
