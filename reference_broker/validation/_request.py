"""The checks Kafka makes on a partition's records while handling the Produce request, before the log
sees them: some fail only the partition, some the whole request.

Kafka's order (KafkaApis.handleProduceRequest, ReplicaManager.handleProduceAppend):
1. ``RequestUtils.hasTransactionalRecords`` reads the first batch of *every* partition in the request,
   known topic or not: a corrupt size or magic there throws ``CorruptRecordException`` out of the
   handler, so every partition gets CORRUPT_MESSAGE with the exception's text (``check_request_records``).
2. For each partition of a known topic, ``ProduceRequest.validateRecords`` (v3+): exactly one batch,
   magic 2, no zstd below v7. Its failures stay with the partition and carry no message.
3. ``handleProduceAppend`` then walks every batch of the partitions that passed, to find transactional
   ones: anything that throws there fails the whole request again (2 and 3: ``check_partition_records``).

Both take the records as ``FramedRecords`` (the handler frames them once) or as bytes, framed here.
"""

from __future__ import annotations

from kconform.codecs.errors import Errors
from kconform.codecs.records import BatchFramingError

from ._framing import FramedBatch, FramedRecords, framed
from ._types import RecordsRejected, RejectionScope

__all__ = ["check_partition_records", "check_request_records", "framing_message"]

_MIN_RECORD_OVERHEAD = 14  # LegacyRecord.RECORD_OVERHEAD_V0: the smallest size field Kafka reads on
_PRODUCER_ID_END = 51  # DefaultRecordBatch.producerId() reads bytes 43..50 of the batch
_ZSTD_MIN_VERSION = 7
_ZSTD = 4


def framing_message(exc: BatchFramingError) -> str:
    """The text of Kafka's ``CorruptRecordException`` from ``ByteBufferLogInputStream.nextBatchSize``."""
    if exc.batch_length < _MIN_RECORD_OVERHEAD:
        minimum = _MIN_RECORD_OVERHEAD
        return f"Record size {exc.batch_length} is less than the minimum record overhead ({minimum})"
    return f"Invalid magic found in record: {exc.magic}"


def _request_wide_corruption(exc: BatchFramingError) -> RecordsRejected:
    message = framing_message(exc)
    return RecordsRejected(
        Errors.CORRUPT_MESSAGE, message, error_message=message, scope=RejectionScope.REQUEST
    )


def _request_wide_crash(message: str) -> RecordsRejected:
    # An exception that is not an ApiException escapes the handler: UNKNOWN_SERVER_ERROR everywhere,
    # with no message (ApiError.fromThrowable drops it for unknown errors).
    return RecordsRejected(Errors.UNKNOWN_SERVER_ERROR, message, scope=RejectionScope.REQUEST)


def check_request_records(records: FramedRecords | bytes | None) -> None:
    """Step 1: the first batch's size and magic, read for every partition of the request (at any
    version, known topic or not). Raises ``RecordsRejected`` with scope REQUEST."""
    records = framed(records)
    if records is None:
        return  # hasTransactionalRecords skips a null records field
    if not records.batches and records.framing_error is not None:
        raise _request_wide_corruption(records.framing_error)


def check_partition_records(
    records: FramedRecords | bytes | None, *, produce_version: int
) -> tuple[FramedBatch, ...]:
    """Steps 2 and 3 for one partition of a known topic: raises ``RecordsRejected`` (scope PARTITION
    for ProduceRequest.validateRecords, REQUEST or NO_RESPONSE for what handleProduceAppend throws),
    else returns the whole batches (a partial trailing batch is left out, as Kafka trims it before
    appending)."""
    records = framed(records)
    if records is None:
        # validateRecords skips null records; handleProduceAppend then dereferences them, and the
        # error handler does too (ProduceRequest.partitionSizes), so Kafka never answers.
        raise RecordsRejected(
            Errors.UNKNOWN_SERVER_ERROR,
            "null records: Kafka's produce handler throws NullPointerException and sends no response",
            scope=RejectionScope.NO_RESPONSE,
        )
    if produce_version >= 3:
        _validate_records_v3(records, produce_version)
    for batch in records.batches:
        if batch.extent.magic >= 2 and batch.extent.size < _PRODUCER_ID_END:
            raise _request_wide_crash(
                f"batch of {batch.extent.size} bytes ends before its producer id "
                "(IndexOutOfBoundsException in ReplicaManager.handleProduceAppend)"
            )
    if records.framing_error is not None:  # only reachable below v3: validateRecords walked v3+ already
        raise _request_wide_corruption(records.framing_error)
    return records.batches


def _validate_records_v3(records: FramedRecords, version: int) -> None:
    """ProduceRequest.validateRecords: failures become this partition's error, without a message."""

    def invalid(message: str) -> RecordsRejected:
        return RecordsRejected(Errors.INVALID_RECORD, message)

    if not records.batches:
        if records.framing_error is not None:  # step 1 reports this for the whole request
            raise _request_wide_corruption(records.framing_error)
        raise invalid(
            f"Produce requests with version {version} must have at least one record batch per partition"
        )
    first = records.batches[0].extent
    if first.magic != 2:
        raise invalid(
            f"Produce requests with version {version} are only allowed to contain record batches with "
            "magic version 2"
        )
    if version < _ZSTD_MIN_VERSION:
        codec = first.compression_id
        if codec > _ZSTD:  # CompressionType.forId throws IllegalArgumentException, not an ApiException
            raise _request_wide_crash(f"Unknown compression type id: {codec}")
        if codec == _ZSTD:
            raise RecordsRejected(
                Errors.UNSUPPORTED_COMPRESSION_TYPE,
                f"Produce requests with version {version} are not allowed to use ZStandard compression",
            )
    if len(records.batches) > 1:
        raise invalid(
            f"Produce requests with version {version} are only allowed to contain exactly one record batch "
            "per partition"
        )
    if records.framing_error is not None:  # where the second batch would start
        raise RecordsRejected(Errors.CORRUPT_MESSAGE, framing_message(records.framing_error))
