"""LogValidator.buildRecordsAndAssignOffsets: the records kept, written as a new magic 2 batch the way
Kafka's ``MemoryRecordsBuilder`` writes it (with the first batch's producer fields), then
max.message.bytes checked on the new size (UnifiedLog.append).

The records arrive as a ``StreamedV2Batch``: written here from a list (the whole-batch path), or
written while they were read ahead (``_scan``), so a rebuild of a batch that expands a lot holds at
most ``max.message.bytes`` of the new batch and never the records."""

from __future__ import annotations

from kconform.codecs import CodecError
from kconform.codecs.compression import Compression
from kconform.codecs.errors import Errors
from kconform.codecs.records import BatchHeader, Record, StreamedV2Batch

from ._types import LogValidationConfig, RecordsRejected

__all__ = ["build_records", "seal_rebuilt"]


def _crash(message: str) -> RecordsRejected:
    # A Java exception that is no ApiException, caught per partition: UNKNOWN_SERVER_ERROR.
    return RecordsRejected(Errors.UNKNOWN_SERVER_ERROR, message, reports_log_start_offset=True)


def build_records(records: list[Record], codec: Compression, config: LogValidationConfig) -> StreamedV2Batch:
    """``records`` written for a rebuild with ``codec``, numbered from 0 in their order."""
    built = StreamedV2Batch(codec, config.compression_level(codec), keep_limit=config.max_message_bytes)
    try:
        built.add([Record(i, r.timestamp, r.key, r.value, r.headers) for i, r in enumerate(records)])
    except (CodecError, ValueError) as exc:
        raise _crash(f"Could not rebuild the batch: {exc}") from None
    return built


def seal_rebuilt(
    built: StreamedV2Batch,
    producer: BatchHeader,
    *,
    first_offset: int,
    partition_leader_epoch: int,
    log_append_time_ms: int | None,
    max_message_bytes: int,
    topic_partition: str,
) -> bytes:
    """The rebuilt batch from ``first_offset``, or the rejection Kafka gives: a negative timestamp
    (MemoryRecordsBuilder.appendWithOffset), a bad producer state (validateProducerState), a batch
    above ``max_message_bytes``."""
    if built.first_negative_timestamp is not None:
        raise _crash(f"Invalid negative timestamp {built.first_negative_timestamp}")
    producer_id = producer.producer_id
    if producer.is_transactional and producer_id == -1:
        raise _crash("Cannot write transactional messages without a valid producer ID")
    if producer_id != -1:
        if producer.producer_epoch == -1:
            raise _crash("Invalid negative producer epoch")
        if producer.base_sequence < 0:
            raise _crash("Invalid negative sequence number used")
    try:
        encoded = built.seal(
            base_offset=first_offset,
            producer_id=producer_id,
            producer_epoch=producer.producer_epoch,
            base_sequence=producer.base_sequence,
            is_transactional=producer.is_transactional,
            partition_leader_epoch=partition_leader_epoch,
            log_append_time=log_append_time_ms,
        )
    except (CodecError, ValueError) as exc:
        raise _crash(f"Could not rebuild the batch: {exc}") from None
    if encoded is None or len(encoded) > max_message_bytes:
        raise RecordsRejected(
            Errors.MESSAGE_TOO_LARGE,
            f"Message batch size is {built.size} bytes in append to partition {topic_partition} which "
            f"exceeds the maximum configured size of {max_message_bytes}.",
        )
    return encoded
