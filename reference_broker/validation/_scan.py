"""A compressed magic 2 batch's records read once, a piece at a time, ahead of validation: what
LogValidator's in-place path needs of them (count, timestamps, keys, offsets), or why reading them
fails. The records are looked at and dropped, never held, as Kafka's in-place path reads them with
``DefaultRecordBatch.skipKeyValueIterator``; the batch is then stored as the producer compressed it.

``scan_steps`` is a generator that does a bounded piece of work per step, so a driver can pause
between steps (``_paced``); its return value is the ``RecordsScan``. The log validator (``_log``)
decides from the scan and its own clock whether any record could break a rule; if one could, it reads
the records whole as before, so every rule and message stays as it was."""

from __future__ import annotations

from collections.abc import Generator

from kconform.codecs import DecodeError
from kconform.codecs.compression import Compression
from kconform.codecs.records import iter_record_chunks

from ._framing import FramedBatch
from ._types import RecordsScan

__all__ = ["RecordsScan", "needs_scan", "scan_steps"]

_NO_TIMESTAMP = -1
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1


def needs_scan(batch: FramedBatch) -> bool:
    """A compressed magic 2 batch whose header was read: its records are worth reading ahead."""
    header = batch.header
    return header is not None and batch.extent.magic >= 2 and header.compression != Compression.NONE


def scan_steps(data: bytes, batch: FramedBatch) -> Generator[None, None, RecordsScan]:
    """Read the records of ``batch`` (in ``data``) a bounded piece per step."""
    tally = _Tally()
    try:
        for records in iter_record_chunks(data, batch.extent.position):
            tally.add(records)
            yield
    except DecodeError as exc:
        return tally.result(exc)
    return tally.result(None)


class _Tally:
    def __init__(self) -> None:
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
        if _NO_TIMESTAMP in stamps:
            self.has_no_timestamp = True
            stamps = [s for s in stamps if s != _NO_TIMESTAMP]
        if stamps:
            low, high = min(stamps), max(stamps)
            self.lowest = low if self.lowest is None else min(self.lowest, low)
            self.highest = high if self.highest is None else max(self.highest, high)
        if not self.has_null_key and None in [record.key for record in records]:
            self.has_null_key = True
        if self.offsets_in_order:
            expected = range(self.count, self.count + len(records))
            self.offsets_in_order = [record.offset for record in records] == list(expected)
        self.count += len(records)

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
        )
