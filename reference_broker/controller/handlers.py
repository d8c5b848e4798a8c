"""The controller listener's APIs (Kafka's ``ControllerApis``), each a function of a ``ControllerNode``:
BrokerRegistration, BrokerHeartbeat, AlterPartition, AllocateProducerIds, the metadata log's Fetch,
Envelope (requests a broker forwards), ElectLeaders, AlterUserScramCredentials, the ACL APIs
(``acl_apis``), DescribeCluster (KIP-919: the cluster id for a broker's first start), ApiVersions,
AlterConfigs and IncrementalAlterConfigs (what a broker leaves after its own preprocessing), and the
topic operations the single node also serves (CreateTopics, DeleteTopics, CreatePartitions: the same
handler functions).

A broker in the same process (combined mode) calls these same functions without a socket."""

from __future__ import annotations

from kconform.codecs.constants import ConfigResourceType
from kconform.codecs.errors import Errors
from kconform.codecs.messages import (
    AllocateProducerIdsResponse,
    AlterConfigsResponse,
    AlterPartitionReassignmentsResponse,
    AlterUserScramCredentialsResponse,
    BrokerHeartbeatResponse,
    BrokerRegistrationResponse,
    DescribeClusterResponse,
    ElectLeadersResponse,
    FetchResponse,
    IncrementalAlterConfigsResponse,
    ListPartitionReassignmentsResponse,
)
from kconform.codecs.metadata_log import METADATA_TOPIC, METADATA_TOPIC_ID

from ..forwarding_errors import request_error_response
from ..handlers import Handler, handles
from ..handlers import api_versions as _api_versions
from ..handlers import sasl as _sasl
from ..handlers import topics as _topics
from ..handlers.admin_access import cluster_allowed
from ..security.acls import Operation
from . import acl_apis as _acl_apis
from .access import refused_unless_cluster
from .brokers import Refused
from .client_quotas import alter_response
from .configs import not_served
from .controller import METADATA_WATCH_KEY
from .envelope import answer_envelope
from .partition_change import Election

__all__ = ["CONTROLLER_HANDLERS"]

CONTROLLER_HANDLERS: dict[int, Handler] = {}
_CONTROLLER_ENDPOINTS = 2
_ELECTION_TYPES = {0: Election.PREFERRED, 1: Election.UNCLEAN}
# ConfigResource.Type's ids; any other is Type.UNKNOWN
_CONFIG_RESOURCE_TYPES = frozenset(
    {
        ConfigResourceType.TOPIC,
        ConfigResourceType.BROKER,
        ConfigResourceType.BROKER_LOGGER,
        ConfigResourceType.CLIENT_METRICS,
        ConfigResourceType.GROUP,
    }
)

handles(18, registry=CONTROLLER_HANDLERS)(_api_versions.api_versions)
# ControllerApis answers SaslHandshake and SaslAuthenticate after authentication as KafkaApis does, and
# listing them lets a secured controller listener's authenticator take them before it
handles(17, registry=CONTROLLER_HANDLERS)(_sasl.sasl_handshake)
handles(36, registry=CONTROLLER_HANDLERS)(_sasl.sasl_authenticate)


@handles(19, registry=CONTROLLER_HANDLERS)
async def create_topics(node, ctx, request):
    return await _topics.create_topics(node.controller, ctx, request)


@handles(20, registry=CONTROLLER_HANDLERS)
async def delete_topics(node, ctx, request):
    return await _topics.delete_topics(node.controller, ctx, request)


@handles(37, registry=CONTROLLER_HANDLERS)
async def create_partitions(node, ctx, request):
    return await _topics.create_partitions(node.controller, ctx, request)


@handles(62, registry=CONTROLLER_HANDLERS)
async def broker_registration(node, ctx, request) -> BrokerRegistrationResponse:
    if request.cluster_id != node.cluster_id:
        return BrokerRegistrationResponse(error_code=Errors.INCONSISTENT_CLUSTER_ID, broker_epoch=-1)
    try:
        epoch = node.controller.register_broker(request)
    except Refused as exc:
        return BrokerRegistrationResponse(error_code=exc.code, broker_epoch=-1)
    return BrokerRegistrationResponse(error_code=Errors.NONE, broker_epoch=epoch)


@handles(63, registry=CONTROLLER_HANDLERS)
async def broker_heartbeat(node, ctx, request) -> BrokerHeartbeatResponse:
    try:
        answer = node.controller.heartbeat(request)
    except Refused as exc:
        return BrokerHeartbeatResponse(error_code=exc.code, is_caught_up=False, is_fenced=True)
    return BrokerHeartbeatResponse(
        error_code=Errors.NONE,
        is_caught_up=answer.is_caught_up,
        is_fenced=answer.is_fenced,
        should_shut_down=answer.should_shut_down,
    )


@handles(56, registry=CONTROLLER_HANDLERS)
async def alter_partition(node, ctx, request):
    return node.controller.alter_partition(request, ctx.api_version)


@handles(67, registry=CONTROLLER_HANDLERS)
async def allocate_producer_ids(node, ctx, request) -> AllocateProducerIdsResponse:
    try:
        first, count = node.controller.allocate_producer_ids(request.broker_id, request.broker_epoch)
    except Refused as exc:
        return AllocateProducerIdsResponse(error_code=exc.code, producer_id_start=-1, producer_id_len=0)
    return AllocateProducerIdsResponse(error_code=Errors.NONE, producer_id_start=first, producer_id_len=count)


handles(58, registry=CONTROLLER_HANDLERS)(answer_envelope)


@handles(60, registry=CONTROLLER_HANDLERS)
async def describe_cluster(node, ctx, request) -> DescribeClusterResponse:
    if request.endpoint_type != _CONTROLLER_ENDPOINTS:
        return DescribeClusterResponse(
            error_code=Errors.MISMATCHED_ENDPOINT_TYPE if ctx.api_version else Errors.INVALID_REQUEST,
            error_message="The request was sent to an endpoint of type CONTROLLER",
        )
    host, port = node.advertised_address
    return DescribeClusterResponse(
        endpoint_type=_CONTROLLER_ENDPOINTS,
        cluster_id=node.cluster_id,
        controller_id=node.node_id,
        brokers=[DescribeClusterResponse.DescribeClusterBroker(broker_id=node.node_id, host=host, port=port)],
    )


@handles(43, registry=CONTROLLER_HANDLERS)
async def elect_leaders(node, ctx, request) -> ElectLeadersResponse:
    """``ReplicationControlManager.electLeaders``: a null partition list means every partition
    (preferred elections only); per partition UNKNOWN_TOPIC_OR_PARTITION, ELECTION_NOT_NEEDED,
    PREFERRED_LEADER_NOT_AVAILABLE or ELIGIBLE_LEADERS_NOT_AVAILABLE."""
    if (refusal := refused_unless_cluster(node, ctx, request, Operation.ALTER)) is not None:
        return refusal
    controller = node.controller
    kind = _ELECTION_TYPES.get(request.election_type if ctx.api_version >= 1 else 0)
    if kind is None:
        return ElectLeadersResponse(error_code=Errors.INVALID_REQUEST, replica_election_results=[])
    if request.topic_partitions is None:
        wanted = [(t.name, [p.index for p in t.partitions]) for t in controller.topics]
    else:
        wanted = [(t.topic, list(t.partitions)) for t in request.topic_partitions]
    results = []
    for name, indexes in wanted:
        topic = controller.topics.get(name)
        partitions = []
        for index in indexes:
            if topic is None or not 0 <= index < len(topic.partitions):
                code = Errors.UNKNOWN_TOPIC_OR_PARTITION
            else:
                code = controller.elect(topic, index, kind)
            if request.topic_partitions is None and code == Errors.ELECTION_NOT_NEEDED:
                continue  # an election of everything lists only what it tried
            partitions.append(ElectLeadersResponse.PartitionResult(partition_id=index, error_code=code))
        if partitions:
            results.append(
                ElectLeadersResponse.ReplicaElectionResult(topic=name, partition_result=partitions)
            )
    return ElectLeadersResponse(error_code=Errors.NONE, replica_election_results=results)


@handles(1, registry=CONTROLLER_HANDLERS)
async def metadata_fetch(node, ctx, request) -> FetchResponse:
    """A broker following the metadata log (KRaft's observer Fetch): records from its fetch offset,
    waiting up to max_wait_ms when there are none yet. Only ``__cluster_metadata-0`` is served."""
    version, controller = ctx.api_version, node.controller
    if request.cluster_id is not None and request.cluster_id != node.cluster_id:
        return FetchResponse(error_code=Errors.INCONSISTENT_CLUSTER_ID, responses=[])
    wanted = [
        (topic, p)
        for topic in request.topics
        for p in topic.partitions
        if (topic.topic_id == METADATA_TOPIC_ID if version >= 13 else topic.topic == METADATA_TOPIC)
        and p.partition == 0
    ]
    if not wanted:
        return FetchResponse(error_code=Errors.INVALID_REQUEST, responses=[])
    topic, p = wanted[0]
    log = controller.metadata
    if p.fetch_offset > log.end_offset:
        data = FetchResponse.PartitionData(
            partition_index=0, error_code=Errors.OFFSET_OUT_OF_RANGE, high_watermark=log.end_offset
        )
    else:
        if p.fetch_offset == log.end_offset and request.max_wait_ms > 0:
            await controller.purgatory.wait_until(
                [METADATA_WATCH_KEY],
                lambda: log.end_offset > p.fetch_offset,
                request.max_wait_ms / 1000,
                clock=controller.clock,
            )
        max_bytes = max(1, min(p.partition_max_bytes, request.max_bytes))
        data = FetchResponse.PartitionData(
            partition_index=0,
            error_code=Errors.NONE,
            high_watermark=log.end_offset,
            last_stable_offset=log.end_offset,
            log_start_offset=0,
            records=log.read(p.fetch_offset, max_bytes) if p.fetch_offset < log.end_offset else b"",
        )
    response_topic = FetchResponse.FetchableTopicResponse(
        topic=topic.topic if version < 13 else "", topic_id=topic.topic_id, partitions=[data]
    )
    return FetchResponse(error_code=Errors.NONE, session_id=0, responses=[response_topic])


@handles(45, registry=CONTROLLER_HANDLERS)
async def alter_partition_reassignments(node, ctx, request) -> AlterPartitionReassignmentsResponse:
    """``ReplicationControlManager.alterPartitionReassignments``: each partition moves to its target
    replicas (or, with null replicas, back from a reassignment in progress)."""
    if (refusal := refused_unless_cluster(node, ctx, request, Operation.ALTER)) is not None:
        return refusal
    controller = node.controller
    responses = []
    for topic in request.topics:
        partitions = []
        for p in topic.partitions:
            code, message = controller.reassign(topic.name, p.partition_index, p.replicas)
            partitions.append(
                AlterPartitionReassignmentsResponse.ReassignablePartitionResponse(
                    partition_index=p.partition_index, error_code=code, error_message=message
                )
            )
        responses.append(
            AlterPartitionReassignmentsResponse.ReassignableTopicResponse(
                name=topic.name, partitions=partitions
            )
        )
    return AlterPartitionReassignmentsResponse(
        error_code=Errors.NONE,
        responses=responses,
        allow_replication_factor_change=request.allow_replication_factor_change,
    )


@handles(46, registry=CONTROLLER_HANDLERS)
async def list_partition_reassignments(node, ctx, request) -> ListPartitionReassignmentsResponse:
    """Only partitions being reassigned are listed; unknown topics are left out."""
    if (refusal := refused_unless_cluster(node, ctx, request, Operation.DESCRIBE)) is not None:
        return refusal
    image = node.controller.image
    if request.topics is None:
        wanted = [(t.name, None) for t in image]
    else:
        wanted = [(t.name, set(t.partition_indexes)) for t in request.topics]
    topics = []
    for name, indexes in wanted:
        topic = image.get(name)
        if topic is None:
            continue
        ongoing = [
            ListPartitionReassignmentsResponse.OngoingPartitionReassignment(
                partition_index=p.index,
                replicas=list(p.replicas),
                adding_replicas=list(p.adding_replicas),
                removing_replicas=list(p.removing_replicas),
            )
            for p in topic.partitions
            if p.is_reassigning and (indexes is None or p.index in indexes)
        ]
        if ongoing:
            topics.append(
                ListPartitionReassignmentsResponse.OngoingTopicReassignment(name=name, partitions=ongoing)
            )
    return ListPartitionReassignmentsResponse(error_code=Errors.NONE, topics=topics)


def _alter_configs(node, request, *, incremental: bool) -> list[tuple[int, str, int, str | None]]:
    """``ControllerApis.handleLegacyAlterConfigs`` / ``handleIncrementalAlterConfigs``: (type, name, error
    code, message) per result. An unknown resource type is UNSUPPORTED_VERSION; a resource named twice
    gets one INVALID_REQUEST result and is left out (a third naming is passed over); a config named twice
    keeps its last value. Kafka lists the controller's results in HashMap order, here in request order;
    BROKER_LOGGER results (IncrementalAlterConfigs only, not served) come last."""
    early, loggers = [], []
    changes: dict[tuple[int, str], object] = {}
    duplicates: set[tuple[int, str]] = set()
    for resource in request.resources:
        kind, name = resource.resource_type, resource.resource_name
        if incremental and kind == ConfigResourceType.BROKER_LOGGER:
            error = not_served(kind)
            loggers.append((kind, name, error.code, error.message))
        elif kind not in _CONFIG_RESOURCE_TYPES:
            early.append((kind, name, Errors.UNSUPPORTED_VERSION, f"Unknown resource type {kind}."))
        elif (kind, name) in changes:
            del changes[(kind, name)]
            duplicates.add((kind, name))
            early.append((kind, name, Errors.INVALID_REQUEST, "Duplicate resource."))
        elif (kind, name) not in duplicates:
            if incremental:
                ops = {c.name: (c.name, c.config_operation, c.value) for c in resource.configs}
                changes[(kind, name)] = list(ops.values())
            else:
                changes[(kind, name)] = {c.name: c.value for c in resource.configs}
    errors = node.controller.alter_configs(
        [(kind, name, change) for (kind, name), change in changes.items()],
        incremental=incremental,
        validate_only=request.validate_only,
    )
    results = [
        (kind, name, error.code if error else Errors.NONE, error.message if error else None)
        for (kind, name), error in zip(changes, errors, strict=True)
    ]
    return early + results + loggers


@handles(33, registry=CONTROLLER_HANDLERS)
async def alter_configs(node, ctx, request) -> AlterConfigsResponse:
    Result = AlterConfigsResponse.AlterConfigsResourceResponse
    return AlterConfigsResponse(
        responses=[
            Result(error_code=code, error_message=message, resource_type=kind, resource_name=name)
            for kind, name, code, message in _alter_configs(node, request, incremental=False)
        ]
    )


@handles(44, registry=CONTROLLER_HANDLERS)
async def incremental_alter_configs(node, ctx, request) -> IncrementalAlterConfigsResponse:
    Result = IncrementalAlterConfigsResponse.AlterConfigsResourceResponse
    return IncrementalAlterConfigsResponse(
        responses=[
            Result(error_code=code, error_message=message, resource_type=kind, resource_name=name)
            for kind, name, code, message in _alter_configs(node, request, incremental=True)
        ]
    )


@handles(51, registry=CONTROLLER_HANDLERS)
async def alter_user_scram_credentials(node, ctx, request) -> AlterUserScramCredentialsResponse:
    """``ControllerApis.handleAlterUserScramCredentials``: the rules are ``controller.scram``'s."""
    if not cluster_allowed(node.controller, ctx, Operation.ALTER):  # authorizeClusterOperation, first
        return request_error_response(51, ctx.api_version, request, Errors.CLUSTER_AUTHORIZATION_FAILED)
    return AlterUserScramCredentialsResponse(results=node.controller.alter_scram_credentials(request))


@handles(49, registry=CONTROLLER_HANDLERS)
async def alter_client_quotas(node, ctx, request):
    """``ControllerApis.handleAlterClientQuotas``: the rules are ``controller.client_quotas``'s."""
    if not cluster_allowed(node.controller, ctx, Operation.ALTER_CONFIGS):
        return request_error_response(49, ctx.api_version, request, Errors.CLUSTER_AUTHORIZATION_FAILED)
    results = node.controller.alter_client_quotas(request.entries, request.validate_only)
    return alter_response(results)


@handles(29, registry=CONTROLLER_HANDLERS)
async def describe_acls(node, ctx, request):
    """``ControllerApis`` serves DescribeAcls from the controller's own image, as a broker does."""
    return _acl_apis.describe_acls(node.controller, ctx, request)


handles(30, registry=CONTROLLER_HANDLERS)(_acl_apis.create_acls)
handles(31, registry=CONTROLLER_HANDLERS)(_acl_apis.delete_acls)
