"""One transactional id's state as Kafka's ``TransactionMetadata`` keeps it, and its state names."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

__all__ = ["MAX_EPOCH", "TxnMetadata", "TxnState"]

MAX_EPOCH = 32767  # Short.MaxValue: an epoch at MAX_EPOCH - 1 is exhausted and a new producer id follows


class TxnState(Enum):
    EMPTY = (0, "Empty")
    ONGOING = (1, "Ongoing")
    PREPARE_COMMIT = (2, "PrepareCommit")
    PREPARE_ABORT = (3, "PrepareAbort")
    COMPLETE_COMMIT = (4, "CompleteCommit")
    COMPLETE_ABORT = (5, "CompleteAbort")
    DEAD = (6, "Dead")
    PREPARE_EPOCH_FENCE = (7, "PrepareEpochFence")

    @property
    def code(self) -> int:
        return self.value[0]

    @property
    def display(self) -> str:
        return self.value[1]

    @classmethod
    def from_code(cls, code: int) -> TxnState:
        for state in cls:
            if state.code == code:
                return state
        raise ValueError(f"transaction status {code} is unknown")

    @classmethod
    def from_name(cls, name: str) -> TxnState | None:
        return next((s for s in cls if s.display == name), None)


@dataclass
class TxnMetadata:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TxnState
    partitions: set[tuple[str, int]] = field(default_factory=set)
    last_update_ms: int = -1
    start_ms: int = -1
    last_producer_id: int = -1
    last_producer_epoch: int = -1
    # The transaction version of the client's last transition (Kafka's clientTransactionVersion): 2
    # after an EndTxn v5 or an AddPartitionsToTxn v4+, which is what Kafka decides from the request
    # version (``TransactionVersion.transactionVersionForEndTxn``/``ForAddPartitionsToTxn``). Not in
    # the log: this coordinator writes value version 0, as a cluster below transaction.version 1 does.
    client_transaction_version: int = 0

    @property
    def epoch_exhausted(self) -> bool:
        return self.producer_epoch >= MAX_EPOCH - 1

    @property
    def in_prepare(self) -> bool:
        return self.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT)
