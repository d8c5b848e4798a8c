"""``PartitionLog``: one partition's log in ``<data_dir>/<topic>-<partition>/``, laid out as Kafka lays
it out, with Kafka's append, read, roll, retention, truncation, flush and recovery rules (Kafka's
``UnifiedLog``). Not thread-safe: one owner (an asyncio task, a test) drives it.

This class keeps what a partition's offsets mean (log start offset, high watermark, last stable
offset), the producer state and the leader epochs, and drives ``LocalLog``, which holds the segments
and their files. By concern: opening and recovery are ``_loader``; appending is ``_log_appends``
(framing: ``_append_framing``); truncation and deleting old data ``_log_retention``; rolling,
flushing, reads and closing stay here.

Time comes only from the ``clock`` given to ``open`` (milliseconds since the epoch). Offsets are
assigned by rewriting each batch header in place through ``kconform.codecs.records``; the log never
re-encodes a batch. When asked to stamp the log append time it does so with the clock, for every batch
of the append (Kafka's ``message.timestamp.type=LogAppendTime``); checking timestamps, sizes and the
records themselves is the caller's job."""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from pathlib import Path
from uuid import UUID

from kconform.codecs.constants import ListOffsetsTimestamp

from ._checkpoints import (
    CLEAN_SHUTDOWN_FILE,
    HIGH_WATERMARK_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    PARTITION_METADATA_FILE,
    RECOVERY_POINT_CHECKPOINT,
    write_clean_shutdown,
    write_topic_id,
)
from ._config import LogConfig
from ._errors import InconsistentTopicId, OffsetOutOfRange, StorageError
from ._leader_epoch import EpochEntry
from ._loader import LoadedLog, load_log
from ._local_log import LocalLog, roll_jitter
from ._log_appends import LogAppends
from ._log_retention import LogRetention
from ._producer_state import ProducerStateEntry
from ._results import ReadResult, SegmentInfo, TimestampAndOffset
from ._segment import LogSegment
from ._time_index import NO_TIMESTAMP
from ._txn_index import AbortedTxn

__all__ = [
    "EARLIEST_LOCAL_TIMESTAMP",
    "EARLIEST_TIMESTAMP",
    "LATEST_TIERED_TIMESTAMP",
    "LATEST_TIMESTAMP",
    "MAX_TIMESTAMP",
    "PartitionLog",
]

# ListOffsets special timestamps (Kafka's ListOffsetsRequest), by the names the storage layer uses
LATEST_TIMESTAMP = ListOffsetsTimestamp.LATEST
EARLIEST_TIMESTAMP = ListOffsetsTimestamp.EARLIEST
MAX_TIMESTAMP = ListOffsetsTimestamp.MAX_TIMESTAMP
EARLIEST_LOCAL_TIMESTAMP = ListOffsetsTimestamp.EARLIEST_LOCAL
LATEST_TIERED_TIMESTAMP = ListOffsetsTimestamp.LATEST_TIERED


class PartitionLog(LogAppends, LogRetention):
    """Open one with ``PartitionLog.open``; close it with ``close`` (or use it as a context manager)."""

    def __init__(
        self,
        directory: Path,
        config: LogConfig,
        clock: Callable[[], int],
        rng: random.Random,
        loaded: LoadedLog,
    ) -> None:
        """Use ``PartitionLog.open``."""
        self._clock = clock
        self.topic = loaded.topic
        self.partition = loaded.partition
        self._local = LocalLog(
            directory,
            (loaded.topic, loaded.partition),
            config,
            clock,
            rng,
            loaded.segments,
            log_end_offset=loaded.log_end_offset,
            recovery_point=loaded.recovery_point,
        )
        self._log_start_offset = loaded.log_start_offset
        self._high_watermark = loaded.high_watermark
        self._epochs = loaded.epochs
        self._producers = loaded.producers
        self._topic_id = loaded.topic_id
        self._producers.on_high_watermark_updated(self._high_watermark)
        self._closed = False
        self.had_clean_shutdown = loaded.had_clean_shutdown
        """Whether ``open`` skipped recovery."""
        self.recovered_bytes_truncated = loaded.recovered_bytes_truncated
        """Bytes ``open`` cut from torn or corrupt segments."""

    @classmethod
    def open(
        cls,
        directory: str | Path,
        config: LogConfig | None = None,
        *,
        clock: Callable[[], int],
        clean_shutdown: bool | None = None,
        topic_id: UUID | None = None,
        rng: random.Random | None = None,
    ) -> PartitionLog:
        """Open (creating if needed) the partition directory ``directory`` (named ``<topic>-<n>``).

        ``clock`` returns milliseconds since the epoch (``ManualClock.now_ms`` fits).
        ``clean_shutdown`` None means: the previous ``close`` left its ``.kafka_cleanshutdown`` marker.
        Without a clean shutdown, every batch from the recovery point on is re-checked and the log is
        cut at the first bad or torn batch. ``topic_id`` is recorded in ``partition.metadata`` (and
        must match one already there). ``rng`` draws each segment's roll jitter."""
        directory = Path(directory)
        config = config or LogConfig()
        rng = rng or random.Random()
        loaded = load_log(
            directory,
            config,
            now_ms=clock(),
            clean_shutdown=clean_shutdown,
            topic_id=topic_id,
            roll_jitter=lambda: roll_jitter(rng, config),
        )
        log = cls(directory, config, clock, rng, loaded)
        log.checkpoint()
        return log

    def __enter__(self) -> PartitionLog:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"PartitionLog({self.topic}-{self.partition}, log_start_offset={self._log_start_offset}, "
            f"log_end_offset={self.log_end_offset}, high_watermark={self._high_watermark}, "
            f"segments={len(self._local.segments)})"
        )

    # --- state ---------------------------------------------------------------------------------

    @property
    def directory(self) -> Path:
        return self._local.directory

    @property
    def config(self) -> LogConfig:
        return self._local.config

    @property
    def topic_id(self) -> UUID | None:
        return self._topic_id

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def log_end_offset(self) -> int:
        """The offset the next appended record gets."""
        return self._local.log_end_offset

    @property
    def high_watermark(self) -> int:
        return self._high_watermark

    @property
    def recovery_point(self) -> int:
        """Every offset below this is flushed to disk."""
        return self._local.recovery_point

    @property
    def size_in_bytes(self) -> int:
        return self._local.size_in_bytes

    @property
    def segments(self) -> tuple[SegmentInfo, ...]:
        return tuple(
            SegmentInfo(s.base_offset, s.size, s.log_path, s.max_timestamp_so_far)
            for s in self._local.segments
        )

    @property
    def closed(self) -> bool:
        return self._closed

    def producer_state(self, producer_id: int) -> ProducerStateEntry | None:
        return self._producers.last_entry(producer_id)

    @property
    def active_producers(self) -> Mapping[int, ProducerStateEntry]:
        return self._producers.producers

    def remove_expired_producers(self) -> None:
        """Forget producers idle for ``producer.id.expiration.ms`` (Kafka runs this periodically)."""
        self._producers.remove_expired_producers(self._clock())

    def assign_topic_id(self, topic_id: UUID) -> None:
        if self._topic_id is not None and self._topic_id != topic_id:
            raise InconsistentTopicId(f"log of {self.topic}-{self.partition} has topic id {self._topic_id}")
        if self._topic_id is None:
            write_topic_id(self.directory / PARTITION_METADATA_FILE, topic_id)
            self._topic_id = topic_id

    def update_config(self, config: LogConfig) -> None:
        """Apply new topic configs (AlterConfigs); existing segments keep their index sizes."""
        self._local.config = config

    def update_high_watermark(self, high_watermark: int) -> int:
        """Set the high watermark, bounded to [log start offset, log end offset]; returns it.
        Completed transactions whose markers it passes stop holding the last stable offset back."""
        self._high_watermark = min(max(high_watermark, self._log_start_offset), self.log_end_offset)
        self._producers.on_high_watermark_updated(self._high_watermark)
        return self._high_watermark

    # --- transactions --------------------------------------------------------------------------

    @property
    def first_unstable_offset(self) -> int | None:
        """The first offset of the oldest transaction that is open, or completed by a marker at or
        above the high watermark, but never below the log start offset (Kafka's
        ``maybeIncrementFirstUnstableOffset``); None when there is none."""
        first = self._producers.first_unstable_offset
        return None if first is None else max(first, self._log_start_offset)

    @property
    def last_stable_offset(self) -> int:
        """Kafka's LSO: the first unstable offset, but never past the high watermark."""
        first = self.first_unstable_offset
        return self._high_watermark if first is None or first >= self._high_watermark else first

    @property
    def ongoing_transactions(self) -> Mapping[int, int]:
        """Producer id -> first offset of its open transaction."""
        return self._producers.ongoing_transactions

    def aborted_transactions(self, start_offset: int, upper_bound_offset: int) -> list[AbortedTxn]:
        """The aborted transactions with records in ``[start_offset, upper_bound_offset)``, searched from
        the segment holding ``start_offset`` on (Kafka's ``collectAbortedTransactions``)."""
        self._check_open()
        first = max(self._local.segment_index(start_offset), 0)
        return self._local.collect_aborted(start_offset, upper_bound_offset, first)

    # --- leader epochs -------------------------------------------------------------------------

    @property
    def epoch_entries(self) -> list[EpochEntry]:
        return self._epochs.entries

    @property
    def latest_epoch(self) -> int | None:
        return self._epochs.latest_epoch

    def end_offset_for_epoch(self, leader_epoch: int) -> tuple[int, int]:
        """(epoch, end offset) for OffsetForLeaderEpoch, as ``LeaderEpochFileCache.endOffsetFor``
        with the log end offset; (-1, -1) when undefined."""
        return self._epochs.end_offset_for(leader_epoch, self.log_end_offset)

    def assign_epoch_start_offset(self, leader_epoch: int, start_offset: int) -> None:
        """Record where a leader epoch starts (a new leader does this with its log end offset)."""
        self._epochs.assign(leader_epoch, start_offset)

    # --- rolling and flushing ------------------------------------------------------------------

    def roll(self, expected_next_offset: int | None = None) -> int:
        """Start a new active segment at max(``expected_next_offset``, log end offset); the old one
        gets its final time index entry, a producer snapshot is taken at the new base offset and
        everything below it is flushed (Kafka flushes in the background). Returns the new active
        segment's base offset (an empty active segment at that offset is kept as it is)."""
        self._check_open()
        return self._roll(expected_next_offset).base_offset

    def _roll(self, expected_next_offset: int | None = None) -> LogSegment:
        previous = self._local.active
        segment = self._local.roll(max(expected_next_offset or 0, self.log_end_offset))
        if segment is not previous:
            self._producers.map_end_offset = segment.base_offset
            self._producers.take_snapshot()
            self._local.flush_up_to(segment.base_offset, write_checkpoint=False)
        return segment

    def flush(self) -> None:
        """fsync every segment written since the last flush (the active one always) and move the
        recovery point to the log end offset."""
        self._check_open()
        self._local.flush()

    def flush_if_due(self) -> bool:
        """Flush if ``flush.messages`` unflushed records or ``flush.ms`` since the last flush have
        passed (append checks this too; Kafka checks ``flush.ms`` from a scheduler)."""
        return self._maybe_flush(self._clock())

    def _maybe_flush(self, now: int) -> bool:
        if self._local.flush_due(now):
            self.flush()
            return True
        return False

    # --- reading -------------------------------------------------------------------------------

    def read(
        self,
        start_offset: int,
        max_bytes: int,
        *,
        max_offset: int | None = None,
        min_one_batch: bool = True,
        whole_batches: bool = False,
        include_aborted_txns: bool = False,
    ) -> ReadResult:
        """Kafka's log read. The bytes start at the batch holding ``start_offset``; at most
        ``max_bytes`` of them (but the whole first batch with ``min_one_batch``); nothing from the
        batch holding ``max_offset`` (the high watermark or last stable offset; the log end offset
        if None) on. Like Kafka's, the bytes may end inside a batch unless ``whole_batches``.
        ``OffsetOutOfRange`` below the log start offset or above the log end offset; reading at the
        log end offset (or at or past ``max_offset``) returns nothing.

        With ``include_aborted_txns`` (a read_committed fetch) the result lists the aborted
        transactions overlapping what was read, up to Kafka's upper bound: the first offset index
        entry past the bytes read, else the next segment's base offset, else the log end offset
        (``LocalLog.addAbortedTransactions``)."""
        self._check_open()
        log_end_offset = self.log_end_offset
        if start_offset < self._log_start_offset or start_offset > log_end_offset:
            raise OffsetOutOfRange(start_offset, self._log_start_offset, log_end_offset)
        limit = log_end_offset if max_offset is None else min(max_offset, log_end_offset)
        if self._local.segment_index(start_offset) < 0:
            raise OffsetOutOfRange(start_offset, self._log_start_offset, log_end_offset)
        found = self._local.read(
            start_offset,
            max_bytes,
            limit=limit,
            min_one_batch=min_one_batch,
            whole_batches=whole_batches,
            include_aborted_txns=include_aborted_txns,
        )
        return ReadResult(
            start_offset=start_offset,
            region=found.region,
            first_entry_incomplete=found.first_entry_incomplete,
            high_watermark=self._high_watermark,
            log_start_offset=self._log_start_offset,
            log_end_offset=log_end_offset,
            aborted_transactions=found.aborted_transactions,
        )

    def offset_for_timestamp(self, timestamp: int) -> TimestampAndOffset | None:
        """The first record (at or after the log start offset) whose timestamp is at or above
        ``timestamp``, with its timestamp and leader epoch; None if there is none."""
        self._check_open()
        return self._local.offset_for_timestamp(timestamp, self._log_start_offset)

    def latest_timestamp_offset(self) -> TimestampAndOffset | None:
        """The record with the largest timestamp (ListOffsets MAX_TIMESTAMP); None if the log is empty."""
        self._check_open()
        return self._local.latest_timestamp_offset()

    def fetch_offset_by_timestamp(self, timestamp: int) -> TimestampAndOffset | None:
        """ListOffsets for one partition, special timestamps included (Kafka's
        ``fetchOffsetByTimestamp`` without tiered storage)."""
        self._check_open()
        if timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
            earliest = self._epochs.earliest_entry
            epoch = (
                earliest.epoch
                if earliest is not None and earliest.start_offset <= self._log_start_offset
                else None
            )
            return TimestampAndOffset(NO_TIMESTAMP, self._log_start_offset, epoch)
        if timestamp == LATEST_TIMESTAMP:
            return TimestampAndOffset(NO_TIMESTAMP, self.log_end_offset, self._epochs.latest_epoch)
        if timestamp == LATEST_TIERED_TIMESTAMP:
            return TimestampAndOffset(NO_TIMESTAMP, -1, -1)
        if timestamp == MAX_TIMESTAMP:
            return self.latest_timestamp_offset()
        return self.offset_for_timestamp(timestamp)

    # --- durability ----------------------------------------------------------------------------

    def checkpoint(self) -> None:
        """Write the log start offset, recovery point and high watermark checkpoints. The owner calls
        this periodically (Kafka: every ``log.flush.offset.checkpoint.interval.ms``); ``flush``,
        ``close``, truncation and log start offset changes write what they change themselves."""
        self._local.write_offset_checkpoint(LOG_START_OFFSET_CHECKPOINT, self._log_start_offset)
        self._local.write_offset_checkpoint(RECOVERY_POINT_CHECKPOINT, self.recovery_point)
        self._local.write_offset_checkpoint(HIGH_WATERMARK_CHECKPOINT, self._high_watermark)

    def close(self) -> None:
        """Flush, snapshot the producer state at the log end offset, close every file and leave the
        clean-shutdown marker, so the next ``open`` skips recovery."""
        if self._closed:
            return
        self.flush()
        self._producers.map_end_offset = self.log_end_offset
        self._producers.take_snapshot()
        self._local.close()
        self.checkpoint()
        write_clean_shutdown(self.directory / CLEAN_SHUTDOWN_FILE)
        self._closed = True

    def close_handlers(self) -> None:
        """Close every file without writing anything (Kafka's ``closeHandlers``, for a failed disk);
        the next ``open`` sees an unclean shutdown. Tests use it to simulate a crash."""
        if self._closed:
            return
        self._local.close_handles()
        self._closed = True

    def _check_open(self) -> None:
        if self._closed:
            raise StorageError(f"the log of {self.topic}-{self.partition} is closed")
