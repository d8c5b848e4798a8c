"""Reading a magic 2 batch's records a bounded piece at a time, for callers that look at each record once
and keep none (a broker validating a produced batch it will store as it came: Kafka's
``DefaultRecordBatch.skipKeyValueIterator`` over a ``ChunkedBytesStream``).

``v2_record_chunks`` gives the records ``v2_records`` gives, in lists of at most ``max_records``, and
fails on the same batches with a ``DecodeError`` naming the same field kind: a decompression failure
(``records``) wins over a count that cannot fit (``record_count``), which wins over a bad record
(``records[i]``), as in the whole-batch reader. So a bad record is only reported once the rest of the
payload has decompressed; until then the generator gives empty lists, the points where a caller may
pause. At most one piece of the payload and one record are held at a time."""

from __future__ import annotations

from collections.abc import Iterator

from ._batch_layout import COMPRESSION_MASK, TIMESTAMP_TYPE_BIT, V2_HEADER_SIZE, batch_error
from ._batch_model import Record
from ._decompress_stream import decompressed_chunks
from ._exceptions import DecodeError
from ._v2_reader import _read_v2_records as read_v2_records
from .compression import DecompressionError

__all__ = ["PIECE_SIZE", "v2_record_chunks"]

_MIN_RECORD_SIZE = 7  # the whole-batch reader's bound: a length byte and six one-byte fields
_MAX_RECORDS = 4096  # records per list handed out
# payload bytes per piece: a few thousand small records, a couple of milliseconds of reading
PIECE_SIZE = 16 * 1024
_MAX_VARINT_BYTES = 5


def v2_record_chunks(
    buf, pos: int, end: int, fields: tuple, max_size: int, chunk_size: int = PIECE_SIZE
) -> Iterator[list[Record]]:
    """The records of the magic 2 batch at ``buf[pos:end]`` whose header ``fields`` were read
    (``v2_header``), in lists."""
    codec = fields[5] & COMPRESSION_MASK
    count = fields[12]
    payload_at = pos + V2_HEADER_SIZE
    body = memoryview(buf)[payload_at:end]
    compressed_at = payload_at if codec else None
    reader = _PieceReader(count, fields[0], fields[7], compressed_at)
    total = 0
    failure: DecodeError | None = None
    try:
        if codec:
            pieces = decompressed_chunks(codec, body, magic=2, max_size=max_size, chunk_size=chunk_size)
        else:
            pieces = (body[i : i + chunk_size] for i in range(0, len(body), chunk_size))
        for piece in pieces:
            total += len(piece)
            if failure is None:
                try:
                    records = reader.feed(piece)
                except DecodeError as exc:
                    failure, records = exc, []  # reported once the payload is known to decompress
            else:
                records = []
            if records and fields[5] & TIMESTAMP_TYPE_BIT:
                for record in records:  # LogAppendTime: the batch's max timestamp (DefaultRecord.readFrom)
                    record.timestamp = fields[8]
            yield records
    except DecompressionError as exc:
        raise batch_error(2, str(exc), "records", payload_at) from None
    if count > total // _MIN_RECORD_SIZE:
        where = compressed_at if compressed_at is not None else payload_at - 4
        raise batch_error(2, f"record count {count} cannot fit in {total} bytes", "record_count", where)
    if failure is not None:
        raise failure
    reader.finish()


class _PieceReader:
    """Parses whole records as payload pieces arrive, keeping only the unparsed tail (and, for a record
    longer than a piece, its bytes until it is whole)."""

    def __init__(self, count: int, base_offset: int, base_timestamp: int, compressed_at: int | None):
        self.left = count
        self.count = count
        self.base_offset = base_offset
        self.base_timestamp = base_timestamp
        self.compressed_at = compressed_at
        self.tail = bytearray()
        self.needed = 0  # bytes the tail must hold before a record in it is whole
        self.consumed = 0  # payload bytes before ``tail``
        self.extra = 0  # payload bytes after the last record

    def feed(self, piece) -> list[Record]:
        if self.left == 0:
            self.extra += len(piece)
            return []
        self.tail += piece
        if len(self.tail) < self.needed:
            return []
        data = bytes(self.tail)
        records: list[Record] = []
        start = 0
        while self.left:
            whole, end, needed = _whole_records(data, start, min(self.left, _MAX_RECORDS))
            if needed < 0:  # a length no record can have: the reader says what is wrong with it
                self._read(data, start, len(data), 1)
                raise self._error("record length is malformed", start)
            if not whole:
                self.needed = needed
                break
            records += self._read(data, start, end, whole)
            start = end
        if self.left == 0:
            self.extra += len(data) - start
            start = len(data)
        self.consumed += start
        self.tail = bytearray(data[start:])
        return records

    def finish(self) -> None:
        """The payload ended: every record read, and nothing after the last."""
        if self.left:
            # what is left is not a whole record: reading it fails as the whole-batch reader does
            rest = bytes(self.tail)
            self._read(rest, 0, len(rest), 1)
            raise self._error("record runs past the end of the data", len(rest))
        if self.extra:
            raise self._error(f"{self.extra} bytes left after the last record", None)

    def _read(self, data: bytes, start: int, end: int, n: int) -> list[Record]:
        try:
            records = read_v2_records(
                data, start, end, n, self.base_offset, self.base_timestamp, self.compressed_at
            )
        except DecodeError as exc:  # whatever field the reader names, it is this record that is bad
            raise self._error(exc.reason, None) from None
        self.left -= n
        return records

    def _error(self, reason: str, at: int | None) -> DecodeError:
        field = f"records[{min(self.count - self.left, self.count - 1)}]"
        suffix = f" (decompressed byte {self.consumed + at})" if at is not None else ""
        return batch_error(2, reason + suffix, field, self.compressed_at)


def _whole_records(data: bytes, p: int, limit: int) -> tuple[int, int, int]:
    """How many whole records (at most ``limit``) start at ``data[p:]``, where they end, and how many
    bytes from there the next record needs to be whole (0: its length is not in yet; -1: it has a length
    no record can have, negative or a varint too long)."""
    end = len(data)
    n = 0
    while n < limit:
        q = p
        raw = 0
        shift = 0
        while True:
            if q >= end:
                return n, p, 0
            byte = data[q]
            q += 1
            raw |= (byte & 0x7F) << shift
            if byte < 0x80:
                break
            shift += 7
            if q - p >= _MAX_VARINT_BYTES:
                return n, p, -1
        size = (raw >> 1) ^ -(raw & 1)
        if size < 0:
            return n, p, -1
        if q + size > end:
            return n, p, q + size - p
        p = q + size
        n += 1
    return n, p, 0
