"""Opening a partition directory (Kafka's ``LogLoader``): remove leftovers of interrupted deletions,
load every segment (rebuilding the indexes of any segment whose index files are missing or fail their
checks), and after an unclean shutdown re-validate every batch from the segment holding the recovery
point on, cutting the log at the first bad or torn batch and dropping the segments after it. Then the
log end offset, log start offset, leader epochs and producer state are made consistent with what
survived.

Recovering a segment replays its batches into the producer state as of the segment's base offset
(rebuilt from the newest snapshot below it), which is how its transaction index is rebuilt: an ABORT
marker's entry needs the transactions still open at that point (Kafka's ``recoverSegment``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from uuid import UUID

from kconform.codecs.records import BatchHeader

from ._checkpoints import (
    CLEAN_SHUTDOWN_FILE,
    HIGH_WATERMARK_CHECKPOINT,
    LEADER_EPOCH_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    PARTITION_METADATA_FILE,
    RECOVERY_POINT_CHECKPOINT,
    read_offset_checkpoint,
    read_topic_id,
    write_topic_id,
)
from ._config import LogConfig
from ._errors import InconsistentTopicId
from ._files import (
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TEMP_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    file_name,
    fsync_dir,
    offset_from_file_name,
)
from ._leader_epoch import LeaderEpochCache
from ._producer_replay import rebuild_producer_state, replay_recovered_batch
from ._producer_state_manager import ProducerStateManager
from ._segment import LogSegment

__all__ = ["LoadedLog", "load_log", "parse_partition_dir_name"]


@dataclass(slots=True)
class LoadedLog:
    topic: str
    partition: int
    segments: list[LogSegment]
    log_start_offset: int
    log_end_offset: int
    recovery_point: int
    high_watermark: int
    epochs: LeaderEpochCache
    producers: ProducerStateManager
    topic_id: UUID | None
    had_clean_shutdown: bool
    recovered_bytes_truncated: int


def parse_partition_dir_name(directory: Path) -> tuple[str, int]:
    """``orders-3`` -> ("orders", 3), as Kafka's ``LocalLog.parseTopicPartitionName``."""
    name = directory.name
    topic, sep, partition = name.rpartition("-")
    if not sep or not topic or not partition.isdigit():
        raise ValueError(f"partition directory {directory} is not named <topic>-<partition>")
    return topic, int(partition)


def load_log(
    directory: Path,
    config: LogConfig,
    *,
    now_ms: int,
    clean_shutdown: bool | None,
    topic_id: UUID | None,
    roll_jitter: Callable[[], int],
) -> LoadedLog:
    topic, partition = parse_partition_dir_name(directory)
    directory.mkdir(parents=True, exist_ok=True)
    marker = directory / CLEAN_SHUTDOWN_FILE
    had_clean_shutdown = marker.exists() if clean_shutdown is None else clean_shutdown
    if marker.exists():
        marker.unlink()  # from now on a crash is an unclean shutdown
        fsync_dir(directory)
    _remove_leftovers(directory)

    log_start_checkpoint = (
        read_offset_checkpoint(directory / LOG_START_OFFSET_CHECKPOINT, topic, partition) or 0
    )
    recovery_checkpoint = read_offset_checkpoint(directory / RECOVERY_POINT_CHECKPOINT, topic, partition) or 0
    high_watermark_checkpoint = (
        read_offset_checkpoint(directory / HIGH_WATERMARK_CHECKPOINT, topic, partition) or 0
    )
    epochs = LeaderEpochCache.load(directory / LEADER_EPOCH_CHECKPOINT)
    topic_id = _load_topic_id(directory / PARTITION_METADATA_FILE, topic_id)

    def assign_epoch(header: BatchHeader) -> None:
        epoch = header.partition_leader_epoch
        if epoch >= 0 and (epochs.latest_epoch is None or epoch > epochs.latest_epoch):
            epochs.assign(epoch, header.base_offset)

    def recover(segment: LogSegment, earlier: list[LogSegment]) -> int:
        producers = ProducerStateManager(directory, config.producer_id_expiration_ms)
        rebuild_producer_state(
            producers,
            earlier,
            log_start_offset=log_start_checkpoint,
            last_offset=segment.base_offset,
            now_ms=now_ms,
            reload_from_clean_shutdown=False,
        )

        def on_batch(position: int, header: BatchHeader) -> None:
            assign_epoch(header)
            replay_recovered_batch(producers, segment, position, header)

        cut = segment.recover(on_batch)
        producers.take_snapshot()  # the next segment's recovery starts from here
        return cut

    segments, truncated = _load_segments(directory, config, now_ms, roll_jitter, recover)
    if had_clean_shutdown and segments and not segments[-1].tail_is_whole():
        # Kafka trusts the clean-shutdown marker and skips recovery; a torn or extended last segment
        # under a marker would then fail every read, so the last segment is recovered after all.
        had_clean_shutdown = False
        recovery_checkpoint = min(recovery_checkpoint, segments[-1].base_offset)
    if not had_clean_shutdown:
        segments, recovered = _recover_unflushed(segments, recovery_checkpoint, recover)
        truncated += recovered

    end_offset_valid = bool(segments)
    producers = ProducerStateManager(directory, config.producer_id_expiration_ms)
    if segments:
        log_end_offset = segments[-1].read_next_offset()
        if log_end_offset < log_start_checkpoint:
            # the segment files were removed behind the log's back: start over at the log start offset
            for segment in segments:
                segment.delete_files()
            segments = []
            epochs.clear()
            producers.truncate_fully_and_start_at(log_start_checkpoint)
            end_offset_valid = False
    if not segments:
        segments = [
            LogSegment.create(
                directory, log_start_checkpoint, config, now_ms=now_ms, roll_jitter_ms=roll_jitter()
            )
        ]
        log_end_offset = log_start_checkpoint
    if had_clean_shutdown and end_offset_valid:
        recovery_point = log_end_offset
    else:
        recovery_point = min(recovery_checkpoint, log_end_offset)

    epochs.truncate_from_end(log_end_offset)
    log_start_offset = max(log_start_checkpoint, segments[0].base_offset)
    epochs.truncate_from_start(log_start_checkpoint)

    producers.remove_stray_snapshots([s.base_offset for s in segments])
    rebuild_producer_state(
        producers,
        segments,
        log_start_offset=log_start_offset,
        last_offset=log_end_offset,
        now_ms=now_ms,
        reload_from_clean_shutdown=had_clean_shutdown,
    )
    high_watermark = min(max(high_watermark_checkpoint, log_start_offset), log_end_offset)
    return LoadedLog(
        topic=topic,
        partition=partition,
        segments=segments,
        log_start_offset=log_start_offset,
        log_end_offset=log_end_offset,
        recovery_point=recovery_point,
        high_watermark=high_watermark,
        epochs=epochs,
        producers=producers,
        topic_id=topic_id,
        had_clean_shutdown=had_clean_shutdown,
        recovered_bytes_truncated=truncated,
    )


def _remove_leftovers(directory: Path) -> None:
    """Files of deletions that had not finished, and temporary files of interrupted writes."""
    for path in directory.iterdir():
        if path.is_file() and (path.name.endswith(DELETED_SUFFIX) or path.name.endswith(TEMP_SUFFIX)):
            path.unlink()


def _load_topic_id(path: Path, given: UUID | None) -> UUID | None:
    stored = read_topic_id(path)
    if stored is not None:
        if given is not None and given != stored:
            raise InconsistentTopicId(f"{path} holds topic id {stored}, not {given}")
        return stored
    if given is not None:
        write_topic_id(path, given)
    return given


Recover = Callable[[LogSegment, list[LogSegment]], int]
"""Recover a segment given the segments before it; returns the bytes cut."""


def _load_segments(
    directory: Path,
    config: LogConfig,
    now_ms: int,
    roll_jitter: Callable[[], int],
    recover: Recover,
) -> tuple[list[LogSegment], int]:
    segments = []
    truncated = 0
    for path in sorted(directory.iterdir()):
        if not path.is_file():
            continue
        base_offset = offset_from_file_name(path.name)
        if base_offset is None:
            continue
        if path.name.endswith((INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)):
            if not (directory / file_name(base_offset, LOG_SUFFIX)).exists():
                path.unlink()  # an index without its log
        elif path.name.endswith(LOG_SUFFIX):
            segment = LogSegment.open(
                directory, base_offset, config, now_ms=now_ms, roll_jitter_ms=roll_jitter()
            )
            if segment.index_problem is not None:
                truncated += recover(segment, segments)
            segments.append(segment)
    return segments, truncated


def _recover_unflushed(
    segments: list[LogSegment], recovery_point: int, recover: Recover
) -> tuple[list[LogSegment], int]:
    """Re-validate from the segment holding the recovery point; at the first segment that had to be
    cut, every later segment goes (its data cannot follow a hole)."""
    start = 0
    for i, segment in enumerate(segments):
        if segment.base_offset <= recovery_point:
            start = i
    for i in range(start, len(segments)):
        truncated = recover(segments[i], segments[:i])
        if truncated > 0:
            for later in segments[i + 1 :]:
                later.delete_files()
            return segments[: i + 1], truncated
    return segments, 0
