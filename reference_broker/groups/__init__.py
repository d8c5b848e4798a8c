"""Kafka's group coordinator: classic groups, committed offsets (plain and transactional), persisted in
``__consumer_offsets`` and read back when the node starts."""

from __future__ import annotations

from .coordinator import GroupCoordinator

__all__ = ["GroupCoordinator"]
