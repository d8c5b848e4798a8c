"""Kafka's group coordinator: classic and KIP-848 consumer groups, committed offsets, persisted in
``__consumer_offsets``."""

from __future__ import annotations

__all__ = ["GroupCoordinator"]


class GroupCoordinator:
    """Placeholder until the coordinator lands: loads nothing, runs nothing."""

    def __init__(self, broker) -> None:
        self.broker = broker

    async def start(self) -> None:
        pass

    async def stop(self) -> None:
        pass
