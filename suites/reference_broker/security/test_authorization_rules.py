"""Authorization in the data-plane APIs, one rule of ``KafkaApis`` a case, in the spirit of Kafka's
``AuthorizerIntegrationTest``: a principal without the ACL gets Kafka's error code; with it (on top of the
ACLs the earlier checks of the same request need) the request gets past the check. The rules are in
``support/authorization_cases.py``.

One node for the module, with ``StandardAuthorizer``, ``super.users=User:admin`` and a SASL_PLAINTEXT
listener whose PLAIN users are ``admin``, ``reader``, ``nobody`` and, for each case, ``deny_<case>`` (only
the earlier checks' ACLs) and ``allow_<case>`` (those and the rule's). Every resource a case touches is
named after it, so cases do not see each other's ACLs."""

from __future__ import annotations

import asyncio

import pytest

from kconform.codecs.errors import Errors, error_for
from kconform.codecs.messages import (
    CreateAclsRequest,
    CreateTopicsRequest,
    DescribeGroupsRequest,
    FindCoordinatorRequest,
    InitProducerIdRequest,
    ListGroupsRequest,
    MetadataRequest,
    OffsetCommitRequest,
)
from kconform.reference_broker.security.acls import AclBinding, PatternType, Permission
from kconform.reference_broker.security.acls import Operation as Op
from kconform.reference_broker.security.acls import ResourceType as Rt
from kconform.reference_broker.security.authorization import (
    allowed,
    allowed_any,
    authorized_operations,
    client_host,
    filter_allowed,
)
from kconform.reference_broker.security.authorizer import Authorizer
from kconform.reference_broker.security.principals import KafkaPrincipal

from ...support.authorization_cases import (
    CASES,
    TOPIC,
    binding,
    fetch,
    fetch_code,
    first_partition,
    names_of,
    produce,
)
from ...support.authorized_node import LiveNode
from ...support.sasl_raw import sasl_client

USERS = ["reader", "nobody"] + [f"{kind}_{case.id}" for case in CASES for kind in ("deny", "allow")]


def _wait_for_coordinator(live: LiveNode, key_type: int, key: str) -> None:
    async def wait():
        for _ in range(100):
            client = await sasl_client(*live.sasl_address, "admin", "admin-secret")
            async with client:
                answer = await client.call(
                    10, 4, FindCoordinatorRequest(key_type=key_type, coordinator_keys=[key])
                )
            if answer.coordinators[0].error_code == Errors.NONE:
                return
            await asyncio.sleep(0.1)
        raise AssertionError(f"no coordinator for key type {key_type}")

    live.run(wait())


def _commit_as_admin(live: LiveNode, group: str) -> None:
    part = OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=1)
    topic = OffsetCommitRequest.OffsetCommitRequestTopic(name=TOPIC, partitions=[part])
    commit = OffsetCommitRequest(
        group_id=group, generation_id_or_member_epoch=-1, member_id="", topics=[topic]
    )
    assert first_partition(live.call("admin", 8, 8, commit)) == Errors.NONE


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    node = LiveNode(tmp_path_factory.mktemp("authz") / "data", USERS)
    try:
        topics = [
            CreateTopicsRequest.CreatableTopic(name=name, num_partitions=1, replication_factor=1)
            for name in (TOPIC, "hidden")
        ]
        created = node.call("admin", 19, 5, CreateTopicsRequest(topics=topics, timeout_ms=10000))
        assert [t.error_code for t in created.topics] == [Errors.NONE, Errors.NONE]
        produced = node.call("admin", *produce())
        assert produced.responses[0].partition_responses[0].error_code == Errors.NONE
        creations = [
            binding(user, case.id, acl)
            for case in CASES
            for user, acls in ((f"deny_{case.id}", case.prior), (f"allow_{case.id}", case.prior + case.rule))
            for acl in acls
        ]
        creations += [
            binding("reader", "-", (Rt.TOPIC, TOPIC, Op.READ)),
            binding("reader", "-", (Rt.GROUP, "readers", Op.DESCRIBE)),
        ]
        answer = node.call("admin", 30, 3, CreateAclsRequest(creations=creations))
        assert {r.error_code for r in answer.results} == {Errors.NONE}
        _wait_for_coordinator(node, 0, "warm-up")
        _commit_as_admin(node, names_of("offset-delete-topic-read")["group"])
        _wait_for_coordinator(node, 1, "warm-up")
        yield node
    finally:
        node.close()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_the_rule_refuses_without_the_acl_and_lets_through_with_it(live, case):
    names = names_of(case.id)
    denied = case.code(live.call(f"deny_{case.id}", *case.build(names)))
    assert denied == case.denied, f"{case.id} without the ACL: {error_for(denied).name}"
    allowed = case.code(live.call(f"allow_{case.id}", *case.build(names)))
    assert allowed == case.allowed, f"{case.id} with the ACL: {error_for(allowed).name}"


def test_a_super_user_needs_no_acl(live):
    answer = live.call("admin", *fetch())
    assert fetch_code(answer) == Errors.NONE and answer.responses[0].partitions[0].high_watermark >= 1
    init = live.call(
        "admin", 22, 4, InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000)
    )
    assert init.error_code == Errors.NONE and init.producer_id >= 0


def test_metadata_for_all_topics_leaves_out_what_the_principal_may_not_describe(live):
    every = live.call("reader", 3, 9, MetadataRequest(topics=None))
    assert [t.name for t in every.topics] == [TOPIC]
    assert [t.name for t in live.call("nobody", 3, 9, MetadataRequest(topics=None)).topics] == []
    assert {t.name for t in live.call("admin", 3, 9, MetadataRequest(topics=None)).topics} >= {
        TOPIC,
        "hidden",
    }


def test_metadata_authorized_operations_come_from_the_acls(live):
    request = MetadataRequest(
        topics=[MetadataRequest.MetadataRequestTopic(name=TOPIC)],
        include_topic_authorized_operations=True,
        include_cluster_authorized_operations=True,
    )
    answer = live.call("reader", 3, 10, request)
    # READ implies DESCRIBE; nothing else is allowed; no DESCRIBE on the cluster: 0
    assert answer.topics[0].topic_authorized_operations == (1 << Op.READ) | (1 << Op.DESCRIBE)
    assert answer.cluster_authorized_operations == 0
    admin = live.call("admin", 3, 10, request)
    assert admin.cluster_authorized_operations == sum(1 << op for op in (5, 7, 8, 9, 10, 11, 12))
    assert admin.topics[0].topic_authorized_operations == sum(1 << op for op in (3, 4, 5, 6, 7, 8, 10, 11))


def test_list_groups_shows_only_the_groups_the_principal_may_describe(live):
    for group in ("readers", "others"):
        _commit_as_admin(live, group)
    listed = {g.group_id for g in live.call("reader", 16, 4, ListGroupsRequest()).groups}
    assert "readers" in listed and "others" not in listed
    assert {g.group_id for g in live.call("nobody", 16, 4, ListGroupsRequest()).groups} == set()
    assert {"readers", "others"} <= {
        g.group_id for g in live.call("admin", 16, 4, ListGroupsRequest()).groups
    }


def test_describe_groups_answers_the_refused_groups_first(live):
    answer = live.call("reader", 15, 5, DescribeGroupsRequest(groups=["others", "readers"]))
    assert [(g.group_id, g.error_code) for g in answer.groups] == [
        ("others", Errors.GROUP_AUTHORIZATION_FAILED),
        ("readers", Errors.NONE),
    ]


# ---- the helpers themselves, without a node ---------------------------------------------------------


class _Broker:
    def __init__(self, authorizer) -> None:
        self.authorizer = authorizer


class _Ctx:
    def __init__(self, principal: str, peer: str) -> None:
        self.principal = KafkaPrincipal(*principal.split(":", 1))
        self.peer = peer


def _topic_acl(name: str, host: str, op=Op.READ) -> AclBinding:
    return AclBinding(Rt.TOPIC, name, PatternType.LITERAL, "User:alice", host, op, Permission.ALLOW)


@pytest.mark.parametrize(
    ("peer", "host"), [("127.0.0.1:9092", "127.0.0.1"), ("[::1]:40000", "::1"), ("10.1.2.3", "10.1.2.3")]
)
def test_the_acl_host_is_the_peers_address_without_its_port(peer, host):
    assert client_host(peer) == host


def test_without_an_authorizer_everything_is_allowed():
    broker, ctx = _Broker(None), _Ctx("User:ANONYMOUS", "127.0.0.1:1")
    assert allowed(broker, ctx, Op.WRITE, Rt.TOPIC, "anything")
    assert allowed_any(broker, ctx, Op.WRITE, Rt.TOPIC)
    assert filter_allowed(broker, ctx, Op.READ, Rt.TOPIC, ["a", "b", "a"]) == {"a", "b"}
    assert authorized_operations(broker, ctx, Rt.GROUP, "g") == (1 << 3) | (1 << 6) | (1 << 8)


def test_an_acl_for_one_host_does_not_reach_another():
    authorizer = Authorizer.of([_topic_acl("near", "127.0.0.1"), _topic_acl("far", "10.0.0.9")], None, False)
    broker = _Broker(authorizer)
    ctx = _Ctx("User:alice", "127.0.0.1:5555")
    assert filter_allowed(broker, ctx, Op.READ, Rt.TOPIC, ["near", "far", "none"]) == {"near"}
    assert not allowed(broker, _Ctx("User:bob", "127.0.0.1:5555"), Op.READ, Rt.TOPIC, "near")
    assert allowed_any(broker, ctx, Op.READ, Rt.TOPIC) and not allowed_any(broker, ctx, Op.WRITE, Rt.TOPIC)
