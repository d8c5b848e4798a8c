"""A quota sensor's arithmetic, with every time passed in: Kafka's windowed ``Rate`` over a
``SampledStat`` (``WindowedSum``), the upper-bound check of ``Sensor.record`` and ``QuotaUtils``'s
throttle time.

The rate keeps ``samples`` windows of ``window_ms`` (``quota.window.num``, ``quota.window.size.seconds``)
plus one more for the window that overlaps the monitored span. A sample expires once its last event is
``samples * window_ms`` old. The rate is the sum of the live samples over the elapsed time since the
oldest one started, never less than ``samples - 1`` whole windows (so a new client is not judged on one
burst), and never less than 1 ms."""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["WindowedRate", "throttle_time_ms"]

_LONG_MAX = 2**63 - 1


@dataclass(slots=True)
class _Sample:
    start_ms: int
    last_event_ms: int
    value: float = 0.0
    events: int = 0

    def reset(self, now_ms: int) -> None:
        self.start_ms = self.last_event_ms = now_ms
        self.value, self.events = 0.0, 0


class WindowedRate:
    """Units per second over the last ``samples`` windows (``Rate`` with ``TimeUnit.SECONDS``)."""

    def __init__(self, samples: int = 11, window_ms: int = 1000) -> None:
        if samples < 1 or window_ms < 1:
            raise ValueError(
                f"a rate needs at least one sample of at least 1 ms, not {samples} x {window_ms} ms"
            )
        self.samples = samples
        self.window_ms = window_ms
        self._samples: list[_Sample] = []
        self._current = 0

    def record(self, value: float, now_ms: int) -> None:
        """Add ``value`` at ``now_ms``; a negative value takes back one recorded earlier (Kafka's
        ``sensor.record(-value, timeMs, false)``, how a throttled fetch or connection is unrecorded)."""
        sample = self._current_sample(now_ms)
        if now_ms - sample.start_ms >= self.window_ms:  # Sample.isComplete (no event-count window here)
            sample = self._advance(now_ms)
        sample.value += value
        sample.events += 1
        sample.last_event_ms = now_ms

    def window_ms_at(self, now_ms: int) -> int:
        """``Rate.windowSize``: the span the rate divides by, in milliseconds."""
        self._purge(now_ms)
        elapsed = now_ms - min(s.start_ms for s in self._samples_or_new(now_ms))
        full_windows = elapsed // self.window_ms
        if full_windows < self.samples - 1:
            elapsed += (self.samples - 1 - full_windows) * self.window_ms
        return max(elapsed, 1)

    def measure(self, now_ms: int) -> float:
        self._purge(now_ms)
        total = sum(s.value for s in self._samples)
        return total / (self.window_ms_at(now_ms) / 1000)

    # ---- SampledStat's ring of samples ---------------------------------------------------------

    def _samples_or_new(self, now_ms: int) -> list[_Sample]:
        if not self._samples:
            self._samples.append(_Sample(now_ms, now_ms))
        return self._samples

    def _current_sample(self, now_ms: int) -> _Sample:
        return self._samples_or_new(now_ms)[self._current]

    def _advance(self, now_ms: int) -> _Sample:
        self._current = (self._current + 1) % (self.samples + 1)
        if self._current >= len(self._samples):
            self._samples.append(_Sample(now_ms, now_ms))
        else:
            self._samples[self._current].reset(now_ms)
        return self._samples[self._current]

    def _purge(self, now_ms: int) -> None:
        expire_after = self.samples * self.window_ms
        for sample in self._samples:
            if now_ms - sample.last_event_ms >= expire_after:
                sample.reset(now_ms)


def throttle_time_ms(rate: WindowedRate, bound: float, now_ms: int, *, max_ms: int | None = None) -> int:
    """0 while the measured rate is within ``bound`` (``Quota.acceptable``: value <= bound); else how long
    the client must stay quiet for the rate to fall back to the bound (``QuotaUtils.throttleTime``:
    (rate - bound) / bound over the rate's window, rounded half up), cut to ``max_ms`` when given
    (``boundedThrottleTime``, which ``ClientRequestQuotaManager`` applies with one window)."""
    value = rate.measure(now_ms)
    if value <= bound:
        return 0
    if bound <= 0:  # Java's division gives Infinity and Math.round Long.MAX_VALUE: the cap, or forever
        return _LONG_MAX if max_ms is None else max_ms
    throttle = _java_round((value - bound) / bound * rate.window_ms_at(now_ms))
    return throttle if max_ms is None else min(throttle, max_ms)


def _java_round(x: float) -> int:
    """``Math.round``: floor(x + 0.5), not Python's round-half-even."""
    return math.floor(x + 0.5)
