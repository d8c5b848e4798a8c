"""Rules of EndTxn at the transaction coordinator: the state table of TransactionCoordinator.endTransaction
for transactions v1 (v0-4) and v2 (v5, KIP-890 part 2), and the version translations in KafkaApis."""

from __future__ import annotations

from kconform.codecs.errors import Errors

from .catalogue import rule
from .rules_transactions import END_TXN, FAMILY, Txn, _retry, open_txn
from .session import RuleSession, expect, expect_error

# ---- EndTxn -------------------------------------------------------------------------------------------


@rule(
    "txn.end.commit-without-transaction",
    api=END_TXN,
    versions=(0, 5),
    source="TransactionCoordinator.endTransaction Empty INVALID_TXN_STATE",
    family=FAMILY,
)
async def end_commit_empty(s: RuleSession, version: int) -> None:
    """EndTxn committing when no transaction is open (nothing added since InitProducerId) is refused
    with INVALID_TXN_STATE."""
    txn = await Txn.start(s)
    body = await txn.end(True, version)
    expect_error("error_code", body.error_code, Errors.INVALID_TXN_STATE)


@rule(
    "txn.end.abort-without-transaction-v1",
    api=END_TXN,
    versions=(0, 4),
    source="TransactionCoordinator.endTransactionWithTV1 Empty INVALID_TXN_STATE",
    family=FAMILY,
)
async def end_abort_empty(s: RuleSession, version: int) -> None:
    """Below v5 (transactions v1), EndTxn aborting when no transaction is open is refused with
    INVALID_TXN_STATE."""
    txn = await Txn.start(s)
    body = await txn.end(False, version)
    expect_error("error_code", body.error_code, Errors.INVALID_TXN_STATE)


@rule(
    "txn.end.commit-open-transaction",
    api=END_TXN,
    versions=(0, 5),
    source="TransactionCoordinator.endTransaction Ongoing prepareAbortOrCommit",
    family=FAMILY,
)
async def end_commit(s: RuleSession, version: int) -> None:
    """EndTxn committing an open transaction at the current producer id and epoch answers NONE."""
    txn, _, _ = await open_txn(s)
    body = await txn.end(True, version)
    expect_error("error_code", body.error_code, Errors.NONE)


@rule(
    "txn.end.abort-retried",
    api=END_TXN,
    versions=(0, 4),
    source="TransactionCoordinator.endTransactionWithTV1 CompleteAbort",
    family=FAMILY,
)
async def end_abort_retry(s: RuleSession, version: int) -> None:
    """Below v5, an abort sent again after the transaction aborted (a retry) answers NONE."""
    txn, _, _ = await open_txn(s)
    await txn.end_ok(False)
    body = await _retry(lambda: txn.end(False, version), lambda b: b.error_code)
    expect_error("error_code", body.error_code, Errors.NONE)


@rule(
    "txn.end.commit-after-abort",
    api=END_TXN,
    versions=(0, 5),
    source="TransactionCoordinator.endTransaction CompleteAbort INVALID_TXN_STATE",
    family=FAMILY,
)
async def end_commit_after_abort(s: RuleSession, version: int) -> None:
    """A commit sent after the transaction aborted (at the epoch it aborted with) is refused with
    INVALID_TXN_STATE."""
    txn, _, _ = await open_txn(s)
    await txn.end_ok(False)
    # The same abort again is answered CONCURRENT_TRANSACTIONS until the markers are written, then NONE:
    # the transaction has aborted, not only begun to. (In PrepareAbort a transactions-v2 commit at the
    # epoch the abort did not bump is PRODUCER_FENCED, not this rule: TransactionCoordinator
    # endTransaction's isValidEpoch takes only a retry on an epoch bump while preparing.)
    await txn.end_ok(False)
    body = await _retry(lambda: txn.end(True, version), lambda b: b.error_code)
    expect_error("error_code", body.error_code, Errors.INVALID_TXN_STATE)


@rule(
    "txn.end.wrong-epoch",
    api=END_TXN,
    versions=(0, 5),
    source="KafkaApis.handleEndTxnRequest PRODUCER_FENCED to INVALID_PRODUCER_EPOCH below v2",
    family=FAMILY,
)
async def end_fenced(s: RuleSession, version: int) -> None:
    """EndTxn at an epoch other than the current one is refused with PRODUCER_FENCED (INVALID_PRODUCER_EPOCH
    below v2)."""
    txn, _, _ = await open_txn(s)
    body = await txn.end(True, version, epoch=txn.epoch + 3)
    fenced = Errors.PRODUCER_FENCED if version >= 2 else Errors.INVALID_PRODUCER_EPOCH
    expect_error("error_code", body.error_code, fenced)


@rule(
    "txn.end.unknown-transactional-id",
    api=END_TXN,
    versions=(0, 5),
    source="TransactionCoordinator.endTransaction getTransactionState None",
    family=FAMILY,
)
async def end_unknown(s: RuleSession, version: int) -> None:
    """EndTxn for a transactional id the coordinator does not know is refused with
    INVALID_PRODUCER_ID_MAPPING."""
    txn = await Txn.start(s)
    body = await (await txn.stranger()).end(True, version)
    expect_error("error_code", body.error_code, Errors.INVALID_PRODUCER_ID_MAPPING)


@rule(
    "txn.end.v5-commit-bumps-epoch",
    api=END_TXN,
    versions=(5, 5),
    source="TransactionCoordinator.endTransaction TV2 prepareAbortOrCommit epoch bump",
    family=FAMILY,
    since="4.0",
)
async def end_v5_bumps(s: RuleSession, version: int) -> None:
    """From v5 (transactions v2), ending a transaction bumps the epoch and the answer carries the producer
    id and the new epoch."""
    txn, _, _ = await open_txn(s)
    body = await txn.end(True, version)
    expect_error("error_code", body.error_code, Errors.NONE)
    expect("producer_id", body.producer_id, txn.pid)
    expect("producer_epoch", body.producer_epoch, txn.epoch + 1)


@rule(
    "txn.end.v5-abort-without-transaction-bumps",
    api=END_TXN,
    versions=(5, 5),
    source="TransactionCoordinator.endTransaction TV2 Empty abort",
    family=FAMILY,
    since="4.0",
)
async def end_v5_empty_abort(s: RuleSession, version: int) -> None:
    """From v5, an abort with no transaction open is taken: NONE with the epoch bumped."""
    txn = await Txn.start(s)
    body = await txn.end(False, version)
    expect_error("error_code", body.error_code, Errors.NONE)
    expect("producer_epoch", body.producer_epoch, txn.epoch + 1)


@rule(
    "txn.end.v5-retry-answers-current-epoch",
    api=END_TXN,
    versions=(5, 5),
    source="TransactionCoordinator.endTransaction TV2 isRetry",
    family=FAMILY,
    since="4.0",
)
async def end_v5_retry(s: RuleSession, version: int) -> None:
    """From v5, a commit retried at the epoch before the bump it caused answers NONE with the current
    producer id and epoch."""
    txn, _, _ = await open_txn(s)
    first = await txn.end(True, version)
    expect_error("first error_code", first.error_code, Errors.NONE)
    body = await _retry(lambda: txn.end(True, version), lambda b: b.error_code)
    expect_error("error_code", body.error_code, Errors.NONE)
    expect("producer_epoch", body.producer_epoch, txn.epoch + 1)


@rule(
    "txn.end.v5-errors-answer-no-producer",
    api=END_TXN,
    versions=(5, 5),
    source="KafkaApis.handleEndTxnRequest EndTxnResponse producerId -1 on error",
    family=FAMILY,
    since="4.0",
)
async def end_v5_error_ids(s: RuleSession, version: int) -> None:
    """From v5, an EndTxn refused (here a commit with nothing open) answers producer id and epoch -1."""
    txn = await Txn.start(s)
    body = await txn.end(True, version)
    expect_error("error_code", body.error_code, Errors.INVALID_TXN_STATE)
    expect("(producer_id, producer_epoch)", (body.producer_id, body.producer_epoch), (-1, -1))


@rule(
    "txn.end.fenced-after-reinit",
    api=END_TXN,
    versions=(0, 5),
    source="TransactionCoordinator.endTransaction producerEpoch below the current one",
    family=FAMILY,
)
async def end_zombie(s: RuleSession, version: int) -> None:
    """After a new InitProducerId aborted its transaction, the old producer's EndTxn at its old epoch is
    refused with PRODUCER_FENCED (INVALID_PRODUCER_EPOCH below v2)."""
    txn, _, _ = await open_txn(s)
    old_epoch = txn.epoch
    await txn.init_ok()
    body = await txn.end(True, version, epoch=old_epoch)
    fenced = Errors.PRODUCER_FENCED if version >= 2 else Errors.INVALID_PRODUCER_EPOCH
    expect_error("error_code", body.error_code, fenced)
