"""Kafka's transaction coordinator: transactional producer ids, transaction state persisted in
``__transaction_state``, commit and abort markers, timeouts."""

from __future__ import annotations

__all__ = ["TransactionCoordinator"]


class TransactionCoordinator:
    """Placeholder until the coordinator lands: loads nothing, runs nothing."""

    def __init__(self, broker) -> None:
        self.broker = broker

    async def start(self) -> None:
        pass

    async def stop(self) -> None:
        pass
