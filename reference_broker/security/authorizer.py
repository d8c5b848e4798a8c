"""The decision of Kafka's ``StandardAuthorizer``: may this principal, from this host, do this operation
on this resource, given the cluster's ACLs.

- ``super.users`` may do anything;
- among the ACLs whose pattern covers the resource (literal name, the literal ``*``, or a prefix), a
  DENY that applies wins over any ALLOW;
- an ALLOW applies to its own operation, ``ALL``, and, for DESCRIBE and DESCRIBE_CONFIGS, to the
  operations that imply them (READ, WRITE, DELETE, ALTER imply DESCRIBE; ALTER_CONFIGS implies
  DESCRIBE_CONFIGS); a DENY applies to its own operation and ``ALL`` only;
- an entry applies to its principal or ``User:*`` and to its host or ``*``;
- no ACL on the resource at all: allowed only with ``allow.everyone.if.no.acl.found``; ACLs on the
  resource but none that allows: denied.

``authorize_any`` is ``authorizeByResourceType``: whether some resource of a type could be allowed
(used where Kafka asks "may write to some topic", e.g. InitProducerId without a transactional id)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .acls import WILDCARD, WILDCARD_PRINCIPAL, AclBinding, Operation, PatternType, Permission, ResourceType
from .principals import KafkaPrincipal

__all__ = ["Authorizer", "CLUSTER_NAME", "parse_super_users"]

CLUSTER_NAME = "kafka-cluster"
_IMPLIES_DESCRIBE = {Operation.DESCRIBE, Operation.READ, Operation.WRITE, Operation.DELETE, Operation.ALTER}
_IMPLIES_DESCRIBE_CONFIGS = {Operation.DESCRIBE_CONFIGS, Operation.ALTER_CONFIGS}


def parse_super_users(value: str | None) -> frozenset[str]:
    """``super.users``: principals separated by semicolons (``User:admin;User:CN=broker``)."""
    return frozenset(part.strip() for part in (value or "").split(";") if part.strip())


@dataclass(frozen=True)
class Authorizer:
    acls: tuple[AclBinding, ...]
    super_users: frozenset[str] = frozenset()
    allow_if_no_acl: bool = False

    @classmethod
    def of(cls, acls: Iterable[AclBinding], super_users: str | None, allow_if_no_acl: bool) -> Authorizer:
        return cls(tuple(acls), parse_super_users(super_users), bool(allow_if_no_acl))

    def authorize(
        self,
        principal: KafkaPrincipal,
        host: str,
        operation: Operation,
        resource_type: ResourceType,
        name: str,
    ) -> bool:
        if str(principal) in self.super_users:
            return True
        covering = [acl for acl in self.acls if acl.resource_matches(resource_type, name)]
        if not covering:
            return self.allow_if_no_acl
        applying = [acl for acl in covering if _applies(acl, principal, host, operation)]
        if any(acl.permission == Permission.DENY for acl in applying):
            return False
        return any(acl.permission == Permission.ALLOW for acl in applying)

    def authorize_any(
        self, principal: KafkaPrincipal, host: str, operation: Operation, resource_type: ResourceType
    ) -> bool:
        """``Authorizer.authorizeByResourceType``: a probe resource named "hardcode" first (super users,
        and no ACLs with ``allow.everyone.if.no.acl.found``); else some ALLOW for exactly this operation
        (or ALL) whose pattern no DENY dominates: a literal ``*`` DENY denies all, a literal DENY takes
        back the same literal ALLOW, a prefixed DENY every ALLOW that starts with its prefix."""
        if self.authorize(principal, host, operation, resource_type, "hardcode"):
            return True
        allows: list[AclBinding] = []
        denied_literal, denied_prefixes = set(), set()
        for acl in self.acls:
            if acl.resource_type != resource_type or acl.host not in (WILDCARD, host):
                continue
            if acl.principal not in (str(principal), WILDCARD_PRINCIPAL):
                continue
            if acl.operation not in (operation, Operation.ALL):
                continue
            if acl.permission == Permission.DENY:
                if acl.pattern_type == PatternType.LITERAL and acl.resource_name == WILDCARD:
                    return False
                (denied_literal if acl.pattern_type == PatternType.LITERAL else denied_prefixes).add(
                    acl.resource_name
                )
            elif acl.permission == Permission.ALLOW:
                if acl.pattern_type == PatternType.LITERAL and acl.resource_name == WILDCARD:
                    return True
                allows.append(acl)
        for acl in allows:
            if acl.pattern_type == PatternType.LITERAL and acl.resource_name in denied_literal:
                continue
            name = acl.resource_name
            if not any(name[:end] in denied_prefixes for end in range(1, len(name) + 1)):
                return True
        return False

    def operations_allowed(
        self, principal: KafkaPrincipal, host: str, resource_type: ResourceType, name: str, candidates
    ) -> int:
        """The ``authorized_operations`` bit set of a resource: bit n for each allowed operation n."""
        bits = 0
        for operation in candidates:
            if self.authorize(principal, host, operation, resource_type, name):
                bits |= 1 << int(operation)
        return bits


def _applies(acl: AclBinding, principal: KafkaPrincipal, host: str, operation: Operation) -> bool:
    if acl.principal not in (str(principal), WILDCARD_PRINCIPAL):
        return False
    if acl.host not in (WILDCARD, host):
        return False
    if acl.operation in (Operation.ALL, operation):
        return True
    if acl.permission != Permission.ALLOW:
        return False
    if operation == Operation.DESCRIBE:
        return acl.operation in _IMPLIES_DESCRIBE
    if operation == Operation.DESCRIBE_CONFIGS:
        return acl.operation in _IMPLIES_DESCRIBE_CONFIGS
    return False
