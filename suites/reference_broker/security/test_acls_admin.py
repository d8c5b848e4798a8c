"""CreateAcls (30), DescribeAcls (29) and DeleteAcls (31) over the wire against a started node, one rule
of Kafka's a test: ``AclApis`` (SECURITY_DISABLED, the CLUSTER name, empty names, request parsing),
``AclControlManager`` (validation, duplicates, deletion by filter), ``DescribeAclsResponse.aclsResources``
(grouping by resource), ACLs kept in the metadata log across a restart, the v0 layouts, and librdkafka's
admin client as an independent peer."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from kconform.codecs.errors import Errors
from kconform.codecs.messages import CreateAclsRequest, DeleteAclsRequest, DescribeAclsRequest
from kconform.codecs.releases import kafka_release
from kconform.reference_broker.node import BrokerNode

from ...support.rawclient import RawClient

STANDARD = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
# wire ids: ResourceType, PatternType, AclOperation, AclPermissionType
ANY, MATCH, LITERAL, PREFIXED = 1, 2, 3, 4
TOPIC, GROUP, CLUSTER = 2, 3, 4
READ, WRITE, DESCRIBE = 3, 4, 8
DENY, ALLOW = 2, 3


def creation(
    name="orders", rtype=TOPIC, pattern=LITERAL, principal="User:alice", host="*", op=READ, perm=ALLOW
):
    return CreateAclsRequest.AclCreation(
        resource_type=rtype, resource_name=name, resource_pattern_type=pattern, principal=principal,
        host=host, operation=op, permission_type=perm,
    )  # fmt: skip


def acl_filter(kind, name=None, rtype=ANY, pattern=ANY, principal=None, host=None, op=ANY, perm=ANY):
    return kind(
        resource_type_filter=rtype, resource_name_filter=name, pattern_type_filter=pattern,
        principal_filter=principal, host_filter=host, operation=op, permission_type=perm,
    )  # fmt: skip


def run_node(
    data_dir: Path, scenario, *, authorizer: str | None = STANDARD, kafka_version: str | None = None
):
    async def main():
        props = {"node.id": "1", "log.dirs": str(data_dir)}
        if authorizer is not None:
            # the client is ANONYMOUS: a super user, so that the ACL APIs' own CLUSTER checks let it through
            props.update({"authorizer.class.name": authorizer, "super.users": "User:ANONYMOUS"})
        release = kafka_release(kafka_version) if kafka_version else None
        node = BrokerNode.from_config_file(None, props, kafka_release=release)
        host, port = await node.start("127.0.0.1", 0)
        try:
            async with await RawClient.connect(host, port, client_id="acl-tests") as client:
                return await scenario(client, node)
        finally:
            await node.stop()

    return asyncio.run(asyncio.wait_for(main(), 60))


async def create(client, *creations, version=3):
    response = await client.call(30, version, CreateAclsRequest(creations=list(creations)))
    return [(r.error_code, r.error_message) for r in response.results]


async def describe(client, version=3, **filter_fields):
    response = await client.call(29, version, acl_filter(DescribeAclsRequest, **filter_fields))
    assert (response.error_code, response.error_message) == (Errors.NONE, "")
    return {
        (r.resource_type, r.resource_name, r.pattern_type): sorted(
            (a.principal, a.host, a.operation, a.permission_type) for a in r.acls
        )
        for r in response.resources
    }


async def delete(client, *filters, version=3):
    response = await client.call(31, version, DeleteAclsRequest(filters=list(filters)))
    return [
        (r.error_code, r.error_message, sorted((m.resource_type, m.resource_name, m.pattern_type, m.principal)
                                               for m in r.matching_acls))
        for r in response.filter_results
    ]  # fmt: skip


SEED = (
    creation("orders"),
    creation("orders", principal="User:bob", op=WRITE),
    creation("ord", pattern=PREFIXED),
    creation("*"),
    creation("payments", rtype=GROUP, perm=DENY),
)


def test_create_then_describe_by_every_filter_kind(tmp_path):
    async def scenario(client, node):
        assert await create(client, *SEED) == [(Errors.NONE, "")] * len(SEED)
        everything = await describe(client)
        # grouped by resource pattern (DescribeAclsResponse.aclsResources)
        assert everything[(TOPIC, "orders", LITERAL)] == [("User:alice", "*", READ, ALLOW),
                                                          ("User:bob", "*", WRITE, ALLOW)]  # fmt: skip
        assert set(everything) == {
            (TOPIC, "orders", LITERAL),
            (TOPIC, "ord", PREFIXED),
            (TOPIC, "*", LITERAL),
            (GROUP, "payments", LITERAL),
        }
        # MATCH: every pattern that applies to the literal resource "orders": itself, "*" and the prefix
        assert set(await describe(client, name="orders", pattern=MATCH, rtype=TOPIC)) == {
            (TOPIC, "orders", LITERAL), (TOPIC, "*", LITERAL), (TOPIC, "ord", PREFIXED)
        }  # fmt: skip
        assert set(await describe(client, name="other", pattern=MATCH, rtype=TOPIC)) == {
            (TOPIC, "*", LITERAL)
        }
        # exact: LITERAL and PREFIXED filters match their own pattern only
        assert set(await describe(client, name="ord", pattern=LITERAL)) == set()
        assert set(await describe(client, name="ord", pattern=PREFIXED)) == {(TOPIC, "ord", PREFIXED)}
        assert set(await describe(client, pattern=LITERAL, rtype=GROUP)) == {(GROUP, "payments", LITERAL)}
        assert await describe(client, principal="User:bob") == {(TOPIC, "orders", LITERAL): [
            ("User:bob", "*", WRITE, ALLOW)]}  # fmt: skip
        assert set(await describe(client, perm=DENY)) == {(GROUP, "payments", LITERAL)}
        assert set(await describe(client, op=WRITE, host="*")) == {(TOPIC, "orders", LITERAL)}
        assert len(node.image.acls()) == len(SEED)

    run_node(tmp_path, scenario)


def test_delete_by_filter_returns_what_it_deleted(tmp_path):
    async def scenario(client, node):
        await create(client, *SEED)
        results = await delete(
            client,
            acl_filter(DeleteAclsRequest.DeleteAclsFilter, name="orders", rtype=TOPIC, pattern=LITERAL),
            acl_filter(DeleteAclsRequest.DeleteAclsFilter, name="nothing", pattern=LITERAL),
        )
        assert results == [
            (
                Errors.NONE,
                None,
                [(TOPIC, "orders", LITERAL, "User:alice"), (TOPIC, "orders", LITERAL, "User:bob")],
            ),
            (Errors.NONE, None, []),
        ]
        assert (TOPIC, "orders", LITERAL) not in await describe(client)
        # two filters matching the same ACL: both report it, one removal is written
        both = await delete(
            client,
            acl_filter(DeleteAclsRequest.DeleteAclsFilter, rtype=GROUP),
            acl_filter(DeleteAclsRequest.DeleteAclsFilter, perm=DENY),
        )
        assert [r[2] for r in both] == [[(GROUP, "payments", LITERAL, "User:alice")]] * 2
        assert set(await describe(client)) == {(TOPIC, "ord", PREFIXED), (TOPIC, "*", LITERAL)}
        assert len(node.image.acls()) == 2

    run_node(tmp_path, scenario)


def test_validation_errors_have_kafkas_codes_and_messages(tmp_path):
    async def scenario(client, node):
        results = await create(
            client,
            creation("my-cluster", rtype=CLUSTER),  # AclApis: the CLUSTER resource's only name
            creation(""),  # AclApis: empty name
            creation("orders", rtype=99),  # an unknown code reads as UNKNOWN: validateNewAcl
            creation("orders", op=99),
            creation("orders", perm=99),
            creation("orders", principal="alice"),  # no colon
            creation("kafka-cluster", rtype=CLUSTER, op=DESCRIBE),
        )
        assert results == [
            (Errors.INVALID_REQUEST, "The only valid name for the CLUSTER resource is kafka-cluster"),
            (Errors.INVALID_REQUEST, "Invalid empty resource name"),
            (Errors.INVALID_REQUEST, "Invalid resourceType UNKNOWN"),
            (Errors.INVALID_REQUEST, "Invalid operation UNKNOWN"),
            (Errors.INVALID_REQUEST, "Invalid permissionType UNKNOWN"),
            (Errors.INVALID_REQUEST, "Could not parse principal from `alice` (no colon is present separating "
             "the principal type from the principal name)"),
            (Errors.NONE, ""),
        ]  # fmt: skip
        assert node.image.acls() == tuple(node.image.acls())[:1]
        # a creation that is a filter (ANY or MATCH): Kafka cannot build the binding; the whole request fails
        whole = await create(client, creation("a"), creation("b", pattern=MATCH))
        assert whole == [(Errors.UNKNOWN_SERVER_ERROR, None)] * 2
        # a filter with an unknown part (AclControlManager.validateFilter)
        unknown = await delete(client, acl_filter(DeleteAclsRequest.DeleteAclsFilter, pattern=99))
        assert unknown == [(Errors.INVALID_REQUEST, "Unknown patternFilter.", [])]
        unknown = await delete(client, acl_filter(DeleteAclsRequest.DeleteAclsFilter, op=99))
        assert unknown == [(Errors.INVALID_REQUEST, "Unknown entryFilter.", [])]
        assert len(node.image.acls()) == 1
        # UNKNOWN (0) in a request fails Kafka's parse: the connection is closed
        reply = await client.request(30, 3, CreateAclsRequest(creations=[creation(rtype=0)]))
        assert reply.closed

    run_node(tmp_path, scenario)


def test_duplicates_are_written_once_and_succeed(tmp_path):
    async def scenario(client, node):
        assert await create(client, creation(), creation()) == [(Errors.NONE, "")] * 2
        assert await create(client, creation()) == [(Errors.NONE, "")]
        assert len(node.image.acls()) == 1

    run_node(tmp_path, scenario)


def test_without_an_authorizer_every_api_is_security_disabled(tmp_path):
    async def scenario(client, node):
        assert node.authorizer is None
        assert (
            await create(client, creation(), creation("x"))
            == [(Errors.SECURITY_DISABLED, "No Authorizer is configured.")] * 2
        )
        response = await client.call(29, 3, acl_filter(DescribeAclsRequest))
        assert (response.error_code, response.error_message) == (
            Errors.SECURITY_DISABLED, "No Authorizer is configured on the broker"
        )  # fmt: skip
        assert await delete(client, acl_filter(DeleteAclsRequest.DeleteAclsFilter)) == [
            (Errors.SECURITY_DISABLED, "No Authorizer is configured.", [])
        ]

    run_node(tmp_path, scenario, authorizer=None)


def test_another_authorizer_class_is_refused_at_start(tmp_path):
    from kconform.reference_broker.config import ConfigError

    with pytest.raises(ConfigError, match="authorizer.class.name"):
        BrokerNode.from_config_file(
            None,
            {"node.id": "1", "log.dirs": str(tmp_path), "authorizer.class.name": "kafka.security.Other"},
        )


def test_acls_survive_a_restart_and_feed_the_authorizer(tmp_path):
    async def first_life(client, node):
        await create(client, *SEED)
        await delete(client, acl_filter(DeleteAclsRequest.DeleteAclsFilter, rtype=GROUP))
        return node.image.acls()

    async def second_life(client, node):
        authorizer = node.authorizer
        assert authorizer is node.authorizer  # cached while the ACLs do not move
        return node.image.acls(), authorizer.acls, await describe(client)

    before = run_node(tmp_path, first_life)
    after, authorizer_acls, described = run_node(tmp_path, second_life)
    assert after == before and authorizer_acls == before
    assert (GROUP, "payments", LITERAL) not in described and len(after) == len(SEED) - 1


def test_v0_layouts_are_literal_only(tmp_path):
    """v0 of the three APIs has no pattern type field: LITERAL is implied (the decoded default), so a
    v0 describe or delete never reaches a PREFIXED binding."""

    async def scenario(client, node):
        assert await create(client, creation("orders"), version=0) == [(Errors.NONE, "")]
        await create(client, creation("ord", pattern=PREFIXED))
        assert set(await describe(client, version=0, pattern=LITERAL)) == {(TOPIC, "orders", LITERAL)}
        everything = acl_filter(DeleteAclsRequest.DeleteAclsFilter, pattern=LITERAL)
        deleted = await delete(client, everything, version=0)
        assert deleted == [(Errors.NONE, None, [(TOPIC, "orders", LITERAL, "User:alice")])]
        assert set(await describe(client)) == {(TOPIC, "ord", PREFIXED)}

    run_node(tmp_path, scenario, kafka_version="3.9")


# ---- an independent client: librdkafka's admin client ---------------------------------------------


@pytest.mark.peer
def test_librdkafkas_admin_client_creates_describes_and_deletes(tmp_path):
    admin = pytest.importorskip("confluent_kafka.admin")

    def with_client(bootstrap: str):
        client = admin.AdminClient({"bootstrap.servers": bootstrap})
        binding = admin.AclBinding(
            admin.ResourceType.TOPIC,
            "orders",
            admin.ResourcePatternType.PREFIXED,
            "User:alice",
            "*",
            admin.AclOperation.READ,
            admin.AclPermissionType.ALLOW,
        )
        for future in client.create_acls([binding], request_timeout=15).values():
            future.result(timeout=20)
        any_filter = admin.AclBindingFilter(
            admin.ResourceType.ANY,
            None,
            admin.ResourcePatternType.ANY,
            None,
            None,
            admin.AclOperation.ANY,
            admin.AclPermissionType.ANY,
        )
        described = client.describe_acls(any_filter, request_timeout=15).result(timeout=20)
        deleted = client.delete_acls([any_filter], request_timeout=15)[any_filter].result(timeout=20)
        return described, deleted

    async def main():
        props = {
            "node.id": "1",
            "log.dirs": str(tmp_path),
            "authorizer.class.name": STANDARD,
            "super.users": "User:ANONYMOUS",
        }
        node = BrokerNode.from_config_file(None, props)
        host, port = await node.start("127.0.0.1", 0)
        try:
            answers = await asyncio.to_thread(with_client, f"{host}:{port}")
            return answers, node.image.acls()
        finally:
            await node.stop()

    (described, deleted), left = asyncio.run(asyncio.wait_for(main(), 90))
    assert [(b.name, b.resource_pattern_type, b.principal) for b in described] == [
        ("orders", admin.ResourcePatternType.PREFIXED, "User:alice")
    ]
    assert [(b.name, b.operation) for b in deleted] == [("orders", admin.AclOperation.READ)]
    assert left == ()


# ---- a cluster: forwarding ------------------------------------------------------------------------


@pytest.mark.slow
def test_brokers_forward_creations_and_describe_their_own_image_at_once(tmp_path):
    """CreateAcls and DeleteAcls reach the controller from a broker without the controller role
    (KafkaApis.maybeForwardToController); a DescribeAcls sent to the same broker right after sees them."""
    from kconform.reference_broker.cluster_processes import start_cluster

    cluster = start_cluster(
        tmp_path / "cluster",
        3,
        overrides={"authorizer.class.name": STANDARD, "super.users": "User:ANONYMOUS"},
    )
    try:

        def ask(broker_id: int, talk):
            node = cluster.brokers[broker_id]

            async def session():
                async with await RawClient.connect(node.host, node.port, client_id="acl-cluster") as client:
                    return await talk(client)

            return asyncio.run(asyncio.wait_for(session(), 90))

        async def create_then_describe(client):
            return await create(client, creation("orders")), await describe(client)

        created, described = ask(2, create_then_describe)
        assert created == [(Errors.NONE, "")]
        assert set(described) == {(TOPIC, "orders", LITERAL)}

        async def delete_then_describe(client):
            return await delete(client, acl_filter(DeleteAclsRequest.DeleteAclsFilter)), await describe(
                client
            )

        deleted, described = ask(3, delete_then_describe)
        assert deleted == [(Errors.NONE, None, [(TOPIC, "orders", LITERAL, "User:alice")])]
        assert described == {}
    finally:
        cluster.stop()
