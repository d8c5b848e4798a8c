"""The cluster and log admin handlers against an in-process broker node, one rule of Kafka's a test:
DescribeCluster, DeleteRecords, OffsetForLeaderEpoch, DescribeProducers and DescribeLogDirs."""

from __future__ import annotations

import os

from kconform.codecs.errors import Errors
from kconform.codecs.messages import (
    DescribeClusterRequest,
    DescribeLogDirsRequest,
    DescribeProducersRequest,
    InitProducerIdRequest,
    ListOffsetsRequest,
    OffsetForLeaderEpochRequest,
)

from ..support.admin_handlers_client import error, run

INT_MIN = -(2**31)


# ---- DescribeCluster ------------------------------------------------------------------------------


def test_describe_cluster_names_this_broker_as_broker_and_controller(tmp_path):
    async def scenario(client, node):
        plain = await client.call(60, 1, DescribeClusterRequest())
        with_ops = await client.call(
            60, 0, DescribeClusterRequest(include_cluster_authorized_operations=True)
        )
        return plain, with_ops, node.cluster_id, node.advertised_address

    plain, with_ops, cluster_id, (host, port) = run(tmp_path, scenario, **{"broker.rack": "r1"})
    assert (plain.error_code, plain.cluster_id, plain.controller_id, plain.endpoint_type) == (
        0,
        cluster_id,
        1,
        1,
    )
    assert [(b.broker_id, b.host, b.port, b.rack) for b in plain.brokers] == [(1, host, port, "r1")]
    assert plain.cluster_authorized_operations == INT_MIN
    assert with_ops.cluster_authorized_operations == sum(1 << op for op in (5, 7, 8, 9, 10, 11, 12))


def test_describe_cluster_endpoint_types(tmp_path):
    async def scenario(client, node):
        return [await client.call(60, 1, DescribeClusterRequest(endpoint_type=t)) for t in (2, 3)]

    controllers, unknown = run(tmp_path, scenario)
    assert error(controllers) == (
        Errors.MISMATCHED_ENDPOINT_TYPE,
        "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER",
    )
    assert error(unknown) == (Errors.UNSUPPORTED_ENDPOINT_TYPE, "Unsupported endpoint type 3")
    assert (unknown.cluster_id, unknown.controller_id, unknown.brokers) == ("", -1, [])


def test_describe_cluster_v2_marks_brokers_fenced_or_not(tmp_path):
    """KafkaApis.handleDescribeCluster (KIP-1073): a broker is listed when ``!node.isFenced ||
    includeFencedBrokers``, with is_fenced from v2. This node answers, so it is not fenced: listed with
    is_fenced false whether fenced brokers are asked for or not."""

    async def scenario(client, node):
        return [
            await client.call(60, 2, DescribeClusterRequest(include_fenced_brokers=flag))
            for flag in (False, True)
        ]

    for answer in run(tmp_path, scenario):
        assert answer.error_code == Errors.NONE
        assert [(b.broker_id, b.is_fenced) for b in answer.brokers] == [(1, False)]


# ---- DeleteRecords --------------------------------------------------------------------------------


def test_delete_records_to_an_offset_moves_the_low_watermark(tmp_path):
    async def scenario(client, node):
        await client.create_topic("trim", partitions=2)
        await client.produce("trim", 0, 10)
        await client.produce("trim", 1, 4)
        result = await client.delete_records("trim", {0: 6, 1: -1})
        earliest = await client.call(
            2,
            7,
            ListOffsetsRequest(
                replica_id=-1,
                topics=[
                    ListOffsetsRequest.ListOffsetsTopic(
                        name="trim",
                        partitions=[ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=-2)],
                    )
                ],
            ),
        )
        return result, earliest.topics[0].partitions[0].offset

    result, earliest = run(tmp_path, scenario)
    assert result == {0: (Errors.NONE, 6), 1: (Errors.NONE, 4)}  # -1 is the high watermark
    assert earliest == 6


def test_delete_records_beyond_the_high_watermark_is_offset_out_of_range(tmp_path):
    async def scenario(client, node):
        await client.create_topic("short")
        await client.produce("short", 0, 3)
        return await client.delete_records("short", {0: 4}), node.partition("short", 0).log_start_offset

    result, start = run(tmp_path, scenario)
    assert result == {0: (Errors.OFFSET_OUT_OF_RANGE, -1)} and start == 0


def test_delete_records_unknown_partition_is_unknown_topic_or_partition(tmp_path):
    async def scenario(client, node):
        await client.create_topic("one")
        return await client.delete_records("one", {3: 0}), await client.delete_records("none", {0: 0})

    known_topic, unknown_topic = run(tmp_path, scenario)
    assert known_topic == {3: (Errors.UNKNOWN_TOPIC_OR_PARTITION, -1)}
    assert unknown_topic == {0: (Errors.UNKNOWN_TOPIC_OR_PARTITION, -1)}


def test_delete_records_on_a_compacted_topic_is_policy_violation(tmp_path):
    async def scenario(client, node):
        await client.create_topic("compacted", cleanup_policy="compact")
        return await client.delete_records("compacted", {0: 0})

    assert run(tmp_path, scenario) == {0: (Errors.POLICY_VIOLATION, -1)}


def test_delete_records_on_an_internal_topic_is_invalid_topic(tmp_path):
    async def scenario(client, node):
        await client.create_topic("__consumer_offsets")
        return await client.delete_records("__consumer_offsets", {0: 0})

    assert run(tmp_path, scenario) == {0: (Errors.INVALID_TOPIC_EXCEPTION, -1)}


# ---- OffsetForLeaderEpoch -------------------------------------------------------------------------


def test_offset_for_leader_epoch_current_epoch_ends_at_the_log_end(tmp_path):
    async def scenario(client, node):
        await client.create_topic("epochs", partitions=2)
        await client.produce("epochs", 0, 5)
        return await client.epoch_end("epochs", 0, 0), await client.epoch_end("epochs", 1, 0)

    written, empty = run(tmp_path, scenario)
    assert written == (Errors.NONE, 0, 5)
    assert empty == (Errors.NONE, 0, 0)  # the leader records its epoch when it takes over


def test_offset_for_leader_epoch_unknown_epochs_are_undefined(tmp_path):
    async def scenario(client, node):
        await client.create_topic("later")
        await client.produce("later", 0, 2)
        return await client.epoch_end("later", 0, 7), await client.epoch_end("later", 0, -1)

    above, undefined = run(tmp_path, scenario)
    assert above == undefined == (Errors.NONE, -1, -1)


def test_offset_for_leader_epoch_checks_the_current_leader_epoch(tmp_path):
    async def scenario(client, node):
        await client.create_topic("fence")
        return [await client.epoch_end("fence", 0, 0, current=c) for c in (-1, 0, 1, -2)]

    unchecked, same, newer, below = run(tmp_path, scenario)
    assert unchecked == same == (Errors.NONE, 0, 0)
    assert newer == (Errors.UNKNOWN_LEADER_EPOCH, -1, -1)
    assert below == (Errors.FENCED_LEADER_EPOCH, -1, -1)  # only -1 means "no epoch"


def test_offset_for_leader_epoch_unknown_partition_and_replica_ids(tmp_path):
    async def scenario(client, node):
        await client.create_topic("replicas")
        missing = await client.epoch_end("replicas", 4, 0)
        as_follower = OffsetForLeaderEpochRequest(
            replica_id=2,
            topics=[
                OffsetForLeaderEpochRequest.OffsetForLeaderTopic(
                    topic=t, partitions=[OffsetForLeaderEpochRequest.OffsetForLeaderPartition(partition=0)]
                )
                for t in ("replicas", "replicas")
            ],
        )
        return missing, await client.call(23, 4, as_follower)

    missing, as_follower = run(tmp_path, scenario)
    assert missing == (Errors.UNKNOWN_TOPIC_OR_PARTITION, -1, -1)
    assert [
        (t.topic, [(p.error_code, p.leader_epoch, p.end_offset) for p in t.partitions])
        for t in as_follower.topics
    ] == [("replicas", [(Errors.NONE, 0, 0)])] * 2


# ---- DescribeProducers ----------------------------------------------------------------------------


def test_describe_producers_lists_the_idempotent_producers_of_a_partition(tmp_path):
    async def scenario(client, node):
        await client.create_topic("idem")
        init = await client.call(
            22, 4, InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000)
        )
        pid = init.producer_id
        await client.produce("idem", 0, 3, producer_id=pid, producer_epoch=0, base_sequence=0)
        await client.produce("idem", 0, 2, producer_id=pid, producer_epoch=0, base_sequence=3)
        request = DescribeProducersRequest(
            topics=[DescribeProducersRequest.TopicRequest(name="idem", partition_indexes=[0])]
        )
        return pid, await client.call(61, 0, request)

    pid, response = run(tmp_path, scenario)
    partition = response.topics[0].partitions[0]
    assert (partition.error_code, partition.error_message) == (Errors.NONE, None)
    [state] = partition.active_producers
    assert (state.producer_id, state.producer_epoch, state.last_sequence) == (pid, 0, 4)
    assert state.last_timestamp == 1_700_000_000_001
    assert (state.coordinator_epoch, state.current_txn_start_offset) == (-1, -1)


def test_describe_producers_errors(tmp_path):
    async def scenario(client, node):
        await client.create_topic("known")
        request = DescribeProducersRequest(
            topics=[
                DescribeProducersRequest.TopicRequest(name="known", partition_indexes=[9]),
                DescribeProducersRequest.TopicRequest(name="unknown", partition_indexes=[0, 1]),
                DescribeProducersRequest.TopicRequest(name="bad name", partition_indexes=[0]),
            ]
        )
        return await client.call(61, 0, request)

    known, unknown, bad = run(tmp_path, scenario).topics
    assert [error(p) for p in known.partitions] == [(Errors.UNKNOWN_TOPIC_OR_PARTITION, None)]
    assert [error(p) for p in unknown.partitions] == [
        (Errors.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition.")
    ] * 2
    assert bad.partitions[0].error_code == Errors.INVALID_TOPIC_EXCEPTION


# ---- DescribeLogDirs ------------------------------------------------------------------------------


def test_describe_log_dirs_reports_partition_sizes_and_disk_space(tmp_path):
    async def scenario(client, node):
        await client.create_topic("sized", partitions=2)
        await client.produce("sized", 1, 20)
        all_topics = await client.call(35, 4, DescribeLogDirsRequest(topics=None))
        return all_topics, node.partition("sized", 1).log.size_in_bytes

    response, size = run(tmp_path, scenario)
    [result] = response.results
    assert (response.error_code, result.error_code, result.log_dir) == (0, 0, str(tmp_path / "data"))
    [topic] = result.topics
    assert topic.name == "sized"
    assert [
        (p.partition_index, p.partition_size, p.offset_lag, p.is_future_key) for p in topic.partitions
    ] == [
        (0, 0, 0, False),
        (1, size, 0, False),
    ]
    assert size > 0
    stats = os.statvfs(tmp_path)
    assert (
        result.total_bytes == stats.f_blocks * stats.f_frsize
        and 0 <= result.usable_bytes <= result.total_bytes
    )


def test_describe_log_dirs_only_the_partitions_asked_for(tmp_path):
    async def scenario(client, node):
        await client.create_topic("a", partitions=2)
        await client.create_topic("b")
        only = DescribeLogDirsRequest(
            topics=[
                DescribeLogDirsRequest.DescribableLogDirTopic(topic="a", partitions=[1, 7]),
                DescribeLogDirsRequest.DescribableLogDirTopic(topic="zzz", partitions=[0]),
            ]
        )
        return await client.call(35, 3, only), await client.call(35, 1, DescribeLogDirsRequest(topics=[]))

    only, none = run(tmp_path, scenario)
    assert [(t.name, [p.partition_index for p in t.partitions]) for t in only.results[0].topics] == [
        ("a", [1])
    ]
    assert only.results[0].total_bytes == -1  # v4+ only
    assert none.results[0].topics == []


def test_describe_log_dirs_v5_says_whether_a_dir_is_cordoned(tmp_path):
    """DescribeLogDirs v5 (KIP-1066, Kafka 4.3): is_cordoned per log dir, true only for the dirs
    ``cordoned.log.dirs`` names (ServerLogConfigs.CORDONED_LOG_DIRS_CONFIG). This broker has no such
    setting, as a Kafka 4.3 broker with it unset: every dir answers false."""

    async def scenario(client, node):
        return await client.call(35, 5, DescribeLogDirsRequest(topics=None))

    answer = run(tmp_path, scenario, kafka_version="4.3")
    assert [(r.error_code, r.is_cordoned) for r in answer.results] == [(Errors.NONE, False)]
