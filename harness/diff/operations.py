"""Operations the differential engine runs: each becomes one request, built the same way for every
target, at a version both targets advertise.

Names inside a case are indexes (topic 0, group 1), turned into real names with the case's prefix, so
cases never see each other's topics and a shrunk case reads as a short story. Record timestamps are
fixed, so the only differences left are the targets' own."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from kconform.codecs.messages import (
    CreateTopicsRequest,
    DeleteRecordsRequest,
    FetchRequest,
    FindCoordinatorRequest,
    ListOffsetsRequest,
    MetadataRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    OffsetForLeaderEpochRequest,
    ProduceRequest,
)
from kconform.codecs.records import Record, encode_batch

from .context import (
    AFTER_A_CRASH,
    AFTER_A_DIFFERING_WRITE,
    Context,
    epoch_shape,
    has_members,
    log_end_appended,
    log_end_shape,
    offset_shape,
    topic_shape,
)

__all__ = [
    "CreateTopic",
    "DeleteRecords",
    "Fetch",
    "FindCoordinator",
    "ListOffsets",
    "Metadata",
    "OffsetCommit",
    "OffsetFetch",
    "OffsetForLeaderEpoch",
    "Operation",
    "Produce",
]

BASE_TIMESTAMP = 1_700_000_000_000


# The first version of each API that names topics by id (KIP-516): each target gives out its own ids,
# so such a request is built once per side, with the ids that side's Metadata gave (``Context.ids``).
TOPIC_IDS_FROM = {0: 13, 1: 13, 8: 10, 9: 10}


@dataclass(frozen=True)
class Operation:
    """``api_key`` is the request the operation sends; ``version_pick`` chooses among the versions
    both targets offer (an index taken modulo their number, so a case replays on any pair)."""

    version_pick: int

    api_key = -1
    expects_response = True
    min_version, max_version = 0, 1 << 15  # narrower than the API's, for steps only some versions carry

    def version(self, low: int, high: int) -> int:
        return low + self.version_pick % (high - low + 1)

    def own_entries(self, version: int) -> tuple[str, str] | None:
        """For a request that lists everything the broker has (every topic, group, transaction): the
        answer's list and the key naming each entry, so only this case's own entries are compared."""
        return None

    def channel(self, ctx: Context):
        """The connection the request goes on: None for the case's own, else a key naming another one
        (a classic group member's: a broker answers its held requests in order per connection)."""
        return None

    def may_wait(self, ctx: Context) -> bool:
        """Whether a broker may hold this request until another one of the case comes (a JoinGroup
        waiting for the other members to rejoin): its answer is then read after the next operation's."""
        return False

    def names_topics_by_id(self, version: int) -> bool:
        return version >= TOPIC_IDS_FROM.get(self.api_key, 1 << 15)

    def body(self, ctx: Context, version: int):
        raise NotImplementedError

    def learn(self, side: str, ctx: Context, answer) -> None:
        """Keep what ``side``'s answer gave out (a member id, a producer id) for the steps after."""

    def ran(self, ctx: Context) -> None:
        """Keep what the step did whatever came back (a write no answer tells about)."""

    def topics(self, ctx: Context) -> list[str]:
        return []

    def describe(self, version: int) -> str:
        """The operation as a reader wants it: API name and version, then the fields that are set."""
        from kconform.codecs import api_schema

        fields = [
            f"{item.name}={getattr(self, item.name)!r}"
            for item in dataclasses.fields(self)
            if item.name != "version_pick" and getattr(self, item.name) != item.default
        ]
        return f"{api_schema(self.api_key).name} v{version}" + (f" ({', '.join(fields)})" if fields else "")

    def shape(self, ctx: Context) -> str:
        """What kind of request this is, in the terms that decide a broker's answer (an unknown topic, a
        partition out of range, acks=0): differences with the same shape and values share a cause. A
        request naming a topic an earlier write left different on the two targets says so last, and
        any request after a target crashed."""
        parts = self._shape_parts(ctx) + self._situation_parts(ctx)
        if getattr(self, "topic", None) in ctx.diverged:
            parts = [*parts, AFTER_A_DIFFERING_WRITE]
        if ctx.crashed:
            parts = [*parts, AFTER_A_CRASH]
        return f"{type(self).__name__}({','.join(parts)})"

    def writes(self, ctx: Context) -> tuple[int, ...]:
        """The topic indexes this request changes (records, partitions, the topic itself)."""
        return ()

    def membership(self) -> tuple[int, int] | None:
        """(group, member) when this request changes a classic group's members (join, sync, leave)."""
        return None

    def creates(self, version: int) -> tuple[int, ...]:
        """The topic indexes this request at ``version`` asks the broker to create as a side effect."""
        return ()

    def _shape_parts(self, ctx: Context) -> list[str]:
        return []

    def answered_parts(self, ctx: Context, shape: str, alongside: list) -> list[str]:
        """Shape parts known only once the answers came: what ``alongside`` (the steps sent while this
        one, of ``shape``, was unanswered) did to it. Called once per exchange, after ``learn``."""
        return []

    def _situation_parts(self, ctx: Context) -> list[str]:
        """Shape parts from what others did before this request (another member in its group)."""
        return []


class PerSide:
    """For an operation whose request carries ids each target gave out (a member id, a producer id):
    ``body_for(side, ...)`` builds one body per side; ``body`` is side a's."""

    def body(self, ctx, version):
        return self.body_for("a", ctx, version)


class _NamesTopicsById:
    """For an operation whose newest versions name its topic by id: one request per side, the shared
    body with the name blanked and that side's id filled in. ``_topic_entry`` says where the topic is."""

    _TOPIC_NAME_FIELD = "name"

    def _topic_entry(self, body):
        raise NotImplementedError

    def body_for(self, side, ctx, version):
        body = self.body(ctx, version)
        if self.names_topics_by_id(version):
            entry = self._topic_entry(body)
            setattr(entry, self._TOPIC_NAME_FIELD, "")
            entry.topic_id = ctx.topic_id(side, self.topic)
        return body


@dataclass(frozen=True)
class CreateTopic(Operation):
    topic: int = 0
    partitions: int = 1
    api_key = 19

    def writes(self, ctx):
        return (self.topic,)

    def body(self, ctx, version):
        topic = CreateTopicsRequest.CreatableTopic(
            name=ctx.topic(self.topic), num_partitions=self.partitions, replication_factor=1
        )
        return CreateTopicsRequest(topics=[topic], timeout_ms=10_000)

    def topics(self, ctx):
        return [ctx.topic(self.topic)]

    def _shape_parts(self, ctx):
        parts = ["exists"] if self.topic in ctx.created else []
        return parts + ([] if self.partitions > 0 else [f"partitions={self.partitions}"])


@dataclass(frozen=True)
class Produce(_NamesTopicsById, Operation):
    topic: int = 0
    partition: int = 0
    values: tuple[bytes | None, ...] = (b"v",)
    keyed: bool = False
    acks: int = -1
    corrupt: bool = False  # flip a byte inside the batch after its CRC was computed
    api_key = 0

    def writes(self, ctx):
        return (self.topic,)

    def learn(self, side, ctx, answer):
        log_end_appended(side, ctx, self.topic, self.partition, answer, len(self.values))

    def ran(self, ctx):
        if self.acks == 0:  # nothing says whether it was written
            ctx.state[("a", "log end", self.topic, self.partition)] = None

    def _topic_entry(self, body):
        return body.topic_data[0]

    @property
    def expects_response(self) -> bool:  # type: ignore[override]
        return self.acks != 0

    def body(self, ctx, version):
        records = [
            Record(i, BASE_TIMESTAMP + i, b"k%d" % i if self.keyed else None, value)
            for i, value in enumerate(self.values)
        ]
        # The record format each version carries, as a real client sends it: Produce v0-1 take magic 0,
        # v2 magic 1, v3+ magic 2 (ProduceRequest.requiredMagicForVersion).
        magic = 0 if version < 2 else 1 if version == 2 else 2
        if magic == 0:
            records = [Record(r.offset, -1, r.key, r.value) for r in records]
        batch = encode_batch(records, magic=magic)
        if self.corrupt and len(batch) > 30:
            damaged = bytearray(batch)
            damaged[-1] ^= 0xFF  # inside the last record (or message): the CRC no longer matches
            batch = bytes(damaged)
        data = ProduceRequest.PartitionProduceData(index=self.partition, records=batch)
        topic = ProduceRequest.TopicProduceData(name=ctx.topic(self.topic), partition_data=[data])
        return ProduceRequest(acks=self.acks, timeout_ms=5_000, topic_data=[topic])

    def topics(self, ctx):
        return [ctx.topic(self.topic)]

    def _shape_parts(self, ctx):
        parts = [f"acks={self.acks}"] if self.acks != -1 else []
        parts += ["corrupt"] if self.corrupt else []
        parts += ["no records"] if not self.values else []
        return parts + topic_shape(ctx, self.topic, self.partition)


@dataclass(frozen=True)
class Fetch(_NamesTopicsById, Operation):
    topic: int = 0
    partition: int = 0
    offset: int = 0
    max_bytes: int = 1 << 20
    leader_epoch: int = -1  # the leader epoch the fetcher believes in (v9+); a wrong one is fenced
    api_key = 1
    _TOPIC_NAME_FIELD = "topic"

    def _topic_entry(self, body):
        return body.topics[0]

    def body(self, ctx, version):
        part = FetchRequest.FetchPartition(
            partition=self.partition,
            fetch_offset=self.offset,
            partition_max_bytes=self.max_bytes,
            current_leader_epoch=self.leader_epoch,
            log_start_offset=-1,
        )
        topic = FetchRequest.FetchTopic(topic=ctx.topic(self.topic), partitions=[part])
        return FetchRequest(
            replica_id=-1,
            max_wait_ms=10,
            min_bytes=0,
            max_bytes=self.max_bytes,
            isolation_level=0,
            session_id=0,
            session_epoch=-1,
            topics=[topic],
        )

    def topics(self, ctx):
        return [ctx.topic(self.topic)]

    def _shape_parts(self, ctx):
        parts = topic_shape(ctx, self.topic, self.partition) + offset_shape(self.offset)
        parts += log_end_shape(ctx, self.topic, self.partition, self.offset)
        return parts + epoch_shape(self.leader_epoch) + (["tiny max bytes"] if self.max_bytes < 1000 else [])


@dataclass(frozen=True)
class ListOffsets(Operation):
    topic: int = 0
    partition: int = 0
    timestamp: int = -1  # -1 latest, -2 earliest, -3 max timestamp, else a time
    leader_epoch: int = -1  # v4+
    api_key = 2

    def body(self, ctx, version):
        part = ListOffsetsRequest.ListOffsetsPartition(
            partition_index=self.partition,
            timestamp=self.timestamp,
            current_leader_epoch=self.leader_epoch,
            max_num_offsets=1,
        )
        topic = ListOffsetsRequest.ListOffsetsTopic(name=ctx.topic(self.topic), partitions=[part])
        return ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[topic], timeout_ms=1_000)

    def topics(self, ctx):
        return [ctx.topic(self.topic)]

    def _shape_parts(self, ctx):
        special = {-1: "latest", -2: "earliest", -3: "max timestamp", -4: "local start", -5: "tiered"}
        moment = special.get(self.timestamp, "by time")
        return [moment, *topic_shape(ctx, self.topic, self.partition), *epoch_shape(self.leader_epoch)]


@dataclass(frozen=True)
class OffsetForLeaderEpoch(Operation):
    """A consumer asking where an epoch ended (after a leader change, to detect a truncated log)."""

    topic: int = 0
    partition: int = 0
    leader_epoch: int = 0  # the epoch whose end is asked for
    current_epoch: int = -1  # v2+: the epoch the consumer believes current, fenced if stale
    api_key = 23

    def body(self, ctx, version):
        part = OffsetForLeaderEpochRequest.OffsetForLeaderPartition(
            partition=self.partition, current_leader_epoch=self.current_epoch, leader_epoch=self.leader_epoch
        )
        topic = OffsetForLeaderEpochRequest.OffsetForLeaderTopic(
            topic=ctx.topic(self.topic), partitions=[part]
        )
        return OffsetForLeaderEpochRequest(replica_id=-1, topics=[topic])  # -1: a consumer, not a follower

    def topics(self, ctx):
        return [ctx.topic(self.topic)]

    def _shape_parts(self, ctx):
        asked = {-1: ["no epoch asked"], 0: []}.get(self.leader_epoch, ["a later epoch asked"])
        current = [] if self.current_epoch == -1 else [f"current epoch {self.current_epoch}"]
        return [*asked, *topic_shape(ctx, self.topic, self.partition), *current]


@dataclass(frozen=True)
class Metadata(Operation):
    topic_list: tuple[int, ...] = (0,)
    all_topics: bool = False  # a null topic list (v1+): every topic the broker has
    api_key = 3

    def own_entries(self, version: int) -> tuple[str, str] | None:
        """Every topic is asked for by a null list from v1, and by an empty one at v0."""
        every = (self.all_topics and version >= 1) or (version == 0 and not self.topic_list)
        return ("topics", "name") if every else None

    def body(self, ctx, version):
        topics = [MetadataRequest.MetadataRequestTopic(name=ctx.topic(t)) for t in self.topic_list]
        if self.all_topics and version >= 1:
            topics = None
        # Before v4 a Metadata request always allows auto-creation; the field does not exist.
        return MetadataRequest(topics=topics, allow_auto_topic_creation=version < 4)

    def topics(self, ctx):
        return [ctx.topic(t) for t in self.topic_list]

    def creates(self, version):
        return self.topic_list if version < 4 and not (self.all_topics and version >= 1) else ()

    def _shape_parts(self, ctx):
        if self.all_topics:
            return ["all topics"]
        parts = ["no topics"] if not self.topic_list else []
        unknown = [t for t in self.topic_list if t not in ctx.created]
        if unknown:
            auto = all(t in ctx.auto_created for t in unknown)
            parts.append("auto-created topic" if auto else "unknown topic")
        return parts + (["a topic named twice"] if len(set(self.topic_list)) < len(self.topic_list) else [])


@dataclass(frozen=True)
class DeleteRecords(Operation):
    topic: int = 0
    partition: int = 0
    offset: int = 0
    api_key = 21

    def writes(self, ctx):
        return (self.topic,)

    def body(self, ctx, version):
        part = DeleteRecordsRequest.DeleteRecordsPartition(partition_index=self.partition, offset=self.offset)
        topic = DeleteRecordsRequest.DeleteRecordsTopic(name=ctx.topic(self.topic), partitions=[part])
        return DeleteRecordsRequest(topics=[topic], timeout_ms=5_000)

    def topics(self, ctx):
        return [ctx.topic(self.topic)]

    def _shape_parts(self, ctx):
        return topic_shape(ctx, self.topic, self.partition) + offset_shape(self.offset)


@dataclass(frozen=True)
class FindCoordinator(Operation):
    group: int = 0
    key_type: int = 0  # 0: the group ``group``; 1: the transactional id of producer ``group``
    api_key = 10

    def body(self, ctx, version):
        key = ctx.transactional_id(self.group) if self.key_type == 1 else ctx.group(self.group)
        if version >= 4:
            return FindCoordinatorRequest(key_type=self.key_type, coordinator_keys=[key])
        return FindCoordinatorRequest(key=key, key_type=self.key_type)

    def _shape_parts(self, ctx):
        return ["transaction"] if self.key_type == 1 else []


@dataclass(frozen=True)
class OffsetCommit(_NamesTopicsById, Operation):
    """A simple (non-member) commit, as admin tools and manual-assignment consumers make."""

    group: int = 0
    topic: int = 0
    partition: int = 0
    offset: int = 0
    api_key = 8

    def _topic_entry(self, body):
        return body.topics[0]

    def body(self, ctx, version):
        part = OffsetCommitRequest.OffsetCommitRequestPartition(
            partition_index=self.partition,
            committed_offset=self.offset,
            committed_leader_epoch=-1,
            committed_metadata="",
        )
        topic = OffsetCommitRequest.OffsetCommitRequestTopic(name=ctx.topic(self.topic), partitions=[part])
        return OffsetCommitRequest(
            group_id=ctx.group(self.group),
            generation_id_or_member_epoch=-1,
            member_id="",
            retention_time_ms=-1,
            topics=[topic],
        )

    def topics(self, ctx):
        return [ctx.topic(self.topic)]

    def _shape_parts(self, ctx):
        parts = topic_shape(ctx, self.topic, self.partition) + offset_shape(self.offset)
        return parts + (["into a group with members"] if has_members(ctx, self.group) else [])


@dataclass(frozen=True)
class OffsetFetch(_NamesTopicsById, Operation):
    group: int = 0
    topic: int = 0
    partition: int = 0
    api_key = 9

    def _topic_entry(self, body):
        return body.groups[0].topics[0]

    def body(self, ctx, version):
        if version >= 8:
            topic = OffsetFetchRequest.OffsetFetchRequestTopics(
                name=ctx.topic(self.topic), partition_indexes=[self.partition]
            )
            group = OffsetFetchRequest.OffsetFetchRequestGroup(group_id=ctx.group(self.group), topics=[topic])
            return OffsetFetchRequest(groups=[group], require_stable=False)
        topic = OffsetFetchRequest.OffsetFetchRequestTopic(
            name=ctx.topic(self.topic), partition_indexes=[self.partition]
        )
        return OffsetFetchRequest(group_id=ctx.group(self.group), topics=[topic], require_stable=False)

    def topics(self, ctx):
        return [ctx.topic(self.topic)]

    def _shape_parts(self, ctx):
        return topic_shape(ctx, self.topic, self.partition)
