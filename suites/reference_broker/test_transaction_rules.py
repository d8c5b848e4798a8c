"""Kafka's transaction rules, one test per rule, against a reference broker node in this process:
the coordinator (TransactionCoordinator, TransactionMetadata), the markers in the log
(ProducerStateManager, UnifiedLog's last stable offset and aborted-transaction index) and the
read_committed reads (Fetch, ListOffsets)."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, replace

from kconform.codecs.errors import Errors
from kconform.codecs.messages import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    CreateTopicsRequest,
    DescribeTransactionsRequest,
    EndTxnRequest,
    FetchRequest,
    InitProducerIdRequest,
    ListOffsetsRequest,
    ListTransactionsRequest,
    OffsetFetchRequest,
    ProduceRequest,
    TxnOffsetCommitRequest,
    WriteTxnMarkersRequest,
)
from kconform.codecs.records import Record, encode_batch, iter_batches
from kconform.codecs.releases import kafka_release
from kconform.reference_broker.node import BrokerNode

from ..support.rawclient import RawClient
from ..support.read_committed import values

PRODUCE, FETCH, LIST_OFFSETS, CREATE_TOPICS, INIT_PID = 0, 1, 2, 19, 22
ADD_PARTITIONS, ADD_OFFSETS, END_TXN, WRITE_MARKERS, TXN_OFFSET_COMMIT = 24, 25, 26, 27, 28
OFFSET_FETCH, DESCRIBE_TXNS, LIST_TXNS = 9, 65, 66
READ_COMMITTED = 1


@dataclass
class Cluster:
    node: BrokerNode
    client: RawClient

    async def init(self, txn_id: str | None = "tx", timeout_ms: int = 60_000, *, pid=-1, epoch=-1, version=4):
        request = InitProducerIdRequest(
            transactional_id=txn_id, transaction_timeout_ms=timeout_ms, producer_id=pid, producer_epoch=epoch
        )
        return await self.client.call(INIT_PID, version, request)

    async def init_ok(self, txn_id: str = "tx", **kwargs) -> tuple[int, int]:
        for _ in range(20):  # the first call may find the coordinator busy fencing
            body = await self.init(txn_id, **kwargs)
            if body.error_code != Errors.CONCURRENT_TRANSACTIONS:
                break
        assert body.error_code == Errors.NONE, body
        return body.producer_id, body.producer_epoch

    async def add_partitions(self, pid, epoch, partitions, txn_id="tx", version=3) -> dict:
        request = AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=txn_id,
            v3_and_below_producer_id=pid,
            v3_and_below_producer_epoch=epoch,
            v3_and_below_topics=[
                AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=t, partitions=[p])
                for t, p in partitions
            ],
        )
        body = await self.client.call(ADD_PARTITIONS, version, request)
        return {
            (t.name, r.partition_index): r.partition_error_code
            for t in body.results_by_topic_v3_and_below
            for r in t.results_by_partition
        }

    async def end(self, pid, epoch, commit, txn_id="tx", version=3) -> int:
        return (await self.end_v(pid, epoch, commit, txn_id=txn_id, version=version)).error_code

    async def end_v(self, pid, epoch, commit, txn_id="tx", version=5):
        """The whole EndTxn answer (v5 carries the producer id and epoch)."""
        return await self.client.call(
            END_TXN,
            version,
            EndTxnRequest(transactional_id=txn_id, producer_id=pid, producer_epoch=epoch, committed=commit),
        )

    async def add_partitions_v4(self, pid, epoch, partitions, *, verify_only, txn_id="tx", version=5) -> dict:
        """AddPartitionsToTxn in the brokers' batched form (v4+), one transaction."""
        T = AddPartitionsToTxnRequest  # noqa: N806
        request = T(
            transactions=[
                T.AddPartitionsToTxnTransaction(
                    transactional_id=txn_id,
                    producer_id=pid,
                    producer_epoch=epoch,
                    verify_only=verify_only,
                    topics=[T.AddPartitionsToTxnTopic(name=t, partitions=[p]) for t, p in partitions],
                )
            ]
        )
        body = await self.client.call(ADD_PARTITIONS, version, request)
        assert body.error_code == Errors.NONE
        (result,) = body.results_by_transaction
        return {
            (t.name, r.partition_index): r.partition_error_code
            for t in result.topic_results
            for r in t.results_by_partition
        }

    async def txn_offset_commit(self, pid, epoch, offset, *, version, group="g", txn_id="tx") -> int:
        request = TxnOffsetCommitRequest(
            transactional_id=txn_id,
            group_id=group,
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
        body = await self.client.call(TXN_OFFSET_COMMIT, version, request)
        return body.topics[0].partitions[0].error_code

    async def committed(self, group="g") -> int:
        request = OffsetFetchRequest(
            group_id=group,
            topics=[OffsetFetchRequest.OffsetFetchRequestTopic(name="t", partition_indexes=[0])],
            require_stable=True,
        )
        return (await self.client.call(OFFSET_FETCH, 7, request)).topics[0].partitions[0].committed_offset

    async def produce(self, pid, epoch, seq, values, *, txn_id="tx", partition=0, transactional=True):
        records = encode_batch(
            [Record(i, int(time.time() * 1000), None, v) for i, v in enumerate(values)],
            producer_id=pid,
            producer_epoch=epoch,
            base_sequence=seq,
            is_transactional=transactional,
        )
        request = ProduceRequest(
            transactional_id=txn_id if transactional else None,
            acks=-1,
            timeout_ms=5000,
            topic_data=[
                ProduceRequest.TopicProduceData(
                    name="t",
                    partition_data=[ProduceRequest.PartitionProduceData(index=partition, records=records)],
                )
            ],
        )
        body = await self.client.call(PRODUCE, 9, request)
        return body.responses[0].partition_responses[0]

    async def fetch(self, offset=0, isolation=READ_COMMITTED):
        topic_id = self.node.topics.get("t").topic_id
        request = FetchRequest(
            max_wait_ms=0,
            min_bytes=1,
            max_bytes=1 << 20,
            isolation_level=isolation,
            session_id=0,
            session_epoch=-1,
            topics=[
                FetchRequest.FetchTopic(
                    topic_id=topic_id,
                    partitions=[
                        FetchRequest.FetchPartition(
                            partition=0, fetch_offset=offset, log_start_offset=-1, partition_max_bytes=1 << 20
                        )
                    ],
                )
            ],
        )
        body = await self.client.call(FETCH, 16, request)
        return body.responses[0].partitions[0]

    async def latest(self, isolation=READ_COMMITTED) -> int:
        request = ListOffsetsRequest(
            replica_id=-1,
            isolation_level=isolation,
            topics=[
                ListOffsetsRequest.ListOffsetsTopic(
                    name="t",
                    partitions=[ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=-1)],
                )
            ],
        )
        body = await self.client.call(LIST_OFFSETS, 8, request)
        return body.topics[0].partitions[0].offset

    async def describe(self, txn_id="tx"):
        body = await self.client.call(
            DESCRIBE_TXNS, 0, DescribeTransactionsRequest(transactional_ids=[txn_id])
        )
        return body.transaction_states[0]


def run(tmp_path, scenario, *, kafka_version: str | None = None, **overrides: str):
    async def main():
        props = {
            "node.id": "1",
            "log.dirs": str(tmp_path / "data"),
            "transaction.state.log.num.partitions": "3",
            "offsets.topic.num.partitions": "3",
        }
        props.update(overrides)
        release = kafka_release(kafka_version) if kafka_version else None
        node = BrokerNode.from_config_file(None, props, kafka_release=release)
        host, port = await node.start("127.0.0.1", 0)
        client = await RawClient.connect(host, port)
        try:
            topic = CreateTopicsRequest.CreatableTopic(name="t", num_partitions=1, replication_factor=1)
            await client.call(CREATE_TOPICS, 7, CreateTopicsRequest(topics=[topic], timeout_ms=5000))
            return await scenario(Cluster(node, client))
        finally:
            await client.close()
            await node.stop()

    return asyncio.run(asyncio.wait_for(main(), 60))


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


# ---- transactions v2 (KIP-890 part 2): EndTxn v5, AddPartitionsToTxn v4-5, TxnOffsetCommit v5 -----------
#
# Kafka takes the client's transaction version from the request version, whatever transaction.version
# the cluster finalized (KafkaApis.handleEndTxnRequest: TransactionVersion.transactionVersionForEndTxn;
# handleAddPartitionsToTxnRequest: transactionVersionForAddPartitionsToTxn), and ApiVersions offers these
# versions at every level. The reference broker's level is below 1, so these are the answers of such a
# Kafka broker, which are also those of a broker at level 2.


def test_end_txn_v5_bumps_the_epoch_and_answers_with_it(tmp_path):
    """TransactionCoordinator.endTransaction (TV2): prepareAbortOrCommit bumps the epoch, the markers
    carry the bumped one, and the answer (KafkaApis.handleEndTxnRequest) has the new producer id and
    epoch; EndTxn v4 keeps the epoch and answers none (endTransactionWithTV1)."""

    async def scenario(c: Cluster):
        pid, epoch = await c.init_ok()
        await c.add_partitions(pid, epoch, [("t", 0)])
        await c.produce(pid, epoch, 0, [b"a"])
        committed = await c.end_v(pid, epoch, True)
        batches = list(iter_batches(bytes((await c.fetch(isolation=0)).records or b"")))
        state = await c.describe()
        # the next transaction at the bumped epoch, ended with v4: no bump, no ids in the answer
        await c.add_partitions(pid, epoch + 1, [("t", 0)])
        old_style = await c.end_v(pid, epoch + 1, False, version=4)
        return committed, batches, state, old_style, pid, epoch

    committed, batches, state, old_style, pid, epoch = run(tmp_path, scenario)
    assert (committed.error_code, committed.producer_id, committed.producer_epoch) == (0, pid, epoch + 1)
    data, marker = batches
    assert (data.producer_epoch, marker.is_control, marker.producer_epoch) == (epoch, True, epoch + 1)
    assert (state.transaction_state, state.producer_epoch) == ("CompleteCommit", epoch + 1)
    assert (old_style.error_code, old_style.producer_id, old_style.producer_epoch) == (0, -1, -1)


def test_end_txn_v5_retries_and_empty_aborts(tmp_path):
    """The TV2 table of TransactionCoordinator.endTransaction: a retry (the epoch one below the bumped
    one) of the same result is NONE with the current producer id and epoch, of the other result
    INVALID_TXN_STATE; an abort with no transaction open (Empty, CompleteCommit, CompleteAbort) bumps
    the epoch; a commit with none is INVALID_TXN_STATE; any other epoch is PRODUCER_FENCED; an unknown
    transactional id INVALID_PRODUCER_ID_MAPPING. Errors answer producer id and epoch -1."""

    async def scenario(c: Cluster):
        pid, e = await c.init_ok()
        out = {"empty_commit": await c.end_v(pid, e, True)}
        out["empty_abort"] = await c.end_v(pid, e, False)  # Empty: e -> e+1
        out["abort_retry"] = await c.end_v(pid, e, False)  # retry of that abort
        out["commit_after_abort_retry"] = await c.end_v(pid, e, True)
        out["abort_again"] = await c.end_v(pid, e + 1, False)  # CompleteAbort at the current epoch: e+2
        await c.add_partitions(pid, e + 2, [("t", 0)])
        out["commit"] = await c.end_v(pid, e + 2, True)  # e+3
        out["commit_retry"] = await c.end_v(pid, e + 2, True)
        out["abort_retry_of_commit"] = await c.end_v(pid, e + 2, False)
        out["fenced"] = await c.end_v(pid, e + 1, True)
        out["unknown"] = await c.end_v(pid, e, True, txn_id="nobody")
        return pid, e, out

    pid, e, out = run(tmp_path, scenario)
    answers = {k: (v.error_code, v.producer_id, v.producer_epoch) for k, v in out.items()}
    assert answers == {
        "empty_commit": (Errors.INVALID_TXN_STATE, -1, -1),
        "empty_abort": (Errors.NONE, pid, e + 1),
        "abort_retry": (Errors.NONE, pid, e + 1),
        "commit_after_abort_retry": (Errors.INVALID_TXN_STATE, -1, -1),
        "abort_again": (Errors.NONE, pid, e + 2),
        "commit": (Errors.NONE, pid, e + 3),
        "commit_retry": (Errors.NONE, pid, e + 3),
        "abort_retry_of_commit": (Errors.INVALID_TXN_STATE, -1, -1),
        "fenced": (Errors.PRODUCER_FENCED, -1, -1),
        "unknown": (Errors.INVALID_PRODUCER_ID_MAPPING, -1, -1),
    }


def test_end_txn_v5_with_the_epoch_exhausted_moves_to_a_new_producer_id(tmp_path):
    """TransactionCoordinator.endTransaction (TV2): at an exhausted epoch (Short.MaxValue - 1) the
    completion takes a new producer id at epoch 0 (prepareComplete with nextProducerId), and a retry
    from the old id at the old epoch is recognised (retryOnOverflow): NONE with the new id."""

    async def scenario(c: Cluster):
        pid, _ = await c.init_ok()
        txns = c.node.transaction_coordinator.txns
        txns["tx"] = replace(txns["tx"], producer_epoch=32766)  # as after 32766 bumps
        first = await c.end_v(pid, 32766, False)
        retry = await c.end_v(pid, 32766, False)
        return pid, first, retry

    pid, first, retry = run(tmp_path, scenario)
    assert first.error_code == Errors.NONE and first.producer_id != pid and first.producer_epoch == 0
    assert (retry.error_code, retry.producer_id, retry.producer_epoch) == (0, first.producer_id, 0)


def test_add_partitions_to_txn_v4_and_v5_verify_and_add_alike(tmp_path):
    """KafkaApis.handleAddPartitionsToTxnRequest: v4 and v5 are handled alike (v5 only tells the sending
    broker it may pass TRANSACTION_ABORTABLE on). Unknown partitions fail the transaction's entry first
    (OPERATION_NOT_ATTEMPTED for the rest), verify-only or not; verify-only is
    TransactionCoordinator.handleVerifyPartitionsInTransaction: NONE for a partition in the transaction,
    TRANSACTION_ABORTABLE for one outside it, PRODUCER_FENCED for another epoch; without verify-only the
    partitions are added."""

    async def scenario(c: Cluster):
        pid, epoch = await c.init_ok()
        out = {}
        for version in (4, 5):
            out[version] = {
                "outside": await c.add_partitions_v4(
                    pid, epoch, [("t", 0)], verify_only=True, version=version
                ),
                "unknown": await c.add_partitions_v4(
                    pid, epoch, [("t", 0), ("gone", 0)], verify_only=True, version=version
                ),
                "fenced": await c.add_partitions_v4(
                    pid, epoch + 1, [("t", 0)], verify_only=True, version=version
                ),
            }
        added = await c.add_partitions_v4(pid, epoch, [("t", 0)], verify_only=False)
        inside = await c.add_partitions_v4(pid, epoch, [("t", 0)], verify_only=True, version=4)
        return out, added, inside, (await c.describe()).transaction_state

    out, added, inside, state = run(tmp_path, scenario)
    for version in (4, 5):
        assert out[version] == {
            "outside": {("t", 0): Errors.TRANSACTION_ABORTABLE},
            "unknown": {
                ("t", 0): Errors.OPERATION_NOT_ATTEMPTED,
                ("gone", 0): Errors.UNKNOWN_TOPIC_OR_PARTITION,
            },
            "fenced": {("t", 0): Errors.PRODUCER_FENCED},
        }, version
    assert added == inside == {("t", 0): Errors.NONE}
    assert state == "Ongoing"


def test_txn_offset_commit_v5_adds_the_offsets_partition_itself(tmp_path):
    """CoordinatorPartitionWriter.maybeStartTransactionVerification with
    AddPartitionsToTxnManager.txnOffsetCommitRequestVersionToTransactionSupportedOperation: v5 is
    ADD_PARTITION, so the group's __consumer_offsets partition joins the transaction without
    AddOffsetsToTxn, and the offset counts once the transaction commits."""

    async def scenario(c: Cluster):
        pid, epoch = await c.init_ok()
        code = await c.txn_offset_commit(pid, epoch, 7, version=5)
        described = await c.describe()
        before = await c.committed()
        ended = await c.end_v(pid, epoch, True)
        return code, described, before, ended.error_code, await c.committed()

    code, described, before, ended, after = run(tmp_path, scenario)
    assert code == Errors.NONE
    assert described.transaction_state == "Ongoing"
    assert [t.topic for t in described.topics] == ["__consumer_offsets"]
    assert (before, ended, after) == (-1, Errors.NONE, 7)


def test_txn_offset_commit_before_v5_needs_the_partition_in_the_transaction(tmp_path):
    """The same verification for v0-4 (verify-only, with transaction.partition.verification.enable):
    an offsets partition outside the transaction is TRANSACTION_ABORTABLE for v4 (GENERIC_ERROR_SUPPORTED)
    and INVALID_TXN_STATE before (DEFAULT_ERROR, AddPartitionsToTxnManager's translation); a stale epoch is
    INVALID_PRODUCER_EPOCH (PRODUCER_FENCED translated). With verification off nothing is checked."""

    async def scenario(c: Cluster):
        pid, epoch = await c.init_ok()
        v4 = await c.txn_offset_commit(pid, epoch, 1, version=4)
        v3 = await c.txn_offset_commit(pid, epoch, 1, version=3)
        fenced = await c.txn_offset_commit(pid, epoch - 1 if epoch else epoch + 1, 1, version=3)
        return v4, v3, fenced

    assert run(tmp_path, scenario) == (
        Errors.TRANSACTION_ABORTABLE,
        Errors.INVALID_TXN_STATE,
        Errors.INVALID_PRODUCER_EPOCH,
    )

    async def unverified(c: Cluster):
        pid, epoch = await c.init_ok()
        return await c.txn_offset_commit(pid, epoch, 1, version=3)

    off = {"transaction.partition.verification.enable": "false"}
    assert run(tmp_path / "off", unverified, **off) == Errors.NONE


def test_list_transactions_v2_filters_by_an_re2_pattern(tmp_path):
    """TransactionStateManager.listTransactionStates: the pattern is compiled with RE2/J and must match
    the whole transactional id; an empty one filters nothing; one RE2/J refuses (here a lookahead, which
    java.util.regex would take) fails the request with INVALID_REGULAR_EXPRESSION and nothing else
    (ListTransactionsRequest.getErrorResponse). The duration filter keeps a transaction whatever its
    state once ``now - its start time`` passes the duration: an Empty one (start -1) too."""

    def listing(pattern, *, duration=-1, version=2):
        return ListTransactionsRequest(
            state_filters=[],
            producer_id_filters=[],
            duration_filter=duration,
            transactional_id_pattern=pattern,
        )

    async def scenario(c: Cluster):
        for txn_id in ("orders-1", "orders-22", "payments"):
            await c.init_ok(txn_id)
        out = {}
        for name, pattern in (
            ("digits", "orders-[0-9]"),
            ("all", ""),
            ("prefix", "orders"),
            ("alt", "pay.*|x"),
        ):
            body = await c.client.call(LIST_TXNS, 2, listing(pattern))
            out[name] = sorted(t.transactional_id for t in body.transaction_states)
        bad = await c.client.call(LIST_TXNS, 2, listing("(?=orders).*"))
        out["bad"] = (bad.error_code, bad.transaction_states, bad.unknown_state_filters)
        long_ago = await c.client.call(LIST_TXNS, 1, listing(None, duration=1))
        out["duration"] = sorted(t.transactional_id for t in long_ago.transaction_states)
        return out

    out = run(tmp_path, scenario)
    assert out["digits"] == ["orders-1"]
    assert out["all"] == ["orders-1", "orders-22", "payments"]
    assert out["prefix"] == []
    assert out["alt"] == ["payments"]
    assert out["bad"] == (Errors.INVALID_REGULAR_EXPRESSION, [], [])
    assert out["duration"] == ["orders-1", "orders-22", "payments"]


def test_write_txn_markers_v2_checks_the_epoch_strictly_for_transaction_version_2(tmp_path):
    """KafkaApis.handleWriteTxnMarkersRequest hands each v2 marker's transaction version to the append;
    ProducerAppendInfo.checkProducerEpoch then wants a marker epoch above the producer's for version 2
    (the coordinator bumped it when the transaction ended) and at least the producer's before it."""

    def marker(epoch: int, transaction_version: int):
        return WriteTxnMarkersRequest(
            markers=[
                WriteTxnMarkersRequest.WritableTxnMarker(
                    producer_id=7,
                    producer_epoch=epoch,
                    transaction_result=True,
                    topics=[WriteTxnMarkersRequest.WritableTxnMarkerTopic(name="t", partition_indexes=[0])],
                    coordinator_epoch=0,
                    transaction_version=transaction_version,
                )
            ]
        )

    async def scenario(c: Cluster):
        codes = []
        # the producer's data is at epoch 3 each round; the marker: (request version, epoch, its version)
        for seq, (version, epoch, tv) in enumerate(((2, 3, 2), (1, 3, 2), (2, 4, 2))):
            assert (await c.produce(7, 3, seq, [b"x"])).error_code == Errors.NONE
            body = await c.client.call(WRITE_MARKERS, version, marker(epoch, tv))
            codes.append(body.markers[0].topics[0].partitions[0].error_code)
            if codes[-1] != Errors.NONE:  # close the transaction for the next round
                await c.client.call(WRITE_MARKERS, 1, marker(epoch, 0))
        return codes

    off = {"transaction.partition.verification.enable": "false"}
    codes = run(tmp_path, scenario, kafka_version="4.3", **off)
    # v2 with version 2 at the data's epoch: refused; v1 (read as version 0): taken; v2 above it: taken
    assert codes == [Errors.INVALID_PRODUCER_EPOCH, Errors.NONE, Errors.NONE]
