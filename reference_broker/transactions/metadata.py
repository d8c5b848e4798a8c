"""One transactional id's state as Kafka's ``TransactionMetadata`` keeps it: an immutable value, changed
only through ``transition``, which checks Kafka's table of allowed state changes (``states.py``)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from .states import TxnState, check_transition

__all__ = ["MAX_EPOCH", "TxnMetadata", "TxnState"]

MAX_EPOCH = 32767  # Short.MaxValue: an epoch at MAX_EPOCH - 1 is exhausted and a new producer id follows


@dataclass(frozen=True)
class TxnMetadata:
    """Built directly only for a transactional id seen for the first time and from a record read back
    from ``__transaction_state``; every later value comes from ``transition``."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TxnState
    partitions: frozenset[tuple[str, int]] = frozenset()
    last_update_ms: int = -1
    start_ms: int = -1
    last_producer_id: int = -1
    last_producer_epoch: int = -1
    # The transaction version of the client's last transition (Kafka's clientTransactionVersion): 2
    # after an EndTxn v5 or an AddPartitionsToTxn v4+, which is what Kafka decides from the request
    # version (``TransactionVersion.transactionVersionForEndTxn``/``ForAddPartitionsToTxn``). Not in
    # the log: this coordinator writes value version 0, as a cluster below transaction.version 1 does.
    client_transaction_version: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.partitions, frozenset):
            object.__setattr__(self, "partitions", frozenset(self.partitions))

    def transition(self, state: TxnState, **changes) -> TxnMetadata:
        """This transaction in ``state`` with ``changes``: the one way to a new state (Kafka's
        ``prepareTransitionTo``). Raises IllegalStateTransition for a change Kafka forbids."""
        check_transition(self.transactional_id, self.state, state)
        return replace(self, state=state, **changes)

    @property
    def epoch_exhausted(self) -> bool:
        return self.producer_epoch >= MAX_EPOCH - 1

    @property
    def in_prepare(self) -> bool:
        return self.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT)
