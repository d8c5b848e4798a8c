"""The classic group coordinator's records in ``__consumer_offsets``, laid out as Kafka lays them out
so that a dump of the topic reads the same as one from Apache Kafka.

Every key starts with an int16 version that names the record type (0 and 1: an offset commit, 2: group
metadata; 3 and above belong to the KIP-848 consumer groups, ``consumer_records``); every value starts
with an int16 version of its own layout. A None value is a tombstone. Written: key version 1, offset
commit value version 3 (version 1 when the commit has an expiry time), group metadata value version 3,
as Kafka 4.0 writes them; a commit that names its topic by id (OffsetCommit v10) is written as value
version 4 with the id in tagged field 0, as Kafka 4.1 keeps it (KAFKA-19141,
``GroupCoordinatorRecordHelpers.newOffsetCommitRecord``), so OffsetFetch v10 can tell a recreated
topic's offsets apart. Read: every version, including the flexible value version 4 and its topic id."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from uuid import UUID

from kconform.codecs import DecodeError
from kconform.codecs import coordinator_records as layouts
from kconform.codecs.constants import ZERO_UUID
from kconform.codecs.coordinator_log import (
    decode_coordinator_value,
    encode_coordinator_key,
    encode_coordinator_value,
)

__all__ = [
    "GroupMetadataValue",
    "MemberMetadataValue",
    "OffsetCommitValue",
    "RecordFormatError",
    "decode_group_metadata_value",
    "decode_key",
    "decode_offset_commit_value",
    "encode_group_metadata_key",
    "encode_group_metadata_value",
    "encode_offset_commit_key",
    "encode_offset_commit_value",
    "key_version",
]

OFFSET_COMMIT_KEY = 1
GROUP_METADATA_KEY = 2
_I16 = struct.Struct(">h")
# OffsetCommitValue.topicId (Kafka 4.1, KAFKA-19141): tagged field 0 of value version 4+. The definitions
# the codecs are generated from predate it, so the generated class keeps it as an unknown tagged field.
_TOPIC_ID_TAG = 0


class RecordFormatError(ValueError):
    """A coordinator record that cannot be read: the message says which part."""


@dataclass(frozen=True, slots=True)
class OffsetCommitValue:
    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp: int = -1
    expire_timestamp: int = -1
    topic_id: UUID = ZERO_UUID  # the topic's id when the commit named it by id (OffsetCommit v10+)


@dataclass(frozen=True, slots=True)
class MemberMetadataValue:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupMetadataValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int = -1
    members: tuple[MemberMetadataValue, ...] = field(default_factory=tuple)


# ---- writing ---------------------------------------------------------------------------------------


def encode_offset_commit_key(group: str, topic: str, partition: int) -> bytes:
    key = layouts.OffsetCommitKey(group=group, topic=topic, partition=partition)
    return encode_coordinator_key(key, OFFSET_COMMIT_KEY)


def encode_group_metadata_key(group: str) -> bytes:
    return encode_coordinator_key(layouts.GroupMetadataKey(group=group), GROUP_METADATA_KEY)


def encode_offset_commit_value(value: OffsetCommitValue) -> bytes:
    layout = layouts.OffsetCommitValue(
        offset=value.offset,
        leader_epoch=value.leader_epoch,
        metadata=value.metadata,
        commit_timestamp=value.commit_timestamp,
        expire_timestamp=value.expire_timestamp,
    )
    if value.expire_timestamp >= 0:  # only version 1 carries an expiry
        return encode_coordinator_value(layout, 1)
    if value.topic_id != ZERO_UUID:  # version 4, as Kafka 4.1 writes a commit made by topic id
        layout.unknown_tagged_fields = ((_TOPIC_ID_TAG, value.topic_id.bytes),)
        return encode_coordinator_value(layout, 4)
    return encode_coordinator_value(layout, 3)


def encode_group_metadata_value(value: GroupMetadataValue) -> bytes:
    layout = layouts.GroupMetadataValue(
        protocol_type=value.protocol_type,
        generation=value.generation,
        protocol=value.protocol,
        leader=value.leader,
        current_state_timestamp=value.current_state_timestamp,
        members=[
            layouts.GroupMetadataValue.MemberMetadata(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                rebalance_timeout=m.rebalance_timeout_ms,
                session_timeout=m.session_timeout_ms,
                subscription=m.subscription,
                assignment=m.assignment,
            )
            for m in value.members
        ],
    )
    return encode_coordinator_value(layout, 3)


# ---- reading ---------------------------------------------------------------------------------------


def key_version(key: bytes | None) -> int:
    if key is None or len(key) < 2:
        raise RecordFormatError("a coordinator record key needs at least a version")
    return _I16.unpack_from(key)[0]


def decode_key(key: bytes) -> tuple[int, tuple]:
    """(key version, fields): (group, topic, partition) for an offset commit, (group,) for metadata;
    no fields for the record types of other coordinators' records."""
    version = key_version(key)
    try:
        if version in (0, OFFSET_COMMIT_KEY):
            k = layouts.OffsetCommitKey.decode(memoryview(key)[2:], version)
            return version, (k.group or "", k.topic or "", k.partition)
        if version == GROUP_METADATA_KEY:
            return version, (layouts.GroupMetadataKey.decode(memoryview(key)[2:], version).group or "",)
    except DecodeError as exc:
        raise RecordFormatError(f"coordinator record key: {exc}") from None
    return version, ()


def _value(layout_class, data: bytes, what: str):
    try:
        return decode_coordinator_value(layout_class, data)
    except DecodeError as exc:
        raise RecordFormatError(f"{what}: {exc}") from None


def decode_offset_commit_value(data: bytes) -> OffsetCommitValue:
    version, v = _value(layouts.OffsetCommitValue, data, "offset commit value")
    raw_id = dict(v.unknown_tagged_fields).get(_TOPIC_ID_TAG) if version >= 4 else None
    topic_id = UUID(bytes=bytes(raw_id)) if raw_id is not None and len(raw_id) == 16 else ZERO_UUID
    expire = v.expire_timestamp if version == 1 else -1
    return OffsetCommitValue(v.offset, v.leader_epoch, v.metadata or "", v.commit_timestamp, expire, topic_id)


def decode_group_metadata_value(data: bytes) -> GroupMetadataValue:
    version, v = _value(layouts.GroupMetadataValue, data, "group metadata value")
    members = tuple(
        MemberMetadataValue(
            m.member_id or "",
            m.group_instance_id if version >= 3 else None,
            m.client_id or "",
            m.client_host or "",
            # before version 1 there was one timeout: the session timeout stands for both
            m.rebalance_timeout if version >= 1 and m.rebalance_timeout >= 0 else m.session_timeout,
            m.session_timeout,
            bytes(m.subscription or b""),
            bytes(m.assignment or b""),
        )
        for m in v.members
    )
    state_timestamp = v.current_state_timestamp if version >= 2 else -1
    return GroupMetadataValue(
        v.protocol_type or "", v.generation, v.protocol, v.leader, state_timestamp, members
    )
