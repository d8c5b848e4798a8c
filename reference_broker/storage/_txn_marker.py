"""The COMMIT or ABORT marker a control batch carries, as the producer state reads it. Appends, log
replay and segment recovery all need it, so it sits below all three."""

from __future__ import annotations

from kconform.codecs import DecodeError
from kconform.codecs.records import ControlRecordType, decode_batch, decode_end_txn_marker

__all__ = ["EndTxnMarkerInfo", "end_txn_marker_of"]

EndTxnMarkerInfo = tuple[int, int, bool]
"""(coordinator epoch, record timestamp, is COMMIT) of a COMMIT or ABORT marker."""


def end_txn_marker_of(batch_bytes: bytes) -> EndTxnMarkerInfo | None:
    """The marker in a control batch, or None for an empty one (compaction leaves those) or one that
    is not a transaction marker."""
    batch = decode_batch(batch_bytes, verify_crc=False)
    if not batch.records:
        return None
    record = batch.records[0]
    try:
        marker = decode_end_txn_marker(record)
    except DecodeError:
        return None
    if marker.type not in (ControlRecordType.COMMIT, ControlRecordType.ABORT):
        return None
    return marker.coordinator_epoch, record.timestamp, marker.type == ControlRecordType.COMMIT
