"""Request builders and response readers for the group APIs (ListGroups, DescribeGroups,
ConsumerGroupDescribe, OffsetFetch) and the consumer protocol's bytes embedded in classic groups:
plain functions of data, without I/O."""

from __future__ import annotations

from kconform.codecs import DecodeError
from kconform.codecs.messages import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
    OffsetFetchRequest,
)

from ..errors import BrokerError
from ._requests import by_topic
from ._types import UNKNOWN_EPOCH, GroupDescription, GroupListing, MemberDescription, OffsetAndMetadata

__all__ = [
    "CONSUMER_GROUP_DESCRIBE",
    "DESCRIBE_GROUPS",
    "LIST_GROUPS",
    "OFFSET_FETCH",
    "OFFSET_FETCH_BY_NAME_MAX",
    "build_offset_fetch",
    "decode_consumer_assignment",
    "decode_consumer_subscription",
    "read_classic_group",
    "read_committed_offsets",
    "read_consumer_group",
    "read_group_listings",
]

OFFSET_FETCH = 9
OFFSET_FETCH_BY_NAME_MAX = 9  # v10 names topics by id
DESCRIBE_GROUPS = 15
LIST_GROUPS = 16
CONSUMER_GROUP_DESCRIBE = 69


# ---- the consumer protocol's embedded bytes --------------------------------------------------------


def _consumer_protocol_version(data: bytes, schema) -> int:
    version = int.from_bytes(data[:2], "big", signed=True)
    low, high = schema._message_.valid_versions
    if version < low:
        raise DecodeError(schema.__name__, version, "version below the lowest the consumer protocol has")
    return min(version, high)  # newer versions only add fields at the end, as Java's ConsumerProtocol reads


def decode_consumer_assignment(data: bytes) -> list[tuple[str, int]]:
    """The (topic, partition) pairs in a classic consumer group member's assignment (empty bytes: none)."""
    if not data:
        return []
    message, _ = ConsumerProtocolAssignment.decode_lenient(
        memoryview(data)[2:], _consumer_protocol_version(data, ConsumerProtocolAssignment)
    )
    return sorted((tp.topic, p) for tp in message.assigned_partitions for p in tp.partitions)


def decode_consumer_subscription(data: bytes) -> list[str]:
    """The topics a classic consumer group member subscribes to."""
    if not data:
        return []
    message, _ = ConsumerProtocolSubscription.decode_lenient(
        memoryview(data)[2:], _consumer_protocol_version(data, ConsumerProtocolSubscription)
    )
    return list(message.topics)


# ---- listing and describing groups ----------------------------------------------------------------


def read_group_listings(response, version: int) -> list[GroupListing]:
    return [
        GroupListing(
            g.group_id,
            g.protocol_type,
            g.group_state if version >= 4 else None,
            g.group_type if version >= 5 else None,
        )
        for g in response.groups
    ]


def read_classic_group(described, coordinator: int) -> GroupDescription:
    is_consumer = described.protocol_type == "consumer"
    members = []
    for m in described.members:
        assignment = subscribed = None
        if is_consumer:
            try:
                assignment = decode_consumer_assignment(bytes(m.member_assignment))
                subscribed = decode_consumer_subscription(bytes(m.member_metadata))
            except DecodeError:
                pass  # the raw bytes stay on the member for the caller to judge
        members.append(
            MemberDescription(
                m.member_id,
                m.group_instance_id,
                m.client_id,
                m.client_host,
                assignment,
                subscribed,
                raw_metadata=bytes(m.member_metadata),
                raw_assignment=bytes(m.member_assignment),
            )
        )
    return GroupDescription(
        described.group_id,
        "classic",
        described.group_state,
        described.protocol_type,
        described.protocol_data,
        members,
        coordinator,
    )


def read_consumer_group(described, coordinator: int) -> GroupDescription:
    def pairs(assignment) -> list[tuple[str, int]]:
        return sorted((tp.topic_name, p) for tp in assignment.topic_partitions for p in tp.partitions)

    members = [
        MemberDescription(
            m.member_id,
            m.instance_id,
            m.client_id,
            m.client_host,
            pairs(m.assignment),
            list(m.subscribed_topic_names),
            m.subscribed_topic_regex,
            pairs(m.target_assignment),
            m.member_epoch,
            m.rack_id,
            upgraded=None if m.member_type == -1 else m.member_type == 1,
        )
        for m in described.members
    ]
    return GroupDescription(
        described.group_id,
        "consumer",
        described.group_state,
        "consumer",
        described.assignor_name,
        members,
        coordinator,
        described.group_epoch,
        described.assignment_epoch,
    )


# ---- committed offsets ----------------------------------------------------------------------------


def build_offset_fetch(
    group_id: str, partitions: list[tuple[str, int]] | None, require_stable: bool, version: int
) -> OffsetFetchRequest:
    """One group's committed offsets, of ``partitions`` or (``None``) of every partition it has. The
    caller checks first that ``version`` can say so (v2 for every partition, v7 for require_stable)."""
    topics = None
    if partitions is not None:
        topics = [(name, sorted(parts)) for name, parts in by_topic(partitions).items()]
    if version >= 8:
        group_class = OffsetFetchRequest.OffsetFetchRequestGroup
        return OffsetFetchRequest(
            groups=[
                group_class(
                    group_id=group_id,
                    member_id=None,
                    member_epoch=-1,
                    topics=None
                    if topics is None
                    else [
                        OffsetFetchRequest.OffsetFetchRequestTopics(name=n, partition_indexes=p)
                        for n, p in topics
                    ],
                )
            ],
            require_stable=require_stable,
        )
    return OffsetFetchRequest(
        group_id=group_id,
        topics=None
        if topics is None
        else [OffsetFetchRequest.OffsetFetchRequestTopic(name=n, partition_indexes=p) for n, p in topics],
        require_stable=require_stable,
    )


def read_committed_offsets(
    topic_results, version: int
) -> dict[tuple[str, int], OffsetAndMetadata | None | BrokerError]:
    """Each partition's committed offset: None where there is none, a BrokerError where it failed."""
    offsets: dict[tuple[str, int], OffsetAndMetadata | None | BrokerError] = {}
    for t in topic_results:
        for p in t.partitions:
            key = (t.name, p.partition_index)
            if p.error_code:
                offsets[key] = BrokerError(p.error_code, f"offset of {t.name}-{p.partition_index}")
            elif p.committed_offset < 0:
                offsets[key] = None
            else:
                epoch = p.committed_leader_epoch if version >= 5 else -1
                offsets[key] = OffsetAndMetadata(
                    p.committed_offset, None if epoch == UNKNOWN_EPOCH else epoch, p.metadata
                )
    return offsets
