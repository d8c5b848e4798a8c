"""Delayed operations: requests that wait for an event (new data, a high-watermark move, a group
state change) or their timeout, whichever comes first (Kafka's DelayedOperationPurgatory).

A waiter watches one or more keys; ``notify(key)`` wakes every waiter on that key. The waiter then
re-checks its own condition (it may have been woken for data it cannot use) and waits again for the
time it has left."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable

__all__ = ["Purgatory"]


class Purgatory:
    def __init__(self) -> None:
        self._watchers: dict[Hashable, set[asyncio.Future]] = defaultdict(set)

    def notify(self, key: Hashable) -> None:
        for future in self._watchers.pop(key, ()):
            if not future.done():
                future.set_result(None)

    def watched_keys(self) -> int:
        return len(self._watchers)

    async def wait_until(
        self, keys: Iterable[Hashable], satisfied: Callable[[], bool], timeout_s: float, *, clock
    ) -> bool:
        """Wait until ``satisfied()`` holds (True) or ``timeout_s`` passes (False)."""
        keys = list(keys)
        deadline = clock.monotonic() + timeout_s
        loop = asyncio.get_running_loop()
        while not satisfied():
            remaining = deadline - clock.monotonic()
            if remaining <= 0:
                return False
            future = loop.create_future()
            for key in keys:
                self._watchers[key].add(future)
            try:
                await asyncio.wait_for(future, remaining)
            except TimeoutError:
                return satisfied()
            finally:
                for key in keys:
                    watchers = self._watchers.get(key)
                    if watchers is not None:
                        watchers.discard(future)
                        if not watchers:
                            del self._watchers[key]
        return True
