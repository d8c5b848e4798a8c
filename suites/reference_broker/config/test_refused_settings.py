"""Settings the reference broker does not implement stop it at start, named, while Kafka's stock
server.properties, defaults, tuning properties and names Kafka does not know start as before."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kconform.reference_broker.config import (
    BROKER_CONFIGS,
    IGNORED,
    IMPLEMENTED,
    NOT_IMPLEMENTED,
    BrokerConfig,
    ConfigError,
    ConfigType,
    UnsupportedConfigError,
    carried_config,
    check_supported,
    refused_settings,
)

MINIMAL = {"node.id": "1", "process.roles": "broker,controller", "log.dirs": "/tmp/unused"}
PRINCIPAL_BUILDER = "com.example.CertificatePrincipalBuilder"

# Apache Kafka 4.0's config/server.properties, its properties only: the KRaft combined node that was
# config/kraft/server.properties until 4.0 (apache/kafka of 2024-10-25 still has it there, with
# controller.quorum.voters=1@localhost:9093 where 4.0 has the bootstrap servers).
KAFKA_4_SERVER_PROPERTIES = """\
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=localhost:9093
listeners=PLAINTEXT://:9092,CONTROLLER://:9093
inter.broker.listener.name=PLAINTEXT
advertised.listeners=PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,\\
SASL_SSL:SASL_SSL
num.network.threads=3
num.io.threads=8
socket.send.buffer.bytes=102400
socket.receive.buffer.bytes=102400
socket.request.max.bytes=104857600
log.dirs=/tmp/kraft-combined-logs
num.partitions=1
num.recovery.threads.per.data.dir=1
offsets.topic.replication.factor=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
log.retention.hours=168
log.segment.bytes=1073741824
log.retention.check.interval.ms=300000
"""


def config(**settings: str) -> BrokerConfig:
    return BrokerConfig({**MINIMAL, **settings})


def refused_keys(settings: dict[str, str]) -> list[str]:
    return [refusal.key for refusal in refused_settings(config(**settings))]


def test_every_broker_config_is_in_exactly_one_class():
    classes = {
        "implemented": set(IMPLEMENTED),
        "ignored": set(IGNORED),
        "not implemented": set(NOT_IMPLEMENTED),
    }
    for name in BROKER_CONFIGS:
        holding = [label for label, names in classes.items() if name in names]
        assert len(holding) == 1, f"{name} is in {holding or 'no class'}: classify it in config/_support.py"
    assert set().union(*classes.values()) <= set(BROKER_CONFIGS), "a class names a config the table lacks"
    assert all(IGNORED.values()) and all(NOT_IMPLEMENTED.values()), "every row says why"


def test_the_security_properties_being_implemented_are_implemented():
    for name in (
        "listeners",
        "ssl.keystore.location",
        "sasl.enabled.mechanisms",
        "connections.max.reauth.ms",
    ):
        assert name in IMPLEMENTED


def test_unimplemented_settings_are_refused_each_by_name_in_one_error():
    settings = {
        "principal.builder.class": PRINCIPAL_BUILDER,
        "offsets.retention.minutes": "10",
        "num.io.threads": "4",  # ignored: no refusal
        "remote.log.storage.system.enable": "true",
    }
    with pytest.raises(UnsupportedConfigError) as caught:
        check_supported(config(**settings))
    error = caught.value
    assert isinstance(error, ConfigError)
    assert [r.key for r in error.refusals] == [
        "principal.builder.class",
        "offsets.retention.minutes",
        "remote.log.storage.system.enable",
    ]
    message = str(error)
    assert "\n" not in message
    assert "offsets.retention.minutes=10: not implemented by the reference broker (" in message
    assert f"principal.builder.class={PRINCIPAL_BUILDER}: not implemented by the reference broker" in message
    assert "(principal builder plug-ins)" in message and "(tiered storage)" in message


def test_a_listener_protocol_outside_the_four_is_refused():
    refusals = refused_settings(
        config(**{"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,EXT:KERBEROS"})
    )
    assert [r.key for r in refusals] == ["listener.security.protocol.map"]
    assert "listener EXT speaks KERBEROS" in str(refusals[0])


def test_more_than_one_log_directory_is_refused():
    assert refused_keys({"log.dirs": "/data/a,/data/b"}) == ["log.dirs"]
    assert refused_keys({"log.dirs": "/data/a"}) == []


@pytest.mark.parametrize("name", sorted(NOT_IMPLEMENTED))
def test_an_unimplemented_config_at_its_default_is_accepted(name):
    default = BROKER_CONFIGS[name].default_string
    if default is None:  # no default to write down: unset is the only default
        assert refused_keys({}) == []
        return
    assert refused_keys({name: default}) == []


_WHOLE_NUMBER_LIMITS = {ConfigType.INT: 2**31 - 1, ConfigType.LONG: 2**63 - 1}
UNIMPLEMENTED_NUMBERS = sorted(
    name for name in NOT_IMPLEMENTED if BROKER_CONFIGS[name].type in _WHOLE_NUMBER_LIMITS
)


def _moved_from_default(name: str, delta: int) -> str:
    """A value ``delta`` away from Kafka's default, toward the inside of the type's range (the
    validators here are lower bounds the default already meets, so moving up stays valid)."""
    definition = BROKER_CONFIGS[name]
    default = definition.default if definition.default is not None else 0
    up = default + delta
    return str(up if up <= _WHOLE_NUMBER_LIMITS[definition.type] else default - delta)


@given(
    chosen=st.lists(st.sampled_from(UNIMPLEMENTED_NUMBERS), min_size=1, unique=True),
    delta=st.integers(1, 10**6),
)
def test_any_unimplemented_number_off_its_default_is_refused_and_named_once(chosen, delta):
    settings = {name: _moved_from_default(name, delta) for name in chosen}
    with pytest.raises(UnsupportedConfigError) as caught:
        check_supported(config(**settings))
    assert [refusal.key for refusal in caught.value.refusals] == chosen
    assert all(str(caught.value).count(f"{name}=") == 1 for name in chosen)


def test_default_valued_settings_written_as_kafka_would_are_accepted():
    builder = "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder"
    assert refused_keys({"principal.builder.class": builder, "offsets.retention.minutes": "10080"}) == []
    assert refused_keys({"remote.log.storage.system.enable": "FALSE"}) == []  # parsed, not compared as text


def test_ignored_tuning_properties_are_accepted_at_any_valid_value():
    settings = {"num.io.threads": "32", "socket.send.buffer.bytes": "-1", "metric.reporters": "com.example.R"}
    assert refused_keys(settings) == []


@pytest.mark.parametrize(
    "key, carried",
    [
        ("listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config", "sasl.jaas.config"),
        ("listener.name.ssl.ssl.client.auth", "ssl.client.auth"),
        ("listener.name.plaintext.max.connection.creation.rate", "max.connection.creation.rate"),
        (
            "listener.name.sasl_ssl.oauthbearer.sasl.server.callback.handler.class",
            "sasl.server.callback.handler.class",
        ),
        ("listener.name.sasl_ssl.SCRAM-SHA-256.sasl.jaas.config", None),  # the mechanism is lower case
        ("listener.name.plaintext.num.io.threads", None),  # not a per-listener config: unknown to Kafka
        ("listener.name.plaintext", None),
        ("some.plugin.setting", None),
    ],
)
def test_a_listener_prefixed_name_carries_its_config(key, carried):
    assert carried_config(key) == carried


def test_prefixed_properties_are_classified_by_the_config_they_carry():
    jaas = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="a" password="b";'
    settings = {
        "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config": jaas,  # implemented
        "listener.name.sasl_ssl.oauthbearer.sasl.server.callback.handler.class": "com.example.Handler",
        "listener.name.plaintext.principal.builder.class": PRINCIPAL_BUILDER,
        "listener.name.plaintext.num.io.threads": "4",  # unknown, as in Kafka: logged, not refused
    }
    built = config(**settings)
    assert [r.key for r in refused_settings(built)] == [
        "listener.name.sasl_ssl.oauthbearer.sasl.server.callback.handler.class",
        "listener.name.plaintext.principal.builder.class",
    ]
    assert "listener.name.plaintext.num.io.threads" in built.unknown
    default_builder = "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder"
    assert refused_keys({"listener.name.plaintext.principal.builder.class": default_builder}) == []


def test_names_kafka_does_not_know_are_still_only_logged():
    built = config(**{"my.plugin.knob": "7"})
    assert refused_settings(built) == []
    assert (
        built.unknown_keys_message
        == "These configurations '[my.plugin.knob]' were supplied but are not used yet."
    )


@pytest.mark.parametrize("quorum", ["bootstrap.servers=localhost:9093", "voters=1@localhost:9093"])
def test_kafka_4_stock_server_properties_are_accepted(tmp_path, quorum):
    path = tmp_path / "server.properties"
    path.write_text(
        KAFKA_4_SERVER_PROPERTIES.replace(
            "controller.quorum.bootstrap.servers=localhost:9093", f"controller.quorum.{quorum}"
        )
    )
    built = BrokerConfig.from_sources(path, {"log.dirs": str(tmp_path / "data"), "node.id": "3"})
    assert refused_settings(built) == []
    check_supported(built)
    assert set(built.unknown) == {
        "share.coordinator.state.topic.replication.factor",
        "share.coordinator.state.topic.min.isr",
    }


def test_a_node_builds_from_kafka_4_stock_server_properties(tmp_path):
    from kconform.reference_broker.node import BrokerNode

    path = tmp_path / "server.properties"
    path.write_text(KAFKA_4_SERVER_PROPERTIES)
    node = BrokerNode.from_config_file(path, {"log.dirs": str(tmp_path / "data"), "node.id": "3"})
    try:
        assert [listener.name for listener in node.listeners.bound] == ["PLAINTEXT", "CONTROLLER"]
        assert node.node_id == 3
    finally:
        asyncio.run(node.stop())


def test_a_node_refuses_to_be_built_with_an_unimplemented_setting(tmp_path):
    from kconform.reference_broker.node import BrokerNode

    data = tmp_path / "data"
    settings = {**MINIMAL, "log.dirs": str(data), "offsets.retention.minutes": "10"}
    with pytest.raises(UnsupportedConfigError, match="offsets.retention.minutes=10"):
        BrokerNode(BrokerConfig(settings))
    assert not data.exists(), "refused before any side effect"


def test_the_command_line_prints_one_line_and_exits_2(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "kconform.reference_broker",
            "--data-dir",
            str(tmp_path / "data"),
            "offsets.retention.minutes=10",
            f"principal.builder.class={PRINCIPAL_BUILDER}",
            "listener.name.plaintext.sasl.server.callback.handler.class=com.example.H",  # refused, not logged
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2, result.stderr
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("Error: offsets.retention.minutes=10: not implemented by the reference broker")
    assert f"principal.builder.class={PRINCIPAL_BUILDER}" in lines[0]
    assert (
        "listener.name.plaintext.sasl.server.callback.handler.class=com.example.H: not implemented"
        in lines[0]
    )
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


def test_the_controller_only_start_refuses_too(tmp_path):
    command = [sys.executable, "-m", "kconform.reference_broker", "--data-dir", str(tmp_path / "c")]
    command += ["process.roles=controller", "delete.topic.enable=false"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [
        "Error: delete.topic.enable=false: not implemented by the reference broker (refusing topic deletion)"
    ]
