"""The ACL set-up ``kconform diff-acls`` applies on both targets: the principals (SASL users), the
resources to create first, and the ACL bindings, read from TOML and checked before any target starts.

Names are logical: a run gives every topic, group and transactional id (and every ACL resource name but
the cluster's and the wildcard ``*``) a run-unique prefix, so reruns on a bootstrap target never meet the
names of an earlier run, and a PREFIXED pattern still covers the same resources. Binding fields are
Kafka's (``ResourceType``, ``PatternType``, ``AclOperation``, ``AclPermissionType`` by name)."""

from __future__ import annotations

import ipaddress
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from kconform.reference_broker.security.acls import (
    WILDCARD,
    AclBinding,
    Operation,
    PatternType,
    Permission,
    ResourceType,
)
from kconform.reference_broker.security.authorizer import CLUSTER_NAME

__all__ = [
    "AclRule",
    "AclSetup",
    "DEFAULT_SETUP",
    "Principal",
    "SetupError",
    "load_setup",
    "parse_setup",
    "setup_from_data",
]


class SetupError(ValueError):
    """A set-up that cannot be applied; the message names the file and the entry."""


# Kafka's legal topic names (``Topic.validate``): 249 characters of [a-zA-Z0-9._-]; a run prefix takes 20.
_TOPIC = re.compile(r"[A-Za-z0-9._-]{1,229}")
# A user name that a JAAS option key (``user_<name>``) and a principal can both carry as it is.
_USER = re.compile(r"[A-Za-z0-9._-]{1,64}")
_RESOURCE_TYPES = {
    t.name: t
    for t in (ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER, ResourceType.TRANSACTIONAL_ID)
}
_PATTERNS = {p.name: p for p in (PatternType.LITERAL, PatternType.PREFIXED)}
_OPERATIONS = {o.name: o for o in Operation if o not in (Operation.UNKNOWN, Operation.ANY)}
_PERMISSIONS = {p.name: p for p in (Permission.ALLOW, Permission.DENY)}
_ACL_FIELDS = {
    "resource_type",
    "resource_name",
    "pattern_type",
    "principal",
    "host",
    "operation",
    "permission",
}


@dataclass(frozen=True)
class Principal:
    user: str
    password: str

    @property
    def principal(self) -> str:
        return f"User:{self.user}"

    def __repr__(self) -> str:  # never print a password
        return f"Principal(user={self.user!r})"


@dataclass(frozen=True)
class AclRule:
    """One ACL binding of the set-up, with its resource name still logical."""

    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: Operation
    permission: Permission

    def binding(self, prefix: str) -> AclBinding:
        name = self.resource_name
        if self.resource_type != ResourceType.CLUSTER and name != WILDCARD:
            name = prefix + name
        return AclBinding(
            self.resource_type,
            name,
            self.pattern_type,
            self.principal,
            self.host,
            self.operation,
            self.permission,
        )

    def describe(self) -> str:
        return (
            f"{self.permission.name} {self.principal} {self.operation.name} on {self.resource_type.name} "
            f"{self.pattern_type.name.lower()} {self.resource_name!r}"
            + ("" if self.host == WILDCARD else f" from {self.host}")
        )


@dataclass(frozen=True)
class AclSetup:
    principals: tuple[Principal, ...]
    topics: tuple[str, ...]
    groups: tuple[str, ...]
    transactional_ids: tuple[str, ...]
    acls: tuple[AclRule, ...]
    source: str = "the default set-up"

    def bindings(self, prefix: str) -> list[AclBinding]:
        return [rule.binding(prefix) for rule in self.acls]


def load_setup(path: str | Path | None) -> AclSetup:
    """The set-up in ``path`` (TOML), or the embedded default when None."""
    if path is None:
        return parse_setup(DEFAULT_SETUP)
    try:
        text = Path(path).read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise SetupError(f"--setup {path}: cannot read it ({exc})") from None
    return parse_setup(text, source=str(path))


def parse_setup(text: str, *, source: str = "the default set-up") -> AclSetup:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SetupError(f"{source}: not valid TOML ({exc})") from None
    return setup_from_data(data, source=source)


def setup_from_data(data: dict, *, source: str = "the default set-up") -> AclSetup:
    """The set-up from TOML's tables (or any nesting of dicts and lists): a SetupError for anything else."""
    _only(data, {"principal", "resources", "acl"}, source)
    principals = tuple(
        _principal(entry, f"{source}: principal {n + 1}")
        for n, entry in enumerate(_tables(data.get("principal", []), f"{source}: principal"))
    )
    users = [p.user for p in principals]
    twice = sorted({u for u in users if users.count(u) > 1})
    if twice:
        raise SetupError(f"{source}: principal {twice[0]} is declared twice")
    resources = data.get("resources", {})
    if not isinstance(resources, dict):
        raise SetupError(f"{source}: [resources] must be a table")
    _only(resources, {"topics", "groups", "transactional_ids"}, f"{source}: [resources]")
    topics = _names(resources, "topics", source)
    for topic in topics:
        if not _TOPIC.fullmatch(topic):
            raise SetupError(f"{source}: topic {topic!r} is no legal Kafka topic name ([a-zA-Z0-9._-])")
    acls = tuple(
        _acl(entry, f"{source}: acl {n + 1}")
        for n, entry in enumerate(_tables(data.get("acl", []), f"{source}: acl"))
    )
    return AclSetup(
        principals,
        topics,
        _names(resources, "groups", source),
        _names(resources, "transactional_ids", source),
        acls,
        source,
    )


def _only(table: dict, known: set[str], where: str) -> None:
    unknown = sorted(set(table) - known)
    if unknown:
        raise SetupError(f"{where}: unknown field {unknown[0]!r} (known: {', '.join(sorted(known))})")


def _tables(value, where: str) -> list[dict]:
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise SetupError(f"{where}: write each as a [[table]]")
    return value


def _text(entry: dict, name: str, where: str, default: str | None = None) -> str:
    value = entry.get(name, default)
    if value is None:
        raise SetupError(f"{where}: {name} is missing")
    if not isinstance(value, str) or not value:
        raise SetupError(f"{where}: {name} must be a non-empty string, not {value!r}")
    return value


def _names(resources: dict, name: str, source: str) -> tuple[str, ...]:
    values = resources.get(name, [])
    if not isinstance(values, list) or not all(isinstance(v, str) and v for v in values):
        raise SetupError(f"{source}: resources.{name} must be a list of non-empty strings")
    if len(set(values)) != len(values):
        raise SetupError(f"{source}: resources.{name} names one twice")
    return tuple(values)


def _principal(entry: dict, where: str) -> Principal:
    _only(entry, {"user", "password"}, where)
    user = _text(entry, "user", where)
    if not _USER.fullmatch(user):
        raise SetupError(f"{where}: user {user!r} may hold only letters, digits, '.', '_' and '-'")
    password = _text(entry, "password", where)
    if any(c in password for c in '"\\;'):
        raise SetupError(f"{where}: the password of {user} may not hold '\"', '\\' or ';' (JAAS quoting)")
    return Principal(user, password)


def _choice(entry: dict, name: str, choices: dict, where: str, default: str | None = None):
    value = _text(entry, name, where, default)
    found = choices.get(value.upper().replace("-", "_"))
    if found is None:
        raise SetupError(f"{where}: unknown {name} {value!r} (one of {', '.join(choices)})")
    return found


def _acl(entry: dict, where: str) -> AclRule:
    _only(entry, _ACL_FIELDS, where)
    resource_type = _choice(entry, "resource_type", _RESOURCE_TYPES, where)
    pattern_type = _choice(entry, "pattern_type", _PATTERNS, where, "LITERAL")
    name = _text(
        entry, "resource_name", where, CLUSTER_NAME if resource_type == ResourceType.CLUSTER else None
    )
    if resource_type == ResourceType.CLUSTER and (
        name != CLUSTER_NAME or pattern_type != PatternType.LITERAL
    ):
        raise SetupError(f"{where}: the cluster resource is the literal {CLUSTER_NAME!r}")  # ResourcePattern
    if name == WILDCARD and pattern_type == PatternType.PREFIXED:
        raise SetupError(f"{where}: a prefixed pattern cannot be the wildcard '*'; use pattern_type LITERAL")
    principal = _text(entry, "principal", where)
    kind, colon, user = principal.partition(":")
    if kind != "User" or not colon or not (user == WILDCARD or _USER.fullmatch(user)):
        raise SetupError(f"{where}: principal {principal!r} must read User:<name> or User:*")
    host = _text(entry, "host", where, WILDCARD)
    if host != WILDCARD:
        try:
            ipaddress.ip_address(host)
        except ValueError:
            raise SetupError(f"{where}: host {host!r} must be '*' or an IP address") from None
    return AclRule(
        resource_type,
        name,
        pattern_type,
        principal,
        host,
        _choice(entry, "operation", _OPERATIONS, where),
        _choice(entry, "permission", _PERMISSIONS, where, "ALLOW"),
    )


# Each principal shows one rule of StandardAuthorizer: literal ALLOWs (alice), a prefixed ALLOW ALL that a
# literal DENY overrides on one topic (bob), the wildcard topic and the cluster (carol), nothing but a
# DENY (dave), no ACLs at all (erin).
DEFAULT_SETUP = """
[[principal]]
user = "alice"
password = "alice-secret"
[[principal]]
user = "bob"
password = "bob-secret"
[[principal]]
user = "carol"
password = "carol-secret"
[[principal]]
user = "dave"
password = "dave-secret"
[[principal]]
user = "erin"
password = "erin-secret"

[resources]
topics = ["orders", "pay-eu", "pay-audit"]
groups = ["billing"]
transactional_ids = ["ledger-tx"]

[[acl]]
resource_type = "TOPIC"
resource_name = "orders"
principal = "User:alice"
operation = "READ"
[[acl]]
resource_type = "TOPIC"
resource_name = "orders"
principal = "User:alice"
operation = "WRITE"
[[acl]]
resource_type = "GROUP"
resource_name = "billing"
principal = "User:alice"
operation = "READ"

[[acl]]
resource_type = "TOPIC"
resource_name = "pay-"
pattern_type = "PREFIXED"
principal = "User:bob"
operation = "ALL"
[[acl]]
resource_type = "TOPIC"
resource_name = "pay-audit"
principal = "User:bob"
operation = "WRITE"
permission = "DENY"
[[acl]]
resource_type = "TRANSACTIONAL_ID"
resource_name = "ledger-tx"
principal = "User:bob"
operation = "WRITE"

[[acl]]
resource_type = "TOPIC"
resource_name = "*"
principal = "User:carol"
operation = "DESCRIBE"
[[acl]]
resource_type = "CLUSTER"
principal = "User:carol"
operation = "CREATE"
[[acl]]
resource_type = "CLUSTER"
principal = "User:carol"
operation = "DESCRIBE"

[[acl]]
resource_type = "TOPIC"
resource_name = "orders"
principal = "User:dave"
operation = "READ"
permission = "DENY"
"""
