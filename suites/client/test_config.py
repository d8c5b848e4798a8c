"""Client configuration: the Java client's names and Kafka 4.0's defaults, type and value checks,
cross-checks, and clear errors for unknown or invalid settings."""

from __future__ import annotations

import pytest

from kconform.harness.client.config import AdminConfig, ClientConfigError, ConsumerConfig, ProducerConfig


def test_defaults_are_kafka_4_0s():
    producer, consumer = ProducerConfig(), ConsumerConfig()
    assert (producer["acks"], producer.acks, producer["linger.ms"], producer["batch.size"]) == (
        "all",
        -1,
        5,
        16384,
    )
    assert producer["enable.idempotence"] is True and producer["retries"] == 2**31 - 1
    assert (
        producer["delivery.timeout.ms"] == 120_000 and producer["max.in.flight.requests.per.connection"] == 5
    )
    assert consumer["partition.assignment.strategy"] == ["range", "cooperative-sticky"]
    assert (consumer["session.timeout.ms"], consumer["heartbeat.interval.ms"]) == (45_000, 3000)
    assert (consumer["auto.offset.reset"], consumer["isolation.level"]) == ("latest", "read_uncommitted")
    assert AdminConfig()["default.api.timeout.ms"] == 60_000


def test_properties_file_strings_are_parsed():
    config = ConsumerConfig(
        {
            "enable.auto.commit": "false",
            "max.poll.records": " 42 ",
            "partition.assignment.strategy": "sticky, range",
        }
    )
    assert config["enable.auto.commit"] is False and config["max.poll.records"] == 42
    assert config["partition.assignment.strategy"] == ["sticky", "range"]


@pytest.mark.parametrize(
    ("values", "fragment"),
    [
        ({"linger.msec": 5}, "did you mean linger.ms"),
        ({"batch.size": "big"}, "batch.size: expected a whole number"),
        ({"batch.size": -1}, "must be at least 0"),
        ({"acks": "2"}, "invalid value '2' for acks"),
        ({"compression.type": "brotli"}, "must be one of none, gzip, snappy, lz4, zstd"),
        ({"enable.idempotence": "yes"}, "expected true or false"),
        ({"retries": 2**31}, "does not fit in a Java int"),
        ({"enable.idempotence": True, "acks": "1"}, "acks must be all"),
        ({"enable.idempotence": False, "transactional.id": "t"}, "transactional.id needs enable.idempotence"),
        ({"delivery.timeout.ms": 1000}, "delivery.timeout.ms must be at least"),
    ],
)
def test_producer_errors_name_the_setting(values, fragment):
    with pytest.raises(ClientConfigError, match=fragment.replace(".", r"\.").replace("(", r"\(")):
        ProducerConfig(values)


def test_idempotence_left_at_its_default_turns_off_quietly_as_in_java():
    config = ProducerConfig({"acks": "1"})
    assert config["enable.idempotence"] is False and config.acks == 1


@pytest.mark.parametrize(
    ("values", "fragment"),
    [
        ({"auto.offset.reset": "smallest"}, "must be one of latest, earliest, none"),
        ({"group.protocol": "consumer", "session.timeout.ms": 10_000}, "classic-protocol setting"),
        ({"heartbeat.interval.ms": 50_000}, "heartbeat.interval.ms must be lower"),
        ({"enable.auto.commit": True}, "needs a group.id"),
        ({"partition.assignment.strategy": "range,magic"}, "must be one of"),
    ],
)
def test_consumer_errors_name_the_setting(values, fragment):
    with pytest.raises(ClientConfigError, match=fragment.replace(".", r"\.")):
        ConsumerConfig(values)
