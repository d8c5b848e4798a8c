"""What the classic group-rule suites of ``reference_broker`` share (``test_group_rules*.py``): the
API keys, ``Cluster`` (a broker node with group request helpers), ``run``, ``subscription`` and
``stable_group``."""

from __future__ import annotations

import asyncio
import struct
from dataclasses import dataclass

from kconform.codecs.errors import Errors
from kconform.codecs.messages import (
    ConsumerProtocolSubscription,
    CreateTopicsRequest,
    DescribeGroupsRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)
from kconform.codecs.releases import kafka_release
from kconform.reference_broker.node import BrokerNode

from .rawclient import RawClient

FIND_COORDINATOR, JOIN, HEARTBEAT, LEAVE, SYNC, DESCRIBE, LIST = 10, 11, 12, 13, 14, 15, 16


OFFSET_COMMIT, OFFSET_FETCH, DELETE_GROUPS, OFFSET_DELETE, CREATE_TOPICS = 8, 9, 42, 47, 19


FAST = {
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "100",
    "offsets.topic.num.partitions": "5",
}


def subscription(*topics: str) -> bytes:
    return struct.pack(">h", 1) + ConsumerProtocolSubscription(topics=list(topics)).encode(1)


@dataclass
class Cluster:
    node: BrokerNode
    host: str
    port: int
    client: RawClient

    async def connect(self) -> RawClient:
        return await RawClient.connect(self.host, self.port)

    async def create_topic(self, name: str, partitions: int = 1) -> None:
        topic = CreateTopicsRequest.CreatableTopic(name=name, num_partitions=partitions, replication_factor=1)
        body = await self.client.call(CREATE_TOPICS, 7, CreateTopicsRequest(topics=[topic], timeout_ms=5000))
        assert body.topics[0].error_code == Errors.NONE

    async def join(
        self,
        group: str,
        member_id: str = "",
        *,
        client: RawClient | None = None,
        version: int = 9,
        instance_id: str | None = None,
        protocol_type: str = "consumer",
        protocols: tuple[str, ...] = ("range",),
        session_timeout_ms: int = 10_000,
        rebalance_timeout_ms: int = 2_000,
        topics: tuple[str, ...] = ("t",),
    ):
        request = JoinGroupRequest(
            group_id=group,
            session_timeout_ms=session_timeout_ms,
            rebalance_timeout_ms=rebalance_timeout_ms,
            member_id=member_id,
            group_instance_id=instance_id,
            protocol_type=protocol_type,
            protocols=[
                JoinGroupRequest.JoinGroupRequestProtocol(name=p, metadata=subscription(*topics))
                for p in protocols
            ],
        )
        return await (client or self.client).call(JOIN, version, request, timeout=15)

    async def join_member(self, group: str, **kwargs):
        """A full join (MEMBER_ID_REQUIRED, then again with the id) on a new connection of its own."""
        client = await self.connect()
        first = await self.join(group, client=client, **kwargs)
        assert first.error_code == Errors.MEMBER_ID_REQUIRED, first
        return client, first.member_id

    async def sync(
        self, group, generation, member_id, assignments=(), *, client=None, version=5, name="range"
    ):
        request = SyncGroupRequest(
            group_id=group,
            generation_id=generation,
            member_id=member_id,
            protocol_type="consumer",
            protocol_name=name,
            assignments=[
                SyncGroupRequest.SyncGroupRequestAssignment(member_id=m, assignment=a) for m, a in assignments
            ],
        )
        return await (client or self.client).call(SYNC, version, request, timeout=15)

    async def heartbeat(self, group, generation, member_id, instance_id=None, client=None):
        request = HeartbeatRequest(
            group_id=group, generation_id=generation, member_id=member_id, group_instance_id=instance_id
        )
        return (await (client or self.client).call(HEARTBEAT, 4, request)).error_code

    async def describe(self, group):
        body = await self.client.call(DESCRIBE, 5, DescribeGroupsRequest(groups=[group]))
        return body.groups[0]

    async def commit(self, group, offsets, *, generation=-1, member_id="", version=9, metadata="", topic="t"):
        request = OffsetCommitRequest(
            group_id=group,
            generation_id_or_member_epoch=generation,
            member_id=member_id,
            topics=[
                OffsetCommitRequest.OffsetCommitRequestTopic(
                    name=topic,
                    partitions=[
                        OffsetCommitRequest.OffsetCommitRequestPartition(
                            partition_index=p, committed_offset=o, committed_metadata=metadata
                        )
                        for p, o in offsets.items()
                    ],
                )
            ],
        )
        body = await self.client.call(OFFSET_COMMIT, version, request)
        return {p.partition_index: p.error_code for p in body.topics[0].partitions}

    async def fetch_offsets(self, group, partitions, *, topic="t", require_stable=False):
        request = OffsetFetchRequest(
            groups=[
                OffsetFetchRequest.OffsetFetchRequestGroup(
                    group_id=group,
                    topics=[
                        OffsetFetchRequest.OffsetFetchRequestTopics(
                            name=topic, partition_indexes=list(partitions)
                        )
                    ],
                )
            ],
            require_stable=require_stable,
        )
        body = await self.client.call(OFFSET_FETCH, 8, request)
        return {
            p.partition_index: (p.committed_offset, p.error_code)
            for t in body.groups[0].topics
            for p in t.partitions
        }


def run(tmp_path, scenario, *, kafka_version: str | None = None, **overrides: str):
    async def main():
        props = {"node.id": "1", "log.dirs": str(tmp_path / "data"), **FAST}
        props.update(overrides)
        release = kafka_release(kafka_version) if kafka_version else None
        node = BrokerNode.from_config_file(None, props, kafka_release=release)
        host, port = await node.start("127.0.0.1", 0)
        client = await RawClient.connect(host, port)
        try:
            cluster = Cluster(node, host, port, client)
            await cluster.create_topic("t", 2)
            return await scenario(cluster)
        finally:
            await client.close()
            await node.stop()

    return asyncio.run(asyncio.wait_for(main(), 60))


async def stable_group(c: Cluster, group: str, members: int = 1, **kwargs):
    """``members`` members joined and synced: [(client, member id)], generation, leader."""
    joined = [await c.join_member(group, **kwargs) for _ in range(members)]
    answers = await asyncio.gather(*(c.join(group, m, client=cl, **kwargs) for cl, m in joined))
    assert all(a.error_code == Errors.NONE for a in answers), answers
    generation, leader = answers[0].generation_id, answers[0].leader
    plan = [(m, f"assignment-{m}".encode()) for _, m in joined]
    syncs = await asyncio.gather(
        *(c.sync(group, generation, m, plan if m == leader else (), client=cl) for cl, m in joined)
    )
    assert all(s.error_code == Errors.NONE for s in syncs), syncs
    return joined, generation, leader
