"""``PartitionLog``: one partition's log in ``<data_dir>/<topic>-<partition>/``, laid out as Kafka lays
it out, with Kafka's append, read, roll, retention, truncation, flush and recovery rules (Kafka's
``UnifiedLog`` and ``LocalLog``). Not thread-safe: one owner (an asyncio task, a test) drives it.

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

from kconform.codecs import DecodeError
from kconform.codecs.constants import ListOffsetsTimestamp
from kconform.codecs.records import BatchHeader, decode_batch_header, iter_batch_headers, patch_batch_header

from ._checkpoints import (
    CLEAN_SHUTDOWN_FILE,
    HIGH_WATERMARK_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    PARTITION_METADATA_FILE,
    RECOVERY_POINT_CHECKPOINT,
    write_clean_shutdown,
    write_offset_checkpoint,
    write_topic_id,
)
from ._config import LogConfig
from ._errors import (
    CorruptRecord,
    InconsistentTopicId,
    InvalidAppend,
    OffsetOutOfRange,
    RecordBatchTooLarge,
    StorageError,
    UnexpectedAppendOffset,
)
from ._files import fsync_dir
from ._leader_epoch import EpochEntry
from ._loader import LoadedLog, load_log
from ._lookups import (
    floor_index,
    max_timestamp_offset,
    offset_position,
    read_from,
    search_offset_by_timestamp,
    whole_batches_size,
)
from ._producer_state import AppendOrigin, ProducerStateEntry, ProducerStateError, VerdictKind
from ._producer_state_manager import end_txn_marker_of, rebuild_producer_state
from ._results import AppendInfo, FileRegion, ReadResult, SegmentInfo
from ._retention import (
    Predicate,
    count_deletable,
    log_start_offset_breach,
    retention_ms_breach,
    retention_size_breach,
)
from ._segment import LogSegment, TimestampAndOffset
from ._txn_index import AbortedTxn, CompletedTxn

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

_NO_TIMESTAMP = -1
_DELETE_RECORDS_HIGH_WATERMARK = -1


class PartitionLog:
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
        self._dir = directory
        self._config = config
        self._clock = clock
        self._rng = rng
        self.topic = loaded.topic
        self.partition = loaded.partition
        self._segments = loaded.segments
        self._bases = [s.base_offset for s in loaded.segments]
        self._log_start_offset = loaded.log_start_offset
        self._log_end_offset = loaded.log_end_offset
        self._high_watermark = loaded.high_watermark
        self._recovery_point = loaded.recovery_point
        self._epochs = loaded.epochs
        self._producers = loaded.producers
        self._topic_id = loaded.topic_id
        self._pending_deletes: list[tuple[int, LogSegment]] = []
        self._producers.on_high_watermark_updated(self._high_watermark)
        self._last_flush_ms = clock()
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
            roll_jitter=lambda: _roll_jitter(rng, config),
        )
        log = cls(directory, config, clock, rng, loaded)
        log.checkpoint()
        return log

    def _roll_jitter(self) -> int:
        return _roll_jitter(self._rng, self._config)

    def __enter__(self) -> PartitionLog:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"PartitionLog({self.topic}-{self.partition}, log_start_offset={self._log_start_offset}, "
            f"log_end_offset={self._log_end_offset}, high_watermark={self._high_watermark}, "
            f"segments={len(self._segments)})"
        )

    # --- state ---------------------------------------------------------------------------------

    @property
    def directory(self) -> Path:
        return self._dir

    @property
    def config(self) -> LogConfig:
        return self._config

    @property
    def topic_id(self) -> UUID | None:
        return self._topic_id

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def log_end_offset(self) -> int:
        """The offset the next appended record gets."""
        return self._log_end_offset

    @property
    def high_watermark(self) -> int:
        return self._high_watermark

    @property
    def recovery_point(self) -> int:
        """Every offset below this is flushed to disk."""
        return self._recovery_point

    @property
    def size_in_bytes(self) -> int:
        return sum(segment.size for segment in self._segments)

    @property
    def segments(self) -> tuple[SegmentInfo, ...]:
        return tuple(
            SegmentInfo(s.base_offset, s.size, s.log_path, s.max_timestamp_so_far) for s in self._segments
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
            write_topic_id(self._dir / PARTITION_METADATA_FILE, topic_id)
            self._topic_id = topic_id

    def update_config(self, config: LogConfig) -> None:
        """Apply new topic configs (AlterConfigs); existing segments keep their index sizes."""
        self._config = config

    def update_high_watermark(self, high_watermark: int) -> int:
        """Set the high watermark, bounded to [log start offset, log end offset]; returns it.
        Completed transactions whose markers it passes stop holding the last stable offset back."""
        self._high_watermark = min(max(high_watermark, self._log_start_offset), self._log_end_offset)
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
        first = max(floor_index(self._bases, start_offset), 0)
        return self._collect_aborted(start_offset, upper_bound_offset, first)

    def _collect_aborted(
        self, start_offset: int, upper_bound_offset: int, first_segment: int
    ) -> list[AbortedTxn]:
        found: list[AbortedTxn] = []
        for segment in self._segments[first_segment:]:
            entries, complete = segment.collect_aborted_txns(start_offset, upper_bound_offset)
            found.extend(entries)
            if complete:
                break
        return found

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
        return self._epochs.end_offset_for(leader_epoch, self._log_end_offset)

    def assign_epoch_start_offset(self, leader_epoch: int, start_offset: int) -> None:
        """Record where a leader epoch starts (a new leader does this with its log end offset)."""
        self._epochs.assign(leader_epoch, start_offset)

    # --- appending -----------------------------------------------------------------------------

    def append(
        self,
        batches: bytes | bytearray | memoryview,
        *,
        leader_epoch: int = -1,
        assign_offsets: bool = True,
        origin: AppendOrigin | None = None,
        stamp_log_append_time: bool = False,
        transaction_version: int = 0,
    ) -> AppendInfo:
        """Append whole magic 2 batches.

        With ``assign_offsets`` (the leader) each batch gets the next offsets and ``leader_epoch``
        (which must be >= 0) written into its header, in place when ``batches`` is a bytearray; with
        ``stamp_log_append_time`` every batch becomes LogAppendTime with the clock's time. Without it
        (a follower) offsets must rise and start at or after the log end offset. ``origin`` (CLIENT
        for the leader, REPLICATION for a follower by default) decides the producer checks: a retry
        of one of a producer's last five batches returns its original offsets without writing, an
        epoch or sequence error raises ``ProducerStateError``. Raises ``InvalidAppend`` (and its
        subclasses) for input that is not whole valid batches, bigger than ``segment.bytes``, or
        with offsets out of order."""
        self._check_open()
        origin = origin or (AppendOrigin.CLIENT if assign_offsets else AppendOrigin.REPLICATION)
        if assign_offsets and leader_epoch < 0:
            raise ValueError("a leader append needs the partition's leader epoch (>= 0)")
        data = batches if isinstance(batches, bytearray) else bytearray(batches)
        headers = _parse_batches(data)
        if not headers:
            return AppendInfo(-1, -1, _NO_TIMESTAMP, -1, -1, self._log_start_offset, 0, 0, 0)
        now = self._clock()
        log_append_time = now if (assign_offsets and stamp_log_append_time) else -1
        if assign_offsets:
            headers = self._assign_offsets(data, headers, leader_epoch, log_append_time)
        else:
            self._check_replica_offsets(headers)
        first_offset = headers[0][1].base_offset
        last_offset = headers[-1][1].last_offset
        max_timestamp, offset_of_max_timestamp = _NO_TIMESTAMP, -1
        for _, header in headers:
            if header.max_timestamp > max_timestamp:
                max_timestamp, offset_of_max_timestamp = header.max_timestamp, header.last_offset
        if log_append_time >= 0:
            offset_of_max_timestamp = last_offset
        if len(data) > self._config.segment_bytes:
            raise RecordBatchTooLarge(
                f"append of {len(data)} bytes to {self.topic}-{self.partition} exceeds segment.bytes "
                f"({self._config.segment_bytes})"
            )

        pending: dict[int, ProducerStateEntry] = {}
        completed: list[CompletedTxn] = []
        for position, header in headers:
            if header.producer_id < 0:
                continue
            marker = None
            if header.is_control:
                marker = end_txn_marker_of(bytes(data[position : position + header.size_in_bytes]))
            verdict = self._producers.prepare(
                pending,
                header,
                marker,
                origin=origin,
                transaction_version=transaction_version,
                completed=completed,
            )
            if verdict.kind is VerdictKind.DUPLICATE:
                original = verdict.duplicate_of
                assert original is not None
                return AppendInfo(
                    first_offset=original.first_offset,
                    last_offset=original.last_offset,
                    max_timestamp=original.timestamp,
                    offset_of_max_timestamp=original.last_offset,
                    log_append_time=original.timestamp,
                    log_start_offset=self._log_start_offset,
                    batch_count=len(headers),
                    record_count=sum(h.record_count for _, h in headers),
                    size_in_bytes=len(data),
                    duplicate=True,
                )
            if verdict.is_error:
                raise ProducerStateError(verdict)

        for _, header in headers:
            if header.partition_leader_epoch >= 0:
                self._epochs.assign(header.partition_leader_epoch, header.base_offset)
        segment = self._maybe_roll(len(data), max_timestamp, last_offset, first_offset, now)
        segment.append(last_offset, max_timestamp, offset_of_max_timestamp, data)
        self._log_end_offset = last_offset + 1
        if self._high_watermark >= self._log_end_offset:
            self._high_watermark = self._log_end_offset
        self._producers.commit(pending)
        self._producers.map_end_offset = last_offset + 1
        for txn in completed:  # the LSO is taken before the transaction leaves the open set
            segment.update_txn_index(txn, self._producers.last_stable_offset(txn))
            self._producers.complete_txn(txn)
        self._maybe_flush(now)
        return AppendInfo(
            first_offset=first_offset,
            last_offset=last_offset,
            max_timestamp=max_timestamp,
            offset_of_max_timestamp=offset_of_max_timestamp,
            log_append_time=log_append_time,
            log_start_offset=self._log_start_offset,
            batch_count=len(headers),
            record_count=sum(h.record_count for _, h in headers),
            size_in_bytes=len(data),
        )

    def _assign_offsets(
        self, data: bytearray, headers: list[tuple[int, BatchHeader]], leader_epoch: int, log_append_time: int
    ) -> list[tuple[int, BatchHeader]]:
        next_offset = self._log_end_offset
        stamped = []
        for position, header in headers:
            patch_batch_header(
                data,
                position,
                base_offset=next_offset,
                partition_leader_epoch=leader_epoch,
                log_append_time=log_append_time if log_append_time >= 0 else None,
            )
            stamped.append((position, decode_batch_header(data, position, verify_crc=False)))
            next_offset += header.last_offset_delta + 1
        return stamped

    def _check_replica_offsets(self, headers: list[tuple[int, BatchHeader]]) -> None:
        previous_last = -1
        for _, header in headers:
            if header.last_offset <= previous_last:
                raise UnexpectedAppendOffset(
                    f"offsets out of order in append to {self.topic}-{self.partition}: "
                    f"{header.last_offset} after {previous_last}"
                )
            previous_last = header.last_offset
        first = headers[0][1].base_offset
        if first < self._log_end_offset:
            raise UnexpectedAppendOffset(
                f"first offset {first} of append to {self.topic}-{self.partition} is below the log end "
                f"offset {self._log_end_offset}"
            )

    # --- rolling and flushing ------------------------------------------------------------------

    @property
    def _active(self) -> LogSegment:
        return self._segments[-1]

    def _maybe_roll(
        self, messages_size: int, max_timestamp: int, max_offset: int, first_offset: int, now: int
    ) -> LogSegment:
        if self._active.should_roll(
            self._config,
            max_timestamp_in_messages=max_timestamp,
            max_offset_in_messages=max_offset,
            messages_size=messages_size,
            now_ms=now,
        ):
            return self._roll(first_offset)
        return self._active

    def roll(self, expected_next_offset: int | None = None) -> int:
        """Start a new active segment at max(``expected_next_offset``, log end offset); the old one
        gets its final time index entry, a producer snapshot is taken at the new base offset and
        everything below it is flushed (Kafka flushes in the background). Returns the new active
        segment's base offset (an empty active segment at that offset is kept as it is)."""
        self._check_open()
        return self._roll(expected_next_offset).base_offset

    def _roll(self, expected_next_offset: int | None = None) -> LogSegment:
        new_offset = max(expected_next_offset or 0, self._log_end_offset)
        active = self._active
        if new_offset == active.base_offset:
            if active.size == 0:
                return active  # Kafka re-creates the empty segment; nothing would differ
            raise StorageError(f"segment {new_offset} of {self.topic}-{self.partition} already exists")
        if new_offset < active.base_offset:
            raise StorageError(
                f"cannot roll {self.topic}-{self.partition} to {new_offset}, below the active segment "
                f"{active.base_offset}"
            )
        active.on_become_inactive()
        segment = LogSegment.create(
            self._dir, new_offset, self._config, now_ms=self._clock(), roll_jitter_ms=self._roll_jitter()
        )
        self._segments.append(segment)
        self._bases.append(new_offset)
        self._producers.map_end_offset = new_offset
        self._producers.take_snapshot()
        self._flush_up_to(new_offset, write_checkpoint=False)
        return segment

    def flush(self) -> None:
        """fsync every segment written since the last flush (the active one always) and move the
        recovery point to the log end offset."""
        self._check_open()
        self._active.flush()
        self._flush_up_to(self._log_end_offset, write_checkpoint=True)

    def flush_if_due(self) -> bool:
        """Flush if ``flush.messages`` unflushed records or ``flush.ms`` since the last flush have
        passed (append checks this too; Kafka checks ``flush.ms`` from a scheduler)."""
        return self._maybe_flush(self._clock())

    def _maybe_flush(self, now: int) -> bool:
        unflushed = self._log_end_offset - self._recovery_point
        if unflushed >= self._config.flush_messages or (
            unflushed > 0 and now - self._last_flush_ms >= self._config.flush_ms
        ):
            self.flush()
            return True
        return False

    def _flush_up_to(self, offset: int, *, write_checkpoint: bool) -> None:
        """fsync the segments holding [recovery point, offset) and move the recovery point there.
        The checkpoint file is written by explicit flushes and ``checkpoint``; after a roll only
        the memory moves (Kafka checkpoints recovery points on a timer), so a crash recovers a
        little more than it strictly must."""
        if offset <= self._recovery_point:
            return
        first = max(floor_index(self._bases, self._recovery_point), 0)
        new_segments = False
        for segment in self._segments[first:]:
            if segment.base_offset >= offset and segment is not self._active:
                break
            segment.flush()
            new_segments = new_segments or segment.base_offset >= self._recovery_point
        if new_segments:
            fsync_dir(self._dir)
        self._recovery_point = offset
        self._last_flush_ms = self._clock()
        if write_checkpoint:
            self._write_offset_checkpoint(RECOVERY_POINT_CHECKPOINT, self._recovery_point)

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
        if start_offset < self._log_start_offset or start_offset > self._log_end_offset:
            raise OffsetOutOfRange(start_offset, self._log_start_offset, self._log_end_offset)
        limit = self._log_end_offset if max_offset is None else min(max_offset, self._log_end_offset)
        if floor_index(self._bases, start_offset) < 0:
            raise OffsetOutOfRange(start_offset, self._log_start_offset, self._log_end_offset)
        found = None
        # Kafka answers a read at or past the limit with no aborted transactions, and one that finds
        # no batch at all (its data deleted meanwhile) without the list
        aborted: list[AbortedTxn] | None = [] if include_aborted_txns and start_offset >= limit else None
        if start_offset < limit:
            max_position = offset_position(self._segments, self._bases, limit, self._log_end_offset)
            found = read_from(
                self._segments, self._bases, start_offset, max_bytes, max_position, min_one_batch
            )
        region = None
        incomplete = False
        if found is not None:
            segment, piece = found
            if include_aborted_txns:
                aborted = self._aborted_in_read(start_offset, segment, piece.position, piece.size)
            size = piece.size
            if whole_batches and size:
                size = whole_batches_size(segment, piece.position, size)
            incomplete = piece.first_entry_incomplete
            if size:
                region = FileRegion(segment.fd, segment.log_path, piece.position, size)
        return ReadResult(
            start_offset=start_offset,
            region=region,
            first_entry_incomplete=incomplete,
            high_watermark=self._high_watermark,
            log_start_offset=self._log_start_offset,
            log_end_offset=self._log_end_offset,
            aborted_transactions=aborted,
        )

    def _aborted_in_read(
        self, start_offset: int, segment: LogSegment, position: int, size: int
    ) -> list[AbortedTxn]:
        upper = segment.fetch_upper_bound_offset(position, size)
        index = self._bases.index(segment.base_offset)
        if upper is None:
            upper = self._bases[index + 1] if index + 1 < len(self._bases) else self._log_end_offset
        return self._collect_aborted(start_offset, upper, index)

    def offset_for_timestamp(self, timestamp: int) -> TimestampAndOffset | None:
        """The first record (at or after the log start offset) whose timestamp is at or above
        ``timestamp``, with its timestamp and leader epoch; None if there is none."""
        self._check_open()
        return search_offset_by_timestamp(self._segments, timestamp, self._log_start_offset)

    def latest_timestamp_offset(self) -> TimestampAndOffset | None:
        """The record with the largest timestamp (ListOffsets MAX_TIMESTAMP); None if the log is empty."""
        self._check_open()
        return max_timestamp_offset(self._segments)

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
            return TimestampAndOffset(_NO_TIMESTAMP, self._log_start_offset, epoch)
        if timestamp == LATEST_TIMESTAMP:
            return TimestampAndOffset(_NO_TIMESTAMP, self._log_end_offset, self._epochs.latest_epoch)
        if timestamp == LATEST_TIERED_TIMESTAMP:
            return TimestampAndOffset(_NO_TIMESTAMP, -1, -1)
        if timestamp == MAX_TIMESTAMP:
            return self.latest_timestamp_offset()
        return self.offset_for_timestamp(timestamp)

    # --- truncation ----------------------------------------------------------------------------

    def truncate_to(self, offset: int) -> bool:
        """Drop every batch that ends at or after ``offset`` (a replica's divergence from its leader).
        Returns False if the log already ends at or before it."""
        self._check_open()
        if offset < 0:
            raise ValueError(f"cannot truncate {self.topic}-{self.partition} to a negative offset {offset}")
        if offset >= self._log_end_offset:
            self._epochs.truncate_from_end(self._log_end_offset)
            return False
        if self._segments[0].base_offset > offset:
            self.truncate_fully_and_start_at(offset)
            return True
        doomed = [s for s in self._segments if s.base_offset > offset]
        self._remove_segments(doomed)
        self._active.truncate_to(offset, now_ms=self._clock())
        self._log_end_offset = offset
        self._recovery_point = min(self._recovery_point, offset)
        self._epochs.truncate_from_end(offset)
        self._log_start_offset = min(offset, self._log_start_offset)
        self._rebuild_producer_state(offset)
        # the replay marks every transaction it completes unreplicated until told the high watermark
        self.update_high_watermark(min(self._high_watermark, self._log_end_offset))
        self.checkpoint()
        return True

    def truncate_fully_and_start_at(self, offset: int, *, log_start_offset: int | None = None) -> None:
        """Delete everything and continue at ``offset`` (a replica far behind its leader)."""
        self._check_open()
        old = list(self._segments)
        self._remove_segments(old)
        segment = LogSegment.create(
            self._dir, offset, self._config, now_ms=self._clock(), roll_jitter_ms=self._roll_jitter()
        )
        self._segments = [segment]
        self._bases = [offset]
        self._log_end_offset = offset
        self._recovery_point = min(self._recovery_point, offset)
        self._epochs.clear()
        self._producers.truncate_fully_and_start_at(offset)
        self._log_start_offset = offset if log_start_offset is None else log_start_offset
        self._rebuild_producer_state(offset)
        self.update_high_watermark(self._log_end_offset)
        self.checkpoint()

    def _rebuild_producer_state(self, last_offset: int) -> None:
        rebuild_producer_state(
            self._producers,
            self._segments,
            log_start_offset=self._log_start_offset,
            last_offset=last_offset,
            now_ms=self._clock(),
            reload_from_clean_shutdown=False,
        )

    # --- deleting old data ---------------------------------------------------------------------

    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: move the log start offset up to ``offset`` (-1 means the high watermark)
        and delete the segments wholly below it (Kafka leaves that to its next retention pass).
        ``OffsetOutOfRange`` for a negative offset or one above the high watermark. Returns the
        log start offset (the partition's low watermark)."""
        self._check_open()
        if offset == _DELETE_RECORDS_HIGH_WATERMARK:
            offset = self._high_watermark
        if offset < 0:
            raise OffsetOutOfRange(offset, self._log_start_offset, self._log_end_offset, "negative offset")
        self._increment_log_start_offset(offset)
        self._delete_old_segments(log_start_offset_breach(self._log_start_offset))
        return self._log_start_offset

    def apply_retention(self) -> int:
        """Kafka's retention pass (``deleteOldSegments``): delete, oldest first, the segments below the
        log start offset, then (with ``cleanup.policy`` delete) those over ``retention.bytes`` and
        those whose largest timestamp is older than ``retention.ms``, never reaching past the high
        watermark. If every segment goes, the log rolls first so an empty active segment remains.
        Then removes files whose ``file.delete.delay.ms`` has passed. Returns segments deleted."""
        self._check_open()
        deleted = self._delete_old_segments(log_start_offset_breach(self._log_start_offset))
        if self._config.delete_enabled:
            by_size = retention_size_breach(self.size_in_bytes, self._config.retention_bytes)
            if by_size is not None:
                deleted += self._delete_old_segments(by_size)
            by_time = retention_ms_breach(self._clock(), self._config.retention_ms)
            if by_time is not None:
                deleted += self._delete_old_segments(by_time)
        self.delete_expired_files()
        return deleted

    def _delete_old_segments(self, should_delete: Predicate) -> int:
        count = count_deletable(
            self._segments,
            log_end_offset=self._log_end_offset,
            high_watermark=self._high_watermark,
            should_delete=should_delete,
        )
        if not count:
            return 0
        deletable = self._segments[:count]
        if count == len(self._segments):
            fresh = self._roll()
            if deletable[-1] is fresh:
                deletable = deletable[:-1]
        if deletable:
            self._increment_log_start_offset(self._segments[len(deletable)].base_offset)
            self._remove_segments(deletable)
        return count

    def _increment_log_start_offset(self, offset: int) -> None:
        if offset > self._high_watermark:
            raise OffsetOutOfRange(
                offset,
                self._log_start_offset,
                self._log_end_offset,
                f"cannot move the log start offset above the high watermark {self._high_watermark}",
            )
        if offset > self._log_start_offset:
            self._log_start_offset = offset
            self._recovery_point = max(self._recovery_point, offset)
            self._epochs.truncate_from_start(offset)
            self._producers.on_log_start_offset_incremented(offset)
            self._write_offset_checkpoint(LOG_START_OFFSET_CHECKPOINT, offset)

    def _remove_segments(self, doomed: list[LogSegment]) -> None:
        """Take segments out of the log, rename their files to ``*.deleted`` and remove them after
        ``file.delete.delay.ms`` (their descriptors stay open until then for in-flight reads)."""
        if not doomed:
            return
        ids = {id(s) for s in doomed}
        self._segments = [s for s in self._segments if id(s) not in ids]
        self._bases = [s.base_offset for s in self._segments]
        due = self._clock() + self._config.file_delete_delay_ms
        for segment in doomed:
            segment.mark_deleted()
            self._producers.delete_snapshot(segment.base_offset)
            self._pending_deletes.append((due, segment))
        self.delete_expired_files()

    def delete_expired_files(self) -> None:
        """Remove the files of deleted segments whose ``file.delete.delay.ms`` has passed."""
        now = self._clock()
        keep = []
        for due, segment in self._pending_deletes:
            if due <= now:
                segment.delete_files()
            else:
                keep.append((due, segment))
        self._pending_deletes = keep

    # --- durability ----------------------------------------------------------------------------

    def checkpoint(self) -> None:
        """Write the log start offset, recovery point and high watermark checkpoints. The owner calls
        this periodically (Kafka: every ``log.flush.offset.checkpoint.interval.ms``); ``flush``,
        ``close``, truncation and log start offset changes write what they change themselves."""
        self._write_offset_checkpoint(LOG_START_OFFSET_CHECKPOINT, self._log_start_offset)
        self._write_offset_checkpoint(RECOVERY_POINT_CHECKPOINT, self._recovery_point)
        self._write_offset_checkpoint(HIGH_WATERMARK_CHECKPOINT, self._high_watermark)

    def _write_offset_checkpoint(self, name: str, offset: int) -> None:
        write_offset_checkpoint(self._dir / name, self.topic, self.partition, offset)

    def close(self) -> None:
        """Flush, snapshot the producer state at the log end offset, close every file and leave the
        clean-shutdown marker, so the next ``open`` skips recovery."""
        if self._closed:
            return
        self.flush()
        self._producers.map_end_offset = self._log_end_offset
        self._producers.take_snapshot()
        for segment in self._segments:
            segment.close()
        for _, segment in self._pending_deletes:
            segment.delete_files()
        self._pending_deletes = []
        self.checkpoint()
        write_clean_shutdown(self._dir / CLEAN_SHUTDOWN_FILE)
        self._closed = True

    def close_handlers(self) -> None:
        """Close every file without writing anything (Kafka's ``closeHandlers``, for a failed disk);
        the next ``open`` sees an unclean shutdown. Tests use it to simulate a crash."""
        if self._closed:
            return
        for segment in self._segments:
            segment.close_handles()
        for _, segment in self._pending_deletes:
            segment.close_handles()
        self._closed = True

    def _check_open(self) -> None:
        if self._closed:
            raise StorageError(f"the log of {self.topic}-{self.partition} is closed")


def _roll_jitter(rng: random.Random, config: LogConfig) -> int:
    """Kafka's ``randomSegmentJitter``: up to min(segment.jitter.ms, segment.ms), drawn per segment."""
    bound = min(config.segment_jitter_ms, config.segment_ms)
    return rng.randrange(bound) if bound > 0 else 0


def _parse_batches(data: bytearray) -> list[tuple[int, BatchHeader]]:
    """(position, header) of each batch; refuses anything but whole, CRC-valid magic 2 batches."""
    headers = []
    position = 0
    try:
        for header in iter_batch_headers(data, verify_crc=True):
            headers.append((position, header))
            position += header.size_in_bytes
    except DecodeError as exc:
        raise CorruptRecord(f"invalid batch in append: {exc}") from exc
    if position != len(data):
        raise InvalidAppend(f"the last {len(data) - position} bytes of the append are not a whole batch")
    for _, header in headers:
        if header.magic != 2:
            raise InvalidAppend(f"only magic 2 batches can be appended, not magic {header.magic}")
    return headers
