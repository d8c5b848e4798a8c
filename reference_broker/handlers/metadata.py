"""Metadata (key 3): brokers, cluster id, controller, and topics with their partitions.

Kafka's rules (KafkaApis.handleTopicMetadataRequest): a null topic list means every topic (v1+; an
empty list means all topics at v0 and none from v1); unknown topics are created when the request allows
it (v4+, always before) and auto.create.topics.enable is on, and are reported as
UNKNOWN_TOPIC_OR_PARTITION this time (a KRaft broker forwards the creation to the controller and
answers before it lands: AutoTopicCreationManager.sendCreateTopicRequest), found by the next request;
illegal names get INVALID_TOPIC_EXCEPTION; topics asked for by id (v12+) that do not exist get
UNKNOWN_TOPIC_ID, and v10-11 requests with a null name or a topic id fail whole with INVALID_REQUEST
(MetadataRequest.getErrorResponse). v13 (KIP-1102) adds a top-level error code: a successful answer
leaves it NONE (MetadataResponse.prepareResponse never sets it); only MetadataRequest.getErrorResponse,
Kafka's answer to an exception out of the handler, fills it in. REBOOTSTRAP_REQUIRED, which clients
act on (NetworkClient.DefaultMetadataUpdater.handleSuccessfulResponse), is on no code path of Kafka's
broker."""

from __future__ import annotations

from kconform.codecs.errors import Errors
from kconform.codecs.messages import MetadataResponse

from ..topic_names import INTERNAL_TOPICS, topic_name_error
from . import handles
from .metadata_access import TopicAccess

# Every operation on a topic, as reported with no authorizer (Kafka's AclOperation bits: READ 3 ..
# DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11, as a bit set).
_ALL_TOPIC_OPERATIONS = sum(1 << op for op in (3, 4, 5, 6, 7, 8, 10, 11))
_UNSET = -2147483648


def _partition_metadata(broker, p, listener: str | None) -> MetadataResponse.MetadataResponsePartition:
    """``KRaftMetadataCache.getPartitionMetadata``: a leader that is none or unregistered is
    LEADER_NOT_AVAILABLE (leader -1, its epoch still given); replicas and ISR as registered; replicas on
    fenced or unregistered brokers are offline."""
    image = broker.image
    leader = p.leader if broker.endpoint_of(p.leader, listener) is not None else -1
    offline = [r for r in p.replicas if r not in image.brokers or image.brokers[r].fenced]
    return MetadataResponse.MetadataResponsePartition(
        error_code=Errors.NONE if leader >= 0 else Errors.LEADER_NOT_AVAILABLE,
        partition_index=p.index,
        leader_id=leader,
        leader_epoch=p.leader_epoch,
        replica_nodes=list(p.replicas),
        isr_nodes=list(p.isr),
        offline_replicas=offline,
    )


def topic_metadata(
    broker,
    topic,
    version: int,
    include_operations: bool,
    listener: str | None = None,
    operations: int = _ALL_TOPIC_OPERATIONS,
) -> MetadataResponse.MetadataResponseTopic:
    partitions = [_partition_metadata(broker, p, listener) for p in topic.partitions]
    return MetadataResponse.MetadataResponseTopic(
        error_code=Errors.NONE,
        name=topic.name,
        topic_id=topic.topic_id,
        is_internal=topic.name in INTERNAL_TOPICS,
        partitions=partitions,
        topic_authorized_operations=operations if include_operations else _UNSET,
    )


def _error_topic(name, topic_id, code: int) -> MetadataResponse.MetadataResponseTopic:
    from kconform.codecs.constants import ZERO_UUID

    return MetadataResponse.MetadataResponseTopic(
        error_code=code, name=name, topic_id=topic_id or ZERO_UUID, is_internal=False, partitions=[]
    )


def _invalid_request(request) -> MetadataResponse:
    """MetadataRequest.getErrorResponse: every topic asked for, with the error and no partitions, and
    the error in the top-level error code too (written from v13)."""
    return MetadataResponse(
        error_code=Errors.INVALID_REQUEST,
        brokers=[],
        cluster_id=None,
        controller_id=-1,
        topics=[
            MetadataResponse.MetadataResponseTopic(
                error_code=Errors.INVALID_REQUEST,
                name=t.name if t.name is not None else "",
                topic_id=t.topic_id,
                is_internal=False,
                partitions=[],
            )
            for t in request.topics
        ],
    )


@handles(3)
async def metadata(broker, ctx, request) -> MetadataResponse:
    version = ctx.api_version
    # Topic ids are for v12+: at v10-11 a null name or a topic id is InvalidRequestException.
    if version < 12 and request.topics and any(t.name is None or t.topic_id.int for t in request.topics):
        return _invalid_request(request)
    include_ops = version >= 8 and request.include_topic_authorized_operations
    if request.topics is None or (version == 0 and not request.topics):
        wanted = None
    else:
        wanted = request.topics
    allow_create = (request.allow_auto_topic_creation if version >= 4 else True) and broker.auto_create_topics
    access = TopicAccess.of(broker, ctx, wanted, allow_create)

    def ops_of(name: str) -> int:  # asked of the authorizer only when the request wants them
        return access.operations(name) if include_ops else _UNSET

    topics = []
    if wanted is None:
        # every topic: those the principal may not describe are left out, not reported
        topics = [
            topic_metadata(broker, t, version, include_ops, ctx.listener, ops_of(t.name))
            for t in broker.topics
            if t.name in access.described
        ]
    else:
        seen = set()
        for entry in wanted:
            name = entry.name
            if name is None and version >= 10:
                topic = broker.topics.by_id(entry.topic_id)
                if topic is None:
                    topics.append(_error_topic(None, entry.topic_id, Errors.UNKNOWN_TOPIC_ID))
                elif topic.name not in access.described:
                    # topic ids are not secret: the id is echoed with the refusal, the name is not
                    topics.append(_error_topic(None, entry.topic_id, Errors.TOPIC_AUTHORIZATION_FAILED))
                else:
                    ops = ops_of(topic.name)
                    topics.append(topic_metadata(broker, topic, version, include_ops, ctx.listener, ops))
                continue
            if name in seen:
                continue
            seen.add(name)
            topic = broker.topics.get(name)
            if name not in access.described:
                # whether it exists is not disclosed
                topics.append(_error_topic(name, None, Errors.TOPIC_AUTHORIZATION_FAILED))
            elif topic is not None:
                ops = ops_of(name)
                topics.append(topic_metadata(broker, topic, version, include_ops, ctx.listener, ops))
            elif allow_create and name not in access.creatable:
                error = _error_topic(name, None, Errors.TOPIC_AUTHORIZATION_FAILED)
                error.is_internal = name in INTERNAL_TOPICS
                topics.append(error)
            elif topic_name_error(name) is not None:
                topics.append(_error_topic(name, None, Errors.INVALID_TOPIC_EXCEPTION))
            elif allow_create and name not in INTERNAL_TOPICS:
                broker.auto_create_topic(name)
                topics.append(_error_topic(name, None, Errors.UNKNOWN_TOPIC_OR_PARTITION))
            else:
                topics.append(_error_topic(name, None, Errors.UNKNOWN_TOPIC_OR_PARTITION))
    cluster_ops = _UNSET
    if 8 <= version <= 10 and request.include_cluster_authorized_operations:
        cluster_ops = access.cluster_operations()
    return MetadataResponse(
        brokers=[
            MetadataResponse.MetadataResponseBroker(node_id=node_id, host=host, port=port, rack=rack)
            for node_id, host, port, rack in broker.alive_brokers(ctx.listener)
        ],
        cluster_id=broker.cluster_id,
        controller_id=broker.random_alive_broker_id(),
        topics=topics,
        error_code=Errors.NONE,  # v13+: MetadataResponse.prepareResponse leaves it at its default
        cluster_authorized_operations=cluster_ops,
    )
