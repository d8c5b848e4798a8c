"""Toxiproxy's toxics, with its parameters and semantics (Shopify/toxiproxy, toxics/*.go), as pure
per-connection state machines: each takes a chunk with the time it may leave and says what leaves when,
and what happens to the connection. ``link.py`` does the I/O.

- latency: each chunk leaves ``latency`` ms (+- a uniform ``jitter``) after it was ready.
- bandwidth: ``rate`` KB/s, pieces of at most rate*100 bytes, 100 ms apart.
- slow_close: data passes; the close that follows the end of the stream waits ``delay`` ms.
- timeout: data is dropped; with ``timeout`` > 0 the connection closes after that long without data
  (0: never); removing the toxic closes the connections it held, as Toxiproxy's Cleanup does.
- reset_peer: the first data after the toxic is in place is dropped, and ``timeout`` ms later the
  connection is reset (TCP RST); 0 resets at once.
- slicer: chunks cut into pieces of ``average_size`` +- ``size_variation`` bytes, ``delay`` microseconds
  apart.
- limit_data: ``bytes`` in all pass this way, then the connection closes.
- noop: data passes (Toxiproxy registers it as a type like any other: toxics/noop.go).
Toxicity is rolled whenever a toxic starts on a connection's stream, as ``ToxicStub.Run`` rolls it:
when the toxic meets the connection, when it is updated, and when another toxic is added after it on
that stream (link.go ``AddToxic`` and ``UpdateToxic`` re-run the stub). A miss makes it a no-op there
until the next roll; its state (bytes counted by limit_data) is kept across rolls."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ATTRIBUTES", "Effect", "ToxicState", "new_state"]

# type -> its attributes and their defaults: the JSON tags of each toxic's struct in toxics/*.go (all
# int64, or int for slicer), as registered by each file's init(); unknown keys are ignored
ATTRIBUTES: dict[str, dict[str, int]] = {
    "noop": {},
    "latency": {"latency": 0, "jitter": 0},
    "bandwidth": {"rate": 0},
    "slow_close": {"delay": 0},
    "timeout": {"timeout": 0},
    "reset_peer": {"timeout": 0},
    "slicer": {"average_size": 0, "size_variation": 0, "delay": 0},
    "limit_data": {"bytes": 0},
}


@dataclass
class Effect:
    """What a chunk became: pieces to send (data, time they may leave), and what the connection must
    do after them: nothing, close (after the pieces), or reset after ``reset_in`` seconds."""

    pieces: list[tuple[bytes, float]] = field(default_factory=list)
    close: bool = False
    reset_in: float | None = None
    idle_close_in: float | None = None  # close if nothing more arrives within this many seconds


class ToxicState:
    """One toxic on one connection's one direction."""

    kind = "noop"

    def __init__(self, attributes: dict[str, Any], rng: random.Random) -> None:
        self.a = attributes
        self.rng = rng
        self.active = True  # the last toxicity roll hit: when False the toxic passes data untouched

    def roll(self, toxicity: float) -> bool:
        """``rand.Float32() < toxicity`` (toxics/toxic.go ``ToxicStub.Run``); returns the outcome."""
        self.active = self.rng.random() < toxicity
        return self.active

    def on_data(self, data: bytes, ready: float) -> Effect:
        return Effect([(data, ready)])

    def on_end(self, ready: float) -> float:
        """The stream ended (EOF) at ``ready``; returns when the close may happen."""
        return ready

    def on_attach(self) -> Effect:
        return Effect()


class _Latency(ToxicState):
    kind = "latency"

    def on_data(self, data, ready):
        delay = self.a["latency"]
        jitter = self.a["jitter"]
        if jitter > 0:
            delay += self.rng.randrange(jitter * 2) - jitter
        return Effect([(data, ready + max(delay, 0) / 1000)])


class _Bandwidth(ToxicState):
    kind = "bandwidth"

    def __init__(self, attributes, rng):
        super().__init__(attributes, rng)
        self.clock = 0.0

    def on_data(self, data, ready):
        rate = self.a["rate"]
        if rate <= 0:
            return Effect([(data, ready)])
        t = max(ready, self.clock)
        piece = rate * 100  # bytes per 100 ms
        pieces = []
        for start in range(0, len(data), piece):
            chunk = data[start : start + piece]
            t += len(chunk) / (rate * 1000)
            pieces.append((chunk, t))
        self.clock = t
        return Effect(pieces)


class _SlowClose(ToxicState):
    kind = "slow_close"

    def on_end(self, ready):
        return ready + max(self.a["delay"], 0) / 1000


class _Timeout(ToxicState):
    kind = "timeout"

    def _idle(self) -> float | None:
        return self.a["timeout"] / 1000 if self.a["timeout"] > 0 else None

    def on_attach(self):
        return Effect(idle_close_in=self._idle())

    def on_data(self, data, ready):
        return Effect(idle_close_in=self._idle())  # dropped on the ground

    def on_end(self, ready):
        return ready


class _ResetPeer(ToxicState):
    kind = "reset_peer"

    def __init__(self, attributes, rng):
        super().__init__(attributes, rng)
        self.armed = False

    def on_data(self, data, ready):
        if self.armed:
            return Effect()
        self.armed = True
        return Effect(reset_in=max(self.a["timeout"], 0) / 1000)


class _Slicer(ToxicState):
    kind = "slicer"

    def _cuts(self, start: int, end: int) -> list[int]:
        average, variation = self.a["average_size"], self.a["size_variation"]
        if (end - start) - average <= variation:
            return [start, end]
        mid = start + (end - start) // 2
        if variation > 0:
            mid += self.rng.randrange(variation * 2) - variation
        return self._cuts(start, mid) + self._cuts(mid, end)

    def on_data(self, data, ready):
        if self.a["average_size"] <= 0:
            return Effect([(data, ready)])
        cuts = self._cuts(0, len(data))
        step = max(self.a["delay"], 0) / 1_000_000
        pieces = [(data[cuts[i - 1] : cuts[i]], ready + (i // 2) * step) for i in range(1, len(cuts), 2)]
        return Effect([p for p in pieces if p[0]])


class _LimitData(ToxicState):
    kind = "limit_data"

    def __init__(self, attributes, rng):
        super().__init__(attributes, rng)
        self.sent = 0

    def on_data(self, data, ready):
        remaining = max(self.a["bytes"] - self.sent, 0)
        data = data[:remaining]
        self.sent += len(data)
        return Effect([(data, ready)] if data else [], close=self.a["bytes"] - self.sent <= 0)


_KINDS: dict[str, type[ToxicState]] = {
    "noop": ToxicState,
    "latency": _Latency,
    "bandwidth": _Bandwidth,
    "slow_close": _SlowClose,
    "timeout": _Timeout,
    "reset_peer": _ResetPeer,
    "slicer": _Slicer,
    "limit_data": _LimitData,
}


def new_state(kind: str, attributes: dict[str, Any], toxicity: float, rng: random.Random) -> ToxicState:
    """The toxic's state on a new connection, its toxicity rolled once (``active`` says how)."""
    state = _KINDS[kind](attributes, rng)
    state.roll(toxicity)
    return state
