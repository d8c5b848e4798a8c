"""Brokers replicating to each other over a secured inter-broker listener, as Kafka's inter-broker
client channel does it: TLS from the listener's own ``ssl.*`` settings (mutual TLS when the listener
asks for client certificates), SASL with ``sasl.mechanism.inter.broker.protocol`` and the ``username``/
``password`` of that mechanism's JAAS entry on the listener. An acks=all produce completes only once the
follower has fetched over that listener. A broker whose own login is wrong is refused by name; a
secured inter-broker listener without a usable login is refused at start."""

from __future__ import annotations

import asyncio

import pytest

from kconform.codecs.errors import Errors
from kconform.codecs.messages import ApiVersionsRequest, CreateTopicsRequest, MetadataRequest
from kconform.reference_broker.config import BrokerConfig, ConfigError
from kconform.reference_broker.controller.node import ControllerNode
from kconform.reference_broker.interbroker import InterBrokerConnection, PeerUnavailable
from kconform.reference_broker.node import BrokerNode
from kconform.reference_broker.node_listeners import checked_listener_setup, inter_broker_security
from kconform.reference_broker.security.peer_security import PeerSecurity

from ...support.certificates import TestAuthority
from ...support.error_rules_broker import batch, produce_request
from ...support.rawclient import RawClient

pytestmark = [pytest.mark.slow]

PLAIN_JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="broker" password="{password}" user_broker="broker-secret";'
)


def _internal(protocol: str, pki: TestAuthority, password: str = "broker-secret") -> dict[str, str]:
    server = pki.issue("broker", server=True, CN="broker")
    props = {
        "listeners": "PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:0",
        "listener.security.protocol.map": f"PLAINTEXT:PLAINTEXT,INTERNAL:{protocol}",
        "inter.broker.listener.name": "INTERNAL",
    }
    if "SSL" in protocol:
        props |= {
            "listener.name.internal.ssl.keystore.type": "PEM",
            "listener.name.internal.ssl.keystore.location": str(server.combined),
            "listener.name.internal.ssl.truststore.type": "PEM",
            "listener.name.internal.ssl.truststore.location": str(pki.ca),
        }
    if protocol == "SSL":
        props["listener.name.internal.ssl.client.auth"] = "required"
    if protocol.startswith("SASL"):
        props |= {
            "listener.name.internal.sasl.enabled.mechanisms": "PLAIN",
            "sasl.mechanism.inter.broker.protocol": "PLAIN",
            "listener.name.internal.plain.sasl.jaas.config": PLAIN_JAAS.format(password=password),
        }
    return props


async def _cluster(tmp_path, internal: dict[str, str]):
    controller = ControllerNode(
        BrokerConfig({"node.id": "0", "process.roles": "controller", "log.dirs": str(tmp_path / "c")})
    )
    host, port = await controller.start("127.0.0.1", 0)
    brokers = []
    for node_id in (1, 2):
        props = {
            "node.id": str(node_id),
            "process.roles": "broker",
            "log.dirs": str(tmp_path / f"b{node_id}"),
            "controller.quorum.bootstrap.servers": f"{host}:{port}",
            **internal,
        }
        broker = BrokerNode.from_config_file(None, props)
        brokers.append(broker)
    await asyncio.gather(*(b.start() for b in brokers))
    return controller, brokers


def _plaintext(broker) -> tuple[str, int]:
    return {li.name: (li.host, li.port) for li in broker.listeners.bound}["PLAINTEXT"]


@pytest.mark.parametrize("protocol", ["SASL_SSL", "SSL", "SASL_PLAINTEXT"])
def test_acks_all_completes_through_a_follower_on_a_secured_inter_broker_listener(tmp_path, protocol):
    pki = TestAuthority(tmp_path / "pki")

    async def scenario():
        controller, brokers = await _cluster(tmp_path, _internal(protocol, pki))
        try:
            async with await RawClient.connect(*_plaintext(brokers[0])) as client:
                topic = CreateTopicsRequest.CreatableTopic(
                    name="ledger", num_partitions=1, replication_factor=2
                )
                made = await client.call(19, 7, CreateTopicsRequest(topics=[topic], timeout_ms=10_000))
                assert made.topics[0].error_code == Errors.NONE
                leader = None
                for _ in range(200):
                    meta = await client.call(
                        3, 12, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="ledger")])
                    )
                    partition = meta.topics[0].partitions[0] if meta.topics[0].partitions else None
                    if partition is not None and partition.leader_id in (1, 2):
                        leader = partition.leader_id
                        break
                    await asyncio.sleep(0.05)
                assert leader is not None
            async with await RawClient.connect(*_plaintext(brokers[leader - 1])) as client:
                answer = await client.call(0, 9, produce_request("ledger", 0, batch(3), acks=-1), timeout=20)
                assert answer.responses[0].partition_responses[0].error_code == Errors.NONE
                meta = await client.call(
                    3, 12, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="ledger")])
                )
                assert sorted(meta.topics[0].partitions[0].isr_nodes) == [1, 2]
            follower = brokers[2 - leader]
            assert follower.peer_security is not None
            assert follower.partitions[("ledger", 0)].log_end_offset == 3  # fetched over the listener
        finally:
            await asyncio.gather(*(b.stop() for b in brokers))
            await controller.stop()

    asyncio.run(scenario())


def test_a_wrong_inter_broker_password_is_refused_by_name(tmp_path):
    pki = TestAuthority(tmp_path / "pki")

    async def scenario():
        controller, brokers = await _cluster(tmp_path, _internal("SASL_PLAINTEXT", pki))
        try:
            internal = {li.name: (li.host, li.port) for li in brokers[0].listeners.bound}["INTERNAL"]
            wrong = PeerSecurity(None, "PLAIN", "broker", "not-the-secret")
            with pytest.raises(PeerUnavailable, match="SASL login failed: SASL_AUTHENTICATION_FAILED"):
                await InterBrokerConnection.connect(*internal, client_id="t", timeout_s=5, security=wrong)
            right = PeerSecurity(None, "PLAIN", "broker", "broker-secret")
            conn = await InterBrokerConnection.connect(*internal, client_id="t", timeout_s=5, security=right)
            await conn.wait_closed()
        finally:
            await asyncio.gather(*(b.stop() for b in brokers))
            await controller.stop()

    asyncio.run(scenario())


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"sasl.mechanism.inter.broker.protocol": "GSSAPI"}, "GSSAPI is Kafka's default"),
        (
            {"listener.name.internal.plain.sasl.jaas.config": "org.apache.kafka.common.security.plain."
             'PlainLoginModule required user_broker="broker-secret";'},
            "needs username and password",
        ),
    ],
)  # fmt: skip
def test_a_secured_inter_broker_listener_without_a_usable_login_is_refused_at_start(
    tmp_path, change, message
):
    props = {"node.id": "1", "process.roles": "broker", "log.dirs": str(tmp_path),
             **_internal("SASL_PLAINTEXT", TestAuthority(tmp_path / "pki")), **change}  # fmt: skip
    config = BrokerConfig(props)
    with pytest.raises(ConfigError, match=message):
        inter_broker_security(config, checked_listener_setup(config))


def _controller_listener(pki: TestAuthority, password: str = "broker-secret") -> dict[str, str]:
    """Both sides' settings for a SASL_SSL controller listener: the controller serves it, a broker logs
    in with ``sasl.mechanism.controller.protocol`` and the JAAS entry's username and password."""
    server = pki.issue("controller", server=True, CN="controller")
    return {
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "CONTROLLER:SASL_SSL,PLAINTEXT:PLAINTEXT",
        "listener.name.controller.ssl.keystore.type": "PEM",
        "listener.name.controller.ssl.keystore.location": str(server.combined),
        "listener.name.controller.ssl.truststore.type": "PEM",
        "listener.name.controller.ssl.truststore.location": str(pki.ca),
        "listener.name.controller.sasl.enabled.mechanisms": "PLAIN",
        "sasl.mechanism.controller.protocol": "PLAIN",
        "listener.name.controller.plain.sasl.jaas.config": PLAIN_JAAS.format(password=password),
    }


def test_a_broker_registers_and_forwards_over_a_sasl_ssl_controller_listener(tmp_path):
    pki = TestAuthority(tmp_path / "pki")
    secured = _controller_listener(pki)

    async def scenario():
        controller = ControllerNode(
            BrokerConfig(
                {"node.id": "0", "process.roles": "controller", "log.dirs": str(tmp_path / "c"), **secured}
            )
        )
        host, port = await controller.start("127.0.0.1", 0)
        broker = BrokerNode.from_config_file(None, {
            "node.id": "1", "process.roles": "broker", "log.dirs": str(tmp_path / "b"),
            "controller.quorum.bootstrap.servers": f"{host}:{port}", "listeners": "PLAINTEXT://127.0.0.1:0",
            **secured,
        })  # fmt: skip
        await broker.start()  # registered and unfenced through the secured listener
        try:
            async with await RawClient.connect(*_plaintext(broker)) as client:
                topic = CreateTopicsRequest.CreatableTopic(
                    name="ledger", num_partitions=1, replication_factor=1
                )
                made = await client.call(19, 7, CreateTopicsRequest(topics=[topic], timeout_ms=10_000))
                assert made.topics[0].error_code == Errors.NONE  # forwarded in an Envelope over SASL_SSL
            assert "ledger" in controller.controller.image
            async with await RawClient.connect(host, port) as plain:  # no TLS: the handshake fails
                with pytest.raises(Exception):  # noqa: B017 - any failure to speak; the point is no answer
                    await plain.call(18, 3, ApiVersionsRequest(), timeout=5)
            wrong = PeerSecurity(controller_listener_context(secured), "PLAIN", "broker", "not-the-secret")
            with pytest.raises(PeerUnavailable, match="SASL_AUTHENTICATION_FAILED"):
                await InterBrokerConnection.connect(host, port, client_id="t", timeout_s=5, security=wrong)
        finally:
            await broker.stop()
            await controller.stop()

    asyncio.run(scenario())


def controller_listener_context(settings: dict[str, str]):
    from kconform.reference_broker.security.tls import client_context

    config = BrokerConfig({"node.id": "1", "process.roles": "broker", "log.dirs": "/tmp/unused", **settings})
    return client_context(config, "CONTROLLER")
