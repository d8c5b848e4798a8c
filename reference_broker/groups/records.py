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

from kconform.codecs._primitives import read_uvarint
from kconform.codecs._primitives import uvarint_bytes as _uvarint

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
_I16, _I32, _I64 = struct.Struct(">h"), struct.Struct(">i"), struct.Struct(">q")
ZERO_UUID = UUID(int=0)
_TOPIC_ID_TAG = 0  # OffsetCommitValue.topicId: taggedVersions 4+, tag 0


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


class _Writer:
    def __init__(self, version: int) -> None:
        self.out = bytearray(_I16.pack(version))

    def i32(self, value: int) -> _Writer:
        self.out += _I32.pack(value)
        return self

    def i64(self, value: int) -> _Writer:
        self.out += _I64.pack(value)
        return self

    def string(self, value: str | None) -> _Writer:
        if value is None:
            self.out += _I16.pack(-1)
        else:
            data = value.encode()
            self.out += _I16.pack(len(data)) + data
        return self

    def bytes_(self, value: bytes) -> _Writer:
        self.out += _I32.pack(len(value)) + value
        return self

    def done(self) -> bytes:
        return bytes(self.out)


def encode_offset_commit_key(group: str, topic: str, partition: int) -> bytes:
    return _Writer(OFFSET_COMMIT_KEY).string(group).string(topic).i32(partition).done()


def encode_group_metadata_key(group: str) -> bytes:
    return _Writer(GROUP_METADATA_KEY).string(group).done()


def encode_offset_commit_value(value: OffsetCommitValue) -> bytes:
    if value.expire_timestamp >= 0:  # only version 1 carries an expiry
        w = _Writer(1).i64(value.offset).string(value.metadata)
        return w.i64(value.commit_timestamp).i64(value.expire_timestamp).done()
    if value.topic_id != ZERO_UUID:
        # version 4: flexible (compact string, tagged fields); the id is written as it differs from
        # its default
        metadata = value.metadata.encode()
        w = _Writer(4).i64(value.offset).i32(value.leader_epoch)
        w.out += _uvarint(len(metadata) + 1) + metadata
        w.i64(value.commit_timestamp)
        w.out += _uvarint(1) + _uvarint(_TOPIC_ID_TAG) + _uvarint(16) + value.topic_id.bytes
        return w.done()
    w = _Writer(3).i64(value.offset).i32(value.leader_epoch).string(value.metadata)
    return w.i64(value.commit_timestamp).done()


def encode_group_metadata_value(value: GroupMetadataValue) -> bytes:
    w = _Writer(3).string(value.protocol_type).i32(value.generation).string(value.protocol)
    w.string(value.leader).i64(value.current_state_timestamp).i32(len(value.members))
    for m in value.members:
        w.string(m.member_id).string(m.group_instance_id).string(m.client_id).string(m.client_host)
        w.i32(m.rebalance_timeout_ms).i32(m.session_timeout_ms).bytes_(m.subscription).bytes_(m.assignment)
    return w.done()


# ---- reading ---------------------------------------------------------------------------------------


class _Reader:
    def __init__(self, data: bytes, what: str) -> None:
        self.data = data
        self.pos = 0
        self.what = what
        self.flexible = False

    def _take(self, s: struct.Struct) -> int:
        if self.pos + s.size > len(self.data):
            raise RecordFormatError(f"{self.what} ends early at byte {self.pos}")
        (value,) = s.unpack_from(self.data, self.pos)
        self.pos += s.size
        return value

    def i16(self) -> int:
        return self._take(_I16)

    def i32(self) -> int:
        return self._take(_I32)

    def i64(self) -> int:
        return self._take(_I64)

    def _length(self, wide: bool) -> int:
        if self.flexible:
            try:
                n, self.pos = read_uvarint(self.data, self.pos)
            except Exception as exc:
                raise RecordFormatError(f"{self.what}: bad length at byte {self.pos}") from exc
            return n - 1
        return self.i32() if wide else self.i16()

    def _raw(self, n: int) -> bytes:
        if n > len(self.data) - self.pos:
            raise RecordFormatError(f"{self.what}: a length of {n} runs past the end at byte {self.pos}")
        value = self.data[self.pos : self.pos + n]
        self.pos += n
        return bytes(value)

    def string(self) -> str | None:
        n = self._length(False)
        if n < 0:
            return None
        try:
            return self._raw(n).decode()
        except UnicodeDecodeError as exc:
            raise RecordFormatError(f"{self.what}: a string is not UTF-8") from exc

    def bytes_(self) -> bytes:
        n = self._length(True)
        return b"" if n < 0 else self._raw(n)

    def skip_tags(self) -> dict[int, bytes]:
        """Read past a flexible version's tagged fields; returns them by tag."""
        tags: dict[int, bytes] = {}
        if not self.flexible:
            return tags
        try:
            count, self.pos = read_uvarint(self.data, self.pos)
            for _ in range(count):
                tag, self.pos = read_uvarint(self.data, self.pos)
                size, self.pos = read_uvarint(self.data, self.pos)
                tags[tag] = self._raw(size)
        except RecordFormatError:
            raise
        except Exception as exc:
            raise RecordFormatError(f"{self.what}: bad tagged fields at byte {self.pos}") from exc
        return tags


def key_version(key: bytes | None) -> int:
    if key is None or len(key) < 2:
        raise RecordFormatError("a coordinator record key needs at least a version")
    return _I16.unpack_from(key)[0]


def decode_key(key: bytes) -> tuple[int, tuple]:
    """(key version, fields): (group, topic, partition) for an offset commit, (group,) for metadata."""
    r = _Reader(key, "coordinator record key")
    version = r.i16()
    if version in (0, OFFSET_COMMIT_KEY):
        return version, (r.string() or "", r.string() or "", r.i32())
    if version == GROUP_METADATA_KEY:
        return version, (r.string() or "",)
    return version, ()


def decode_offset_commit_value(data: bytes) -> OffsetCommitValue:
    r = _Reader(data, "offset commit value")
    version = r.i16()
    if not 0 <= version <= 4:
        raise RecordFormatError(f"offset commit value version {version} is unknown")
    r.flexible = version >= 4
    offset = r.i64()
    leader_epoch = r.i32() if version >= 3 else -1
    metadata = r.string() or ""
    commit_timestamp = r.i64()
    expire = r.i64() if version == 1 else -1
    raw_id = r.skip_tags().get(_TOPIC_ID_TAG)
    topic_id = UUID(bytes=raw_id) if raw_id is not None and len(raw_id) == 16 else ZERO_UUID
    return OffsetCommitValue(offset, leader_epoch, metadata, commit_timestamp, expire, topic_id)


def decode_group_metadata_value(data: bytes) -> GroupMetadataValue:
    r = _Reader(data, "group metadata value")
    version = r.i16()
    if not 0 <= version <= 4:
        raise RecordFormatError(f"group metadata value version {version} is unknown")
    r.flexible = version >= 4
    protocol_type = r.string() or ""
    generation = r.i32()
    protocol = r.string()
    leader = r.string()
    state_timestamp = r.i64() if version >= 2 else -1
    count = r._length(True) if r.flexible else r.i32()
    if count < 0 or count > len(data):
        raise RecordFormatError(f"group metadata value: member count {count} is impossible")
    members = []
    for _ in range(count):
        member_id = r.string() or ""
        instance_id = r.string() if version >= 3 else None
        client_id = r.string() or ""
        client_host = r.string() or ""
        rebalance_timeout = r.i32() if version >= 1 else -1
        session_timeout = r.i32()
        subscription = r.bytes_()
        assignment = r.bytes_()
        r.skip_tags()
        if rebalance_timeout < 0:
            rebalance_timeout = session_timeout
        members.append(
            MemberMetadataValue(
                member_id,
                instance_id,
                client_id,
                client_host,
                rebalance_timeout,
                session_timeout,
                subscription,
                assignment,
            )
        )
    r.skip_tags()
    return GroupMetadataValue(protocol_type, generation, protocol, leader, state_timestamp, tuple(members))
