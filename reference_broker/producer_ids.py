"""Producer ids that are never handed out twice, in the whole cluster and across restarts (Kafka's
``RPCProducerIdManager``): the controller hands out blocks (AllocateProducerIds, recorded as a
``ProducerIdsRecord`` in the metadata log before it answers), and a broker gives out ids from its
block. The next block is asked for once 90% of the current one is used; a broker with no id left and
no block yet answers COORDINATOR_LOAD_IN_PROGRESS (``ProducerIdsUnavailable``) until one arrives."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

__all__ = ["ProducerIdBlocks", "ProducerIdsUnavailable"]

log = logging.getLogger(__name__)
_PREFETCH_AT = 0.9


class ProducerIdsUnavailable(Exception):
    """No producer id block yet (COORDINATOR_LOAD_IN_PROGRESS)."""


class ProducerIdBlocks:
    def __init__(self, request_block: Callable[[], Awaitable[tuple[int, int]]]) -> None:
        self._request_block = request_block
        self._next = 0
        self._end = 0
        self._size = 0
        self._queued: tuple[int, int] | None = None
        self._asking: asyncio.Task | None = None

    async def start(self) -> None:
        """Take the first block before any id is asked for."""
        self._install(await self._request_block())

    def next_id(self) -> int:
        if self._next >= self._end:
            if self._queued is None:
                self._prefetch()
                raise ProducerIdsUnavailable("no producer id block from the controller yet")
            self._install(self._queued)
            self._queued = None
        producer_id = self._next
        self._next += 1
        if self._queued is None and self._end - self._next <= self._size * (1 - _PREFETCH_AT):
            self._prefetch()
        return producer_id

    def _install(self, block: tuple[int, int]) -> None:
        first, count = block
        self._next, self._end, self._size = first, first + count, count

    def _prefetch(self) -> None:
        if self._asking is not None and not self._asking.done():
            return
        self._asking = asyncio.get_running_loop().create_task(self._ask())

    async def _ask(self) -> None:
        try:
            self._queued = await self._request_block()
        except Exception as exc:  # the next id asked for tries again
            log.warning("no producer id block from the controller: %s", exc)

    def stop(self) -> None:
        if self._asking is not None:
            self._asking.cancel()
