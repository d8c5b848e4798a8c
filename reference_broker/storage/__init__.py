"""kconform.reference_broker.storage: Kafka's on-disk partition log, sans network.

One ``PartitionLog`` per ``<data_dir>/<topic>-<partition>/`` directory: segments of batches exactly as
on the wire (``00000000000000000000.log``) with sparse ``.index`` and ``.timeindex`` files and a
``.txnindex`` of aborted transactions, a ``leader-epoch-checkpoint``, ``partition.metadata``, producer
state ``.snapshot`` files and offset checkpoints, following Kafka's rules for appending, reading,
rolling, retention, truncation, flushing and recovery after a crash. A clock is always passed in.
"""

from ._config import LONG_MAX, LogConfig
from ._errors import (
    CorruptCheckpoint,
    CorruptIndex,
    CorruptRecord,
    InconsistentTopicId,
    InvalidAppend,
    LogSyncFailed,
    LogWriteFailed,
    OffsetOutOfRange,
    RecordBatchTooLarge,
    StorageError,
    UnexpectedAppendOffset,
)
from ._leader_epoch import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET, EpochEntry, LeaderEpochCache
from ._partition_log import (
    EARLIEST_LOCAL_TIMESTAMP,
    EARLIEST_TIMESTAMP,
    LATEST_TIERED_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    PartitionLog,
)
from ._producer_snapshot import CorruptSnapshot, read_snapshot, write_snapshot
from ._producer_state import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NUM_BATCHES_TO_RETAIN,
    AppendOrigin,
    BatchMetadata,
    ProducerStateEntry,
    ProducerStateError,
    Verdict,
    VerdictKind,
    append_data_batch,
    append_end_txn_marker,
    check_sequence,
    decrement_sequence,
    increment_sequence,
    merge_entries,
)
from ._results import AppendInfo, FileRegion, ReadResult, SegmentInfo, TimestampAndOffset
from ._txn_index import ENTRY_SIZE as TXN_INDEX_ENTRY_SIZE
from ._txn_index import AbortedTxn, CompletedTxn, TransactionIndex

__all__ = [
    "EARLIEST_LOCAL_TIMESTAMP",
    "EARLIEST_TIMESTAMP",
    "LATEST_TIERED_TIMESTAMP",
    "LATEST_TIMESTAMP",
    "LONG_MAX",
    "MAX_TIMESTAMP",
    "NO_PRODUCER_EPOCH",
    "NO_PRODUCER_ID",
    "NO_SEQUENCE",
    "NUM_BATCHES_TO_RETAIN",
    "TXN_INDEX_ENTRY_SIZE",
    "UNDEFINED_EPOCH",
    "UNDEFINED_EPOCH_OFFSET",
    "AbortedTxn",
    "AppendInfo",
    "AppendOrigin",
    "BatchMetadata",
    "CompletedTxn",
    "CorruptCheckpoint",
    "CorruptIndex",
    "CorruptRecord",
    "CorruptSnapshot",
    "EpochEntry",
    "FileRegion",
    "InconsistentTopicId",
    "InvalidAppend",
    "LogSyncFailed",
    "LogWriteFailed",
    "LeaderEpochCache",
    "LogConfig",
    "OffsetOutOfRange",
    "PartitionLog",
    "ProducerStateEntry",
    "ProducerStateError",
    "ReadResult",
    "RecordBatchTooLarge",
    "SegmentInfo",
    "StorageError",
    "TimestampAndOffset",
    "TransactionIndex",
    "UnexpectedAppendOffset",
    "Verdict",
    "VerdictKind",
    "append_data_batch",
    "append_end_txn_marker",
    "check_sequence",
    "decrement_sequence",
    "increment_sequence",
    "merge_entries",
    "read_snapshot",
    "write_snapshot",
]
