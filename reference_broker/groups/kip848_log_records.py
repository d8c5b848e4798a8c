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

Record type 16 is laid out by hand below, because the 2024 definitions the codecs are generated from
predate it. Values are written at version 0, flexible (compact strings and arrays, a tagged-field section
closing every struct), without per-partition racks, as Kafka 4.0 writes them; every version the generated
classes define is read, and fields this broker does not keep (racks, the classic member's metadata) are
read past. A None value is a tombstone: it erases what its key names. Unreadable bytes raise
``RecordFormatError``, which the coordinator's loader logs and skips."""

from __future__ import annotations

import struct
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

__all__ = [
    "ClassicGroupTombstone",
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
TARGET_EPOCH, TARGET_MEMBER, CURRENT_ASSIGNMENT, REGULAR_EXPRESSION = 6, 7, 8, 16
KEY_VERSIONS = frozenset(
    {GROUP_EPOCH, PARTITION_METADATA, MEMBER_METADATA, TARGET_EPOCH, TARGET_MEMBER, CURRENT_ASSIGNMENT}
    | {REGULAR_EXPRESSION}
)

TOPIC = "__consumer_offsets"
_VALUE_VERSION = 0  # the version Kafka 4.0 writes
_I16, _I64 = struct.Struct(">h"), struct.Struct(">q")  # record type 16's hand-written layout

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
class MemberSubscriptionValue:
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    rebalance_timeout_ms: int
    server_assignor: str | None


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
        value = layouts.ConsumerGroupMemberMetadataValue(  # no ClassicMemberMetadata: not a classic member
            instance_id=v.instance_id,
            rack_id=v.rack_id,
            client_id=v.client_id,
            client_host=v.client_host,
            subscribed_topic_names=list(v.subscribed_topic_names),
            subscribed_topic_regex=v.subscribed_topic_regex,
            rebalance_timeout_ms=v.rebalance_timeout_ms,
            server_assignor=v.server_assignor,
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
        key = _regex_key(self.group_id, self.regex)
        return key, None if self.value is None else _regex_value(self.value)


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
        group_id, regex = _read_regex_key(key)
        return RegularExpression(group_id, regex, None if value is None else _read_regex_value(value))
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
    # ClassicMemberMetadata (tag 0) belongs to classic members, which these groups never carry
    return MemberSubscriptionValue(
        v.instance_id,
        v.rack_id,
        v.client_id,
        v.client_host,
        tuple(v.subscribed_topic_names),
        v.subscribed_topic_regex,
        v.rebalance_timeout_ms,
        v.server_assignor,
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


# ---- record type 16, by hand: Key {GroupId, RegularExpression}, Value v0 {Topics, Version, Timestamp} ----


def _put_uvarint(out: bytearray, n: int) -> None:
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)


def _regex_key(group_id: str, regex: str) -> bytes:
    out = bytearray(_I16.pack(REGULAR_EXPRESSION))
    for text in (group_id, regex):
        data = text.encode()
        out += _I16.pack(len(data)) + data
    return bytes(out)


def _regex_value(value: ResolvedRegex) -> bytes:
    out = bytearray(_I16.pack(_VALUE_VERSION))
    _put_uvarint(out, len(value.topics) + 1)
    for name in sorted(value.topics):
        data = name.encode()
        _put_uvarint(out, len(data) + 1)
        out += data
    out += _I64.pack(value.version) + _I64.pack(value.timestamp)
    out.append(0)  # no tagged fields
    return bytes(out)


class _RegexReader:
    """Reads record type 16's key or value whole; any bad or missing byte is a RecordFormatError."""

    def __init__(self, data: bytes, what: str) -> None:
        self.data, self.pos, self.what = memoryview(data), 0, what

    def fail(self, reason: str) -> RecordFormatError:
        return RecordFormatError(f"{self.what}: {reason} at byte {self.pos}")

    def take(self, n: int) -> memoryview:
        if n < 0 or self.pos + n > len(self.data):
            raise self.fail(f"{n} bytes run past the end")
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def int16(self) -> int:
        return _I16.unpack(self.take(2))[0]

    def int64(self) -> int:
        return _I64.unpack(self.take(8))[0]

    def uvarint(self) -> int:
        value = 0
        for shift in range(0, 35, 7):
            byte = self.take(1)[0]
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                return value
        raise self.fail("a varint longer than 5 bytes")

    def text(self, *, compact: bool) -> str:
        n = self.uvarint() - 1 if compact else self.int16()
        if n < 0:
            raise self.fail("a null where a string is required")
        try:
            return str(self.take(n), "utf-8")
        except UnicodeDecodeError:
            raise self.fail("a string that is not UTF-8") from None

    def count(self) -> int:
        n = self.uvarint() - 1
        if n > len(self.data) - self.pos:
            raise self.fail(f"an array of {n} entries cannot fit")
        return max(n, 0)

    def tags(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()
            self.take(self.uvarint())

    def end(self) -> None:
        if self.pos != len(self.data):
            raise self.fail(f"{len(self.data) - self.pos} bytes left over")


def _read_regex_key(data: bytes) -> tuple[str, str]:
    k = _RegexReader(data, "consumer group regular expression key")
    k.int16()
    group_id, regex = k.text(compact=False), k.text(compact=False)
    k.end()
    return group_id, regex


def _read_regex_value(data: bytes) -> ResolvedRegex:
    v = _RegexReader(data, "consumer group regular expression value")
    version = v.int16()
    if version != _VALUE_VERSION:
        raise v.fail(f"value version {version} is not one Kafka defines")
    topics = frozenset(v.text(compact=True) for _ in range(v.count()))
    resolved, timestamp = v.int64(), v.int64()
    v.tags()
    v.end()
    return ResolvedRegex(topics, resolved, timestamp)
