"""DescribeAcls (29), CreateAcls (30) and DeleteAcls (31) on a broker.

Describing reads the broker's own metadata image (``AclApis.handleDescribeAcls`` with
``StandardAuthorizer.acls``); without an authorizer it is SECURITY_DISABLED "No Authorizer is configured
on the broker". Creating and deleting are the controller's (``controller.acl_apis``): the broker reads
the request (a malformed one closes the connection, as Kafka's parse does) and forwards it whole
(KafkaApis: ``maybeForwardToController``), in process in combined mode. A controller that cannot be
reached gets the request's own error response with the forwarding error and no message.

Kafka's controller answers once the records are committed; the broker then waits (up to
request.timeout.ms) until its own image shows what the controller did, so that a DescribeAcls sent to
it right after a successful CreateAcls or DeleteAcls sees the change."""

from __future__ import annotations

import asyncio

from kconform.codecs.errors import Errors
from kconform.codecs.messages import CreateAclsResponse, DeleteAclsResponse, DescribeAclsResponse

from ..acl_wire import (
    NOT_AUTHORIZED,
    MalformedAclRequest,
    UnbuildableBinding,
    creation_bindings,
    creation_error_response,
    delete_filters,
    filter_error_response,
)
from ..controller.acl_apis import describe_acls as answer_describe_acls
from ..dispatch import CloseConnection
from ..forwarding import ForwardingFailed, ask_controller
from ..security.acls import AclBinding, Operation
from . import handles
from .admin_access import cluster_allowed

__all__ = ["create_acls", "delete_acls", "describe_acls"]

_IMAGE_POLL_S = 0.01


# AuthHelper.authorizeClusterOperation's exception names the request (its toString, not reproduced here)
@handles(29)
async def describe_acls(broker, ctx, request) -> DescribeAclsResponse:
    return answer_describe_acls(broker, ctx, request)


async def _until_image_shows(broker, shown) -> None:
    """Wait until ``shown(image)`` holds, or request.timeout.ms passes (the answer goes back anyway)."""
    clock = broker.clock
    deadline = clock.monotonic() + int(broker.config["request.timeout.ms"]) / 1000
    while not shown(broker.image) and clock.monotonic() < deadline:
        await asyncio.sleep(_IMAGE_POLL_S)


@handles(30)
async def create_acls(broker, ctx, request) -> CreateAclsResponse:
    try:
        bindings: list[AclBinding] | None = creation_bindings(request, ctx.api_version)
    except MalformedAclRequest:
        raise CloseConnection from None
    except UnbuildableBinding:
        bindings = None  # the controller answers for it
    if not cluster_allowed(broker, ctx, Operation.ALTER):  # AclApis.handleCreateAcls, before forwarding
        return creation_error_response(request, Errors.CLUSTER_AUTHORIZATION_FAILED, NOT_AUTHORIZED)
    try:
        response = await ask_controller(broker, ctx, request, frame=ctx.frame)
    except ForwardingFailed as exc:
        return creation_error_response(request, exc.code, None)
    if bindings is not None and len(bindings) == len(response.results):
        created = {b for b, r in zip(bindings, response.results, strict=True) if r.error_code == Errors.NONE}
        await _until_image_shows(broker, lambda image: all(b in image.acl_entries for b in created))
    return response


@handles(31)
async def delete_acls(broker, ctx, request) -> DeleteAclsResponse:
    try:
        delete_filters(request, ctx.api_version)
    except MalformedAclRequest:
        raise CloseConnection from None
    if not cluster_allowed(broker, ctx, Operation.ALTER):  # AclApis.handleDeleteAcls, before forwarding
        return filter_error_response(request, Errors.CLUSTER_AUTHORIZATION_FAILED, NOT_AUTHORIZED)
    try:
        response = await ask_controller(broker, ctx, request, frame=ctx.frame)
    except ForwardingFailed as exc:
        return filter_error_response(request, exc.code, None)
    gone = {
        AclBinding.of(
            m.resource_type,
            m.resource_name,
            m.pattern_type,
            m.principal,
            m.host,
            m.operation,
            m.permission_type,
        )  # fmt: skip
        for result in response.filter_results
        for m in result.matching_acls
    }
    await _until_image_shows(broker, lambda image: not any(b in image.acl_entries for b in gone))
    return response
