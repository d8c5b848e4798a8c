"""DescribeConfigs (32), AlterConfigs (33) and IncrementalAlterConfigs (44).

Describing follows Kafka's ``ConfigHelper.describeConfigs``: a resource type Kafka does not know fails the
whole request (INVALID_REQUEST for every resource); an illegal topic name is INVALID_TOPIC_EXCEPTION and an
unknown topic UNKNOWN_TOPIC_OR_PARTITION; a BROKER resource is this node (by id) or "" for the dynamic
cluster-wide defaults, any other name INVALID_REQUEST; null or empty configuration keys mean every config;
sensitive values are null. Entries come in the order of Kafka's Scala ``mutable.HashMap`` (see
``_scala_hash_map_order``).

Altering runs the two stages of Kafka 4.0 (``KafkaApis.handleAlterConfigsRequest`` and
``handleIncrementalAlterConfigsRequest``). This broker runs ``ConfigAdminManager.preprocess`` (a resource
named twice: INVALID_REQUEST for each; duplicate keys, null values, unknown types: INVALID_REQUEST; a BROKER
resource must be "" or this broker's id and is checked against ``DynamicBrokerConfig.validate``: read-only
configs, listener-only security configs, values, per-broker configs at cluster level, the new whole config
and the thread-pool limits, all INVALID_REQUEST with Kafka's message). The resources that pass go to the
controller in one request (``ForwardingManager``, in process in combined mode), which judges and stores
them as ConfigRecords in the metadata log (``controller.configs``: ``ConfigurationControlManager``); its
answers are put back in request order (``ConfigAdminManager.reassemble*Response``), a null message on
success. validate_only checks and keeps nothing. Every node takes the stored configs from the log: topic
configs into its replicas, the dynamic broker configs ("" and its own id) into its configuration, which
DescribeConfigs then shows.

Not served yet (answered INVALID_REQUEST with a message saying so): GROUP and BROKER_LOGGER descriptions,
and altering BROKER_LOGGER, CLIENT_METRICS and GROUP resources. Config documentation (v3) is null: the
config table carries no documentation text.
"""

from __future__ import annotations

from collections import Counter

from kconform.codecs.constants import ConfigResourceType
from kconform.codecs.errors import Errors
from kconform.codecs.messages import (
    AlterConfigsResponse,
    DescribeConfigsResponse,
    IncrementalAlterConfigsResponse,
)

from ..config import (
    BROKER_CONFIGS,
    LISTENER_ONLY_CONFIGS,
    AdminError,
    AlterOp,
    ConfigEntry,
    ConfigError,
    ConfigType,
    TopicConfig,
    UpdateMode,
    describe_broker_configs,
    describe_default_broker_configs,
    java_int,
    persisted_layer,
)
from ..controller.configs import not_served
from ..forwarding import ForwardingFailed, ask_controller
from ..java_hash_map import string_hash
from ..security.acls import Operation
from ..topic_names import topic_name_error
from . import handles
from .admin_access import AUTHORIZATION_MESSAGES, config_refusal

TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = (
    ConfigResourceType.TOPIC,
    ConfigResourceType.BROKER,
    ConfigResourceType.BROKER_LOGGER,
    ConfigResourceType.CLIENT_METRICS,
    ConfigResourceType.GROUP,
)
_RESOURCE_TYPES = {t: t.name for t in (TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP)}
# Errors.INVALID_REQUEST's own message, which DescribeConfigsRequest.getErrorResponse puts in every result.
_INVALID_REQUEST_MESSAGE = (
    "This most likely occurs because of a request being malformed by the client library or the message was "
    "sent to an incompatible broker. See the broker logs for more details."
)
# DynamicThreadPool.ReconfigurableConfigs and the network processors: a changed count must stay within
# [current / 2, current * 2], else processReconfiguration fails with this message.
_THREAD_POOLS = (
    "num.io.threads",
    "num.replica.fetchers",
    "num.recovery.threads.per.data.dir",
    "background.threads",
    "num.network.threads",
)


def _java_split(text: str) -> list[str]:
    """``String.split(",")``: trailing empty strings dropped ("" gives [""], "," gives [])."""
    parts = text.split(",")
    while parts and parts[-1] == "" and text != "":
        parts.pop()
    return parts


def _invalid_request(message: str) -> AdminError:
    return AdminError(Errors.INVALID_REQUEST, message)


# ---- ordering ---------------------------------------------------------------------------------------


def _scala_hash_map_order(entries: list[ConfigEntry], *, repeated_puts: bool) -> list[ConfigEntry]:
    """Entries in the iteration order of the Scala 2.13 ``mutable.HashMap`` Kafka builds them in.

    That map keeps buckets ordered by the improved hash (``h ^ (h >>> 16)``) and iterates bucket by
    bucket, so the order follows from the hashes and the final table size: 16, doubled while a put sees
    ``size + 1 >= 0.75 * length``. ``repeated_puts``: keys were put again after the last new one (a topic's
    ``originals ++ values``), which checks once more with the final size."""
    length = 16
    while int(length * 0.75) <= len(entries) + (1 if repeated_puts else 0):
        length *= 2

    def position(entry: ConfigEntry) -> tuple[int, int]:
        h = string_hash(entry.name)
        h ^= h >> 16
        return h & (length - 1), h - (1 << 32) if h >= 1 << 31 else h

    return sorted(entries, key=position)


# ---- DescribeConfigs --------------------------------------------------------------------------------


def _selected(entries: list[ConfigEntry], keys, *, repeated_puts: bool) -> list[ConfigEntry]:
    if keys:  # filtering builds a fresh map from the chosen entries
        wanted = set(keys)
        return _scala_hash_map_order([e for e in entries if e.name in wanted], repeated_puts=False)
    return _scala_hash_map_order(entries, repeated_puts=repeated_puts)


def _broker_id_error(broker, name: str, *, logger: bool) -> AdminError | None:
    node_id = java_int(name)
    if node_id is None:
        return _invalid_request(f"Broker id must be an integer, but it is: {name}")
    if node_id != broker.node_id:
        expected = f"{broker.node_id}" if logger else f"{broker.node_id} or empty string,"
        return _invalid_request(f"Unexpected broker id, expected {expected} but received {name}")
    return None


def _described(broker, resource, include_synonyms: bool) -> list[ConfigEntry] | AdminError:
    kind, name, keys = resource.resource_type, resource.resource_name, resource.configuration_keys
    if kind == TOPIC:
        reason = topic_name_error(name)
        if reason is not None:
            return AdminError(Errors.INVALID_TOPIC_EXCEPTION, reason)
        topic = broker.topics.get(name)
        if topic is None:
            return AdminError(Errors.UNKNOWN_TOPIC_OR_PARTITION, "")
        entries = TopicConfig.resolve(broker.config, topic.configs, include_synonyms=include_synonyms)
        return _selected(list(entries.values()), keys, repeated_puts=True)
    if kind == BROKER:
        if not name:
            entries = describe_default_broker_configs(broker.config, include_synonyms=include_synonyms)
            return _selected(entries, keys, repeated_puts=False)
        error = _broker_id_error(broker, name, logger=False)
        if error is not None:
            return error
        entries = describe_broker_configs(broker.config, include_synonyms=include_synonyms)
        return _selected(entries, keys, repeated_puts=False)
    if kind == BROKER_LOGGER:
        if not name:
            return _invalid_request("Broker id must not be empty")
        return _broker_id_error(broker, name, logger=True) or not_served(kind)
    if kind == CLIENT_METRICS:
        if not name:
            return _invalid_request("Client metrics subscription name must not be empty")
        return []  # no subscription is ever stored here, and an unknown one describes as empty
    if not name:
        return _invalid_request("Group name must not be empty")
    return not_served(kind)


def _config_result(entry: ConfigEntry) -> DescribeConfigsResponse.DescribeConfigsResourceResult:
    return DescribeConfigsResponse.DescribeConfigsResourceResult(
        name=entry.name,
        value=entry.value,
        read_only=entry.read_only,
        config_source=int(entry.source),
        is_sensitive=entry.is_sensitive,
        synonyms=[
            DescribeConfigsResponse.DescribeConfigsSynonym(name=s.name, value=s.value, source=int(s.source))
            for s in entry.synonyms
        ],
        config_type=int(entry.config_type),
        documentation=None,
    )


@handles(32)
async def describe_configs(broker, ctx, request) -> DescribeConfigsResponse:
    Result = DescribeConfigsResponse.DescribeConfigsResult
    if any(r.resource_type not in _RESOURCE_TYPES for r in request.resources):
        # ConfigHelper throws while sorting the resources for authorization: the whole request fails.
        return DescribeConfigsResponse(
            results=[
                Result(
                    error_code=Errors.INVALID_REQUEST,
                    error_message=_INVALID_REQUEST_MESSAGE,
                    resource_type=r.resource_type,
                    resource_name=r.resource_name,
                )
                for r in request.resources
            ]
        )
    results, refused = [], []
    for resource in request.resources:
        result = Result(resource_type=resource.resource_type, resource_name=resource.resource_name)
        # ConfigHelper: DESCRIBE_CONFIGS on the resource (the cluster for broker resources); the refused
        # ones are answered after the others
        refusal = config_refusal(
            broker, ctx, Operation.DESCRIBE_CONFIGS, resource.resource_type, resource.resource_name
        )
        if refusal is not None:
            result.error_code, result.error_message = refusal, AUTHORIZATION_MESSAGES[refusal]
            refused.append(result)
            continue
        found = _described(broker, resource, request.include_synonyms)
        if isinstance(found, AdminError):
            result.error_code, result.error_message = found.code, found.message
        else:
            result.configs = [_config_result(entry) for entry in found]
        results.append(result)
    return DescribeConfigsResponse(results=results + refused)


# ---- AlterConfigs and IncrementalAlterConfigs -------------------------------------------------------

# ConfigAdminManager.reassemble*Response: a forwarded resource the controller gave no result for
_NO_RESULT = AdminError(
    Errors.UNKNOWN_SERVER_ERROR, "The server experienced an unexpected error when processing the request."
)


async def _alter(broker, ctx, request, *, incremental: bool) -> list[AdminError | None]:
    """Every resource's outcome, in request order (``KafkaApis.handleAlterConfigsRequest`` /
    ``handleIncrementalAlterConfigsRequest``): the broker's preprocessing of all of them, then the
    resources that passed forwarded to the controller in one request, its answers put back in place."""
    resources = request.resources
    counts = Counter((r.resource_type, r.resource_name) for r in resources)
    errors = [
        _invalid_request("Each resource must appear at most once.")
        if counts[(r.resource_type, r.resource_name)] > 1
        else _preprocess(broker, r, incremental=incremental)
        for r in resources
    ]
    # ControllerApis.authorizeAlterResource, asked here before forwarding: ALTER_CONFIGS on each resource
    for i, r in enumerate(resources):
        refusal = None if errors[i] else config_refusal(broker, ctx, Operation.ALTER_CONFIGS, *_key(r))
        if refusal is not None:
            errors[i] = AdminError(refusal, AUTHORIZATION_MESSAGES[refusal])
    remaining = [r for r, error in zip(resources, errors, strict=True) if error is None]
    if not remaining:
        return errors
    forwarded = type(request)(resources=remaining, validate_only=request.validate_only)
    try:
        answer = await ask_controller(broker, ctx, forwarded)
        results = {
            (r.resource_type, r.resource_name): AdminError(r.error_code, r.error_message)
            if r.error_code
            else None
            for r in answer.responses
        }
    except ForwardingFailed as exc:  # the forwarded request's own error response
        results = {(r.resource_type, r.resource_name): AdminError(exc.code, None) for r in remaining}
    return [
        error if error is not None else results.get((r.resource_type, r.resource_name), _NO_RESULT)
        for r, error in zip(resources, errors, strict=True)
    ]


def _key(resource) -> tuple[int, str]:
    return resource.resource_type, resource.resource_name


def _preprocess(broker, resource, *, incremental: bool) -> AdminError | None:
    """``ConfigAdminManager.preprocess``: an error, or None for a resource the controller is to judge."""
    configs = resource.configs
    names = [c.name for c in configs]
    if len(set(names)) != len(names):
        return _invalid_request("Error due to duplicate config keys")
    nulls = [
        c.name
        for c in configs
        if c.value is None and not (incremental and c.config_operation == AlterOp.DELETE)
    ]
    if nulls:
        return _invalid_request("Null value not supported for : " + ", ".join(nulls))
    kind = resource.resource_type
    if kind == BROKER:
        return _preprocess_broker(broker, resource, incremental=incremental)
    if kind == BROKER_LOGGER and incremental:
        return not_served(kind)
    if kind in (TOPIC, CLIENT_METRICS, GROUP):
        return None
    return _invalid_request(f"Unknown resource type {kind}")


def _preprocess_broker(broker, resource, *, incremental: bool) -> AdminError | None:
    """``validateResourceNameIsCurrentNodeId`` and ``validateBrokerConfigChange``: the new dynamic layer,
    from the one the metadata holds (``fromPersistentProps``), must pass this broker's checks."""
    name = resource.resource_name
    if name:
        node_id = java_int(name)
        if node_id is None:
            return _invalid_request(f"Node id must be an integer, but it is: {name}")
        if node_id != broker.node_id:
            return _invalid_request(f"Unexpected broker id, expected {broker.node_id}, but received {name}")
    per_broker = bool(name)
    config = broker.config
    if incremental:
        stored = broker.image.resource_configs(BROKER, name)
        current, _ = persisted_layer(stored, per_broker=per_broker)
        ops = [(c.name, c.config_operation, c.value) for c in resource.configs]
        layer = _incremental_broker_layer(current, ops)
        if isinstance(layer, AdminError):
            return layer
    else:
        layer = {c.name: c.value for c in resource.configs}
    problem = _broker_change_problem(config, layer, per_broker=per_broker)
    return None if problem is None else _invalid_request(problem)


def _incremental_broker_layer(current: dict[str, str], ops) -> dict[str, str] | AdminError:
    """The dynamic layer after the operations (``prepareIncrementalConfigs``; lists as the controller
    stores them), or Kafka's error for an unknown operation or a list operation on a non-list config."""
    for _, op, _ in ops:
        if op not in set(AlterOp):
            return _invalid_request(f"Unknown operations type {op}")
    layer = dict(current)
    for name, op, value in ops:
        if op == AlterOp.SET:
            layer[name] = value
        elif op == AlterOp.DELETE:
            layer.pop(name, None)
        else:
            definition = BROKER_CONFIGS.get(name)
            if definition is None:  # Kafka looks the key up with Scala's Map.apply, which throws
                return AdminError(Errors.UNKNOWN_SERVER_ERROR, None)
            verb = "append" if op == AlterOp.APPEND else "subtract"
            if definition.type is not ConfigType.LIST:
                return AdminError(
                    Errors.INVALID_CONFIG, f"Config value {verb} is not allowed for config key: {name}"
                )
            parts = [part for part in (layer.get(name, definition.default_string) or "").split(",") if part]
            for element in _java_split(value):
                if op == AlterOp.APPEND and element not in parts:
                    parts.append(element)
                elif op == AlterOp.SUBTRACT and element in parts:
                    parts.remove(element)
            layer[name] = ",".join(parts)
    return layer


def _broker_change_problem(config, layer: dict[str, str], *, per_broker: bool) -> str | None:
    """``DynamicBrokerConfig.validate``'s message for this new dynamic layer, in Kafka's order."""
    if not any(
        name in BROKER_CONFIGS and BROKER_CONFIGS[name].update_mode is UpdateMode.READ_ONLY for name in layer
    ):  # read-only configs are reported by with_dynamic below, before anything else
        listener_only = [name for name in layer if name in LISTENER_ONLY_CONFIGS]
        if listener_only:
            return (
                "These security configs can be dynamically updated only per-listener using the listener "
                f"prefix: Set({', '.join(listener_only)})"
            )
        for name, definition in BROKER_CONFIGS.items():
            if name in layer:
                try:
                    definition.parse(layer[name])
                except ConfigError as exc:
                    return str(exc)
    try:
        if per_broker:
            updated = config.with_dynamic(per_broker=layer)
        else:
            updated = config.with_dynamic(cluster_default=layer)
    except ConfigError as exc:
        return str(exc)
    for name in _THREAD_POOLS:
        old, new = config[name], updated[name]
        if new != old and (new <= 0 or new < old // 2 or new > old * 2):
            return "Invalid dynamic configuration"
    return None


@handles(33)
async def alter_configs(broker, ctx, request) -> AlterConfigsResponse:
    outcomes = await _alter(broker, ctx, request, incremental=False)
    return AlterConfigsResponse(
        responses=[
            AlterConfigsResponse.AlterConfigsResourceResponse(
                error_code=error.code if error else Errors.NONE,
                error_message=error.message if error else None,
                resource_type=r.resource_type,
                resource_name=r.resource_name,
            )
            for r, error in zip(request.resources, outcomes, strict=True)
        ]
    )


@handles(44)
async def incremental_alter_configs(broker, ctx, request) -> IncrementalAlterConfigsResponse:
    outcomes = await _alter(broker, ctx, request, incremental=True)
    return IncrementalAlterConfigsResponse(
        responses=[
            IncrementalAlterConfigsResponse.AlterConfigsResourceResponse(
                error_code=error.code if error else Errors.NONE,
                error_message=error.message if error else None,
                resource_type=r.resource_type,
                resource_name=r.resource_name,
            )
            for r, error in zip(request.resources, outcomes, strict=True)
        ]
    )
