"""Rules of transactional offset commits (AddOffsetsToTxn then TxnOffsetCommit, and what OffsetFetch
sees before and after the transaction ends) and of DescribeTransactions / ListTransactions."""

from __future__ import annotations

import asyncio

from kconform.codecs.errors import Errors
from kconform.codecs.messages import (
    DescribeTransactionsRequest,
    ListTransactionsRequest,
    OffsetFetchRequest,
    TxnOffsetCommitRequest,
)

from .catalogue import rule
from .rules_transactions import FAMILY, Txn, _retry, open_txn
from .session import RuleSession, SetupFailed, expect, expect_error

OFFSET_FETCH, TXN_OFFSET_COMMIT, DESCRIBE_TXNS, LIST_TXNS = 9, 28, 65, 66


# ---- transactional offset commits ----------------------------------------------------------------


def _txn_offset_commit(
    txn: Txn, group: str, topic: str, offset: int, *, epoch=None
) -> TxnOffsetCommitRequest:
    T = TxnOffsetCommitRequest  # noqa: N806
    return T(
        transactional_id=txn.id,
        group_id=group,
        producer_id=txn.pid,
        producer_epoch=txn.epoch if epoch is None else epoch,
        generation_id=-1,
        member_id="",
        topics=[
            T.TxnOffsetCommitRequestTopic(
                name=topic,
                partitions=[T.TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=offset)],
            )
        ],
    )


async def _commit_offsets(s: RuleSession, txn: Txn, group: str, topic: str, offset: int, version: int) -> int:
    """AddOffsetsToTxn then TxnOffsetCommit at ``version``: the partition's error code."""
    added = await _retry(lambda: txn.add_offsets(group), lambda b: b.error_code)
    if added.error_code != Errors.NONE:
        raise SetupFailed(f"AddOffsetsToTxn {group}: error {added.error_code}")
    client = await s.coordinator(group, 0)
    body = await s.call(client, TXN_OFFSET_COMMIT, version, _txn_offset_commit(txn, group, topic, offset))
    return body.topics[0].partitions[0].error_code


async def _committed(s: RuleSession, group: str, topic: str, *, stable: bool) -> tuple[int, int]:
    """The group's offset of ``topic``-0 by OffsetFetch (v7+, require_stable): (offset, error)."""
    served = s.versions.get(OFFSET_FETCH, (0, -1))
    if served[1] < 7:
        raise SetupFailed(f"OffsetFetch v7+ (require_stable) not served: {served}")
    version = served[1]
    F = OffsetFetchRequest  # noqa: N806
    client = await s.coordinator(group, 0)
    if version >= 8:
        request = F(
            groups=[
                F.OffsetFetchRequestGroup(
                    group_id=group, topics=[F.OffsetFetchRequestTopics(name=topic, partition_indexes=[0])]
                )
            ],
            require_stable=stable,
        )
        body = await s.call(client, OFFSET_FETCH, version, request)
        part = body.groups[0].topics[0].partitions[0]
    else:
        request = F(
            group_id=group,
            topics=[F.OffsetFetchRequestTopic(name=topic, partition_indexes=[0])],
            require_stable=stable,
        )
        body = await s.call(client, OFFSET_FETCH, version, request)
        part = body.topics[0].partitions[0]
    return part.committed_offset, part.error_code


@rule(
    "txn.offset-commit.after-add-offsets",
    api=TXN_OFFSET_COMMIT,
    versions=(0, 5),
    source="GroupCoordinator.handleTxnCommitOffsets",
    family=FAMILY,
)
async def txn_offset_commit_ok(s: RuleSession, version: int) -> None:
    """TxnOffsetCommit after AddOffsetsToTxn, at the current producer id and epoch, answers NONE."""
    topic, _ = await s.create_topic()
    txn = await Txn.start(s)
    code = await _commit_offsets(s, txn, s.name("g"), topic, 5, version)
    expect_error("error_code", code, Errors.NONE)


@rule(
    "txn.offset-commit.pending-is-unstable",
    api=TXN_OFFSET_COMMIT,
    versions=(0, 5),
    source="GroupMetadataManager.fetchOffsets requireStable UNSTABLE_OFFSET_COMMIT",
    family=FAMILY,
    since="2.5",
)
async def txn_offset_pending(s: RuleSession, version: int) -> None:
    """Until the transaction commits, an OffsetFetch with require_stable for the partition answers
    UNSTABLE_OFFSET_COMMIT, and one without it sees no offset (-1)."""
    topic, _ = await s.create_topic()
    txn = await Txn.start(s)
    group = s.name("g")
    code = await _commit_offsets(s, txn, group, topic, 5, version)
    if code != Errors.NONE:
        raise SetupFailed(f"TxnOffsetCommit: error {code}")
    expect(
        "require_stable (offset, error)",
        await _committed(s, group, topic, stable=True),
        (-1, Errors.UNSTABLE_OFFSET_COMMIT),
    )
    expect("(offset, error)", await _committed(s, group, topic, stable=False), (-1, Errors.NONE))


async def _offset_after_end(s: RuleSession, version: int, commit: bool) -> tuple[int, int]:
    topic, _ = await s.create_topic()
    txn = await Txn.start(s)
    group = s.name("g")
    code = await _commit_offsets(s, txn, group, topic, 5, version)
    if code != Errors.NONE:
        raise SetupFailed(f"TxnOffsetCommit: error {code}")
    await txn.end_ok(commit)
    for _ in range(50):  # the offsets apply once the marker reaches __consumer_offsets
        got = await _committed(s, group, topic, stable=True)
        if got[1] != Errors.UNSTABLE_OFFSET_COMMIT:
            return got
        await asyncio.sleep(0.1)
    return got


@rule(
    "txn.offset-commit.visible-after-commit",
    api=TXN_OFFSET_COMMIT,
    versions=(0, 5),
    source="GroupMetadataManager.handleTxnCompletion isCommit",
    family=FAMILY,
)
async def txn_offset_committed(s: RuleSession, version: int) -> None:
    """Offsets committed in a transaction become the group's once the transaction commits."""
    expect("(offset, error)", await _offset_after_end(s, version, True), (5, Errors.NONE))


@rule(
    "txn.offset-commit.dropped-on-abort",
    api=TXN_OFFSET_COMMIT,
    versions=(0, 5),
    source="GroupMetadataManager.handleTxnCompletion abort removes pendingTransactionalOffsetCommits",
    family=FAMILY,
)
async def txn_offset_aborted(s: RuleSession, version: int) -> None:
    """Offsets committed in a transaction that aborts are dropped: the group has no offset (-1)."""
    expect("(offset, error)", await _offset_after_end(s, version, False), (-1, Errors.NONE))


# ---- DescribeTransactions / ListTransactions ---------------------------------------------------------


async def _describe(s: RuleSession, txn: Txn):
    body = await s.call(
        txn.coordinator, DESCRIBE_TXNS, 0, DescribeTransactionsRequest(transactional_ids=[txn.id])
    )
    return body.transaction_states[0]


@rule(
    "txn.describe.unknown-transactional-id",
    api=DESCRIBE_TXNS,
    versions=(0, 0),
    source="TransactionCoordinator.handleDescribeTransactions TRANSACTIONAL_ID_NOT_FOUND",
    family=FAMILY,
    since="3.0",
)
async def describe_unknown(s: RuleSession, version: int) -> None:
    """DescribeTransactions for a transactional id the coordinator does not know answers
    TRANSACTIONAL_ID_NOT_FOUND for it."""
    txn = await Txn.start(s)
    state = await _describe(s, await txn.stranger())
    expect_error("error_code", state.error_code, Errors.TRANSACTIONAL_ID_NOT_FOUND)


@rule(
    "txn.describe.empty-after-init",
    api=DESCRIBE_TXNS,
    versions=(0, 0),
    source="TransactionCoordinator.handleDescribeTransactions TransactionState.EMPTY",
    family=FAMILY,
    since="3.0",
)
async def describe_empty(s: RuleSession, version: int) -> None:
    """After InitProducerId, DescribeTransactions shows the id in state Empty with its producer id, epoch
    and timeout, and no partitions."""
    txn = await Txn.start(s, timeout_ms=45_000)
    state = await _describe(s, txn)
    expect_error("error_code", state.error_code, Errors.NONE)
    got = (state.transaction_state, state.producer_id, state.producer_epoch, state.transaction_timeout_ms)
    expect("(state, producer_id, producer_epoch, timeout)", got, ("Empty", txn.pid, txn.epoch, 45_000))
    expect("topics", list(state.topics), [])


@rule(
    "txn.describe.ongoing-lists-partitions",
    api=DESCRIBE_TXNS,
    versions=(0, 0),
    source="TransactionCoordinator.handleDescribeTransactions topicPartitions",
    family=FAMILY,
    since="3.0",
)
async def describe_ongoing(s: RuleSession, version: int) -> None:
    """With partitions added, DescribeTransactions shows state Ongoing and the partitions by topic."""
    txn, topic, _ = await open_txn(s)
    state = await _describe(s, txn)
    expect("transaction_state", state.transaction_state, "Ongoing")
    expect("topics", [(t.topic, list(t.partitions)) for t in state.topics], [(topic, [0])])


@rule(
    "txn.describe.complete-commit",
    api=DESCRIBE_TXNS,
    versions=(0, 0),
    source="TransactionCoordinator.handleDescribeTransactions TransactionState.COMPLETE_COMMIT",
    family=FAMILY,
    since="3.0",
)
async def describe_committed(s: RuleSession, version: int) -> None:
    """After a commit completes, DescribeTransactions shows state CompleteCommit and no partitions."""
    txn, _, _ = await open_txn(s)
    await txn.end_ok(True)
    for _ in range(50):  # PrepareCommit until the markers are written
        state = await _describe(s, txn)
        if state.transaction_state != "PrepareCommit":
            break
        await asyncio.sleep(0.1)
    expect("transaction_state", state.transaction_state, "CompleteCommit")
    expect("topics", list(state.topics), [])


def _list_request(states=(), pids=(), pattern=None) -> ListTransactionsRequest:
    return ListTransactionsRequest(
        state_filters=list(states),
        producer_id_filters=list(pids),
        duration_filter=-1,
        transactional_id_pattern=pattern,
    )


@rule(
    "txn.list.state-filter",
    api=LIST_TXNS,
    versions=(0, 2),
    source="TransactionStateManager.listTransactionStates stateFilters",
    family=FAMILY,
    since="3.0",
)
async def list_by_state(s: RuleSession, version: int) -> None:
    """ListTransactions with a state filter lists the transactional ids in those states only."""
    txn, _, _ = await open_txn(s)
    idle = await Txn.start(s)
    body = await s.call(txn.coordinator, LIST_TXNS, version, _list_request(["Ongoing"]))
    ids = {t.transactional_id: t.transaction_state for t in body.transaction_states}
    expect(f"listed {txn.id}", ids.get(txn.id), "Ongoing")
    expect(f"listed {idle.id}", ids.get(idle.id), None)
    expect("states", {v for v in ids.values()} - {"Ongoing"}, set())


@rule(
    "txn.list.unknown-state-filter",
    api=LIST_TXNS,
    versions=(0, 2),
    source="TransactionStateManager.listTransactionStates unknownStateFilters",
    family=FAMILY,
    since="3.0",
)
async def list_unknown_state(s: RuleSession, version: int) -> None:
    """ListTransactions with a state filter Kafka does not know answers it in unknown_state_filters and
    lists nothing."""
    txn = await Txn.start(s)
    body = await s.call(txn.coordinator, LIST_TXNS, version, _list_request(["Bogus"]))
    expect_error("error_code", body.error_code, Errors.NONE)
    expect(
        "(unknown_state_filters, transaction_states)",
        (list(body.unknown_state_filters), list(body.transaction_states)),
        (["Bogus"], []),
    )


@rule(
    "txn.list.producer-id-filter",
    api=LIST_TXNS,
    versions=(0, 2),
    source="TransactionStateManager.listTransactionStates producerIdFilters",
    family=FAMILY,
    since="3.0",
)
async def list_by_producer(s: RuleSession, version: int) -> None:
    """ListTransactions with a producer id filter lists only the transactional ids of those producers."""
    txn = await Txn.start(s)
    await Txn.start(s)
    body = await s.call(txn.coordinator, LIST_TXNS, version, _list_request(pids=[txn.pid]))
    listed = [(t.transactional_id, t.producer_id) for t in body.transaction_states]
    expect("transaction_states", listed, [(txn.id, txn.pid)])


@rule(
    "txn.list.pattern-matches-whole-id",
    api=LIST_TXNS,
    versions=(2, 2),
    source="TransactionStateManager.listTransactionStates transactionalIdPattern RE2J matches",
    family=FAMILY,
    since="4.1",
)
async def list_by_pattern(s: RuleSession, version: int) -> None:
    """From v2, ListTransactions lists the transactional ids the pattern matches as a whole (a prefix of
    an id does not match)."""
    txn = await Txn.start(s)
    other = await Txn.start(s)
    full = await s.call(
        txn.coordinator, LIST_TXNS, version, _list_request(pattern=txn.id.replace(".", "\\."))
    )
    expect("listed", sorted(t.transactional_id for t in full.transaction_states), [txn.id])
    prefix = await s.call(txn.coordinator, LIST_TXNS, version, _list_request(pattern=txn.id[:-1]))
    ids = [t.transactional_id for t in prefix.transaction_states]
    expect("listed by a prefix", [i for i in ids if i in (txn.id, other.id)], [])


async def _commit_without_add_offsets(s: RuleSession, version: int) -> int:
    topic, _ = await s.create_topic()
    txn = await Txn.start(s)
    group = s.name("g")
    client = await s.coordinator(group, 0)
    body = await s.call(client, TXN_OFFSET_COMMIT, version, _txn_offset_commit(txn, group, topic, 5))
    return body.topics[0].partitions[0].error_code


@rule(
    "txn.offset-commit.without-add-offsets",
    api=TXN_OFFSET_COMMIT,
    versions=(0, 3),
    source="AddPartitionsToTxnManager.txnOffsetCommitRequestVersionToTransactionSupportedOperation"
    " DEFAULT_ERROR",
    family=FAMILY,
    since="3.8",
)
async def txn_offset_unverified_old(s: RuleSession, version: int) -> None:
    """A TxnOffsetCommit (v0-3) whose group's offsets partition is not in the transaction (no
    AddOffsetsToTxn) is refused with INVALID_TXN_STATE (KIP-890 verification)."""
    expect_error("error_code", await _commit_without_add_offsets(s, version), Errors.INVALID_TXN_STATE)


@rule(
    "txn.offset-commit.without-add-offsets-v4",
    api=TXN_OFFSET_COMMIT,
    versions=(4, 4),
    source="AddPartitionsToTxnManager.txnOffsetCommitRequestVersionToTransactionSupportedOperation"
    " GENERIC_ERROR",
    family=FAMILY,
    since="4.0",
)
async def txn_offset_unverified_v4(s: RuleSession, version: int) -> None:
    """A TxnOffsetCommit v4 whose group's offsets partition is not in the transaction is refused with
    TRANSACTION_ABORTABLE, which v4 clients know."""
    expect_error("error_code", await _commit_without_add_offsets(s, version), Errors.TRANSACTION_ABORTABLE)


@rule(
    "txn.offset-commit.v5-adds-offsets-partition",
    api=TXN_OFFSET_COMMIT,
    versions=(5, 5),
    source="AddPartitionsToTxnManager.txnOffsetCommitRequestVersionToTransactionSupportedOperation"
    " ADD_PARTITION",
    family=FAMILY,
    since="4.0",
)
async def txn_offset_v5_adds(s: RuleSession, version: int) -> None:
    """A TxnOffsetCommit v5 (transactions v2) adds the group's offsets partition to the transaction
    itself, without AddOffsetsToTxn: NONE, and the transaction is Ongoing."""
    topic, _ = await s.create_topic()
    txn = await Txn.start(s)
    group = s.name("g")
    client = await s.coordinator(group, 0)
    body = await s.call(client, TXN_OFFSET_COMMIT, version, _txn_offset_commit(txn, group, topic, 5))
    expect_error("error_code", body.topics[0].partitions[0].error_code, Errors.NONE)
    state = await _describe(s, txn)
    expect("transaction_state", state.transaction_state, "Ongoing")
