"""Kafka's transaction coordinator: transactional producer ids, transaction state persisted in
``__transaction_state``, commit and abort markers, timeouts."""

from __future__ import annotations

from .coordinator import TransactionCoordinator

__all__ = ["TransactionCoordinator"]
