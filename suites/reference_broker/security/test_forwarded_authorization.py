"""Authorization of what a broker forwards to a controller of its own process (``process.roles=broker``
beside ``process.roles=controller``), as Kafka's KRaft controller does it:

- the broker puts the client's principal in the Envelope (``DefaultKafkaPrincipalBuilder`` serde) and
  the controller authorizes CreateTopics, DeleteTopics and CreatePartitions as that principal
  (``ControllerApis.createTopics`` and the others), not as the broker;
- the controller answers an Envelope only from a principal with CLUSTER_ACTION on the cluster
  (``ControllerApis.handleEnvelopeRequest``); the broker gives its client UNKNOWN_SERVER_ERROR for an
  Envelope error (``ForwardingManager``);
- an Envelope whose principal or client address cannot be read is refused with Kafka's codes
  (``EnvelopeUtils``)."""

from __future__ import annotations

import asyncio

import pytest

from kconform.codecs.errors import Errors
from kconform.codecs.framing import encode_request
from kconform.codecs.messages import (
    CreateAclsRequest,
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteTopicsRequest,
    EnvelopeRequest,
)
from kconform.reference_broker.config import BrokerConfig
from kconform.reference_broker.controller.node import ControllerNode
from kconform.reference_broker.node import BrokerNode
from kconform.reference_broker.security.principal_serde import (
    PrincipalDeserializationError,
    deserialize,
    serialize,
)
from kconform.reference_broker.security.principals import KafkaPrincipal

from ...support.authorized_node import STANDARD, plain_jaas
from ...support.rawclient import RawClient
from ...support.sasl_raw import sasl_client

pytestmark = [pytest.mark.slow]

CLUSTER, TOPIC, LITERAL, ALLOW = 4, 2, 3, 3
CREATE = 5  # AclOperation


async def _split_cluster(tmp_path, super_users: str):
    shared = {"authorizer.class.name": STANDARD, "super.users": super_users}
    controller = ControllerNode(
        BrokerConfig(
            {"node.id": "0", "process.roles": "controller", "log.dirs": str(tmp_path / "c"), **shared}
        )
    )
    host, port = await controller.start("127.0.0.1", 0)
    broker = BrokerNode.from_config_file(
        None,
        {
            "node.id": "1",
            "process.roles": "broker",
            "log.dirs": str(tmp_path / "b"),
            "controller.quorum.bootstrap.servers": f"{host}:{port}",
            "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
            "inter.broker.listener.name": "PLAINTEXT",
            "sasl.enabled.mechanisms": "PLAIN",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": plain_jaas(["alice"]),
            **shared,
        },
    )
    await broker.start()
    sasl = {li.name: (li.host, li.port) for li in broker.listeners.bound}["SASL_PLAINTEXT"]
    return controller, broker, sasl, (host, port)


def _create(name: str):
    topic = CreateTopicsRequest.CreatableTopic(name=name, num_partitions=1, replication_factor=1)
    return CreateTopicsRequest(topics=[topic], timeout_ms=10_000)


def _acl(resource_type: int, name: str, operation: int):
    creation = CreateAclsRequest.AclCreation(
        resource_type=resource_type, resource_name=name, resource_pattern_type=LITERAL,
        principal="User:alice", host="*", operation=operation, permission_type=ALLOW,
    )  # fmt: skip
    return CreateAclsRequest(creations=[creation])


async def _as(address, user: str, api_key: int, version: int, body):
    client = await sasl_client(*address, user, f"{user}-secret")
    async with client:
        return await client.call(api_key, version, body, timeout=20)


async def _until(predicate, timeout: float = 10.0):
    deadline = asyncio.get_running_loop().time() + timeout
    while not await predicate():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.05)


def test_the_controller_authorizes_forwarded_topic_requests_as_the_client(tmp_path):
    async def scenario():
        controller, broker, sasl, _ = await _split_cluster(tmp_path, "User:admin;User:ANONYMOUS")
        try:
            refused = await _as(sasl, "alice", 19, 7, _create("orders"))
            assert refused.topics[0].error_code == Errors.TOPIC_AUTHORIZATION_FAILED
            assert "orders" not in controller.controller.image
            made = await _as(sasl, "admin", 30, 3, _acl(TOPIC, "orders", CREATE))
            assert made.results[0].error_code == Errors.NONE

            async def alice_creates():
                answer = await _as(sasl, "alice", 19, 7, _create("orders"))
                return answer.topics[0].error_code == Errors.NONE

            await _until(alice_creates)  # the ACL reaches the controller's image at once, the broker's later
            grow = CreatePartitionsRequest.CreatePartitionsTopic(name="orders", count=2, assignments=None)
            more = CreatePartitionsRequest(topics=[grow], timeout_ms=10_000, validate_only=False)
            assert (await _as(sasl, "alice", 37, 3, more)).results[
                0
            ].error_code == Errors.TOPIC_AUTHORIZATION_FAILED
            drop = DeleteTopicsRequest(topic_names=["orders"], timeout_ms=10_000)
            assert (await _as(sasl, "alice", 20, 5, drop)).responses[
                0
            ].error_code == Errors.TOPIC_AUTHORIZATION_FAILED
            assert (await _as(sasl, "admin", 20, 5, drop)).responses[0].error_code == Errors.NONE
        finally:
            await broker.stop()
            await controller.stop()

    asyncio.run(scenario())


def test_an_envelope_from_a_principal_without_cluster_action_is_refused(tmp_path):
    async def scenario():
        # the broker's principal on the controller listener is ANONYMOUS, not a super user here
        controller, broker, sasl, address = await _split_cluster(tmp_path, "User:admin")
        try:
            answer = await _as(sasl, "admin", 19, 7, _create("ledger"))
            assert answer.topics[0].error_code == Errors.UNKNOWN_SERVER_ERROR  # ForwardingManager
            assert "ledger" not in controller.controller.image
            inner = encode_request(19, 7, 5, "tool", _create("ledger"))
            envelope = EnvelopeRequest(
                request_data=inner, request_principal=serialize(KafkaPrincipal("User", "admin")),
                client_host_address=bytes([127, 0, 0, 1]),
            )  # fmt: skip
            async with await RawClient.connect(*address) as client:
                refused = await client.call(58, 0, envelope)
            assert refused.error_code == Errors.CLUSTER_AUTHORIZATION_FAILED
        finally:
            await broker.stop()
            await controller.stop()

    asyncio.run(scenario())


@pytest.mark.parametrize(
    ("principal", "address", "inner_key", "code"),
    [
        (b"\x00\x07junk", bytes(4), 19, Errors.PRINCIPAL_DESERIALIZATION_FAILURE),
        (b"", bytes(4), 19, Errors.PRINCIPAL_DESERIALIZATION_FAILURE),
        (None, b"\x01\x02\x03", 19, Errors.INVALID_REQUEST),
        (None, bytes(4), 3, Errors.INVALID_REQUEST),  # Metadata is not forwardable
    ],
)
def test_an_envelope_the_controller_cannot_read_gets_kafkas_code(
    tmp_path, principal, address, inner_key, code
):
    async def scenario():
        controller, broker, _, at = await _split_cluster(tmp_path, "User:ANONYMOUS")
        try:
            if inner_key == 19:
                inner = encode_request(19, 7, 5, "tool", _create("ledger"))
            else:
                from kconform.codecs.messages import MetadataRequest

                inner = encode_request(3, 12, 5, "tool", MetadataRequest(topics=None))
            envelope = EnvelopeRequest(
                request_data=inner,
                request_principal=serialize(KafkaPrincipal("User", "x")) if principal is None else principal,
                client_host_address=address,
            )
            async with await RawClient.connect(*at) as client:
                answer = await client.call(58, 0, envelope)
            assert answer.error_code == code
            assert answer.response_data is None
            assert "ledger" not in controller.controller.image
        finally:
            await broker.stop()
            await controller.stop()

    asyncio.run(scenario())


def test_principals_round_trip_through_kafkas_version_prefixed_form():
    alice = KafkaPrincipal("User", "alice")
    assert serialize(alice) == bytes.fromhex("0000055573657206616c6963650000")  # v0, flexible, no tags
    assert deserialize(serialize(alice)) == alice
    with pytest.raises(PrincipalDeserializationError, match="version 1"):
        deserialize(b"\x00\x01" + serialize(alice)[2:])
    with pytest.raises(PrincipalDeserializationError):
        deserialize(serialize(alice)[:-3])
