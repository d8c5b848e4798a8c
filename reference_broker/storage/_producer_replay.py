"""Producer state brought up to date from the log itself: ``rebuild_producer_state`` loads the newest
snapshot and replays the batches after it (Kafka's ``UnifiedLog.rebuildProducerState``), and
``replay_recovered_batch`` applies one batch met by segment recovery, putting the transactions its
marker aborts back into the segment's transaction index (Kafka's ``updateProducerState`` in
``LogSegment.recover``).

This is the one place that reads segments into a ``ProducerStateManager``: the manager knows nothing
of segments, and a segment nothing of producers."""

from __future__ import annotations

from collections.abc import Sequence

from kconform.codecs.records import BatchHeader

from ._producer_state_manager import ProducerStateManager
from ._segment import LogSegment
from ._txn_marker import end_txn_marker_of

__all__ = ["rebuild_producer_state", "replay_recovered_batch"]


def replay_recovered_batch(
    producers: ProducerStateManager, segment: LogSegment, position: int, header: BatchHeader
) -> None:
    """One batch at ``position`` of ``segment``, found whole by recovery, applied to ``producers``
    (the producer state as of the batch's offset)."""
    if header.producer_id >= 0:
        marker = None
        if header.is_control:
            marker = end_txn_marker_of(segment.read_bytes(position, header.size_in_bytes))
        completed = producers.apply_replicated(header, marker)
        if completed is not None:
            segment.update_txn_index(completed, producers.last_stable_offset(completed))
            producers.complete_txn(completed)
    producers.map_end_offset = header.last_offset + 1


def rebuild_producer_state(
    manager: ProducerStateManager,
    segments: Sequence[LogSegment],
    *,
    log_start_offset: int,
    last_offset: int,
    now_ms: int,
    reload_from_clean_shutdown: bool,
) -> None:
    """Bring ``manager`` to ``last_offset``: load the latest snapshot at or below it and replay the
    batches after it (Kafka's ``UnifiedLog.rebuildProducerState``). As in Kafka, a clean shutdown that
    left no snapshot at all is taken to mean "no producer state" and only empty snapshots are written."""
    offsets_to_snapshot: list[int] = []
    if segments:
        if len(segments) > 1:
            offsets_to_snapshot.append(segments[-2].base_offset)
        offsets_to_snapshot.append(segments[-1].base_offset)
    offsets_to_snapshot.append(last_offset)
    if manager.latest_snapshot_offset() is None and reload_from_clean_shutdown:
        for offset in offsets_to_snapshot:
            manager.map_end_offset = offset
            manager.take_snapshot()
        return
    empty_before = manager.is_empty and manager.map_end_offset >= last_offset
    manager.truncate_and_reload(log_start_offset, last_offset, now_ms)
    if last_offset > manager.map_end_offset and not empty_before:
        for index, segment in enumerate(segments):
            next_base = segments[index + 1].base_offset if index + 1 < len(segments) else None
            if next_base is not None and next_base <= manager.map_end_offset:
                continue  # wholly below the snapshot
            if segment.base_offset >= last_offset:
                break
            start = max(segment.base_offset, manager.map_end_offset, log_start_offset)
            manager.map_end_offset = start
            if segment.base_offset in offsets_to_snapshot:
                manager.take_snapshot()
            _replay_segment(manager, segment, start, last_offset)
    manager.map_end_offset = last_offset
    manager.take_snapshot()


def _replay_segment(manager: ProducerStateManager, segment: LogSegment, start: int, last_offset: int) -> None:
    found = segment.translate_offset(start)
    if found is None:
        return
    for position, header in segment.batches_from(found[0]):
        if header.last_offset >= last_offset:
            break  # Kafka reads up to the position of the batch holding last_offset
        if header.producer_id < 0:
            continue
        marker = None
        if header.is_control:
            marker = end_txn_marker_of(segment.read_bytes(position, header.size_in_bytes))
        completed = manager.apply_replicated(header, marker)
        if completed is not None:
            manager.complete_txn(completed)
