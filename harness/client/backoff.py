"""Kafka's ``ExponentialBackoff``: ``initial * 2**attempts`` capped at ``maximum``, with +-20% jitter.
The random source is passed in, so the waits can be replayed."""

from __future__ import annotations

import math
import random

__all__ = ["ExponentialBackoff"]


class ExponentialBackoff:
    def __init__(
        self,
        initial_ms: float,
        maximum_ms: float,
        *,
        multiplier: float = 2.0,
        jitter: float = 0.2,
        rng: random.Random | None = None,
    ) -> None:
        self.initial_ms = initial_ms
        self.maximum_ms = max(maximum_ms, initial_ms)
        self.multiplier = multiplier
        self.jitter = jitter
        self._rng = rng or random.Random()
        ratio = self.maximum_ms / initial_ms if initial_ms > 0 else 1.0
        self._exp_max = math.log(ratio) / math.log(multiplier) if ratio > 1 else 0.0

    def backoff_ms(self, attempts: int) -> float:
        """The wait before retry number ``attempts + 1`` (``attempts`` failures so far, from 0)."""
        if self._exp_max == 0:
            return self.initial_ms  # maximum <= initial: a fixed wait, no jitter (as Kafka's)
        exp = min(attempts, self._exp_max)
        term = self.initial_ms * self.multiplier**exp
        if self.jitter:
            term *= self._rng.uniform(1 - self.jitter, 1 + self.jitter)
        return min(term, self.maximum_ms)
