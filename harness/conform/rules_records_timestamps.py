"""Rules of record timestamps: the topic's message.timestamp.type and its before and after limits
(LogValidator.validateTimestamp)."""

from __future__ import annotations

from kconform.codecs.compression import Compression
from kconform.codecs.errors import Errors
from kconform.codecs.records import Record, TimestampType, encode_batch

from .catalogue import rule
from .requests import batch, now_ms
from .rules_produce import fetch_batches, latest_offset, new_topic, produce_one
from .rules_records import (
    _HOUR_MS,
    PRODUCE,
    _refused,
    forge,
)
from .session import RuleSession, expect, expect_error

# ---- timestamps (LogValidator.validateTimestamp, topic message.timestamp.* configs) -----------------------


@rule(
    "records.create-time-after-max-ms",
    api=PRODUCE,
    versions=(3, 13),
    family="records",
    since="3.6",
    source="LogValidator.validateTimestamp timestampAfterMaxMs",
)
async def create_time_after_max(s: RuleSession, version: int) -> None:
    """With CreateTime, a record stamped later than now plus the topic's message.timestamp.after.max.ms
    makes the whole batch refused with INVALID_TIMESTAMP; a record within the bound is appended."""
    topic, topic_id = await new_topic(s, **{"message.timestamp.after.max.ms": str(_HOUR_MS)})
    leader = await s.leader(topic)
    ok = await produce_one(s, leader, version, topic, topic_id, batch(1, timestamps=[now_ms() + 60_000]))
    expect_error("within the bound: error_code", ok.error_code, Errors.NONE)
    now = now_ms()
    late = batch(timestamps=[now, now + 3 * _HOUR_MS, now])
    part = await produce_one(s, leader, version, topic, topic_id, late)
    expect_error("error_code", part.error_code, Errors.INVALID_TIMESTAMP)
    expect("log end offset", await latest_offset(s, leader, topic, topic_id), 1)


@rule(
    "records.create-time-before-max-ms",
    api=PRODUCE,
    versions=(3, 13),
    family="records",
    since="3.6",
    source="LogValidator.validateTimestamp timestampBeforeMaxMs",
)
async def create_time_before_max(s: RuleSession, version: int) -> None:
    """With CreateTime, a record stamped earlier than now minus the topic's
    message.timestamp.before.max.ms makes the batch refused with INVALID_TIMESTAMP; one within it is
    appended."""
    topic, topic_id = await new_topic(s, **{"message.timestamp.before.max.ms": str(_HOUR_MS)})
    leader = await s.leader(topic)
    ok = await produce_one(s, leader, version, topic, topic_id, batch(1, timestamps=[now_ms() - 60_000]))
    expect_error("within the bound: error_code", ok.error_code, Errors.NONE)
    part = await produce_one(
        s, leader, version, topic, topic_id, batch(1, timestamps=[now_ms() - 3 * _HOUR_MS])
    )
    expect_error("error_code", part.error_code, Errors.INVALID_TIMESTAMP)
    expect("log end offset", await latest_offset(s, leader, topic, topic_id), 1)


@rule(
    "records.invalid-timestamp-lists-record-errors",
    api=PRODUCE,
    versions=(8, 13),
    family="records",
    since="3.6",
    source="LogValidator.processRecordErrors",
)
async def invalid_timestamp_record_errors(s: RuleSession, version: int) -> None:
    """An INVALID_TIMESTAMP answer (v8+) lists each offending record's index in the batch, with a
    message, and gives the error message 'One or more records have been rejected due to invalid
    timestamp'."""
    topic, topic_id = await new_topic(s, **{"message.timestamp.after.max.ms": str(_HOUR_MS)})
    leader = await s.leader(topic)
    now = now_ms()
    records = batch(timestamps=[now, now + 3 * _HOUR_MS, now, now + 5 * _HOUR_MS])
    part = await produce_one(s, leader, version, topic, topic_id, records)
    expect_error("error_code", part.error_code, Errors.INVALID_TIMESTAMP)
    expect("record_errors[].batch_index", [e.batch_index for e in part.record_errors], [1, 3])
    expect("record_errors have messages", all(e.batch_index_error_message for e in part.record_errors), True)
    expect(
        "error_message", part.error_message, "One or more records have been rejected due to invalid timestamp"
    )


@rule(
    "records.no-timestamp-skips-bounds",
    api=PRODUCE,
    versions=(3, 13),
    family="records",
    since="3.6",
    source="LogValidator.validateTimestamp NO_TIMESTAMP",
)
async def no_timestamp_skips_bounds(s: RuleSession, version: int) -> None:
    """Records without a timestamp (-1) are not held to the CreateTime bounds, even bounds of 0 ms."""
    topic, topic_id = await new_topic(
        s, **{"message.timestamp.before.max.ms": "0", "message.timestamp.after.max.ms": "0"}
    )
    leader = await s.leader(topic)
    part = await produce_one(s, leader, version, topic, topic_id, batch(2, timestamps=[-1, -1]))
    expect("(error_code, base_offset)", (part.error_code, part.base_offset), (Errors.NONE, 0))


@rule(
    "records.invalid-timestamp-wins-over-invalid-record",
    api=PRODUCE,
    versions=(3, 13),
    family="records",
    since="3.6",
    source="LogValidator.processRecordErrors INVALID_TIMESTAMP",
)
async def invalid_timestamp_wins(s: RuleSession, version: int) -> None:
    """A batch with both a keyless record for a compacted topic and an out-of-range timestamp is
    refused with INVALID_TIMESTAMP, not INVALID_RECORD."""
    now = now_ms()
    records = [Record(0, now, None, b"v"), Record(1, now + 3 * _HOUR_MS, b"k", b"v")]
    configs = {"cleanup.policy": "compact", "message.timestamp.after.max.ms": str(_HOUR_MS)}
    await _refused(s, version, encode_batch(records), Errors.INVALID_TIMESTAMP, **configs)


@rule(
    "records.create-time-topic-keeps-timestamps",
    api=PRODUCE,
    versions=(3, 13),
    family="records",
    source="LogValidator.assignOffsetsNonCompressed CREATE_TIME",
)
async def create_time_kept(s: RuleSession, version: int) -> None:
    """A CreateTime topic keeps each record's own timestamp and answers log_append_time_ms -1."""
    topic, topic_id = await new_topic(s, **{"message.timestamp.type": "CreateTime"})
    leader = await s.leader(topic)
    now = now_ms()
    stamps = [now - 50, now - 90, now - 10]
    part = await produce_one(s, leader, version, topic, topic_id, batch(timestamps=stamps))
    expect("log_append_time_ms", part.log_append_time_ms, -1)
    (read,) = await fetch_batches(s, leader, topic, topic_id)
    expect("timestamps read back", [r.timestamp for r in read.records], stamps)
    expect("batch max_timestamp", read.max_timestamp, now - 10)


@rule(
    "records.log-append-time-topic-stamps-batch",
    api=PRODUCE,
    versions=(3, 13),
    family="records",
    source="LogValidator.assignOffsetsNonCompressed LOG_APPEND_TIME",
)
async def log_append_time(s: RuleSession, version: int) -> None:
    """A LogAppendTime topic stamps the batch with the broker's time, answers it as log_append_time_ms,
    and every record reads back with that time."""
    topic, topic_id = await new_topic(s, **{"message.timestamp.type": "LogAppendTime"})
    leader = await s.leader(topic)
    before = now_ms()
    part = await produce_one(s, leader, version, topic, topic_id, batch(timestamps=[1000, 2000, 3000]))
    expect_error("error_code", part.error_code, Errors.NONE)
    if not before - 60_000 <= part.log_append_time_ms <= now_ms() + 60_000:
        expect("log_append_time_ms (about now)", part.log_append_time_ms, before)
    (read,) = await fetch_batches(s, leader, topic, topic_id)
    expect("batch timestamp_type", read.timestamp_type, TimestampType.LOG_APPEND_TIME)
    expect("batch max_timestamp", read.max_timestamp, part.log_append_time_ms)
    expect("record timestamps", {r.timestamp for r in read.records}, {part.log_append_time_ms})


@rule(
    "records.log-append-time-topic-stamps-compressed-batch",
    api=PRODUCE,
    versions=(3, 13),
    family="records",
    source="LogValidator.validateMessagesAndAssignOffsetsCompressed LOG_APPEND_TIME",
)
async def log_append_time_compressed(s: RuleSession, version: int) -> None:
    """A LogAppendTime topic stamps a compressed batch with the broker's time as well."""
    topic, topic_id = await new_topic(s, **{"message.timestamp.type": "LogAppendTime"})
    leader = await s.leader(topic)
    records = batch(timestamps=[1000, 2000], compression=Compression.GZIP)
    part = await produce_one(s, leader, version, topic, topic_id, records)
    expect_error("error_code", part.error_code, Errors.NONE)
    (read,) = await fetch_batches(s, leader, topic, topic_id)
    expect("batch timestamp_type", read.timestamp_type, TimestampType.LOG_APPEND_TIME)
    expect("batch max_timestamp", read.max_timestamp, part.log_append_time_ms)


@rule(
    "records.log-append-time-batch-refused-by-log-append-time-topic",
    api=PRODUCE,
    versions=(3, 13),
    family="records",
    source="LogValidator.validateTimestamp LOG_APPEND_TIME",
)
async def log_append_time_batch_refused(s: RuleSession, version: int) -> None:
    """A producer may not send a batch of timestamp type LogAppendTime: a LogAppendTime topic refuses it
    with INVALID_TIMESTAMP."""
    data = batch(1, timestamp_type=TimestampType.LOG_APPEND_TIME)
    await _refused(s, version, data, Errors.INVALID_TIMESTAMP, **{"message.timestamp.type": "LogAppendTime"})


@rule(
    "records.log-append-time-batch-kept-as-create-time",
    api=PRODUCE,
    versions=(3, 13),
    family="records",
    source="LogValidator.assignOffsetsNonCompressed setMaxTimestamp",
)
async def log_append_time_batch_create_time(s: RuleSession, version: int) -> None:
    """A CreateTime topic takes a producer's LogAppendTime batch and writes it as CreateTime, the
    batch's max timestamp kept."""
    topic, topic_id = await new_topic(s, **{"message.timestamp.type": "CreateTime"})
    leader = await s.leader(topic)
    stamp = now_ms()
    data = batch(
        2,
        timestamps=[stamp - 5, stamp - 4],
        timestamp_type=TimestampType.LOG_APPEND_TIME,
        log_append_time=stamp,
    )
    part = await produce_one(s, leader, version, topic, topic_id, data)
    expect_error("error_code", part.error_code, Errors.NONE)
    (read,) = await fetch_batches(s, leader, topic, topic_id)
    expect("batch timestamp_type", read.timestamp_type, TimestampType.CREATE_TIME)
    expect("batch max_timestamp", read.max_timestamp, stamp)


@rule(
    "records.stale-max-timestamp-rewritten",
    api=PRODUCE,
    versions=(3, 13),
    family="records",
    source="LogValidator.assignOffsetsNonCompressed setMaxTimestamp",
)
async def stale_max_timestamp(s: RuleSession, version: int) -> None:
    """A batch whose header max timestamp is not its records' greatest is written with the records'
    greatest timestamp (and a CRC to match)."""
    topic, topic_id = await new_topic(s)
    leader = await s.leader(topic)
    now = now_ms()
    data = forge(batch(timestamps=[now - 30, now - 10, now - 20]), max_timestamp=now - 1000)
    part = await produce_one(s, leader, version, topic, topic_id, data)
    expect_error("error_code", part.error_code, Errors.NONE)
    (read,) = await fetch_batches(s, leader, topic, topic_id)  # the CRC is checked on reading
    expect("batch max_timestamp", read.max_timestamp, now - 10)
