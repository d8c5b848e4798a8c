"""Authorization in the admin and cluster APIs, one rule a case, as ``test_authorization_rules`` does for
the data plane: a principal without the ACL gets Kafka's error code (``ControllerApis``, ``AclApis``,
``ConfigHelper``, ``KafkaApis``); with it (on top of the ACLs the earlier checks need) the request gets past
the check. The rules are in ``support/authorization_cases_admin.py``.

One node for the module, with ``StandardAuthorizer``, ``super.users=User:admin`` and a SASL_PLAINTEXT
listener whose PLAIN users are ``admin`` and, for each case, ``deny_<case>`` and ``allow_<case>``. Every
resource a case touches is named after it, so cases do not see each other's ACLs."""

from __future__ import annotations

import asyncio

import pytest

from kconform.codecs.errors import Errors, error_for
from kconform.codecs.messages import (
    CreateAclsRequest,
    CreateTopicsRequest,
    FindCoordinatorRequest,
    InitProducerIdRequest,
)

from ...support.authorization_cases_admin import (
    CASES,
    EXISTING_TOPICS,
    LISTED_TRANSACTION,
    TOPIC,
    binding,
    names_of,
)
from ...support.authorized_node import LiveNode
from ...support.sasl_raw import sasl_client

USERS = [f"{kind}_{case.id}" for case in CASES for kind in ("deny", "allow")]


def _begin_transaction(live: LiveNode, transactional_id: str) -> None:
    """Waits for the transaction coordinator, then gives ``transactional_id`` a producer id as admin, so
    that ListTransactions has a transaction to list."""

    async def wait():
        for _ in range(100):
            client = await sasl_client(*live.sasl_address, "admin", "admin-secret")
            async with client:
                found = await client.call(10, 4, FindCoordinatorRequest(key_type=1, coordinator_keys=["w"]))
            if found.coordinators[0].error_code == Errors.NONE:
                return
            await asyncio.sleep(0.1)
        raise AssertionError("no transaction coordinator")

    live.run(wait())
    init = InitProducerIdRequest(transactional_id=transactional_id, transaction_timeout_ms=60000)
    assert live.call("admin", 22, 4, init).error_code == Errors.NONE


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    node = LiveNode(tmp_path_factory.mktemp("authz-admin") / "data", USERS)
    try:
        topics = [
            CreateTopicsRequest.CreatableTopic(name=name, num_partitions=1, replication_factor=1)
            for name in [TOPIC, *EXISTING_TOPICS]
        ]
        created = node.call("admin", 19, 5, CreateTopicsRequest(topics=topics, timeout_ms=10000))
        assert {t.error_code for t in created.topics} == {Errors.NONE}
        creations = [
            binding(user, case.id, acl)
            for case in CASES
            for user, acls in ((f"deny_{case.id}", case.prior), (f"allow_{case.id}", case.prior + case.rule))
            for acl in acls
        ]
        answer = node.call("admin", 30, 3, CreateAclsRequest(creations=creations))
        assert {r.error_code for r in answer.results} == {Errors.NONE}
        _begin_transaction(node, LISTED_TRANSACTION)
        yield node
    finally:
        node.close()


def _name(value: int) -> str:
    try:
        return error_for(value).name
    except Exception:  # a case that looks at a count, not an error code
        return str(value)


PARAMS = [pytest.param(case, id=case.id) for case in CASES]


@pytest.mark.parametrize("case", PARAMS)
def test_the_rule_refuses_without_the_acl_and_lets_through_with_it(live, case):
    names = names_of(case.id)
    denied = case.code(live.call(f"deny_{case.id}", *case.build(names)))
    assert denied == case.denied, f"{case.id} without the ACL: {_name(denied)}"
    allowed = case.code(live.call(f"allow_{case.id}", *case.build(names)))
    assert allowed == case.allowed, f"{case.id} with the ACL: {_name(allowed)}"


def test_a_super_user_passes_every_admin_rule(live):
    # the rules' refusals never reach a super user (StandardAuthorizer.authorize: super users first); the
    # cases whose allowed answer changes state are left out, as their allow users have already run them
    stateless = [
        c for c in CASES if c.allowed == Errors.NONE and "create" not in c.id and "delete" not in c.id
    ]
    assert len(stateless) >= 8
    for case in stateless:
        code = case.code(live.call("admin", *case.build(names_of(case.id))))
        assert code not in (
            Errors.CLUSTER_AUTHORIZATION_FAILED,
            Errors.TOPIC_AUTHORIZATION_FAILED,
            Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        ), f"{case.id} as admin: {_name(code)}"
