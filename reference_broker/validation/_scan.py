"""A magic 2 batch's records read once, a piece at a time, ahead of validation: what LogValidator needs
of them (count, timestamps, keys, offsets), or why reading them fails. The records are looked at and
dropped, never held, as Kafka's in-place path reads them with ``DefaultRecordBatch.skipKeyValueIterator``.

Given the topic's config and a clock reading (a ``ScanPlan``), the read-ahead does the rest of the
per-record work too: it keeps the records that could break a rule (``_suspects``), and when the batch
will be rebuilt (the topic's codec differs from the batch's, or its inner offsets are out of step) it
writes the rebuilt batch's records as it goes (``StreamedV2Batch``, compressed, at most
``max.message.bytes`` of it kept: Kafka's rebuilt batch is the producer's records re-encoded).

``scan_steps`` is a generator that does a bounded piece of work per step, so a driver can pause
between steps (``_paced``); its return value is the ``RecordsScan``. The log validator (``_log``)
judges the scan with its own clock; whatever the scan cannot settle, it reads whole as before, so every
rule and message stays as it was."""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass

from kconform.codecs import CodecError, DecodeError
from kconform.codecs.compression import Compression
from kconform.codecs.records import StreamedV2Batch, iter_record_chunks, legacy_record_chunks

from ._framing import FramedBatch
from ._scan_result import RecordsScan
from ._suspects import RecordShape, RuleWindow
from ._types import LogValidationConfig

__all__ = ["RecordsScan", "ScanPlan", "needs_scan", "scan_steps"]

_NO_TIMESTAMP = -1
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1


@dataclass(frozen=True, slots=True)
class ScanPlan:
    """The topic's config and the broker's clock reading before the read-ahead starts."""

    config: LogValidationConfig
    now_ms: int

    def target_codec(self, batch: FramedBatch) -> Compression:
        """The codec LogValidator rebuilds the batch with, should it rebuild it."""
        forced = self.config.topic_compression
        return Compression(batch.extent.compression_id) if forced is None else forced


def needs_scan(batch: FramedBatch, plan: ScanPlan | None = None) -> bool:
    """A magic 2 batch whose header was read and whose records are worth reading ahead: compressed,
    or (with a plan) to be compressed by a rebuild."""
    header = batch.header
    if header is None:
        return False
    if batch.extent.magic < 2:  # legacy messages are always rebuilt: read ahead only to rebuild them
        return plan is not None
    if header.compression != Compression.NONE:
        return True
    return plan is not None and plan.target_codec(batch) != Compression.NONE


def scan_steps(
    data: bytes, batch: FramedBatch, plan: ScanPlan | None = None, rebuilt: StreamedV2Batch | None = None
) -> Generator[None, None, RecordsScan]:
    """Read the records of ``batch`` (in ``data``) a bounded piece per step; with ``plan``, gather the
    suspects and write the rebuilt batch when it will be rebuilt: into ``rebuilt``, the one the previous
    batches' records went into, when given (legacy messages, each its own batch, are rebuilt as one)."""
    window = None
    if plan is not None:
        window = RuleWindow.starting(plan.config, batch.header.timestamp_type, plan.now_ms)
    if plan is None or not (batch.extent.magic < 2 or plan.target_codec(batch) != batch.header.compression):
        rebuilt = None
    elif rebuilt is None or rebuilt.codec != plan.target_codec(batch):
        rebuilt = _rebuilt_batch(plan, batch)
    tally = _Tally(window, rebuilt)
    failure = yield from _read(data, batch, tally)
    if failure is None and plan is not None and rebuilt is None and not tally.offsets_in_order:
        # inner offsets out of step: LogValidator rebuilds with the same codec, so read them again
        tally = _Tally(window, _rebuilt_batch(plan, batch))
        failure = yield from _read(data, batch, tally)
    return tally.result(failure)


def _rebuilt_batch(plan: ScanPlan, batch: FramedBatch) -> StreamedV2Batch:
    codec = plan.target_codec(batch)
    config = plan.config
    return StreamedV2Batch(codec, config.compression_level(codec), keep_limit=config.max_message_bytes)


def _read(data: bytes, batch: FramedBatch, tally: _Tally) -> Generator[None, None, DecodeError | None]:
    extent = batch.extent
    try:
        if extent.magic >= 2:
            chunks = iter_record_chunks(data, extent.position)
        else:
            chunks = legacy_record_chunks(data, extent.position, extent.position + extent.size)
        while True:
            try:
                records = next(chunks)
            except StopIteration as done:
                tally.rebase(done.value or 0)  # magic 1 inner offsets, relative to the wrapper's
                return None
            tally.add(records)
            yield
    except DecodeError as exc:
        return exc


class _Tally:
    def __init__(self, window: RuleWindow | None, rebuilt: StreamedV2Batch | None) -> None:
        self.window = window
        self.rebuilt = rebuilt
        self.suspects: list[RecordShape] = []
        self.count = 0
        self.max_timestamp = _NO_TIMESTAMP
        self.lowest: int | None = None
        self.highest: int | None = None
        self.has_no_timestamp = False
        self.has_null_key = False
        self.offsets_in_order = True

    def add(self, records: list) -> None:
        if not records:
            return
        stamps = [record.timestamp for record in records]
        if max(stamps) > _LONG_MAX or min(stamps) < _LONG_MIN:  # base + delta wrapped in Java
            stamps = [((s + 2**63) & 0xFFFFFFFFFFFFFFFF) - 2**63 for s in stamps]
        self.max_timestamp = max(self.max_timestamp, max(stamps))
        present = [s for s in stamps if s != _NO_TIMESTAMP]
        no_timestamp = len(present) != len(stamps)
        self.has_no_timestamp |= no_timestamp
        low = high = None
        if present:
            low, high = min(present), max(present)
            self.lowest = low if self.lowest is None else min(self.lowest, low)
            self.highest = high if self.highest is None else max(self.highest, high)
        null_key = None in [record.key for record in records]
        self.has_null_key |= null_key
        if self.offsets_in_order:
            expected = range(self.count, self.count + len(records))
            self.offsets_in_order = [record.offset for record in records] == list(expected)
        window = self.window
        if window is not None and not window.clears(low, high, no_timestamp, null_key):
            for i, (record, stamp) in enumerate(zip(records, stamps, strict=True)):
                if window.suspect(record, stamp):
                    self.suspects.append(RecordShape(self.count + i, record, stamp))
        if self.rebuilt is not None:
            start = self.rebuilt.count
            for i, (record, stamp) in enumerate(zip(records, stamps, strict=True)):
                record.offset = start + i  # renumbered, as the rebuild writes them
                record.timestamp = stamp
            try:
                self.rebuilt.add(records)
            except (CodecError, ValueError):
                self.rebuilt = None  # the whole-batch path reads them again and says why
        self.count += len(records)

    def rebase(self, base: int) -> None:
        for shape in self.suspects:
            shape.offset += base

    def result(self, failure: DecodeError | None) -> RecordsScan:
        return RecordsScan(
            self.count,
            self.max_timestamp,
            self.lowest,
            self.highest,
            self.has_no_timestamp,
            self.has_null_key,
            self.offsets_in_order,
            failure,
            self.window,
            tuple(self.suspects),
            None if failure is not None else self.rebuilt,
        )
