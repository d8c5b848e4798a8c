"""Validation of produced records, as Kafka's leader does it before appending.

``validate_produce_records`` takes one partition's ``records`` from a Produce request and returns the
bytes to append (offsets, partition leader epoch and timestamps assigned, recompressed when the topic
says so) or raises ``RecordsRejected`` with Kafka's error code and where Kafka reports it. It is pure:
the clock reading is an argument.

A produce handler that wants Kafka's answer for a whole request calls ``check_request_records`` for
every partition before looking up topics, then ``check_partition_records`` for every partition of a
known topic before appending anything; a rejection with scope REQUEST from either fails the whole
request, as in Kafka. ``validate_produce_records`` runs both again, so calling it alone is safe.

Each of the three takes a partition's records as bytes or, parsed once, as ``frame_records`` gives
them: a handler frames every partition's records as the request comes in and passes the framing on,
so each batch's header is read once on the way to the log (``AppendedBatch.header`` is what the log
append is given). A handler on an event loop first awaits ``scan_compressed_records`` with the topic's
config and its clock: it reads the records ahead a piece at a time, yielding to the loop, keeps those
that could break a rule and writes the batch a rebuild would write (another codec, inner offsets out of
step, legacy messages), so that validation need not read them again (a compression bomb then holds
neither the loop nor the memory).
"""

from ._framing import FramedBatch, FramedRecords, frame_records
from ._log import validate_produce_records
from ._paced import scan_compressed_records
from ._request import check_partition_records, check_request_records
from ._types import AppendedBatch, LogValidationConfig, RecordsRejected, RejectionScope, ValidatedAppend

__all__ = [
    "AppendedBatch",
    "FramedBatch",
    "FramedRecords",
    "LogValidationConfig",
    "RecordsRejected",
    "RejectionScope",
    "ValidatedAppend",
    "check_partition_records",
    "check_request_records",
    "frame_records",
    "scan_compressed_records",
    "validate_produce_records",
]
