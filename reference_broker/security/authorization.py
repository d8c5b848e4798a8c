"""The authorization questions every data-plane handler asks, as Kafka's ``AuthHelper`` asks them.

Each takes the broker (for its ``authorizer``: None when ``authorizer.class.name`` is empty, and then
everything is allowed, as ``AuthHelper`` does with no authorizer) and the request context (its principal,
and the peer's address as the host an ACL names). Pure: no I/O, nothing kept between requests."""

from __future__ import annotations

from collections.abc import Iterable

from .acls import Operation, ResourceType
from .authorizer import CLUSTER_NAME

__all__ = [
    "CLUSTER_NAME",
    "SUPPORTED_OPERATIONS",
    "allowed",
    "allowed_any",
    "authorized_operations",
    "client_host",
    "filter_allowed",
    "topics_described_or_cluster_action",
]

_O = Operation
# AclEntry.supportedOperations: the operations an ``authorized_operations`` bit set is made of. Groups
# keep the three this broker has always reported (READ, DELETE, DESCRIBE); Kafka 3.8+ adds the configs
# operations for the group configs it has and this broker does not.
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[Operation, ...]] = {
    ResourceType.TOPIC: (
        _O.READ, _O.WRITE, _O.CREATE, _O.DELETE, _O.ALTER, _O.DESCRIBE, _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS,
    ),
    ResourceType.GROUP: (_O.READ, _O.DELETE, _O.DESCRIBE),
    ResourceType.CLUSTER: (
        _O.CREATE, _O.ALTER, _O.DESCRIBE, _O.CLUSTER_ACTION, _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS,
        _O.IDEMPOTENT_WRITE,
    ),
    ResourceType.TRANSACTIONAL_ID: (_O.WRITE, _O.DESCRIBE),
}  # fmt: skip


def client_host(peer: str) -> str:
    """The host part of ``host:port`` (an IPv6 address without its brackets): what an ACL's host
    is compared with (Kafka uses the client's InetAddress)."""
    host = peer.rsplit(":", 1)[0] if ":" in peer else peer
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host


def allowed(broker, ctx, operation: Operation, resource_type: ResourceType, name: str) -> bool:
    """``AuthHelper.authorize`` on the literal resource ``name``."""
    authorizer = broker.authorizer
    if authorizer is None:
        return True
    return authorizer.authorize(ctx.principal, client_host(ctx.peer), operation, resource_type, name)


def allowed_any(broker, ctx, operation: Operation, resource_type: ResourceType) -> bool:
    """``AuthHelper.authorizeByResourceType``: may the principal do ``operation`` on some resource."""
    authorizer = broker.authorizer
    if authorizer is None:
        return True
    return authorizer.authorize_any(ctx.principal, client_host(ctx.peer), operation, resource_type)


def filter_allowed(
    broker, ctx, operation: Operation, resource_type: ResourceType, names: Iterable[str]
) -> set[str]:
    """``AuthHelper.filterByAuthorized``: the names among ``names`` the principal may use, each asked
    once however often it is named."""
    return {name for name in set(names) if allowed(broker, ctx, operation, resource_type, name)}


def authorized_operations(broker, ctx, resource_type: ResourceType, name: str) -> int:
    """``AuthHelper.authorizedOperations``: bit n for each supported operation n allowed on the
    resource (all of them with no authorizer)."""
    bits = 0
    for operation in SUPPORTED_OPERATIONS[resource_type]:
        if allowed(broker, ctx, operation, resource_type, name):
            bits |= 1 << int(operation)
    return bits


def topics_described_or_cluster_action(broker, ctx, names: Iterable[str]) -> set[str]:
    """The topics a principal may ask about where a broker's CLUSTER_ACTION stands for all of them and a
    client needs DESCRIBE on each (KafkaApis.handleOffsetForLeaderEpochRequest, KIP-320)."""
    names = set(names)
    if allowed(broker, ctx, Operation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME):
        return names
    return filter_allowed(broker, ctx, Operation.DESCRIBE, ResourceType.TOPIC, names)
