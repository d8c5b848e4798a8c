"""Kafka's transaction coordinator: transactional producer ids, transaction state persisted in
``__transaction_state``, commit and abort markers, timeouts.

``states`` (Kafka's state table), ``metadata`` (one transaction's state), ``decisions`` (events and
decisions), ``rules`` (the pure rules), ``coordinator`` (the runtime that carries decisions out),
``host`` (what the coordinator needs from its node), ``log_records`` (the ``__transaction_state``
record layouts) and ``marker_writer`` (control batches into partitions)."""

from __future__ import annotations

from .coordinator import TransactionCoordinator
from .host import TxnCoordinatorHost

__all__ = ["TransactionCoordinator", "TxnCoordinatorHost"]
