"""Which segments retention deletes: pure decisions over the segment list, oldest first (Kafka's
``UnifiedLog.deletableSegments`` and its three predicates). Deletion stops at the first segment that
must stay; a segment whose offsets reach the high watermark is never deleted (so the log start offset
cannot pass it); the last segment is never deleted while empty. The caller rolls first when every
segment, the active one included, is to go."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

__all__ = [
    "Predicate",
    "RetainedSegment",
    "count_deletable",
    "log_start_offset_breach",
    "retention_ms_breach",
    "retention_size_breach",
]


class RetainedSegment(Protocol):
    @property
    def base_offset(self) -> int: ...

    @property
    def size(self) -> int: ...

    def largest_timestamp(self) -> int: ...


Predicate = Callable[[RetainedSegment, RetainedSegment | None], bool]


def count_deletable(
    segments: Sequence[RetainedSegment], *, log_end_offset: int, high_watermark: int, should_delete: Predicate
) -> int:
    """How many segments, from the oldest, may be deleted."""
    count = 0
    for i, segment in enumerate(segments):
        following = segments[i + 1] if i + 1 < len(segments) else None
        upper_bound = following.base_offset if following is not None else log_end_offset
        last_and_empty = following is None and segment.size == 0
        if high_watermark >= upper_bound and should_delete(segment, following) and not last_and_empty:
            count += 1
        else:
            break
    return count


def log_start_offset_breach(log_start_offset: int) -> Predicate:
    """Segments wholly below the log start offset (after DeleteRecords or truncation)."""
    return lambda segment, following: following is not None and following.base_offset <= log_start_offset


def retention_ms_breach(now_ms: int, retention_ms: int) -> Predicate | None:
    """Segments whose largest timestamp is more than ``retention.ms`` old; None when unlimited."""
    if retention_ms < 0:
        return None
    return lambda segment, following: now_ms - segment.largest_timestamp() > retention_ms


def retention_size_breach(total_size: int, retention_bytes: int) -> Predicate | None:
    """The oldest segments while the log stays at or above ``retention.bytes`` without them; None
    when unlimited or already within it."""
    if retention_bytes < 0 or total_size < retention_bytes:
        return None
    excess = total_size - retention_bytes

    def should_delete(segment: RetainedSegment, following: RetainedSegment | None) -> bool:
        nonlocal excess
        if excess - segment.size >= 0:
            excess -= segment.size
            return True
        return False

    return should_delete
