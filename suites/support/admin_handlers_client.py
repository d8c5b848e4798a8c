"""What the admin-handler suites of ``reference_broker`` share (``test_admin_handlers_*.py``): the
config resource types and operations, ``AdminTestClient`` (a broker node with admin request helpers),
``run`` and ``error``."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from kconform.codecs.errors import Errors
from kconform.codecs.messages import (
    AlterConfigsRequest,
    CreateTopicsRequest,
    DeleteRecordsRequest,
    DescribeConfigsRequest,
    IncrementalAlterConfigsRequest,
    OffsetForLeaderEpochRequest,
    ProduceRequest,
)
from kconform.codecs.records import Record, encode_batch
from kconform.codecs.releases import kafka_release
from kconform.reference_broker.node import BrokerNode

from .rawclient import RawClient

TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8


SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


class AdminTestClient(RawClient):
    """The shared raw client, plus the requests these tests share."""

    # ---- requests the tests share -------------------------------------------------------------

    async def create_topic(self, name: str, partitions: int = 1, **configs: str) -> None:
        topic = CreateTopicsRequest.CreatableTopic(
            name=name,
            num_partitions=partitions,
            replication_factor=1,
            configs=[
                CreateTopicsRequest.CreatableTopicConfig(name=k.replace("_", "."), value=v)
                for k, v in configs.items()
            ],
        )
        response = await self.call(19, 7, CreateTopicsRequest(topics=[topic], timeout_ms=5000))
        assert response.topics[0].error_code == Errors.NONE, response

    async def produce(self, topic: str, partition: int, count: int, **batch_fields) -> int:
        records = [Record(i, 1_700_000_000_000 + i, b"k%d" % i, b"v%d" % i) for i in range(count)]
        data = ProduceRequest.TopicProduceData(
            name=topic,
            partition_data=[
                ProduceRequest.PartitionProduceData(
                    index=partition, records=encode_batch(records, **batch_fields)
                )
            ],
        )
        response = await self.call(0, 9, ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[data]))
        result = response.responses[0].partition_responses[0]
        assert result.error_code == Errors.NONE, result
        return result.base_offset

    async def describe(self, kind: int, name: str, keys=None, *, version: int = 4, synonyms: bool = False):
        resource = DescribeConfigsRequest.DescribeConfigsResource(
            resource_type=kind, resource_name=name, configuration_keys=keys
        )
        request = DescribeConfigsRequest(resources=[resource], include_synonyms=synonyms)
        return (await self.call(32, version, request)).results[0]

    async def topic_configs(self, name: str) -> dict[str, tuple[str | None, int]]:
        result = await self.describe(TOPIC, name)
        assert result.error_code == Errors.NONE, result
        return {c.name: (c.value, c.config_source) for c in result.configs}

    async def alter(self, *resources: tuple[int, str, dict], validate_only: bool = False):
        request = AlterConfigsRequest(
            resources=[
                AlterConfigsRequest.AlterConfigsResource(
                    resource_type=kind,
                    resource_name=name,
                    configs=[
                        AlterConfigsRequest.AlterableConfig(name=k, value=v) for k, v in configs.items()
                    ],
                )
                for kind, name, configs in resources
            ],
            validate_only=validate_only,
        )
        return (await self.call(33, 2, request)).responses

    async def incremental(self, *resources: tuple[int, str, list], validate_only: bool = False):
        request = IncrementalAlterConfigsRequest(
            resources=[
                IncrementalAlterConfigsRequest.AlterConfigsResource(
                    resource_type=kind,
                    resource_name=name,
                    configs=[
                        IncrementalAlterConfigsRequest.AlterableConfig(name=k, config_operation=op, value=v)
                        for k, op, v in ops
                    ],
                )
                for kind, name, ops in resources
            ],
            validate_only=validate_only,
        )
        return (await self.call(44, 1, request)).responses

    async def delete_records(self, topic: str, offsets: dict[int, int]):
        partitions = [
            DeleteRecordsRequest.DeleteRecordsPartition(partition_index=p, offset=o)
            for p, o in offsets.items()
        ]
        request = DeleteRecordsRequest(
            topics=[DeleteRecordsRequest.DeleteRecordsTopic(name=topic, partitions=partitions)],
            timeout_ms=5000,
        )
        return {
            p.partition_index: (p.error_code, p.low_watermark)
            for p in (await self.call(21, 2, request)).topics[0].partitions
        }

    async def epoch_end(
        self, topic: str, partition: int, leader_epoch: int, current: int = -1, version: int = 4
    ):
        request = OffsetForLeaderEpochRequest(
            topics=[
                OffsetForLeaderEpochRequest.OffsetForLeaderTopic(
                    topic=topic,
                    partitions=[
                        OffsetForLeaderEpochRequest.OffsetForLeaderPartition(
                            partition=partition, current_leader_epoch=current, leader_epoch=leader_epoch
                        )
                    ],
                )
            ]
        )
        out = (await self.call(23, version, request)).topics[0].partitions[0]
        return out.error_code, out.leader_epoch, out.end_offset


def run(
    tmp_path,
    scenario: Callable[[RawClient, BrokerNode], Awaitable[object]],
    *,
    kafka_version: str | None = None,
    **overrides: str,
):
    """Start a node on a free port with ``overrides`` (answering as ``kafka_version``, default the
    newest release the codecs cover), run the scenario with a raw client, stop it."""

    async def main():
        props = {"node.id": "1", "log.dirs": str(tmp_path / "data")}
        props.update(overrides)
        release = kafka_release(kafka_version) if kafka_version else None
        node = BrokerNode.from_config_file(None, props, kafka_release=release)
        host, port = await node.start("127.0.0.1", 0)
        try:
            reader, writer = await asyncio.open_connection(host, port)
            try:
                return await scenario(AdminTestClient(reader, writer, client_id="admin-tests"), node)
            finally:
                writer.close()
        finally:
            await node.stop()

    return asyncio.run(asyncio.wait_for(main(), 60))


def error(result) -> tuple[int, str | None]:
    return result.error_code, result.error_message
