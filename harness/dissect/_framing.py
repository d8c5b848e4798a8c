"""One direction's bytes cut into Kafka frames: chunks in, ``RawFrame``s and ``StreamNote``s out.

``FrameSplitter`` reads a 4-byte size and waits for that many bytes, as ``kconform.codecs.FrameDecoder``
does, and adds what a capture needs: it remembers which packets a frame came in (and when), carries
holes (bytes the capture lost) inside a frame as zeros and marks the frame damaged, and when it does
not know where a frame starts (a stream that began before the capture, a hole over a frame boundary, a
size no Kafka peer would send) it hunts for a plausible boundary with a test its owner supplies, and
says how many bytes it skipped. A frame still unfinished when the capture ends comes out short. No I/O."""

from __future__ import annotations

import struct
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from kconform.codecs import DEFAULT_MAX_FRAME_SIZE

from ._reassembly import Chunk

__all__ = ["FrameSplitter", "RawFrame", "StreamNote", "BoundaryTest"]

_SIZE = struct.Struct(">i")

BoundaryTest = Callable[[bytes | bytearray, int, bool], bool | None]
"""``test(buffer, position, final)``: does a frame plausibly start at ``position``? True, False, or None
when the buffer does not yet hold enough bytes to say. ``final``: no more bytes will come, so decide."""


@dataclass(frozen=True, slots=True)
class RawFrame:
    offset: int
    """Stream offset of the size prefix."""
    size: int
    """The size the prefix declares (the frame without its prefix)."""
    data: bytes
    """The frame without its prefix: ``size`` bytes, or fewer when the capture ended inside it."""
    damaged: int
    """Bytes of ``data`` the capture lost (zeros in ``data``)."""
    first_packet: int
    packet: int
    """The packet that completed the frame (or the last one that brought any of it)."""
    first_time_us: int
    time_us: int

    @property
    def complete(self) -> bool:
        return len(self.data) == self.size and not self.damaged


@dataclass(frozen=True, slots=True)
class StreamNote:
    packet: int | None
    text: str


@dataclass(slots=True)
class _Mark:
    end: int  # stream offset just after the chunk
    packet: int
    time_us: int


class FrameSplitter:
    """Frames of one direction. ``synced=False`` when the stream may start inside a frame."""

    def __init__(
        self,
        boundary: BoundaryTest,
        *,
        synced: bool = True,
        min_frame_size: int = 0,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        what: str = "frame",
    ) -> None:
        self._boundary = boundary
        self.synced = synced
        self.min_frame_size = min_frame_size
        self.max_frame_size = max_frame_size
        self.what = what
        self._buf = bytearray()
        self._start = 0  # stream offset of _buf[0]
        self._holes: list[tuple[int, int]] = []  # stream offsets of zeros in _buf standing for lost bytes
        self._marks: deque[_Mark] = deque()
        self.skipped_bytes = 0
        self.notes: list[StreamNote] = []
        self._hunted = 0  # bytes skipped by the hunt under way
        self._hunt_start = 0

    def feed(self, chunk: Chunk) -> list[RawFrame]:
        if chunk.data:
            self._buf += chunk.data
            self._marks.append(_Mark(self._end, chunk.number, chunk.time_us))
        frames = self._drain()
        if chunk.hole:
            frames += self._hole(chunk)
        return frames

    def finish(self) -> list[RawFrame]:
        """The stream is over: a frame cut off by the end comes out short; other bytes are noted."""
        frames = self._drain(final=True)
        if not self._buf:
            return frames
        size = self._declared_size()
        if self.synced and size is not None:
            frames.append(self._frame(size, len(self._buf) - 4))
            self._consume(len(self._buf))
            return frames
        if self.synced:
            self._note(f"{len(self._buf)} bytes at the end of the stream are too few for a {self.what} size")
        else:
            self._note(f"{len(self._buf)} bytes at the end of the stream hold no {self.what} boundary")
        self.skipped_bytes += len(self._buf)
        self._consume(len(self._buf))
        return frames

    @property
    def _end(self) -> int:
        return self._start + len(self._buf)

    def _declared_size(self) -> int | None:
        if len(self._buf) < 4 or self._in_hole(self._start, self._start + 4):
            return None
        (size,) = _SIZE.unpack_from(self._buf, 0)
        return size if self.min_frame_size <= size <= self.max_frame_size else None

    def _drain(self, final: bool = False) -> list[RawFrame]:
        frames: list[RawFrame] = []
        while self._buf:
            if not self.synced and not self._hunt(final):
                break
            if len(self._buf) < 4:
                break
            size = self._declared_size()
            if size is None:
                (declared,) = _SIZE.unpack_from(self._buf, 0)
                self._note(
                    f"{self.what} size {declared} at stream offset {self._start} is not one a Kafka "
                    "peer sends: looking for the next frame boundary"
                )
                self.synced = False
                self._skip(1)
                continue
            if len(self._buf) < 4 + size:
                break
            frames.append(self._frame(size, size))
            self._consume(4 + size)
        return frames

    def _hunt(self, final: bool) -> bool:
        """Drop bytes up to a plausible frame start; False when none is in the buffer yet."""
        position, found, undecided = 0, False, None
        while position < len(self._buf):
            if not self._in_hole(self._start + position, self._start + position + 1):
                verdict = self._boundary(self._buf, position, final)
                if verdict:  # a start confirmed later in the buffer beats an undecided one before it
                    found = True
                    break
                if verdict is None and undecided is None:  # not enough bytes yet to judge it
                    undecided = position
            position += 1
        if not found and undecided is not None:
            position = undecided
        if position:
            if not self._hunted:
                self._hunt_start = self._start
            self._hunted += position
            self._skip(position)
        if found:
            if self._hunted:
                self._note(
                    f"skipped {self._hunted} bytes from stream offset {self._hunt_start} to reach a "
                    f"{self.what} boundary"
                )
            self._hunted = 0
            self.synced = True
        return found

    def _hole(self, chunk: Chunk) -> list[RawFrame]:
        """``chunk.hole`` bytes after the buffer were lost."""
        hole_start, hole_end = self._end, self._end + chunk.hole
        size = self._declared_size() if self.synced else None
        if size is not None and self._start + 4 + size >= hole_end:  # the hole lies inside this frame
            self._buf += bytes(chunk.hole)
            self._holes.append((hole_start, hole_end))
            self._marks.append(_Mark(self._end, chunk.number, chunk.time_us))
            self._note(
                f"{chunk.hole} bytes of the stream at offset {hole_start} are not in the capture "
                f"(inside the {self.what} at offset {self._start})",
                chunk.number,
            )
            return self._drain()
        frames: list[RawFrame] = []
        if size is not None:  # the hole runs past the end of this frame: keep the frame, damaged
            missing = self._start + 4 + size - hole_start
            self._buf += bytes(missing)
            self._holes.append((hole_start, hole_start + missing))
            self._marks.append(_Mark(self._end, chunk.number, chunk.time_us))
            frames.append(self._frame(size, size))
            self._consume(4 + size)
        lost = hole_end - self._end
        self._note(
            f"{chunk.hole} bytes of the stream at offset {hole_start} are not in the capture: "
            f"looking for the next {self.what} boundary after them",
            chunk.number,
        )
        self.skipped_bytes += len(self._buf)
        self._consume(len(self._buf))
        self._start += lost
        self.synced = False
        return frames

    def _frame(self, size: int, available: int) -> RawFrame:
        begin, end = self._start + 4, self._start + 4 + available
        marks = []  # the chunks that brought the frame's bytes (size prefix included)
        for mark in self._marks:
            if mark.end > self._start:
                marks.append(mark)
            if mark.end >= end:
                break
        first = min(marks, key=lambda m: m.packet) if marks else None  # in capture order, whatever
        last = max(marks, key=lambda m: m.packet) if marks else None  # the order of the stream
        damaged = sum(max(0, min(e, end) - max(s, begin)) for s, e in self._holes)
        return RawFrame(
            offset=self._start,
            size=size,
            data=bytes(self._buf[4 : 4 + available]),
            damaged=damaged,
            first_packet=first.packet if first else 0,
            packet=last.packet if last else 0,
            first_time_us=first.time_us if first else 0,
            time_us=last.time_us if last else 0,
        )

    def _consume(self, count: int) -> None:
        del self._buf[:count]
        self._start += count
        while self._marks and self._marks[0].end <= self._start:
            self._marks.popleft()
        self._holes = [(s, e) for s, e in self._holes if e > self._start]

    def _skip(self, count: int) -> None:
        self.skipped_bytes += count
        self._consume(count)

    def _in_hole(self, begin: int, end: int) -> bool:
        return any(s < end and begin < e for s, e in self._holes)

    def _note(self, text: str, packet: int | None = None) -> None:
        if packet is None and self._marks:
            packet = self._marks[0].packet
        self.notes.append(StreamNote(packet, text))
