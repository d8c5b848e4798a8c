"""Rules of looking offsets up: ListOffsets (EARLIEST, LATEST, MAX_TIMESTAMP, by timestamp, leader
epochs, duplicates), OffsetForLeaderEpoch (the end offset of an epoch) and DeleteRecords (moving the
log start offset, and what Fetch and ListOffsets see after it)."""

from __future__ import annotations

from kconform.codecs.errors import Errors
from kconform.codecs.messages import ListOffsetsRequest, OffsetForLeaderEpochRequest

from .catalogue import Rule, add, rule
from .requests import EARLIEST, LATEST, LIST_OFFSETS, MAX_TIMESTAMP, batch, list_offsets_request, now_ms
from .rules_fetch import create_topic, leader_epoch, topic_with
from .session import RuleSession, expect, expect_error

OFFSET_FOR_LEADER_EPOCH, DELETE_RECORDS = 23, 21
EARLIEST_LOCAL, LATEST_TIERED = -4, -5
LO = "list-offsets"
OLE = "offset-for-leader-epoch"
DR = "delete-records"
LO_ALL = (1, 11)  # v0 (old_style_offsets) left out: Kafka 4.0 serves ListOffsets from v1
LO_EPOCHS = (4, 11)  # current_leader_epoch and the answer's leader_epoch, KIP-320


async def list_offsets(s: RuleSession, version: int, topic: str, timestamp: int, *, client=None, **kwargs):
    """The one partition answer of a ListOffsets for ``timestamp``."""
    client = client or await s.leader(topic, kwargs.get("partition", 0))
    body = await s.call(client, LIST_OFFSETS, version, list_offsets_request(topic, timestamp, **kwargs))
    return body.topics[0].partitions[0]


def _found(part) -> tuple[int, int, int]:
    return part.error_code, part.offset, part.timestamp


# ---- ListOffsets -------------------------------------------------------------------------------------


async def _stamped_topic(s: RuleSession):
    """Two batches with timestamps base, base+50, base+10 | base+20, base+30 (the largest in the middle
    of the first batch), as a producer with CreateTime sends them."""
    base = now_ms() - 100_000
    topic, topic_id, leader = await topic_with(
        s, batch(3, timestamps=[base, base + 50, base + 10]), batch(2, timestamps=[base + 20, base + 30])
    )
    return topic, leader, base


def _by_timestamp(label: str, delta: int | None, want):
    """A rule checking ListOffsets for base+delta on the stamped topic; ``want(base)`` the answer."""

    async def check(s: RuleSession, version: int) -> None:
        topic, leader, base = await _stamped_topic(s)
        part = await list_offsets(s, version, topic, base + delta, client=leader)
        expect("(error_code, offset, timestamp)", _found(part), want(base))

    return check


# Partition.fetchOffsetForTimestamp / UnifiedLog.fetchOffsetByTimestamp: the first record whose
# timestamp is at or after the target; its offset and its own timestamp. From v1 (v0 lists offsets).
for _label, _delta, _want, _text in (
    (
        "at-first-timestamp",
        0,
        lambda b: (0, 0, b),
        "A timestamp equal to the first record's finds offset 0 with that timestamp.",
    ),
    (
        "finds-first-record-at-or-after",
        10,
        lambda b: (0, 1, b + 50),
        "A timestamp finds the first record in offset order whose timestamp is at or after it, with "
        "that record's timestamp.",
    ),
    (
        "after-every-record-finds-none",
        51,
        lambda b: (0, -1, -1),
        "A timestamp after every record's is answered NONE with offset -1 and timestamp -1.",
    ),
    (
        "before-every-record-finds-the-first",
        -5000,
        lambda b: (0, 0, b),
        "A timestamp before every record's finds the first record, offset 0 with its timestamp.",
    ),
):
    add(
        Rule(
            id=f"{LO}.by-timestamp-{_label}",
            api=LIST_OFFSETS,
            versions=LO_ALL,
            source="UnifiedLog.fetchOffsetByTimestamp",
            text=_text,
            check=_by_timestamp(_label, _delta, _want),
            family=LO,
        )
    )


@rule(
    f"{LO}.earliest-is-log-start",
    api=LIST_OFFSETS,
    versions=LO_ALL,
    source="UnifiedLog.fetchOffsetByTimestamp EARLIEST_TIMESTAMP",
    family=LO,
)
async def lo_earliest(s: RuleSession, version: int) -> None:
    """EARLIEST (-2) answers the log start offset (0 for a new log) with timestamp -1."""
    topic, _, leader = await topic_with(s, batch(3))
    expect(
        "(error_code, offset, timestamp)", _found(await list_offsets(s, version, topic, EARLIEST)), (0, 0, -1)
    )


@rule(
    f"{LO}.latest-is-high-watermark",
    api=LIST_OFFSETS,
    versions=LO_ALL,
    source="Partition.fetchOffsetForTimestamp LATEST_TIMESTAMP",
    family=LO,
)
async def lo_latest(s: RuleSession, version: int) -> None:
    """LATEST (-1) answers the high watermark (the next offset to be written) with timestamp -1."""
    topic, _, leader = await topic_with(s, batch(3), batch(2))
    expect(
        "(error_code, offset, timestamp)", _found(await list_offsets(s, version, topic, LATEST)), (0, 5, -1)
    )


@rule(
    f"{LO}.empty-log-earliest-and-latest-zero",
    api=LIST_OFFSETS,
    versions=LO_ALL,
    source="Partition.fetchOffsetForTimestamp",
    family=LO,
)
async def lo_empty(s: RuleSession, version: int) -> None:
    """On an empty log both EARLIEST and LATEST answer offset 0."""
    topic, _, leader = await topic_with(s)
    expect("EARLIEST", _found(await list_offsets(s, version, topic, EARLIEST)), (0, 0, -1))
    expect("LATEST", _found(await list_offsets(s, version, topic, LATEST)), (0, 0, -1))


@rule(
    f"{LO}.empty-log-by-timestamp-finds-none",
    api=LIST_OFFSETS,
    versions=LO_ALL,
    source="UnifiedLog.fetchOffsetByTimestamp",
    family=LO,
)
async def lo_empty_ts(s: RuleSession, version: int) -> None:
    """A timestamp lookup on an empty log is answered NONE with offset -1 and timestamp -1."""
    topic, _, leader = await topic_with(s)
    expect("(error_code, offset, timestamp)", _found(await list_offsets(s, version, topic, 0)), (0, -1, -1))


@rule(
    f"{LO}.max-timestamp-finds-the-largest",
    api=LIST_OFFSETS,
    versions=(7, 11),
    source="UnifiedLog.fetchOffsetByTimestamp MAX_TIMESTAMP",
    family=LO,
    since="3.0",
)
async def lo_max_timestamp(s: RuleSession, version: int) -> None:
    """From v7 MAX_TIMESTAMP (-3) answers the offset of the record with the largest timestamp and that
    timestamp, even inside an earlier batch (KIP-734)."""
    topic, leader, base = await _stamped_topic(s)
    part = await list_offsets(s, version, topic, MAX_TIMESTAMP, client=leader)
    expect("(error_code, offset, timestamp)", _found(part), (0, 1, base + 50))


@rule(
    f"{LO}.earliest-local-without-tiering-is-log-start",
    api=LIST_OFFSETS,
    versions=(8, 11),
    source="UnifiedLog.fetchOffsetByTimestamp EARLIEST_LOCAL_TIMESTAMP",
    family=LO,
    since="3.5",
)
async def lo_earliest_local(s: RuleSession, version: int) -> None:
    """From v8 EARLIEST_LOCAL (-4) answers the local log start offset, the log start offset when the
    topic is not tiered (KIP-405)."""
    topic, _, leader = await topic_with(s, batch(3))
    part = await list_offsets(s, version, topic, EARLIEST_LOCAL)
    expect("(error_code, offset)", (part.error_code, part.offset), (0, 0))


@rule(
    f"{LO}.latest-tiered-without-tiering-is-none",
    api=LIST_OFFSETS,
    versions=(9, 11),
    source="UnifiedLog.fetchOffsetByTimestamp LATEST_TIERED_TIMESTAMP",
    family=LO,
    since="3.9",
)
async def lo_latest_tiered(s: RuleSession, version: int) -> None:
    """From v9 LATEST_TIERED (-5) on a topic without remote storage answers NONE, offset -1, timestamp
    -1 (KIP-1005)."""
    topic, _, leader = await topic_with(s, batch(3))
    expect(
        "(error_code, offset, timestamp)",
        _found(await list_offsets(s, version, topic, LATEST_TIERED)),
        (0, -1, -1),
    )


def _below_version(timestamp: int, first: int):
    async def check(s: RuleSession, version: int) -> None:
        topic, _, leader = await topic_with(s, batch(2))
        part = await list_offsets(s, version, topic, timestamp)
        expect_error("error_code", part.error_code, Errors.UNSUPPORTED_VERSION)

    return check


# KafkaApis.handleListOffsetRequestV1AndAbove (ReplicaManager.isListOffsetsTimestampUnsupported from
# 4.2): a special timestamp in a request older than the version that brought it is UNSUPPORTED_VERSION.
for _name, _ts, _first in (
    ("max-timestamp", MAX_TIMESTAMP, 7),
    ("earliest-local", EARLIEST_LOCAL, 8),
    ("latest-tiered", LATEST_TIERED, 9),
):
    add(
        Rule(
            id=f"{LO}.{_name}-below-v{_first}-unsupported",
            api=LIST_OFFSETS,
            versions=(1, _first - 1),
            source="KafkaApis.handleListOffsetRequestV1AndAbove UNSUPPORTED_VERSION",
            text=f"The special timestamp {_ts} in a ListOffsets below v{_first} is answered "
            "UNSUPPORTED_VERSION.",
            check=_below_version(_ts, _first),
            family=LO,
        )
    )


@rule(
    f"{LO}.unknown-topic",
    api=LIST_OFFSETS,
    versions=LO_ALL,
    source="ReplicaManager.fetchOffset getPartitionOrException",
    family=LO,
)
async def lo_unknown_topic(s: RuleSession, version: int) -> None:
    """A topic the broker does not know is answered UNKNOWN_TOPIC_OR_PARTITION with offset -1."""
    part = await list_offsets(s, version, s.name("missing"), LATEST, client=await s.raw())
    expect_error("error_code", part.error_code, Errors.UNKNOWN_TOPIC_OR_PARTITION)
    expect("offset", part.offset, -1)


@rule(
    f"{LO}.unknown-partition",
    api=LIST_OFFSETS,
    versions=LO_ALL,
    source="ReplicaManager.fetchOffset getPartitionOrException",
    family=LO,
)
async def lo_unknown_partition(s: RuleSession, version: int) -> None:
    """A partition the topic does not have is answered UNKNOWN_TOPIC_OR_PARTITION."""
    topic, _, leader = await topic_with(s)
    part = await list_offsets(s, version, topic, LATEST, client=leader, partition=7)
    expect_error("error_code", part.error_code, Errors.UNKNOWN_TOPIC_OR_PARTITION)


@rule(
    f"{LO}.duplicate-partition-invalid-request",
    api=LIST_OFFSETS,
    versions=LO_ALL,
    source="KafkaApis.handleListOffsetRequestV1AndAbove duplicatePartitions",
    family=LO,
)
async def lo_duplicate(s: RuleSession, version: int) -> None:
    """A partition named twice is answered INVALID_REQUEST (each time); the others are answered."""
    topic, topic_id = await create_topic(s, 1)
    leader = await s.leader(topic)
    request = list_offsets_request(topic, LATEST)
    one = request.topics[0].partitions[0]
    request.topics[0].partitions = [
        one,
        ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=LATEST),
    ]
    request.topics.append(
        ListOffsetsRequest.ListOffsetsTopic(
            name=s.name("missing"), partitions=[ListOffsetsRequest.ListOffsetsPartition(timestamp=LATEST)]
        )
    )
    body = await s.call(leader, LIST_OFFSETS, version, request)
    mine = [p.error_code for t in body.topics if t.name == topic for p in t.partitions]
    expect("error codes of the twice-named partition", mine, [Errors.INVALID_REQUEST] * 2)
    other = [p.error_code for t in body.topics if t.name != topic for p in t.partitions]
    expect("error codes of the other topic", other, [Errors.UNKNOWN_TOPIC_OR_PARTITION])


@rule(
    f"{LO}.latest-carries-leader-epoch",
    api=LIST_OFFSETS,
    versions=LO_EPOCHS,
    source="Partition.fetchOffsetForTimestamp LATEST_TIMESTAMP leaderEpoch",
    family=LO,
)
async def lo_latest_epoch(s: RuleSession, version: int) -> None:
    """From v4 LATEST answers the partition's current leader epoch."""
    topic, _, leader = await topic_with(s, batch(2))
    epoch = await leader_epoch(s, topic)
    part = await list_offsets(s, version, topic, LATEST, client=leader)
    expect("leader_epoch", part.leader_epoch, epoch)


@rule(
    f"{LO}.by-timestamp-carries-the-batch-epoch",
    api=LIST_OFFSETS,
    versions=LO_EPOCHS,
    source="UnifiedLog.fetchOffsetByTimestamp leaderEpochCache",
    family=LO,
)
async def lo_ts_epoch(s: RuleSession, version: int) -> None:
    """From v4 an offset found by timestamp carries the leader epoch its batch was written in."""
    topic, leader, base = await _stamped_topic(s)
    epoch = await leader_epoch(s, topic)
    part = await list_offsets(s, version, topic, base, client=leader)
    expect("(offset, leader_epoch)", (part.offset, part.leader_epoch), (0, epoch))


@rule(
    f"{LO}.current-leader-epoch-newer-is-unknown",
    api=LIST_OFFSETS,
    versions=LO_EPOCHS,
    source="Partition.checkCurrentLeaderEpoch UNKNOWN_LEADER_EPOCH",
    family=LO,
)
async def lo_epoch_newer(s: RuleSession, version: int) -> None:
    """From v4 a current_leader_epoch newer than the leader's is answered UNKNOWN_LEADER_EPOCH."""
    topic, _, leader = await topic_with(s, batch(1))
    epoch = await leader_epoch(s, topic)
    part = await list_offsets(s, version, topic, LATEST, client=leader, leader_epoch=epoch + 1)
    expect_error("error_code", part.error_code, Errors.UNKNOWN_LEADER_EPOCH)


@rule(
    f"{LO}.current-leader-epoch-matching-is-served",
    api=LIST_OFFSETS,
    versions=LO_EPOCHS,
    source="Partition.checkCurrentLeaderEpoch",
    family=LO,
)
async def lo_epoch_same(s: RuleSession, version: int) -> None:
    """From v4 a current_leader_epoch equal to the leader's is served."""
    topic, _, leader = await topic_with(s, batch(1))
    epoch = await leader_epoch(s, topic)
    part = await list_offsets(s, version, topic, LATEST, client=leader, leader_epoch=epoch)
    expect("(error_code, offset)", (part.error_code, part.offset), (0, 1))


@rule(
    f"{LO}.read-committed-latest-without-transactions",
    api=LIST_OFFSETS,
    versions=(2, 11),
    source="Partition.fetchOffsetForTimestamp lastFetchableOffset",
    family=LO,
)
async def lo_read_committed(s: RuleSession, version: int) -> None:
    """From v2 LATEST under READ_COMMITTED answers the last stable offset: the high watermark when no
    transaction is open."""
    topic, _, leader = await topic_with(s, batch(3))
    part = await list_offsets(s, version, topic, LATEST, client=leader, isolation_level=1)
    expect("(error_code, offset)", (part.error_code, part.offset), (0, 3))


# ---- OffsetForLeaderEpoch ----------------------------------------------------------------------------


async def leader_epoch_end(
    s: RuleSession,
    version: int,
    topic: str,
    epoch: int,
    *,
    current: int = -1,
    partition: int = 0,
    client=None,
):
    client = client or await s.leader(topic, partition)
    request = OffsetForLeaderEpochRequest(
        replica_id=-1,
        topics=[
            OffsetForLeaderEpochRequest.OffsetForLeaderTopic(
                topic=topic,
                partitions=[
                    OffsetForLeaderEpochRequest.OffsetForLeaderPartition(
                        partition=partition, current_leader_epoch=current, leader_epoch=epoch
                    )
                ],
            )
        ],
    )
    body = await s.call(client, OFFSET_FOR_LEADER_EPOCH, version, request)
    return body.topics[0].partitions[0]


OLE_ALL = (2, 4)  # current_leader_epoch from v2; Kafka 4.0 serves v2 and up


@rule(
    f"{OLE}.current-epoch-ends-at-log-end",
    api=OFFSET_FOR_LEADER_EPOCH,
    versions=OLE_ALL,
    source="LeaderEpochFileCache.endOffsetFor latestEpoch",
    family=OLE,
)
async def ole_current(s: RuleSession, version: int) -> None:
    """The leader's current epoch ends at the log end offset: that epoch and the log end offset."""
    topic, _, leader = await topic_with(s, batch(3))
    epoch = await leader_epoch(s, topic)
    part = await leader_epoch_end(s, version, topic, epoch, client=leader)
    expect(
        "(error_code, leader_epoch, end_offset)",
        (part.error_code, part.leader_epoch, part.end_offset),
        (0, epoch, 3),
    )


@rule(
    f"{OLE}.epoch-after-latest-is-undefined",
    api=OFFSET_FOR_LEADER_EPOCH,
    versions=OLE_ALL,
    source="LeaderEpochFileCache.endOffsetFor UNDEFINED_EPOCH_OFFSET",
    family=OLE,
)
async def ole_future(s: RuleSession, version: int) -> None:
    """An epoch after the latest one the log has is answered NONE with leader epoch -1 and end offset -1."""
    topic, _, leader = await topic_with(s, batch(3))
    epoch = await leader_epoch(s, topic)
    part = await leader_epoch_end(s, version, topic, epoch + 5, client=leader)
    expect(
        "(error_code, leader_epoch, end_offset)",
        (part.error_code, part.leader_epoch, part.end_offset),
        (0, -1, -1),
    )


@rule(
    f"{OLE}.current-leader-epoch-newer-is-unknown",
    api=OFFSET_FOR_LEADER_EPOCH,
    versions=OLE_ALL,
    source="Partition.lastOffsetForLeaderEpoch checkCurrentLeaderEpoch",
    family=OLE,
)
async def ole_newer(s: RuleSession, version: int) -> None:
    """A current_leader_epoch newer than the leader's is answered UNKNOWN_LEADER_EPOCH."""
    topic, _, leader = await topic_with(s, batch(1))
    epoch = await leader_epoch(s, topic)
    part = await leader_epoch_end(s, version, topic, epoch, current=epoch + 1, client=leader)
    expect_error("error_code", part.error_code, Errors.UNKNOWN_LEADER_EPOCH)


@rule(
    f"{OLE}.current-leader-epoch-matching-is-served",
    api=OFFSET_FOR_LEADER_EPOCH,
    versions=OLE_ALL,
    source="Partition.lastOffsetForLeaderEpoch checkCurrentLeaderEpoch",
    family=OLE,
)
async def ole_same(s: RuleSession, version: int) -> None:
    """A current_leader_epoch equal to the leader's is served with the epoch's end offset."""
    topic, _, leader = await topic_with(s, batch(2))
    epoch = await leader_epoch(s, topic)
    part = await leader_epoch_end(s, version, topic, epoch, current=epoch, client=leader)
    expect("(error_code, end_offset)", (part.error_code, part.end_offset), (0, 2))


@rule(
    f"{OLE}.unknown-topic",
    api=OFFSET_FOR_LEADER_EPOCH,
    versions=OLE_ALL,
    source="ReplicaManager.lastOffsetForLeaderEpoch UNKNOWN_TOPIC_OR_PARTITION",
    family=OLE,
)
async def ole_unknown_topic(s: RuleSession, version: int) -> None:
    """A topic the broker does not know is answered UNKNOWN_TOPIC_OR_PARTITION."""
    part = await leader_epoch_end(s, version, s.name("missing"), 0, client=await s.raw())
    expect_error("error_code", part.error_code, Errors.UNKNOWN_TOPIC_OR_PARTITION)


@rule(
    f"{OLE}.unknown-partition",
    api=OFFSET_FOR_LEADER_EPOCH,
    versions=OLE_ALL,
    source="ReplicaManager.lastOffsetForLeaderEpoch UNKNOWN_TOPIC_OR_PARTITION",
    family=OLE,
)
async def ole_unknown_partition(s: RuleSession, version: int) -> None:
    """A partition the topic does not have is answered UNKNOWN_TOPIC_OR_PARTITION."""
    topic, _, leader = await topic_with(s)
    part = await leader_epoch_end(s, version, topic, 0, partition=7, client=leader)
    expect_error("error_code", part.error_code, Errors.UNKNOWN_TOPIC_OR_PARTITION)
