"""Rules of transactions as the partition log and its readers see them: transactional Produce and its
verification (KIP-890), the markers EndTxn writes, the last stable offset, read_committed Fetch and
ListOffsets (transactional offsets and DescribeTransactions / ListTransactions are in
rules_transactions_offsets)."""

from __future__ import annotations

import asyncio

from kconform.codecs.errors import Errors
from kconform.codecs.records import ControlRecordType, decode_control_key, iter_batches

from .catalogue import RuleFailed, rule
from .requests import LATEST, fetch_request, list_offsets_request
from .rules_transactions import FAMILY, PRODUCE, Txn, open_txn
from .session import RuleSession, SetupFailed, expect, expect_error

FETCH, LIST_OFFSETS = 1, 2
READ_UNCOMMITTED, READ_COMMITTED = 0, 1


# ---- transactional Produce ----------------------------------------------------------------------------


async def _produce_outside(s: RuleSession, version: int, expected: int) -> None:
    topic, topic_id = await s.create_topic()
    txn = await Txn.start(s)
    part = await txn.produce(await s.leader(topic), topic, topic_id, version=version)
    expect_error("error_code", part.error_code, expected)


@rule(
    "txn.produce.partition-not-in-transaction",
    api=PRODUCE,
    versions=(3, 10),
    source="ReplicaManager.appendRecords AddPartitionsToTxnManager DEFAULT_ERROR INVALID_TXN_STATE",
    family=FAMILY,
    since="3.6",
)
async def produce_outside_old(s: RuleSession, version: int) -> None:
    """A transactional Produce (v3-v10) to a partition not added to the producer's transaction is
    refused with INVALID_TXN_STATE (KIP-890 verification)."""
    await _produce_outside(s, version, Errors.INVALID_TXN_STATE)


@rule(
    "txn.produce.partition-not-in-transaction-v11",
    api=PRODUCE,
    versions=(11, 11),
    source="ReplicaManager.appendRecords AddPartitionsToTxnManager GENERIC_ERROR_SUPPORTED",
    family=FAMILY,
    since="4.0",
)
async def produce_outside_v11(s: RuleSession, version: int) -> None:
    """A transactional Produce v11 to a partition not added to the transaction is refused with
    TRANSACTION_ABORTABLE, which v11 clients know."""
    await _produce_outside(s, version, Errors.TRANSACTION_ABORTABLE)


@rule(
    "txn.produce.added-partition-appends",
    api=PRODUCE,
    versions=(3, 11),
    source="ReplicaManager.appendRecords ProducerAppendInfo.appendDataBatch",
    family=FAMILY,
)
async def produce_added(s: RuleSession, version: int) -> None:
    """A transactional Produce to a partition added to the ongoing transaction is appended: NONE."""
    txn, topic, topic_id = await open_txn(s)
    part = await txn.produce(await s.leader(topic), topic, topic_id, version=version)
    expect_error("error_code", part.error_code, Errors.NONE)
    expect("base_offset", part.base_offset, 0)


@rule(
    "txn.produce.after-abort-refused",
    api=PRODUCE,
    versions=(3, 10),
    source="ReplicaManager.appendRecords AddPartitionsToTxnManager verification after the transaction ended",
    family=FAMILY,
    since="3.6",
)
async def produce_after_abort(s: RuleSession, version: int) -> None:
    """Once the transaction aborted, a transactional Produce to its partition without adding it again is
    refused with INVALID_TXN_STATE."""
    txn, topic, topic_id = await open_txn(s)
    leader = await s.leader(topic)
    await txn.produce_ok(leader, topic, topic_id)
    await txn.end_ok(False)
    # until the marker is in the partition the transaction is still open there and the batch joins it
    await _settled(s, leader, topic, topic_id, 3)
    part = await txn.produce(leader, topic, topic_id, version=version)
    expect_error("error_code", part.error_code, Errors.INVALID_TXN_STATE)


@rule(
    "txn.produce.fenced-epoch",
    api=PRODUCE,
    versions=(3, 11),
    source="ProducerAppendInfo.checkProducerEpoch INVALID_PRODUCER_EPOCH",
    family=FAMILY,
)
async def produce_zombie(s: RuleSession, version: int) -> None:
    """After a new InitProducerId fenced it, the old producer's transactional Produce at its old epoch is
    refused with INVALID_PRODUCER_EPOCH."""
    txn, topic, topic_id = await open_txn(s)
    leader = await s.leader(topic)
    await txn.produce_ok(leader, topic, topic_id)
    old_epoch = txn.epoch
    await txn.init_ok()
    part = await txn.produce(leader, topic, topic_id, version=version, epoch=old_epoch)
    expect_error("error_code", part.error_code, Errors.INVALID_PRODUCER_EPOCH)


# ---- the log: markers and the last stable offset ---------------------------------------------------


async def _fetch(s: RuleSession, leader, topic, topic_id, version: int, isolation: int, offset: int = 0):
    request = fetch_request(topic, topic_id, {0: offset}, isolation_level=isolation)
    body = await s.call(leader, FETCH, version, request)
    # a sessionless Fetch answers every partition it asks for (FetchSession.FullFetchContext)
    if not body.responses or not body.responses[0].partitions:
        raise RuleFailed("responses[0].partitions", f"{topic}-0", "none", f"error_code {body.error_code}")
    return body.responses[0].partitions[0]


def _data(part) -> list:
    """The records of the data batches (control batches left out, as a consumer does)."""
    return [r for b in _batches(part) if not b.is_control for r in b.records]


def _batches(part) -> list:
    data = part.records
    raw = data.read() if hasattr(data, "read") else bytes(data or b"")
    return list(iter_batches(raw))


async def _ended(s: RuleSession, commit: bool, count: int = 2):
    """A transaction of ``count`` records, ended: (txn, leader, topic, topic_id)."""
    txn, topic, topic_id = await open_txn(s)
    leader = await s.leader(topic)
    await txn.produce_ok(leader, topic, topic_id, count)
    await txn.end_ok(commit)
    await _settled(s, leader, topic, topic_id, count + 1)
    return txn, leader, topic, topic_id


async def _settled(s: RuleSession, leader, topic, topic_id, end: int) -> None:
    """Markers are written after EndTxn answers: wait until the last stable offset reaches ``end``."""
    for _ in range(50):
        part = await _fetch(s, leader, topic, topic_id, s.read_back_version(topic_id), READ_COMMITTED)
        if part.last_stable_offset >= end:
            return
        await asyncio.sleep(0.1)
    raise SetupFailed(
        f"the marker of {topic}-0 was not written: last stable offset {part.last_stable_offset}"
    )


@rule(
    "txn.fetch.read-committed-stops-at-open-transaction",
    api=FETCH,
    versions=(4, 18),
    source="UnifiedLog.lastStableOffset ProducerStateManager.firstUnstableOffset",
    family=FAMILY,
)
async def fetch_open(s: RuleSession, version: int) -> None:
    """While a transaction is open, a read_committed Fetch returns no records past its first offset:
    last_stable_offset is that offset and high_watermark is past its records."""
    txn, topic, topic_id = await open_txn(s)
    leader = await s.leader(topic)
    await txn.produce_ok(leader, topic, topic_id, 2)
    part = await _fetch(s, leader, topic, topic_id, version, READ_COMMITTED)
    expect_error("error_code", part.error_code, Errors.NONE)
    expect("last_stable_offset", part.last_stable_offset, 0)
    expect("high_watermark", part.high_watermark, 2)
    expect("records", len(_data(part)), 0)


@rule(
    "txn.fetch.read-uncommitted-sees-open-transaction",
    api=FETCH,
    versions=(4, 18),
    source="ReplicaManager.readFromLocalLog FetchIsolation.HIGH_WATERMARK",
    family=FAMILY,
)
async def fetch_open_uncommitted(s: RuleSession, version: int) -> None:
    """A read_uncommitted Fetch returns the records of an open transaction up to the high watermark."""
    txn, topic, topic_id = await open_txn(s)
    leader = await s.leader(topic)
    await txn.produce_ok(leader, topic, topic_id, 2)
    part = await _fetch(s, leader, topic, topic_id, version, READ_UNCOMMITTED)
    expect("records", len(_data(part)), 2)


@rule(
    "txn.fetch.aborted-transactions-listed",
    api=FETCH,
    versions=(4, 18),
    source="UnifiedLog.collectAbortedTransactions LocalLog.addAbortedTransactions",
    family=FAMILY,
)
async def fetch_aborted_listed(s: RuleSession, version: int) -> None:
    """A read_committed Fetch over an aborted transaction lists it in aborted_transactions with its
    producer id and first offset, so the consumer drops its records."""
    txn, leader, topic, topic_id = await _ended(s, commit=False)
    part = await _fetch(s, leader, topic, topic_id, version, READ_COMMITTED)
    listed = [(a.producer_id, a.first_offset) for a in part.aborted_transactions or []]
    expect("aborted_transactions", listed, [(txn.pid, 0)])


@rule(
    "txn.fetch.read-uncommitted-lists-no-aborted",
    api=FETCH,
    versions=(4, 18),
    source="LocalLog.read FetchIsolation.HIGH_WATERMARK abortedTransactions empty",
    family=FAMILY,
)
async def fetch_uncommitted_no_aborted(s: RuleSession, version: int) -> None:
    """A read_uncommitted Fetch over an aborted transaction lists no aborted transactions (null or
    empty)."""
    _, leader, topic, topic_id = await _ended(s, commit=False)
    part = await _fetch(s, leader, topic, topic_id, version, READ_UNCOMMITTED)
    expect("aborted_transactions", list(part.aborted_transactions or []), [])


@rule(
    "txn.fetch.committed-no-aborted",
    api=FETCH,
    versions=(4, 18),
    source="LogSegment.collectAbortedTxns only aborts are indexed",
    family=FAMILY,
)
async def fetch_committed_no_aborted(s: RuleSession, version: int) -> None:
    """A read_committed Fetch over a committed transaction lists no aborted transactions and returns
    its records."""
    _, leader, topic, topic_id = await _ended(s, commit=True)
    part = await _fetch(s, leader, topic, topic_id, version, READ_COMMITTED)
    expect("aborted_transactions", list(part.aborted_transactions or []), [])
    expect("records", len(_data(part)), 2)


async def _marker_check(s: RuleSession, version: int, commit: bool) -> None:
    txn, leader, topic, topic_id = await _ended(s, commit=commit)
    part = await _fetch(s, leader, topic, topic_id, version, READ_UNCOMMITTED)
    control = [b for b in _batches(part) if b.is_control]
    expect("control batches", len(control), 1)
    marker = control[0]
    expect("marker base_offset", marker.base_offset, 2)
    expect(
        "marker (producer_id, producer_epoch)",
        (marker.producer_id, marker.producer_epoch),
        (txn.pid, txn.epoch),
    )
    expect("marker transactional", marker.is_transactional, True)
    kind = ControlRecordType.COMMIT if commit else ControlRecordType.ABORT
    expect("marker type", decode_control_key(marker.records[0].key)[1], kind)


@rule(
    "txn.log.commit-marker",
    api=FETCH,
    versions=(4, 18),
    source="KafkaApis.handleWriteTxnMarkersRequest MemoryRecords.withEndTransactionMarker COMMIT",
    family=FAMILY,
)
async def commit_marker(s: RuleSession, version: int) -> None:
    """A committed transaction ends in its partition with one transactional control batch holding a
    COMMIT record, at the next offset, with the producer id and epoch."""
    await _marker_check(s, version, True)


@rule(
    "txn.log.abort-marker",
    api=FETCH,
    versions=(4, 18),
    source="KafkaApis.handleWriteTxnMarkersRequest MemoryRecords.withEndTransactionMarker ABORT",
    family=FAMILY,
)
async def abort_marker(s: RuleSession, version: int) -> None:
    """An aborted transaction ends in its partition with one transactional control batch holding an
    ABORT record, at the next offset, with the producer id and epoch."""
    await _marker_check(s, version, False)


@rule(
    "txn.fetch.lso-after-marker",
    api=FETCH,
    versions=(4, 18),
    source="ProducerStateManager.completeTxn onHighWatermarkUpdated",
    family=FAMILY,
)
async def fetch_lso_after(s: RuleSession, version: int) -> None:
    """Once the marker is written, the last stable offset is past it and equals the high watermark."""
    _, leader, topic, topic_id = await _ended(s, commit=True)
    part = await _fetch(s, leader, topic, topic_id, version, READ_COMMITTED)
    expect("(last_stable_offset, high_watermark)", (part.last_stable_offset, part.high_watermark), (3, 3))


@rule(
    "txn.fetch.plain-records-before-open-transaction",
    api=FETCH,
    versions=(4, 18),
    source="ProducerStateManager.firstUnstableOffset ongoingTxns",
    family=FAMILY,
)
async def fetch_plain_before(s: RuleSession, version: int) -> None:
    """Records appended before a transaction opened stay readable under read_committed; the last stable
    offset is the open transaction's first offset."""
    from .requests import batch, produce_request

    txn = await Txn.start(s)
    topic, topic_id = await s.create_topic()
    leader = await s.leader(topic)
    produce_version = txn.top(PRODUCE, 11)
    plain = await s.call(
        leader, PRODUCE, produce_version, produce_request(topic, batch(3), topic_id=topic_id)
    )
    if plain.responses[0].partition_responses[0].error_code != Errors.NONE:
        raise SetupFailed("plain produce refused")
    await txn.add_ok(topic)
    await txn.produce_ok(leader, topic, topic_id, 2)
    part = await _fetch(s, leader, topic, topic_id, version, READ_COMMITTED)
    expect("last_stable_offset", part.last_stable_offset, 3)
    expect("records", len(_data(part)), 3)


# ---- ListOffsets under read_committed --------------------------------------------------------------


async def _latest(s: RuleSession, leader, topic, version: int, isolation: int) -> int:
    body = await s.call(
        leader, LIST_OFFSETS, version, list_offsets_request(topic, LATEST, isolation_level=isolation)
    )
    part = body.topics[0].partitions[0]
    expect_error("error_code", part.error_code, Errors.NONE)
    return part.offset


@rule(
    "txn.list-offsets.latest-read-committed-is-lso",
    api=LIST_OFFSETS,
    versions=(2, 11),
    source="ReplicaManager.fetchOffsetForTimestamp READ_COMMITTED lastStableOffset",
    family=FAMILY,
)
async def list_offsets_lso(s: RuleSession, version: int) -> None:
    """ListOffsets LATEST under read_committed answers the last stable offset: the first offset of an
    open transaction."""
    txn, topic, topic_id = await open_txn(s)
    leader = await s.leader(topic)
    await txn.produce_ok(leader, topic, topic_id, 2)
    expect("offset", await _latest(s, leader, topic, version, READ_COMMITTED), 0)


@rule(
    "txn.list-offsets.latest-read-uncommitted-is-high-watermark",
    api=LIST_OFFSETS,
    versions=(2, 11),
    source="ReplicaManager.fetchOffsetForTimestamp READ_UNCOMMITTED highWatermark",
    family=FAMILY,
)
async def list_offsets_hw(s: RuleSession, version: int) -> None:
    """ListOffsets LATEST under read_uncommitted answers the high watermark, past an open transaction's
    records."""
    txn, topic, topic_id = await open_txn(s)
    leader = await s.leader(topic)
    await txn.produce_ok(leader, topic, topic_id, 2)
    expect("offset", await _latest(s, leader, topic, version, READ_UNCOMMITTED), 2)


@rule(
    "txn.list-offsets.latest-read-committed-after-marker",
    api=LIST_OFFSETS,
    versions=(2, 11),
    source="ReplicaManager.fetchOffsetForTimestamp READ_COMMITTED lastStableOffset",
    family=FAMILY,
)
async def list_offsets_after(s: RuleSession, version: int) -> None:
    """After the transaction ends, ListOffsets LATEST under read_committed counts the marker: the records
    plus one."""
    _, leader, topic, _ = await _ended(s, commit=False)
    expect("offset", await _latest(s, leader, topic, version, READ_COMMITTED), 3)


@rule(
    "txn.fetch.aborted-before-fetch-offset-not-listed",
    api=FETCH,
    versions=(4, 18),
    source="LogSegment.collectAbortedTxns TransactionIndex.collectAbortedTxns lastOffset >= fetchOffset",
    family=FAMILY,
)
async def fetch_past_abort(s: RuleSession, version: int) -> None:
    """A read_committed Fetch from past an aborted transaction's marker does not list that transaction."""
    _, leader, topic, topic_id = await _ended(s, commit=False)
    part = await _fetch(s, leader, topic, topic_id, version, READ_COMMITTED, offset=3)
    expect("aborted_transactions", list(part.aborted_transactions or []), [])


@rule(
    "txn.fetch.aborted-records-still-returned",
    api=FETCH,
    versions=(4, 18),
    source="LocalLog.read UnifiedLog.read READ_COMMITTED reads up to the last stable offset unfiltered",
    family=FAMILY,
)
async def fetch_aborted_records(s: RuleSession, version: int) -> None:
    """A read_committed Fetch does not filter an aborted transaction's batches out: it returns them with
    the aborted_transactions list, and the consumer drops them."""
    _, leader, topic, topic_id = await _ended(s, commit=False)
    part = await _fetch(s, leader, topic, topic_id, version, READ_COMMITTED)
    expect("data records", len(_data(part)), 2)


@rule(
    "txn.fetch.lso-held-by-oldest-open-transaction",
    api=FETCH,
    versions=(4, 18),
    source="ProducerStateManager.firstUnstableOffset ongoingTxns",
    family=FAMILY,
)
async def fetch_two_producers(s: RuleSession, version: int) -> None:
    """With two producers' transactions open on a partition, the last stable offset stays at the older
    one's first offset after the younger one commits."""
    older, topic, topic_id = await open_txn(s)
    leader = await s.leader(topic)
    await older.produce_ok(leader, topic, topic_id, 2)  # 0-1
    younger = await Txn.start(s)
    await younger.add_ok(topic)
    await younger.produce_ok(leader, topic, topic_id, 1)  # 2
    await younger.end_ok(True)  # marker at 3
    for _ in range(50):  # the marker is written after EndTxn answers
        part = await _fetch(s, leader, topic, topic_id, version, READ_UNCOMMITTED)
        if part.high_watermark >= 4:
            break
        await asyncio.sleep(0.1)
    part = await _fetch(s, leader, topic, topic_id, version, READ_COMMITTED)
    expect("(last_stable_offset, high_watermark)", (part.last_stable_offset, part.high_watermark), (0, 4))
