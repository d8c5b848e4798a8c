"""KIP-848 consumer groups' records in ``__consumer_offsets``, in Kafka's layouts, and their replay.

Keys are int16 version (the record type) then plain strings: 3 group metadata (group), 5 member
metadata (group, member), 6 target assignment metadata (group), 7 target assignment of a member
(group, member), 8 current assignment of a member (group, member). Values start with int16 version 0
and are flexible (compact strings and arrays, a tagged-field section ending every struct). Records are
written as the group changes; a tombstone (None value) removes what its key names."""

from __future__ import annotations

import struct
from uuid import UUID

from kconform.codecs._primitives import read_uvarint, write_uvarint

from .consumer_group import ConsumerGroup, ConsumerMember, MemberState

__all__ = ["group_records", "group_tombstones", "member_tombstones", "replay"]

GROUP_METADATA, MEMBER_METADATA, TARGET_METADATA, TARGET_MEMBER, CURRENT_MEMBER = 3, 5, 6, 7, 8
_STATES = {MemberState.STABLE: 0, MemberState.UNREVOKED_PARTITIONS: 1, MemberState.UNRELEASED_PARTITIONS: 2}
_STATE_NAMES = {v: k for k, v in _STATES.items()}
_I16, _I32 = struct.Struct(">h"), struct.Struct(">i")


class ConsumerRecordError(ValueError):
    pass


# ---- writing --------------------------------------------------------------------------------------


def _key(version: int, *fields: str) -> bytes:
    out = bytearray(_I16.pack(version))
    for f in fields:
        data = f.encode()
        out += _I16.pack(len(data)) + data
    return bytes(out)


class _Out:
    def __init__(self) -> None:
        self.b = bytearray(_I16.pack(0))

    def i32(self, v: int) -> _Out:
        self.b += _I32.pack(v)
        return self

    def i8(self, v: int) -> _Out:
        self.b += struct.pack(">b", v)
        return self

    def string(self, v: str | None) -> _Out:
        if v is None:
            self.b.append(0)
        else:
            data = v.encode()
            write_uvarint(self.b, len(data) + 1)
            self.b += data
        return self

    def strings(self, values: list[str]) -> _Out:
        write_uvarint(self.b, len(values) + 1)
        for v in values:
            self.string(v)
        return self

    def partitions(self, tp: dict[UUID, set[int]]) -> _Out:
        write_uvarint(self.b, len(tp) + 1)
        for topic, parts in sorted(tp.items(), key=lambda kv: str(kv[0])):
            self.b += topic.bytes
            write_uvarint(self.b, len(parts) + 1)
            self.b += b"".join(_I32.pack(p) for p in sorted(parts))
            self.b.append(0)  # the struct's tagged fields
        return self

    def done(self) -> bytes:
        self.b.append(0)
        return bytes(self.b)


def group_records(group: ConsumerGroup, member: ConsumerMember | None = None) -> list[tuple[bytes, bytes]]:
    """The records that describe the group now (epochs, every target assignment) and, if given, one
    member's metadata and current assignment."""
    gid = group.group_id
    records = [
        (_key(GROUP_METADATA, gid), _Out().i32(group.group_epoch).done()),
        (_key(TARGET_METADATA, gid), _Out().i32(group.assignment_epoch).done()),
    ]
    for member_id, target in group.target.items():
        records.append((_key(TARGET_MEMBER, gid, member_id), _Out().partitions(target).done()))
    if member is not None:
        m = member
        metadata = _Out().string(m.instance_id).string(m.rack_id).string(m.client_id).string(m.client_host)
        metadata.strings(m.subscribed_topic_names).string(m.subscribed_topic_regex).i32(
            m.rebalance_timeout_ms
        )
        records.append((_key(MEMBER_METADATA, gid, m.member_id), metadata.string(m.server_assignor).done()))
        current = _Out().i32(m.member_epoch).i32(m.previous_member_epoch).i8(_STATES[m.state])
        current.partitions(m.assigned).partitions(m.pending_revocation)
        records.append((_key(CURRENT_MEMBER, gid, m.member_id), current.done()))
    return records


def member_tombstones(group_id: str, member_id: str) -> list[tuple[bytes, None]]:
    return [
        (_key(CURRENT_MEMBER, group_id, member_id), None),
        (_key(TARGET_MEMBER, group_id, member_id), None),
        (_key(MEMBER_METADATA, group_id, member_id), None),
    ]


def group_tombstones(group: ConsumerGroup) -> list[tuple[bytes, None]]:
    records: list[tuple[bytes, None]] = []
    for member_id in set(group.members) | set(group.target):
        records += member_tombstones(group.group_id, member_id)
    return records + [
        (_key(TARGET_METADATA, group.group_id), None),
        (_key(GROUP_METADATA, group.group_id), None),
    ]


# ---- reading ----------------------------------------------------------------------------------------


class _In:
    def __init__(self, data: bytes, flexible: bool) -> None:
        self.d, self.p, self.flexible = data, 0, flexible

    def fixed(self, s: struct.Struct) -> int:
        if self.p + s.size > len(self.d):
            raise ConsumerRecordError(f"record ends early at byte {self.p}")
        (v,) = s.unpack_from(self.d, self.p)
        self.p += s.size
        return v

    def uvarint(self) -> int:
        try:
            v, self.p = read_uvarint(self.d, self.p)
        except Exception as exc:
            raise ConsumerRecordError(f"bad varint at byte {self.p}") from exc
        return v

    def raw(self, n: int) -> bytes:
        if n < 0 or self.p + n > len(self.d):
            raise ConsumerRecordError(f"a length of {n} runs past the end at byte {self.p}")
        v = self.d[self.p : self.p + n]
        self.p += n
        return bytes(v)

    def string(self) -> str | None:
        n = self.uvarint() - 1 if self.flexible else self.fixed(_I16)
        return None if n < 0 else self.raw(n).decode("utf-8", "replace")

    def count(self) -> int:
        n = self.uvarint() - 1
        if n > len(self.d):
            raise ConsumerRecordError(f"impossible count {n}")
        return max(n, 0)

    def tags(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()
            self.raw(self.uvarint())

    def partitions(self) -> dict[UUID, set[int]]:
        result = {}
        for _ in range(self.count()):
            topic = UUID(bytes=self.raw(16))
            result[topic] = {self.fixed(_I32) for _ in range(self.count())}
            self.tags()
        return result


def replay(coordinator, key_version: int, key: bytes, value: bytes | None) -> None:
    """Apply one record read back from ``__consumer_offsets`` (the loader calls this for key versions
    3 and up; versions this module does not know are skipped)."""
    if key_version not in (GROUP_METADATA, MEMBER_METADATA, TARGET_METADATA, TARGET_MEMBER, CURRENT_MEMBER):
        return
    k = _In(key, flexible=False)
    k.fixed(_I16)
    group_id = k.string() or ""
    member_id = k.string() if key_version in (MEMBER_METADATA, TARGET_MEMBER, CURRENT_MEMBER) else None
    group = coordinator.groups.get(group_id)
    if not isinstance(group, ConsumerGroup):
        if value is None:
            return
        group = ConsumerGroup(group_id)
        coordinator.groups[group_id] = group
    if value is None:
        if key_version == GROUP_METADATA:
            del coordinator.groups[group_id]
        elif key_version == MEMBER_METADATA:
            gone = group.members.pop(member_id, None)
            if gone is not None and gone.instance_id is not None:
                group.static_members.pop(gone.instance_id, None)
        elif key_version == TARGET_MEMBER:
            group.target.pop(member_id, None)
        return
    v = _In(value, flexible=True)
    if v.fixed(_I16) != 0:
        return  # a newer value layout than this broker knows
    if key_version == GROUP_METADATA:
        group.group_epoch = v.fixed(_I32)
    elif key_version == TARGET_METADATA:
        group.assignment_epoch = v.fixed(_I32)
    elif key_version == TARGET_MEMBER:
        group.target[member_id] = v.partitions()
    elif key_version == MEMBER_METADATA:
        member = group.members.setdefault(member_id, ConsumerMember(member_id))
        member.instance_id, member.rack_id = v.string(), v.string()
        member.client_id, member.client_host = v.string() or "", v.string() or ""
        member.subscribed_topic_names = [v.string() or "" for _ in range(v.count())]
        member.subscribed_topic_regex = v.string()
        member.rebalance_timeout_ms = v.fixed(_I32)
        member.server_assignor = v.string()
        if member.instance_id is not None:
            group.static_members[member.instance_id] = member_id
    elif key_version == CURRENT_MEMBER:
        member = group.members.setdefault(member_id, ConsumerMember(member_id))
        member.member_epoch, member.previous_member_epoch = v.fixed(_I32), v.fixed(_I32)
        member.state = _STATE_NAMES.get(v.fixed(struct.Struct(">b")), MemberState.STABLE)
        member.assigned, member.pending_revocation = v.partitions(), v.partitions()
