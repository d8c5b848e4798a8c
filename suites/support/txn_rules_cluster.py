"""What the transaction-rule suites of ``reference_broker`` share (``test_transaction_rules_*.py``):
the API keys, ``Cluster`` (a broker node with transaction request helpers) and ``run``, which
starts a node with one topic ``t`` and runs a scenario against it."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from kconform.codecs.errors import Errors
from kconform.codecs.messages import (
    AddPartitionsToTxnRequest,
    CreateTopicsRequest,
    DescribeTransactionsRequest,
    EndTxnRequest,
    FetchRequest,
    InitProducerIdRequest,
    ListOffsetsRequest,
    OffsetFetchRequest,
    ProduceRequest,
    TxnOffsetCommitRequest,
)
from kconform.codecs.records import Record, encode_batch
from kconform.codecs.releases import kafka_release
from kconform.reference_broker.node import BrokerNode

from .coordinators import find_coordinator
from .rawclient import RawClient

__all__ = [
    "ADD_OFFSETS",
    "ADD_PARTITIONS",
    "CREATE_TOPICS",
    "DESCRIBE_TXNS",
    "END_TXN",
    "FETCH",
    "INIT_PID",
    "LIST_OFFSETS",
    "LIST_TXNS",
    "OFFSET_FETCH",
    "PRODUCE",
    "READ_COMMITTED",
    "TXN_OFFSET_COMMIT",
    "WRITE_MARKERS",
    "Cluster",
    "run",
]


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
            await find_coordinator(client, "tx")
            return await scenario(Cluster(node, client))
        finally:
            await client.close()
            await node.stop()

    return asyncio.run(asyncio.wait_for(main(), 60))
