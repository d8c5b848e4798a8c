"""The consumer protocol embedded in classic group requests (Kafka's ``ConsumerProtocol``): the
subscription a consumer puts in its JoinGroup metadata and the assignment a SyncGroup hands back, each
an int16 version then ``ConsumerProtocolSubscription`` / ``ConsumerProtocolAssignment`` at that version.

As Kafka reads them: a version below 0 is refused, one above the highest known (3) is read as 3 (newer
versions only add fields at the end), and bytes after the known fields are ignored. Bytes that do not
read raise ``EmbeddedProtocolError`` (Kafka's ``SchemaException``)."""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from uuid import UUID

from kconform.codecs import DecodeError
from kconform.codecs.messages import ConsumerProtocolAssignment, ConsumerProtocolSubscription

__all__ = [
    "EmbeddedProtocolError",
    "assignment_partitions",
    "owned_partitions",
    "parse_assignment",
    "parse_subscription",
    "protocol_version",
    "serialize_assignment",
]

_I16 = struct.Struct(">h")
_HIGHEST = 3  # ConsumerProtocolSubscription and ConsumerProtocolAssignment: versions 0-3


class EmbeddedProtocolError(ValueError):
    """The embedded consumer protocol does not read."""


def protocol_version(data: bytes) -> int:
    """``ConsumerProtocol.deserializeVersion``: the leading int16."""
    if len(data) < 2:
        raise EmbeddedProtocolError("Buffer underflow while parsing consumer protocol's header")
    return _I16.unpack_from(data)[0]


def _readable(version: int, what: str) -> int:
    if version < 0:
        raise EmbeddedProtocolError(f"Unsupported {what} version: {version}")
    return min(version, _HIGHEST)


def _parse(cls, data: bytes, what: str):
    version = _readable(protocol_version(data), what)
    try:
        return cls.decode_lenient(memoryview(data)[2:], version)[0]
    except DecodeError as exc:
        raise EmbeddedProtocolError(f"the consumer protocol's {what} does not read: {exc}") from None


def parse_subscription(data: bytes) -> ConsumerProtocolSubscription:
    return _parse(ConsumerProtocolSubscription, data, "subscription")


def parse_assignment(data: bytes) -> ConsumerProtocolAssignment:
    return _parse(ConsumerProtocolAssignment, data, "assignment")


def serialize_assignment(
    partitions: Mapping[UUID, Iterable[int]], names: Mapping[UUID, str], version: int
) -> bytes:
    """``ConsumerProtocol.serializeAssignment`` of ``Utils.toConsumerProtocolAssignment``: the partitions
    by topic name (topics that no longer exist are left out), written at ``version`` (the one the
    member's subscription used, so the member can read it). Topics by name and partitions in order, where
    Kafka follows its hash maps."""
    version = _readable(version, "assignment")
    topics = sorted((names[t], sorted(p)) for t, p in partitions.items() if t in names)
    entry = ConsumerProtocolAssignment.TopicPartition
    body = ConsumerProtocolAssignment(assigned_partitions=[entry(topic=n, partitions=p) for n, p in topics])
    return _I16.pack(version) + body.encode(version)


def _by_id(entries, ids: Mapping[str, UUID]) -> dict[UUID, frozenset[int]]:
    """Topic name -> id for the topics the cluster has (``Utils.toTopicPartitionMap``); a topic listed
    twice keeps its last entry, as Kafka's map does."""
    return {ids[tp.topic]: frozenset(tp.partitions) for tp in entries if tp.topic in ids}


def owned_partitions(subscription: ConsumerProtocolSubscription, ids: Mapping[str, UUID]):
    """The partitions a classic member says it still owns (``Utils.toTopicPartitions``)."""
    owned: dict[UUID, frozenset[int]] = {}
    for tp in subscription.owned_partitions:
        if tp.topic in ids:
            owned[ids[tp.topic]] = owned.get(ids[tp.topic], frozenset()) | frozenset(tp.partitions)
    return owned


def assignment_partitions(assignment: ConsumerProtocolAssignment, ids: Mapping[str, UUID]):
    return _by_id(assignment.assigned_partitions, ids)
