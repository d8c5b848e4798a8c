"""Kafka's per-record rules (LogValidator.validateRecord, validateKey, validateTimestamp) and how one
batch's record errors become a single rejection (LogValidator.processRecordErrors).

Record errors are the only rejections whose text reaches the client: the Produce response carries each
``(index, message)`` and a summary in ``error_message``, so the messages follow Kafka's word for word,
including Java's 64-bit wrap-around in the bounds it prints."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kconform.codecs.compression import Compression
from kconform.codecs.errors import Errors
from kconform.codecs.records import BatchHeader, Record, TimestampType

from ._types import RecordsRejected

__all__ = [
    "RecordRules",
    "default_record_text",
    "java_long",
    "legacy_record_text",
    "partial_record_text",
    "raise_record_errors",
]

NO_TIMESTAMP = -1
_TIMESTAMP_TYPE_NAMES = {
    TimestampType.NO_TIMESTAMP_TYPE: "NoTimestampType",
    TimestampType.CREATE_TIME: "CreateTime",
    TimestampType.LOG_APPEND_TIME: "LogAppendTime",
}


def java_long(value: int) -> int:
    """``value`` wrapped to a signed 64-bit integer, as Java's long arithmetic leaves it."""
    return ((value + 2**63) & 0xFFFFFFFFFFFFFFFF) - 2**63


def _java_byte(value: int) -> int:
    return ((value + 128) & 0xFF) - 128


def _length(data: bytes | None, null: int) -> int:
    return null if data is None else len(data)


def default_record_text(record: Record) -> str:
    """``DefaultRecord.toString``: a null key or value counts 0 bytes."""
    return (
        f"DefaultRecord(offset={record.offset}, timestamp={record.timestamp}, "
        f"key={_length(record.key, 0)} bytes, value={_length(record.value, 0)} bytes)"
    )


def partial_record_text(record: Record) -> str:
    """``PartialDefaultRecord.toString`` (Kafka's reader when it keeps a compressed batch in place):
    a null key or value shows its size field, -1."""
    return (
        f"PartialDefaultRecord(offset={record.offset}, timestamp={record.timestamp}, "
        f"key={_length(record.key, -1)} bytes, value={_length(record.value, -1)} bytes)"
    )


def legacy_record_text(header: BatchHeader) -> Callable[[Record], str]:
    """``AbstractLegacyRecordBatch.toString`` for the records of the legacy batch ``header``. Exact for
    an uncompressed message (the batch is the record); the decoder does not keep an inner message's
    own attributes and CRC, so inside a compressed wrapper 0 and the wrapper's CRC stand in."""
    inner = header.compression != Compression.NONE
    attributes = 0 if inner else _java_byte(header.attributes)
    type_name = _TIMESTAMP_TYPE_NAMES[header.timestamp_type]

    def text(record: Record) -> str:
        sizes = f"key={_length(record.key, 0)} bytes, value={_length(record.value, 0)} bytes"
        stamp = f"{type_name}={record.timestamp}, " if header.magic > 0 else ""
        fields = f"magic={header.magic}, attributes={attributes}, compression=none, crc={header.crc}"
        body = f"{fields}, {stamp}{sizes}"
        return f"LegacyRecordBatch(offset={record.offset}, Record({body}))"

    return text


@dataclass(frozen=True, slots=True)
class RecordRules:
    """What ``validateRecord`` checks each record against."""

    timestamp_type: TimestampType
    timestamp_before_max_ms: int
    timestamp_after_max_ms: int
    compacted: bool
    now_ms: int
    topic_partition: str

    def error(
        self, record: Record, batch_timestamp_type: TimestampType, text: Callable[[Record], str]
    ) -> tuple[int, str] | None:
        """``(error code, message)`` for a record Kafka rejects, else None. A missing key on a
        compacted topic is reported before a bad timestamp (validateRecord stops at the first)."""
        if self.compacted and record.key is None:
            tp = self.topic_partition
            return (
                Errors.INVALID_RECORD,
                f"Compacted topic cannot accept message without key in topic partition {tp}",
            )
        timestamp = record.timestamp
        if self.timestamp_type == TimestampType.CREATE_TIME and timestamp != NO_TIMESTAMP:
            now = self.now_ms
            difference = java_long(now - timestamp)
            if (
                difference > self.timestamp_before_max_ms
                or java_long(-difference) > self.timestamp_after_max_ms
            ):
                low = java_long(now - self.timestamp_before_max_ms)
                high = java_long(now + self.timestamp_after_max_ms)
                return (
                    Errors.INVALID_TIMESTAMP,
                    f"Timestamp {timestamp} of message with offset {record.offset} is out of range. "
                    f"The timestamp should be within [{low}, {high}]",
                )
        elif batch_timestamp_type == TimestampType.LOG_APPEND_TIME:
            return (
                Errors.INVALID_TIMESTAMP,
                f"Invalid timestamp type in message {text(record)}. Producer should not set timestamp "
                "type to LogAppendTime.",
            )
        return None


def raise_record_errors(errors: list[tuple[int, int, str]]) -> None:
    """processRecordErrors: ``errors`` holds ``(index, code, message)`` for one batch. Any timestamp
    error makes the whole rejection INVALID_TIMESTAMP; otherwise INVALID_RECORD, summarising at most
    three. Every error is listed either way."""
    if not errors:
        return
    record_errors = [(index, message) for index, _, message in errors]
    if any(code == Errors.INVALID_TIMESTAMP for _, code, _ in errors):
        code = Errors.INVALID_TIMESTAMP
        summary = "One or more records have been rejected due to invalid timestamp"
    else:
        code = Errors.INVALID_RECORD
        shown = ", ".join(
            f"RecordError(batchIndex={index}, message='{message}')" for index, message in record_errors[:3]
        )
        summary = (
            f"One or more records have been rejected due to {len(errors)} record errors in total, and only "
            f"showing the first three errors at most: [{shown}]"
        )
    raise RecordsRejected(code, summary, record_errors, error_message=summary, reports_log_start_offset=True)
