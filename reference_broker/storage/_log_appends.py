"""Appending to a partition's log (Kafka's ``UnifiedLog.append``): frame the batches (or take the
caller's headers), assign a leader's offsets or check a follower's, check the producer state, then
record leader epochs, roll if due, write, and apply the producer state. A mixin of ``PartitionLog``."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kconform.codecs.records import BatchHeader

from ._append_framing import assign_leader_offsets, check_follower_offsets, frame_append, max_timestamp_of
from ._errors import LogSyncFailed, LogWriteFailed, RecordBatchTooLarge
from ._leader_epoch import LeaderEpochCache
from ._local_log import LocalLog
from ._producer_state import AppendOrigin
from ._producer_state_manager import ProducerStateManager
from ._results import AppendInfo
from ._time_index import NO_TIMESTAMP

__all__ = ["LogAppends"]


class LogAppends:
    """``PartitionLog.append``. Works on the log's state below and on its ``_check_open``, ``_roll``
    and ``_maybe_flush``."""

    topic: str
    partition: int
    _clock: Callable[[], int]
    _local: LocalLog
    _producers: ProducerStateManager
    _epochs: LeaderEpochCache
    _log_start_offset: int
    _high_watermark: int

    def append(
        self,
        batches: bytes | bytearray | memoryview,
        *,
        leader_epoch: int = -1,
        assign_offsets: bool = True,
        origin: AppendOrigin | None = None,
        stamp_log_append_time: bool = False,
        transaction_version: int = 0,
        headers: Sequence[BatchHeader] | None = None,
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
        with offsets out of order.

        ``headers``, one per batch in order, are the batches' headers as the caller has already parsed
        or built them (the produce path's validation): the log takes them as they are instead of
        parsing the batches again (their CRC is the caller's word)."""
        self._check_open()
        origin = origin or (AppendOrigin.CLIENT if assign_offsets else AppendOrigin.REPLICATION)
        if assign_offsets and leader_epoch < 0:
            raise ValueError("a leader append needs the partition's leader epoch (>= 0)")
        data = batches if isinstance(batches, bytearray) else bytearray(batches)
        framed = frame_append(data, headers)
        if not framed:
            return AppendInfo(-1, -1, NO_TIMESTAMP, -1, -1, self._log_start_offset, 0, 0, 0)
        now = self._clock()
        log_append_time = now if (assign_offsets and stamp_log_append_time) else -1
        if assign_offsets:
            framed = assign_leader_offsets(
                data, framed, self._local.log_end_offset, leader_epoch, log_append_time
            )
        else:
            check_follower_offsets(framed, self._local.log_end_offset, f"{self.topic}-{self.partition}")
        first_offset = framed[0].header.base_offset
        last_offset = framed[-1].header.last_offset
        max_timestamp, offset_of_max_timestamp = max_timestamp_of(framed)
        if log_append_time >= 0:
            offset_of_max_timestamp = last_offset
        if len(data) > self._local.config.segment_bytes:
            raise RecordBatchTooLarge(
                f"append of {len(data)} bytes to {self.topic}-{self.partition} exceeds segment.bytes "
                f"({self._local.config.segment_bytes})"
            )
        record_count = sum(h.record_count for _, h in framed)

        pending = self._producers.check_append(
            data, framed, origin=origin, transaction_version=transaction_version
        )
        original = pending.duplicate_of
        if original is not None:
            return AppendInfo(
                first_offset=original.first_offset,
                last_offset=original.last_offset,
                max_timestamp=original.timestamp,
                offset_of_max_timestamp=original.last_offset,
                log_append_time=original.timestamp,
                log_start_offset=self._log_start_offset,
                batch_count=len(framed),
                record_count=record_count,
                size_in_bytes=len(data),
                duplicate=True,
            )

        for _, header in framed:
            if header.partition_leader_epoch >= 0:
                self._epochs.assign(header.partition_leader_epoch, header.base_offset)
        try:
            if self._local.should_roll(len(data), max_timestamp, last_offset, now):
                self._roll(first_offset)
            segment = self._local.active
            self._local.append(data, last_offset, max_timestamp, offset_of_max_timestamp)
        except OSError as exc:  # the log end, high watermark and producer state are as before the append
            where = f"{self.topic}-{self.partition}"
            raise LogWriteFailed(
                f"append to {where} at offset {first_offset} failed: {exc.strerror or exc}"
            ) from exc
        if self._high_watermark >= self._local.log_end_offset:
            self._high_watermark = self._local.log_end_offset
        self._producers.commit(pending.entries)
        self._producers.map_end_offset = last_offset + 1
        # each LSO is taken before its transaction leaves the open set; the producer state moves on
        # before any file is touched, so a failing index write cannot leave a transaction open
        indexed = []
        for txn in pending.completed:
            indexed.append((txn, self._producers.last_stable_offset(txn)))
            self._producers.complete_txn(txn)
        try:
            for txn, last_stable in indexed:
                segment.update_txn_index(txn, last_stable)
            self._maybe_flush(now)
        except OSError as exc:  # written, not made durable: the records stay
            where = f"{self.topic}-{self.partition}"
            raise LogSyncFailed(
                f"append to {where} at offset {first_offset} is written but not synced: {exc.strerror or exc}"
            ) from exc
        return AppendInfo(
            first_offset=first_offset,
            last_offset=last_offset,
            max_timestamp=max_timestamp,
            offset_of_max_timestamp=offset_of_max_timestamp,
            log_append_time=log_append_time,
            log_start_offset=self._log_start_offset,
            batch_count=len(framed),
            record_count=record_count,
            size_in_bytes=len(data),
        )
