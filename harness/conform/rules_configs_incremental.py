"""Rules of IncrementalAlterConfigs: set, delete, append and subtract on topic configs, and the values each
config's validator refuses."""

from __future__ import annotations

from kconform.codecs.errors import Errors

from .catalogue import Rule, add, rule
from .rules_admin import INVALID_TOPIC_CONFIGS
from .rules_configs import (
    APPEND,
    DELETE,
    FAMILY,
    INCREMENTAL,
    SET,
    SUBTRACT,
    TOPIC,
    expect_overrides,
    incremental,
    override,
    topic_configs,
)
from .session import RuleSession, expect, expect_error

# ---- IncrementalAlterConfigs -----------------------------------------------------------------------


@rule(
    "configs.incremental-set-and-delete-keep-others",
    api=INCREMENTAL,
    versions=(0, 1),
    source="ConfigurationControlManager.incrementalAlterConfigResource",
    family=FAMILY,
)
async def incremental_set_delete(s: RuleSession, version: int) -> None:
    """IncrementalAlterConfigs SET and DELETE change only the configs they name; other overrides stay."""
    topic, _ = await s.create_topic(**{"retention.ms": "1000", "segment.ms": "3600000", "flush.ms": "5000"})
    ops = [("retention.ms", SET, "2000"), ("segment.ms", DELETE, None)]
    [result] = await incremental(s, version, (TOPIC, topic, ops))
    expect_error("responses[0].error_code", result.error_code, Errors.NONE)
    await expect_overrides(s, topic, {"retention.ms": "2000", "segment.ms": None, "flush.ms": "5000"})


@rule(
    "configs.incremental-append-and-subtract-lists",
    api=INCREMENTAL,
    versions=(0, 1),
    source="ConfigurationControlManager.incrementalAlterConfigResource APPEND SUBTRACT",
    family=FAMILY,
)
async def incremental_lists(s: RuleSession, version: int) -> None:
    """APPEND adds a value to a list config (cleanup.policy delete -> delete,compact) and SUBTRACT
    removes one (-> compact)."""
    topic, _ = await s.create_topic(**{"cleanup.policy": "delete"})
    [added] = await incremental(s, version, (TOPIC, topic, [("cleanup.policy", APPEND, "compact")]))
    expect_error("append error_code", added.error_code, Errors.NONE)
    await expect_overrides(s, topic, {"cleanup.policy": "delete,compact"}, "after append")
    [removed] = await incremental(s, version, (TOPIC, topic, [("cleanup.policy", SUBTRACT, "delete")]))
    expect_error("subtract error_code", removed.error_code, Errors.NONE)
    await expect_overrides(s, topic, {"cleanup.policy": "compact"}, "after subtract")


@rule(
    "configs.incremental-validate-only-changes-nothing",
    api=INCREMENTAL,
    versions=(0, 1),
    source="ConfigurationControlManager.incrementalAlterConfigs validateOnly",
    family=FAMILY,
)
async def incremental_validate_only(s: RuleSession, version: int) -> None:
    """A validate_only IncrementalAlterConfigs answers NONE and changes nothing."""
    topic, _ = await s.create_topic(**{"retention.ms": "1000"})
    ops = [("retention.ms", SET, "5000")]
    [result] = await incremental(s, version, (TOPIC, topic, ops), validate_only=True)
    expect_error("responses[0].error_code", result.error_code, Errors.NONE)
    expect("retention.ms override", override(await topic_configs(s, topic), "retention.ms"), "1000")


def _incremental_refused(error: Errors, ops_of):
    async def check(s: RuleSession, version: int) -> None:
        topic, _ = await s.create_topic(**{"retention.ms": "1000"})
        results = await incremental(s, version, *ops_of(s, topic))
        expect("error codes", {r.error_code for r in results}, {error})
        expect("retention.ms override", override(await topic_configs(s, topic), "retention.ms"), "1000")

    return check


_INCREMENTAL_REFUSED = [
    ("append-to-non-list", Errors.INVALID_CONFIG,
     "ConfigurationControlManager.incrementalAlterConfigResource",
     lambda s, t: [(TOPIC, t, [("retention.ms", APPEND, "1")])],
     "APPEND to a config whose type is not LIST is refused with INVALID_CONFIG"),
    ("subtract-from-non-list", Errors.INVALID_CONFIG,
     "ConfigurationControlManager.incrementalAlterConfigResource",
     lambda s, t: [(TOPIC, t, [("retention.ms", SUBTRACT, "1000")])],
     "SUBTRACT from a config whose type is not LIST is refused with INVALID_CONFIG"),
    ("null-value-for-set", Errors.INVALID_REQUEST, "ConfigAdminManager.preprocess null value",
     lambda s, t: [(TOPIC, t, [("retention.ms", SET, None)])],
     "a SET with a null value is refused with INVALID_REQUEST"),
    ("resource-named-twice", Errors.INVALID_REQUEST,
     "ConfigAdminManager.preprocess each resource once",
     lambda s, t: [(TOPIC, t, [("retention.ms", SET, "1")]), (TOPIC, t, [("retention.ms", SET, "2")])],
     "a resource named twice in one request fails both with INVALID_REQUEST"),
    ("duplicate-keys", Errors.INVALID_REQUEST, "ConfigAdminManager.preprocess duplicate config keys",
     lambda s, t: [(TOPIC, t, [("retention.ms", SET, "1"), ("retention.ms", SET, "2")])],
     "a resource naming one config twice is refused with INVALID_REQUEST"),
    ("unknown-config", Errors.INVALID_CONFIG, "ControllerConfigurationValidator.validate",
     lambda s, t: [(TOPIC, t, [("no.such.config", SET, "1")])],
     "a SET of a topic config Kafka does not define is refused with INVALID_CONFIG"),
]  # fmt: skip
for _case, _error, _source, _ops, _text in _INCREMENTAL_REFUSED:
    add(
        Rule(
            id=f"configs.incremental-{_case}",
            api=INCREMENTAL,
            versions=(0, 1),
            source=_source,
            text=f"In IncrementalAlterConfigs, {_text}, and the topic keeps its overrides.",
            check=_incremental_refused(_error, _ops),
            family=FAMILY,
        )
    )


@rule(
    "configs.incremental-unknown-topic",
    api=INCREMENTAL,
    versions=(0, 1),
    source="ConfigurationControlManager.validateAlterConfig UNKNOWN_TOPIC_OR_PARTITION",
    family=FAMILY,
)
async def incremental_unknown_topic(s: RuleSession, version: int) -> None:
    """IncrementalAlterConfigs of a topic that does not exist is refused with UNKNOWN_TOPIC_OR_PARTITION."""
    [result] = await incremental(s, version, (TOPIC, s.name("absent"), [("retention.ms", SET, "1")]))
    expect_error("responses[0].error_code", result.error_code, Errors.UNKNOWN_TOPIC_OR_PARTITION)


def _incremental_invalid_value(name: str, value: str):
    async def check(s: RuleSession, version: int) -> None:
        topic, _ = await s.create_topic()
        [result] = await incremental(s, version, (TOPIC, topic, [(name, SET, value)]))
        expect_error("responses[0].error_code", result.error_code, Errors.INVALID_CONFIG)
        expect(f"{name} override", override(await topic_configs(s, topic), name), None)

    return check


# The same LogConfig validators guard changes: ConfigurationControlManager.validateAlterConfig.
for _config, (_value, _since) in INVALID_TOPIC_CONFIGS.items():
    add(
        Rule(
            id=f"configs.incremental-invalid-value.{_config.replace('.', '-')}",
            api=INCREMENTAL,
            versions=(0, 1),
            source=f"ConfigurationControlManager.validateAlterConfig LogConfig {_config}",
            text=f"IncrementalAlterConfigs SET of {_config}={_value!r} on a topic, a value LogConfig's "
            "validator rejects, is refused with INVALID_CONFIG and changes nothing.",
            check=_incremental_invalid_value(_config, _value),
            family=FAMILY,
            since=_since,
            once=True,
        )
    )
