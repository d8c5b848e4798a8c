"""Rules of configs: DescribeConfigs, AlterConfigs and IncrementalAlterConfigs on topics (broker
resources only where the request is refused: a shared target's broker settings are not a test's to
change)."""

from __future__ import annotations

from kconform.codecs.errors import Errors
from kconform.codecs.messages import (
    AlterConfigsRequest,
    DescribeConfigsRequest,
    IncrementalAlterConfigsRequest,
    MetadataRequest,
)

from .catalogue import Rule, add, rule
from .rules_admin import eventually
from .session import RuleSession, expect, expect_error

METADATA = 3
DESCRIBE_CONFIGS, ALTER_CONFIGS, INCREMENTAL = 32, 33, 44
TOPIC, BROKER = 2, 4  # ConfigResource.Type
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3  # AlterConfigOp.OpType
TOPIC_CONFIG = 1  # DescribeConfigsResponse.ConfigSource
FAMILY = "configs"


# ---- helpers ---------------------------------------------------------------------------------------


async def describe(
    s: RuleSession, version: int, rtype: int, name: str, keys=None, synonyms=False, client=None
):
    resource = DescribeConfigsRequest.DescribeConfigsResource(
        resource_type=rtype, resource_name=name, configuration_keys=keys
    )
    request = DescribeConfigsRequest(resources=[resource], include_synonyms=synonyms and version >= 1)
    body = await s.call(client or await s.raw(), DESCRIBE_CONFIGS, version, request)
    return body.results[0]


async def topic_configs(s: RuleSession, topic: str) -> dict:
    """name -> (value, config_source) of a topic, at the target's newest DescribeConfigs."""
    result = await describe(s, s.versions[DESCRIBE_CONFIGS][1], TOPIC, topic)
    expect_error("describe error_code", result.error_code, Errors.NONE)
    return {c.name: (c.value, c.config_source) for c in result.configs}


async def alter(s: RuleSession, version: int, *resources, validate_only=False, client=None):
    """AlterConfigs of (type, name, {config: value}) resources."""
    request = AlterConfigsRequest(
        resources=[
            AlterConfigsRequest.AlterConfigsResource(
                resource_type=t,
                resource_name=n,
                configs=[AlterConfigsRequest.AlterableConfig(name=k, value=v) for k, v in c.items()],
            )
            for t, n, c in resources
        ],
        validate_only=validate_only,
    )
    return (await s.call(client or await s.raw(), ALTER_CONFIGS, version, request)).responses


async def incremental(s: RuleSession, version: int, *resources, validate_only=False, client=None):
    """IncrementalAlterConfigs of (type, name, [(config, op, value)]) resources."""
    request = IncrementalAlterConfigsRequest(
        resources=[
            IncrementalAlterConfigsRequest.AlterConfigsResource(
                resource_type=t,
                resource_name=n,
                configs=[
                    IncrementalAlterConfigsRequest.AlterableConfig(name=k, config_operation=op, value=v)
                    for k, op, v in ops
                ],
            )
            for t, n, ops in resources
        ],
        validate_only=validate_only,
    )
    return (await s.call(client or await s.raw(), INCREMENTAL, version, request)).responses


async def some_broker(s: RuleSession):
    """A raw connection to one broker and its node id."""
    body = await s.call(await s.raw(), METADATA, s.setup_version(METADATA, 12), MetadataRequest(topics=[]))
    node = body.brokers[0].node_id
    return await s.raw(node), node


async def expect_overrides(s: RuleSession, topic: str, expected: dict, what: str = "overrides") -> None:
    """The topic's overrides of the configs ``expected`` names are those values (None: no override),
    once the broker describing them has learnt of the change."""

    async def read():
        configs = await topic_configs(s, topic)
        return {name: override(configs, name) for name in expected}

    expect(what, await eventually(read, lambda got: got == expected), expected)


def override(configs: dict, name: str):
    """The value a topic override sets, None when the config is not overridden on the topic."""
    value, source = configs.get(name, (None, None))
    return value if source == TOPIC_CONFIG else None


# ---- DescribeConfigs -------------------------------------------------------------------------------


@rule(
    "configs.describe-unknown-topic",
    api=DESCRIBE_CONFIGS,
    versions=(1, 4),
    source="ConfigHelper.describeConfigs UNKNOWN_TOPIC_OR_PARTITION",
    family=FAMILY,
)
async def describe_unknown_topic(s: RuleSession, version: int) -> None:
    """DescribeConfigs of a topic that does not exist answers it with UNKNOWN_TOPIC_OR_PARTITION and no
    configs."""
    result = await describe(s, version, TOPIC, s.name("absent"))
    expect_error("results[0].error_code", result.error_code, Errors.UNKNOWN_TOPIC_OR_PARTITION)
    expect("results[0].configs", result.configs, [])


@rule(
    "configs.describe-illegal-topic-name",
    api=DESCRIBE_CONFIGS,
    versions=(1, 4),
    source="ConfigHelper.describeConfigs Topic.validate",
    family=FAMILY,
)
async def describe_illegal_topic(s: RuleSession, version: int) -> None:
    """DescribeConfigs of a topic whose name is illegal answers it with INVALID_TOPIC_EXCEPTION."""
    result = await describe(s, version, TOPIC, "bad name!")
    expect_error("results[0].error_code", result.error_code, Errors.INVALID_TOPIC_EXCEPTION)


@rule(
    "configs.describe-override-is-topic-config",
    api=DESCRIBE_CONFIGS,
    versions=(1, 4),
    source="ConfigHelper.createTopicConfigEntry TOPIC_CONFIG",
    family=FAMILY,
)
async def describe_override(s: RuleSession, version: int) -> None:
    """A topic's override is described with its value, source TOPIC_CONFIG (1) and not read-only;
    a config without override is described with another source."""
    topic, _ = await s.create_topic(**{"retention.ms": "3600000"})
    result = await describe(s, version, TOPIC, topic)
    configs = {c.name: c for c in result.configs}
    retention = configs.get("retention.ms")
    expect("retention.ms described", retention is not None, True)
    expect(
        "retention.ms", (retention.value, retention.config_source, retention.read_only), ("3600000", 1, False)
    )
    segment = configs.get("segment.bytes")
    expect("segment.bytes described", segment is not None, True)
    expect("segment.bytes not TOPIC_CONFIG", segment.config_source != TOPIC_CONFIG, True)


@rule(
    "configs.describe-keys-select",
    api=DESCRIBE_CONFIGS,
    versions=(1, 4),
    source="ConfigHelper.describeConfigs configurationKeys",
    family=FAMILY,
)
async def describe_keys(s: RuleSession, version: int) -> None:
    """DescribeConfigs with configuration keys answers only those configs; an unknown key is left out."""
    topic, _ = await s.create_topic()
    result = await describe(s, version, TOPIC, topic, ["retention.ms", "no.such.config", "cleanup.policy"])
    expect_error("results[0].error_code", result.error_code, Errors.NONE)
    expect("configs", sorted(c.name for c in result.configs), ["cleanup.policy", "retention.ms"])


@rule(
    "configs.describe-synonyms-when-asked",
    api=DESCRIBE_CONFIGS,
    versions=(1, 4),
    source="ConfigHelper.createTopicConfigEntry includeSynonyms",
    family=FAMILY,
)
async def describe_synonyms(s: RuleSession, version: int) -> None:
    """From v1, with include_synonyms a topic override's synonyms start with the override itself
    (same name and value, source TOPIC_CONFIG); without it, no synonyms are sent."""
    topic, _ = await s.create_topic(**{"retention.ms": "3600000"})
    [asked] = (await describe(s, version, TOPIC, topic, ["retention.ms"], synonyms=True)).configs
    first = asked.synonyms[0] if asked.synonyms else None
    expect("synonyms[0]", first and (first.name, first.value, first.source), ("retention.ms", "3600000", 1))
    [plain] = (await describe(s, version, TOPIC, topic, ["retention.ms"])).configs
    expect("synonyms unasked", plain.synonyms, [])


@rule(
    "configs.describe-no-documentation-unless-asked",
    api=DESCRIBE_CONFIGS,
    versions=(3, 4),
    source="ConfigHelper.describeConfigs includeDocumentation",
    family=FAMILY,
)
async def describe_no_documentation(s: RuleSession, version: int) -> None:
    """From v3, configs are described without documentation (null) unless the request asks for it."""
    topic, _ = await s.create_topic()
    result = await describe(s, version, TOPIC, topic, ["retention.ms"])
    expect("documentation", [c.documentation for c in result.configs], [None])


# LogConfig's ConfigDef types, as DescribeConfigsResponse.ConfigType numbers them (from v3).
CONFIG_TYPES = {
    "preallocate": ("BOOLEAN", 1),
    "compression.type": ("STRING", 2),
    "segment.bytes": ("INT", 3),
    "retention.ms": ("LONG", 5),
    "min.cleanable.dirty.ratio": ("DOUBLE", 6),
    "cleanup.policy": ("LIST", 7),
}


def _type_check(name: str, code: int):
    async def check(s: RuleSession, version: int) -> None:
        topic, _ = await s.create_topic()
        result = await describe(s, version, TOPIC, topic, [name])
        expect(f"{name} config_type", [c.config_type for c in result.configs], [code])

    return check


for _name, (_type, _code) in CONFIG_TYPES.items():
    add(
        Rule(
            id=f"configs.describe-type.{_name.replace('.', '-')}",
            api=DESCRIBE_CONFIGS,
            versions=(3, 4),
            source=f"ConfigHelper.configResponseType LogConfig {_name}",
            text=f"From v3, the topic config {_name} is described with config_type {_type} ({_code}).",
            check=_type_check(_name, _code),
            family=FAMILY,
        )
    )


@rule(
    "configs.describe-unknown-resource-type",
    api=DESCRIBE_CONFIGS,
    versions=(1, 4),
    source="KafkaApis.handleDescribeConfigsRequest unknown resource type",
    family=FAMILY,
)
async def describe_unknown_type(s: RuleSession, version: int) -> None:
    """A DescribeConfigs naming a resource type Kafka does not know (3) fails every resource in it with
    INVALID_REQUEST, a valid topic too."""
    topic, _ = await s.create_topic()
    resources = [
        DescribeConfigsRequest.DescribeConfigsResource(resource_type=TOPIC, resource_name=topic),
        DescribeConfigsRequest.DescribeConfigsResource(resource_type=3, resource_name="x"),
    ]
    body = await s.call(await s.raw(), DESCRIBE_CONFIGS, version, DescribeConfigsRequest(resources=resources))
    expect("error codes", [r.error_code for r in body.results], [Errors.INVALID_REQUEST] * 2)


@rule(
    "configs.describe-this-broker",
    api=DESCRIBE_CONFIGS,
    versions=(1, 4),
    source="ConfigHelper.describeConfigs BROKER",
    family=FAMILY,
)
async def describe_this_broker(s: RuleSession, version: int) -> None:
    """DescribeConfigs of the broker resource named by the answering broker's own id lists its configs."""
    client, node = await some_broker(s)
    result = await describe(s, version, BROKER, str(node), client=client)
    expect_error("results[0].error_code", result.error_code, Errors.NONE)
    expect("configs listed", len(result.configs) > 0, True)


_OTHER_BROKERS = [
    ("other-id", lambda node: str(node + 100_000), "an id other than its own"),
    ("non-integer-id", lambda node: "one", "a name that is not an integer"),
]
for _case, _name_of, _what in _OTHER_BROKERS:

    def _other_broker(name_of=_name_of):
        async def check(s: RuleSession, version: int) -> None:
            client, node = await some_broker(s)
            result = await describe(s, version, BROKER, name_of(node), client=client)
            expect_error("results[0].error_code", result.error_code, Errors.INVALID_REQUEST)

        return check

    add(
        Rule(
            id=f"configs.describe-broker-{_case}",
            api=DESCRIBE_CONFIGS,
            versions=(1, 4),
            source="ConfigHelper.describeConfigs resourceNameToBrokerId",
            text=f"DescribeConfigs of a broker resource named by {_what} is answered INVALID_REQUEST by "
            "the broker receiving it.",
            check=_other_broker(),
            family=FAMILY,
        )
    )


# ---- AlterConfigs ----------------------------------------------------------------------------------


@rule(
    "configs.alter-replaces-whole-override-set",
    api=ALTER_CONFIGS,
    versions=(0, 2),
    source="ConfigurationControlManager.legacyAlterConfigResource",
    family=FAMILY,
)
async def alter_replaces(s: RuleSession, version: int) -> None:
    """AlterConfigs sets a topic's overrides to exactly those given: an override it does not name is
    removed."""
    topic, _ = await s.create_topic(**{"retention.ms": "1000"})
    [result] = await alter(s, version, (TOPIC, topic, {"max.message.bytes": "2000"}))
    expect_error("responses[0].error_code", result.error_code, Errors.NONE)
    await expect_overrides(s, topic, {"max.message.bytes": "2000", "retention.ms": None})


@rule(
    "configs.alter-validate-only-changes-nothing",
    api=ALTER_CONFIGS,
    versions=(0, 2),
    source="ConfigurationControlManager.legacyAlterConfigs validateOnly",
    family=FAMILY,
)
async def alter_validate_only(s: RuleSession, version: int) -> None:
    """A validate_only AlterConfigs answers NONE and leaves the topic's overrides as they were."""
    topic, _ = await s.create_topic(**{"retention.ms": "1000"})
    [result] = await alter(s, version, (TOPIC, topic, {"retention.ms": "5000"}), validate_only=True)
    expect_error("responses[0].error_code", result.error_code, Errors.NONE)
    expect("retention.ms override", override(await topic_configs(s, topic), "retention.ms"), "1000")


def _alter_refused(error: Errors, make):
    """``make(topic)`` gives the resources of one AlterConfigs; every answer must be ``error``."""

    async def check(s: RuleSession, version: int) -> None:
        topic, _ = await s.create_topic(**{"retention.ms": "1000"})
        results = await alter(s, version, *make(s, topic))
        expect("error codes", {r.error_code for r in results}, {error})
        expect("retention.ms override", override(await topic_configs(s, topic), "retention.ms"), "1000")

    return check


_ALTER_REFUSED = [
    ("alter-resource-named-twice", Errors.INVALID_REQUEST, "ConfigAdminManager.preprocess each resource once",
     lambda s, t: [(TOPIC, t, {"retention.ms": "1"}), (TOPIC, t, {"retention.ms": "2"})],
     "a resource named twice in one AlterConfigs fails both with INVALID_REQUEST"),
    ("alter-null-value", Errors.INVALID_REQUEST, "ConfigAdminManager.preprocess null value",
     lambda s, t: [(TOPIC, t, {"retention.ms": None})],
     "an AlterConfigs entry with a null value is refused with INVALID_REQUEST"),
    ("alter-invalid-value", Errors.INVALID_CONFIG, "ConfigurationControlManager.validateAlterConfig",
     lambda s, t: [(TOPIC, t, {"segment.bytes": "12"})],
     "an AlterConfigs value the config's validator rejects is refused with INVALID_CONFIG"),
    ("alter-unknown-config", Errors.INVALID_CONFIG, "ControllerConfigurationValidator.validate",
     lambda s, t: [(TOPIC, t, {"no.such.config": "1"})],
     "an AlterConfigs of a topic config Kafka does not define is refused with INVALID_CONFIG"),
]  # fmt: skip
for _case, _error, _source, _make, _text in _ALTER_REFUSED:
    add(
        Rule(
            id=f"configs.{_case}",
            api=ALTER_CONFIGS,
            versions=(0, 2),
            source=_source,
            text=_text[0].upper() + _text[1:] + ", and the topic keeps its overrides.",
            check=_alter_refused(_error, _make),
            family=FAMILY,
        )
    )


@rule(
    "configs.alter-duplicate-keys",
    api=ALTER_CONFIGS,
    versions=(0, 2),
    source="ConfigAdminManager.preprocess duplicate config keys",
    family=FAMILY,
)
async def alter_duplicate_keys(s: RuleSession, version: int) -> None:
    """An AlterConfigs resource naming one config twice is refused with INVALID_REQUEST."""
    topic, _ = await s.create_topic()
    resource = AlterConfigsRequest.AlterConfigsResource(
        resource_type=TOPIC,
        resource_name=topic,
        configs=[AlterConfigsRequest.AlterableConfig(name="retention.ms", value=v) for v in ("1", "2")],
    )
    body = await s.call(await s.raw(), ALTER_CONFIGS, version, AlterConfigsRequest(resources=[resource]))
    expect_error("responses[0].error_code", body.responses[0].error_code, Errors.INVALID_REQUEST)


_ALTER_RESOURCES = [
    ("alter-unknown-topic", Errors.UNKNOWN_TOPIC_OR_PARTITION,
     "ConfigurationControlManager.validateAlterConfig", TOPIC, None,
     "an AlterConfigs of a topic that does not exist is refused with UNKNOWN_TOPIC_OR_PARTITION"),
    ("alter-default-topic-resource", Errors.INVALID_REQUEST, "ControllerConfigurationValidator.validate",
     TOPIC, "", "an AlterConfigs of the topic resource with an empty name is refused with INVALID_REQUEST"),
    ("alter-unknown-resource-type", Errors.INVALID_REQUEST, "ConfigAdminManager.preprocess unknown type",
     3, "x", "an AlterConfigs of a resource type Kafka does not know is refused with INVALID_REQUEST"),
]  # fmt: skip
for _case, _error, _source, _type, _rname, _text in _ALTER_RESOURCES:

    def _resource_check(error=_error, rtype=_type, rname=_rname):
        async def check(s: RuleSession, version: int) -> None:
            name = s.name("absent") if rname is None else rname
            [result] = await alter(s, version, (rtype, name, {"retention.ms": "10"}))
            expect_error("responses[0].error_code", result.error_code, error)

        return check

    add(
        Rule(
            id=f"configs.{_case}",
            api=ALTER_CONFIGS,
            versions=(0, 2),
            source=_source,
            text=_text[0].upper() + _text[1:] + ".",
            check=_resource_check(),
            family=FAMILY,
        )
    )


@rule(
    "configs.alter-broker-read-only-config",
    api=ALTER_CONFIGS,
    versions=(0, 2),
    source="ConfigAdminManager.validateBrokerConfigChange DynamicBrokerConfig.validate",
    family=FAMILY,
)
async def alter_broker_read_only(s: RuleSession, version: int) -> None:
    """AlterConfigs of a broker config that cannot change dynamically (log.dirs) is refused with
    INVALID_REQUEST."""
    client, node = await some_broker(s)
    [result] = await alter(s, version, (BROKER, str(node), {"log.dirs": "/elsewhere"}), client=client)
    expect_error("responses[0].error_code", result.error_code, Errors.INVALID_REQUEST)
