"""One direction of a TCP connection put back in order: segments in, byte chunks out.

``DirectionReassembler`` follows sequence numbers (mod 2**32): a segment at the next expected number is
delivered with whatever it unblocks, a later one waits, an earlier one (a retransmission) is dropped or
trimmed to its new bytes. Bytes that never arrive come out as a hole of known length: as soon as the
peer acknowledges past them (``acknowledged``), when too much waits behind them, or when the capture ends
(``flush``); so do bytes a short snap length cut off. Without a SYN the first segment seen sets the
start, so bytes captured later but sent earlier count as retransmissions. No I/O."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Chunk", "DirectionReassembler"]

_MOD = 1 << 32
_HALF = 1 << 31


def _serial_delta(a: int, b: int) -> int:
    """``a - b`` in sequence-number arithmetic: negative when ``a`` is before ``b``."""
    delta = (a - b) % _MOD
    return delta - _MOD if delta >= _HALF else delta


@dataclass(frozen=True, slots=True)
class Chunk:
    """Stream bytes in order: ``data``, then ``hole`` bytes that were not captured."""

    data: bytes
    hole: int
    number: int
    """The packet whose arrival put these bytes in order: the one that carried them, or for bytes that
    waited behind a gap, the one that filled it (as Wireshark reports a reassembled PDU)."""
    time_us: int


@dataclass(slots=True)
class _Waiting:
    data: bytes
    missing: int
    number: int
    time_us: int

    @property
    def size(self) -> int:
        return len(self.data) + self.missing


class DirectionReassembler:
    """Bytes of one direction in sequence order, from segments in capture order."""

    def __init__(self, *, max_waiting_segments: int = 4096, max_waiting_bytes: int = 64 << 20) -> None:
        self.max_waiting_segments = max_waiting_segments
        self.max_waiting_bytes = max_waiting_bytes
        self.next_seq: int | None = None
        self.offset = 0
        """Stream bytes delivered so far, holes included."""
        self.saw_syn = False
        self.fin_seq: int | None = None
        self.retransmitted_bytes = 0
        self.out_of_order_segments = 0
        self.hole_bytes = 0
        self._waiting: dict[int, _Waiting] = {}  # by stream offset
        self._waiting_bytes = 0

    @property
    def started_mid_stream(self) -> bool:
        """No SYN was seen: the first bytes delivered may start anywhere inside a frame."""
        return not self.saw_syn

    def syn(self, seq: int) -> None:
        if self.next_seq is None:
            self.next_seq = (seq + 1) % _MOD
            self.saw_syn = True

    def segment(self, seq: int, data: bytes, number: int, time_us: int, *, missing: int = 0) -> list[Chunk]:
        """Chunks now in order after this segment's payload (``seq`` is its first byte's number)."""
        size = len(data) + missing
        if size == 0:
            return []
        if self.next_seq is None:  # the capture started inside the connection
            self.next_seq = seq
        delta = _serial_delta(seq, self.next_seq)
        if delta < 0:
            if delta + size <= 0:
                self.retransmitted_bytes += size
                return []
            cut = -delta
            self.retransmitted_bytes += cut
            data, missing = _trim(data, missing, cut)
            delta = 0
        if delta > 0:
            self._wait(self.offset + delta, _Waiting(data, missing, number, time_us))
            if len(self._waiting) > self.max_waiting_segments or self._waiting_bytes > self.max_waiting_bytes:
                return self._skip_first_gap(number, time_us)
            return []
        out = [self._deliver(data, missing, number, time_us)]
        out += self._drain(number, time_us)
        return out

    def acknowledged(self, ack: int, number: int, time_us: int) -> list[Chunk]:
        """The peer acknowledged every byte before ``ack``: bytes up to it that the capture has not shown
        were lost by the capture, so they come out now as holes (with what waited behind them) rather
        than when the capture ends."""
        out: list[Chunk] = []
        if self.next_seq is None:
            return out
        if self.fin_seq is not None and ack == (self.fin_seq + 1) % _MOD:
            ack = self.fin_seq  # a FIN takes a sequence number but carries no byte
        while (ahead := _serial_delta(ack, self.next_seq)) > 0 and ahead < _HALF // 2:
            if self._waiting and min(self._waiting) - self.offset <= ahead:
                out += self._skip_first_gap(number, time_us)
                continue
            out.append(self._deliver(b"", ahead, number, time_us))
        return out

    def fin(self, seq: int) -> None:
        """A FIN at ``seq`` (just after the sender's last byte)."""
        self.fin_seq = seq

    def flush(self) -> list[Chunk]:
        """The capture is over: what still waits comes out, with holes for what never arrived."""
        out: list[Chunk] = []
        while self._waiting:
            out += self._skip_first_gap()
        return out

    def _wait(self, offset: int, waiting: _Waiting) -> None:
        previous = self._waiting.get(offset)
        if previous is not None:
            if previous.size >= waiting.size:
                self.retransmitted_bytes += waiting.size
                return
            self.retransmitted_bytes += previous.size
            self._waiting_bytes -= previous.size
        else:
            self.out_of_order_segments += 1
        self._waiting[offset] = waiting
        self._waiting_bytes += waiting.size

    def _deliver(self, data: bytes, missing: int, number: int, time_us: int) -> Chunk:
        size = len(data) + missing
        self.offset += size
        self.next_seq = (self.next_seq + size) % _MOD
        self.hole_bytes += missing
        return Chunk(data, missing, number, time_us)

    def _drain(self, number: int | None = None, time_us: int | None = None) -> list[Chunk]:
        """Deliver what waited and is now in order, as released by packet ``number`` (by default, each
        waiting segment's own)."""
        out: list[Chunk] = []
        while self._waiting:
            first = min(self._waiting)
            if first > self.offset:
                break
            waiting = self._waiting.pop(first)
            self._waiting_bytes -= waiting.size
            overlap = self.offset - first
            if overlap >= waiting.size:
                self.retransmitted_bytes += waiting.size
                continue
            self.retransmitted_bytes += overlap
            data, missing = _trim(waiting.data, waiting.missing, overlap)
            out.append(
                self._deliver(
                    data, missing, number or waiting.number, waiting.time_us if time_us is None else time_us
                )
            )
        return out

    def _skip_first_gap(self, number: int | None = None, time_us: int | None = None) -> list[Chunk]:
        first = min(self._waiting)
        gap = first - self.offset
        waiting = self._waiting[first]
        number = number or waiting.number
        time_us = waiting.time_us if time_us is None else time_us
        out = [self._deliver(b"", gap, number, time_us)] if gap > 0 else []
        return out + self._drain(number, time_us)


def _trim(data: bytes, missing: int, cut: int) -> tuple[bytes, int]:
    """Drop the first ``cut`` bytes of ``data`` followed by ``missing`` uncaptured bytes."""
    if cut <= len(data):
        return data[cut:], missing
    return b"", missing - (cut - len(data))
