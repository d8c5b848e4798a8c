"""The values the transaction rules take and give: the events (one per request the coordinator
answers), the settings, and the decision, which says what to answer, which ``__transaction_state``
records to write and which markers to write. Frozen values that print as valid Python, so a failing
Hypothesis run replays by copy and paste."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kconform.codecs.errors import Errors

from .metadata import TxnMetadata

__all__ = [
    "NO_PRODUCER",
    "AddOffsets",
    "AddPartitions",
    "EndTxn",
    "InitProducerId",
    "MarkerWrite",
    "ProducerIdAndEpoch",
    "TxnDecision",
    "TxnError",
    "TxnSettings",
    "VerifyPartitions",
]

TopicPartition = tuple[str, int]


class TxnError(Exception):
    """A refused request, carrying its error code (raised by the coordinator, never by the rules)."""

    def __init__(self, code: int, message: str = "") -> None:
        super().__init__(message or str(code))
        self.code = code


@dataclass(frozen=True)
class ProducerIdAndEpoch:
    producer_id: int
    producer_epoch: int


NO_PRODUCER = ProducerIdAndEpoch(-1, -1)  # RecordBatch.NO_PRODUCER_ID, NO_PRODUCER_EPOCH


@dataclass(frozen=True)
class TxnSettings:
    max_timeout_ms: int  # transaction.max.timeout.ms
    # transaction.abort.timed.out.transaction.cleanup.interval.ms: the runtime's timer, not a rule's
    abort_interval_ms: int

    @classmethod
    def from_config(cls, config: Mapping[str, object]) -> TxnSettings:
        return cls(
            max_timeout_ms=int(config["transaction.max.timeout.ms"]),
            abort_interval_ms=int(config["transaction.abort.timed.out.transaction.cleanup.interval.ms"]),
        )


# ---- events --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class InitProducerId:
    transactional_id: str
    timeout_ms: int
    expected: ProducerIdAndEpoch | None = None  # v3+: the producer id and epoch the client holds


@dataclass(frozen=True)
class AddPartitions:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    partitions: frozenset[TopicPartition]
    transaction_version: int = 0  # the client's: 2 for AddPartitionsToTxn v4+ and Produce v12+


@dataclass(frozen=True)
class AddOffsets:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    offsets_partition: TopicPartition  # the group's ``__consumer_offsets`` partition


@dataclass(frozen=True)
class VerifyPartitions:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    partitions: frozenset[TopicPartition]


@dataclass(frozen=True)
class EndTxn:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    commit: bool
    transaction_version: int = 0  # the client's: 2 for EndTxn v5


# ---- decisions -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class MarkerWrite:
    """The markers that end a transaction: one per partition, at the prepare record's producer id and
    epoch. ``next_producer_id`` is the id a transactions-v2 completion moves to when the epoch is
    exhausted (-1 otherwise); the completion (``rules.complete_after_markers``) follows the writes."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    commit: bool
    partitions: tuple[TopicPartition, ...]
    transaction_version: int
    next_producer_id: int = -1


@dataclass(frozen=True)
class TxnDecision:
    """What the coordinator does for one event, in this order: keep ``created`` (a transactional id
    seen for the first time, cached before any write as Kafka's ``putTransactionStateIfNotExists``
    does), write ``records`` (each is the transaction's state once written), write ``markers`` and then
    the completion, and answer ``error`` or, for InitProducerId and EndTxn, ``producer``."""

    error: int = Errors.NONE
    producer: ProducerIdAndEpoch = NO_PRODUCER
    created: TxnMetadata | None = None
    records: tuple[TxnMetadata, ...] = ()
    markers: MarkerWrite | None = None
