"""Kafka's transaction rules, one test per rule, against a reference broker node in this process: the
coordinator (TransactionCoordinator, TransactionMetadata: InitProducerId, AddPartitionsToTxn, EndTxn,
timeouts, DescribeTransactions and ListTransactions), the markers in the log (ProducerStateManager,
UnifiedLog's last stable offset and aborted-transaction index), the read_committed reads (Fetch,
ListOffsets) and transactional offsets."""

from __future__ import annotations

import asyncio

from kconform.codecs.errors import Errors
from kconform.codecs.messages import (
    AddOffsetsToTxnRequest,
    ListTransactionsRequest,
    OffsetFetchRequest,
    TxnOffsetCommitRequest,
    WriteTxnMarkersRequest,
)

from ..support.read_committed import values
from ..support.txn_rules_cluster import (
    ADD_OFFSETS,
    LIST_TXNS,
    OFFSET_FETCH,
    TXN_OFFSET_COMMIT,
    WRITE_MARKERS,
    Cluster,
    run,
)

# ---- InitProducerId (TransactionCoordinator.handleInitProducerId) ---------------------------------------


def test_init_producer_id_gives_an_id_and_bumps_the_epoch_each_time(tmp_path):
    async def scenario(c: Cluster):
        return await c.init_ok(), await c.init_ok()

    (pid1, epoch1), (pid2, epoch2) = run(tmp_path, scenario)
    assert pid1 == pid2 and (epoch1, epoch2) == (0, 1)


def test_init_producer_id_argument_rules(tmp_path):
    async def scenario(c: Cluster):
        empty = await c.init("")
        too_long = await c.init("tx", timeout_ms=15 * 60_000 + 1)
        zero = await c.init("tx", timeout_ms=0)
        return empty.error_code, too_long.error_code, zero.error_code

    assert run(tmp_path, scenario) == (
        Errors.INVALID_REQUEST,
        Errors.INVALID_TRANSACTION_TIMEOUT,
        Errors.INVALID_TRANSACTION_TIMEOUT,
    )


def test_init_producer_id_with_a_stale_epoch_is_fenced_and_old_clients_hear_invalid_epoch(tmp_path):
    """KIP-360: the request's producer id and epoch must be the current ones
    (TransactionMetadata.prepareIncrementProducerEpoch)."""

    async def scenario(c: Cluster):
        pid, _ = await c.init_ok()
        pid, epoch = await c.init_ok()
        await c.init_ok()  # epoch + 1: the caller's epoch is now two behind
        stale = await c.init("tx", pid=pid, epoch=epoch - 1)
        stale_v3 = await c.init("tx", pid=pid, epoch=epoch - 1, version=3)
        return stale.error_code, stale_v3.error_code

    assert run(tmp_path, scenario) == (Errors.PRODUCER_FENCED, Errors.INVALID_PRODUCER_EPOCH)


# ---- AddPartitionsToTxn / EndTxn -----------------------------------------------------------------------


def test_add_partitions_rules(tmp_path):
    async def scenario(c: Cluster):
        pid, epoch = await c.init_ok()
        unknown_id = await c.add_partitions(pid, epoch, [("t", 0)], txn_id="nobody")
        wrong_pid = await c.add_partitions(pid + 1, epoch, [("t", 0)])
        fenced = await c.add_partitions(pid, epoch + 1, [("t", 0)])
        fenced_v1 = await c.add_partitions(pid, epoch + 1, [("t", 0)], version=1)
        missing = await c.add_partitions(pid, epoch, [("t", 0), ("gone", 0)])
        ok = await c.add_partitions(pid, epoch, [("t", 0)])
        return unknown_id, wrong_pid, fenced, fenced_v1, missing, ok

    unknown_id, wrong_pid, fenced, fenced_v1, missing, ok = run(tmp_path, scenario)
    assert unknown_id == {("t", 0): Errors.INVALID_PRODUCER_ID_MAPPING}
    assert wrong_pid == {("t", 0): Errors.INVALID_PRODUCER_ID_MAPPING}
    assert fenced == {("t", 0): Errors.PRODUCER_FENCED}
    assert fenced_v1 == {("t", 0): Errors.INVALID_PRODUCER_EPOCH}
    assert missing == {
        ("t", 0): Errors.OPERATION_NOT_ATTEMPTED,
        ("gone", 0): Errors.UNKNOWN_TOPIC_OR_PARTITION,
    }
    assert ok == {("t", 0): Errors.NONE}


def test_end_txn_state_rules(tmp_path):
    async def scenario(c: Cluster):
        pid, epoch = await c.init_ok()
        nothing_open = await c.end(pid, epoch, True)
        await c.add_partitions(pid, epoch, [("t", 0)])
        aborted = await c.end(pid, epoch, False)
        retried_abort = await c.end(pid, epoch, False)
        commit_after_abort = await c.end(pid, epoch, True)
        fenced = await c.end(pid, epoch + 3, True)
        return nothing_open, aborted, retried_abort, commit_after_abort, fenced

    assert run(tmp_path, scenario) == (
        Errors.INVALID_TXN_STATE,
        Errors.NONE,
        Errors.NONE,
        Errors.INVALID_TXN_STATE,
        Errors.PRODUCER_FENCED,
    )


# ---- the log: LSO, markers, read_committed ----------------------------------------------------------------


def test_read_committed_stops_at_the_open_transaction_and_skips_aborted_ones(tmp_path):
    async def scenario(c: Cluster):
        pid, epoch = await c.init_ok()
        await c.add_partitions(pid, epoch, [("t", 0)])
        await c.produce(pid, epoch, 0, [b"a1", b"a2"])
        open_lso = await c.latest()
        open_hw = await c.latest(isolation=0)
        while_open = await c.fetch()
        assert await c.end(pid, epoch, False) == Errors.NONE
        await c.add_partitions(pid, epoch, [("t", 0)])
        await c.produce(pid, epoch, 2, [b"c1"])
        assert await c.end(pid, epoch, True) == Errors.NONE
        after = await c.fetch()
        uncommitted = await c.fetch(isolation=0)
        return open_lso, open_hw, while_open, after, uncommitted, await c.latest()

    open_lso, open_hw, while_open, after, uncommitted, final_lso = run(tmp_path, scenario)
    assert (open_lso, open_hw) == (0, 2)
    assert while_open.last_stable_offset == 0 and while_open.high_watermark == 2 and not while_open.records
    assert [(a.producer_id, a.first_offset) for a in after.aborted_transactions] == [
        (after.aborted_transactions[0].producer_id, 0)
    ]
    assert values(after) == [b"c1"]
    assert uncommitted.aborted_transactions is None or uncommitted.aborted_transactions == []
    assert final_lso == 5  # a1 a2 ABORT c1 COMMIT


def test_init_producer_id_during_an_open_transaction_aborts_it_and_fences_the_zombie(tmp_path):
    async def scenario(c: Cluster):
        pid, zombie_epoch = await c.init_ok()
        await c.add_partitions(pid, zombie_epoch, [("t", 0)])
        await c.produce(pid, zombie_epoch, 0, [b"zombie"])
        first = await c.init("tx")
        pid2, epoch2 = await c.init_ok()
        zombie_commit = await c.end(pid, zombie_epoch, True)
        zombie_write = await c.produce(pid, zombie_epoch, 1, [b"late"])
        fetched = await c.fetch()
        return first.error_code, (pid2, epoch2), zombie_commit, zombie_write.error_code, values(fetched), pid

    first, (pid2, epoch2), zombie_commit, zombie_write, seen, pid = run(tmp_path, scenario)
    assert first == Errors.CONCURRENT_TRANSACTIONS
    assert (pid2, epoch2) == (pid, 2)  # one bump to fence and abort, one for the new producer
    assert zombie_commit == Errors.PRODUCER_FENCED
    assert zombie_write == Errors.INVALID_PRODUCER_EPOCH
    assert seen == []


def test_a_transaction_past_its_timeout_is_aborted_with_an_epoch_bump(tmp_path):
    async def scenario(c: Cluster):
        pid, epoch = await c.init_ok(timeout_ms=200)
        await c.add_partitions(pid, epoch, [("t", 0)])
        await c.produce(pid, epoch, 0, [b"slow"])
        await asyncio.sleep(1.0)
        state = await c.describe()
        late_commit = await c.end(pid, epoch, True)
        recovered = await c.init("tx", pid=pid, epoch=epoch, timeout_ms=200)  # KIP-360 recovery
        return state, late_commit, recovered, await c.latest(), epoch

    state, late_commit, recovered, lso, epoch = run(
        tmp_path, scenario, **{"transaction.abort.timed.out.transaction.cleanup.interval.ms": "100"}
    )
    assert (state.transaction_state, state.producer_epoch) == ("CompleteAbort", epoch + 1)
    assert late_commit == Errors.PRODUCER_FENCED
    assert recovered.error_code == Errors.NONE and recovered.producer_epoch == epoch + 1
    assert lso == 2  # slow + ABORT marker: nothing open any more


def test_write_txn_markers_checks_epochs_and_partitions(tmp_path):
    """ProducerStateManager's marker checks: an older producer epoch is INVALID_PRODUCER_EPOCH, an
    older coordinator epoch TRANSACTION_COORDINATOR_FENCED; unknown partitions UNKNOWN_TOPIC_OR_PARTITION."""

    def markers(pid, epoch, coordinator_epoch, topic="t"):
        return WriteTxnMarkersRequest(
            markers=[
                WriteTxnMarkersRequest.WritableTxnMarker(
                    producer_id=pid,
                    producer_epoch=epoch,
                    transaction_result=False,
                    topics=[WriteTxnMarkersRequest.WritableTxnMarkerTopic(name=topic, partition_indexes=[0])],
                    coordinator_epoch=coordinator_epoch,
                )
            ]
        )

    async def scenario(c: Cluster):
        codes = []
        for request in (markers(7, 3, 5), markers(7, 2, 5), markers(7, 3, 4), markers(7, 3, 5, topic="gone")):
            body = await c.client.call(WRITE_MARKERS, 1, request)
            codes.append(body.markers[0].topics[0].partitions[0].error_code)
        return codes

    assert run(tmp_path, scenario) == [
        Errors.NONE,
        Errors.INVALID_PRODUCER_EPOCH,
        Errors.TRANSACTION_COORDINATOR_FENCED,
        Errors.UNKNOWN_TOPIC_OR_PARTITION,
    ]


# ---- offsets in transactions ------------------------------------------------------------------------------


def test_transactional_offsets_are_unstable_until_the_commit_and_dropped_on_abort(tmp_path):
    async def scenario(c: Cluster):
        async def txn_commit(pid, epoch, offset):
            assert (
                await c.client.call(
                    ADD_OFFSETS,
                    3,
                    AddOffsetsToTxnRequest(
                        transactional_id="tx", producer_id=pid, producer_epoch=epoch, group_id="g"
                    ),
                )
            ).error_code == Errors.NONE
            request = TxnOffsetCommitRequest(
                transactional_id="tx",
                group_id="g",
                producer_id=pid,
                producer_epoch=epoch,
                topics=[
                    TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(
                        name="t",
                        partitions=[
                            TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition(
                                partition_index=0, committed_offset=offset
                            )
                        ],
                    )
                ],
            )
            body = await c.client.call(TXN_OFFSET_COMMIT, 3, request)
            assert body.topics[0].partitions[0].error_code == Errors.NONE

        async def fetched(stable: bool):
            request = OffsetFetchRequest(
                group_id="g",
                topics=[OffsetFetchRequest.OffsetFetchRequestTopic(name="t", partition_indexes=[0])],
                require_stable=stable,
            )
            p = (await c.client.call(OFFSET_FETCH, 7, request)).topics[0].partitions[0]
            return p.committed_offset, p.error_code

        pid, epoch = await c.init_ok()
        await txn_commit(pid, epoch, 10)
        pending = await fetched(True), await fetched(False)
        await c.end(pid, epoch, True)
        committed = await fetched(True)
        await txn_commit(pid, epoch, 20)
        await c.end(pid, epoch, False)
        after_abort = await fetched(True)
        return pending, committed, after_abort

    pending, committed, after_abort = run(tmp_path, scenario)
    assert pending == ((-1, Errors.UNSTABLE_OFFSET_COMMIT), (-1, Errors.NONE))
    assert committed == (10, Errors.NONE)
    assert after_abort == (10, Errors.NONE)


# ---- DescribeTransactions / ListTransactions ---------------------------------------------------------


def test_describe_and_list_transactions(tmp_path):
    async def scenario(c: Cluster):
        pid, epoch = await c.init_ok("a")
        await c.add_partitions(pid, epoch, [("t", 0)], txn_id="a")
        await c.init_ok("b")
        described = await c.describe("a")
        unknown = await c.describe("nobody")
        ongoing = await c.client.call(
            LIST_TXNS, 1, ListTransactionsRequest(state_filters=["Ongoing"], producer_id_filters=[])
        )
        bogus = await c.client.call(
            LIST_TXNS, 1, ListTransactionsRequest(state_filters=["Bogus"], producer_id_filters=[])
        )
        everything = await c.client.call(
            LIST_TXNS, 0, ListTransactionsRequest(state_filters=[], producer_id_filters=[])
        )
        return described, unknown, ongoing, bogus, everything

    described, unknown, ongoing, bogus, everything = run(tmp_path, scenario)
    assert (described.transaction_state, [(t.topic, t.partitions) for t in described.topics]) == (
        "Ongoing",
        [("t", [0])],
    )
    assert unknown.error_code == Errors.TRANSACTIONAL_ID_NOT_FOUND
    assert [t.transactional_id for t in ongoing.transaction_states] == ["a"]
    assert (bogus.unknown_state_filters, bogus.transaction_states) == (["Bogus"], [])
    assert sorted(t.transactional_id for t in everything.transaction_states) == ["a", "b"]


def test_produce_verification_refuses_partitions_outside_the_transaction(tmp_path):
    """KIP-890 (ReplicaManager's transaction verification through AddPartitionsToTxnManager): the first
    transactional write to a partition must be in the producer's ongoing transaction."""

    async def scenario(c: Cluster):
        pid, epoch = await c.init_ok()
        never_added = await c.produce(pid, epoch, 0, [b"x"])
        await c.add_partitions(pid, epoch, [("t", 0)])
        added = await c.produce(pid, epoch, 0, [b"y"])
        await c.end(pid, epoch, False)
        after_abort = await c.produce(pid, epoch, 1, [b"late"])
        return never_added.error_code, added.error_code, after_abort.error_code

    assert run(tmp_path, scenario) == (Errors.INVALID_TXN_STATE, Errors.NONE, Errors.INVALID_TXN_STATE)
