"""The transaction coordinator's rules as the coordinator runtime's events and effects: a decision
(``rules``) becomes the writes of its records (each applied to the state once written, as Kafka's
``completeTransitionTo``), the markers (``WriteMarkers``, carried out by the coordinator) and the answer;
once the markers are in, the completion is decided. Pure, like the rules: the state is the only thing
changed, and only here."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from kconform.codecs.errors import Errors

from ..coordinator_runtime import Effect, Reply, Write, Written
from . import rules
from .decisions import (
    AddOffsets,
    AddPartitions,
    EndTxn,
    InitProducerId,
    MarkerWrite,
    TxnDecision,
    TxnSettings,
)
from .log_records import encode_txn_key, encode_txn_value
from .metadata import TxnMetadata

__all__ = [
    "AbortTimedOut",
    "FinishPrepared",
    "MarkersWritten",
    "TxnContext",
    "TxnRecordWritten",
    "TxnRequest",
    "TxnWriteFailed",
    "WriteMarkers",
    "decide",
]

log = logging.getLogger(__name__)


class TxnWriteFailed(Exception):
    """A transaction record was not written: the request fails as the write did, and nothing changes."""

    def __init__(self, transactional_id: str, code: int | None) -> None:
        super().__init__(f"the state of transaction {transactional_id} was not written")
        self.code = code if code is not None else Errors.COORDINATOR_NOT_AVAILABLE


@dataclass(frozen=True)
class TxnContext:
    now_ms: int
    settings: TxnSettings
    next_producer_id: Callable[[], int]  # called only when a rule hands out a new producer id


@dataclass(frozen=True)
class TxnRequest:
    waiter: int
    event: InitProducerId | AddPartitions | AddOffsets | EndTxn


@dataclass(frozen=True)
class TxnRecordWritten:
    record: TxnMetadata
    written: Written | None = None


@dataclass(frozen=True)
class WriteMarkers:
    """Write the markers into the transaction's partitions, then decide ``MarkersWritten``."""

    markers: MarkerWrite


@dataclass(frozen=True)
class MarkersWritten:
    markers: MarkerWrite


@dataclass(frozen=True)
class AbortTimedOut:
    """The periodic check (``transaction.abort.timed.out.transaction.cleanup.interval.ms``)."""


@dataclass(frozen=True)
class FinishPrepared:
    """On load: a transaction left in PrepareCommit/PrepareAbort gets its markers and completion."""


def _decision_for(txns: dict[str, TxnMetadata], event, ctx: TxnContext) -> TxnDecision:
    meta = txns.get(event.transactional_id)
    if isinstance(event, InitProducerId):
        return rules.init_producer_id(meta, event, ctx.now_ms, ctx.settings, ctx.next_producer_id)
    if isinstance(event, AddPartitions):
        return rules.add_partitions(meta, event, ctx.now_ms)
    if isinstance(event, AddOffsets):
        return rules.add_offsets(meta, event, ctx.now_ms)
    if isinstance(event, EndTxn):
        return rules.end_txn(meta, event, ctx.now_ms, ctx.next_producer_id)
    raise TypeError(f"no transaction rule for {type(event).__name__}")


def _carry(txns: dict[str, TxnMetadata], decision: TxnDecision, waiter: int | None) -> list[Effect]:
    if decision.created is not None:  # Kafka's putTransactionStateIfNotExists: kept before any write
        txns.setdefault(decision.created.transactional_id, decision.created)
    out: list[Effect] = [
        Write(
            record.transactional_id,
            ((encode_txn_key(record.transactional_id), encode_txn_value(record)),),
            then=TxnRecordWritten(record),
        )
        for record in decision.records
    ]
    if decision.markers is not None:
        out.append(WriteMarkers(decision.markers))
    if waiter is not None:
        out.append(Reply(waiter, decision))
    return out


def decide(txns: dict[str, TxnMetadata], event: object, ctx: TxnContext) -> list[Effect]:
    if isinstance(event, TxnRequest):
        return _carry(txns, _decision_for(txns, event.event, ctx), event.waiter)
    if isinstance(event, TxnRecordWritten):
        if event.written.failed:
            raise TxnWriteFailed(event.record.transactional_id, event.written.error)
        txns[event.record.transactional_id] = event.record
        return []
    if isinstance(event, MarkersWritten):
        meta = txns.get(event.markers.transactional_id)
        markers = event.markers
        if meta is None or not meta.in_prepare or meta.producer_epoch != markers.producer_epoch:
            return []  # markers delivered in the background for a transaction that has moved on
        return _carry(txns, rules.complete_after_markers(meta, event.markers, ctx.now_ms), None)
    if isinstance(event, AbortTimedOut):
        out: list[Effect] = []
        for decision in rules.abort_timed_out(list(txns.values()), ctx.now_ms):
            (record,) = decision.records
            log.info(
                "aborting transaction %s: it passed its %d ms timeout",
                record.transactional_id,
                record.timeout_ms,
            )
            out.extend(_carry(txns, decision, None))
        return out
    if isinstance(event, FinishPrepared):
        return [
            effect
            for meta in list(txns.values())
            for effect in _carry(txns, rules.finish_prepared(meta), None)
        ]
    raise TypeError(f"the transaction coordinator has no rule for {type(event).__name__}")
