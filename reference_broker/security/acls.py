"""Kafka's access control lists as data: bindings (resource pattern plus entry), the filters
DescribeAcls and DeleteAcls match them with, and the checks CreateAcls applies to a new binding.

The codes are Kafka's wire ids (``ResourceType``, ``PatternType``, ``AclOperation``,
``AclPermissionType``); the matching rules are ``AclBindingFilter.matches``, the checks
``AclControlManager.validateNewAcl`` and ``validateFilter``."""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = [
    "WILDCARD",
    "ResourceType",
    "PatternType",
    "Operation",
    "Permission",
    "AclBinding",
    "AclFilter",
    "InvalidAcl",
    "validate_new_binding",
    "validate_filter",
]

WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"


class ResourceType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class Operation(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14
    TWO_PHASE_COMMIT = 15


class Permission(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


class InvalidAcl(ValueError):
    """A binding or filter CreateAcls/DeleteAcls refuses (INVALID_REQUEST with this message)."""


def _enum(kind, value: int):
    try:
        return kind(value)
    except ValueError:
        return kind.UNKNOWN


@dataclass(frozen=True, slots=True)
class AclBinding:
    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: Operation
    permission: Permission

    @classmethod
    def of(cls, resource_type, name, pattern_type, principal, host, operation, permission) -> AclBinding:
        """From wire codes; unknown codes become UNKNOWN (and fail validation)."""
        return cls(_enum(ResourceType, resource_type), name, _enum(PatternType, pattern_type), principal,
                   host, _enum(Operation, operation), _enum(Permission, permission))  # fmt: skip

    def resource_matches(self, resource_type: ResourceType, name: str) -> bool:
        """Whether this binding's pattern covers a literal resource (``StandardAuthorizerData``)."""
        if resource_type != self.resource_type:
            return False
        if self.pattern_type == PatternType.LITERAL:
            return self.resource_name in (name, WILDCARD)
        return self.pattern_type == PatternType.PREFIXED and name.startswith(self.resource_name)


@dataclass(frozen=True, slots=True)
class AclFilter:
    """A DescribeAcls/DeleteAcls filter: None (null on the wire) and ANY match anything; MATCH finds
    every pattern that would apply to the named resource."""

    resource_type: ResourceType
    resource_name: str | None
    pattern_type: PatternType
    principal: str | None
    host: str | None
    operation: Operation
    permission: Permission

    @classmethod
    def of(cls, resource_type, name, pattern_type, principal, host, operation, permission) -> AclFilter:
        return cls(_enum(ResourceType, resource_type), name, _enum(PatternType, pattern_type), principal,
                   host, _enum(Operation, operation), _enum(Permission, permission))  # fmt: skip

    def matches(self, binding: AclBinding) -> bool:
        if self.resource_type not in (ResourceType.ANY, binding.resource_type):
            return False
        if not self._pattern_matches(binding):
            return False
        return (
            self.principal in (None, binding.principal)
            and self.host in (None, binding.host)
            and self.operation in (Operation.ANY, binding.operation)
            and self.permission in (Permission.ANY, binding.permission)
        )

    def _pattern_matches(self, binding: AclBinding) -> bool:
        if self.pattern_type == PatternType.MATCH:
            if self.resource_name is None:
                return True
            if binding.pattern_type == PatternType.LITERAL:
                return binding.resource_name in (self.resource_name, WILDCARD)
            return binding.pattern_type == PatternType.PREFIXED and self.resource_name.startswith(
                binding.resource_name
            )
        if self.pattern_type not in (PatternType.ANY, binding.pattern_type):
            return False
        return self.resource_name in (None, binding.resource_name)


def validate_new_binding(binding: AclBinding) -> None:
    """``AclControlManager.validateNewAcl``: every field concrete, and a name to protect."""
    if binding.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
        raise InvalidAcl(f"Invalid resourceType {binding.resource_type.name}")
    if binding.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise InvalidAcl(f"Invalid patternType {binding.pattern_type.name}")
    if binding.operation in (Operation.UNKNOWN, Operation.ANY):
        raise InvalidAcl(f"Invalid operation {binding.operation.name}")
    if binding.permission in (Permission.UNKNOWN, Permission.ANY):
        raise InvalidAcl(f"Invalid permissionType {binding.permission.name}")
    if not binding.resource_name:
        raise InvalidAcl("Resource name should not be empty")
    principal_type, sep, _name = binding.principal.partition(":")
    if not sep or not principal_type:
        raise InvalidAcl(
            f"Could not parse principal from `{binding.principal}` (no colon is present separating the "
            "principal type from the principal name)"
        )


def validate_filter(acl_filter: AclFilter) -> None:
    """``AclControlManager.validateFilter``: a filter with an unknown part matches nothing knowable."""
    if acl_filter.resource_type == ResourceType.UNKNOWN or acl_filter.pattern_type == PatternType.UNKNOWN:
        raise InvalidAcl("Unknown patternFilter.")
    if acl_filter.operation == Operation.UNKNOWN or acl_filter.permission == Permission.UNKNOWN:
        raise InvalidAcl("Unknown entryFilter.")
