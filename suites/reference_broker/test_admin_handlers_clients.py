"""The admin APIs driven by confluent-kafka and kafka-python against a broker process, and every
version of each admin API answered by an in-process broker node."""

from __future__ import annotations

import uuid

import pytest

from kconform.codecs.messages import (
    AlterConfigsRequest,
    DeleteRecordsRequest,
    DescribeClusterRequest,
    DescribeConfigsRequest,
    DescribeLogDirsRequest,
    DescribeProducersRequest,
    IncrementalAlterConfigsRequest,
    OffsetForLeaderEpochRequest,
)

from ..support.admin_handlers_client import SET, TOPIC, run

# ---- real clients ---------------------------------------------------------------------------------


@pytest.mark.peer
@pytest.mark.slow
def test_real_admin_clients_drive_the_admin_apis(tmp_path):
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        NewTopic,
    )
    from kafka import KafkaProducer
    from kafka import TopicPartition as KTopicPartition
    from kafka.admin import ConfigResource as KConfigResource
    from kafka.admin import ConfigResourceType, KafkaAdminClient

    from kconform.reference_broker.process import start_broker_process

    broker = start_broker_process(tmp_path / "broker")
    try:
        topic = f"admin-{uuid.uuid4().hex[:8]}"
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)])[topic].result(15)

        resource = ConfigResource("TOPIC", topic)
        described = admin.describe_configs([resource])[resource].result(15)
        assert described["retention.ms"].value == "604800000" and described["retention.ms"].is_default

        resource.set_config("retention.ms", "3600000")
        admin.alter_configs([resource])[resource].result(15)
        ops = [
            ConfigEntry("segment.ms", "7200000", incremental_operation=AlterConfigOpType.SET),
            ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND),
        ]
        incremental = ConfigResource("TOPIC", topic, incremental_configs=ops)
        admin.incremental_alter_configs([incremental])[incremental].result(15)
        described = admin.describe_configs([ConfigResource("TOPIC", topic)])
        described = next(iter(described.values())).result(15)
        assert described["retention.ms"].value == "3600000"
        assert described["segment.ms"].value == "7200000"
        assert described["cleanup.policy"].value == "delete,compact"

        cluster = admin.describe_cluster(include_authorized_operations=True).result(15)
        assert [n.id for n in cluster.nodes] == [1] and cluster.controller.id == 1 and cluster.cluster_id

        producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all", enable_idempotence=True)
        for i in range(10):
            producer.send(topic, key=b"k%d" % i, value=b"v%d" % i, partition=0)
        producer.flush(15)
        producer.close()
        deleted = admin.delete_records([TopicPartition(topic, 0, 4)])
        low = next(iter(deleted.values())).result(15)
        assert low.low_watermark == 4

        kadmin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
        try:
            configs = kadmin.describe_configs(
                [KConfigResource(ConfigResourceType.TOPIC, topic, configs={"retention.ms": None})],
                config_filter="all",
            )
            retention = configs["topic"][topic]["retention.ms"]
            assert (retention["value"], retention["config_source"]) == ("3600000", "DYNAMIC_TOPIC_CONFIG")
            producers = kadmin.describe_producers([KTopicPartition(topic, 0)])
            [state] = producers[KTopicPartition(topic, 0)].active_producers
            assert state.last_sequence == 9
            [dirs] = kadmin.describe_log_dirs()
            [log_dir] = dirs["log_dirs"]
            sizes = {t["name"]: [p["partition_index"] for p in t["partitions"]] for t in log_dir["topics"]}
            assert sizes[topic] == [0, 1]
            assert kadmin.describe_cluster()["controller_id"] == 1
        finally:
            kadmin.close()
    finally:
        broker.stop()
    assert broker.process.returncode == 0, "\n".join(broker.output[-40:])


# ---- every version ----------------------------------------------------------------------------------


def test_every_version_of_the_admin_apis_is_answered(tmp_path):
    from kconform.codecs import api_schema

    def requests():
        keys = DescribeConfigsRequest.DescribeConfigsResource(resource_type=TOPIC, resource_name="v")
        yield 32, DescribeConfigsRequest(resources=[keys], include_synonyms=True)
        resource = AlterConfigsRequest.AlterConfigsResource(
            resource_type=TOPIC,
            resource_name="v",
            configs=[AlterConfigsRequest.AlterableConfig("retention.ms", "9")],
        )
        yield 33, AlterConfigsRequest(resources=[resource])
        op = IncrementalAlterConfigsRequest.AlterableConfig(
            name="segment.ms", config_operation=SET, value="9999"
        )
        yield (
            44,
            IncrementalAlterConfigsRequest(
                resources=[IncrementalAlterConfigsRequest.AlterConfigsResource(TOPIC, "v", [op])]
            ),
        )
        yield 60, DescribeClusterRequest(include_cluster_authorized_operations=True)
        yield (
            21,
            DeleteRecordsRequest(
                topics=[
                    DeleteRecordsRequest.DeleteRecordsTopic(
                        "v", [DeleteRecordsRequest.DeleteRecordsPartition(0, -1)]
                    )
                ]
            ),
        )
        yield (
            23,
            OffsetForLeaderEpochRequest(
                topics=[
                    OffsetForLeaderEpochRequest.OffsetForLeaderTopic(
                        "v",
                        [OffsetForLeaderEpochRequest.OffsetForLeaderPartition(partition=0, leader_epoch=0)],
                    )
                ]
            ),
        )
        yield 61, DescribeProducersRequest(topics=[DescribeProducersRequest.TopicRequest("v", [0])])
        yield 35, DescribeLogDirsRequest(topics=None)

    async def scenario(client, node):
        await client.create_topic("v")
        await client.produce("v", 0, 2)
        answers = {}
        for api_key, body in requests():
            low, high = api_schema(api_key).valid_versions
            answers[api_key] = {}
            for version in range(low, high + 1):
                if not node.dispatcher.serves(api_key, version):
                    continue
                if api_key == 32:
                    body.include_synonyms = version >= 1
                answers[api_key][version] = await client.call(api_key, version, body)
        return answers

    # Kafka 3.9 serves the versions 4.0 removed; the default release the newest ones but DescribeLogDirs
    # v5, which is Kafka 4.3's
    old, new = run(tmp_path / "3.9", scenario, kafka_version="3.9"), run(tmp_path / "new", scenario)
    newest = run(tmp_path / "4.3", scenario, kafka_version="4.3")
    answers = {key: list({**old[key], **new[key], **newest[key]}.values()) for key in old}
    for key, by_version in answers.items():
        low, high = api_schema(key).valid_versions
        assert len(by_version) == high - low + 1, f"{api_schema(key).name}: some version never served"
    assert all(r.error_code == 0 and len(r.configs) > 30 for r in (x.results[0] for x in answers[32]))
    assert all(x.responses[0].error_code == 0 for x in answers[33] + answers[44])
    assert all(x.error_code == 0 and x.controller_id == 1 for x in answers[60])
    assert all(x.topics[0].partitions[0].error_code == 0 for x in answers[21] + answers[23] + answers[61])
    assert all(x.results[0].topics[0].name == "v" for x in answers[35])
