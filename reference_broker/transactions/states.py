"""Kafka's transaction states and the transitions allowed between them, as one table: for each state, the
states it may be entered from (``TransactionState.java``, ``validPreviousStates``). The coordinator
checks every change against it, as ``TransactionMetadata.prepareTransitionTo`` does, and an illegal one
raises as Kafka's ``IllegalStateException`` would: it is a bug in the rules, never a client's error.

Entering a state from itself is a transition too (Empty -> Empty is a bump by InitProducerId, Ongoing ->
Ongoing an AddPartitionsToTxn). PrepareEpochFence and Dead are in the table, as in Kafka, though this
coordinator never enters them: Kafka keeps PrepareEpochFence only as a pending state on the way from
Ongoing to PrepareAbort, and Dead is for expired transactional ids, which are not expired here."""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from types import MappingProxyType

__all__ = ["VALID_PREVIOUS_STATES", "IllegalStateTransition", "TxnState", "check_transition"]


class TxnState(Enum):
    """Kafka's state id (as ``__transaction_state`` stores it) and name (as DescribeTransactions and
    ListTransactions show it)."""

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


_S = TxnState
# TransactionState.java's static block, state by state.
VALID_PREVIOUS_STATES: Mapping[TxnState, frozenset[TxnState]] = MappingProxyType(
    {
        _S.EMPTY: frozenset({_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
        _S.ONGOING: frozenset({_S.ONGOING, _S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
        _S.PREPARE_COMMIT: frozenset({_S.ONGOING}),
        # Empty, CompleteCommit and CompleteAbort: an EndTxn v5 abort with no transaction open
        _S.PREPARE_ABORT: frozenset(
            {_S.ONGOING, _S.PREPARE_EPOCH_FENCE, _S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}
        ),
        _S.COMPLETE_COMMIT: frozenset({_S.PREPARE_COMMIT}),
        _S.COMPLETE_ABORT: frozenset({_S.PREPARE_ABORT}),
        _S.DEAD: frozenset({_S.EMPTY, _S.COMPLETE_ABORT, _S.COMPLETE_COMMIT}),
        _S.PREPARE_EPOCH_FENCE: frozenset({_S.ONGOING}),
    }
)


class IllegalStateTransition(Exception):
    """A rule tried a state change Kafka's table forbids (Kafka's ``IllegalStateException``)."""

    def __init__(self, transactional_id: str, current: TxnState, target: TxnState) -> None:
        super().__init__(
            f"transaction {transactional_id!r} cannot go from {current.display} to {target.display}: "
            f"{target.display} is entered only from "
            + ", ".join(sorted(s.display for s in VALID_PREVIOUS_STATES[target]))
        )
        self.transactional_id = transactional_id
        self.current = current
        self.target = target


def check_transition(transactional_id: str, current: TxnState, target: TxnState) -> None:
    if current not in VALID_PREVIOUS_STATES[target]:
        raise IllegalStateTransition(transactional_id, current, target)
