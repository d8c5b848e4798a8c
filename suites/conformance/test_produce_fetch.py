"""Kafka's promises about producing and reading, checked on whatever ``--kafka-target`` names (our
reference broker by default; an Apache Kafka container, librdkafka's mock cluster or any broker at a
bootstrap address otherwise). Every check goes through the reference client."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from kconform.codecs.messages import FetchRequest, ListOffsetsRequest
from kconform.harness.client.errors import BrokerError
from kconform.harness.client.network import NetworkClient
from kconform.harness.client.producer import Producer


def _topic(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


async def _fetch_all(bootstrap: str, topic: str, partition: int, offset: int = 0) -> list:
    from kconform.codecs.records import iter_batches

    client = NetworkClient(bootstrap)
    try:
        await client.wait_for_topic(topic, 10)
        leader = client.metadata.leader_for(topic, partition)
        conn = await client.connection(leader)
        version = conn.version_for(1, cap=12)
        part = FetchRequest.FetchPartition(
            partition=partition,
            fetch_offset=offset,
            partition_max_bytes=1 << 20,
            current_leader_epoch=-1,
            log_start_offset=-1,
        )
        request = FetchRequest(
            replica_id=-1,
            max_wait_ms=100,
            min_bytes=0,
            max_bytes=1 << 22,
            isolation_level=0,
            session_id=0,
            session_epoch=-1,
            topics=[FetchRequest.FetchTopic(topic=topic, partitions=[part])],
        )
        response = await conn.send(1, request, version=version)
        data = response.responses[0].partitions[0]
        if data.error_code:
            raise BrokerError(data.error_code, "fetch")
        return [
            r
            for batch in iter_batches(bytes(data.records or b""))
            if not batch.is_control
            for r in batch.records
        ]
    finally:
        await client.close()


async def _list_offset(bootstrap: str, topic: str, partition: int, timestamp: int) -> int:
    client = NetworkClient(bootstrap)
    try:
        await client.wait_for_topic(topic, 10)
        conn = await client.connection(client.metadata.leader_for(topic, partition))
        part = ListOffsetsRequest.ListOffsetsPartition(
            partition_index=partition, timestamp=timestamp, current_leader_epoch=-1, max_num_offsets=1
        )
        request = ListOffsetsRequest(
            replica_id=-1, topics=[ListOffsetsRequest.ListOffsetsTopic(name=topic, partitions=[part])]
        )
        response = await conn.send(2, request, version=conn.version_for(2, floor=1))
        answer = response.topics[0].partitions[0]
        if answer.error_code:
            raise BrokerError(answer.error_code, "list offsets")
        return answer.offset
    finally:
        await client.close()


@pytest.mark.parametrize("acks", ["1", "all"])
def test_acknowledged_records_are_read_back_at_their_offsets(kafka_target, acks):
    topic = _topic("conf-rt")
    kafka_target.create_topic(topic, 2)

    async def scenario():
        config = {"bootstrap.servers": kafka_target.bootstrap, "acks": acks, "linger.ms": 1}
        async with Producer(config) as producer:
            futures = [
                await producer.send(topic, b"value-%d" % i, key=b"k%d" % i, partition=i % 2)
                for i in range(50)
            ]
            acknowledged = [await f for f in futures]
        read = {p: await _fetch_all(kafka_target.bootstrap, topic, p) for p in (0, 1)}
        return acknowledged, read

    acknowledged, read = asyncio.run(scenario())
    for i, metadata in enumerate(acknowledged):
        record = read[metadata.partition][metadata.offset]
        assert (record.offset, bytes(record.value), bytes(record.key)) == (
            metadata.offset,
            b"value-%d" % i,
            b"k%d" % i,
        )
    assert [r.offset for r in read[0]] == list(range(25))  # offsets are dense from 0


def test_list_offsets_earliest_and_latest_bracket_the_log(kafka_target):
    topic = _topic("conf-lo")
    kafka_target.create_topic(topic, 1)

    async def scenario():
        empty = (
            await _list_offset(kafka_target.bootstrap, topic, 0, -2),
            await _list_offset(kafka_target.bootstrap, topic, 0, -1),
        )
        async with Producer({"bootstrap.servers": kafka_target.bootstrap}) as producer:
            for i in range(7):
                await producer.send_and_wait(topic, b"%d" % i, partition=0)
        full = (
            await _list_offset(kafka_target.bootstrap, topic, 0, -2),
            await _list_offset(kafka_target.bootstrap, topic, 0, -1),
        )
        return empty, full

    empty, full = asyncio.run(scenario())
    assert empty == (0, 0)
    assert full == (0, 7)  # latest is the next offset to be written (the high watermark)


def test_an_idempotent_producer_never_writes_a_record_twice(kafka_target):
    topic = _topic("conf-idem")
    kafka_target.create_topic(topic, 1)

    async def scenario():
        config = {"bootstrap.servers": kafka_target.bootstrap, "enable.idempotence": True, "linger.ms": 2}
        async with Producer(config) as producer:
            futures = [await producer.send(topic, b"%d" % i, partition=0) for i in range(200)]
            offsets = [(await f).offset for f in futures]
        return offsets, await _fetch_all(kafka_target.bootstrap, topic, 0)

    offsets, read = asyncio.run(scenario())
    assert offsets == list(range(200))
    assert [bytes(r.value) for r in read] == [b"%d" % i for i in range(200)]


def test_produce_by_topic_id_round_trips_and_an_unknown_id_is_unknown_topic_id(kafka_target):
    # KafkaApis.handleProduceRequest (Produce v13, KIP-516, Kafka 4.1): topics are named by id; an id
    # the broker cannot name is UNKNOWN_TOPIC_ID for each of its partitions (base offset -1), and the
    # answer names each topic by the request's id. What was written reads back by id (Fetch v13+).
    from kconform.codecs.messages import MetadataRequest, ProduceRequest
    from kconform.codecs.records import Record, encode_batch

    topic = _topic("conf-v13")
    kafka_target.create_topic(topic, 1)

    async def scenario():
        client = NetworkClient(kafka_target.bootstrap)
        try:
            await client.wait_for_topic(topic, 10)
            conn = await client.connection(client.metadata.leader_for(topic, 0))
            if conn.versions.get(0, (0, 0))[1] < 13 or conn.versions.get(3, (0, 0))[1] < 10:
                if kafka_target.kind == "reference":  # ours serves both: missing is a regression
                    pytest.fail(
                        f"the reference broker no longer offers Produce v13 / Metadata v10: {conn.versions}"
                    )
                pytest.skip("the target does not offer Produce v13 (or Metadata v10 for topic ids)")
            metadata = await conn.send(
                3, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=topic)]), version=10
            )
            topic_id = metadata.topics[0].topic_id
            missing = uuid.uuid4()
            records = encode_batch([Record(i, 1_700_000_000_000 + i, None, b"r%d" % i) for i in range(3)])
            request = ProduceRequest(
                acks=-1,
                timeout_ms=5000,
                topic_data=[
                    ProduceRequest.TopicProduceData(
                        topic_id=t,
                        partition_data=[ProduceRequest.PartitionProduceData(index=0, records=records)],
                    )
                    for t in (topic_id, missing)
                ],
            )
            response = await conn.send(0, request, version=13)
            answers = {t.topic_id: t.partition_responses[0] for t in response.responses}
            return answers[topic_id], answers[missing], await _fetch_all(kafka_target.bootstrap, topic, 0)
        finally:
            await client.close()

    written, unknown, read = asyncio.run(scenario())
    assert (written.error_code, written.base_offset) == (0, 0)
    assert (unknown.error_code, unknown.base_offset) == (100, -1)  # UNKNOWN_TOPIC_ID
    assert [bytes(r.value) for r in read] == [b"r0", b"r1", b"r2"]


def test_metadata_v13_top_level_error_code_is_none(kafka_target):
    # KIP-1102 (Metadata v13, Kafka 4.0): MetadataResponse.prepareResponse leaves the top-level error
    # code at NONE; topic errors stay with their topics.
    from kconform.codecs.messages import MetadataRequest

    async def scenario():
        client = NetworkClient(kafka_target.bootstrap)
        try:
            conn = await client.any_connection()
            if conn.versions.get(3, (0, 0))[1] < 13:
                if kafka_target.kind == "reference":  # ours serves it: missing is a regression
                    pytest.fail(f"the reference broker no longer offers Metadata v13: {conn.versions}")
                pytest.skip("the target does not offer Metadata v13")
            request = MetadataRequest(
                topics=[MetadataRequest.MetadataRequestTopic(name=_topic("conf-absent"))],
                allow_auto_topic_creation=False,
            )
            return await conn.send(3, request, version=13)
        finally:
            await client.close()

    response = asyncio.run(scenario())
    assert response.error_code == 0
    assert [t.error_code for t in response.topics] == [3]  # UNKNOWN_TOPIC_OR_PARTITION
