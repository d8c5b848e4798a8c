"""What the mixed-group suites (``test_mixed_groups.py``, ``test_group_migration.py``) share: ``Mixed``, the
classic-group suites' ``Cluster`` (JoinGroup, SyncGroup, Heartbeat, DescribeGroups helpers) with the
consumer protocol's requests beside them, and ``run``, which can start a node again on the same log
directory to see what a restart reads back."""

from __future__ import annotations

import asyncio
import struct
from dataclasses import dataclass

from kconform.codecs.errors import Errors
from kconform.codecs.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
    JoinGroupRequest,
    LeaveGroupRequest,
    ListGroupsRequest,
)
from kconform.reference_broker.node import BrokerNode

from ...support.group_rules_cluster import FAST, JOIN, LEAVE, LIST, Cluster
from ...support.rawclient import RawClient

CONSUMER_HEARTBEAT, CONSUMER_DESCRIBE = 68, 69
GROUP = "cg"


def subscription(*topics: str, version: int = 1) -> bytes:
    """A consumer's JoinGroup metadata: ``ConsumerProtocolSubscription`` after its int16 version."""
    return struct.pack(">h", version) + ConsumerProtocolSubscription(topics=list(topics)).encode(
        min(version, 3)
    )


def assignment(data: bytes) -> tuple[int, dict[str, list[int]]]:
    """(version, partitions by topic) of a SyncGroup assignment, read as a consumer reads it."""
    version = struct.unpack(">h", data[:2])[0]
    body, _ = ConsumerProtocolAssignment.decode_lenient(data[2:], min(version, 3))
    return version, {tp.topic: sorted(tp.partitions) for tp in body.assigned_partitions}


def assignment_bytes(partitions: dict[str, list[int]], version: int = 1) -> bytes:
    body = ConsumerProtocolAssignment(
        assigned_partitions=[
            ConsumerProtocolAssignment.TopicPartition(topic=t, partitions=p) for t, p in partitions.items()
        ]
    )
    return struct.pack(">h", version) + body.encode(version)


@dataclass
class Mixed(Cluster):
    async def beat(self, member_id: str, epoch: int, group: str = GROUP, **fields):
        """A ConsumerGroupHeartbeat (v1); ``epoch`` 0 joins with the subscription to "t"."""
        request = dict(group_id=group, member_id=member_id, member_epoch=epoch)
        if epoch == 0:
            request.update(rebalance_timeout_ms=5000, subscribed_topic_names=["t"], topic_partitions=[])
        request.update(fields)
        return await self.client.call(CONSUMER_HEARTBEAT, 1, ConsumerGroupHeartbeatRequest(**request))

    async def classic_join(
        self,
        member_id: str = "",
        *,
        group: str = GROUP,
        version: int = 9,
        instance_id: str | None = None,
        protocols: tuple[tuple[str, bytes], ...] | None = None,
        protocol_type: str = "consumer",
        session_timeout_ms: int = 10_000,
        rebalance_timeout_ms: int = 2_000,
        client: RawClient | None = None,
    ):
        """A JoinGroup whose metadata is a consumer's subscription to "t" unless ``protocols`` says."""
        request = JoinGroupRequest(
            group_id=group,
            session_timeout_ms=session_timeout_ms,
            rebalance_timeout_ms=rebalance_timeout_ms,
            member_id=member_id,
            group_instance_id=instance_id,
            protocol_type=protocol_type,
            protocols=[
                JoinGroupRequest.JoinGroupRequestProtocol(name=name, metadata=metadata)
                for name, metadata in (protocols or (("range", subscription("t")),))
            ],
        )
        return await (client or self.client).call(JOIN, version, request, timeout=15)

    async def classic_member(self, group: str = GROUP, **kwargs):
        """A dynamic member's whole join (MEMBER_ID_REQUIRED, then again with the id): its answer."""
        first = await self.classic_join(group=group, **kwargs)
        assert first.error_code == Errors.MEMBER_ID_REQUIRED, first
        return await self.classic_join(first.member_id, group=group, **kwargs)

    async def leave(self, members: list[tuple[str, str | None]], group: str = GROUP):
        request = LeaveGroupRequest(
            group_id=group,
            members=[LeaveGroupRequest.MemberIdentity(member_id=m, group_instance_id=i) for m, i in members],
        )
        return await self.client.call(LEAVE, 3, request)

    async def consumer_describe(self, group: str = GROUP):
        request = ConsumerGroupDescribeRequest(group_ids=[group])
        return (await self.client.call(CONSUMER_DESCRIBE, 1, request)).groups[0]

    async def listed(self) -> dict[str, tuple[str, str, str]]:
        """ListGroups v5: group id -> (group type, state, protocol type)."""
        body = await self.client.call(LIST, 5, ListGroupsRequest())
        return {g.group_id: (g.group_type, g.group_state, g.protocol_type) for g in body.groups}

    async def members(self, group: str = GROUP) -> dict[str, tuple[int, int]]:
        """ConsumerGroupDescribe: member id -> (member type, member epoch)."""
        described = await self.consumer_describe(group)
        return {m.member_id: (m.member_type, m.member_epoch) for m in described.members}


def run(tmp_path, scenario, *, create_topic: bool = True, **overrides: str):
    """Start a node on ``tmp_path`` (with topic "t" of 2 partitions unless the log already has it), run
    ``scenario(Mixed)``, stop the node. Run it again on the same ``tmp_path`` for a restart."""

    async def main():
        props = {"node.id": "1", "log.dirs": str(tmp_path / "data"), **FAST, **overrides}
        node = BrokerNode.from_config_file(None, props)
        host, port = await node.start("127.0.0.1", 0)
        client = await RawClient.connect(host, port)
        try:
            mixed = Mixed(node, host, port, client)
            if create_topic:
                await mixed.create_topic("t", 2)
            return await scenario(mixed)
        finally:
            await client.close()
            await node.stop()

    return asyncio.run(asyncio.wait_for(main(), 60))
