"""Chaos against a secured reference broker: with ``--target-config`` (the clients' Kafka properties)
and ``--broker-config`` (the broker's), kconform starts the broker with its clients on a listener of the
clients' ``security.protocol`` behind the proxy, and every client of the run (workload, readers,
topic set-up) logs in. Security that cannot be honoured is one line and exit 2 before anything starts."""

from __future__ import annotations

import asyncio
import json

import pytest
from click.testing import CliRunner

from kconform.codecs.messages import MetadataRequest
from kconform.harness.cli import cli
from kconform.harness.client.properties import read_properties
from kconform.harness.client.raw import RawClient, UnexpectedReply
from kconform.harness.client.security import PLAINTEXT
from kconform.harness.targets.reference import ReferenceTarget

pytestmark = [pytest.mark.slow]

PLAIN_CLIENT = """security.protocol=SASL_PLAINTEXT
sasl.mechanism=PLAIN
sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \\
  username="alice" password="alice-secret";
"""
BROKER = """sasl.enabled.mechanisms=PLAIN
listener.name.external.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule \\
  required user_alice="alice-secret";
"""


CLUSTER_BROKER = """sasl.enabled.mechanisms=PLAIN
sasl.mechanism.inter.broker.protocol=PLAIN
listener.name.external.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule \\
  required username="alice" password="alice-secret" user_alice="alice-secret";
"""


@pytest.fixture
def files(tmp_path):
    paths = {}
    for name, text in (("client", PLAIN_CLIENT), ("broker", BROKER), ("cluster", CLUSTER_BROKER)):
        paths[name] = tmp_path / f"{name}.properties"
        paths[name].write_text(text)
    paths["listeners"] = tmp_path / "listeners.properties"
    paths["listeners"].write_text(BROKER + "listeners=PLAINTEXT://:9092\n")
    return paths


def test_a_chaos_scenario_runs_against_a_sasl_reference_broker(files, tmp_path):
    out = tmp_path / "run"
    args = ["chaos", "--scenario", "idempotent-partition-heal", "--duration", "5s", "--out", str(out),
            "--target-config", str(files["client"]), "--broker-config", str(files["broker"])]  # fmt: skip
    outcome = CliRunner().invoke(cli, args)
    assert outcome.exit_code == 0, outcome.output
    [result] = json.loads((out / "chaos.json").read_text())["results"]
    assert result["verdict"] == "pass" and result["operations"]["ok"] > 100, result["operations"]


def test_a_replication_scenario_runs_on_a_sasl_reference_cluster(files, tmp_path):
    """On reference:3 the brokers replicate over the same SASL listener, logging in themselves: the
    follower cut from its leader leaves the ISR and nothing acknowledged is lost."""
    out = tmp_path / "run"
    args = ["chaos", "--target", "reference:3", "--scenario", "follower-cut-from-leader", "--duration", "8s",
            "--out", str(out), "--target-config", str(files["client"]),
            "--broker-config", str(files["cluster"])]  # fmt: skip
    outcome = CliRunner().invoke(cli, args)
    assert outcome.exit_code == 0, outcome.output
    [result] = json.loads((out / "chaos.json").read_text())["results"]
    assert result["verdict"] == "pass" and result["operations"]["ok"] > 100, result["operations"]


def test_the_secured_reference_listener_refuses_clients_without_the_login(files):
    target = ReferenceTarget(
        "secured", client_protocol="SASL_PLAINTEXT", broker_properties=read_properties(files["broker"])
    )
    target.secure(read_properties(files["client"]))
    with target:
        target.create_topic("ledger", 1, 1)  # logged in
        assert target.node.listeners["EXTERNAL"][1] == target.port
        with pytest.raises(UnexpectedReply, match="the connection was closed"):
            asyncio.run(_metadata_without_login(target.port))


async def _metadata_without_login(port: int) -> None:
    """SaslServerAuthenticator: a request other than ApiVersions or SaslHandshake first closes it."""
    client = await RawClient.connect("127.0.0.1", port, security=PLAINTEXT)  # not the target's login
    async with client:
        await client.call(3, 12, MetadataRequest(topics=None), timeout=10)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--target", "rdkafka-mock", "--target-config", "{client}"], "secure reference brokers"),
        (["--target-config", "{client}"], "need a broker config"),
        (["--target-config", "{client}", "--broker-config", "{listeners}"], "kconform sets listeners itself"),
        (["--target-config", "{client}", "--broker-config", "{missing}"], "cannot read it"),
    ],
)
def test_security_that_cannot_be_honoured_is_one_line_and_exit_2(files, tmp_path, extra, message):
    names = {**{k: str(v) for k, v in files.items()}, "missing": str(tmp_path / "absent.properties")}
    args = ["chaos", "--scenario", "idempotent-partition-heal", *[a.format(**names) for a in extra]]
    outcome = CliRunner().invoke(cli, args)
    assert outcome.exit_code == 2 and message in outcome.output, outcome.output
