"""A legacy (magic 0 or 1) compressed wrapper's inner messages read a piece of the decompressed value at a
time, for a reader that looks at each once (Kafka's ``AbstractLegacyRecordBatch.DeepRecordsIterator``
reads them through the codec's stream too).

``legacy_record_chunks`` gives the records ``legacy_full`` gives, in lists, with the inner offsets as
written; its return value is what to add to each (magic 1 inner offsets are relative to the wrapper's,
known only once the last is read). It fails on the same inputs with a ``DecodeError`` naming the same
field: a decompression failure wins over a bad inner message, as the whole reader decompresses first,
so after a bad message the rest is still decompressed (handing out empty lists) before the error is
raised. At most one piece and one message are held at a time."""

from __future__ import annotations

from collections.abc import Generator

from ._batch_layout import (
    COMPRESSION_MASK,
    INT32,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    TIMESTAMP_TYPE_BIT,
    batch_error,
)
from ._batch_model import Record
from ._decompress_stream import decompressed_chunks
from ._exceptions import DecodeError
from ._legacy_message_sets import _legacy_message as legacy_message
from ._legacy_message_sets import legacy_header
from .compression import MAX_DECOMPRESSED_SIZE, DecompressionError

__all__ = ["legacy_record_chunks"]

_PIECE_SIZE = 16 * 1024


def legacy_record_chunks(
    buf, pos: int, end: int, *, verify_crc: bool = True, max_size: int = MAX_DECOMPRESSED_SIZE
) -> Generator[list[Record], None, int]:
    """The records of the legacy message at ``buf[pos:end]``, in lists; returns the offset rebase."""
    header, key, value = legacy_header(buf, pos, end, verify_crc)
    wrapper_offset, magic, attributes, wrapper_timestamp = header[0], header[3], header[5], header[7]
    codec = attributes & COMPRESSION_MASK
    if not codec:
        yield [Record(wrapper_offset, wrapper_timestamp, key, value, [])]
        return 0
    reader = _InnerReader(
        magic, verify_crc, pos, wrapper_timestamp if magic == 1 and attributes & TIMESTAMP_TYPE_BIT else None
    )
    failure: DecodeError | None = None
    try:
        for piece in decompressed_chunks(
            codec, value, magic=magic, max_size=max_size, chunk_size=_PIECE_SIZE
        ):
            records: list[Record] = []
            if failure is None:
                try:
                    records = reader.feed(piece, final=False)
                except DecodeError as exc:
                    failure = exc  # raised once the value is known to decompress
            yield records
    except DecompressionError as exc:
        raise batch_error(magic, str(exc), "value", pos) from None
    if failure is not None:
        raise failure
    yield reader.feed(b"", final=True)
    if not reader.count:
        raise batch_error(magic, "compressed wrapper holds no messages", "value", pos)
    if magic == 1 and wrapper_offset != 0:
        # relative inner offsets: the wrapper carries the last one's absolute offset (a zero wrapper
        # offset, from some librdkafka versions, means relative to 0: AbstractLegacyRecordBatch)
        if wrapper_offset < reader.last_offset:
            raise batch_error(
                magic,
                f"wrapper offset {wrapper_offset} is below the last inner offset {reader.last_offset}",
                "offset",
                pos,
            )
        return wrapper_offset - reader.last_offset
    return 0


class _InnerReader:
    """Parses whole inner messages as pieces arrive, with ``legacy_full``'s checks and messages; a
    message is judged short only once the value has ended (``final``)."""

    def __init__(self, magic: int, verify_crc: bool, pos: int, log_append_time: int | None) -> None:
        self.magic = magic
        self.verify_crc = verify_crc
        self.pos = pos
        self.log_append_time = log_append_time
        self.tail = bytearray()
        self.needed = 0  # bytes the tail must hold before the message it starts with is whole
        self.count = 0
        self.last_offset = 0

    def feed(self, piece, *, final: bool) -> list[Record]:
        self.tail += piece
        if len(self.tail) < self.needed and not final:
            return []
        data = bytes(self.tail)
        end = len(data)
        magic, pos = self.magic, self.pos
        records: list[Record] = []
        p = 0
        while p < end:
            where = f"value.messages[{self.count}]."
            if end - p < LOG_OVERHEAD + 5:
                if not final:
                    self.needed = end - p + 1  # at least one more byte
                    break
                raise batch_error(magic, "inner message is truncated", where[:-1], pos)
            (size,) = INT32.unpack_from(data, p + 8)
            inner_magic = data[p + MAGIC_OFFSET]
            if inner_magic > 1:
                raise batch_error(magic, f"inner message has magic {inner_magic}", where + "magic", pos)
            if size < 0 or size > end - p - LOG_OVERHEAD:
                if size >= 0 and not final:
                    self.needed = LOG_OVERHEAD + size
                    break
                raise batch_error(
                    magic,
                    f"inner message size {size} overruns the decompressed data",
                    where + "message_size",
                    pos,
                )
            next_p = p + LOG_OVERHEAD + size
            try:
                offset, _, inner_attributes, timestamp, key, value = legacy_message(
                    data, p, next_p, inner_magic, self.verify_crc, where
                )
            except DecodeError as exc:
                raise batch_error(magic, exc.reason + " (in decompressed data)", exc.field, pos) from None
            if inner_attributes & COMPRESSION_MASK:
                raise batch_error(magic, "inner messages must not be compressed", where + "attributes", pos)
            if self.log_append_time is not None:
                timestamp = self.log_append_time
            records.append(Record(offset, timestamp, key, value, []))
            self.count += 1
            self.last_offset = offset
            p = next_p
        del self.tail[:p]
        if p == end:
            self.needed = 0
        return records
