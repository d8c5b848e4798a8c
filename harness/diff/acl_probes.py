"""The probe catalogue of ``kconform diff-acls``: one request per (API, operation, resource) rule that
decides what a principal may do, built for the set-up's resources, with how its answer is normalised and
what Kafka's rules give for it (a ``Decider`` asks the authorizer as the Kafka handler would).

Probe ids use the set-up's logical names (``produce pay-audit``), so two targets with different run
prefixes compare probe by probe. Each probe speaks one fixed version; a target that does not offer it
skips the probe (and says so). Pure: requests and outcomes, no I/O."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kconform.codecs.errors import error_for
from kconform.codecs.messages import (
    CreateTopicsRequest,
    DeleteTopicsRequest,
    DescribeClusterRequest,
    DescribeConfigsRequest,
    FetchRequest,
    FindCoordinatorRequest,
    InitProducerIdRequest,
    JoinGroupRequest,
    ListOffsetsRequest,
    MetadataRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    ProduceRequest,
)
from kconform.codecs.records import Record, encode_batch
from kconform.reference_broker.security.acls import Operation as Op
from kconform.reference_broker.security.acls import ResourceType as Rt
from kconform.reference_broker.security.authorization import SUPPORTED_OPERATIONS
from kconform.reference_broker.security.authorizer import CLUSTER_NAME

from .acl_admin import every_acl
from .acl_compare import Decider, Expectation, operation_names
from .acl_setup import AclSetup

__all__ = ["NEW_TOPIC", "Probe", "probe_catalogue"]

NEW_TOPIC = "probe.new-topic"  # a topic nobody creates: CreateTopics (validate only) asks for it
_TAF, _GAF, _CAF = "TOPIC_AUTHORIZATION_FAILED", "GROUP_AUTHORIZATION_FAILED", "CLUSTER_AUTHORIZATION_FAILED"
_TIAF = "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"


@dataclass(frozen=True)
class Probe:
    id: str
    api_key: int
    version: int
    request: Any
    outcome: Callable[[Any], str]  # the response -> normalised outcome
    expect: Callable[[Decider], Expectation]  # what Kafka's rules give
    deletes_topic: str | None = None  # a set-up topic it may delete: run last, re-created after


def _name(code: int) -> str:
    return error_for(code).name


def _gate(allowed: bool, refusal: str, decider: Decider) -> Expectation:
    return decider.expect(None if allowed else refusal)


def probe_catalogue(setup: AclSetup, prefix: str) -> list[Probe]:
    """The probes for ``setup`` with resources named under ``prefix``: those that change the target
    (DeleteTopics) come last."""
    probes: list[Probe] = []
    for topic in setup.topics:
        probes += _topic_probes(topic, prefix + topic)
    for group in setup.groups:
        probes += _group_probes(group, prefix + group, [prefix + t for t in setup.topics[:1]])
    for txn in setup.transactional_ids:
        probes += _transactional_id_probes(txn, prefix + txn)
    probes += _cluster_probes(prefix + NEW_TOPIC)
    probes += [_delete_topic(topic, prefix + topic) for topic in setup.topics]
    return probes


# ---- topics ---------------------------------------------------------------------------------------


def _metadata_outcome(response) -> str:
    topic = response.topics[0]
    if topic.error_code:
        return _name(topic.error_code)
    return f"NONE {operation_names(max(topic.topic_authorized_operations, 0))}"


def _expect_metadata(name: str) -> Callable[[Decider], Expectation]:
    # KafkaApis.handleTopicMetadataRequest: DESCRIBE on a named topic, else TOPIC_AUTHORIZATION_FAILED;
    # the topic's authorized operations are AuthHelper.authorizedOperations over AclEntry.supportedOperations
    def expect(d: Decider) -> Expectation:
        if not d.may(Op.DESCRIBE, Rt.TOPIC, name):
            return d.expect(_TAF)
        return d.expect(f"NONE {d.operations(Rt.TOPIC, name, SUPPORTED_OPERATIONS[Rt.TOPIC])}")

    return expect


def _single(op: Op, rtype: Rt, name: str, refusal: str) -> Callable[[Decider], Expectation]:
    return lambda d: _gate(d.may(op, rtype, name), refusal, d)


def _topic_probes(logical: str, name: str) -> list[Probe]:
    records = encode_batch([Record(offset=0, timestamp=1_700_000_000_000, key=None, value=b"probe")])
    produce = ProduceRequest(
        transactional_id=None,
        acks=1,
        timeout_ms=5000,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name=name, partition_data=[ProduceRequest.PartitionProduceData(index=0, records=records)]
            )
        ],
    )
    fetch_partition = FetchRequest.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 16)
    fetch = FetchRequest(
        replica_id=-1,
        max_wait_ms=0,
        min_bytes=0,
        max_bytes=1 << 16,
        forgotten_topics_data=[],
        topics=[FetchRequest.FetchTopic(topic=name, partitions=[fetch_partition])],
    )
    latest = ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=-1)
    list_offsets = ListOffsetsRequest(
        replica_id=-1, topics=[ListOffsetsRequest.ListOffsetsTopic(name=name, partitions=[latest])]
    )
    configs = DescribeConfigsRequest(
        resources=[DescribeConfigsRequest.DescribeConfigsResource(resource_type=2, resource_name=name)]
    )
    return [
        Probe(
            f"metadata {logical}",
            3,
            12,
            MetadataRequest(
                topics=[MetadataRequest.MetadataRequestTopic(name=name)],
                allow_auto_topic_creation=False,
                include_topic_authorized_operations=True,
            ),
            _metadata_outcome,
            _expect_metadata(name),
        ),
        # KafkaApis.handleProduceRequest: WRITE on each topic
        Probe(
            f"produce {logical}",
            0,
            9,
            produce,
            lambda r: _name(r.responses[0].partition_responses[0].error_code),
            _single(Op.WRITE, Rt.TOPIC, name, _TAF),
        ),
        # KafkaApis.handleFetchRequest: READ on each topic for a consumer
        Probe(
            f"fetch {logical}",
            1,
            12,
            fetch,
            lambda r: _name(r.responses[0].partitions[0].error_code),
            _single(Op.READ, Rt.TOPIC, name, _TAF),
        ),
        # KafkaApis.handleListOffsetRequest: DESCRIBE on each topic
        Probe(
            f"list-offsets {logical}",
            2,
            5,
            list_offsets,
            lambda r: _name(r.topics[0].partitions[0].error_code),
            _single(Op.DESCRIBE, Rt.TOPIC, name, _TAF),
        ),
        # ConfigHelper.describeConfigs: DESCRIBE_CONFIGS on a topic resource
        Probe(
            f"describe-configs {logical}",
            32,
            4,
            configs,
            lambda r: _name(r.results[0].error_code),
            _single(Op.DESCRIBE_CONFIGS, Rt.TOPIC, name, _TAF),
        ),
        _create_topic(f"create-topics {logical}", name),
    ]


def _create_topic(probe_id: str, name: str) -> Probe:
    topic = CreateTopicsRequest.CreatableTopic(name=name, num_partitions=1, replication_factor=1)
    request = CreateTopicsRequest(topics=[topic], timeout_ms=10_000, validate_only=True)

    def expect(d: Decider) -> Expectation:  # ControllerApis.createTopics: CREATE on the cluster or topic
        return _gate(d.may(Op.CREATE, Rt.CLUSTER, CLUSTER_NAME) or d.may(Op.CREATE, Rt.TOPIC, name), _TAF, d)

    return Probe(probe_id, 19, 5, request, lambda r: _name(r.topics[0].error_code), expect)


def _delete_topic(logical: str, name: str) -> Probe:
    def expect(d: Decider) -> Expectation:
        # ControllerApis.deleteTopics: DELETE on the cluster stands for both; else a name one may not
        # DESCRIBE, or may describe but not DELETE, is TOPIC_AUTHORIZATION_FAILED
        if d.may(Op.DELETE, Rt.CLUSTER, CLUSTER_NAME):
            return d.expect(None)
        return _gate(d.may(Op.DESCRIBE, Rt.TOPIC, name) and d.may(Op.DELETE, Rt.TOPIC, name), _TAF, d)

    request = DeleteTopicsRequest(topic_names=[name], timeout_ms=10_000)
    return Probe(
        f"delete-topics {logical}",
        20,
        5,
        request,
        lambda r: _name(r.responses[0].error_code),
        expect,
        deletes_topic=name,
    )


# ---- groups and transactional ids -----------------------------------------------------------------


def _group_probes(logical: str, name: str, topics: list[str]) -> list[Probe]:
    protocol = JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"")
    join = JoinGroupRequest(
        group_id=name,
        session_timeout_ms=30_000,
        rebalance_timeout_ms=30_000,
        member_id="",
        protocol_type="consumer",
        protocols=[protocol],
    )
    fetch_all = OffsetFetchRequest(
        groups=[OffsetFetchRequest.OffsetFetchRequestGroup(group_id=name, topics=None)]
    )
    probes = [
        # KafkaApis.handleFindCoordinatorRequest: DESCRIBE on the group
        Probe(
            f"find-coordinator group {logical}",
            10,
            4,
            FindCoordinatorRequest(key_type=0, coordinator_keys=[name]),
            lambda r: _name(r.coordinators[0].error_code),
            _single(Op.DESCRIBE, Rt.GROUP, name, _GAF),
        ),
        # KafkaApis.handleJoinGroupRequest: READ on the group
        Probe(
            f"join-group {logical}",
            11,
            5,
            join,
            lambda r: _name(r.error_code),
            _single(Op.READ, Rt.GROUP, name, _GAF),
        ),
        # KafkaApis.handleOffsetFetchRequest: DESCRIBE on the group (all topics: only those it may describe)
        Probe(
            f"offset-fetch {logical}",
            9,
            8,
            fetch_all,
            lambda r: _name(r.groups[0].error_code),
            _single(Op.DESCRIBE, Rt.GROUP, name, _GAF),
        ),
    ]
    for topic in topics:
        probes.append(_offset_commit(logical, name, topic))
    return probes


def _offset_commit(logical: str, group: str, topic: str) -> Probe:
    part = OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=0)
    request = OffsetCommitRequest(
        group_id=group,
        generation_id_or_member_epoch=-1,
        member_id="",
        topics=[OffsetCommitRequest.OffsetCommitRequestTopic(name=topic, partitions=[part])],
    )

    def expect(
        d: Decider,
    ) -> Expectation:  # KafkaApis.handleOffsetCommitRequest: READ on the group, then topic
        if not d.may(Op.READ, Rt.GROUP, group):
            return d.expect(_GAF)
        return _gate(d.may(Op.READ, Rt.TOPIC, topic), _TAF, d)

    return Probe(
        f"offset-commit {logical}",
        8,
        8,
        request,
        lambda r: _name(r.topics[0].partitions[0].error_code),
        expect,
    )


def _transactional_id_probes(logical: str, name: str) -> list[Probe]:
    return [
        # KafkaApis.handleFindCoordinatorRequest: DESCRIBE on the transactional id
        Probe(
            f"find-coordinator transaction {logical}",
            10,
            4,
            FindCoordinatorRequest(key_type=1, coordinator_keys=[name]),
            lambda r: _name(r.coordinators[0].error_code),
            _single(Op.DESCRIBE, Rt.TRANSACTIONAL_ID, name, _TIAF),
        ),
        # KafkaApis.handleInitProducerIdRequest: WRITE on the transactional id
        Probe(
            f"init-producer-id {logical}",
            22,
            4,
            InitProducerIdRequest(transactional_id=name, transaction_timeout_ms=60_000),
            lambda r: _name(r.error_code),
            _single(Op.WRITE, Rt.TRANSACTIONAL_ID, name, _TIAF),
        ),
    ]


# ---- the cluster ----------------------------------------------------------------------------------


def _describe_cluster_outcome(response) -> str:
    if response.error_code:
        return _name(response.error_code)
    return f"NONE {operation_names(max(response.cluster_authorized_operations, 0))}"


def _expect_cluster_operations(d: Decider) -> Expectation:
    # AuthHelper.computeDescribeClusterResponse: no operations without DESCRIBE on the cluster, else the
    # allowed ones of AclEntry.supportedOperations(CLUSTER)
    if not d.may(Op.DESCRIBE, Rt.CLUSTER, CLUSTER_NAME):
        return d.expect("NONE ops=none")
    return d.expect(f"NONE {d.operations(Rt.CLUSTER, CLUSTER_NAME, SUPPORTED_OPERATIONS[Rt.CLUSTER])}")


def _cluster_probes(new_topic: str) -> list[Probe]:
    every = every_acl()
    return [
        Probe(
            "describe-cluster operations",
            60,
            1,
            DescribeClusterRequest(include_cluster_authorized_operations=True),
            _describe_cluster_outcome,
            _expect_cluster_operations,
        ),
        # AclApis.handleDescribeAcls: DESCRIBE on the cluster
        Probe(
            "describe-acls",
            29,
            3,
            every,
            lambda r: _name(r.error_code),
            _single(Op.DESCRIBE, Rt.CLUSTER, CLUSTER_NAME, _CAF),
        ),
        _create_topic(f"create-topics {NEW_TOPIC}", new_topic),
    ]
