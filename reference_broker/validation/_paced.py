"""Reading a Produce request's compressed records ahead of validation without holding the event loop:
the scan (``_scan``) runs a step at a time and gives the loop back every few milliseconds, and only a
few scans run at once per loop, so a burst of compression bombs can take neither the loop nor the
memory (Kafka bounds the same work with its fixed pool of request handler threads).

The loop is given back with a short sleep, not ``sleep(0)``: one loop turn is not enough for another
connection's request (its read, handler and write take several turns), while a sleep lets the loop
run every other ready callback until the timer is due.

The clock is an argument; the default is the monotonic clock, read only to size the time slices."""

from __future__ import annotations

import asyncio
import time
import weakref
from collections.abc import Callable
from dataclasses import replace

from ._framing import FramedRecords
from ._scan import ScanPlan, needs_scan, scan_steps
from ._types import LogValidationConfig

__all__ = ["PAUSE_S", "SCANS_AT_ONCE", "TIME_SLICE_S", "scan_compressed_records"]

TIME_SLICE_S = 0.005  # the longest the loop is held between pauses (about one step more)
PAUSE_S = 0.001  # the time the rest of the loop gets after each slice
SCANS_AT_ONCE = 2  # per event loop: each holds a decompression window and a piece of payload
_limits: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = weakref.WeakKeyDictionary()


def _limit() -> asyncio.Semaphore:
    loop = asyncio.get_running_loop()
    limit = _limits.get(loop)
    if limit is None:
        limit = _limits[loop] = asyncio.Semaphore(SCANS_AT_ONCE)
    return limit


async def scan_compressed_records(
    records: FramedRecords | None,
    *,
    time_slice_s: float = TIME_SLICE_S,
    pause_s: float = PAUSE_S,
    clock: Callable[[], float] = time.monotonic,
    max_batch_bytes: int | None = None,
    config: LogValidationConfig | None = None,
    now_ms: int | None = None,
) -> FramedRecords | None:
    """``records`` with every compressed magic 2 batch's records read (``FramedBatch.records_scan``),
    pausing ``pause_s`` for the loop at least every ``time_slice_s`` of ``clock``; unchanged when none
    is. A batch above ``max_batch_bytes`` (the topic's ``max.message.bytes``) is left unread: validation
    refuses it before reading any record (UnifiedLog.analyzeAndValidateRecords).

    Given the topic's ``config`` and the broker's wall clock ``now_ms`` (read before the append reads
    it), the read-ahead also gathers the records that could break a rule and writes the batch a
    rebuild would write, uncompressed magic 2 batches the topic compresses included (``_scan``)."""
    plan = None if config is None or now_ms is None else ScanPlan(config, now_ms)
    if plan is not None and max_batch_bytes is None:
        max_batch_bytes = config.max_message_bytes

    def wanted(batch) -> bool:
        return needs_scan(batch, plan) and (max_batch_bytes is None or batch.extent.size <= max_batch_bytes)

    if records is None or not any(wanted(batch) for batch in records.batches):
        return records
    scanned = []
    rebuilt = None  # the batch written for a rebuild, which takes every batch's records in turn
    async with _limit():
        pause_at = clock() + time_slice_s  # one slice may span batches: legacy messages are many small ones
        for batch in records.batches:
            if wanted(batch):
                steps = (
                    scan_steps(records.data, batch)
                    if plan is None
                    else scan_steps(records.data, batch, plan, rebuilt)
                )
                while True:
                    try:
                        next(steps)
                    except StopIteration as done:
                        batch = replace(batch, records_scan=done.value)
                        rebuilt = done.value.rebuilt or rebuilt
                        break
                    if clock() >= pause_at:
                        await asyncio.sleep(pause_s)
                        pause_at = clock() + time_slice_s
            scanned.append(batch)
    return replace(records, batches=tuple(scanned))
