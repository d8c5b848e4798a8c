"""The cluster operations ``ControllerApis`` asks for before an API's work (``authorizeClusterOperation``,
which throws): without it the request gets its own error response with CLUSTER_AUTHORIZATION_FAILED
(``forwarding_errors``): ElectLeaders and AlterPartitionReassignments need ALTER,
ListPartitionReassignments DESCRIBE."""

from __future__ import annotations

from kconform.codecs.errors import Errors

from ..forwarding_errors import request_error_response
from ..handlers.admin_access import cluster_allowed
from ..security.acls import Operation

__all__ = ["refused_unless_cluster"]


def refused_unless_cluster(node, ctx, request, operation: Operation):
    """None when the principal may do ``operation`` on the cluster, else the refusal to answer with."""
    if cluster_allowed(node.controller, ctx, operation):
        return None
    return request_error_response(ctx.api_key, ctx.api_version, request, Errors.CLUSTER_AUTHORIZATION_FAILED)
