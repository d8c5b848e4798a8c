"""The StandardAuthorizer's decision, case by case (after Kafka's ``StandardAuthorizerTest`` and
``AuthorizerTest``): deny first, implied operations, wildcards and prefixes, super users and the
no-ACL default; and the filters DescribeAcls/DeleteAcls match bindings with."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kconform.reference_broker.security.acls import (
    AclBinding,
    AclFilter,
    InvalidAcl,
    Operation,
    PatternType,
    Permission,
    ResourceType,
    validate_filter,
    validate_new_binding,
)
from kconform.reference_broker.security.authorizer import Authorizer
from kconform.reference_broker.security.principals import KafkaPrincipal

ALICE, BOB = KafkaPrincipal("User", "alice"), KafkaPrincipal("User", "bob")
T, L, P = ResourceType.TOPIC, PatternType.LITERAL, PatternType.PREFIXED
ALLOW, DENY = Permission.ALLOW, Permission.DENY


def acl(name, operation, permission=ALLOW, *, pattern=L, principal="User:alice", host="*", kind=T):
    return AclBinding(kind, name, pattern, principal, host, operation, permission)


def may(acls, operation, name, *, who=ALICE, host="10.0.0.1", kind=T, supers="", everyone=False) -> bool:
    return Authorizer.of(acls, supers, everyone).authorize(who, host, operation, kind, name)


def test_no_acls_deny_unless_everyone_is_allowed_when_none_is_found():
    assert not may([], Operation.READ, "orders")
    assert may([], Operation.READ, "orders", everyone=True)
    # an ACL on the resource for someone else still counts as "found"
    assert not may(
        [acl("orders", Operation.READ, principal="User:bob")], Operation.READ, "orders", everyone=True
    )


def test_deny_wins_over_allow():
    acls = [acl("orders", Operation.READ), acl("orders", Operation.READ, DENY)]
    assert not may(acls, Operation.READ, "orders")
    assert not may(
        [acl("*", Operation.ALL), acl("ord", Operation.READ, DENY, pattern=P)], Operation.READ, "orders"
    )


@pytest.mark.parametrize("granted", [Operation.READ, Operation.WRITE, Operation.DELETE, Operation.ALTER])
def test_read_write_delete_alter_imply_describe(granted):
    assert may([acl("orders", granted)], Operation.DESCRIBE, "orders")
    assert not may([acl("orders", granted)], Operation.CREATE, "orders")


def test_alter_configs_implies_describe_configs_and_a_deny_implies_nothing():
    assert may([acl("orders", Operation.ALTER_CONFIGS)], Operation.DESCRIBE_CONFIGS, "orders")
    denied_read = [acl("orders", Operation.DESCRIBE), acl("orders", Operation.READ, DENY)]
    assert may(denied_read, Operation.DESCRIBE, "orders"), "a DENY READ does not deny DESCRIBE"
    assert not may(
        [acl("orders", Operation.ALL, DENY), acl("orders", Operation.ALL)], Operation.DESCRIBE, "orders"
    )


def test_wildcards_prefixes_and_literal_names():
    assert may([acl("*", Operation.READ)], Operation.READ, "anything")
    assert may([acl("ord", Operation.READ, pattern=P)], Operation.READ, "orders")
    assert not may([acl("ord", Operation.READ)], Operation.READ, "orders"), "a literal is the whole name"
    assert not may([acl("orders-x", Operation.READ, pattern=P)], Operation.READ, "orders")
    assert not may([acl("*", Operation.READ, pattern=P)], Operation.READ, "orders"), (
        "a prefixed * is a prefix"
    )


def test_principals_and_hosts():
    assert may([acl("o", Operation.READ, principal="User:*")], Operation.READ, "o", who=BOB)
    assert not may([acl("o", Operation.READ)], Operation.READ, "o", who=BOB)
    assert may([acl("o", Operation.READ, host="10.0.0.1")], Operation.READ, "o")
    assert not may([acl("o", Operation.READ, host="10.0.0.2")], Operation.READ, "o")


def test_super_users_may_do_anything_even_against_a_deny():
    denied = [acl("o", Operation.ALL, DENY, principal="User:*")]
    assert may(denied, Operation.WRITE, "o", supers="User:admin;User:alice")
    assert not may(denied, Operation.WRITE, "o", who=BOB, supers="User:admin;User:alice")


def test_resource_types_do_not_mix():
    assert not may([acl("g", Operation.READ, kind=ResourceType.GROUP)], Operation.READ, "g")


def test_authorize_by_resource_type():
    def any_topic(acls, everyone=False):
        return Authorizer.of(acls, "", everyone).authorize_any(ALICE, "10.0.0.1", Operation.WRITE, T)

    assert not any_topic([])
    assert any_topic([], everyone=True)
    assert any_topic([acl("orders", Operation.WRITE)])
    assert not any_topic([acl("orders", Operation.WRITE), acl("orders", Operation.WRITE, DENY)])
    assert not any_topic([acl("orders", Operation.WRITE), acl("ord", Operation.WRITE, DENY, pattern=P)])
    assert any_topic([acl("orders", Operation.WRITE), acl("ordersX", Operation.WRITE, DENY, pattern=P)])
    assert not any_topic([acl("orders", Operation.WRITE), acl("*", Operation.WRITE, DENY)])
    assert not any_topic([acl("orders", Operation.READ)]), "READ does not grant WRITE"


# ---- filters and validation ------------------------------------------------------------------------------


def flt(kind=ResourceType.ANY, name=None, pattern=PatternType.ANY, principal=None, host=None,
        operation=Operation.ANY, permission=Permission.ANY) -> AclFilter:  # fmt: skip
    return AclFilter(kind, name, pattern, principal, host, operation, permission)


def test_filters():
    literal, prefixed, wildcard = (
        acl("orders", Operation.READ),
        acl("ord", Operation.READ, pattern=P),
        acl("*", Operation.READ),
    )
    bindings = [literal, prefixed, wildcard]
    assert [b for b in bindings if flt().matches(b)] == bindings
    assert [b for b in bindings if flt(T, "orders", PatternType.MATCH).matches(b)] == bindings
    assert [b for b in bindings if flt(T, "orders", PatternType.LITERAL).matches(b)] == [literal]
    assert [b for b in bindings if flt(T, None, PatternType.PREFIXED).matches(b)] == [prefixed]
    assert [b for b in bindings if flt(principal="User:bob").matches(b)] == []
    assert [b for b in bindings if flt(operation=Operation.WRITE).matches(b)] == []


@pytest.mark.parametrize(
    ("binding", "message"),
    [
        (AclBinding(ResourceType.ANY, "x", L, "User:a", "*", Operation.READ, ALLOW), "Invalid resourceType"),
        (AclBinding(T, "x", PatternType.MATCH, "User:a", "*", Operation.READ, ALLOW), "Invalid patternType"),
        (AclBinding(T, "x", L, "User:a", "*", Operation.ANY, ALLOW), "Invalid operation"),
        (AclBinding(T, "x", L, "User:a", "*", Operation.READ, Permission.ANY), "Invalid permissionType"),
        (AclBinding(T, "", L, "User:a", "*", Operation.READ, ALLOW), "Resource name should not be empty"),
        (AclBinding(T, "x", L, "alice", "*", Operation.READ, ALLOW), "Could not parse principal"),
    ],
)
def test_new_bindings_are_checked_as_kafka_checks_them(binding, message):
    with pytest.raises(InvalidAcl, match=message):
        validate_new_binding(binding)


def test_filters_with_unknown_parts_are_refused():
    with pytest.raises(InvalidAcl, match="Unknown patternFilter"):
        validate_filter(flt(kind=ResourceType.UNKNOWN))
    with pytest.raises(InvalidAcl, match="Unknown entryFilter"):
        validate_filter(flt(operation=Operation.UNKNOWN))


@given(st.integers(-5, 20), st.integers(-5, 20), st.integers(-5, 20), st.integers(-5, 20))
def test_unknown_wire_codes_become_unknown_and_fail_validation(kind, pattern, operation, permission):
    binding = AclBinding.of(kind, "x", pattern, "User:a", "*", operation, permission)
    valid = kind in range(2, 8) and pattern in (3, 4) and operation in range(2, 16) and permission in (2, 3)
    if valid:
        validate_new_binding(binding)
    else:
        with pytest.raises(InvalidAcl):
            validate_new_binding(binding)
