"""What the storage layer raises. Each error that a client can see carries Kafka's error code, so a
handler turns it into a response in one place."""

from __future__ import annotations

from kconform.codecs import Errors

__all__ = [
    "CorruptCheckpoint",
    "CorruptIndex",
    "CorruptRecord",
    "InconsistentTopicId",
    "InvalidAppend",
    "LogWriteFailed",
    "OffsetOutOfRange",
    "RecordBatchTooLarge",
    "StorageError",
    "UnexpectedAppendOffset",
]


class StorageError(Exception):
    """Base of every storage error. ``error_code`` is the Kafka error a client should get."""

    error_code: int = Errors.KAFKA_STORAGE_ERROR


class OffsetOutOfRange(StorageError):
    """A read or DeleteRecords offset outside ``[log_start_offset, log_end_offset]`` (or above the
    high watermark, for DeleteRecords)."""

    error_code = Errors.OFFSET_OUT_OF_RANGE

    def __init__(self, offset: int, log_start_offset: int, log_end_offset: int, reason: str = "") -> None:
        self.offset = offset
        self.log_start_offset = log_start_offset
        self.log_end_offset = log_end_offset
        detail = reason or f"the log holds [{log_start_offset}, {log_end_offset})"
        super().__init__(f"offset {offset} is out of range: {detail}")


class LogWriteFailed(StorageError):
    """The disk refused an append (ENOSPC, EIO, EROFS...); the log was cut back to its last whole batch,
    so nothing of the append is visible. Kafka's ``KafkaStorageException``, answered KAFKA_STORAGE_ERROR
    (``ReplicaManager.appendToLocalLog``).

    Unlike Kafka, which takes the whole log directory offline (``LogDirFailureChannel``) until the
    broker restarts, only this append fails: the partition answers KAFKA_STORAGE_ERROR while writes
    fail and takes appends again once the disk has room."""

    error_code = Errors.KAFKA_STORAGE_ERROR


class LogSyncFailed(LogWriteFailed):
    """The append is in the log (its offsets taken, the producer state moved on) but what follows it
    failed: the transaction index or the fsync ``flush.messages``/``flush.ms`` asked for. Kafka's flush
    failing is a ``KafkaStorageException`` too, answered KAFKA_STORAGE_ERROR; the records stay, so a
    producer's retry of the same batch is answered as a duplicate with the offsets it got."""


class InvalidAppend(StorageError, ValueError):
    """Input that is not a sequence of whole magic 2 batches, so nothing was written."""

    error_code = Errors.CORRUPT_MESSAGE


class CorruptRecord(InvalidAppend):
    """A batch whose CRC, size or magic is wrong (Kafka: CorruptRecordException)."""

    error_code = Errors.CORRUPT_MESSAGE


class RecordBatchTooLarge(InvalidAppend):
    """An append bigger than ``segment.bytes`` (Kafka: RecordBatchTooLargeException)."""

    error_code = Errors.RECORD_LIST_TOO_LARGE


class UnexpectedAppendOffset(InvalidAppend):
    """A replica append whose offsets go backwards or start below the log end offset."""

    error_code = Errors.UNKNOWN_SERVER_ERROR


class CorruptIndex(StorageError):
    """An index file that fails its sanity check; the loader rebuilds the segment's indexes."""


class CorruptCheckpoint(StorageError):
    """A checkpoint or metadata file that cannot be parsed (Kafka takes the log dir offline)."""


class InconsistentTopicId(StorageError):
    """``partition.metadata`` names a different topic id than the one the caller gave."""

    error_code = Errors.INCONSISTENT_TOPIC_ID
