"""Writing a magic 2 batch a few thousand records at a time, compressing as it goes, so that a batch
rebuilt from a stream of records is never held whole uncompressed (Kafka's ``MemoryRecordsBuilder``
writes each record through the codec's output stream the same way).

``StreamedV2Batch`` takes records in order, their offsets counting from 0, and ``seal`` gives the batch
``encode_batch`` would write for them, byte for byte, for every codec but zstd: gzip's deflate stream
does not depend on how its input is cut, and lz4 and snappy compress fixed-size blocks. zstd is written
as one streamed frame without a content size (as Kafka's ``ZstdOutputStream`` writes it), where
``encode_batch`` compresses the records section at once and records its size in the frame header.

``keep_limit`` bounds the memory: once the sealed batch would exceed it, the compressed bytes are
dropped and only counted, so ``size`` is still exact (a broker reports it) and ``seal`` gives None."""

from __future__ import annotations

import struct
import zlib

import cramjam

try:
    import zstandard as _zstandard
except ImportError:  # optional: cramjam writes the same frames, holding each until it ends
    _zstandard = None

from ._batch_model import Record
from ._native import encode_records as native_encode_records
from ._v2_writer import seal_v2_batch, v2_body
from .compression import Compression, compress

__all__ = ["StreamedV2Batch"]

_V2_HEADER_SIZE = 61
_GZIP_DEFAULT_LEVEL = 6  # Kafka's default compression.gzip.level (compression._gzip_compress)
_ZSTD_DEFAULT_LEVEL = 3  # Kafka's default compression.zstd.level
_LZ4_BLOCK = 64 * 1024  # Kafka's Lz4BlockOutputStream block size
_SNAPPY_BLOCK = 32 * 1024  # snappy-java's SnappyOutputStream block size
_XERIAL_HEADER_SIZE = 16
_LZ4_HEADER_SIZE = 7  # magic, FLG, BD and the header checksum: no content size
_LZ4_END_MARK_SIZE = 4


class StreamedV2Batch:
    """A magic 2 batch being written: ``add`` records, then ``seal`` it once."""

    def __init__(
        self, codec: Compression | int, level: int | None = None, keep_limit: int | None = None
    ) -> None:
        self.codec = Compression(codec)
        self.level = level
        self.keep_limit = keep_limit
        self.count = 0
        self.first_timestamp: int | None = None
        self.max_timestamp = -1
        self.first_negative_timestamp: int | None = None  # below -1: MemoryRecordsBuilder refuses it
        self.size = _V2_HEADER_SIZE  # the sealed batch's size so far
        self._out: bytearray | None = bytearray()
        self._sink = _sink_for(self.codec, level)
        self._sealed = False

    def add(self, records: list[Record]) -> None:
        """Append ``records``, whose offsets must go on from the last one added (0 for the first)."""
        if self._sealed:
            raise ValueError("the batch is sealed")
        if not records:
            return
        if self.first_timestamp is None:
            self.first_timestamp = records[0].timestamp
        if self.first_negative_timestamp is None:
            for record in records:
                if record.timestamp < -1:
                    self.first_negative_timestamp = record.timestamp
                    break
        encoded = native_encode_records(Record, records, 0, self.first_timestamp)
        if encoded is None:
            encoded = v2_body(records, 0, self.first_timestamp)
        body, count, last_delta, _, max_timestamp = encoded
        if last_delta != self.count + count - 1:
            raise ValueError(
                f"records must be numbered from 0 in order: offset {last_delta} after {self.count}"
            )
        self.count += count
        self.max_timestamp = max(self.max_timestamp, max_timestamp)
        self._write(self._sink.feed(body))

    def seal(
        self,
        *,
        base_offset: int,
        producer_id: int,
        producer_epoch: int,
        base_sequence: int,
        is_transactional: bool,
        partition_leader_epoch: int,
        log_append_time: int | None,
    ) -> bytes | None:
        """The whole batch (``log_append_time``: the batch's max timestamp, LogAppendTime), or None when
        it grew past ``keep_limit`` (``size`` then says how large it is)."""
        if self._sealed:
            raise ValueError("the batch is sealed")
        self._sealed = True
        codec = self.codec
        if self.count:
            self._write(self._sink.finish())
        else:  # an empty batch stays uncompressed, as encode_batch leaves it
            codec = Compression.NONE
        if self._out is None:
            return None
        max_timestamp = self.max_timestamp if self.count else -1
        if log_append_time is not None:
            max_timestamp = log_append_time
        return seal_v2_batch(
            self._out,
            count=self.count,
            last_offset_delta=max(self.count - 1, 0),
            base_timestamp=-1 if self.first_timestamp is None else self.first_timestamp,
            max_timestamp=max_timestamp,
            compression=codec,
            base_offset=base_offset,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            base_sequence=base_sequence,
            is_transactional=is_transactional,
            partition_leader_epoch=partition_leader_epoch,
            log_append_time=log_append_time is not None,
        )

    def _write(self, data: bytes) -> None:
        self.size += len(data)
        if self._out is not None:
            if self.keep_limit is not None and self.size > self.keep_limit:
                self._out = None  # too large to keep: from here on only counted
            else:
                self._out += data


def _sink_for(codec: Compression, level: int | None):
    if codec is Compression.NONE:
        return _PlainSink()
    if codec is Compression.GZIP:
        return _GzipSink(level)
    if codec is Compression.ZSTD:
        return _ZstdSink(level)
    return _BlockSink(codec, level)


class _PlainSink:
    def feed(self, body) -> bytes:
        return bytes(body)

    def finish(self) -> bytes:
        return b""


class _GzipSink:
    """compression._gzip_compress as a stream: Java's fixed header, raw deflate, CRC and size."""

    def __init__(self, level: int | None) -> None:
        self.level = _GZIP_DEFAULT_LEVEL if level is None else level
        compress(Compression.GZIP, b"", level=self.level)  # refuses a level as compress() does
        self.deflater = zlib.compressobj(self.level, zlib.DEFLATED, -15)
        self.crc = 0
        self.length = 0
        self.started = False

    def feed(self, body) -> bytes:
        self.crc = zlib.crc32(body, self.crc)
        self.length += len(body)
        out = self.deflater.compress(body)
        if not self.started:
            self.started = True
            return compress(Compression.GZIP, b"", level=self.level)[:10] + out
        return out

    def finish(self) -> bytes:
        return self.deflater.flush() + struct.pack("<II", self.crc, self.length & 0xFFFFFFFF)


class _ZstdSink:
    """One zstd frame, written as the records come: with ``zstandard`` (whose output does not depend on
    how the input is cut) a piece at a time; without it, cramjam holds the frame until ``finish``
    (flushing it earlier would end a block there, and the bytes would depend on the cuts)."""

    def __init__(self, level: int | None) -> None:
        level = _ZSTD_DEFAULT_LEVEL if level is None else level
        if not -131072 <= level <= 22:
            raise ValueError(f"zstd level must be -131072..22, got {level}")
        if _zstandard is not None:
            self.stream = _zstandard.ZstdCompressor(level=level).compressobj()
            self.compressor = None
        else:
            self.stream = None
            self.compressor = cramjam.zstd.Compressor(level=level)

    def feed(self, body) -> bytes:
        if self.stream is not None:
            return self.stream.compress(bytes(body))
        self.compressor.compress(bytes(body))
        return b""

    def finish(self) -> bytes:
        if self.stream is not None:
            return self.stream.flush()
        return bytes(self.compressor.finish())


class _BlockSink:
    """lz4 and snappy: the input cut in the codec's fixed blocks, each compressed as ``compress``
    compresses it (so the blocks are the ones of a whole-payload ``compress``)."""

    def __init__(self, codec: Compression, level: int | None) -> None:
        self.codec = codec
        self.level = level
        self.block = _LZ4_BLOCK if codec is Compression.LZ4 else _SNAPPY_BLOCK
        empty = compress(codec, b"", level=level)
        # lz4: the frame header, then blocks, then an end mark; snappy: the xerial header, then blocks
        self.header = empty[:-_LZ4_END_MARK_SIZE] if codec is Compression.LZ4 else empty
        self.pending = bytearray()
        self.started = False

    def feed(self, body) -> bytes:
        self.pending += body
        whole = len(self.pending) - len(self.pending) % self.block
        if not whole:
            return self._start(b"")
        out = self._blocks(memoryview(self.pending)[:whole])
        del self.pending[:whole]
        return self._start(out)

    def finish(self) -> bytes:
        out = self._blocks(memoryview(self.pending)) if self.pending else b""
        self.pending = bytearray()
        tail = b"\x00\x00\x00\x00" if self.codec is Compression.LZ4 else b""
        return self._start(out) + tail

    def _start(self, out: bytes) -> bytes:
        if self.started:
            return out
        self.started = True
        return self.header + out

    def _blocks(self, data: memoryview) -> bytes:
        framed = compress(self.codec, data, level=self.level)
        if self.codec is Compression.LZ4:
            return framed[_LZ4_HEADER_SIZE:-_LZ4_END_MARK_SIZE]
        return framed[_XERIAL_HEADER_SIZE:]
