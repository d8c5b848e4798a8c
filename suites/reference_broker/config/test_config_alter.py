"""CreateTopics / AlterConfigs / IncrementalAlterConfigs topic config checks and operations."""

from __future__ import annotations

import pytest

from kconform.codecs.errors import Errors
from kconform.reference_broker.config import (
    AdminError,
    AlterOp,
    BrokerConfig,
    apply_incremental,
    create_topics_config_error,
    topic_config_error,
    validate_topic_configs,
)

MINIMAL = {"node.id": "1", "process.roles": "broker,controller"}
SET, DELETE, APPEND, SUBTRACT = AlterOp.SET, AlterOp.DELETE, AlterOp.APPEND, AlterOp.SUBTRACT


def test_error_codes():
    assert (Errors.INVALID_CONFIG, Errors.INVALID_REQUEST) == (40, 42)
    assert [op.value for op in AlterOp] == [0, 1, 2, 3]


def test_valid_configs_have_no_errors():
    assert (
        validate_topic_configs(
            {"cleanup.policy": "compact", "retention.ms": "-1", "segment.bytes": "1048576"}
        )
        == {}
    )
    assert topic_config_error({"cleanup.policy": "compact,delete"}) is None


def test_each_bad_key_is_reported():
    errors = validate_topic_configs(
        {
            "retention.ms": "soon",
            "bogus.key": "1",
            "compression.type": "lz4",
            "max.message.bytes": "-1",
            "flush.ms": None,
        }
    )
    assert set(errors) == {"retention.ms", "bogus.key", "max.message.bytes", "flush.ms"}
    assert all(e.code == Errors.INVALID_CONFIG for e in errors.values())
    assert errors["bogus.key"].message == "Unknown topic config name: bogus.key"
    assert (
        errors["retention.ms"].message
        == "Invalid value soon for configuration retention.ms: Not a number of type LONG"
    )
    assert errors["max.message.bytes"].message == (
        "Invalid value -1 for configuration max.message.bytes: Value must be at least 0"
    )
    assert errors["flush.ms"].message == "Null value not supported for topic configs: flush.ms"
    assert errors["bogus.key"].name == "INVALID_CONFIG"


def test_single_error_follows_kafkas_order():
    # nulls first (all of them), then an unknown name, then the first bad value in LogConfig's order
    error = topic_config_error({"segment.ms": "0", "x": "1", "a": None, "b": None})
    assert error == AdminError(40, "Null value not supported for topic configs: a,b")
    assert topic_config_error({"segment.ms": "0", "x": "1"}).message == "Unknown topic config name: x"
    error = topic_config_error({"retention.ms": "-5", "segment.ms": "0"})
    assert error.message == "Invalid value 0 for configuration segment.ms: Value must be at least 1"


def test_compaction_lag_conflict():
    error = topic_config_error({"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"})
    assert error == AdminError(
        40, "conflict topic config setting min.compaction.lag.ms (10) > max.compaction.lag.ms (5)"
    )
    broker = BrokerConfig({**MINIMAL, "log.cleaner.max.compaction.lag.ms": "5"})
    assert topic_config_error({"min.compaction.lag.ms": "10"}, broker=broker) is not None
    assert topic_config_error({"min.compaction.lag.ms": "10"}) is None


def test_remote_storage_needs_the_broker_to_enable_it():
    broker = BrokerConfig(MINIMAL)
    error = topic_config_error({"remote.storage.enable": "true"}, broker=broker)
    assert error.code == Errors.INVALID_CONFIG
    assert error.message.startswith("Tiered Storage functionality is disabled in the broker.")
    tiered = BrokerConfig({**MINIMAL, "remote.log.storage.system.enable": "true"})
    assert topic_config_error({"remote.storage.enable": "true"}, broker=tiered) is None
    error = topic_config_error({"remote.storage.enable": "true", "cleanup.policy": "compact"}, broker=tiered)
    assert error.message == "Remote log storage is unsupported for the compacted topics"
    error = topic_config_error(
        {"remote.storage.enable": "true", "retention.bytes": "100", "local.retention.bytes": "200"},
        broker=tiered,
    )
    assert error.message == (
        "Invalid value 200 for configuration local.retention.bytes: "
        "Value must not be more than retention.bytes property value: 100"
    )
    error = topic_config_error({}, broker=tiered, existing={"remote.storage.enable": "true"})
    assert error.message.startswith("It is invalid to disable remote storage without deleting remote data.")


def test_create_topics_nulls_and_duplicates():
    error = create_topics_config_error([("retention.ms", None), ("segment.ms", None)])
    assert error == AdminError(40, "Null value not supported for topic configs: retention.ms,segment.ms")
    assert create_topics_config_error([("segment.ms", "0"), ("segment.ms", "10")]) is None  # last one wins
    assert create_topics_config_error([("nope", "1")]).message == "Unknown topic config name: nope"


def test_set_and_delete():
    current = {"retention.ms": "1000", "segment.ms": "5000"}
    result = apply_incremental(current, [("retention.ms", SET, "2000"), ("segment.ms", DELETE, None)])
    assert result == {"retention.ms": "2000"}
    assert current == {"retention.ms": "1000", "segment.ms": "5000"}  # pure
    assert apply_incremental({}, [("not.stored", DELETE, None)]) == {}  # deleting what is not there is fine
    assert apply_incremental({}, [("not.a.config", DELETE, None)]) == {}


def test_append_starts_from_the_topic_default_and_skips_present_elements():
    assert apply_incremental({}, [("cleanup.policy", APPEND, "compact")]) == {
        "cleanup.policy": "delete,compact"
    }
    assert apply_incremental(
        {"cleanup.policy": "compact"}, [("cleanup.policy", APPEND, "compact,delete")]
    ) == {"cleanup.policy": "compact,delete"}
    assert apply_incremental({}, [("leader.replication.throttled.replicas", APPEND, "0:1,1:2")]) == {
        "leader.replication.throttled.replicas": "0:1,1:2"
    }


def test_subtract_removes_elements():
    current = {"cleanup.policy": "compact,delete"}
    assert apply_incremental(current, [("cleanup.policy", SUBTRACT, "compact")]) == {
        "cleanup.policy": "delete"
    }
    assert apply_incremental({}, [("cleanup.policy", SUBTRACT, "delete")]) == {"cleanup.policy": ""}
    assert apply_incremental({}, [("follower.replication.throttled.replicas", SUBTRACT, "0:1")]) == {
        "follower.replication.throttled.replicas": ""
    }


def test_append_and_subtract_need_a_list_config():
    error = apply_incremental({}, [("retention.ms", APPEND, "5")])
    assert error == AdminError(40, "Can't APPEND to key retention.ms because its type is not LIST.")
    error = apply_incremental({}, [("no.such.key", SUBTRACT, "5")])
    assert error == AdminError(40, "Can't SUBTRACT to key no.such.key because its type is not LIST.")


def test_result_is_validated():
    error = apply_incremental({}, [("cleanup.policy", APPEND, "compacted")])
    assert error == AdminError(
        40, "Invalid value compacted for configuration cleanup.policy: String must be one of: compact, delete"
    )
    error = apply_incremental({}, [("unknown.key", SET, "1")])
    assert error == AdminError(40, "Unknown topic config name: unknown.key")
    error = apply_incremental({"max.compaction.lag.ms": "5"}, [("min.compaction.lag.ms", SET, "6")])
    assert error.message.startswith("conflict topic config setting")


def test_request_level_errors():
    error = apply_incremental({}, [("retention.ms", SET, "1"), ("retention.ms", DELETE, None)])
    assert error == AdminError(42, "Error due to duplicate config keys")
    error = apply_incremental({}, [("retention.ms", SET, None), ("segment.ms", APPEND, None)])
    assert error == AdminError(42, "Null value not supported for : retention.ms, segment.ms")
    assert apply_incremental({}, [("retention.ms", 9, "1")]).code == Errors.INVALID_REQUEST


@pytest.mark.parametrize("op", [SET, APPEND])
def test_plain_ints_work_as_operations(op):
    assert isinstance(apply_incremental({}, [("cleanup.policy", int(op), "compact")]), dict)
