"""Moving a partition's log ends (Kafka's ``UnifiedLog.truncateTo``, ``truncateFullyAndStartAt``,
``deleteRecords`` and ``deleteOldSegments``): truncation drops the end of the log, DeleteRecords and
retention drop its start; either way the leader epochs, the producer state and its snapshots follow.
Which segments retention takes is decided in ``_retention``. A mixin of ``PartitionLog``."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ._checkpoints import LOG_START_OFFSET_CHECKPOINT
from ._errors import OffsetOutOfRange
from ._leader_epoch import LeaderEpochCache
from ._local_log import LocalLog
from ._producer_replay import rebuild_producer_state
from ._producer_state_manager import ProducerStateManager
from ._retention import (
    Predicate,
    count_deletable,
    log_start_offset_breach,
    retention_ms_breach,
    retention_size_breach,
)
from ._segment import LogSegment

__all__ = ["LogRetention"]

_DELETE_RECORDS_HIGH_WATERMARK = -1


class LogRetention:
    """``PartitionLog``'s truncation and deletion of old data. Works on the log's state below and on its
    ``_check_open``, ``_roll``, ``checkpoint`` and ``update_high_watermark``."""

    topic: str
    partition: int
    _clock: Callable[[], int]
    _local: LocalLog
    _producers: ProducerStateManager
    _epochs: LeaderEpochCache
    _log_start_offset: int
    _high_watermark: int

    # --- truncation ----------------------------------------------------------------------------

    def truncate_to(self, offset: int) -> bool:
        """Drop every batch that ends at or after ``offset`` (a replica's divergence from its leader).
        Returns False if the log already ends at or before it."""
        self._check_open()
        if offset < 0:
            raise ValueError(f"cannot truncate {self.topic}-{self.partition} to a negative offset {offset}")
        if offset >= self._local.log_end_offset:
            self._epochs.truncate_from_end(self._local.log_end_offset)
            return False
        if self._local.segments[0].base_offset > offset:
            self.truncate_fully_and_start_at(offset)
            return True
        self._forget_snapshots_of(self._local.truncate_to(offset))
        self._epochs.truncate_from_end(offset)
        self._log_start_offset = min(offset, self._log_start_offset)
        self._rebuild_producer_state(offset)
        # the replay marks every transaction it completes unreplicated until told the high watermark
        self.update_high_watermark(min(self._high_watermark, self._local.log_end_offset))
        self.checkpoint()
        return True

    def truncate_fully_and_start_at(self, offset: int, *, log_start_offset: int | None = None) -> None:
        """Delete everything and continue at ``offset`` (a replica far behind its leader)."""
        self._check_open()
        self._forget_snapshots_of(self._local.start_at(offset))
        self._epochs.clear()
        self._producers.truncate_fully_and_start_at(offset)
        self._log_start_offset = offset if log_start_offset is None else log_start_offset
        self._rebuild_producer_state(offset)
        self.update_high_watermark(self._local.log_end_offset)
        self.checkpoint()

    def _rebuild_producer_state(self, last_offset: int) -> None:
        rebuild_producer_state(
            self._producers,
            self._local.segments,
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
            raise OffsetOutOfRange(
                offset, self._log_start_offset, self._local.log_end_offset, "negative offset"
            )
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
        if self._local.config.delete_enabled:
            by_size = retention_size_breach(self._local.size_in_bytes, self._local.config.retention_bytes)
            if by_size is not None:
                deleted += self._delete_old_segments(by_size)
            by_time = retention_ms_breach(self._clock(), self._local.config.retention_ms)
            if by_time is not None:
                deleted += self._delete_old_segments(by_time)
        self.delete_expired_files()
        return deleted

    def _delete_old_segments(self, should_delete: Predicate) -> int:
        segments = self._local.segments
        count = count_deletable(
            segments,
            log_end_offset=self._local.log_end_offset,
            high_watermark=self._high_watermark,
            should_delete=should_delete,
        )
        if not count:
            return 0
        deletable = list(segments[:count])
        if count == len(segments):
            fresh = self._roll()
            if deletable[-1] is fresh:
                deletable = deletable[:-1]
        if deletable:
            self._increment_log_start_offset(self._local.segments[len(deletable)].base_offset)
            self._local.remove_segments(deletable)
            self._forget_snapshots_of(deletable)
        return count

    def _increment_log_start_offset(self, offset: int) -> None:
        if offset > self._high_watermark:
            raise OffsetOutOfRange(
                offset,
                self._log_start_offset,
                self._local.log_end_offset,
                f"cannot move the log start offset above the high watermark {self._high_watermark}",
            )
        if offset > self._log_start_offset:
            self._log_start_offset = offset
            self._local.raise_recovery_point(offset)
            self._epochs.truncate_from_start(offset)
            self._producers.on_log_start_offset_incremented(offset)
            self._local.write_offset_checkpoint(LOG_START_OFFSET_CHECKPOINT, offset)

    def _forget_snapshots_of(self, removed: Sequence[LogSegment]) -> None:
        """A removed segment's producer snapshot goes with it."""
        for segment in removed:
            self._producers.delete_snapshot(segment.base_offset)

    def delete_expired_files(self) -> None:
        """Remove the files of deleted segments whose ``file.delete.delay.ms`` has passed."""
        self._local.delete_expired_files()
