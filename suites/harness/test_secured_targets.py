"""Targets kconform starts, secured to match the clients' ``security.protocol`` by a broker config
(``--broker-config``): the listener clients use is EXTERNAL on every kind. A docker target is checked up
to the Docker SDK (a fake engine records what it is asked: the image's environment variables and the
read-only mounts of the key stores); a reference:N cluster live, each broker's clients logging in with
SASL. What cannot be secured says so before anything starts."""

from __future__ import annotations

import asyncio
import json

import pytest

from kconform.codecs.messages import MetadataRequest
from kconform.harness.client.raw import RawClient, UnexpectedReply
from kconform.harness.client.security import PLAINTEXT
from kconform.harness.targets.base import TargetError
from kconform.harness.targets.client_listener import container_security, kafka_image_env
from kconform.harness.targets.registry import make_target

from ..support.fake_docker import FakeDocker, make

JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";'
CLIENT = {
    "security.protocol": "SASL_PLAINTEXT",
    "sasl.mechanism": "PLAIN",
    "sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" '
    'password="alice-secret";',
}
BROKER = {"sasl.enabled.mechanisms": "PLAIN", "listener.name.external.plain.sasl.jaas.config": JAAS}


def test_kafka_image_environment_names_follow_the_images_rules():
    env = kafka_image_env({"listener.name.external.plain.sasl.jaas.config": "x", "log.flush_ms": "1",
                           "a-b.c": "2"})  # fmt: skip
    assert env == {
        "KAFKA_LISTENER_NAME_EXTERNAL_PLAIN_SASL_JAAS_CONFIG": "x",
        "KAFKA_LOG_FLUSH__MS": "1",
        "KAFKA_A___B_C": "2",
    }


def test_key_stores_are_mounted_read_only_and_renamed_inside(tmp_path):
    (tmp_path / "keys").mkdir()
    (tmp_path / "keys" / "broker.pem").write_text("key")
    (tmp_path / "keys" / "ca.pem").write_text("ca")
    inside, mounts = container_security({
        "ssl.keystore.location": str(tmp_path / "keys" / "broker.pem"),
        "ssl.truststore.location": str(tmp_path / "keys" / "ca.pem"),
        "ssl.keystore.type": "PEM",
    })  # fmt: skip
    assert mounts == {str((tmp_path / "keys").resolve()): "/etc/kconform/security/0"}
    assert inside["ssl.keystore.location"] == "/etc/kconform/security/0/broker.pem"
    assert inside["ssl.truststore.location"] == "/etc/kconform/security/0/ca.pem"
    with pytest.raises(TargetError, match="no such file"):
        container_security({"ssl.keystore.location": str(tmp_path / "absent.pem")})


def test_a_secured_docker_target_asks_the_engine_for_a_sasl_external_listener(tmp_path):
    (tmp_path / "ca.pem").write_text("ca")
    client = FakeDocker()
    target = make(client)
    target.secure_brokers("SASL_SSL", {**BROKER, "ssl.truststore.location": str(tmp_path / "ca.pem")})
    target.start()
    [container] = client.live()
    env = container.kwargs["environment"]
    assert env["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"].endswith(",EXTERNAL:SASL_SSL")
    assert env["KAFKA_LISTENER_NAME_EXTERNAL_PLAIN_SASL_JAAS_CONFIG"] == JAAS
    assert env["KAFKA_SSL_TRUSTSTORE_LOCATION"] == "/etc/kconform/security/0/ca.pem"
    assert container.kwargs["volumes"] == {
        str(tmp_path.resolve()): {"bind": "/etc/kconform/security/0", "mode": "ro"}
    }
    target.stop()


def test_a_secured_docker_cluster_puts_every_brokers_external_listener_on_the_clients_protocol(tmp_path):
    from kconform.harness.targets.docker_cluster import DockerClusterTarget

    from ..support.fake_docker import FakeClock, FakeToxiproxy, ports

    (tmp_path / "ca.pem").write_text("ca")
    client, clock, server = FakeDocker(), FakeClock(), FakeToxiproxy()
    target = DockerClusterTarget("docker:4.1.0:3", version="4.1.0", brokers=3, client=client,
                                 toxiproxy=lambda url: server, ports=ports, readiness=lambda addrs: None,
                                 clock=clock, sleep=clock.sleep)  # fmt: skip
    target.secure_brokers("SASL_SSL", {**BROKER, "ssl.truststore.location": str(tmp_path / "ca.pem")})
    target.start()
    brokers = [c for c in client.live() if "-kafka-" in c.kwargs["name"]]
    assert len(brokers) == 3
    for container in brokers:
        env = container.kwargs["environment"]
        assert env["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"].endswith(",INTERNAL:PLAINTEXT,EXTERNAL:SASL_SSL")
        assert env["KAFKA_LISTENER_NAME_EXTERNAL_PLAIN_SASL_JAAS_CONFIG"] == JAAS
        mount = container.kwargs["volumes"][str(tmp_path.resolve())]
        assert mount == {"bind": "/etc/kconform/security/0", "mode": "ro"}
    target.stop()


@pytest.mark.parametrize(
    ("spec", "client", "broker", "message"),
    [
        ("rdkafka-mock", CLIENT, BROKER, "cannot be secured by kconform"),
        ("reference", CLIENT, {}, "need a broker config"),
        ("reference", CLIENT, {**BROKER, "listeners": "X://:1"}, "kconform sets listeners itself"),
        ("bootstrap:127.0.0.1:9", CLIENT, BROKER, "not a running cluster"),
    ],
)
def test_what_cannot_be_secured_says_so_before_anything_starts(spec, client, broker, message):
    with pytest.raises(TargetError, match=message):
        make_target(spec, client, broker)


@pytest.mark.slow
def test_a_reference_cluster_serves_its_clients_over_sasl():
    target = make_target("reference:2", CLIENT, BROKER)
    with target:
        target.create_topic("ledger", 2, 2)  # through the login
        addresses = target._addresses()
        assert len(addresses) == 2
        for host, port in addresses:
            with pytest.raises(UnexpectedReply, match="the connection was closed"):
                asyncio.run(_metadata_without_login(host, port))


async def _metadata_without_login(host: str, port: int) -> None:
    client = await RawClient.connect(host, port, security=PLAINTEXT)
    async with client:
        await client.call(3, 12, MetadataRequest(topics=None), timeout=10)


@pytest.mark.slow
def test_diff_runs_between_two_sasl_reference_brokers(tmp_path):
    from click.testing import CliRunner

    from kconform.harness.cli import cli

    client, broker = tmp_path / "client.properties", tmp_path / "broker.properties"
    client.write_text("".join(f"{k}={v}\n" for k, v in CLIENT.items()))
    broker.write_text("".join(f"{k}={v}\n" for k, v in BROKER.items()))
    out = tmp_path / "run"
    args = ["diff", "--a", "reference", "--b", "reference", "--examples", "5", "--out", str(out),
            "--target-config", str(client), "--broker-config", str(broker)]  # fmt: skip
    outcome = CliRunner().invoke(cli, args)
    assert outcome.exit_code == 0, outcome.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["pairs_compared"] > 0, summary
