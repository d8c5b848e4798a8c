"""What the error-rule suites of ``reference_broker`` share (``test_error_rules_*.py``): the API keys
and versions they use, ``Broker`` (a node in this process with raw request helpers), ``run`` and the
request and record builders."""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass

from kconform.codecs.errors import Errors
from kconform.codecs.messages import (
    CreateTopicsRequest,
    FetchRequest,
    InitProducerIdRequest,
    ListOffsetsRequest,
    MetadataRequest,
    ProduceRequest,
)
from kconform.codecs.records import Record, encode_batch, iter_batches
from kconform.codecs.releases import kafka_release
from kconform.reference_broker.node import BrokerNode

from .rawclient import RawClient

PRODUCE, FETCH, LIST_OFFSETS, METADATA = 0, 1, 2, 3


API_VERSIONS, CREATE_TOPICS, DELETE_TOPICS, INIT_PRODUCER_ID, CREATE_PARTITIONS = 18, 19, 20, 22, 37


PRODUCE_V, FETCH_V, LIST_OFFSETS_V, METADATA_V = 9, 16, 8, 12


EARLIEST, LATEST, MAX_TIMESTAMP = -2, -1, -3


TOPIC = "orders"


# ---- a broker with helpers ----------------------------------------------------------------------


@dataclass
class Broker:
    node: BrokerNode
    host: str
    port: int
    client: RawClient

    async def connect(self) -> RawClient:
        return await RawClient.connect(self.host, self.port)

    async def create_topic(self, name: str = TOPIC, partitions: int = 1, **configs: str) -> uuid.UUID:
        topic = CreateTopicsRequest.CreatableTopic(
            name=name,
            num_partitions=partitions,
            replication_factor=1,
            configs=[CreateTopicsRequest.CreatableTopicConfig(name=k, value=v) for k, v in configs.items()],
        )
        body = await self.client.call(CREATE_TOPICS, 7, CreateTopicsRequest(topics=[topic], timeout_ms=5000))
        result = body.topics[0]
        assert result.error_code == Errors.NONE, result
        return result.topic_id

    async def produce(
        self,
        records: bytes | None,
        *,
        topic: str = TOPIC,
        partition: int = 0,
        acks: int = -1,
        version: int = PRODUCE_V,
        client: RawClient | None = None,
    ):
        """The one partition response of a one-partition Produce request."""
        body = await (client or self.client).call(
            PRODUCE, version, produce_request(topic, partition, records, acks)
        )
        return body.responses[0].partition_responses[0]

    async def fetch(self, topic_id: uuid.UUID, offsets: dict[int, int], **kwargs):
        """A sessionless Fetch at FETCH_V (topics by id) of ``{partition: offset}``; the whole body."""
        version = kwargs.pop("version", FETCH_V)
        client = kwargs.pop("client", self.client)
        return await client.call(FETCH, version, fetch_request(topic_id, offsets, **kwargs))

    async def list_offsets(self, timestamp: int, *, partition: int = 0, version: int = LIST_OFFSETS_V):
        request = ListOffsetsRequest(
            replica_id=-1,
            topics=[
                ListOffsetsRequest.ListOffsetsTopic(
                    name=TOPIC,
                    partitions=[
                        ListOffsetsRequest.ListOffsetsPartition(
                            partition_index=partition, timestamp=timestamp
                        )
                    ],
                )
            ],
        )
        body = await self.client.call(LIST_OFFSETS, version, request)
        return body.topics[0].partitions[0]

    async def metadata(self, *names: str, auto_create: bool = True):
        request = MetadataRequest(
            topics=[MetadataRequest.MetadataRequestTopic(name=n) for n in names],
            allow_auto_topic_creation=auto_create,
        )
        return await self.client.call(METADATA, METADATA_V, request)

    async def init_producer_id(self) -> tuple[int, int]:
        body = await self.client.call(
            INIT_PRODUCER_ID, 4, InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000)
        )
        assert body.error_code == Errors.NONE
        return body.producer_id, body.producer_epoch


def run(tmp_path, scenario, *, kafka_version: str | None = None, **overrides: str):
    """Start a node on a free loopback port (answering as ``kafka_version``, default the newest release
    the codecs cover), run ``scenario(broker)`` with one connection open, stop."""

    async def main():
        props = {"node.id": "1", "log.dirs": str(tmp_path / "data")}
        props.update(overrides)
        release = kafka_release(kafka_version) if kafka_version else None
        node = BrokerNode.from_config_file(None, props, kafka_release=release)
        host, port = await node.start("127.0.0.1", 0)
        client = await RawClient.connect(host, port)
        try:
            return await scenario(Broker(node, host, port, client))
        finally:
            await client.close()
            await node.stop()

    return asyncio.run(asyncio.wait_for(main(), 60))


def produce_request(topic: str, partition: int, records: bytes | None, acks: int = -1) -> ProduceRequest:
    return ProduceRequest(
        transactional_id=None,
        acks=acks,
        timeout_ms=5000,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name=topic,
                partition_data=[ProduceRequest.PartitionProduceData(index=partition, records=records)],
            )
        ],
    )


def fetch_request(
    topic_id: uuid.UUID,
    offsets: dict[int, int],
    *,
    max_wait_ms: int = 0,
    min_bytes: int = 1,
    max_bytes: int = 1 << 20,
    partition_max_bytes: int = 1 << 20,
    session_id: int = 0,
    session_epoch: int = -1,
    leader_epoch: int = -1,
) -> FetchRequest:
    partitions = [
        FetchRequest.FetchPartition(
            partition=index,
            current_leader_epoch=leader_epoch,
            fetch_offset=offset,
            log_start_offset=-1,
            partition_max_bytes=partition_max_bytes,
        )
        for index, offset in offsets.items()
    ]
    return FetchRequest(
        max_wait_ms=max_wait_ms,
        min_bytes=min_bytes,
        max_bytes=max_bytes,
        session_id=session_id,
        session_epoch=session_epoch,
        topics=[FetchRequest.FetchTopic(topic_id=topic_id, partitions=partitions)] if partitions else [],
    )


def now_ms() -> int:
    return int(time.time() * 1000)


def batch(
    count: int = 3, *, timestamps: list[int] | None = None, key: bytes | None = b"k", size: int = 10, **kwargs
) -> bytes:
    """One magic 2 batch as a producer sends it (base offset 0)."""
    stamps = timestamps if timestamps is not None else [now_ms()] * count
    return encode_batch(
        [Record(i, ts, key, bytes([97 + i % 26]) * size) for i, ts in enumerate(stamps)], **kwargs
    )


def fetched_records(partition_data) -> list[Record]:
    data = partition_data.records
    raw = data.read() if hasattr(data, "read") else bytes(data or b"")
    return [record for b in iter_batches(raw) for record in b.records]


def partitions_of(fetch_body) -> dict[int, object]:
    return {p.partition_index: p for t in fetch_body.responses for p in t.partitions}
