"""DescribeClientQuotas (48) and AlterClientQuotas (49) on a broker.

Describing reads the broker's own metadata image (``KafkaApis.handleDescribeClientQuotasRequest`` with
``ClientQuotasImage.describe``: see ``cluster_metadata.client_quotas``); a filter Kafka refuses fails the
whole response with its code and message and no entries. Altering is the controller's
(``controller.client_quotas``, ``ControllerApis.handleAlterClientQuotas``): the broker forwards the
request whole, in process in combined mode. A controller that cannot be reached gets Kafka's own error
response: every entry with the forwarding error (``AlterClientQuotasRequest.getErrorResponse``).

Authorization (KafkaApis): DESCRIBE_CONFIGS on CLUSTER to describe, ALTER_CONFIGS on CLUSTER to alter
(asked here before forwarding); without it the request's error response, CLUSTER_AUTHORIZATION_FAILED."""

from __future__ import annotations

from kconform.codecs.errors import Errors
from kconform.codecs.messages import AlterClientQuotasResponse, DescribeClientQuotasResponse

from ..cluster_metadata.client_quotas import DescribeRefused
from ..controller.client_quotas import java_order
from ..forwarding import ForwardingFailed, ask_controller
from ..forwarding_errors import error_message, request_error_response
from ..security.acls import Operation
from . import handles
from .admin_access import cluster_allowed

__all__ = ["alter_client_quotas", "describe_client_quotas"]


@handles(48)
async def describe_client_quotas(broker, ctx, request) -> DescribeClientQuotasResponse:
    if not cluster_allowed(broker, ctx, Operation.DESCRIBE_CONFIGS):
        return DescribeClientQuotasResponse(error_code=Errors.CLUSTER_AUTHORIZATION_FAILED, entries=None)
    try:
        found = broker.image.client_quotas.describe(request.components, request.strict)
    except DescribeRefused as exc:
        return DescribeClientQuotasResponse(error_code=exc.code, error_message=str(exc), entries=None)
    Entry = DescribeClientQuotasResponse.EntryData
    Entity = DescribeClientQuotasResponse.EntityData
    Value = DescribeClientQuotasResponse.ValueData
    return DescribeClientQuotasResponse(
        error_code=Errors.NONE,
        error_message=None,
        entries=[
            Entry(
                entity=[Entity(entity_type=k, entity_name=n) for k, n in java_order(entity)],
                values=[Value(key=key, value=value) for key, value in values.items()],
            )
            for entity, values in found
        ],
    )


@handles(49)
async def alter_client_quotas(broker, ctx, request) -> AlterClientQuotasResponse:
    try:
        if not cluster_allowed(broker, ctx, Operation.ALTER_CONFIGS):
            raise ForwardingFailed(Errors.CLUSTER_AUTHORIZATION_FAILED)  # the same error response
        return await ask_controller(broker, ctx, request, frame=ctx.frame)
    except ForwardingFailed as exc:
        return request_error_response(49, ctx.api_version, request, exc.code, error_message(exc.code))
