"""The rules of ``test_authorization_rules``: for each (API, operation, resource) rule of ``KafkaApis``,
the request that meets it, the error code to look at, what a principal without the ACL gets and what one
with it gets (past the check: the answer the request earns on its own). ``prior`` ACLs are the ones the
request's earlier checks need, held by both principals."""

from __future__ import annotations

from dataclasses import dataclass, field

from kconform.codecs.errors import Errors
from kconform.codecs.messages import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
    CreateAclsRequest,
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    EndTxnRequest,
    FetchRequest,
    FindCoordinatorRequest,
    HeartbeatRequest,
    InitProducerIdRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    ListOffsetsRequest,
    MetadataRequest,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
    OffsetForLeaderEpochRequest,
    ProduceRequest,
    SyncGroupRequest,
    TxnOffsetCommitRequest,
)
from kconform.codecs.records import Record, encode_batch
from kconform.reference_broker.security.acls import Operation as Op
from kconform.reference_broker.security.acls import ResourceType as Rt

__all__ = [
    "CASES",
    "TOPIC",
    "Case",
    "binding",
    "fetch",
    "fetch_code",
    "first_partition",
    "names_of",
    "produce",
]

TOPIC = "orders"  # one partition, created by admin; each case's users get their own ACLs on it
CLUSTER = "kafka-cluster"
LITERAL, ALLOW = 3, 3
E = Errors
NO_PRODUCER = Errors.INVALID_PRODUCER_ID_MAPPING  # past the checks: the coordinator knows no producer 7000


@dataclass(frozen=True)
class Case:
    """``build(names)`` gives (api key, version, request); ``code(response)`` the error code the case
    looks at. ``prior`` are the ACLs both users hold (the request's earlier checks), ``rule`` the ACLs
    only the allowed user holds."""

    id: str
    build: object
    code: object
    denied: int
    allowed: int
    rule: tuple
    prior: tuple = field(default=())


def names_of(case_id: str) -> dict[str, str]:
    return {"group": f"group-{case_id}", "txn": f"txn-{case_id}", "new": f"new-{case_id}"}


def _records(*, transactional: bool = False) -> bytes:
    pid, epoch = (7000, 0) if transactional else (-1, -1)
    return encode_batch(
        [Record(offset=0, timestamp=1_700_000_000_000, key=None, value=b"v")],
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=0 if transactional else -1,
        is_transactional=transactional,
    )


def produce(topic=TOPIC, txn=None):
    data = [
        ProduceRequest.TopicProduceData(
            name=topic,
            partition_data=[
                ProduceRequest.PartitionProduceData(index=0, records=_records(transactional=txn is not None))
            ],
        )
    ]
    return 0, 9, ProduceRequest(transactional_id=txn, acks=1, timeout_ms=5000, topic_data=data)


def fetch(replica_id=-1):
    part = FetchRequest.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)
    return 1, 12, FetchRequest(
        replica_id=replica_id, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20,
        topics=[FetchRequest.FetchTopic(topic=TOPIC, partitions=[part])], forgotten_topics_data=[],
    )  # fmt: skip


def fetch_code(response):
    return response.responses[0].partitions[0].error_code


def _offset_for_leader_epoch(replica_id=-1):
    part = OffsetForLeaderEpochRequest.OffsetForLeaderPartition(
        partition=0, current_leader_epoch=-1, leader_epoch=0
    )
    topic = OffsetForLeaderEpochRequest.OffsetForLeaderTopic(topic=TOPIC, partitions=[part])
    return 23, 3, OffsetForLeaderEpochRequest(replica_id=replica_id, topics=[topic])


def _metadata(topic=TOPIC, create=False):
    topics = [MetadataRequest.MetadataRequestTopic(name=topic)]
    return 3, 9, MetadataRequest(topics=topics, allow_auto_topic_creation=create)


def _offset_commit(group):
    part = OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=0)
    topic = OffsetCommitRequest.OffsetCommitRequestTopic(name=TOPIC, partitions=[part])
    return (
        8,
        8,
        OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=-1, member_id="", topics=[topic]),
    )


def _offset_fetch(group):
    topic = OffsetFetchRequest.OffsetFetchRequestTopics(name=TOPIC, partition_indexes=[0])
    return (
        9,
        8,
        OffsetFetchRequest(
            groups=[OffsetFetchRequest.OffsetFetchRequestGroup(group_id=group, topics=[topic])]
        ),
    )


def _offset_delete(group):
    part = OffsetDeleteRequest.OffsetDeleteRequestPartition(partition_index=0)
    topic = OffsetDeleteRequest.OffsetDeleteRequestTopic(name=TOPIC, partitions=[part])
    return 47, 0, OffsetDeleteRequest(group_id=group, topics=[topic])


def _add_partitions(txn, version=3):
    topic = AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=TOPIC, partitions=[0])
    if version >= 4:
        txn_entry = AddPartitionsToTxnRequest.AddPartitionsToTxnTransaction(
            transactional_id=txn, producer_id=7000, producer_epoch=0, verify_only=True, topics=[topic]
        )
        return 24, version, AddPartitionsToTxnRequest(transactions=[txn_entry])
    return 24, version, AddPartitionsToTxnRequest(
        v3_and_below_transactional_id=txn, v3_and_below_producer_id=7000, v3_and_below_producer_epoch=0,
        v3_and_below_topics=[topic],
    )  # fmt: skip


def _txn_offset_commit(txn, group):
    part = TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=0)
    topic = TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(name=TOPIC, partitions=[part])
    return 28, 3, TxnOffsetCommitRequest(
        transactional_id=txn, group_id=group, producer_id=7000, producer_epoch=0, generation_id=-1,
        member_id="", topics=[topic],
    )  # fmt: skip


def _add_offsets(txn, group):
    return (
        25,
        3,
        AddOffsetsToTxnRequest(transactional_id=txn, producer_id=7000, producer_epoch=0, group_id=group),
    )


def _list_offsets():
    part = ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=-1)
    return (
        2,
        5,
        ListOffsetsRequest(
            replica_id=-1, topics=[ListOffsetsRequest.ListOffsetsTopic(name=TOPIC, partitions=[part])]
        ),
    )


def _leave(group):
    return 13, 3, LeaveGroupRequest(group_id=group, members=[LeaveGroupRequest.MemberIdentity(member_id="m")])


def produce_code(response):
    return response.responses[0].partition_responses[0].error_code


def _topic_code(response):
    return response.topics[0].error_code


def first_partition(response):
    return response.topics[0].partitions[0].error_code


def _v3_partition(response):
    return response.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code


def _top(response):
    return response.error_code


def _join(group):
    protocol = JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"")
    return 11, 5, JoinGroupRequest(
        group_id=group, session_timeout_ms=30000, rebalance_timeout_ms=30000, member_id="",
        protocol_type="consumer", protocols=[protocol],
    )  # fmt: skip


TW, TR, TD = (Rt.TOPIC, TOPIC, Op.WRITE), (Rt.TOPIC, TOPIC, Op.READ), (Rt.TOPIC, TOPIC, Op.DESCRIBE)


def _g(op):
    return ("group", op)


def _t(op):
    return ("txn", op)


CASES = [
    # Produce: WRITE on the topic, per partition; a topic the principal may not write is refused before
    # anyone looks whether it exists
    Case("produce-topic-write", lambda n: produce(), produce_code,
         E.TOPIC_AUTHORIZATION_FAILED, E.NONE, (TW,)),
    Case("produce-unknown-topic", lambda n: produce(topic=n["new"]),
         produce_code,
         E.TOPIC_AUTHORIZATION_FAILED, E.UNKNOWN_TOPIC_OR_PARTITION, (("new", Op.WRITE),)),
    # transactional records need WRITE on the transactional id, for the whole request
    Case("produce-transactional-id-write", lambda n: produce(txn=n["txn"]),
         produce_code,
         E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, E.INVALID_PRODUCER_ID_MAPPING, (_t(Op.WRITE),), (TW,)),
    # Fetch: READ on the topic for a consumer; a follower needs CLUSTER_ACTION (KafkaApis answers each
    # partition TOPIC_AUTHORIZATION_FAILED without it)
    Case("fetch-topic-read", lambda n: fetch(), fetch_code, E.TOPIC_AUTHORIZATION_FAILED, E.NONE, (TR,)),
    # (replica 2 is no replica of the partition: past the check, the leader refuses it)
    Case("fetch-follower-cluster-action", lambda n: fetch(replica_id=2), fetch_code,
         E.TOPIC_AUTHORIZATION_FAILED, E.NOT_LEADER_OR_FOLLOWER, ((Rt.CLUSTER, CLUSTER, Op.CLUSTER_ACTION),)),
    Case("list-offsets-topic-describe",
         lambda n: _list_offsets(),
         first_partition, E.TOPIC_AUTHORIZATION_FAILED, E.NONE, (TD,)),
    Case("offset-for-leader-epoch-topic-describe", lambda n: _offset_for_leader_epoch(), first_partition,
         E.TOPIC_AUTHORIZATION_FAILED, E.NONE, (TD,)),
    Case("offset-for-leader-epoch-cluster-action", lambda n: _offset_for_leader_epoch(replica_id=1),
         first_partition, E.TOPIC_AUTHORIZATION_FAILED, E.NONE, ((Rt.CLUSTER, CLUSTER, Op.CLUSTER_ACTION),)),
    # Metadata: DESCRIBE on each topic named, whether it exists or not
    Case("metadata-topic-describe", lambda n: _metadata(), lambda r: r.topics[0].error_code,
         E.TOPIC_AUTHORIZATION_FAILED, E.NONE, (TD,)),
    Case("metadata-unknown-topic-describe", lambda n: _metadata(topic=n["new"]), _topic_code,
         E.TOPIC_AUTHORIZATION_FAILED, E.UNKNOWN_TOPIC_OR_PARTITION, (("new", Op.DESCRIBE),)),
    # auto-creation: CREATE on the cluster, or on the topic
    Case("metadata-create-on-cluster", lambda n: _metadata(topic=n["new"], create=True),
         lambda r: r.topics[0].error_code, E.TOPIC_AUTHORIZATION_FAILED, E.UNKNOWN_TOPIC_OR_PARTITION,
         ((Rt.CLUSTER, CLUSTER, Op.CREATE),), (("new", Op.DESCRIBE),)),
    Case("metadata-create-on-topic", lambda n: _metadata(topic=n["new"], create=True),
         lambda r: r.topics[0].error_code, E.TOPIC_AUTHORIZATION_FAILED, E.UNKNOWN_TOPIC_OR_PARTITION,
         (("new", Op.CREATE),), (("new", Op.DESCRIBE),)),
    # FindCoordinator: DESCRIBE on the group or the transactional id
    Case("find-coordinator-group-describe",
         lambda n: (10, 4, FindCoordinatorRequest(key_type=0, coordinator_keys=[n["group"]])),
         lambda r: r.coordinators[0].error_code, E.GROUP_AUTHORIZATION_FAILED, E.NONE, (_g(Op.DESCRIBE),)),
    Case("find-coordinator-transactional-id-describe",
         lambda n: (10, 4, FindCoordinatorRequest(key_type=1, coordinator_keys=[n["txn"]])),
         lambda r: r.coordinators[0].error_code, E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, E.NONE,
         (_t(Op.DESCRIBE),)),
    # classic group membership: READ on the group
    Case("join-group-read", lambda n: _join(n["group"]), _top, E.GROUP_AUTHORIZATION_FAILED,
         E.MEMBER_ID_REQUIRED, (_g(Op.READ),)),
    Case("sync-group-read",
         lambda n: (14, 3, SyncGroupRequest(group_id=n["group"], generation_id=1, member_id="m")),
         _top, E.GROUP_AUTHORIZATION_FAILED, E.UNKNOWN_MEMBER_ID, (_g(Op.READ),)),
    Case("heartbeat-read",
         lambda n: (12, 3, HeartbeatRequest(group_id=n["group"], generation_id=1, member_id="m")),
         _top, E.GROUP_AUTHORIZATION_FAILED, E.UNKNOWN_MEMBER_ID, (_g(Op.READ),)),
    Case("leave-group-read",
         lambda n: _leave(n["group"]),
         _top, E.GROUP_AUTHORIZATION_FAILED, E.NONE, (_g(Op.READ),)),
    # committed offsets: READ on the group, then READ on each topic
    Case("offset-commit-group-read", lambda n: _offset_commit(n["group"]), first_partition,
         E.GROUP_AUTHORIZATION_FAILED, E.NONE, (_g(Op.READ),), (TR,)),
    Case("offset-commit-topic-read", lambda n: _offset_commit(n["group"]), first_partition,
         E.TOPIC_AUTHORIZATION_FAILED, E.NONE, (TR,), (_g(Op.READ),)),
    # OffsetFetch: DESCRIBE on the group, then on each topic
    Case("offset-fetch-group-describe", lambda n: _offset_fetch(n["group"]), lambda r: r.groups[0].error_code,
         E.GROUP_AUTHORIZATION_FAILED, E.NONE, (_g(Op.DESCRIBE),), (TD,)),
    Case("offset-fetch-topic-describe", lambda n: _offset_fetch(n["group"]),
         lambda r: r.groups[0].topics[0].partitions[0].error_code,
         E.TOPIC_AUTHORIZATION_FAILED, E.NONE, (TD,), (_g(Op.DESCRIBE),)),
    # OffsetDelete: DELETE on the group (the group has no offsets: GROUP_ID_NOT_FOUND past the check)
    Case("offset-delete-group-delete", lambda n: _offset_delete(n["group"]), _top,
         E.GROUP_AUTHORIZATION_FAILED, E.GROUP_ID_NOT_FOUND, (_g(Op.DELETE),), (TR,)),
    # (the module's set-up commits an offset of this case's group: past the checks, it is deleted)
    Case("offset-delete-topic-read", lambda n: _offset_delete(n["group"]), first_partition,
         E.TOPIC_AUTHORIZATION_FAILED, E.NONE, (TR,), (_g(Op.DELETE),)),
    Case("describe-groups-describe",
         lambda n: (15, 5, DescribeGroupsRequest(groups=[n["group"]])), lambda r: r.groups[0].error_code,
         E.GROUP_AUTHORIZATION_FAILED, E.NONE, (_g(Op.DESCRIBE),)),
    Case("delete-groups-delete",
         lambda n: (42, 2, DeleteGroupsRequest(groups_names=[n["group"]])), lambda r: r.results[0].error_code,
         E.GROUP_AUTHORIZATION_FAILED, E.GROUP_ID_NOT_FOUND, (_g(Op.DELETE),)),
    # KIP-848: READ on the group to heartbeat, DESCRIBE to describe it
    Case("consumer-group-heartbeat-read",
         lambda n: (68, 0, ConsumerGroupHeartbeatRequest(
             group_id=n["group"], member_id="", member_epoch=0, rebalance_timeout_ms=30000,
             subscribed_topic_names=[TOPIC], topic_partitions=[])),
         _top, E.GROUP_AUTHORIZATION_FAILED, E.NONE, (_g(Op.READ),)),
    Case("consumer-group-describe-describe",
         lambda n: (69, 0, ConsumerGroupDescribeRequest(group_ids=[n["group"]])),
         lambda r: r.groups[0].error_code, E.GROUP_AUTHORIZATION_FAILED, E.GROUP_ID_NOT_FOUND,
         (_g(Op.DESCRIBE),)),
    # InitProducerId: WRITE on the transactional id; without one IDEMPOTENT_WRITE on the cluster or WRITE
    # on some topic
    Case("init-producer-id-transactional-id-write",
         lambda n: (22, 4, InitProducerIdRequest(transactional_id=n["txn"], transaction_timeout_ms=60000)),
         _top, E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, E.NONE, (_t(Op.WRITE),)),
    Case("init-producer-id-idempotent-write",
         lambda n: (22, 4, InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000)),
         _top, E.CLUSTER_AUTHORIZATION_FAILED, E.NONE, ((Rt.CLUSTER, CLUSTER, Op.IDEMPOTENT_WRITE),)),
    Case("init-producer-id-write-on-some-topic",
         lambda n: (22, 4, InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000)),
         _top, E.CLUSTER_AUTHORIZATION_FAILED, E.NONE, (TW,)),
    # AddPartitionsToTxn: a client's (v3) needs WRITE on the id and on each topic; a broker's (v4+)
    # CLUSTER_ACTION
    Case("add-partitions-transactional-id-write", lambda n: _add_partitions(n["txn"]), _v3_partition,
         E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, E.INVALID_PRODUCER_ID_MAPPING, (_t(Op.WRITE),), (TW,)),
    Case("add-partitions-topic-write", lambda n: _add_partitions(n["txn"]), _v3_partition,
         E.TOPIC_AUTHORIZATION_FAILED, E.INVALID_PRODUCER_ID_MAPPING, (TW,), (_t(Op.WRITE),)),
    Case("add-partitions-v4-cluster-action", lambda n: _add_partitions(n["txn"], version=4), _top,
         E.CLUSTER_AUTHORIZATION_FAILED, E.NONE, ((Rt.CLUSTER, CLUSTER, Op.CLUSTER_ACTION),)),
    # AddOffsetsToTxn: WRITE on the id, then READ on the group
    Case("add-offsets-transactional-id-write",
         lambda n: _add_offsets(n["txn"], n["group"]),
         _top, E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, NO_PRODUCER, (_t(Op.WRITE),), (_g(Op.READ),)),
    Case("add-offsets-group-read",
         lambda n: _add_offsets(n["txn"], n["group"]),
         _top, E.GROUP_AUTHORIZATION_FAILED, NO_PRODUCER, (_g(Op.READ),), (_t(Op.WRITE),)),
    Case("end-txn-transactional-id-write",
         lambda n: (26, 3, EndTxnRequest(transactional_id=n["txn"], producer_id=7000, producer_epoch=0,
                                         committed=True)),
         _top, E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, E.INVALID_PRODUCER_ID_MAPPING, (_t(Op.WRITE),)),
    # TxnOffsetCommit: WRITE on the id, READ on the group, READ on each topic, in that order (past them,
    # the coordinator knows no such producer)
    Case("txn-offset-commit-transactional-id-write", lambda n: _txn_offset_commit(n["txn"], n["group"]),
         first_partition, E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, NO_PRODUCER, (_t(Op.WRITE),),
         (_g(Op.READ), TR)),
    Case("txn-offset-commit-group-read", lambda n: _txn_offset_commit(n["txn"], n["group"]),
         first_partition, E.GROUP_AUTHORIZATION_FAILED, NO_PRODUCER, (_g(Op.READ),), (_t(Op.WRITE), TR)),
    Case("txn-offset-commit-topic-read", lambda n: _txn_offset_commit(n["txn"], n["group"]),
         first_partition, E.TOPIC_AUTHORIZATION_FAILED, NO_PRODUCER, (TR,), (_t(Op.WRITE), _g(Op.READ))),
]  # fmt: skip


def binding(user: str, case_id: str, acl) -> CreateAclsRequest.AclCreation:
    names = names_of(case_id)
    if acl[0] in names:  # a resource named after the case
        kind = acl[0]
        rtype = {"group": Rt.GROUP, "txn": Rt.TRANSACTIONAL_ID, "new": Rt.TOPIC}[kind]
        acl = (rtype, names[kind], acl[1])
    rtype, name, op = acl
    return CreateAclsRequest.AclCreation(
        resource_type=int(rtype), resource_name=name, resource_pattern_type=LITERAL, principal=f"User:{user}",
        host="*", operation=int(op), permission_type=ALLOW,
    )  # fmt: skip
