"""Transactions as readers and the coordinator's marker writes see them on the wire, against a reference
broker node in this process: Fetch and ListOffsets under READ_COMMITTED, and WriteTxnMarkers.

Each test names where Apache Kafka 4.0 decides. Transactional batches are produced with KIP-890
verification off (``transaction.partition.verification.enable=false``), so that these rules hold
without a transaction coordinator: the markers are written here with WriteTxnMarkers, as the
coordinator would."""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass
from types import SimpleNamespace

from kconform.codecs.errors import Errors
from kconform.codecs.messages import (
    CreateTopicsRequest,
    FetchRequest,
    ListOffsetsRequest,
    ProduceRequest,
    WriteTxnMarkersRequest,
)
from kconform.codecs.records import ControlRecordType, Record, decode_control_key, encode_batch, iter_batches
from kconform.codecs.releases import kafka_release
from kconform.reference_broker.node import BrokerNode
from kconform.reference_broker.transactions.marker_writer import write_txn_markers

from ..support.rawclient import RawClient

PRODUCE, FETCH, LIST_OFFSETS, CREATE_TOPICS, WRITE_MARKERS = 0, 1, 2, 19, 27
READ_UNCOMMITTED, READ_COMMITTED = 0, 1
LATEST = -1
TOPIC = "orders"
P1, P2 = 4001, 4002
EPOCH = 2
TXN_ID = "tx"


@dataclass
class Broker:
    node: BrokerNode
    host: str
    port: int
    client: RawClient
    sequences: dict

    async def create_topic(self, name: str = TOPIC, partitions: int = 1, **configs: str) -> uuid.UUID:
        topic = CreateTopicsRequest.CreatableTopic(
            name=name,
            num_partitions=partitions,
            replication_factor=1,
            configs=[CreateTopicsRequest.CreatableTopicConfig(name=k, value=v) for k, v in configs.items()],
        )
        body = await self.client.call(CREATE_TOPICS, 7, CreateTopicsRequest(topics=[topic], timeout_ms=5000))
        assert body.topics[0].error_code == Errors.NONE, body
        return body.topics[0].topic_id

    async def produce(self, producer_id: int | None, values: list[bytes], *, partition: int = 0) -> int:
        """A batch of ``producer_id``'s transaction (None: a plain batch); returns its base offset."""
        records = [Record(i, int(time.time() * 1000), b"k", v) for i, v in enumerate(values)]
        if producer_id is None:
            batch = encode_batch(records)
        else:
            sequence = self.sequences.get(producer_id, 0)
            self.sequences[producer_id] = sequence + len(records)
            batch = encode_batch(
                records,
                producer_id=producer_id,
                producer_epoch=EPOCH,
                base_sequence=sequence,
                is_transactional=True,
            )
        request = ProduceRequest(
            transactional_id=TXN_ID if producer_id is not None else None,
            acks=-1,
            timeout_ms=5000,
            topic_data=[
                ProduceRequest.TopicProduceData(
                    name=TOPIC,
                    partition_data=[ProduceRequest.PartitionProduceData(index=partition, records=batch)],
                )
            ],
        )
        body = await self.client.call(PRODUCE, 9, request)
        response = body.responses[0].partition_responses[0]
        assert response.error_code == Errors.NONE, response
        return response.base_offset

    async def markers(self, *markers: WriteTxnMarkersRequest.WritableTxnMarker, version: int = 1):
        return await self.client.call(WRITE_MARKERS, version, WriteTxnMarkersRequest(markers=list(markers)))

    async def end_txn(self, producer_id: int, *, commit: bool, **kwargs) -> int:
        """Write one marker to partition 0; its error code."""
        body = await self.markers(marker(producer_id, commit=commit, **kwargs))
        return body.markers[0].topics[0].partitions[0].error_code

    async def fetch(
        self,
        offset: int,
        isolation: int,
        *,
        version: int = 12,
        max_wait_ms: int = 0,
        client: RawClient | None = None,
        partition: int = 0,
    ):
        """The one partition of a sessionless Fetch by topic name (v12 and below)."""
        request = FetchRequest(
            replica_id=-1,
            max_wait_ms=max_wait_ms,
            min_bytes=1,
            max_bytes=1 << 20,
            isolation_level=isolation,
            session_id=0,
            session_epoch=-1,
            topics=[
                FetchRequest.FetchTopic(
                    topic=TOPIC,
                    partitions=[
                        FetchRequest.FetchPartition(
                            partition=partition,
                            fetch_offset=offset,
                            log_start_offset=-1,
                            partition_max_bytes=1 << 20,
                        )
                    ],
                )
            ],
        )
        body = await (client or self.client).call(FETCH, version, request)
        return body.responses[0].partitions[0]

    async def list_offsets(self, timestamp: int, isolation: int, *, version: int = 8, replica_id: int = -1):
        request = ListOffsetsRequest(
            replica_id=replica_id,
            isolation_level=isolation,
            topics=[
                ListOffsetsRequest.ListOffsetsTopic(
                    name=TOPIC,
                    partitions=[
                        ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=timestamp)
                    ],
                )
            ],
        )
        body = await self.client.call(LIST_OFFSETS, version, request)
        return body.topics[0].partitions[0]


def marker(
    producer_id: int,
    *,
    commit: bool,
    epoch: int = EPOCH,
    coordinator_epoch: int = 0,
    topics: dict[str, list[int]] | None = None,
) -> WriteTxnMarkersRequest.WritableTxnMarker:
    return WriteTxnMarkersRequest.WritableTxnMarker(
        producer_id=producer_id,
        producer_epoch=epoch,
        transaction_result=commit,
        topics=[
            WriteTxnMarkersRequest.WritableTxnMarkerTopic(name=name, partition_indexes=indexes)
            for name, indexes in (topics if topics is not None else {TOPIC: [0]}).items()
        ],
        coordinator_epoch=coordinator_epoch,
    )


def run(
    tmp_path,
    scenario,
    *,
    topic_configs: dict[str, str] | None = None,
    kafka_version: str | None = None,
    **overrides: str,
):
    """Start a node on a free loopback port (answering as ``kafka_version``, default the newest release
    the codecs cover), create the topic, run ``scenario(broker)``, stop."""

    async def main():
        props = {
            "node.id": "1",
            "log.dirs": str(tmp_path / "data"),
            "transaction.partition.verification.enable": "false",
        }
        props.update(overrides)
        release = kafka_release(kafka_version) if kafka_version else None
        node = BrokerNode.from_config_file(None, props, kafka_release=release)
        host, port = await node.start("127.0.0.1", 0)
        client = await RawClient.connect(host, port)
        try:
            broker = Broker(node, host, port, client, {})
            await broker.create_topic(**(topic_configs or {}))
            return await scenario(broker)
        finally:
            await client.close()
            await node.stop()

    return asyncio.run(asyncio.wait_for(main(), 60))


def records_of(partition_data) -> list:
    data = partition_data.records
    raw = data.read() if hasattr(data, "read") else bytes(data or b"")
    return list(iter_batches(raw))


def committed_values(partition_data) -> list[bytes]:
    """What Kafka's consumer (``CompletedFetch``) hands out from one read_committed partition."""
    pending = sorted((a.first_offset, a.producer_id) for a in partition_data.aborted_transactions)
    aborted: set[int] = set()
    values = []
    for batch in records_of(partition_data):
        while pending and pending[0][0] <= batch.last_offset:
            aborted.add(pending.pop(0)[1])
        if batch.is_control:
            if decode_control_key(batch.records[0].key)[1] == ControlRecordType.ABORT:
                aborted.discard(batch.producer_id)
        elif not (batch.is_transactional and batch.producer_id in aborted):
            values.extend(r.value for r in batch.records)
    return values


# ---- Fetch ---------------------------------------------------------------------------------------


def test_a_read_committed_fetch_stops_at_the_last_stable_offset(tmp_path):
    """``UnifiedLog.read``/``LocalLog.read`` with ``FetchIsolation.TXN_COMMITTED`` reads up to the LSO
    (``UnifiedLog.lastStableOffset``: the open transaction's first offset) and, for a read_committed
    read only, returns an aborted-transaction list (empty here, not null: ``emptyFetchDataInfo`` and
    ``addAbortedTransactions``); every response names the real LSO (``KafkaApis.handleFetchRequest``)."""

    async def scenario(b: Broker):
        await b.produce(None, [b"a", b"b"])  # 0-1
        await b.produce(P1, [b"t1", b"t2"])  # 2-3
        await b.produce(None, [b"c"])  # 4
        return (
            await b.fetch(0, READ_COMMITTED),
            await b.fetch(0, READ_UNCOMMITTED),
            await b.fetch(2, READ_COMMITTED),
            await b.fetch(0, READ_COMMITTED, version=4),
            await b.fetch(0, READ_COMMITTED, version=3),  # no isolation level before v4
        )

    # Fetch v3 left with Kafka 4.0 (KIP-896): a 3.9 broker still serves it
    committed, uncommitted, at_lso, v4, v3 = run(tmp_path, scenario, kafka_version="3.9")
    assert [r.offset for batch in records_of(committed) for r in batch.records] == [0, 1]
    assert (committed.high_watermark, committed.last_stable_offset) == (5, 2)
    assert committed.aborted_transactions == []
    assert [r.offset for batch in records_of(uncommitted) for r in batch.records] == [0, 1, 2, 3, 4]
    assert uncommitted.last_stable_offset == 2 and uncommitted.aborted_transactions is None
    assert records_of(at_lso) == [] and at_lso.error_code == Errors.NONE
    assert at_lso.aborted_transactions == []
    assert [batch.base_offset for batch in records_of(v4)] == [0] and v4.last_stable_offset == 2
    # v3 reads uncommitted up to the high watermark, down-converted to magic 1: one message an entry
    assert [(batch.magic, batch.base_offset) for batch in records_of(v3)] == [(1, o) for o in range(5)]


def test_a_read_committed_fetch_lists_the_aborted_transactions_it_overlaps(tmp_path):
    """``LocalLog.addAbortedTransactions``/``collectAbortedTransactions``: the aborted transactions
    whose marker is at or after the fetch offset and which start before the read's upper bound, as
    (producer id, first offset); the consumer drops their batches."""

    async def scenario(b: Broker):
        await b.produce(P1, [b"x1", b"x2"])  # 0-1
        await b.produce(None, [b"a"])  # 2
        await b.produce(P2, [b"y1"])  # 3
        assert await b.end_txn(P1, commit=False) == Errors.NONE  # 4
        await b.produce(P2, [b"y2"])  # 5
        assert await b.end_txn(P2, commit=True) == Errors.NONE  # 6
        await b.produce(P1, [b"z1"])  # 7: a new transaction, aborted too
        assert await b.end_txn(P1, commit=False) == Errors.NONE  # 8
        return [await b.fetch(offset, READ_COMMITTED) for offset in (0, 3, 5, 9)]

    from_0, from_3, from_5, from_end = run(tmp_path, scenario)
    pairs = lambda data: [(a.producer_id, a.first_offset) for a in data.aborted_transactions]  # noqa: E731
    assert pairs(from_0) == [(P1, 0), (P1, 7)]
    assert from_0.last_stable_offset == from_0.high_watermark == 9
    assert committed_values(from_0) == [b"a", b"y1", b"y2"]
    assert pairs(from_3) == [(P1, 0), (P1, 7)]  # the first one's marker (4) is past the fetch offset
    assert pairs(from_5) == [(P1, 7)]
    assert committed_values(from_5) == [b"y2"]
    assert pairs(from_end) == []


def test_a_waiting_read_committed_fetch_returns_when_the_marker_moves_the_lso(tmp_path):
    """``DelayedFetch.tryComplete`` (TXN_COMMITTED reads up to the LSO) completes once the LSO moves:
    the marker's append notifies the partition's waiting fetches."""

    async def scenario(b: Broker):
        await b.produce(P1, [b"t"])  # 0
        reader = await RawClient.connect(b.host, b.port)
        try:
            started = time.monotonic()
            waiting = asyncio.create_task(b.fetch(0, READ_COMMITTED, max_wait_ms=20_000, client=reader))
            await asyncio.sleep(0.3)
            assert not waiting.done()
            assert await b.end_txn(P1, commit=True) == Errors.NONE
            data = await asyncio.wait_for(waiting, 10)
            return data, time.monotonic() - started
        finally:
            await reader.close()

    data, elapsed = run(tmp_path, scenario)
    assert elapsed < 10
    assert [r.value for batch in records_of(data) for r in batch.records if not batch.is_control] == [b"t"]
    assert data.last_stable_offset == 2


def test_failed_partitions_carry_kafkas_aborted_transactions_value(tmp_path):
    """``KafkaApis.handleFetchRequest``: a partition missing from the metadata is answered with
    ``FetchResponse.partitionResponse`` (the aborted list at its empty default), a read that failed
    (``ReplicaManager.readFromLocalLog``: OFFSET_OUT_OF_RANGE) with a null list and -1 offsets."""

    async def scenario(b: Broker):
        await b.produce(P1, [b"t"])
        return await b.fetch(0, READ_COMMITTED, partition=5), await b.fetch(9, READ_COMMITTED)

    missing, out_of_range = run(tmp_path, scenario)
    assert missing.error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION and missing.aborted_transactions == []
    assert out_of_range.error_code == Errors.OFFSET_OUT_OF_RANGE
    assert out_of_range.aborted_transactions is None
    assert (out_of_range.high_watermark, out_of_range.last_stable_offset) == (-1, -1)


# ---- ListOffsets ---------------------------------------------------------------------------------


def test_list_offsets_latest_under_read_committed_is_the_last_stable_offset(tmp_path):
    """``Partition.fetchOffsetForTimestamp``: the last fetchable offset is the LSO for READ_COMMITTED,
    the high watermark for READ_UNCOMMITTED (and before v2, which has no isolation level);
    LATEST answers with it and a timestamp lookup never finds an offset at or past it."""

    async def scenario(b: Broker):
        await b.produce(None, [b"a", b"b"])  # 0-1
        await b.produce(P1, [b"t"])  # 2
        await b.produce(None, [b"c"])  # 3
        before = (
            (await b.list_offsets(LATEST, READ_COMMITTED)).offset,
            (await b.list_offsets(LATEST, READ_COMMITTED, version=2)).offset,
            (await b.list_offsets(LATEST, READ_UNCOMMITTED)).offset,
            (await b.list_offsets(LATEST, READ_UNCOMMITTED, version=1)).offset,
            (await b.list_offsets(0, READ_COMMITTED)).offset,  # the first record is below the LSO
            (await b.list_offsets(int(time.time() * 1000) + 60_000, READ_COMMITTED)).offset,
        )
        assert await b.end_txn(P1, commit=False) == Errors.NONE  # 4
        after = (await b.list_offsets(LATEST, READ_COMMITTED)).offset
        return before, after

    before, after = run(tmp_path, scenario)
    assert before == (2, 2, 4, 4, 0, -1)
    assert after == 5


def test_list_offsets_by_timestamp_under_read_committed_stops_at_the_open_transaction(tmp_path):
    """``Partition.fetchOffsetForTimestamp`` drops a found offset at or past the last fetchable offset:
    the open transaction's records are not found under READ_COMMITTED, but are under READ_UNCOMMITTED."""

    async def scenario(b: Broker):
        await b.produce(P1, [b"t"])  # 0
        found_committed = await b.list_offsets(0, READ_COMMITTED)
        found_uncommitted = await b.list_offsets(0, READ_UNCOMMITTED)
        return found_committed, found_uncommitted

    committed, uncommitted = run(tmp_path, scenario)
    assert (committed.error_code, committed.offset, committed.timestamp) == (Errors.NONE, -1, -1)
    assert uncommitted.offset == 0


# ---- WriteTxnMarkers ---------------------------------------------------------------------------


def test_write_txn_markers_answers_unknown_partitions_per_partition(tmp_path):
    """``KafkaApis.handleWriteTxnMarkersRequest``: a partition this broker does not host
    (``replicaManager.getMagic`` empty) is UNKNOWN_TOPIC_OR_PARTITION; the others get their marker."""

    async def scenario(b: Broker):
        await b.produce(P1, [b"t"])
        request = marker(P1, commit=True, topics={TOPIC: [0, 7], "nowhere": [0]})
        v1 = await b.markers(request)
        v0 = await b.markers(marker(P2, commit=False, topics={"nowhere": [1]}), version=0)
        return v1, v0, (await b.list_offsets(LATEST, READ_COMMITTED)).offset

    v1, v0, lso = run(tmp_path, scenario, kafka_version="3.9")  # WriteTxnMarkers v0: Kafka 3.x
    codes = {(t.name, p.partition_index): p.error_code for t in v1.markers[0].topics for p in t.partitions}
    assert codes == {
        (TOPIC, 0): Errors.NONE,
        (TOPIC, 7): Errors.UNKNOWN_TOPIC_OR_PARTITION,
        ("nowhere", 0): Errors.UNKNOWN_TOPIC_OR_PARTITION,
    }
    assert v0.markers[0].producer_id == P2
    assert v0.markers[0].topics[0].partitions[0].error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert lso == 2


def test_a_marker_with_a_stale_producer_epoch_is_invalid_producer_epoch(tmp_path):
    """``ProducerAppendInfo.checkProducerEpoch``: a marker (origin COORDINATOR) with an epoch older
    than the producer's is INVALID_PRODUCER_EPOCH and is not written; the transaction stays open."""

    async def scenario(b: Broker):
        await b.produce(P1, [b"t"])  # 0
        stale = await b.end_txn(P1, commit=False, epoch=EPOCH - 1)
        return stale, await b.list_offsets(LATEST, READ_COMMITTED), await b.list_offsets(LATEST, 0)

    stale, lso, hw = run(tmp_path, scenario)
    assert stale == Errors.INVALID_PRODUCER_EPOCH
    assert (lso.offset, hw.offset) == (0, 1)


def test_a_marker_with_a_lower_coordinator_epoch_is_transaction_coordinator_fenced(tmp_path):
    """``ProducerAppendInfo.appendEndTxnMarker``: a marker whose coordinator epoch is below the last
    one this producer's markers carried is TRANSACTION_COORDINATOR_FENCED and is not written."""

    async def scenario(b: Broker):
        await b.produce(P1, [b"t"])  # 0
        first = await b.end_txn(P1, commit=True, coordinator_epoch=7)  # 1
        await b.produce(P1, [b"u"])  # 2
        fenced = await b.end_txn(P1, commit=False, coordinator_epoch=6)
        same = await b.end_txn(P1, commit=False, coordinator_epoch=7)  # 3
        return first, fenced, same, (await b.list_offsets(LATEST, READ_COMMITTED)).offset

    first, fenced, same, lso = run(tmp_path, scenario)
    assert (first, fenced, same) == (Errors.NONE, Errors.TRANSACTION_COORDINATOR_FENCED, Errors.NONE)
    assert lso == 4


def test_write_txn_markers_count_min_insync_replicas_only_up_to_the_replication_factor(tmp_path):
    """``KafkaApis.handleWriteTxnMarkersRequest`` appends with acks=-1, which
    ``Partition.appendRecordsToLeader`` refuses only below ``effectiveMinIsr`` =
    min(min.insync.replicas, replicas) (KAFKA-15583): a one-replica topic takes the marker."""

    async def scenario(b: Broker):
        return await b.end_txn(P1, commit=True)

    assert run(tmp_path, scenario, topic_configs={"min.insync.replicas": "2"}) == Errors.NONE


def test_write_txn_markers_results_are_keyed_by_producer_id(tmp_path):
    """``KafkaApis.handleWriteTxnMarkersRequest`` gathers errors in a map keyed by producer id: two
    markers of one producer give one result holding both partitions' answers, a marker naming no
    partition gives none, and a request without markers an empty response."""

    async def scenario(b: Broker):
        await b.create_topic("other", 2)
        merged = await b.markers(
            marker(P1, commit=True, topics={TOPIC: [0]}),
            marker(P2, commit=True, topics={}),
            marker(P1, commit=True, topics={"other": [1]}),
        )
        return merged, await b.markers()

    merged, empty = run(tmp_path, scenario)
    assert [m.producer_id for m in merged.markers] == [P1]
    codes = {
        (t.name, p.partition_index): p.error_code for t in merged.markers[0].topics for p in t.partitions
    }
    assert codes == {(TOPIC, 0): Errors.NONE, ("other", 1): Errors.NONE}
    assert empty.markers == []


def test_a_partition_named_twice_gets_one_marker(tmp_path):
    """``KafkaApis.handleWriteTxnMarkersRequest`` builds the control batches in a map keyed by
    partition, so a partition repeated within a marker is written once."""

    async def scenario(b: Broker):
        await b.produce(P1, [b"t"])  # 0
        body = await b.markers(marker(P1, commit=True, topics={TOPIC: [0, 0]}))
        return body, (await b.list_offsets(LATEST, READ_UNCOMMITTED)).offset

    body, high_watermark = run(tmp_path, scenario)
    assert [p.error_code for p in body.markers[0].topics[0].partitions] == [Errors.NONE]
    assert high_watermark == 2


def test_a_marker_on_consumer_offsets_completes_the_groups_transaction(tmp_path):
    """``KafkaApis.handleWriteTxnMarkersRequest``: once a marker is in a ``__consumer_offsets``
    partition the group coordinator is told (``onTransactionCompleted``), so the transaction's offset
    commits are applied or dropped; a coordinator without that hook is skipped."""

    async def scenario(b: Broker):
        b.node.consumer_offsets.ensure()
        calls = []
        b.node.group_coordinator.complete_transaction = lambda *args: calls.append(args)
        codes = write_txn_markers(
            b.node,
            producer_id=P1,
            producer_epoch=EPOCH,
            coordinator_epoch=0,
            commit=True,
            partitions=[("__consumer_offsets", 3), (TOPIC, 0)],
        )
        real = b.node.group_coordinator
        b.node.group_coordinator = SimpleNamespace()
        try:
            without_hook = write_txn_markers(
                b.node,
                producer_id=P2,
                producer_epoch=EPOCH,
                coordinator_epoch=0,
                commit=False,
                partitions=[("__consumer_offsets", 3)],
            )
        finally:
            b.node.group_coordinator = real
            del real.complete_transaction
        return codes, calls, without_hook

    codes, calls, without_hook = run(tmp_path, scenario)
    assert codes == {("__consumer_offsets", 3): Errors.NONE, (TOPIC, 0): Errors.NONE}
    assert calls == [(3, P1, EPOCH, True)]
    assert without_hook == {("__consumer_offsets", 3): Errors.NONE}
