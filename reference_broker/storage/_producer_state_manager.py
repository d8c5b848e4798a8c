"""The producer state of one partition (Kafka's ``ProducerStateManager``): the entry of every
producer id, the offset up to which the log has been applied (``map_end_offset``) and the snapshot
files ``<offset>.snapshot`` it is saved to on roll and close and reloaded from on open. Replaying the
log after a snapshot is ``_producer_replay``'s job; this module never reads a segment.

It also knows which transactions hold the last stable offset back: the open ones (each producer's
``current_txn_first_offset``) and the completed ones whose marker is not yet below the high watermark
(Kafka's ``unreplicatedTxns``). The first offset of either kind is the first unstable offset; the
LSO written into the transaction index for a completed transaction is the first offset of the
oldest transaction of another producer still open (``lastStableOffset(completedTxn)``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType

from kconform.codecs.records import BatchHeader

from ._files import SNAPSHOT_SUFFIX, file_name, offset_from_file_name
from ._producer_snapshot import CorruptSnapshot, read_snapshot, write_snapshot
from ._producer_state import (
    NO_SEQUENCE,
    AppendOrigin,
    BatchMetadata,
    ProducerStateEntry,
    ProducerStateError,
    Verdict,
    VerdictKind,
    append_data_batch,
    append_end_txn_marker,
    check_sequence,
    increment_sequence,
    merge_entries,
)
from ._txn_index import CompletedTxn
from ._txn_marker import EndTxnMarkerInfo, end_txn_marker_of

__all__ = ["PendingAppend", "ProducerStateManager"]

_OK = Verdict(VerdictKind.OK)


@dataclass(slots=True)
class PendingAppend:
    """An append's effect on the producer state, checked and not yet applied: the updated entries
    (``ProducerStateManager.commit`` applies them once the batches are written) and the transactions
    its markers complete. ``duplicate_of`` is set when the append is a producer's retry of a cached
    batch: nothing is to be written, and the answer carries that batch's offsets."""

    entries: dict[int, ProducerStateEntry] = field(default_factory=dict)
    completed: list[CompletedTxn] = field(default_factory=list)
    duplicate_of: BatchMetadata | None = None


class ProducerStateManager:
    def __init__(self, directory: Path, producer_id_expiration_ms: int) -> None:
        self.directory = directory
        self._expiration_ms = producer_id_expiration_ms
        self._producers: dict[int, ProducerStateEntry] = {}
        self._ongoing: dict[int, int] = {}  # producer id -> first offset of its open transaction
        self._unreplicated: dict[int, tuple[int, int]] = {}  # first offset -> (producer id, marker offset)
        self._snapshots: dict[int, Path] = {}
        self.map_end_offset = 0
        self._last_snap_offset = 0
        self._scan_snapshots()

    def _scan_snapshots(self) -> None:
        self._snapshots = {}
        for path in self.directory.iterdir():
            if path.name.endswith(SNAPSHOT_SUFFIX) and path.is_file():
                offset = offset_from_file_name(path.name)
                if offset is not None:
                    self._snapshots[offset] = path

    # --- state ---------------------------------------------------------------------------------

    @property
    def producers(self) -> Mapping[int, ProducerStateEntry]:
        return MappingProxyType(self._producers)

    def last_entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self._producers.get(producer_id)

    @property
    def is_empty(self) -> bool:
        return not self._producers and not self._unreplicated

    def is_expired(self, entry: ProducerStateEntry, now_ms: int) -> bool:
        return entry.current_txn_first_offset is None and now_ms - entry.last_timestamp >= self._expiration_ms

    def remove_expired_producers(self, now_ms: int) -> None:
        for producer_id in [p for p, e in self._producers.items() if self.is_expired(e, now_ms)]:
            del self._producers[producer_id]

    def _put(self, entry: ProducerStateEntry) -> None:
        # A transaction leaves the open set only through ``complete_txn``, as in Kafka: when one append
        # completes several, each one's LSO must still see the others as open.
        self._producers[entry.producer_id] = entry
        if entry.current_txn_first_offset is not None:
            self._ongoing[entry.producer_id] = entry.current_txn_first_offset

    def _clear(self) -> None:
        self._producers.clear()
        self._ongoing.clear()
        self._unreplicated.clear()

    # --- transactions --------------------------------------------------------------------------

    @property
    def ongoing_transactions(self) -> Mapping[int, int]:
        """Producer id -> first offset of each open transaction."""
        return MappingProxyType(self._ongoing)

    @property
    def first_undecided_offset(self) -> int | None:
        """The first offset of the oldest open transaction."""
        return min(self._ongoing.values(), default=None)

    @property
    def first_unstable_offset(self) -> int | None:
        """The first offset of the oldest transaction that is open, or complete with its marker not
        yet below the high watermark; None when there is none."""
        undecided = self.first_undecided_offset
        unreplicated = min(self._unreplicated, default=None)
        if undecided is None or unreplicated is None:
            return undecided if unreplicated is None else unreplicated
        return min(undecided, unreplicated)

    def last_stable_offset(self, completed: CompletedTxn) -> int:
        """The LSO to record for a transaction that has just completed: the first offset of the
        oldest open transaction of any other producer, else the offset after its marker."""
        others = [first for pid, first in self._ongoing.items() if pid != completed.producer_id]
        return min(others) if others else completed.last_offset + 1

    def complete_txn(self, completed: CompletedTxn) -> None:
        """The transaction stays unstable until the high watermark passes its marker."""
        if self._ongoing.get(completed.producer_id) == completed.first_offset:
            del self._ongoing[completed.producer_id]
        self._unreplicated[completed.first_offset] = (completed.producer_id, completed.last_offset)

    def on_high_watermark_updated(self, high_watermark: int) -> None:
        self._remove_unreplicated_below(high_watermark)

    def _remove_unreplicated_below(self, offset: int) -> None:
        for first in [f for f, (_, last) in self._unreplicated.items() if last < offset]:
            del self._unreplicated[first]

    # --- appends -------------------------------------------------------------------------------

    def prepare(
        self,
        pending: dict[int, ProducerStateEntry],
        header: BatchHeader,
        marker: EndTxnMarkerInfo | None,
        *,
        origin: AppendOrigin,
        transaction_version: int = 0,
        completed: list[CompletedTxn] | None = None,
    ) -> Verdict:
        """Check one batch of an append and record its effect in ``pending`` (the entries updated so
        far by this append, applied with ``commit``). Returns DUPLICATE (nothing should be written),
        an error verdict, or OK. A marker that closes a transaction with data in it adds that
        transaction to ``completed`` (an empty one changes no LSO and no index)."""
        producer_id = header.producer_id
        current = self._producers.get(producer_id)
        updated = pending.get(producer_id)
        if updated is None:
            updated = replace(current, batches=()) if current is not None else ProducerStateEntry(producer_id)
        if header.is_control:
            if marker is None:
                pending[producer_id] = updated
                return _OK
            coordinator_epoch, timestamp, is_commit = marker
            first_offset = updated.current_txn_first_offset
            entry, verdict = append_end_txn_marker(
                updated,
                producer_epoch=header.producer_epoch,
                coordinator_epoch=coordinator_epoch,
                timestamp=timestamp,
                origin=origin,
                transaction_version=transaction_version,
            )
            if verdict.ok and first_offset is not None and completed is not None:
                completed.append(CompletedTxn(producer_id, first_offset, header.base_offset, not is_commit))
        else:
            last_seq = (
                NO_SEQUENCE
                if header.base_sequence == NO_SEQUENCE
                else increment_sequence(header.base_sequence, header.last_offset_delta)
            )
            verdict = check_sequence(
                current if current is not None else ProducerStateEntry(producer_id),
                header.producer_epoch,
                header.base_sequence,
                last_seq,
                updated=updated,
                origin=origin,
            )
            if not verdict.ok:
                return verdict
            entry, verdict = append_data_batch(
                updated,
                producer_epoch=header.producer_epoch,
                last_seq=last_seq,
                first_offset=header.base_offset,
                last_offset=header.last_offset,
                max_timestamp=header.max_timestamp,
                is_transactional=header.is_transactional,
            )
        if verdict.ok:
            pending[producer_id] = entry
        return verdict

    def check_append(
        self,
        data: bytes | bytearray,
        batches: Iterable[tuple[int, BatchHeader]],
        *,
        origin: AppendOrigin,
        transaction_version: int = 0,
    ) -> PendingAppend:
        """Every batch of an append (the bytes ``data`` and each batch's position and header) through
        ``prepare``, in order (Kafka's ``analyzeAndValidateProducerState``). Stops at a duplicate;
        raises ``ProducerStateError`` for the first batch refused. Nothing is applied yet."""
        pending = PendingAppend()
        for position, header in batches:
            if header.producer_id < 0:
                continue
            marker = None
            if header.is_control:
                marker = end_txn_marker_of(bytes(data[position : position + header.size_in_bytes]))
            verdict = self.prepare(
                pending.entries,
                header,
                marker,
                origin=origin,
                transaction_version=transaction_version,
                completed=pending.completed,
            )
            if verdict.kind is VerdictKind.DUPLICATE:
                pending.duplicate_of = verdict.duplicate_of
                return pending
            if verdict.is_error:
                raise ProducerStateError(verdict)
        return pending

    def commit(self, pending: Mapping[int, ProducerStateEntry]) -> None:
        for producer_id, entry in pending.items():
            self._put(merge_entries(self._producers.get(producer_id), entry))

    def apply_replicated(self, header: BatchHeader, marker: EndTxnMarkerInfo | None) -> CompletedTxn | None:
        """Apply one batch already in the log, refusing nothing (log replay); returns the transaction
        its marker completes, which the caller then passes to ``complete_txn``."""
        pending: dict[int, ProducerStateEntry] = {}
        completed: list[CompletedTxn] = []
        self.prepare(pending, header, marker, origin=AppendOrigin.REPLICATION, completed=completed)
        self.commit(pending)
        return completed[0] if completed else None

    # --- snapshots -----------------------------------------------------------------------------

    @property
    def snapshot_offsets(self) -> list[int]:
        return sorted(self._snapshots)

    def take_snapshot(self) -> None:
        """Write ``<map_end_offset>.snapshot`` unless the state has not moved since the last one."""
        if self.map_end_offset > self._last_snap_offset:
            path = self.directory / file_name(self.map_end_offset, SNAPSHOT_SUFFIX)
            write_snapshot(path, self._producers.values())
            self._snapshots[self.map_end_offset] = path
            self._last_snap_offset = self.map_end_offset

    def delete_snapshot(self, offset: int) -> None:
        path = self._snapshots.pop(offset, None)
        if path is not None:
            path.unlink(missing_ok=True)

    def latest_snapshot_offset(self) -> int | None:
        return max(self._snapshots) if self._snapshots else None

    def remove_stray_snapshots(self, segment_base_offsets: Sequence[int]) -> None:
        """Delete snapshots that match no segment, except the newest one if it lies above every
        segment (the one a clean shutdown writes at the log end offset)."""
        self._scan_snapshots()
        bases = set(segment_base_offsets)
        stray = [offset for offset in sorted(self._snapshots) if offset not in bases]
        for offset in stray[:-1]:
            self.delete_snapshot(offset)
        if stray and segment_base_offsets and stray[-1] < max(segment_base_offsets):
            self.delete_snapshot(stray[-1])

    def _load_from_snapshot(self, log_start_offset: int, now_ms: int) -> None:
        while self._snapshots:
            offset = max(self._snapshots)
            try:
                entries = read_snapshot(self._snapshots[offset])
            except (CorruptSnapshot, OSError):
                self.delete_snapshot(offset)
                continue
            for entry in entries:
                if not self.is_expired(entry, now_ms):
                    self._put(entry)
            self._last_snap_offset = self.map_end_offset = offset
            return
        self._last_snap_offset = self.map_end_offset = log_start_offset

    def truncate_and_reload(self, log_start_offset: int, log_end_offset: int, now_ms: int) -> None:
        """Drop snapshots outside (log start, log end]; if the state is not at the log end, reload it
        from the latest remaining snapshot (the caller then replays the log after it)."""
        for offset in list(self._snapshots):
            if offset > log_end_offset or offset <= log_start_offset:
                self.delete_snapshot(offset)
        if log_end_offset != self.map_end_offset:
            self._clear()  # the log is cut at or below the high watermark: no unreplicated marker left
            self._load_from_snapshot(log_start_offset, now_ms)
        else:
            self.on_log_start_offset_incremented(log_start_offset)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        self._clear()
        for snapshot_offset in list(self._snapshots):
            self.delete_snapshot(snapshot_offset)
        self._last_snap_offset = 0
        self.map_end_offset = offset

    def on_log_start_offset_incremented(self, log_start_offset: int) -> None:
        self._remove_unreplicated_below(log_start_offset)
        self.map_end_offset = max(self.map_end_offset, log_start_offset)
        latest = self.latest_snapshot_offset()
        self._last_snap_offset = latest if latest is not None else log_start_offset
