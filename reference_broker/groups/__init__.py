"""Kafka's group coordinator: classic groups, KIP-848 consumer groups (with members on the classic protocol
among them, and the online migration between the two kinds), committed offsets (plain and
transactional), persisted in ``__consumer_offsets`` and read back when the node starts."""

from __future__ import annotations

from .coordinator import GroupCoordinator

__all__ = ["GroupCoordinator"]
