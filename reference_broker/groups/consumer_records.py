"""KIP-848 consumer groups' records in ``__consumer_offsets``, in Kafka 4.0's layouts, and their replay.

Every change to a consumer group is one of these records, written to the group's partition and then
applied to the in-memory group by the same code that reads them back on start (``replay``), so what is
on disk and what is in memory cannot drift apart.

Keys: an int16 version naming the record type, then int16-length strings (not flexible):

====  ==========================================  =================================================
 3    ConsumerGroupMetadata (group)               Epoch
 4    ConsumerGroupPartitionMetadata (group)      Topics[TopicId, TopicName, NumPartitions, racks]
 5    ConsumerGroupMemberMetadata (group, member) the member's subscription and client details
 6    ConsumerGroupTargetAssignmentMetadata       AssignmentEpoch
 7    ConsumerGroupTargetAssignmentMember         TopicPartitions
 8    ConsumerGroupCurrentMemberAssignment        epochs, state, assigned and pending revocation
16    ConsumerGroupRegularExpression (group, re)  Topics, Version, Timestamp
====  ==========================================  =================================================

Values start with int16 version 0 and are flexible (compact strings and arrays, a tagged-field section
closing every struct). A None value is a tombstone: it erases what its key names. Unreadable bytes
raise ``RecordFormatError``, which the coordinator's loader logs and skips."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import ClassVar
from uuid import UUID

from kconform.codecs._primitives import read_uvarint, write_uvarint

from .records import RecordFormatError

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
    "replay",
]

GROUP_METADATA_KEY = 2  # the classic group's own record; only its tombstone is written from here
GROUP_EPOCH, PARTITION_METADATA, MEMBER_METADATA = 3, 4, 5
TARGET_EPOCH, TARGET_MEMBER, CURRENT_ASSIGNMENT, REGULAR_EXPRESSION = 6, 7, 8, 16
KEY_VERSIONS = frozenset(
    {GROUP_EPOCH, PARTITION_METADATA, MEMBER_METADATA, TARGET_EPOCH, TARGET_MEMBER, CURRENT_ASSIGNMENT}
    | {REGULAR_EXPRESSION}
)

_I8, _I16, _I32, _I64 = struct.Struct(">b"), struct.Struct(">h"), struct.Struct(">i"), struct.Struct(">q")

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
    """A group-level epoch record; subclasses name the key version."""

    group_id: str
    epoch: int | None
    _KEY_VERSION: ClassVar[int]

    @property
    def tombstone(self) -> bool:
        return self.epoch is None

    def encode(self) -> tuple[bytes, bytes | None]:
        value = None if self.epoch is None else _Out().i32(self.epoch).done()
        return _key(self._KEY_VERSION, self.group_id), value


@dataclass(frozen=True, slots=True)
class GroupEpoch(_EpochRecord):
    _KEY_VERSION: ClassVar[int] = GROUP_EPOCH


@dataclass(frozen=True, slots=True)
class SubscriptionMetadata:
    group_id: str
    topics: tuple[TopicMetadata, ...] | None

    @property
    def tombstone(self) -> bool:
        return self.topics is None

    def encode(self) -> tuple[bytes, bytes | None]:
        if self.topics is None:
            return _key(PARTITION_METADATA, self.group_id), None
        out = _Out().count(len(self.topics))
        for topic in self.topics:
            out.uuid(topic.topic_id).string(topic.name).i32(topic.partitions)
            out.count(0).tags()  # no per-partition racks: Kafka 4.0 leaves them out too
        return _key(PARTITION_METADATA, self.group_id), out.done()


@dataclass(frozen=True, slots=True)
class MemberSubscription:
    group_id: str
    member_id: str
    value: MemberSubscriptionValue | None

    @property
    def tombstone(self) -> bool:
        return self.value is None

    def encode(self) -> tuple[bytes, bytes | None]:
        key = _key(MEMBER_METADATA, self.group_id, self.member_id)
        v = self.value
        if v is None:
            return key, None
        out = _Out().string(v.instance_id).string(v.rack_id).string(v.client_id).string(v.client_host)
        out.count(len(v.subscribed_topic_names))
        for name in v.subscribed_topic_names:
            out.string(name)
        out.string(v.subscribed_topic_regex).i32(v.rebalance_timeout_ms).string(v.server_assignor)
        return key, out.done()


@dataclass(frozen=True, slots=True)
class TargetEpoch(_EpochRecord):
    _KEY_VERSION: ClassVar[int] = TARGET_EPOCH


@dataclass(frozen=True, slots=True)
class TargetMember:
    group_id: str
    member_id: str
    partitions: Partitions | None

    @property
    def tombstone(self) -> bool:
        return self.partitions is None

    def encode(self) -> tuple[bytes, bytes | None]:
        key = _key(TARGET_MEMBER, self.group_id, self.member_id)
        if self.partitions is None:
            return key, None
        return key, _Out().partitions(self.partitions).done()


@dataclass(frozen=True, slots=True)
class CurrentAssignment:
    group_id: str
    member_id: str
    value: CurrentAssignmentValue | None

    @property
    def tombstone(self) -> bool:
        return self.value is None

    def encode(self) -> tuple[bytes, bytes | None]:
        key = _key(CURRENT_ASSIGNMENT, self.group_id, self.member_id)
        v = self.value
        if v is None:
            return key, None
        out = _Out().i32(v.member_epoch).i32(v.previous_member_epoch).i8(v.state)
        return key, out.partitions(v.assigned).partitions(v.pending_revocation).done()


@dataclass(frozen=True, slots=True)
class RegularExpression:
    group_id: str
    regex: str
    value: ResolvedRegex | None

    @property
    def tombstone(self) -> bool:
        return self.value is None

    def encode(self) -> tuple[bytes, bytes | None]:
        key = _key(REGULAR_EXPRESSION, self.group_id, self.regex)
        v = self.value
        if v is None:
            return key, None
        out = _Out().count(len(v.topics))
        for name in sorted(v.topics):
            out.string(name)
        return key, out.i64(v.version).i64(v.timestamp).done()


@dataclass(frozen=True, slots=True)
class ClassicGroupTombstone:
    """Erases an empty classic group that a consumer group takes over (key version 2)."""

    group_id: str

    tombstone = True

    def encode(self) -> tuple[bytes, None]:
        return _key(GROUP_METADATA_KEY, self.group_id), None


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


# ---- writing -------------------------------------------------------------------------------------------


def _key(version: int, *fields: str) -> bytes:
    out = bytearray(_I16.pack(version))
    for f in fields:
        data = f.encode()
        out += _I16.pack(len(data)) + data
    return bytes(out)


class _Out:
    """A flexible value of version 0."""

    def __init__(self) -> None:
        self.b = bytearray(_I16.pack(0))

    def i8(self, v: int) -> _Out:
        self.b += _I8.pack(v)
        return self

    def i32(self, v: int) -> _Out:
        self.b += _I32.pack(v)
        return self

    def i64(self, v: int) -> _Out:
        self.b += _I64.pack(v)
        return self

    def uuid(self, v: UUID) -> _Out:
        self.b += v.bytes
        return self

    def count(self, n: int) -> _Out:
        write_uvarint(self.b, n + 1)
        return self

    def string(self, v: str | None) -> _Out:
        if v is None:
            self.b.append(0)
        else:
            data = v.encode()
            self.count(len(data))
            self.b += data
        return self

    def tags(self) -> _Out:
        self.b.append(0)
        return self

    def partitions(self, tp: Partitions) -> _Out:
        entries = [(t, p) for t, p in tp.items() if p]
        self.count(len(entries))
        for topic, parts in sorted(entries, key=lambda kv: str(kv[0])):
            self.uuid(topic).count(len(parts))
            self.b += b"".join(_I32.pack(p) for p in sorted(parts))
            self.tags()
        return self

    def done(self) -> bytes:
        return bytes(self.tags().b)


# ---- reading --------------------------------------------------------------------------------------------


class _In:
    def __init__(self, data: bytes, *, flexible: bool) -> None:
        self.d, self.p, self.flexible = memoryview(data), 0, flexible

    def fixed(self, s: struct.Struct) -> int:
        if self.p + s.size > len(self.d):
            raise RecordFormatError(f"the record ends early at byte {self.p}")
        (v,) = s.unpack_from(self.d, self.p)
        self.p += s.size
        return v

    def uvarint(self) -> int:
        try:
            v, self.p = read_uvarint(self.d, self.p)
        except (IndexError, ValueError) as exc:
            raise RecordFormatError(f"a bad varint at byte {self.p}") from exc
        return v

    def raw(self, n: int) -> bytes:
        if n < 0 or self.p + n > len(self.d):
            raise RecordFormatError(f"a length of {n} runs past the end at byte {self.p}")
        v = bytes(self.d[self.p : self.p + n])
        self.p += n
        return v

    def string(self) -> str | None:
        n = self.uvarint() - 1 if self.flexible else self.fixed(_I16)
        if n < 0:
            return None
        try:
            return self.raw(n).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise RecordFormatError(f"a string that is not UTF-8 before byte {self.p}") from exc

    def text(self) -> str:
        value = self.string()
        if value is None:
            raise RecordFormatError(f"a null where a string is required before byte {self.p}")
        return value

    def count(self) -> int:
        n = self.uvarint() - 1
        if n > len(self.d) - self.p:
            raise RecordFormatError(f"an array of {n} entries cannot fit before byte {len(self.d)}")
        return max(n, 0)

    def tags(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()
            self.raw(self.uvarint())

    def uuid(self) -> UUID:
        return UUID(bytes=self.raw(16))

    def partitions(self) -> Partitions:
        result: dict[UUID, frozenset[int]] = {}
        for _ in range(self.count()):
            topic = self.uuid()
            result[topic] = frozenset(self.fixed(_I32) for _ in range(self.count()))
            self.tags()
        return result


def _value(data: bytes) -> _In:
    v = _In(data, flexible=True)
    version = v.fixed(_I16)
    if version != 0:
        raise RecordFormatError(f"value version {version} is not one Kafka 4.0 writes")
    return v


def decode(key: bytes, value: bytes | None) -> ConsumerRecord | None:
    """The record these bytes hold; None for key versions that are not the consumer group's."""
    k = _In(key, flexible=False)
    version = k.fixed(_I16)
    if version not in KEY_VERSIONS:
        return None
    group_id = k.text()
    second = (
        k.text()
        if version in (MEMBER_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT, REGULAR_EXPRESSION)
        else ""
    )
    if version == GROUP_EPOCH:
        return GroupEpoch(group_id, None if value is None else _epoch(value))
    if version == TARGET_EPOCH:
        return TargetEpoch(group_id, None if value is None else _epoch(value))
    if version == TARGET_MEMBER:
        return TargetMember(group_id, second, None if value is None else _target(value))
    if version == PARTITION_METADATA:
        return SubscriptionMetadata(group_id, None if value is None else _metadata(value))
    if version == MEMBER_METADATA:
        return MemberSubscription(group_id, second, None if value is None else _member(value))
    if version == CURRENT_ASSIGNMENT:
        return CurrentAssignment(group_id, second, None if value is None else _current(value))
    return RegularExpression(group_id, second, None if value is None else _regex(value))


def _epoch(data: bytes) -> int:
    v = _value(data)
    epoch = v.fixed(_I32)
    v.tags()
    return epoch


def _target(data: bytes) -> Partitions:
    v = _value(data)
    parts = v.partitions()
    v.tags()
    return parts


def _metadata(data: bytes) -> tuple[TopicMetadata, ...]:
    v = _value(data)
    topics = []
    for _ in range(v.count()):
        topic_id, name, count = v.uuid(), v.text(), v.fixed(_I32)
        for _ in range(v.count()):  # per-partition racks: read past them
            v.fixed(_I32)
            for _ in range(v.count()):
                v.string()
            v.tags()
        v.tags()
        topics.append(TopicMetadata(topic_id, name, count))
    v.tags()
    return tuple(topics)


def _member(data: bytes) -> MemberSubscriptionValue:
    v = _value(data)
    instance_id, rack_id, client_id, client_host = v.string(), v.string(), v.text(), v.text()
    names = tuple(v.text() for _ in range(v.count()))
    regex, timeout, assignor = v.string(), v.fixed(_I32), v.string()
    v.tags()  # tag 0 is the classic protocol's metadata, which members of these groups never carry
    return MemberSubscriptionValue(
        instance_id, rack_id, client_id, client_host, names, regex, timeout, assignor
    )


def _current(data: bytes) -> CurrentAssignmentValue:
    v = _value(data)
    epoch, previous, state = v.fixed(_I32), v.fixed(_I32), v.fixed(_I8)
    assigned, pending = v.partitions(), v.partitions()
    v.tags()
    return CurrentAssignmentValue(epoch, previous, state, assigned, pending)


def _regex(data: bytes) -> ResolvedRegex:
    v = _value(data)
    topics = frozenset(v.text() for _ in range(v.count()))
    version, timestamp = v.fixed(_I64), v.fixed(_I64)
    v.tags()
    return ResolvedRegex(topics, version, timestamp)


def replay(coordinator, key_version: int, key: bytes, value: bytes | None) -> None:
    """Apply one record read back from ``__consumer_offsets`` (the coordinator's loader calls this for
    key versions 3 and up; types this module does not know are skipped)."""
    if key_version not in KEY_VERSIONS:
        return
    try:
        record = decode(key, value)
    except RecordFormatError:
        raise
    except Exception as exc:  # nothing read from disk may stop the coordinator from loading
        raise RecordFormatError(f"unreadable consumer group record: {exc}") from exc
    if record is not None:
        from .consumer_group import apply_record

        apply_record(coordinator.groups, record)
