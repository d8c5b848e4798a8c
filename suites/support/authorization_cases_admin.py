"""The rules of ``test_authorization_rules_admin``: for each (API, operation, resource) rule of the admin
and cluster APIs (``KafkaApis``, ``ControllerApis``, ``AclApis``, ``ConfigHelper``), the request that meets
it, the value to look at, what a principal without the ACL gets and what one with it gets. ``prior`` ACLs
are the ones the request's earlier checks need, held by both principals. The shapes (``Case``,
``names_of``, ``binding``) are those of ``authorization_cases``."""

from __future__ import annotations

from kconform.codecs.errors import Errors
from kconform.codecs.messages import (
    AlterClientQuotasRequest,
    AlterConfigsRequest,
    AlterPartitionReassignmentsRequest,
    AlterUserScramCredentialsRequest,
    CreateAclsRequest,
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteAclsRequest,
    DeleteRecordsRequest,
    DeleteTopicsRequest,
    DescribeAclsRequest,
    DescribeClientQuotasRequest,
    DescribeClusterRequest,
    DescribeConfigsRequest,
    DescribeLogDirsRequest,
    DescribeProducersRequest,
    DescribeTransactionsRequest,
    DescribeUserScramCredentialsRequest,
    ElectLeadersRequest,
    IncrementalAlterConfigsRequest,
    ListPartitionReassignmentsRequest,
    ListTransactionsRequest,
    WriteTxnMarkersRequest,
)
from kconform.reference_broker.security.acls import Operation as Op
from kconform.reference_broker.security.acls import ResourceType as Rt

from .authorization_cases import Case, binding, names_of

__all__ = ["CASES", "EXISTING_TOPICS", "LISTED_TRANSACTION", "TOPIC", "binding", "names_of"]

TOPIC = "ledger"  # one partition, created by admin, for the requests that need a topic but no ACL on it
CLUSTER = "kafka-cluster"
BROKER_RESOURCE, TOPIC_RESOURCE = 4, 2  # ConfigResource.Type ids
E = Errors


def _cluster(op):
    return (Rt.CLUSTER, CLUSTER, op)


def _new(op):
    return ("new", op)


def _txn(op):
    return ("txn", op)


def _top(response):
    return response.error_code


def _first_topic(response):
    return response.topics[0].error_code


def _first_partition(response):
    return response.topics[0].partitions[0].error_code


def _create_topic(name):
    topic = CreateTopicsRequest.CreatableTopic(name=name, num_partitions=1, replication_factor=1)
    return 19, 5, CreateTopicsRequest(topics=[topic], timeout_ms=10000)


def _delete_topic(name):
    return 20, 5, DeleteTopicsRequest(topic_names=[name], timeout_ms=10000)


def _create_partitions(name):
    topic = CreatePartitionsRequest.CreatePartitionsTopic(name=name, count=2, assignments=None)
    return 37, 3, CreatePartitionsRequest(topics=[topic], timeout_ms=10000)


def _delete_records(name):
    part = DeleteRecordsRequest.DeleteRecordsPartition(partition_index=0, offset=0)
    topic = DeleteRecordsRequest.DeleteRecordsTopic(name=name, partitions=[part])
    return 21, 2, DeleteRecordsRequest(topics=[topic], timeout_ms=10000)


def _describe_producers(name):
    topic = DescribeProducersRequest.TopicRequest(name=name, partition_indexes=[0])
    return 61, 0, DescribeProducersRequest(topics=[topic])


def _describe_configs(kind, name):
    resource = DescribeConfigsRequest.DescribeConfigsResource(resource_type=kind, resource_name=name)
    return 32, 4, DescribeConfigsRequest(resources=[resource])


def _alter_configs(kind, name):
    configs = [AlterConfigsRequest.AlterableConfig(name="retention.ms", value="86400000")]
    if kind == BROKER_RESOURCE:
        configs = []  # nothing to change: only the check is under test
    resource = AlterConfigsRequest.AlterConfigsResource(
        resource_type=kind, resource_name=name, configs=configs
    )
    return 33, 2, AlterConfigsRequest(resources=[resource], validate_only=True)


def _incremental_alter_configs(kind, name):
    R = IncrementalAlterConfigsRequest  # noqa: N806
    configs = [R.AlterableConfig(name="retention.ms", config_operation=0, value="86400000")]
    if kind == BROKER_RESOURCE:
        configs = []
    resource = R.AlterConfigsResource(resource_type=kind, resource_name=name, configs=configs)
    return 44, 1, R(resources=[resource], validate_only=True)


def _write_markers():
    topic = WriteTxnMarkersRequest.WritableTxnMarkerTopic(name=TOPIC, partition_indexes=[0])
    marker = WriteTxnMarkersRequest.WritableTxnMarker(
        producer_id=9000, producer_epoch=0, transaction_result=False, topics=[topic], coordinator_epoch=0
    )
    return 27, 1, WriteTxnMarkersRequest(markers=[marker])


def _marker_code(response):
    return response.markers[0].topics[0].partitions[0].error_code


def _create_acl(name):
    creation = CreateAclsRequest.AclCreation(
        resource_type=int(Rt.TOPIC), resource_name=name, resource_pattern_type=3, principal="User:someone",
        host="*", operation=int(Op.READ), permission_type=3,
    )  # fmt: skip
    return 30, 3, CreateAclsRequest(creations=[creation])


def _delete_acl(name):
    rule = DeleteAclsRequest.DeleteAclsFilter(
        resource_type_filter=int(Rt.TOPIC), resource_name_filter=name, pattern_type_filter=3,
        principal_filter=None, host_filter=None, operation=1, permission_type=1,
    )  # fmt: skip
    return 31, 3, DeleteAclsRequest(filters=[rule])


def _describe_acls(name):
    return 29, 3, DescribeAclsRequest(
        resource_type_filter=int(Rt.TOPIC), resource_name_filter=name, pattern_type_filter=3,
        principal_filter=None, host_filter=None, operation=1, permission_type=1,
    )  # fmt: skip


def _alter_scram(user):
    deletion = AlterUserScramCredentialsRequest.ScramCredentialDeletion(name=user, mechanism=1)
    return 51, 0, AlterUserScramCredentialsRequest(deletions=[deletion], upsertions=[])


def _alter_quotas(user):
    R = AlterClientQuotasRequest  # noqa: N806
    entry = R.EntryData(
        entity=[R.EntityData(entity_type="user", entity_name=user)],
        ops=[R.OpData(key="producer_byte_rate", value=1024.0, remove=False)],
    )
    return 49, 1, R(entries=[entry], validate_only=True)


def _elect_leaders():
    wanted = ElectLeadersRequest.TopicPartitions(topic=TOPIC, partitions=[0])
    return 43, 2, ElectLeadersRequest(election_type=0, topic_partitions=[wanted], timeout_ms=5000)


def _cancel_reassignment():
    R = AlterPartitionReassignmentsRequest  # noqa: N806
    partition = R.ReassignablePartition(partition_index=0, replicas=None)
    return 45, 0, R(timeout_ms=5000, topics=[R.ReassignableTopic(name=TOPIC, partitions=[partition])])


LISTED_TRANSACTION = names_of("list-transactions-describe")["txn"]  # begun by admin in the set-up


def _lists_the_transaction(response):
    """1 when the transaction begun in the set-up is listed, 0 when it is left out."""
    return int(LISTED_TRANSACTION in {t.transactional_id for t in response.transaction_states})


CASES = [
    # CreateTopics: CREATE on the cluster or on the topic (ControllerApis.createTopics)
    Case("create-topics-cluster-create", lambda n: _create_topic(n["new"]), _first_topic,
         E.TOPIC_AUTHORIZATION_FAILED, E.NONE, (_cluster(Op.CREATE),)),
    Case("create-topics-topic-create", lambda n: _create_topic(n["new"]), _first_topic,
         E.TOPIC_AUTHORIZATION_FAILED, E.NONE, (_new(Op.CREATE),)),
    # DeleteTopics: DELETE on the topic; a name one may not DESCRIBE is refused before its existence is
    # looked at (ControllerApis.deleteTopics)
    Case("delete-topics-topic-delete", lambda n: _delete_topic(n["new"]),
         lambda r: r.responses[0].error_code, E.TOPIC_AUTHORIZATION_FAILED, E.NONE,
         (_new(Op.DELETE),), (_new(Op.DESCRIBE),)),
    Case("delete-topics-unknown-topic-describe", lambda n: _delete_topic(n["new"]),
         lambda r: r.responses[0].error_code, E.TOPIC_AUTHORIZATION_FAILED, E.UNKNOWN_TOPIC_OR_PARTITION,
         (_new(Op.DESCRIBE),)),
    # CreatePartitions: ALTER on the topic (ControllerApis.createPartitions)
    Case("create-partitions-topic-alter", lambda n: _create_partitions(n["new"]),
         lambda r: r.results[0].error_code, E.TOPIC_AUTHORIZATION_FAILED, E.NONE, (_new(Op.ALTER),)),
    # DeleteRecords: DELETE on the topic (KafkaApis.handleDeleteRecordsRequest)
    Case("delete-records-topic-delete", lambda n: _delete_records(n["new"]), _first_partition,
         E.TOPIC_AUTHORIZATION_FAILED, E.NONE, (_new(Op.DELETE),)),
    # DescribeLogDirs: DESCRIBE on the cluster, else the top-level error (KafkaApis)
    Case("describe-log-dirs-cluster-describe", lambda n: (35, 4, DescribeLogDirsRequest(topics=None)), _top,
         E.CLUSTER_AUTHORIZATION_FAILED, E.NONE, (_cluster(Op.DESCRIBE),)),
    # DescribeProducers: READ on the topic (KafkaApis.handleDescribeProducersRequest)
    Case("describe-producers-topic-read", lambda n: _describe_producers(n["new"]),
         lambda r: r.topics[0].partitions[0].error_code, E.TOPIC_AUTHORIZATION_FAILED, E.NONE,
         (_new(Op.READ),)),
    # DescribeConfigs: DESCRIBE_CONFIGS on the topic; a broker's configs are the cluster's (ConfigHelper)
    Case("describe-configs-topic", lambda n: _describe_configs(TOPIC_RESOURCE, n["new"]),
         lambda r: r.results[0].error_code, E.TOPIC_AUTHORIZATION_FAILED, E.NONE,
         (_new(Op.DESCRIBE_CONFIGS),)),
    Case("describe-configs-broker", lambda n: _describe_configs(BROKER_RESOURCE, "1"),
         lambda r: r.results[0].error_code, E.CLUSTER_AUTHORIZATION_FAILED, E.NONE,
         (_cluster(Op.DESCRIBE_CONFIGS),)),
    # AlterConfigs, IncrementalAlterConfigs: ALTER_CONFIGS likewise (ControllerApis.authorizeAlterResource)
    Case("alter-configs-topic", lambda n: _alter_configs(TOPIC_RESOURCE, n["new"]),
         lambda r: r.responses[0].error_code, E.TOPIC_AUTHORIZATION_FAILED, E.NONE,
         (_new(Op.ALTER_CONFIGS),)),
    Case("alter-configs-broker", lambda n: _alter_configs(BROKER_RESOURCE, "1"),
         lambda r: r.responses[0].error_code, E.CLUSTER_AUTHORIZATION_FAILED, E.NONE,
         (_cluster(Op.ALTER_CONFIGS),)),
    Case("incremental-alter-configs-topic", lambda n: _incremental_alter_configs(TOPIC_RESOURCE, n["new"]),
         lambda r: r.responses[0].error_code, E.TOPIC_AUTHORIZATION_FAILED, E.NONE,
         (_new(Op.ALTER_CONFIGS),)),
    Case("incremental-alter-configs-broker", lambda n: _incremental_alter_configs(BROKER_RESOURCE, "1"),
         lambda r: r.responses[0].error_code, E.CLUSTER_AUTHORIZATION_FAILED, E.NONE,
         (_cluster(Op.ALTER_CONFIGS),)),
    # DescribeCluster: the operations are 0 without DESCRIBE on the cluster; with it alone, just DESCRIBE
    # (AuthHelper.computeDescribeClusterResponse)
    Case("describe-cluster-authorized-operations",
         lambda n: (60, 1, DescribeClusterRequest(include_cluster_authorized_operations=True)),
         lambda r: r.cluster_authorized_operations, 0, 1 << Op.DESCRIBE, (_cluster(Op.DESCRIBE),)),
    # DescribeTransactions: DESCRIBE on the id (KafkaApis.handleDescribeTransactionsRequest)
    Case("describe-transactions-describe",
         lambda n: (65, 0, DescribeTransactionsRequest(transactional_ids=[n["txn"]])),
         lambda r: r.transaction_states[0].error_code, E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
         E.TRANSACTIONAL_ID_NOT_FOUND, (_txn(Op.DESCRIBE),)),
    # ListTransactions: only the ids the principal may DESCRIBE (KafkaApis.handleListTransactionsRequest)
    Case("list-transactions-describe",
         lambda n: (66, 1, ListTransactionsRequest(state_filters=[], producer_id_filters=[])),
         _lists_the_transaction, 0, 1, (_txn(Op.DESCRIBE),)),
    # WriteTxnMarkers: ALTER or CLUSTER_ACTION on the cluster (KafkaApis.handleWriteTxnMarkersRequest)
    Case("write-txn-markers-cluster-alter", lambda n: _write_markers(), _marker_code,
         E.CLUSTER_AUTHORIZATION_FAILED, E.NONE, (_cluster(Op.ALTER),)),
    Case("write-txn-markers-cluster-action", lambda n: _write_markers(), _marker_code,
         E.CLUSTER_AUTHORIZATION_FAILED, E.NONE, (_cluster(Op.CLUSTER_ACTION),)),
    # ACLs: ALTER on the cluster to create or delete them, DESCRIBE to list them (AclApis)
    Case("create-acls-cluster-alter", lambda n: _create_acl(n["new"]), lambda r: r.results[0].error_code,
         E.CLUSTER_AUTHORIZATION_FAILED, E.NONE, (_cluster(Op.ALTER),)),
    Case("delete-acls-cluster-alter", lambda n: _delete_acl(n["new"]),
         lambda r: r.filter_results[0].error_code, E.CLUSTER_AUTHORIZATION_FAILED, E.NONE,
         (_cluster(Op.ALTER),)),
    Case("describe-acls-cluster-describe", lambda n: _describe_acls(n["new"]), _top,
         E.CLUSTER_AUTHORIZATION_FAILED, E.NONE, (_cluster(Op.DESCRIBE),)),
    # SCRAM credentials: ALTER on the cluster to change them, DESCRIBE to list them (KafkaApis); past the
    # check, deleting a credential nobody has is RESOURCE_NOT_FOUND
    Case("alter-user-scram-credentials-cluster-alter", lambda n: _alter_scram(n["new"]),
         lambda r: r.results[0].error_code, E.CLUSTER_AUTHORIZATION_FAILED, E.RESOURCE_NOT_FOUND,
         (_cluster(Op.ALTER),)),
    Case("describe-user-scram-credentials-cluster-describe",
         lambda n: (50, 0, DescribeUserScramCredentialsRequest(users=None)), _top,
         E.CLUSTER_AUTHORIZATION_FAILED, E.NONE, (_cluster(Op.DESCRIBE),)),
    # client quotas: ALTER_CONFIGS on the cluster to change them, DESCRIBE_CONFIGS to list them
    Case("alter-client-quotas-cluster-alter-configs", lambda n: _alter_quotas(n["new"]),
         lambda r: r.entries[0].error_code, E.CLUSTER_AUTHORIZATION_FAILED, E.NONE,
         (_cluster(Op.ALTER_CONFIGS),)),
    Case("describe-client-quotas-cluster-describe-configs",
         lambda n: (48, 1, DescribeClientQuotasRequest(components=[], strict=False)), _top,
         E.CLUSTER_AUTHORIZATION_FAILED, E.NONE, (_cluster(Op.DESCRIBE_CONFIGS),)),
    # ElectLeaders and AlterPartitionReassignments: ALTER on the cluster, ListPartitionReassignments
    # DESCRIBE, else the request's error response (ControllerApis.authorizeClusterOperation)
    Case("elect-leaders-cluster-alter", lambda n: _elect_leaders(), _top,
         E.CLUSTER_AUTHORIZATION_FAILED, E.NONE, (_cluster(Op.ALTER),)),
    Case("alter-partition-reassignments-cluster-alter", lambda n: _cancel_reassignment(), _top,
         E.CLUSTER_AUTHORIZATION_FAILED, E.NONE, (_cluster(Op.ALTER),)),
    Case("list-partition-reassignments-cluster-describe",
         lambda n: (46, 0, ListPartitionReassignmentsRequest(timeout_ms=5000, topics=None)), _top,
         E.CLUSTER_AUTHORIZATION_FAILED, E.NONE, (_cluster(Op.DESCRIBE),)),
]  # fmt: skip

# the cases whose topic ``new-<case>`` the set-up creates (the others name a topic that does not exist)
EXISTING_TOPICS = [
    names_of(case_id)["new"]
    for case_id in (
        "delete-topics-topic-delete",
        "create-partitions-topic-alter",
        "delete-records-topic-delete",
        "describe-producers-topic-read",
        "describe-configs-topic",
        "alter-configs-topic",
        "incremental-alter-configs-topic",
    )
]
