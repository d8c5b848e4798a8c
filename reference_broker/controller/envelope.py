"""Envelope (58) on the controller: a request a broker forwards, answered as if its client had sent it
here (``ControllerApis.handleEnvelopeRequest``, ``EnvelopeUtils``), in Kafka's order of checks:
the sending broker needs CLUSTER_ACTION on the cluster (CLUSTER_AUTHORIZATION_FAILED); the client's
principal must deserialize (PRINCIPAL_DESERIALIZATION_FAILURE) and its address be 4 or 16 bytes
(INVALID_REQUEST); a header that cannot be read is UNSUPPORTED_VERSION; an API Kafka does not forward is
INVALID_REQUEST; a body that cannot be read is UNSUPPORTED_VERSION. The inner request is then authorized
as the client's principal at the client's address."""

from __future__ import annotations

import ipaddress

from kconform.codecs import DecodeError
from kconform.codecs.errors import Errors
from kconform.codecs.framing import decode_request_header
from kconform.codecs.messages import EnvelopeResponse

from ..dispatch import CloseConnection, whole_frame
from ..security.acls import Operation, ResourceType
from ..security.authorization import CLUSTER_NAME, allowed
from ..security.principal_serde import PrincipalDeserializationError, deserialize

__all__ = ["FORWARDABLE_APIS", "answer_envelope"]

# ApiKeys' ``forwardable`` flag: CreateTopics, DeleteTopics, CreateAcls, DeleteAcls, AlterConfigs,
# CreatePartitions, the three delegation-token APIs, ElectLeaders, IncrementalAlterConfigs, the two
# reassignment APIs, AlterClientQuotas, AlterUserScramCredentials, UpdateFeatures, UnregisterBroker,
# AllocateProducerIds, DescribeQuorum, AddRaftVoter, RemoveRaftVoter
FORWARDABLE_APIS = frozenset(
    {19, 20, 30, 31, 33, 37, 38, 39, 40, 43, 44, 45, 46, 49, 51, 55, 57, 64, 67, 80, 81}
)


def _refused(code: int) -> EnvelopeResponse:
    return EnvelopeResponse(error_code=code, response_data=None)


def _client_peer(address: bytes) -> str | None:
    """``host:0`` for the client's raw address as ``client_host`` reads it, None if it is no address."""
    if len(address) not in (4, 16):
        return None
    host = ipaddress.ip_address(bytes(address))
    return f"{host}:0" if host.version == 4 else f"[{host}]:0"


async def answer_envelope(node, ctx, request) -> EnvelopeResponse:
    if not allowed(node.controller, ctx, Operation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME):
        return _refused(Errors.CLUSTER_AUTHORIZATION_FAILED)
    try:
        principal = deserialize(request.request_principal)
    except PrincipalDeserializationError:
        return _refused(Errors.PRINCIPAL_DESERIALIZATION_FAILURE)
    peer = _client_peer(request.client_host_address)
    if peer is None:
        return _refused(Errors.INVALID_REQUEST)
    data = bytes(request.request_data)
    try:
        header, _ = decode_request_header(data)
    except DecodeError:
        return _refused(Errors.UNSUPPORTED_VERSION)
    if header.request_api_key not in FORWARDABLE_APIS:
        return _refused(Errors.INVALID_REQUEST)
    try:
        answer = await node.dispatcher.handle(
            data, peer=peer, connection_id=ctx.connection_id, principal=principal
        )
    except CloseConnection:  # a body that cannot be read, or a version the controller does not serve
        return _refused(Errors.UNSUPPORTED_VERSION)
    return EnvelopeResponse(error_code=Errors.NONE, response_data=whole_frame(answer))
