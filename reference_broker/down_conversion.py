"""Down-conversion of stored batches for old fetchers, as Kafka 3.x and earlier do it.

A broker whose log holds magic 2 batches answers Fetch v0-1 with magic 0 messages and Fetch v2-3 with
magic 1 messages (``KafkaApis.handleFetchRequest``: ``downConvertMagic``), rebuilding each batch the way
``RecordsUtil.downConvert`` and ``convertRecordBatch`` do: control batches (transaction markers) are
dropped, headers are dropped, each batch keeps its compression codec and timestamp type, and a
log-append-time batch stamps every message with the batch's max timestamp. Kafka 4.0 removed those
Fetch versions (KIP-896), so only a broker emulating an older release gets here.

Pure: bytes in, bytes out; the fetch handler decides when to call it."""

from __future__ import annotations

from kconform.codecs.compression import Compression
from kconform.codecs.records import Record, TimestampType, encode_batch, iter_batch_extents, iter_batches

__all__ = ["UnsupportedCompressionForDownConversion", "down_convert", "fetch_magic"]


class UnsupportedCompressionForDownConversion(ValueError):
    """A zstd batch cannot become magic 0/1 (``RecordsUtil.downConvert`` throws
    UnsupportedCompressionTypeException; the partition is answered UNSUPPORTED_COMPRESSION_TYPE)."""


def fetch_magic(fetch_version: int) -> int | None:
    """The newest record format a Fetch version can carry, or None where it carries any (v4+)."""
    if fetch_version <= 1:
        return 0
    if fetch_version <= 3:
        return 1
    return None


def down_convert(records: bytes | memoryview, to_magic: int, first_offset: int) -> bytes:
    """``records`` (whole batches as stored) rewritten for a fetcher that reads ``to_magic`` at most.

    Batches already at or below ``to_magic`` pass through untouched. Of an uncompressed batch only the
    records from ``first_offset`` on are kept (the fetcher asked for those); a compressed batch is kept
    whole, as Kafka keeps it, since an old client skips what it did not ask for itself."""
    data = bytes(records)
    out: list[bytes] = []
    extents = list(iter_batch_extents(data))
    for extent, batch in zip(extents, iter_batches(data), strict=True):
        if batch.magic <= to_magic:
            out.append(data[extent.position : extent.position + extent.size])
            continue
        if batch.is_control:
            continue
        codec = batch.compression
        if codec is Compression.ZSTD:
            raise UnsupportedCompressionForDownConversion(
                f"batch at offset {batch.base_offset} is zstd-compressed"
            )
        kept = [r for r in batch.records if codec is not Compression.NONE or r.offset >= first_offset]
        if not kept:
            continue
        log_append = batch.timestamp_type is TimestampType.LOG_APPEND_TIME
        out.append(
            encode_batch(
                [Record(r.offset, r.timestamp, r.key, r.value) for r in kept],
                magic=to_magic,
                compression=codec,
                base_offset=kept[0].offset,
                timestamp_type=batch.timestamp_type if to_magic == 1 else TimestampType.CREATE_TIME,
                log_append_time=batch.max_timestamp if log_append else None,
            )
        )
    return b"".join(out)
