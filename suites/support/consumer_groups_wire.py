"""What the consumer-group suites of ``reference_broker`` share (``test_consumer_groups_*.py``): the
API keys, ``Env`` (a broker node with raw-client helpers for ConsumerGroupHeartbeat and friends),
``run`` and the small helpers that read a member's assignment."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass

from kconform.codecs.errors import Errors
from kconform.codecs.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
    CreatePartitionsRequest,
    CreateTopicsRequest,
    OffsetCommitRequest,
)
from kconform.reference_broker.node import BrokerNode

from .rawclient import RawClient

HEARTBEAT, DESCRIBE = 68, 69


OFFSET_COMMIT, OFFSET_FETCH, JOIN, LIST_GROUPS, DELETE_GROUPS = 8, 9, 11, 16, 42


CREATE_TOPICS, CREATE_PARTITIONS, OFFSET_DELETE, TXN_OFFSET_COMMIT = 19, 37, 47, 28


# ---- 4. through the wire ---------------------------------------------------------------------------


@dataclass
class Env:
    node: BrokerNode
    client: RawClient
    host: str
    port: int

    async def beat(self, version: int = 1, **fields):
        return await self.client.call(HEARTBEAT, version, ConsumerGroupHeartbeatRequest(**fields))

    async def join(self, member_id: str | None = None, group: str = "cg", version: int = 1, **fields):
        request = dict(
            group_id=group,
            member_id=uuid.uuid4().hex if member_id is None else member_id,
            member_epoch=0,
            rebalance_timeout_ms=5000,
            subscribed_topic_names=["t"],
            topic_partitions=[],
        )
        request.update(fields)
        return await self.beat(version, **request)

    async def poll(self, member_id: str, epoch: int, owned, group: str = "cg", **fields):
        return await self.beat(
            group_id=group, member_id=member_id, member_epoch=epoch, topic_partitions=owned, **fields
        )

    async def describe(self, *groups: str, include_operations: bool = False):
        request = ConsumerGroupDescribeRequest(
            group_ids=list(groups), include_authorized_operations=include_operations
        )
        return (await self.client.call(DESCRIBE, 0, request)).groups

    async def create_topic(self, name: str, partitions: int) -> uuid.UUID:
        topic = CreateTopicsRequest.CreatableTopic(name=name, num_partitions=partitions, replication_factor=1)
        body = await self.client.call(CREATE_TOPICS, 7, CreateTopicsRequest(topics=[topic], timeout_ms=5000))
        assert body.topics[0].error_code == Errors.NONE
        return body.topics[0].topic_id

    async def grow(self, name: str, count: int) -> None:
        topic = CreatePartitionsRequest.CreatePartitionsTopic(name=name, count=count, assignments=None)
        body = await self.client.call(
            CREATE_PARTITIONS, 3, CreatePartitionsRequest(topics=[topic], timeout_ms=5000)
        )
        assert body.results[0].error_code == Errors.NONE

    async def commit(self, member_id: str, epoch: int, group: str = "cg", version: int = 9) -> int:
        partition = OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=1)
        request = OffsetCommitRequest(
            group_id=group,
            generation_id_or_member_epoch=epoch,
            member_id=member_id,
            topics=[OffsetCommitRequest.OffsetCommitRequestTopic(name="t", partitions=[partition])],
        )
        return (await self.client.call(OFFSET_COMMIT, version, request)).topics[0].partitions[0].error_code


def owned(response) -> list:
    """The request's TopicPartitions for an assignment a response gave."""
    return [
        ConsumerGroupHeartbeatRequest.TopicPartitions(topic_id=tp.topic_id, partitions=list(tp.partitions))
        for tp in response.assignment.topic_partitions
    ]


def parts(response) -> list[int]:
    return sorted(p for tp in response.assignment.topic_partitions for p in tp.partitions)


FAST = {
    "offsets.topic.num.partitions": "3",
    "group.min.session.timeout.ms": "100",
    "group.initial.rebalance.delay.ms": "0",
}


def run(tmp_path, scenario, topics=(("t", 2),), **overrides: str):
    async def main():
        props = {"node.id": "1", "log.dirs": str(tmp_path / "data"), **FAST, **overrides}
        node = BrokerNode.from_config_file(None, props)
        host, port = await node.start("127.0.0.1", 0)
        client = await RawClient.connect(host, port)
        try:
            env = Env(node, client, host, port)
            for name, count in topics:
                await env.create_topic(name, count)
            return await scenario(env)
        finally:
            await client.close()
            await node.stop()

    return asyncio.run(asyncio.wait_for(main(), 30))
