"""AlterConfigs and IncrementalAlterConfigs on the controller, against Kafka's ConfigurationControlManager
(metadata/src/main/java/org/apache/kafka/controller/ConfigurationControlManager.java), its validator
(core/src/main/scala/kafka/server/ControllerConfigurationValidator.scala), QuorumController's
ConfigResourceExistenceChecker and ControllerApis.handleLegacyAlterConfigs /
handleIncrementalAlterConfigs: the ConfigRecords each API writes, validate_only, the errors, and the
controller's own configuration following the dynamic broker configs it writes."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from kconform.codecs.errors import Errors
from kconform.codecs.messages import AlterConfigsRequest, IncrementalAlterConfigsRequest
from kconform.codecs.metadata_records import ConfigRecord
from kconform.codecs.records import iter_batches
from kconform.reference_broker.clock import ManualClock
from kconform.reference_broker.cluster_metadata import BROKER_RESOURCE, TOPIC_RESOURCE
from kconform.reference_broker.controller import handlers

from .cluster import join, new_controller, records_from

TOPIC, BROKER = TOPIC_RESOURCE, BROKER_RESOURCE
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


@pytest.fixture
def clock():
    return ManualClock()


@pytest.fixture
def controller(tmp_path, clock):
    """Brokers 1-3 registered and unfenced, topic "t" with retention.ms=1000 and segment.ms=2000."""
    c = new_controller(tmp_path, clock)
    for b in (1, 2, 3):
        join(c, b)
    c.create_topic("t", [[1, 2, 3]], {"retention.ms": "1000", "segment.ms": "2000"})
    yield c
    c.close()


def written(controller, action) -> list[ConfigRecord]:
    start = controller.metadata.end_offset
    action()
    return records_from(controller, start)


def incremental(controller, *resources, validate_only=False):
    return controller.alter_configs(list(resources), incremental=True, validate_only=validate_only)


def legacy(controller, *resources, validate_only=False):
    return controller.alter_configs(list(resources), incremental=False, validate_only=validate_only)


def error(result):
    return None if result is None else (result.code, result.message)


# ---- the records ----------------------------------------------------------------------------------


def test_incremental_writes_a_record_per_changed_topic_config_and_null_deletes(controller, tmp_path, clock):
    """incrementalAlterConfigResource: SET, DELETE (value null), APPEND from the default; a topic config
    whose value stays the same writes nothing."""
    ops = [
        ("retention.ms", SET, "5000"),
        ("segment.ms", DELETE, None),
        ("cleanup.policy", APPEND, "compact"),
        ("max.message.bytes", DELETE, None),  # not stored: unchanged
    ]
    records = written(controller, lambda: incremental(controller, (TOPIC, "t", ops)))
    assert records == [
        ConfigRecord(TOPIC, "t", "cleanup.policy", "delete,compact"),
        ConfigRecord(TOPIC, "t", "retention.ms", "5000"),
        ConfigRecord(TOPIC, "t", "segment.ms", None),
    ]
    expected = {"retention.ms": "5000", "cleanup.policy": "delete,compact"}
    assert controller.image.get("t").configs == expected
    controller.close()
    assert new_controller(tmp_path, clock).image.get("t").configs == expected


def test_legacy_replaces_the_whole_topic_config(controller):
    """legacyAlterConfigResource: changed values, then a null record for every stored key not named."""
    configs = {"retention.ms": "1000", "max.message.bytes": "2000"}
    records = written(controller, lambda: legacy(controller, (TOPIC, "t", configs)))
    assert records == [
        ConfigRecord(TOPIC, "t", "max.message.bytes", "2000"),
        ConfigRecord(TOPIC, "t", "segment.ms", None),
    ]
    assert controller.image.get("t").configs == configs


def test_broker_configs_are_written_even_when_unchanged(controller):
    """KAFKA-14136: a BROKER resource writes a record for every key given, changed or not, so that the
    brokers reload it; AlterConfigs also deletes the keys it leaves out."""
    incremental(controller, (BROKER, "", [("log.retention.ms", SET, "7200000")]))
    again = written(
        controller, lambda: incremental(controller, (BROKER, "", [("log.retention.ms", SET, "7200000")]))
    )
    assert again == [ConfigRecord(BROKER, "", "log.retention.ms", "7200000")]
    replaced = written(controller, lambda: legacy(controller, (BROKER, "2", {"message.max.bytes": "2000"})))
    assert replaced == [ConfigRecord(BROKER, "2", "message.max.bytes", "2000")]
    cleared = written(controller, lambda: legacy(controller, (BROKER, "2", {})))
    assert cleared == [ConfigRecord(BROKER, "2", "message.max.bytes", None)]
    assert controller.image.broker_configs(None) == {"log.retention.ms": "7200000"}
    assert controller.image.broker_configs(2) == {}


def test_the_records_of_every_resource_that_passed_are_one_batch(controller):
    """QuorumController.incrementalAlterConfigs: ControllerResult.atomicOf, the failed resource left out."""
    start = controller.metadata.end_offset
    errors = incremental(
        controller,
        (TOPIC, "t", [("retention.ms", SET, "3")]),
        (TOPIC, "ghost", [("retention.ms", SET, "3")]),
        (BROKER, "1", [("log.cleaner.threads", SET, "2")]),
    )
    assert [e is None for e in errors] == [True, False, True]
    batches = list(iter_batches(controller.metadata.read(start, 1 << 20)))
    assert len(batches) == 1 and [r.offset for r in batches[0].records] == [start, start + 1]


def test_validate_only_writes_nothing_and_answers_the_same(controller):
    """QuorumController.incrementalAlterConfigs / legacyAlterConfigs: validateOnly drops the records."""
    end = controller.metadata.end_offset
    good = incremental(controller, (TOPIC, "t", [("retention.ms", SET, "9")]), validate_only=True)
    bad = legacy(controller, (TOPIC, "t", {"segment.bytes": "12"}), validate_only=True)
    assert good == [None] and error(bad[0])[0] == Errors.INVALID_CONFIG
    incremental(controller, (BROKER, "", [("log.retention.ms", SET, "1")]), validate_only=True)
    assert controller.metadata.end_offset == end
    assert controller.image.get("t").configs == {"retention.ms": "1000", "segment.ms": "2000"}
    assert controller.config["log.retention.ms"] is None  # the dynamic default did not reach it


# ---- the errors -----------------------------------------------------------------------------------


def test_topic_errors_in_kafkas_order(controller):
    """Operations first (APPEND on a non-LIST config: INVALID_CONFIG), then validateTopicName, then
    LogConfig.validate (INVALID_CONFIG), then the existence check (UNKNOWN_TOPIC_OR_PARTITION)."""
    results = incremental(
        controller,
        (TOPIC, "", [("retention.ms", APPEND, "1")]),
        (TOPIC, "", [("retention.ms", SET, "1")]),
        (TOPIC, "bad name", [("retention.ms", SET, "1")]),
        (TOPIC, "t", [("segment.bytes", SET, "12")]),
        (TOPIC, "ghost", [("segment.bytes", SET, "12")]),
        (TOPIC, "ghost", [("retention.ms", SET, "12")]),
    )
    assert [error(r) for r in results][:2] == [
        (Errors.INVALID_CONFIG, "Can't APPEND to key retention.ms because its type is not LIST."),
        (Errors.INVALID_REQUEST, "Default topic resources are not allowed."),
    ]
    assert error(results[2])[0] == Errors.INVALID_TOPIC_EXCEPTION
    too_small = "Invalid value 12 for configuration segment.bytes: Value must be at least 1048576"
    assert [error(r) for r in results][3:] == [
        (Errors.INVALID_CONFIG, too_small),
        (Errors.INVALID_CONFIG, too_small),
        (Errors.UNKNOWN_TOPIC_OR_PARTITION, "The topic 'ghost' does not exist."),
    ]


def test_broker_names_and_existence(tmp_path, clock):
    """ControllerConfigurationValidator.validateBrokerName, then ConfigResourceExistenceChecker: a node id
    must be a registered broker or the controller (featureControl.isControllerId)."""
    controller = new_controller(tmp_path, clock, **{"node.id": "0", "process.roles": "controller"})
    join(controller, 1)
    try:
        results = legacy(
            controller,
            (BROKER, "x", {}),
            (BROKER, "-1", {}),
            (BROKER, "9", {"log.retention.ms": "1"}),
            (BROKER, "0", {"log.retention.ms": "1"}),
            (BROKER, "1", {"log.retention.ms": "1"}),
            (BROKER, "", {"log.retention.ms": "1"}),
        )
        assert [error(r) for r in results] == [
            (Errors.INVALID_REQUEST, "Unable to parse broker name as a base 10 number."),
            (Errors.INVALID_REQUEST, "Invalid negative broker ID."),
            (Errors.BROKER_ID_NOT_REGISTERED, "No node with id 9 found."),
            None,
            None,
            None,
        ]
        append = incremental(controller, (BROKER, "1", [("log.retention.ms", APPEND, "1")]))
        assert error(append[0]) == (
            Errors.INVALID_CONFIG,
            "Can't APPEND to key log.retention.ms because its type is not LIST.",
        )
    finally:
        controller.close()


def test_the_controller_follows_the_cluster_default_and_its_own_layer(tmp_path, clock):
    """ConfigurationControlManager.clusterConfig / currentControllerConfig: the controller's topic
    defaults take the "" resource and its own node id, not another broker's layer; after a restart too."""
    controller = new_controller(tmp_path, clock)
    for b in (1, 2):
        join(controller, b)
    incremental(controller, (BROKER, "", [("log.retention.ms", SET, "7200000")]))
    incremental(controller, (BROKER, "2", [("message.max.bytes", SET, "2000")]))
    incremental(controller, (BROKER, "1", [("log.segment.bytes", SET, "2000000")]))
    assert controller.config["log.retention.ms"] == 7200000
    assert controller.config["message.max.bytes"] != 2000
    assert controller.topic_settings({})["segment.bytes"] == "2000000"
    controller.close()
    reopened = new_controller(tmp_path, clock)
    try:
        assert (reopened.config["log.retention.ms"], reopened.config["log.segment.bytes"]) == (
            7200000,
            2000000,
        )
    finally:
        reopened.close()


# ---- the handlers (ControllerApis) ---------------------------------------------------------------


def call(controller, api_key, request):
    handler = handlers.CONTROLLER_HANDLERS[api_key].fn
    return asyncio.run(handler(SimpleNamespace(controller=controller), None, request))


def test_handlers_answer_unknown_types_and_duplicates_first(controller):
    """handleIncrementalAlterConfigs: Type.UNKNOWN is UNSUPPORTED_VERSION; a resource named twice gets one
    "Duplicate resource." and is dropped (a third naming is passed over); a key named twice keeps its
    last value."""
    R, C = IncrementalAlterConfigsRequest.AlterConfigsResource, IncrementalAlterConfigsRequest.AlterableConfig
    twice = [C("retention.ms", SET, "1"), C("retention.ms", SET, "2")]
    resources = [
        R(resource_type=TOPIC, resource_name="t", configs=twice),
        R(resource_type=3, resource_name="x", configs=[]),
        R(resource_type=BROKER, resource_name="", configs=[C("log.retention.ms", SET, "1")]),
        R(resource_type=BROKER, resource_name="", configs=[C("log.retention.ms", SET, "2")]),
        R(resource_type=BROKER, resource_name="", configs=[C("log.retention.ms", SET, "3")]),
    ]  # fmt: skip
    response = call(controller, 44, IncrementalAlterConfigsRequest(resources=resources, validate_only=False))
    assert [
        (r.resource_type, r.resource_name, r.error_code, r.error_message) for r in response.responses
    ] == [
        (3, "x", Errors.UNSUPPORTED_VERSION, "Unknown resource type 3."),
        (BROKER, "", Errors.INVALID_REQUEST, "Duplicate resource."),
        (TOPIC, "t", Errors.NONE, None),
    ]
    assert controller.image.get("t").configs["retention.ms"] == "2"
    assert controller.image.broker_configs(None) == {}


def test_legacy_handler_validate_only_and_broker_logger(controller):
    """handleLegacyAlterConfigs: validateOnly answers without writing; BROKER_LOGGER is not a stored
    config (ControllerConfigurationValidator: "Unknown resource type")."""
    R, C = AlterConfigsRequest.AlterConfigsResource, AlterConfigsRequest.AlterableConfig
    end = controller.metadata.end_offset
    resources = [
        R(resource_type=TOPIC, resource_name="t", configs=[C("retention.ms", "1")]),
        R(resource_type=8, resource_name="1", configs=[]),
    ]
    response = call(controller, 33, AlterConfigsRequest(resources=resources, validate_only=True))
    assert [(r.error_code, r.error_message) for r in response.responses] == [
        (Errors.NONE, None),
        (Errors.INVALID_REQUEST, "Unknown resource type BROKER_LOGGER"),
    ]
    assert controller.metadata.end_offset == end
