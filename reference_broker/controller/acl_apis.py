"""CreateAcls (30) and DeleteAcls (31) where Kafka runs them in KRaft: on the controller (``AclApis`` under
``ControllerApis``; a broker forwards both whole), each a function of a ``ControllerNode``.

Kafka's order: the request is parsed (``acl_wire``: a malformed one closes the connection); without an
authorizer every creation or filter gets SECURITY_DISABLED "No Authorizer is configured."; a creation
naming a CLUSTER resource other than kafka-cluster, or an empty name, is INVALID_REQUEST with
``AclApis``' own message; the rest go to ``controller.acls`` (``StandardAuthorizer.createAcls`` /
``deleteAcls`` through the ``AclMutator``, which is the controller itself). ``answer_describe`` is
DescribeAcls from an image, which the broker and the controller both serve."""

from __future__ import annotations

from kconform.codecs.errors import Errors
from kconform.codecs.messages import CreateAclsResponse, DeleteAclsResponse, DescribeAclsResponse

from ..acl_authorizer import authorizer_configured
from ..acl_wire import (
    NOT_AUTHORIZED,
    MalformedAclRequest,
    UnbuildableBinding,
    creation_bindings,
    creation_error_response,
    delete_filters,
    describe_filter,
    described_resources,
    filter_error_response,
    matching_acl,
)
from ..dispatch import CloseConnection
from ..handlers.admin_access import cluster_allowed
from ..security.acls import AclBinding, Operation, ResourceType
from ..security.authorizer import CLUSTER_NAME
from .acls import AclOutcome

__all__ = ["answer_describe", "create_acls", "delete_acls", "describe_acls"]

NO_AUTHORIZER = "No Authorizer is configured."


def _broker_side_error(binding: AclBinding) -> AclOutcome | None:
    """``AclApis.handleCreateAcls``' own checks, made before the authorizer sees the binding."""
    if binding.resource_type == ResourceType.CLUSTER and binding.resource_name != CLUSTER_NAME:
        return AclOutcome(
            Errors.INVALID_REQUEST, f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
        )
    if not binding.resource_name:
        return AclOutcome(Errors.INVALID_REQUEST, "Invalid empty resource name")
    return None


async def create_acls(node, ctx, request) -> CreateAclsResponse:
    try:
        bindings = creation_bindings(request, ctx.api_version)
    except MalformedAclRequest:
        raise CloseConnection from None
    except UnbuildableBinding:
        bindings = None
    if not cluster_allowed(node.controller, ctx, Operation.ALTER):  # authorizeClusterOperation
        return creation_error_response(request, Errors.CLUSTER_AUTHORIZATION_FAILED, NOT_AUTHORIZED)
    if not authorizer_configured(node.controller.config):
        return creation_error_response(request, Errors.SECURITY_DISABLED, NO_AUTHORIZER)
    if bindings is None:  # IllegalArgumentException: ApiError keeps no message for UNKNOWN_SERVER_ERROR
        return creation_error_response(request, Errors.UNKNOWN_SERVER_ERROR, None)
    outcomes: dict[int, AclOutcome] = {}
    valid: list[tuple[int, AclBinding]] = []
    for index, binding in enumerate(bindings):
        error = _broker_side_error(binding)
        if error is None:
            valid.append((index, binding))
        else:
            outcomes[index] = error
    created = node.controller.create_acls([binding for _, binding in valid])
    outcomes.update((index, outcome) for (index, _), outcome in zip(valid, created, strict=True))
    Result = CreateAclsResponse.AclCreationResult
    return CreateAclsResponse(
        results=[
            Result(error_code=o.code, error_message=o.message)
            if o.code != Errors.NONE
            else Result()  # success leaves the schema's defaults
            for o in (outcomes[i] for i in range(len(bindings)))
        ]
    )


async def delete_acls(node, ctx, request) -> DeleteAclsResponse:
    try:
        filters = delete_filters(request, ctx.api_version)
    except MalformedAclRequest:
        raise CloseConnection from None
    if not cluster_allowed(node.controller, ctx, Operation.ALTER):  # authorizeClusterOperation
        return filter_error_response(request, Errors.CLUSTER_AUTHORIZATION_FAILED, NOT_AUTHORIZED)
    if not authorizer_configured(node.controller.config):
        return filter_error_response(request, Errors.SECURITY_DISABLED, NO_AUTHORIZER)
    Result = DeleteAclsResponse.DeleteAclsFilterResult
    return DeleteAclsResponse(
        filter_results=[
            Result(
                error_code=o.code,
                error_message=o.message,  # ApiError.NONE's message is null
                matching_acls=[matching_acl(b) for b in o.deleted],
            )
            for o in node.controller.delete_acls(filters)
        ]
    )


def describe_acls(node, ctx, request) -> DescribeAclsResponse:
    """DescribeAcls on a broker or the controller (``node``: its ``config``, ``image`` and
    ``authorizer``): DESCRIBE on the cluster first (``AclApis.handleDescribeAcls``), then the matches."""
    if not cluster_allowed(node, ctx, Operation.DESCRIBE):
        return DescribeAclsResponse(
            error_code=Errors.CLUSTER_AUTHORIZATION_FAILED, error_message=NOT_AUTHORIZED
        )
    return answer_describe(node.config, node.image, ctx, request)


def answer_describe(config, image, ctx, request) -> DescribeAclsResponse:
    """DescribeAcls from ``image`` for a node with ``config``, once the principal may ask."""
    try:
        acl_filter = describe_filter(request, ctx.api_version)
    except MalformedAclRequest:
        raise CloseConnection from None
    if not authorizer_configured(config):
        return DescribeAclsResponse(
            error_code=Errors.SECURITY_DISABLED, error_message="No Authorizer is configured on the broker"
        )
    matching = [b for b in image.acls() if acl_filter.matches(b)]
    return DescribeAclsResponse(resources=described_resources(matching))
