"""Rules of idempotent and transactional producers at the transaction coordinator: InitProducerId,
AddPartitionsToTxn, AddOffsetsToTxn and EndTxn (TransactionCoordinator, TransactionMetadata and the
version translations in KafkaApis). The log side (markers, last stable offset, read_committed reads,
transactional offsets, DescribeTransactions and ListTransactions) is in rules_transactions_log."""

from __future__ import annotations

import asyncio

from kconform.codecs.errors import Errors
from kconform.codecs.messages import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    EndTxnRequest,
    InitProducerIdRequest,
)

from .catalogue import rule
from .requests import batch, metadata_request, produce_request
from .session import RuleSession, SetupFailed, expect, expect_error

PRODUCE, METADATA, INIT_PID, ADD_PARTITIONS, ADD_OFFSETS, END_TXN = 0, 3, 22, 24, 25, 26
FAMILY = "transactions"
_BUSY = (Errors.CONCURRENT_TRANSACTIONS, Errors.COORDINATOR_LOAD_IN_PROGRESS)
_MAX_TIMEOUT_MS = 15 * 60_000  # transaction.max.timeout.ms default


class Txn:
    """One transactional id of a test, at its coordinator; set-up steps retry while the coordinator
    is busy completing the previous transaction (CONCURRENT_TRANSACTIONS) and fail as set-up."""

    def __init__(self, s: RuleSession, txn_id: str, coordinator) -> None:
        self.s, self.id, self.coordinator = s, txn_id, coordinator
        self.pid, self.epoch, self.sequence = -1, -1, 0

    @classmethod
    async def start(cls, s: RuleSession, *, timeout_ms: int = 60_000) -> Txn:
        txn_id = s.name("x")
        txn = cls(s, txn_id, await s.coordinator(txn_id, 1))
        await txn.init_ok(timeout_ms=timeout_ms)
        return txn

    async def stranger(self) -> Txn:
        """A transactional id nobody initialised, at its own coordinator, with this producer's id and
        epoch (a coordinator that does not own an id answers NOT_COORDINATOR instead)."""
        txn_id = self.s.name("nobody")
        other = Txn(self.s, txn_id, await self.s.coordinator(txn_id, 1))
        other.pid, other.epoch = self.pid, self.epoch
        return other

    async def knows(self, topic: str) -> None:
        """Wait until the coordinator's own metadata has ``topic`` (it checks partitions against it)."""
        version = self.s.setup_version(METADATA, 12)
        for _ in range(50):
            body = await self.s.call(self.coordinator, METADATA, version, metadata_request(topic))
            if body.topics and body.topics[0].error_code == Errors.NONE and body.topics[0].partitions:
                return
            await asyncio.sleep(0.1)
        raise SetupFailed(f"the transaction coordinator does not know {topic}")

    def top(self, api: int, cap: int) -> int:
        return min(self.s.versions[api][1], cap)

    async def init(self, version=None, *, txn_id=..., timeout_ms=60_000, pid=-1, epoch=-1):
        request = InitProducerIdRequest(
            transactional_id=self.id if txn_id is ... else txn_id,
            transaction_timeout_ms=timeout_ms,
            producer_id=pid,
            producer_epoch=epoch,
        )
        version = self.top(INIT_PID, 6) if version is None else version
        return await self.s.call(self.coordinator, INIT_PID, version, request)

    async def init_ok(self, **kwargs):
        body = await _retry(lambda: self.init(**kwargs), lambda b: b.error_code)
        if body.error_code != Errors.NONE:
            raise SetupFailed(f"InitProducerId for {self.id}: error {body.error_code}")
        self.pid, self.epoch = body.producer_id, body.producer_epoch
        return body

    async def add(self, partitions, version=None, *, txn_id=None, pid=None, epoch=None) -> dict:
        """AddPartitionsToTxn as a client sends it (v0-3): ``{(topic, partition): error}``."""
        T = AddPartitionsToTxnRequest  # noqa: N806
        request = T(
            v3_and_below_transactional_id=txn_id or self.id,
            v3_and_below_producer_id=self.pid if pid is None else pid,
            v3_and_below_producer_epoch=self.epoch if epoch is None else epoch,
            v3_and_below_topics=[T.AddPartitionsToTxnTopic(name=t, partitions=[p]) for t, p in partitions],
        )
        version = self.top(ADD_PARTITIONS, 3) if version is None else version
        body = await self.s.call(self.coordinator, ADD_PARTITIONS, version, request)
        return {
            (t.name, r.partition_index): r.partition_error_code
            for t in body.results_by_topic_v3_and_below
            for r in t.results_by_partition
        }

    async def add_ok(self, topic: str, partition: int = 0) -> None:
        codes = await _retry(lambda: self.add([(topic, partition)]), lambda c: c.get((topic, partition)))
        if codes.get((topic, partition)) != Errors.NONE:
            raise SetupFailed(f"AddPartitionsToTxn {topic}-{partition}: {codes}")

    async def add_batched(self, partitions, version: int, *, verify_only: bool, epoch=None) -> dict:
        """AddPartitionsToTxn in the brokers' batched form (v4+), one transaction."""
        T = AddPartitionsToTxnRequest  # noqa: N806
        one = T.AddPartitionsToTxnTransaction(
            transactional_id=self.id,
            producer_id=self.pid,
            producer_epoch=self.epoch if epoch is None else epoch,
            verify_only=verify_only,
            topics=[T.AddPartitionsToTxnTopic(name=t, partitions=[p]) for t, p in partitions],
        )
        body = await self.s.call(self.coordinator, ADD_PARTITIONS, version, T(transactions=[one]))
        expect_error("error_code", body.error_code, Errors.NONE)
        expect("results_by_transaction", len(body.results_by_transaction), 1)
        return {
            (t.name, r.partition_index): r.partition_error_code
            for t in body.results_by_transaction[0].topic_results
            for r in t.results_by_partition
        }

    async def add_offsets(self, group: str, version=None, *, txn_id=None, epoch=None):
        request = AddOffsetsToTxnRequest(
            transactional_id=txn_id or self.id,
            producer_id=self.pid,
            producer_epoch=self.epoch if epoch is None else epoch,
            group_id=group,
        )
        version = self.top(ADD_OFFSETS, 4) if version is None else version
        return await self.s.call(self.coordinator, ADD_OFFSETS, version, request)

    async def end(self, commit: bool, version=None, *, txn_id=None, pid=None, epoch=None):
        request = EndTxnRequest(
            transactional_id=txn_id or self.id,
            producer_id=self.pid if pid is None else pid,
            producer_epoch=self.epoch if epoch is None else epoch,
            committed=commit,
        )
        # set-up ends transactions as a transactions-v1 client (v4 at most): the epoch stays
        version = self.top(END_TXN, 4) if version is None else version
        return await self.s.call(self.coordinator, END_TXN, version, request)

    async def end_ok(self, commit: bool) -> None:
        body = await _retry(lambda: self.end(commit), lambda b: b.error_code)
        if body.error_code != Errors.NONE:
            raise SetupFailed(f"EndTxn commit={commit}: error {body.error_code}")

    async def produce(self, leader, topic: str, topic_id, count: int = 2, version=None, *, epoch=None):
        """A transactional batch of ``count`` records at the next sequence; the partition's answer."""
        records = batch(
            count,
            producer_id=self.pid,
            producer_epoch=self.epoch if epoch is None else epoch,
            base_sequence=self.sequence,
            is_transactional=True,
        )
        # up to v11: a transactions-v1 producer, which adds partitions with AddPartitionsToTxn itself
        version = self.top(PRODUCE, 11) if version is None else version
        request = produce_request(topic, records, topic_id=topic_id, transactional_id=self.id)
        body = await self.s.call(leader, PRODUCE, version, request)
        part = body.responses[0].partition_responses[0]
        if part.error_code == Errors.NONE:
            self.sequence += count
        return part

    async def produce_ok(self, leader, topic: str, topic_id, count: int = 2) -> int:
        part = await self.produce(leader, topic, topic_id, count)
        if part.error_code != Errors.NONE:
            raise SetupFailed(f"transactional produce to {topic}: error {part.error_code}")
        return part.base_offset


async def _retry(call, code_of, attempts: int = 50):
    """``call()`` until its error code is not a busy coordinator's."""
    for _ in range(attempts):
        result = await call()
        if code_of(result) not in _BUSY:
            return result
        await asyncio.sleep(0.1)
    return result


async def open_txn(s: RuleSession, partitions: int = 1, **kwargs):
    """A transaction with a topic of the test's own added to it: (txn, topic, topic_id)."""
    topic, topic_id = await s.create_topic(partitions)
    txn = await Txn.start(s, **kwargs)
    await txn.knows(topic)
    await txn.add_ok(topic)
    return txn, topic, topic_id


# ---- InitProducerId --------------------------------------------------------------------------------


@rule(
    "init-producer-id.idempotent-without-transactional-id",
    api=INIT_PID,
    versions=(0, 6),
    source="KafkaApis.handleInitProducerIdRequest TransactionCoordinator.handleInitProducerId",
    family=FAMILY,
)
async def init_idempotent(s: RuleSession, version: int) -> None:
    """An InitProducerId without a transactional id, sent to any broker, gives a fresh producer id at
    epoch 0 (an idempotent producer)."""
    client = await s.raw()
    request = InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60_000)
    body = await s.call(client, INIT_PID, version, request)
    expect_error("error_code", body.error_code, Errors.NONE)
    expect("producer_id >= 0", body.producer_id >= 0, True, f"producer_id {body.producer_id}")
    expect("producer_epoch", body.producer_epoch, 0)


@rule(
    "init-producer-id.idempotent-ids-are-distinct",
    api=INIT_PID,
    versions=(0, 6),
    source="TransactionCoordinator.handleInitProducerId producerIdManager.generateProducerId",
    family=FAMILY,
)
async def init_idempotent_distinct(s: RuleSession, version: int) -> None:
    """Each InitProducerId without a transactional id gives a producer id no earlier one had."""
    client = await s.raw()
    request = InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60_000)
    first = await s.call(client, INIT_PID, version, request)
    second = await s.call(client, INIT_PID, version, request)
    expect_error("error_code", second.error_code, Errors.NONE)
    expect("second producer_id != first", second.producer_id != first.producer_id, True)


@rule(
    "init-producer-id.transactional-first-epoch-zero",
    api=INIT_PID,
    versions=(0, 6),
    source="TransactionCoordinator.handleInitProducerId prepareInitProducerIdTransit",
    family=FAMILY,
)
async def init_transactional(s: RuleSession, version: int) -> None:
    """An InitProducerId for a new transactional id, at its coordinator, gives a producer id at epoch 0."""
    txn_id = s.name("x")
    txn = Txn(s, txn_id, await s.coordinator(txn_id, 1))
    body = await _retry(lambda: txn.init(version), lambda b: b.error_code)
    expect_error("error_code", body.error_code, Errors.NONE)
    expect("producer_id >= 0", body.producer_id >= 0, True, f"producer_id {body.producer_id}")
    expect("producer_epoch", body.producer_epoch, 0)


@rule(
    "init-producer-id.again-bumps-epoch",
    api=INIT_PID,
    versions=(0, 6),
    source="TransactionMetadata.prepareIncrementProducerEpoch",
    family=FAMILY,
)
async def init_again(s: RuleSession, version: int) -> None:
    """A second InitProducerId for the same transactional id keeps the producer id and bumps the epoch,
    fencing the earlier producer."""
    txn = await Txn.start(s)
    body = await _retry(lambda: txn.init(version), lambda b: b.error_code)
    expect_error("error_code", body.error_code, Errors.NONE)
    expect("producer_id", body.producer_id, txn.pid)
    expect("producer_epoch", body.producer_epoch, txn.epoch + 1)


@rule(
    "init-producer-id.timeout-above-max",
    api=INIT_PID,
    versions=(0, 6),
    source="TransactionCoordinator.validateTransactionTimeoutMs transaction.max.timeout.ms",
    family=FAMILY,
)
async def init_timeout_above_max(s: RuleSession, version: int) -> None:
    """A transaction timeout above transaction.max.timeout.ms (15 minutes by default) is refused with
    INVALID_TRANSACTION_TIMEOUT."""
    txn_id = s.name("x")
    txn = Txn(s, txn_id, await s.coordinator(txn_id, 1))
    body = await txn.init(version, timeout_ms=_MAX_TIMEOUT_MS + 1)
    expect_error("error_code", body.error_code, Errors.INVALID_TRANSACTION_TIMEOUT)


@rule(
    "init-producer-id.timeout-not-positive",
    api=INIT_PID,
    versions=(0, 6),
    source="TransactionCoordinator.validateTransactionTimeoutMs txnTimeoutMs <= 0",
    family=FAMILY,
)
async def init_timeout_zero(s: RuleSession, version: int) -> None:
    """A transaction timeout of 0 or below is refused with INVALID_TRANSACTION_TIMEOUT."""
    txn_id = s.name("x")
    txn = Txn(s, txn_id, await s.coordinator(txn_id, 1))
    body = await txn.init(version, timeout_ms=0)
    expect_error("error_code", body.error_code, Errors.INVALID_TRANSACTION_TIMEOUT)


@rule(
    "init-producer-id.current-epoch-bumps",
    api=INIT_PID,
    versions=(3, 6),
    source="TransactionCoordinator.handleInitProducerId isValidProducerId",
    family=FAMILY,
    since="2.5",
)
async def init_with_current_epoch(s: RuleSession, version: int) -> None:
    """From v3 (KIP-360), an InitProducerId naming the current producer id and epoch is answered with the
    same producer id at the next epoch."""
    txn = await Txn.start(s)
    body = await _retry(lambda: txn.init(version, pid=txn.pid, epoch=txn.epoch), lambda b: b.error_code)
    expect_error("error_code", body.error_code, Errors.NONE)
    expect("producer_id", body.producer_id, txn.pid)
    expect("producer_epoch", body.producer_epoch, txn.epoch + 1)


async def _stale_init(s: RuleSession, version: int, expected: int) -> None:
    txn = await Txn.start(s)
    await txn.init_ok()
    await txn.init_ok()  # the epoch is now two above the first one
    body = await txn.init(version, pid=txn.pid, epoch=txn.epoch - 2)
    expect_error("error_code", body.error_code, expected)


@rule(
    "init-producer-id.stale-epoch-producer-fenced",
    api=INIT_PID,
    versions=(4, 6),
    source="TransactionMetadata.prepareIncrementProducerEpoch PRODUCER_FENCED",
    family=FAMILY,
    since="2.7",
)
async def init_stale_fenced(s: RuleSession, version: int) -> None:
    """From v4, an InitProducerId naming an epoch older than the current one is refused with
    PRODUCER_FENCED."""
    await _stale_init(s, version, Errors.PRODUCER_FENCED)


@rule(
    "init-producer-id.stale-epoch-invalid-epoch-v3",
    api=INIT_PID,
    versions=(3, 3),
    source="KafkaApis.handleInitProducerIdRequest PRODUCER_FENCED to INVALID_PRODUCER_EPOCH below v4",
    family=FAMILY,
    since="2.5",
)
async def init_stale_v3(s: RuleSession, version: int) -> None:
    """At v3, whose clients do not know PRODUCER_FENCED, a stale epoch is refused with
    INVALID_PRODUCER_EPOCH instead."""
    await _stale_init(s, version, Errors.INVALID_PRODUCER_EPOCH)


@rule(
    "init-producer-id.open-transaction-concurrent",
    api=INIT_PID,
    versions=(0, 6),
    source="TransactionCoordinator.handleInitProducerId Ongoing prepareAbortOrCommit",
    family=FAMILY,
)
async def init_during_open_txn(s: RuleSession, version: int) -> None:
    """An InitProducerId while the transactional id has a transaction open aborts that transaction and
    answers CONCURRENT_TRANSACTIONS, so the producer retries."""
    txn, _, _ = await open_txn(s)
    body = await txn.init(version)
    expect_error("error_code", body.error_code, Errors.CONCURRENT_TRANSACTIONS)


@rule(
    "init-producer-id.open-transaction-fences-twice",
    api=INIT_PID,
    versions=(0, 6),
    source="TransactionCoordinator.handleInitProducerId Ongoing prepareFenceProducerEpoch",
    family=FAMILY,
)
async def init_after_open_txn(s: RuleSession, version: int) -> None:
    """Retried after the abort of an open transaction, InitProducerId gives the epoch two above the
    old producer's: one bump fenced it for the abort, one is the new producer's."""
    txn, _, _ = await open_txn(s)
    body = await _retry(lambda: txn.init(version), lambda b: b.error_code)
    expect_error("error_code", body.error_code, Errors.NONE)
    expect("producer_id", body.producer_id, txn.pid)
    expect("producer_epoch", body.producer_epoch, txn.epoch + 2)
