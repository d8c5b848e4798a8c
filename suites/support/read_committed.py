"""What a read_committed consumer keeps of a fetched partition, for the transaction suites."""

from __future__ import annotations

from kconform.codecs.records import iter_batches

__all__ = ["values"]


def values(partition_data) -> list[bytes]:
    """What a read_committed consumer keeps: data records minus the aborted producers' batches."""
    aborted = {(a.producer_id, a.first_offset) for a in (partition_data.aborted_transactions or [])}
    skipping: set[int] = set()
    kept = []
    for batch in iter_batches(bytes(partition_data.records or b"")):
        if (batch.producer_id, batch.base_offset) in aborted:
            skipping.add(batch.producer_id)
        if batch.is_control:
            skipping.discard(batch.producer_id)
            continue
        if batch.producer_id not in skipping:
            kept.extend(r.value for r in batch.records)
    return kept
