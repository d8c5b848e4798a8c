"""Settling a partition's batches from what the read-ahead found (``RecordsScan``), without reading
their records again: each batch's record errors (LogValidator.validateRecord, judged with the append's
own clock) and either the batches kept as they came or the batch the read-ahead wrote for the rebuild.
Whatever the scans cannot settle for every batch, the log validator (``_log``) reads whole."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kconform.codecs.compression import Compression
from kconform.codecs.records import Record, StreamedV2Batch, TimestampType

from ._records import RecordRules
from ._scan_result import RecordsScan
from ._types import LogValidationConfig

__all__ = ["Ahead", "settle_ahead"]

_SAFE = 2**62  # within this, ``now - timestamp`` cannot wrap Java's long


@dataclass(frozen=True, slots=True)
class Ahead:
    """``errors``: per batch, its record errors as ``(index, code, message)``; ``rebuilt``: the batch
    written for the rebuild, or None when the batches are kept in place."""

    errors: list[list[tuple[int, int, str]]]
    rebuilt: StreamedV2Batch | None


@dataclass(frozen=True, slots=True)
class AppendContext:
    """What the append judges the scans with: the topic's config, its rules and the clock reading."""

    config: LogValidationConfig
    rules: RecordRules
    now_ms: int


def settle_ahead(
    scans: Sequence[RecordsScan | None],
    batch_types: Sequence[TimestampType | None],
    texts: Sequence[Callable[[Record], str] | None],
    context: AppendContext,
    *,
    in_place: bool,
    target: Compression,
) -> Ahead | None:
    """The batches settled from their scans, or None when one of them cannot be. ``in_place``: the
    batches are kept if their inner offsets run in step (Kafka's in-place path); ``target``: the codec
    a rebuild writes."""
    if not scans:
        return None
    errors = []
    for scan, batch_type, text in zip(scans, batch_types, texts, strict=True):
        judged = _judged(scan, batch_type, text, context, in_place)
        if judged is None:
            return None
        errors.append(judged)
    if in_place and all(scan.offsets_in_order for scan in scans):
        return Ahead(errors, None)
    shared = scans[-1].rebuilt
    if shared is None or not _fits(shared, target, context.config):
        return None
    if any(scan.rebuilt is not shared for scan in scans) or shared.count != sum(s.count for s in scans):
        return None  # not every batch's records went into it
    return Ahead(errors, shared)


def _judged(
    scan: RecordsScan | None,
    batch_type: TimestampType | None,
    text: Callable[[Record], str] | None,
    context: AppendContext,
    in_place: bool,
) -> list[tuple[int, int, str]] | None:
    if scan is None or scan.failure is not None or batch_type is None or text is None:
        return None
    if scan.window is None:  # read ahead without the topic's rules: only a clear answer will do
        return [] if in_place and _clears(scan, batch_type, context.rules) else None
    if not scan.window.covers(context.config, context.now_ms):
        return None
    rule_error = context.rules.error
    return [
        (shape.index, *error)
        for shape in scan.suspects
        if (error := rule_error(shape, batch_type, text)) is not None
    ]


def _fits(built: StreamedV2Batch, codec: Compression, config: LogValidationConfig) -> bool:
    """Whether the batch written ahead is the one a rebuild with ``codec`` writes now."""
    return (
        built.codec == codec
        and built.level == config.compression_level(codec)
        and built.keep_limit == config.max_message_bytes
    )


def _clears(scan: RecordsScan, batch_type: TimestampType, rules: RecordRules) -> bool:
    """Whether the records of ``scan`` keep the batch in place and none of them can break a rule of
    ``RecordRules.error``, judged from the scan's totals alone; if unsure, no."""
    if not scan.offsets_in_order:
        return False
    if rules.compacted and scan.has_null_key:
        return False
    create_time = rules.timestamp_type == TimestampType.CREATE_TIME
    if batch_type == TimestampType.LOG_APPEND_TIME and (not create_time or scan.has_no_timestamp):
        return False
    if create_time and scan.lowest_timestamp is not None:
        now, low, high = rules.now_ms, scan.lowest_timestamp, scan.highest_timestamp
        if not all(-_SAFE < value < _SAFE for value in (now, low, high)):
            return False  # near Java's wrap-around: the per-record check decides
        if low < now - rules.timestamp_before_max_ms or high > now + rules.timestamp_after_max_ms:
            return False
    return True
