"""DescribeUserScramCredentials (50) and AlterUserScramCredentials (51) on a broker.

Describing reads the broker's own metadata image (``KafkaApis.handleDescribeUserScramCredentialsRequest``
with ``ScramImage.describe``: see ``cluster_metadata.scram``), so a broker answers with the credentials
it has replayed so far. Altering is the controller's (``controller.scram``): the broker forwards the
request whole (Kafka's KRaft broker always forwards it), in process in combined mode. A controller that
cannot be reached gets Kafka's own error response: every user named, sorted, with the forwarding error
(``AlterUserScramCredentialsRequest.getErrorResponse``).

Authorization (KafkaApis): DESCRIBE on the CLUSTER resource to describe, else the request's error
response (the top-level error and one result per user named); ALTER on it to alter, asked here before
forwarding, else every user named refused."""

from __future__ import annotations

from kconform.codecs.errors import Errors
from kconform.codecs.messages import AlterUserScramCredentialsResponse, DescribeUserScramCredentialsResponse

from ..forwarding import ForwardingFailed, ask_controller
from ..forwarding_errors import error_message, request_error_response
from ..security.acls import Operation
from . import handles
from .admin_access import cluster_allowed

__all__ = ["alter_user_scram_credentials", "describe_user_scram_credentials"]


@handles(50)
async def describe_user_scram_credentials(broker, ctx, request) -> DescribeUserScramCredentialsResponse:
    users = None if request.users is None else [u.name for u in request.users]
    Result = DescribeUserScramCredentialsResponse.DescribeUserScramCredentialsResult
    if not cluster_allowed(broker, ctx, Operation.DESCRIBE):
        refused = Errors.CLUSTER_AUTHORIZATION_FAILED  # the error's own exception: no message
        return DescribeUserScramCredentialsResponse(
            error_code=refused, results=[Result(user="", error_code=refused) for _ in users or ()]
        )
    Info = DescribeUserScramCredentialsResponse.CredentialInfo
    return DescribeUserScramCredentialsResponse(
        results=[
            Result(
                user=d.user,
                error_code=d.error_code,
                error_message=d.error_message,
                credential_infos=[Info(mechanism=m, iterations=i) for m, i in d.credentials],
            )
            for d in broker.image.scram.describe(users)
        ]
    )


@handles(51)
async def alter_user_scram_credentials(broker, ctx, request) -> AlterUserScramCredentialsResponse:
    try:
        if not cluster_allowed(broker, ctx, Operation.ALTER):
            raise ForwardingFailed(Errors.CLUSTER_AUTHORIZATION_FAILED)  # the same error response
        return await ask_controller(broker, ctx, request, frame=ctx.frame)
    except ForwardingFailed as exc:
        return request_error_response(51, ctx.api_version, request, exc.code, error_message(exc.code))
