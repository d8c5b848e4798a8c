"""KIP-848 consumer groups' records in ``__consumer_offsets``, in Kafka 4.0's layouts.

Every change to a consumer group is one of these records, written to the group's partition and then
applied to the in-memory group by the same code that reads them back on start (``kip848_group
.apply_record``, called by ``loader``), so what is on disk and what is in memory cannot drift apart.

The layouts are Kafka's ``ConsumerGroup*Key``/``Value`` classes generated from its coordinator
definitions (``kconform.codecs.coordinator_records``), framed by ``kconform.codecs.coordinator_log``;
a key is an int16 record type then int16-length strings (not flexible):

====  ==========================================  =================================================
 3    ConsumerGroupMetadata (group)               Epoch
 4    ConsumerGroupPartitionMetadata (group)      Topics[TopicId, TopicName, NumPartitions, racks]
 5    ConsumerGroupMemberMetadata (group, member) the member's subscription and client details
 6    ConsumerGroupTargetAssignmentMetadata       AssignmentEpoch
 7    ConsumerGroupTargetAssignmentMember         TopicPartitions
 8    ConsumerGroupCurrentMemberAssignment        epochs, state, assigned and pending revocation
16    ConsumerGroupRegularExpression (group, re)  Topics, Version, Timestamp
====  ==========================================  =================================================

Record type 16 is laid out by hand (``kip848_regex_records``), because the 2024 definitions the codecs
are generated from predate it. Values are written at version 0, flexible (compact strings and arrays, a
tagged-field section closing every struct), without per-partition racks, as Kafka 4.0 writes them; every
version the generated classes define is read, and the racks, which this broker does not keep, are read
past. A member that joined with the classic protocol (JoinGroup) carries ``ClassicMemberMetadata`` (tagged
field 0 of its member metadata: session timeout and the protocols it offered); others have none.
A None value is a tombstone: it erases what its key names. Unreadable bytes raise ``RecordFormatError``,
which the coordinator's loader logs and skips."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar
from uuid import UUID

from kconform.codecs import DecodeError
from kconform.codecs import coordinator_records as layouts
from kconform.codecs.coordinator_log import (
    decode_coordinator_key,
    decode_coordinator_value,
    encode_coordinator_key,
    encode_coordinator_value,
)

from .classic_log_records import RecordFormatError, key_version
from .kip848_regex_records import (
    REGULAR_EXPRESSION,
    read_regex_key,
    read_regex_value,
    regex_key,
    regex_value,
)

__all__ = [
    "ClassicGroupTombstone",
    "ClassicMemberMetadata",
    "CurrentAssignment",
    "CurrentAssignmentValue",
    "GroupEpoch",
    "MemberSubscription",
    "MemberSubscriptionValue",
    "RegularExpression",
    "ResolvedRegex",
    "SubscriptionMetadata",
    "TargetEpoch",
    "TargetMember",
    "TopicMetadata",
    "decode",
]

GROUP_METADATA_KEY = 2  # the classic group's own record; only its tombstone is written from here
GROUP_EPOCH, PARTITION_METADATA, MEMBER_METADATA = 3, 4, 5
TARGET_EPOCH, TARGET_MEMBER, CURRENT_ASSIGNMENT = 6, 7, 8
KEY_VERSIONS = frozenset(
    {GROUP_EPOCH, PARTITION_METADATA, MEMBER_METADATA, TARGET_EPOCH, TARGET_MEMBER, CURRENT_ASSIGNMENT}
    | {REGULAR_EXPRESSION}
)

TOPIC = "__consumer_offsets"
_VALUE_VERSION = 0  # the version Kafka 4.0 writes

Partitions = dict[UUID, frozenset[int]]


# ---- values ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TopicMetadata:
    topic_id: UUID
    name: str
    partitions: int


@dataclass(frozen=True, slots=True)
class ResolvedRegex:
    topics: frozenset[str]
    version: int = 0
    timestamp: int = -1


@dataclass(frozen=True, slots=True)
class ClassicMemberMetadata:
    """What a member that uses the classic protocol joined with: its session timeout and the
    (name, metadata) of every protocol it offered, in its order."""

    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]


@dataclass(frozen=True, slots=True)
class MemberSubscriptionValue:
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    rebalance_timeout_ms: int
    server_assignor: str | None
    classic: ClassicMemberMetadata | None = None  # tagged field 0, for members on the classic protocol


@dataclass(frozen=True, slots=True)
class CurrentAssignmentValue:
    member_epoch: int
    previous_member_epoch: int
    state: int
    assigned: Partitions = field(default_factory=dict)
    pending_revocation: Partitions = field(default_factory=dict)


# ---- records (value None: a tombstone) ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _EpochRecord:
    """A group-level epoch record; subclasses name the record type and its layouts."""

    group_id: str
    epoch: int | None
    _KEY_VERSION: ClassVar[int]
    _KEY_LAYOUT: ClassVar[type]

    @property
    def tombstone(self) -> bool:
        return self.epoch is None

    def encode(self) -> tuple[bytes, bytes | None]:
        key = encode_coordinator_key(self._KEY_LAYOUT(group_id=self.group_id), self._KEY_VERSION)
        return key, None if self.epoch is None else _write(self._value_layout(self.epoch))

    @staticmethod
    def _value_layout(epoch: int):
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class GroupEpoch(_EpochRecord):
    _KEY_VERSION: ClassVar[int] = GROUP_EPOCH
    _KEY_LAYOUT: ClassVar[type] = layouts.ConsumerGroupMetadataKey

    @staticmethod
    def _value_layout(epoch: int) -> layouts.ConsumerGroupMetadataValue:
        return layouts.ConsumerGroupMetadataValue(epoch=epoch)


@dataclass(frozen=True, slots=True)
class SubscriptionMetadata:
    group_id: str
    topics: tuple[TopicMetadata, ...] | None

    @property
    def tombstone(self) -> bool:
        return self.topics is None

    def encode(self) -> tuple[bytes, bytes | None]:
        key = encode_coordinator_key(
            layouts.ConsumerGroupPartitionMetadataKey(group_id=self.group_id), PARTITION_METADATA
        )
        if self.topics is None:
            return key, None
        layout = layouts.ConsumerGroupPartitionMetadataValue
        value = layout(  # no per-partition racks: Kafka 4.0 leaves them out too
            topics=[
                layout.TopicMetadata(topic_id=t.topic_id, topic_name=t.name, num_partitions=t.partitions)
                for t in self.topics
            ]
        )
        return key, _write(value)


@dataclass(frozen=True, slots=True)
class MemberSubscription:
    group_id: str
    member_id: str
    value: MemberSubscriptionValue | None

    @property
    def tombstone(self) -> bool:
        return self.value is None

    def encode(self) -> tuple[bytes, bytes | None]:
        key = encode_coordinator_key(
            layouts.ConsumerGroupMemberMetadataKey(group_id=self.group_id, member_id=self.member_id),
            MEMBER_METADATA,
        )
        v = self.value
        if v is None:
            return key, None
        layout = layouts.ConsumerGroupMemberMetadataValue
        value = layout(
            instance_id=v.instance_id,
            rack_id=v.rack_id,
            client_id=v.client_id,
            client_host=v.client_host,
            subscribed_topic_names=list(v.subscribed_topic_names),
            subscribed_topic_regex=v.subscribed_topic_regex,
            rebalance_timeout_ms=v.rebalance_timeout_ms,
            server_assignor=v.server_assignor,
        )
        if v.classic is not None:  # left at its default (not written) for a consumer-protocol member
            value.classic_member_metadata = layout.ClassicMemberMetadata(
                session_timeout_ms=v.classic.session_timeout_ms,
                supported_protocols=[
                    layout.ClassicProtocol(name=name, metadata=metadata)
                    for name, metadata in v.classic.protocols
                ],
            )
        return key, _write(value)


@dataclass(frozen=True, slots=True)
class TargetEpoch(_EpochRecord):
    _KEY_VERSION: ClassVar[int] = TARGET_EPOCH
    _KEY_LAYOUT: ClassVar[type] = layouts.ConsumerGroupTargetAssignmentMetadataKey

    @staticmethod
    def _value_layout(epoch: int) -> layouts.ConsumerGroupTargetAssignmentMetadataValue:
        return layouts.ConsumerGroupTargetAssignmentMetadataValue(assignment_epoch=epoch)


@dataclass(frozen=True, slots=True)
class TargetMember:
    group_id: str
    member_id: str
    partitions: Partitions | None

    @property
    def tombstone(self) -> bool:
        return self.partitions is None

    def encode(self) -> tuple[bytes, bytes | None]:
        key = encode_coordinator_key(
            layouts.ConsumerGroupTargetAssignmentMemberKey(group_id=self.group_id, member_id=self.member_id),
            TARGET_MEMBER,
        )
        if self.partitions is None:
            return key, None
        layout = layouts.ConsumerGroupTargetAssignmentMemberValue
        return key, _write(layout(topic_partitions=_topic_partitions(layout.TopicPartition, self.partitions)))


@dataclass(frozen=True, slots=True)
class CurrentAssignment:
    group_id: str
    member_id: str
    value: CurrentAssignmentValue | None

    @property
    def tombstone(self) -> bool:
        return self.value is None

    def encode(self) -> tuple[bytes, bytes | None]:
        key = encode_coordinator_key(
            layouts.ConsumerGroupCurrentMemberAssignmentKey(group_id=self.group_id, member_id=self.member_id),
            CURRENT_ASSIGNMENT,
        )
        v = self.value
        if v is None:
            return key, None
        layout = layouts.ConsumerGroupCurrentMemberAssignmentValue
        value = layout(
            member_epoch=v.member_epoch,
            previous_member_epoch=v.previous_member_epoch,
            state=v.state,
            assigned_partitions=_topic_partitions(layout.TopicPartitions, v.assigned),
            partitions_pending_revocation=_topic_partitions(layout.TopicPartitions, v.pending_revocation),
        )
        return key, _write(value)


@dataclass(frozen=True, slots=True)
class RegularExpression:
    group_id: str
    regex: str
    value: ResolvedRegex | None

    @property
    def tombstone(self) -> bool:
        return self.value is None

    def encode(self) -> tuple[bytes, bytes | None]:
        key = regex_key(self.group_id, self.regex)
        v = self.value
        return key, None if v is None else regex_value(v.topics, v.version, v.timestamp)


@dataclass(frozen=True, slots=True)
class ClassicGroupTombstone:
    """Erases an empty classic group that a consumer group takes over (key version 2)."""

    group_id: str

    tombstone = True

    def encode(self) -> tuple[bytes, None]:
        return encode_coordinator_key(layouts.GroupMetadataKey(group=self.group_id), GROUP_METADATA_KEY), None


ConsumerRecord = (
    GroupEpoch
    | SubscriptionMetadata
    | MemberSubscription
    | TargetEpoch
    | TargetMember
    | CurrentAssignment
    | RegularExpression
    | ClassicGroupTombstone
)


# ---- the generated layouts -------------------------------------------------------------------------


def _write(value) -> bytes:
    return encode_coordinator_value(value, _VALUE_VERSION)


def _topic_partitions(layout: type, partitions: Partitions) -> list:
    """Topics by id, each with its partitions, in order; a topic with no partitions is left out."""
    entries = sorted(((t, p) for t, p in partitions.items() if p), key=lambda kv: str(kv[0]))
    return [layout(topic_id=topic, partitions=sorted(parts)) for topic, parts in entries]


def _partitions(topics) -> Partitions:
    return {t.topic_id: frozenset(t.partitions) for t in topics}


def _read(layout: type, data: bytes):
    try:
        return decode_coordinator_value(layout, data)[1]
    except DecodeError as exc:
        raise RecordFormatError(f"consumer group record value: {exc}") from None


def decode(key: bytes, value: bytes | None) -> ConsumerRecord | None:
    """The record these bytes hold; None for key versions that are not the consumer group's."""
    record_type = key_version(key)
    if record_type not in KEY_VERSIONS:
        return None
    if record_type == REGULAR_EXPRESSION:
        group_id, regex = read_regex_key(key)
        return RegularExpression(
            group_id, regex, None if value is None else ResolvedRegex(*read_regex_value(value))
        )
    try:
        _, k = decode_coordinator_key(TOPIC, key)
    except DecodeError as exc:
        raise RecordFormatError(f"consumer group record key: {exc}") from None
    if record_type == GROUP_EPOCH:
        epoch = None if value is None else _read(layouts.ConsumerGroupMetadataValue, value).epoch
        return GroupEpoch(k.group_id, epoch)
    if record_type == TARGET_EPOCH:
        if value is None:
            return TargetEpoch(k.group_id, None)
        v = _read(layouts.ConsumerGroupTargetAssignmentMetadataValue, value)
        return TargetEpoch(k.group_id, v.assignment_epoch)
    if record_type == TARGET_MEMBER:
        if value is None:
            return TargetMember(k.group_id, k.member_id, None)
        v = _read(layouts.ConsumerGroupTargetAssignmentMemberValue, value)
        return TargetMember(k.group_id, k.member_id, _partitions(v.topic_partitions))
    if record_type == PARTITION_METADATA:
        if value is None:
            return SubscriptionMetadata(k.group_id, None)
        v = _read(layouts.ConsumerGroupPartitionMetadataValue, value)
        topics = tuple(TopicMetadata(t.topic_id, t.topic_name, t.num_partitions) for t in v.topics)
        return SubscriptionMetadata(k.group_id, topics)  # per-partition racks: read past
    if record_type == MEMBER_METADATA:
        return MemberSubscription(k.group_id, k.member_id, None if value is None else _member(value))
    return CurrentAssignment(k.group_id, k.member_id, None if value is None else _current(value))


def _member(data: bytes) -> MemberSubscriptionValue:
    v = _read(layouts.ConsumerGroupMemberMetadataValue, data)
    # Tag 0 absent reads as an empty struct, which no classic member has (it joined with protocols).
    meta = v.classic_member_metadata
    classic = None
    if meta is not None and (meta.session_timeout_ms or meta.supported_protocols):
        protocols = tuple((p.name, bytes(p.metadata)) for p in meta.supported_protocols)
        classic = ClassicMemberMetadata(meta.session_timeout_ms, protocols)
    return MemberSubscriptionValue(
        v.instance_id,
        v.rack_id,
        v.client_id,
        v.client_host,
        tuple(v.subscribed_topic_names),
        v.subscribed_topic_regex,
        v.rebalance_timeout_ms,
        v.server_assignor,
        classic,
    )


def _current(data: bytes) -> CurrentAssignmentValue:
    v = _read(layouts.ConsumerGroupCurrentMemberAssignmentValue, data)
    return CurrentAssignmentValue(
        v.member_epoch,
        v.previous_member_epoch,
        v.state,
        _partitions(v.assigned_partitions),
        _partitions(v.partitions_pending_revocation),
    )
