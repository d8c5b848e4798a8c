"""The authorization questions of the admin and cluster APIs (KafkaApis, ControllerApis, ConfigHelper).

A KRaft broker forwards most of these to the controller, which asks them there as the principal the
Envelope carries; this broker asks some before forwarding too, which saves the round trip and changes no
answer. Pure: no I/O."""

from __future__ import annotations

from kconform.codecs.constants import ConfigResourceType
from kconform.codecs.errors import Errors

from ..security.acls import Operation, ResourceType
from ..security.authorization import CLUSTER_NAME, allowed, filter_allowed

__all__ = ["AUTHORIZATION_MESSAGES", "cluster_allowed", "config_refusal", "topics_allowed"]

# Errors' own messages, which ``new ApiError(error)`` and ``error.exception`` carry
AUTHORIZATION_MESSAGES = {
    Errors.CLUSTER_AUTHORIZATION_FAILED: "Cluster authorization failed.",
    Errors.TOPIC_AUTHORIZATION_FAILED: "Topic authorization failed.",
    Errors.GROUP_AUTHORIZATION_FAILED: "Group authorization failed.",
}


def cluster_allowed(broker, ctx, operation: Operation) -> bool:
    """``AuthHelper.authorizeClusterOperation`` without the throw."""
    return allowed(broker, ctx, operation, ResourceType.CLUSTER, CLUSTER_NAME)


def config_refusal(broker, ctx, operation: Operation, resource_type: int, name: str) -> int | None:
    """The error for a config resource the principal may not describe or alter, else None
    (``ConfigHelper.handleDescribeConfigsRequest``, ``ControllerApis.authorizeAlterResource``): broker,
    broker-logger and client-metrics resources are the cluster's, topics and groups their own."""
    if resource_type == ConfigResourceType.TOPIC:
        kind, error = (ResourceType.TOPIC, name), Errors.TOPIC_AUTHORIZATION_FAILED
    elif resource_type == ConfigResourceType.GROUP:
        kind, error = (ResourceType.GROUP, name), Errors.GROUP_AUTHORIZATION_FAILED
    else:
        kind, error = (ResourceType.CLUSTER, CLUSTER_NAME), Errors.CLUSTER_AUTHORIZATION_FAILED
    return None if allowed(broker, ctx, operation, *kind) else error


def topics_allowed(broker, ctx, operation: Operation, names) -> set[str]:
    """``AuthHelper.filterByAuthorized`` on topics."""
    return filter_allowed(broker, ctx, operation, ResourceType.TOPIC, names)
