"""Rules of DeleteRecords: moving the log start offset (to an offset, to the high watermark with -1,
never backwards), its errors, and what Fetch and ListOffsets see after it."""

from __future__ import annotations

from kconform.codecs.errors import Errors
from kconform.codecs.messages import DeleteRecordsRequest

from .catalogue import RuleFailed, rule
from .requests import EARLIEST, LATEST, LIST_OFFSETS, batch, now_ms
from .rules_fetch import fetch, offsets_of, one_partition, topic_with
from .rules_offsets_lookup import DELETE_RECORDS, DR, LO, LO_ALL, _found, list_offsets
from .session import RuleSession, SetupFailed, expect, expect_error

# ---- DeleteRecords ----------------------------------------------------------------------------------


async def delete_records(
    s: RuleSession, version: int, topic: str, offset: int, *, partition: int = 0, client=None
):
    client = client or await s.leader(topic, partition)
    request = DeleteRecordsRequest(
        topics=[
            DeleteRecordsRequest.DeleteRecordsTopic(
                name=topic,
                partitions=[
                    DeleteRecordsRequest.DeleteRecordsPartition(partition_index=partition, offset=offset)
                ],
            )
        ],
        timeout_ms=5000,
    )
    body = await s.call(client, DELETE_RECORDS, version, request)
    return body.topics[0].partitions[0]


DR_ALL = (0, 2)


async def _deleted_to(s: RuleSession, version: int | None, offset: int, *batches: bytes):
    """A topic with ``batches``, its records deleted before ``offset`` (set-up: must succeed) with
    DeleteRecords at ``version`` (None: the newest the target serves)."""
    if DELETE_RECORDS not in s.versions:
        raise SetupFailed("the target does not serve DeleteRecords")
    topic, topic_id, leader = await topic_with(s, *batches)
    version = s.versions[DELETE_RECORDS][1] if version is None else version
    part = await delete_records(s, version, topic, offset, client=leader)
    if part.error_code != Errors.NONE:
        raise SetupFailed(f"DeleteRecords to {offset}: error {part.error_code}")
    return topic, topic_id, leader


@rule(
    f"{DR}.moves-the-log-start",
    api=DELETE_RECORDS,
    versions=DR_ALL,
    source="ReplicaManager.deleteRecordsOnLocalLog",
    family=DR,
)
async def dr_moves(s: RuleSession, version: int) -> None:
    """DeleteRecords to an offset at or below the high watermark answers NONE with that offset as the
    low watermark."""
    topic, _, leader = await topic_with(s, batch(3), batch(2))
    part = await delete_records(s, version, topic, 3, client=leader)
    expect("(error_code, low_watermark)", (part.error_code, part.low_watermark), (0, 3))


@rule(
    f"{DR}.minus-one-deletes-to-high-watermark",
    api=DELETE_RECORDS,
    versions=DR_ALL,
    source="ReplicaManager.deleteRecordsOnLocalLog HIGH_WATERMARK",
    family=DR,
)
async def dr_minus_one(s: RuleSession, version: int) -> None:
    """DeleteRecords to offset -1 deletes up to the high watermark."""
    topic, _, leader = await topic_with(s, batch(3), batch(2))
    part = await delete_records(s, version, topic, -1, client=leader)
    expect("(error_code, low_watermark)", (part.error_code, part.low_watermark), (0, 5))


@rule(
    f"{DR}.beyond-high-watermark-out-of-range",
    api=DELETE_RECORDS,
    versions=DR_ALL,
    source="Partition.deleteRecordsOnLeader OffsetOutOfRangeException",
    family=DR,
)
async def dr_beyond(s: RuleSession, version: int) -> None:
    """DeleteRecords to an offset past the high watermark is answered OFFSET_OUT_OF_RANGE and deletes
    nothing."""
    topic, _, leader = await topic_with(s, batch(3))
    part = await delete_records(s, version, topic, 10, client=leader)
    expect_error("error_code", part.error_code, Errors.OFFSET_OUT_OF_RANGE)
    expect(
        "EARLIEST after",
        _found(await list_offsets(s, s.versions[LIST_OFFSETS][1], topic, EARLIEST, client=leader)),
        (0, 0, -1),
    )


@rule(
    f"{DR}.negative-offset-out-of-range",
    api=DELETE_RECORDS,
    versions=DR_ALL,
    source="ReplicaManager.deleteRecordsOnLocalLog convertedOffset",
    family=DR,
)
async def dr_negative(s: RuleSession, version: int) -> None:
    """DeleteRecords to a negative offset other than -1 is answered OFFSET_OUT_OF_RANGE."""
    topic, _, leader = await topic_with(s, batch(3))
    part = await delete_records(s, version, topic, -5, client=leader)
    expect_error("error_code", part.error_code, Errors.OFFSET_OUT_OF_RANGE)


@rule(
    f"{DR}.below-log-start-keeps-it",
    api=DELETE_RECORDS,
    versions=DR_ALL,
    source="UnifiedLog.maybeIncrementLogStartOffset",
    family=DR,
)
async def dr_below(s: RuleSession, version: int) -> None:
    """DeleteRecords to an offset below the log start offset moves nothing back: NONE, the low watermark
    stays where it was."""
    topic, _, leader = await _deleted_to(s, version, 3, batch(3), batch(2))
    part = await delete_records(s, version, topic, 1, client=leader)
    expect("(error_code, low_watermark)", (part.error_code, part.low_watermark), (0, 3))


@rule(
    f"{DR}.unknown-topic",
    api=DELETE_RECORDS,
    versions=DR_ALL,
    source="ReplicaManager.deleteRecordsOnLocalLog getPartitionOrException",
    family=DR,
)
async def dr_unknown_topic(s: RuleSession, version: int) -> None:
    """DeleteRecords on a topic the broker does not know is answered UNKNOWN_TOPIC_OR_PARTITION."""
    part = await delete_records(s, version, s.name("missing"), 0, client=await s.raw())
    expect_error("error_code", part.error_code, Errors.UNKNOWN_TOPIC_OR_PARTITION)


@rule(
    f"{DR}.unknown-partition",
    api=DELETE_RECORDS,
    versions=DR_ALL,
    source="ReplicaManager.deleteRecordsOnLocalLog getPartitionOrException",
    family=DR,
)
async def dr_unknown_partition(s: RuleSession, version: int) -> None:
    """DeleteRecords on a partition the topic does not have is answered UNKNOWN_TOPIC_OR_PARTITION."""
    topic, _, leader = await topic_with(s)
    part = await delete_records(s, version, topic, 0, partition=7, client=leader)
    expect_error("error_code", part.error_code, Errors.UNKNOWN_TOPIC_OR_PARTITION)


@rule(
    f"{DR}.compacted-topic-policy-violation",
    api=DELETE_RECORDS,
    versions=DR_ALL,
    source="Partition.deleteRecordsOnLeader PolicyViolationException",
    family=DR,
)
async def dr_compacted(s: RuleSession, version: int) -> None:
    """DeleteRecords on a topic whose cleanup.policy is compact only is answered POLICY_VIOLATION."""
    topic, _, leader = await topic_with(s, batch(3), **{"cleanup.policy": "compact"})
    part = await delete_records(s, version, topic, 1, client=leader)
    expect_error("error_code", part.error_code, Errors.POLICY_VIOLATION)


@rule(
    f"{DR}.mid-batch-start",
    api=DELETE_RECORDS,
    versions=DR_ALL,
    source="UnifiedLog.maybeIncrementLogStartOffset",
    family=DR,
)
async def dr_mid_batch(s: RuleSession, version: int) -> None:
    """DeleteRecords may move the log start offset into the middle of a batch: EARLIEST then answers
    that offset."""
    topic, _, leader = await _deleted_to(s, version, 1, batch(3))
    expect(
        "EARLIEST",
        _found(await list_offsets(s, s.versions[LIST_OFFSETS][1], topic, EARLIEST, client=leader)),
        (0, 1, -1),
    )


@rule(
    f"{LO}.earliest-after-delete-records",
    api=LIST_OFFSETS,
    versions=LO_ALL,
    source="UnifiedLog.fetchOffsetByTimestamp EARLIEST_TIMESTAMP logStartOffset",
    family=LO,
)
async def lo_after_delete(s: RuleSession, version: int) -> None:
    """After DeleteRecords EARLIEST answers the new log start offset and LATEST is unchanged."""
    topic, _, leader = await _deleted_to(s, None, 3, batch(3), batch(2))
    expect("EARLIEST", _found(await list_offsets(s, version, topic, EARLIEST, client=leader)), (0, 3, -1))
    expect("LATEST", _found(await list_offsets(s, version, topic, LATEST, client=leader)), (0, 5, -1))


@rule(
    f"{LO}.by-timestamp-skips-deleted-records",
    api=LIST_OFFSETS,
    versions=LO_ALL,
    source="UnifiedLog.fetchOffsetByTimestamp logStartOffset",
    family=LO,
)
async def lo_ts_after_delete(s: RuleSession, version: int) -> None:
    """A timestamp lookup never answers an offset below the log start offset."""
    base = now_ms() - 100_000
    topic, _, leader = await _deleted_to(
        s, None, 3, batch(3, timestamps=[base] * 3), batch(2, timestamps=[base + 5] * 2)
    )
    part = await list_offsets(s, version, topic, base, client=leader)
    expect("(error_code, offset)", (part.error_code, part.offset), (0, 3))


@rule(
    "fetch.below-log-start-is-out-of-range",
    api=1,
    versions=(4, 18),
    source="UnifiedLog.checkLogStartOffset",
    family="fetch",
)
async def fetch_below_start(s: RuleSession, version: int) -> None:
    """After DeleteRecords a Fetch below the new log start offset is answered OFFSET_OUT_OF_RANGE."""
    topic, topic_id, leader = await _deleted_to(s, None, 3, batch(3), batch(2))
    part = one_partition(await fetch(s, leader, version, topic, topic_id, {0: 1}))
    expect_error("error_code", part.error_code, Errors.OFFSET_OUT_OF_RANGE)


@rule(
    "fetch.log-start-offset-after-delete-records",
    api=1,
    versions=(5, 18),
    source="ReplicaManager.readFromLocalLog leaderLogStartOffset",
    family="fetch",
)
async def fetch_log_start_after(s: RuleSession, version: int) -> None:
    """From v5 a Fetch after DeleteRecords carries the new log start offset and returns records from it."""
    topic, topic_id, leader = await _deleted_to(s, None, 3, batch(3), batch(2))
    part = one_partition(await fetch(s, leader, version, topic, topic_id, {0: 3}))
    expect_error("error_code", part.error_code, Errors.NONE)
    expect("log_start_offset", part.log_start_offset, 3)
    expect("offsets", offsets_of(part), [3, 4])


@rule(
    "fetch.from-mid-batch-log-start",
    api=1,
    versions=(4, 18),
    source="UnifiedLog.checkLogStartOffset",
    family="fetch",
)
async def fetch_mid_batch_start(s: RuleSession, version: int) -> None:
    """A Fetch from a log start offset inside a batch is served (NONE, the batch that holds it)."""
    topic, topic_id, leader = await _deleted_to(s, None, 1, batch(3))
    part = one_partition(await fetch(s, leader, version, topic, topic_id, {0: 1}))
    expect_error("error_code", part.error_code, Errors.NONE)
    if 1 not in offsets_of(part):
        raise RuleFailed("offsets", "the batch holding offset 1", offsets_of(part))
