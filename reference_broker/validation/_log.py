"""Validate a partition's produced records and assign their offsets, as Kafka's leader append does.

Follows, in order: ``UnifiedLog.analyzeAndValidateRecords`` (base offset 0, max.message.bytes, CRC,
codec id), ``LogValidator.validateMessagesAndAssignOffsets`` (one of three paths: in place without
compression, conversion of legacy messages, or the compressed path that keeps the batch in place or
rebuilds it), then the checks ``UnifiedLog.append`` makes on the result (max.message.bytes again after
a rebuild, segment.bytes). Kafka 4.0 writes magic 2 only, so legacy input (Produce v0-2) is always
converted. Producer state (sequence, epoch, transactions) is left to the caller, as Kafka checks it
after all of this.

Batch headers come from the records' framing (``_framing``), read once; the header of the batch to
append is derived from the producer's (a batch kept in place) or read once from the new batch (a
rebuilt one), and handed on with it so the log append does not parse it again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kconform.codecs import DecodeError
from kconform.codecs.compression import Compression
from kconform.codecs.errors import Errors
from kconform.codecs.records import (
    BatchExtent,
    BatchHeader,
    Record,
    StreamedV2Batch,
    TimestampType,
    decode_batch,
    decode_batch_header,
    patch_batch_header,
    set_batch_max_timestamp,
)

from ._ahead import Ahead, AppendContext, settle_ahead
from ._framing import FramedBatch, FramedRecords, framed, patched_header
from ._rebuild import build_records, seal_rebuilt
from ._records import (
    NO_TIMESTAMP,
    RecordRules,
    default_record_text,
    java_long,
    legacy_record_text,
    partial_record_text,
    raise_record_errors,
)
from ._request import check_partition_records, check_request_records
from ._scan_result import RecordsScan
from ._types import AppendedBatch, LogValidationConfig, RecordsRejected, ValidatedAppend

__all__ = ["validate_produce_records"]

_V2_HEADER_SIZE = 61  # DefaultRecordBatch.RECORD_BATCH_OVERHEAD
_KNOWN_CODECS = 4  # codec ids above name no CompressionType


def validate_produce_records(
    records: FramedRecords | bytes | bytearray | memoryview | None,
    *,
    produce_version: int,
    config: LogValidationConfig,
    now_ms: int,
    first_offset: int,
    partition_leader_epoch: int,
    topic_partition: str = "",
) -> ValidatedAppend:
    """Validate one partition's ``records`` from a Produce request as Kafka's leader does, and return
    the bytes to append with offsets from ``first_offset``, ``partition_leader_epoch`` and max
    timestamps set; or raise ``RecordsRejected`` with Kafka's error.

    ``records`` may be framed already (``frame_records``; the produce handler frames them once).
    ``now_ms`` is the broker's clock (Kafka reads it once per append). ``topic_partition`` is Kafka's
    ``topic-partition`` name, which appears in the record-error messages Kafka sends back.

    This also runs ``check_request_records`` and ``check_partition_records``, whose rejections may
    reach beyond this partition (see ``RecordsRejected.scope``); a handler that wants Kafka's answer
    for a whole request runs those two over every partition first, as Kafka does.
    """
    records = framed(records)
    check_request_records(records)
    batches = check_partition_records(records, produce_version=produce_version)
    if not batches:  # Produce v0-2 without one whole batch: Kafka appends nothing, and says offset -1
        return ValidatedAppend(bytearray(), -1, -1, NO_TIMESTAMP, -1, NO_TIMESTAMP, 0, (), True)
    assert records is not None  # check_partition_records refuses null records
    append = _LeaderAppend(
        records.data, config, now_ms, first_offset, partition_leader_epoch, topic_partition
    )
    result = append.validate(batches)
    if len(result.records) > config.segment_bytes:
        raise RecordsRejected(
            Errors.RECORD_LIST_TOO_LARGE,
            f"Message batch size is {len(result.records)} bytes in append to partition {topic_partition}, "
            f"which exceeds the maximum configured segment size of {config.segment_bytes}.",
        )
    return result


@dataclass(slots=True)
class _Batch:
    """One incoming batch after UnifiedLog's checks. Rejections Kafka only raises later are kept for
    that moment: ``count_error`` for LogValidator.validateBatch, ``records_error`` for reading records."""

    extent: BatchExtent
    header: BatchHeader | None
    count_error: str | None = None
    records_error: RecordsRejected | None = None
    scan: RecordsScan | None = None  # its records, read ahead

    @property
    def magic(self) -> int:
        return self.extent.magic

    @property
    def is_control(self) -> bool:
        return self.header is not None and self.header.is_control


@dataclass(slots=True)
class _Assigned:
    """What one of LogValidator's paths gives back: the batch to append and its header."""

    out: bytearray
    header: BatchHeader
    record_count: int
    max_timestamp: int
    offset_of_max_timestamp: int
    in_place: bool


def _invalid(message: str) -> RecordsRejected:
    # InvalidRecordException thrown (not collected): no message in the response, but the log start offset.
    return RecordsRejected(Errors.INVALID_RECORD, message, reports_log_start_offset=True)


def _crash(message: str) -> RecordsRejected:
    # A Java exception that is no ApiException, caught per partition: UNKNOWN_SERVER_ERROR.
    return RecordsRejected(Errors.UNKNOWN_SERVER_ERROR, message, reports_log_start_offset=True)


class _LeaderAppend:
    def __init__(
        self,
        data: bytes,
        config: LogValidationConfig,
        now_ms: int,
        first_offset: int,
        partition_leader_epoch: int,
        topic_partition: str,
    ) -> None:
        self.data = data
        self.config = config
        self.now_ms = now_ms
        self.first_offset = first_offset
        self.partition_leader_epoch = partition_leader_epoch
        self.tp = topic_partition
        self.timestamp_type = config.log_timestamp_type
        self.rules = RecordRules(
            self.timestamp_type,
            config.timestamp_before_max_ms,
            config.timestamp_after_max_ms,
            config.compacted,
            now_ms,
            topic_partition,
        )

    # --- UnifiedLog.analyzeAndValidateRecords ------------------------------------------------------

    def validate(self, framed_batches: Sequence[FramedBatch]) -> ValidatedAppend:
        batches = [self._analyze(batch) for batch in framed_batches]
        source = Compression.NONE
        for batch in batches:  # the last compressed batch names the source codec
            if batch.extent.compression_id:
                source = Compression(batch.extent.compression_id)
        forced = self.config.topic_compression
        target = source if forced is None else forced
        if source == Compression.NONE and target == Compression.NONE:
            if all(batch.magic == 2 for batch in batches):
                assigned = self._assign_in_place_uncompressed(batches)
            else:
                assigned = self._convert_uncompressed(batches)
        else:
            assigned = self._validate_compressed(batches, source, target)
        return self._result(assigned)

    def _analyze(self, framed_batch: FramedBatch) -> _Batch:
        extent = framed_batch.extent
        if extent.magic >= 2 and extent.base_offset != 0:
            raise _invalid(
                f"The baseOffset of the record batch in the append to {self.tp} should be 0, "
                f"but it is {extent.base_offset}"
            )
        if extent.size > self.config.max_message_bytes:
            raise RecordsRejected(
                Errors.MESSAGE_TOO_LARGE,
                f"The record batch size in the append to {self.tp} is {extent.size} bytes which exceeds "
                f"the maximum configured value of {self.config.max_message_bytes}.",
            )
        if extent.magic >= 2 and extent.size < _V2_HEADER_SIZE:
            raise self._corrupt(
                f"the size {extent.size} is smaller than the minimum allowed overhead {_V2_HEADER_SIZE}"
            )
        if framed_batch.header_error is not None:
            return self._header_failure(extent, framed_batch.header_error)
        return _Batch(extent, framed_batch.header, scan=framed_batch.records_scan)

    def _corrupt(self, why: str) -> RecordsRejected:
        return RecordsRejected(
            Errors.CORRUPT_MESSAGE, f"Record is corrupt ({why}) in topic partition {self.tp}."
        )

    def _header_failure(self, extent: BatchExtent, exc: DecodeError) -> _Batch:
        """A header the codec refuses. Kafka checks the CRC first; the codec's header checks after it
        (negative count, unknown codec; for legacy, what the deep iterator later refuses) mean the
        CRC held."""
        field = exc.field or ""
        if field == "crc" or field.endswith("message_size"):
            raise self._corrupt(exc.reason)
        if extent.compression_id > _KNOWN_CODECS:
            raise _crash(f"Unknown compression type id: {extent.compression_id}")
        if extent.magic >= 2:
            if field == "record_count":
                return _Batch(
                    extent, None, count_error=f"Invalid reported count for record batch: {exc.reason}"
                )
            raise self._corrupt(exc.reason)
        if field in ("attributes", "value"):  # zstd or a null value in a legacy wrapper
            return _Batch(
                extent, None, records_error=_invalid(f"Invalid legacy compressed message: {exc.reason}")
            )
        raise self._corrupt(exc.reason)

    # --- LogValidator ------------------------------------------------------------------------------

    @staticmethod
    def _first_batch(batches: list[_Batch], source: Compression) -> _Batch:
        """getFirstBatchAndMaybeValidateNoMoreBatches."""
        first = batches[0]
        if (first.magic >= 2 or source != Compression.NONE) and len(batches) > 1:
            raise _invalid("Compressed outer record has more than one batch")
        return first

    def _validate_batch(self, first: _Batch, batch: _Batch) -> None:
        """validateBatch, for appends from clients."""
        tp = self.tp
        if first.magic != batch.magic:
            raise _invalid(
                f"Batch magic {batch.magic} is not the same as the first batch's magic byte {first.magic} "
                f"in topic partition {tp}"
            )
        if batch.count_error is not None:
            raise _invalid(f"{batch.count_error} in topic partition {tp}")
        if batch.records_error is not None and batch.header is None:
            return  # a legacy wrapper refused when its records are read
        header = batch.header
        if batch.magic >= 2:
            base = batch.extent.base_offset
            last = base + header.last_offset_delta
            count_from_offsets = last - base + 1
            if count_from_offsets <= 0:
                raise _invalid(f"Batch has an invalid offset range: [{base}, {last}] in topic partition {tp}")
            count = header.record_count
            if count <= 0:
                raise _invalid(f"Invalid reported count for record batch: {count} in topic partition {tp}")
            if count_from_offsets != count:
                raise _invalid(
                    f"Inconsistent batch offset range [{base}, {last}] and count of records {count} "
                    f"in topic partition {tp}"
                )
        if header.is_control:
            raise _invalid(f"Clients are not allowed to write control records in topic partition {tp}")
        if header.producer_id >= 0 and header.base_sequence < 0:
            raise _invalid(
                f"Invalid sequence number {header.base_sequence} in record batch with producerId "
                f"{header.producer_id} in topic partition {tp}"
            )

    def _read_records(self, batch: _Batch) -> list[Record]:
        """The batch's records, as Kafka's record iterators read them (failing as they fail)."""
        if batch.records_error is not None:
            raise batch.records_error
        legacy = batch.magic < 2
        if batch.scan is not None and batch.scan.failure is not None:
            raise self._records_failure(batch.scan.failure, legacy)
        try:
            decoded = decode_batch(self.data, batch.extent.position, verify_crc=legacy)
        except DecodeError as exc:
            raise self._records_failure(exc, legacy) from None
        records = decoded.records
        if not legacy:  # base timestamp + delta wraps in Java's long arithmetic
            for record in records:
                if not -(2**63) <= record.timestamp < 2**63:
                    record.timestamp = java_long(record.timestamp)
        return records

    def _records_failure(self, exc: DecodeError, legacy: bool) -> RecordsRejected:
        field = exc.field or ""
        if legacy and (field.endswith("crc") or field.endswith("message_size")):
            return self._corrupt(exc.reason)
        if not legacy and field == "records":  # the codec's stream is bad: KafkaException
            return _crash(f"Failed to decompress record stream: {exc.reason}")
        return _invalid(f"Found invalid record structure: {exc.reason}")

    @staticmethod
    def _record_text(batch: _Batch, partial_reader: bool):
        """How Kafka's record iterator for ``batch`` prints a record in an error message."""
        if batch.magic < 2:
            return legacy_record_text(batch.header)
        return partial_record_text if partial_reader else default_record_text

    def _settle_ahead(self, batches: list[_Batch], *, in_place: bool, target: Compression) -> Ahead | None:
        """The batches settled from what was read ahead of them (``_ahead``), or None."""
        readable = [batch.header is not None for batch in batches]
        return settle_ahead(
            [batch.scan for batch in batches],
            [b.header.timestamp_type if ok else None for b, ok in zip(batches, readable, strict=True)],
            [self._record_text(b, in_place) if ok else None for b, ok in zip(batches, readable, strict=True)],
            AppendContext(self.config, self.rules, self.now_ms),
            in_place=in_place,
            target=target,
        )

    def _assign_in_place_uncompressed(self, batches: list[_Batch]) -> _Assigned:
        """assignOffsetsNonCompressed: one uncompressed magic 2 batch, kept as the producer wrote it."""
        batch = self._first_batch(batches, Compression.NONE)
        self._validate_batch(batch, batch)
        records = self._read_records(batch)
        errors = []
        max_timestamp = NO_TIMESTAMP
        batch_type = batch.header.timestamp_type
        for index, record in enumerate(records):
            error = self.rules.error(record, batch_type, default_record_text)
            if error is not None:
                errors.append((index, *error))
            if record.timestamp > max_timestamp:
                max_timestamp = record.timestamp
        raise_record_errors(errors)
        last_offset = self.first_offset + len(records) - 1
        offset_of_max = last_offset if max_timestamp > NO_TIMESTAMP else -1
        if self.timestamp_type == TimestampType.LOG_APPEND_TIME:
            max_timestamp = self.now_ms
            offset_of_max = last_offset
        out, header = self._patched_copy(batch, last_offset, max_timestamp)
        return _Assigned(out, header, len(records), max_timestamp, offset_of_max, True)

    def _patched_copy(
        self, batch: _Batch, last_offset: int, max_timestamp: int
    ) -> tuple[bytearray, BatchHeader]:
        """The batch's bytes with setLastOffset, setPartitionLeaderEpoch and setMaxTimestamp applied,
        and their header."""
        extent = batch.extent
        out = bytearray(memoryview(self.data)[extent.position : extent.position + extent.size])
        base_offset = last_offset - batch.header.last_offset_delta
        patch_batch_header(out, base_offset=base_offset, partition_leader_epoch=self.partition_leader_epoch)
        set_batch_max_timestamp(out, timestamp_type=self.timestamp_type, max_timestamp=max_timestamp)
        header = patched_header(
            batch.header,
            out,
            base_offset=base_offset,
            partition_leader_epoch=self.partition_leader_epoch,
            max_timestamp=max_timestamp,
        )
        return out, header

    def _convert_uncompressed(self, batches: list[_Batch]) -> _Assigned:
        """convertAndAssignOffsetsNonCompressed: uncompressed legacy messages rebuilt as one batch."""
        first = self._first_batch(batches, Compression.NONE)
        ahead = self._settle_ahead(batches, in_place=False, target=Compression.NONE)
        kept: list[Record] = []
        for batch_index, batch in enumerate(batches):
            self._validate_batch(first, batch)
            if ahead is not None:  # read ahead: judged, and written for the rebuild
                raise_record_errors(ahead.errors[batch_index])
                continue
            records = self._read_records(batch)
            errors = []
            text = legacy_record_text(batch.header) if batch.magic < 2 else default_record_text
            batch_type = batch.header.timestamp_type
            for index, record in enumerate(records):
                error = self.rules.error(record, batch_type, text)
                if error is not None:
                    errors.append((index, *error))
                elif not errors:
                    kept.append(record)
            raise_record_errors(errors)
        return self._rebuild(kept if ahead is None else ahead.rebuilt, first, Compression.NONE)

    def _validate_compressed(
        self, batches: list[_Batch], source: Compression, target: Compression
    ) -> _Assigned:
        """validateMessagesAndAssignOffsetsCompressed: keep the batch when the codec stays and the inner
        offsets run 0, 1, 2 ...; otherwise rebuild it with the target codec."""
        in_place = source == target
        first = self._first_batch(batches, source)
        if first.magic != 2:
            in_place = False
        if source == Compression.NONE and first.is_control:
            in_place = True  # Kafka never compresses control records (clients' are refused below anyway)
        partial_reader = in_place and first.magic >= 2
        expected_offset = 0
        max_timestamp = NO_TIMESTAMP
        kept: list[Record] = []
        kept_count = 0
        ahead = self._settle_ahead(batches, in_place=partial_reader, target=target)
        for batch_index, batch in enumerate(batches):
            self._validate_batch(first, batch)
            if ahead is not None:  # read ahead and judged: nothing to read again
                raise_record_errors(ahead.errors[batch_index])
                kept_count += batch.scan.count
                expected_offset += batch.scan.count
                max_timestamp = max(max_timestamp, batch.scan.max_timestamp)
                continue
            records = self._read_records(batch)
            text = self._record_text(batch, partial_reader)
            batch_type = batch.header.timestamp_type
            errors = []
            for index, record in enumerate(records):
                expected = expected_offset
                expected_offset += 1
                error = self.rules.error(record, batch_type, text)
                if error is None and batch.magic > 0:
                    if record.timestamp > max_timestamp:
                        max_timestamp = record.timestamp
                    if record.offset != expected:  # old clients' v1 inner offsets: fixed, not refused
                        in_place = False
                if error is not None:
                    errors.append((index, *error))
                else:
                    kept.append(record)
            raise_record_errors(errors)
            kept_count = len(kept)
        if ahead is not None and ahead.rebuilt is not None:
            return self._rebuild(ahead.rebuilt, first, target)
        if not in_place:
            return self._rebuild(kept, first, target)
        last_offset = self.first_offset + kept_count - 1
        if self.timestamp_type == TimestampType.LOG_APPEND_TIME:
            max_timestamp = self.now_ms
        out, header = self._patched_copy(first, last_offset, max_timestamp)
        return _Assigned(out, header, kept_count, max_timestamp, last_offset, True)

    def _rebuild(
        self, records: list[Record] | StreamedV2Batch, first: _Batch, codec: Compression
    ) -> _Assigned:
        """buildRecordsAndAssignOffsets (``_rebuild``): from the records kept, or from the batch the
        read-ahead wrote of them."""
        built = (
            records if isinstance(records, StreamedV2Batch) else build_records(records, codec, self.config)
        )
        log_append = self.timestamp_type == TimestampType.LOG_APPEND_TIME
        encoded = seal_rebuilt(
            built,
            first.header,
            first_offset=self.first_offset,
            partition_leader_epoch=self.partition_leader_epoch,
            log_append_time_ms=self.now_ms if log_append else None,
            max_message_bytes=self.config.max_message_bytes,
            topic_partition=self.tp,
        )
        last_offset = self.first_offset + built.count - 1
        if log_append:
            max_timestamp, offset_of_max = self.now_ms, last_offset
        else:  # MemoryRecordsBuilder.info
            max_timestamp = built.max_timestamp
            offset_of_max = last_offset if max_timestamp != NO_TIMESTAMP else -1
        header = decode_batch_header(encoded, verify_crc=False)  # a new batch: its header, read once
        return _Assigned(bytearray(encoded), header, built.count, max_timestamp, offset_of_max, False)

    # --- result ------------------------------------------------------------------------------------

    def _result(self, assigned: _Assigned) -> ValidatedAppend:
        batch = AppendedBatch(assigned.header)
        log_append = self.timestamp_type == TimestampType.LOG_APPEND_TIME
        return ValidatedAppend(
            records=assigned.out,
            first_offset=self.first_offset,
            last_offset=self.first_offset + assigned.record_count - 1,
            max_timestamp=assigned.max_timestamp,
            offset_of_max_timestamp=assigned.offset_of_max_timestamp,
            log_append_time_ms=self.now_ms if log_append else NO_TIMESTAMP,
            record_count=assigned.record_count,
            batches=(batch,),
            in_place=assigned.in_place,
        )
