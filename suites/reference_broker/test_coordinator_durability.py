"""Groups, committed offsets, transaction state and aborted-transaction indexes survive a SIGKILL of the
broker: everything is read back from ``__consumer_offsets``, ``__transaction_state`` and the partition
logs' ``.txnindex`` files when the node starts again."""

from __future__ import annotations

import asyncio
import time

from kconform.codecs.errors import Errors
from kconform.codecs.messages import (
    AddPartitionsToTxnRequest,
    CreateTopicsRequest,
    DescribeGroupsRequest,
    DescribeTransactionsRequest,
    EndTxnRequest,
    FetchRequest,
    InitProducerIdRequest,
    MetadataRequest,
    OffsetFetchRequest,
    ProduceRequest,
)
from kconform.codecs.records import Record, encode_batch
from kconform.reference_broker.process import start_broker_process

from ..support.coordinators import find_coordinator
from ..support.group_rules_cluster import Cluster as GroupCluster
from ..support.group_rules_cluster import stable_group
from ..support.rawclient import RawClient
from ..support.read_committed import values

OVERRIDES = {
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "100",
    "offsets.topic.num.partitions": "5",
    "transaction.state.log.num.partitions": "3",
}


async def _client(broker) -> RawClient:
    return await RawClient.connect(broker.host, broker.port)


async def _init(client, txn_id="tx") -> tuple[int, int]:
    await find_coordinator(client, txn_id)
    for _ in range(20):
        body = await client.call(
            22, 4, InitProducerIdRequest(transactional_id=txn_id, transaction_timeout_ms=60_000)
        )
        if body.error_code != Errors.CONCURRENT_TRANSACTIONS:
            break
    assert body.error_code == Errors.NONE, body
    return body.producer_id, body.producer_epoch


async def _add(client, pid, epoch):
    request = AddPartitionsToTxnRequest(
        v3_and_below_transactional_id="tx",
        v3_and_below_producer_id=pid,
        v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name="t", partitions=[0])],
    )
    body = await client.call(24, 3, request)
    assert body.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code == Errors.NONE


async def _produce(client, pid, epoch, seq, value):
    now = int(time.time() * 1000)
    records = encode_batch(
        [Record(0, now, None, value)],
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        is_transactional=True,
    )
    request = ProduceRequest(
        transactional_id="tx",
        acks=-1,
        timeout_ms=5000,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name="t", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=records)]
            )
        ],
    )
    body = await client.call(0, 9, request)
    assert body.responses[0].partition_responses[0].error_code == Errors.NONE


async def _end(client, pid, epoch, commit):
    body = await client.call(
        26, 3, EndTxnRequest(transactional_id="tx", producer_id=pid, producer_epoch=epoch, committed=commit)
    )
    assert body.error_code == Errors.NONE


async def _fetch_committed(client):
    meta = await client.call(3, 12, MetadataRequest(topics=None))
    topic_id = next(t.topic_id for t in meta.topics if t.name == "t")
    request = FetchRequest(
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=1 << 20,
        isolation_level=1,
        session_id=0,
        session_epoch=-1,
        topics=[
            FetchRequest.FetchTopic(
                topic_id=topic_id,
                partitions=[
                    FetchRequest.FetchPartition(
                        partition=0, fetch_offset=0, log_start_offset=-1, partition_max_bytes=1 << 20
                    )
                ],
            )
        ],
    )
    return (await client.call(1, 16, request)).responses[0].partitions[0]


async def _offsets(client, group):
    request = OffsetFetchRequest(
        group_id=group,
        topics=[OffsetFetchRequest.OffsetFetchRequestTopic(name="t", partition_indexes=[0, 1])],
    )
    body = await client.call(9, 7, request)
    return {p.partition_index: p.committed_offset for p in body.topics[0].partitions}


def test_groups_offsets_and_transactions_survive_sigkill(tmp_path):
    data = tmp_path / "data"
    broker = start_broker_process(data, overrides=OVERRIDES)

    async def before():
        client = await _client(broker)
        cluster = GroupCluster(None, broker.host, broker.port, client)
        topic = CreateTopicsRequest.CreatableTopic(name="t", num_partitions=2, replication_factor=1)
        await client.call(19, 7, CreateTopicsRequest(topics=[topic], timeout_ms=5000))
        assert await cluster.commit("simple", {0: 5, 1: 7}) == {0: Errors.NONE, 1: Errors.NONE}
        joined, generation, leader = await stable_group(cluster, "members", session_timeout_ms=60_000)
        assert await cluster.commit("members", {0: 11}, generation=generation, member_id=leader) == {0: 0}
        pid, epoch = await _init(client)
        await _add(client, pid, epoch)
        await _produce(client, pid, epoch, 0, b"committed")
        await _end(client, pid, epoch, True)
        await _add(client, pid, epoch)
        await _produce(client, pid, epoch, 1, b"doomed")  # left open across the crash
        for c, _ in joined:
            await c.close()
        await client.close()
        return generation, leader, pid, epoch

    async def after_first_restart(generation, leader, pid, epoch):
        client = await _client(broker)
        simple, members = await _offsets(client, "simple"), await _offsets(client, "members")
        described = (await client.call(15, 5, DescribeGroupsRequest(groups=["members"]))).groups[0]
        txn = (
            await client.call(65, 0, DescribeTransactionsRequest(transactional_ids=["tx"]))
        ).transaction_states[0]
        open_read = await _fetch_committed(client)
        await _end(client, pid, epoch, False)  # the producer resumes and aborts its open transaction
        await client.close()
        return simple, members, described, txn, open_read

    async def after_second_restart():
        client = await _client(broker)
        read = await _fetch_committed(client)
        await client.close()
        return read

    try:
        generation, leader, pid, epoch = asyncio.run(asyncio.wait_for(before(), 60))
        assert broker.kill() == -9
        broker = start_broker_process(data, port=broker.port, overrides=OVERRIDES)
        simple, members, described, txn, open_read = asyncio.run(
            asyncio.wait_for(after_first_restart(generation, leader, pid, epoch), 60)
        )
        assert broker.kill() == -9
        broker = start_broker_process(data, port=broker.port, overrides=OVERRIDES)
        final = asyncio.run(asyncio.wait_for(after_second_restart(), 60))
    finally:
        broker.stop()

    assert simple == {0: 5, 1: 7}
    assert members == {0: 11, 1: -1}
    assert described.group_state == "Stable" and [m.member_id for m in described.members] == [leader]
    assert (txn.transaction_state, txn.producer_id, txn.producer_epoch) == ("Ongoing", pid, epoch)
    assert [(t.topic, t.partitions) for t in txn.topics] == [("t", [0])]
    assert open_read.last_stable_offset == 2  # committed, COMMIT marker; "doomed" is still open
    assert values(open_read) == [b"committed"]
    assert final.last_stable_offset == final.high_watermark == 4
    assert [a.first_offset for a in final.aborted_transactions] == [2]  # read back from the .txnindex
    assert values(final) == [b"committed"]
