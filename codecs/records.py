"""Record batches (magic 2) and legacy message sets (magic 0 and 1), sans I/O.

Reading takes the ``records`` bytes of a Fetch or Produce partition and walks it batch by batch:
``iter_batch_headers`` only parses and checks each batch header (cheap, for brokers), ``iter_batches``
decodes the records too. Both stop quietly before a partial trailing batch, as Kafka's own readers do
(a fetch response may end in one); ``truncated_tail`` says how many bytes that tail holds.
``iter_record_chunks`` reads one magic 2 batch's records a few thousand at a time, decompressing a piece
at a time, for readers that keep none (a broker validating a produced batch).

Any bad input raises ``DecodeError`` (message ``"RecordBatch"`` or ``"LegacyMessageSet"``, version =
magic); no other exception escapes decoding, and every loop and allocation is bounded by the input size
(plus ``max_decompressed_size`` for compressed batches).

Writing (``encode_batch``) lays bytes out exactly as Kafka's Java ``MemoryRecordsBuilder`` does. The
v2 records are written by the native encoder when it is built (``_native``); the Python encoder is the
reference it must match byte for byte, and the fallback for whatever the native one declines.

This module is the public surface; the work is done in ``_batches`` (walking, and the entry points by
magic), ``_v2_reader`` and ``_v2_writer`` (magic 2), ``_legacy_message_sets`` (magic 0 and 1),
``_control_records`` (transaction markers) and ``_broker_batches`` (extents and in-place rewrites).
"""

from __future__ import annotations

from ._batch_model import BatchHeader, ControlRecordType, Record, RecordBatch, TimestampType
from ._batch_model import Headers as Headers  # the type of Record.headers, importable here as before
from ._batches import (
    decode_batch,
    decode_batch_header,
    encode_batch,
    iter_batch_headers,
    iter_batches,
    iter_record_chunks,
    truncated_tail,
)
from ._broker_batches import (
    BatchExtent,
    BatchFramingError,
    iter_batch_extents,
    patch_batch_header,
    set_batch_max_timestamp,
)
from ._control_records import (
    EndTransactionMarker,
    decode_control_key,
    decode_end_txn_marker,
    encode_control_key,
    encode_end_txn_marker,
    encode_end_txn_marker_batch,
)
from ._legacy_stream import legacy_record_chunks
from ._v2_build_stream import StreamedV2Batch
from ._v2_writer import encode_record_v2, seal_v2_batch

__all__ = [
    "BatchExtent",
    "BatchFramingError",
    "BatchHeader",
    "ControlRecordType",
    "EndTransactionMarker",
    "Record",
    "RecordBatch",
    "StreamedV2Batch",
    "TimestampType",
    "decode_batch",
    "decode_batch_header",
    "decode_control_key",
    "decode_end_txn_marker",
    "encode_batch",
    "encode_control_key",
    "encode_end_txn_marker",
    "encode_end_txn_marker_batch",
    "encode_record_v2",
    "iter_batch_extents",
    "iter_batch_headers",
    "iter_batches",
    "iter_record_chunks",
    "legacy_record_chunks",
    "patch_batch_header",
    "seal_v2_batch",
    "set_batch_max_timestamp",
    "truncated_tail",
]
