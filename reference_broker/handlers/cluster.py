"""DescribeCluster (key 60): the brokers, the cluster id and the controller id.

Kafka's rules (KafkaApis.handleDescribeCluster, AuthHelper.computeDescribeClusterResponse): the request's
endpoint type must be one Kafka knows (1 brokers, 2 controllers; any other is UNSUPPORTED_ENDPOINT_TYPE,
INVALID_REQUEST at v0) and the one this listener serves (brokers; asking a broker for controllers is
MISMATCHED_ENDPOINT_TYPE); on error every other field keeps its default. A KRaft broker names a live
broker as the controller (clients cannot reach KRaft controllers through it). Cluster authorized
operations are filled only when asked for: those the ACLs allow on CLUSTER, 0 without DESCRIBE on it (the
request itself needs no ACL).

v2 (KIP-1073) lists fenced brokers too when asked (include_fenced_brokers) and marks each broker's
is_fenced: ``handleDescribeCluster`` walks ``metadataCache.getBrokerNodes`` and keeps a node when
``!node.isFenced || includeFencedBrokers``, so before v2 (where the flag is false) only unfenced brokers
are listed. This node is the cluster and is never fenced while it answers, so every version lists it,
unfenced."""

from __future__ import annotations

from kconform.codecs.errors import Errors
from kconform.codecs.messages import DescribeClusterResponse

from ..security.acls import Operation, ResourceType
from ..security.authorization import CLUSTER_NAME, authorized_operations
from . import handles
from .admin_access import cluster_allowed

BROKER_ENDPOINTS, CONTROLLER_ENDPOINTS = 1, 2
_ENDPOINT_NAMES = {BROKER_ENDPOINTS: "BROKER", CONTROLLER_ENDPOINTS: "CONTROLLER"}
_UNSET = -(2**31)


@handles(60)
async def describe_cluster(broker, ctx, request) -> DescribeClusterResponse:
    wanted = request.endpoint_type
    if wanted not in _ENDPOINT_NAMES:
        return DescribeClusterResponse(
            error_code=Errors.INVALID_REQUEST if ctx.api_version == 0 else Errors.UNSUPPORTED_ENDPOINT_TYPE,
            error_message=f"Unsupported endpoint type {wanted}",
        )
    if wanted != BROKER_ENDPOINTS:
        return DescribeClusterResponse(
            error_code=Errors.INVALID_REQUEST if ctx.api_version == 0 else Errors.MISMATCHED_ENDPOINT_TYPE,
            error_message=(
                f"The request was sent to an endpoint of type {_ENDPOINT_NAMES[BROKER_ENDPOINTS]}, but we "
                f"wanted an endpoint of type {_ENDPOINT_NAMES[wanted]}"
            ),
        )
    include_fenced = ctx.api_version >= 2 and request.include_fenced_brokers
    nodes = []
    for registered in broker.image.brokers.values():
        endpoint = broker.endpoint_of(registered.broker_id, ctx.listener)
        if endpoint is not None:
            nodes.append((registered.broker_id, *endpoint, registered.rack, registered.fenced))
    brokers = [
        DescribeClusterResponse.DescribeClusterBroker(
            broker_id=node_id, host=h, port=p, rack=rack, is_fenced=fenced
        )
        for node_id, h, p, rack, fenced in nodes
        if not fenced or include_fenced
    ]
    return DescribeClusterResponse(
        endpoint_type=BROKER_ENDPOINTS,
        cluster_id=broker.cluster_id,
        controller_id=broker.random_alive_broker_id(),
        brokers=brokers,
        cluster_authorized_operations=_cluster_operations(broker, ctx, request),
    )


def _cluster_operations(broker, ctx, request) -> int:
    """AuthHelper.computeDescribeClusterResponse: the schema's default unless asked for."""
    if not request.include_cluster_authorized_operations:
        return _UNSET
    if not cluster_allowed(broker, ctx, Operation.DESCRIBE):
        return 0
    return authorized_operations(broker, ctx, ResourceType.CLUSTER, CLUSTER_NAME)
