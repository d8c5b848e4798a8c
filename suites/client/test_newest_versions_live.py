"""The reference client on the newest data-path versions: it produces with Produce v13 (topics by id,
KIP-516), fetches with Fetch v18, lists offsets with ListOffsets v11 and reads Metadata v13 when a
reference broker answering as a release that serves them is on the other side, and steps down to what
an older release offers. The broker records the version of every request it serves, so the tests see
the versions on the wire, not the client's intentions."""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import time
import uuid

import pytest

from kconform.codecs.errors import Errors
from kconform.codecs.messages import CreateTopicsRequest, MetadataResponse
from kconform.codecs.releases import kafka_release
from kconform.harness.client.consumer import Consumer
from kconform.harness.client.metadata import REBOOTSTRAP_REQUIRED, ClusterMetadata
from kconform.harness.client.producer import Producer
from kconform.harness.client.raw import RawClient
from kconform.harness.client.sender import produce_version_cap
from kconform.reference_broker.node import BrokerNode

PRODUCE, FETCH, LIST_OFFSETS, METADATA, ADD_PARTITIONS_TO_TXN, CREATE_TOPICS = 0, 1, 2, 3, 24, 19
TOPIC = "newest"


async def start_node(tmp_path, kafka_version: str | None, **overrides: str):
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
    return node, f"{host}:{port}"


def record_versions(node) -> dict[int, set[int]]:
    """{api key: versions served} from now on: every handler is wrapped to note its request's version."""
    seen: dict[int, set[int]] = collections.defaultdict(set)
    handlers = node.dispatcher.handlers
    for key, handler in list(handlers.items()):

        async def noting(broker, ctx, request, _inner=handler.fn):
            seen[ctx.api_key].add(ctx.api_version)
            return await _inner(broker, ctx, request)

        handlers[key] = dataclasses.replace(handler, fn=noting)
    return seen


async def create_topic(bootstrap: str, partitions: int) -> None:
    host, port = bootstrap.rsplit(":", 1)
    client = await RawClient.connect(host, int(port))
    try:
        topic = CreateTopicsRequest.CreatableTopic(
            name=TOPIC, num_partitions=partitions, replication_factor=1
        )
        body = await client.call(CREATE_TOPICS, 5, CreateTopicsRequest(topics=[topic], timeout_ms=5000))
        assert body.topics[0].error_code == Errors.NONE, body
    finally:
        await client.close()


async def drain(consumer, expected: int, timeout: float = 20.0) -> list:
    got: list = []
    deadline = time.monotonic() + timeout
    while len(got) < expected and time.monotonic() < deadline:
        got += await consumer.poll(200)
    return got


# (release, Produce, Fetch, ListOffsets, Metadata): the newest version of each the release serves.
RELEASES = [
    ("4.3", 13, 18, 11, 13),
    ("4.1", 13, 18, 10, 13),
    ("4.0", 12, 17, 10, 13),
    ("3.9", 11, 17, 9, 12),
    ("2.7", 8, 12, 5, 9),  # no topic ids in its Metadata: everything by name
]


@pytest.mark.parametrize(("release", "produce", "fetch", "list_offsets", "metadata"), RELEASES)
def test_produce_and_fetch_at_the_newest_versions_the_broker_serves(
    tmp_path, release, produce, fetch, list_offsets, metadata
):
    async def scenario():
        node, bootstrap = await start_node(tmp_path, release)
        try:
            await create_topic(bootstrap, 2)
            seen = record_versions(node)
            config = {"bootstrap.servers": bootstrap, "linger.ms": 1, "enable.idempotence": True}
            async with Producer(config) as producer:
                futures = [
                    await producer.send(TOPIC, b"v%d" % i, key=b"k%d" % i, partition=i % 2) for i in range(40)
                ]
                acknowledged = [await f for f in futures]
            config = {"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest"}
            async with Consumer(config) as consumer:
                consumer.assign([(TOPIC, 0), (TOPIC, 1)])
                records = await drain(consumer, 40)
            return acknowledged, records, dict(seen)
        finally:
            await node.stop()

    acknowledged, records, seen = asyncio.run(asyncio.wait_for(scenario(), 60))
    assert [(m.partition, m.offset) for m in acknowledged] == [(i % 2, i // 2) for i in range(40)]
    by_partition = collections.defaultdict(list)
    for r in records:
        by_partition[r.partition].append((r.offset, r.key, r.value))
    for p in (0, 1):
        assert by_partition[p] == [(i // 2, b"k%d" % i, b"v%d" % i) for i in range(p, 40, 2)]
    assert seen[PRODUCE] == {produce}
    assert seen[FETCH] == {fetch}
    assert seen[LIST_OFFSETS] == {list_offsets}
    assert seen[METADATA] == {metadata}


def test_a_transactional_producer_stays_at_produce_v11(tmp_path):
    # Sender.sendProduceRequest: a transactional producer without transactions v2 builds Produce with
    # useTransactionV1Version (ProduceRequest.LAST_STABLE_VERSION_BEFORE_TRANSACTION_V2, v11), since
    # v12 would have the broker add the partitions itself; this producer adds them with
    # AddPartitionsToTxn. Its plain sends elsewhere in the same run go at v13.
    async def scenario():
        node, bootstrap = await start_node(tmp_path, None)
        try:
            await create_topic(bootstrap, 1)
            seen = record_versions(node)
            config = {"bootstrap.servers": bootstrap, "transactional.id": "newest-txn"}
            async with Producer(config) as producer:
                await producer.init_transactions()
                producer.begin_transaction()
                for i in range(5):
                    await producer.send(TOPIC, b"t%d" % i, partition=0)
                await producer.commit_transaction()
            transactional = set(seen[PRODUCE])
            async with Producer({"bootstrap.servers": bootstrap}) as producer:
                await producer.send_and_wait(TOPIC, b"plain", partition=0)
            config = {"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest"}
            config["isolation.level"] = "read_committed"
            async with Consumer(config) as consumer:
                consumer.assign([(TOPIC, 0)])
                records = await drain(consumer, 6)
            return transactional, dict(seen), [r.value for r in records]
        finally:
            await node.stop()

    transactional, seen, values = asyncio.run(asyncio.wait_for(scenario(), 60))
    assert transactional == {11}
    assert seen[PRODUCE] == {11, 13}
    assert seen[ADD_PARTITIONS_TO_TXN]
    assert values == [b"t%d" % i for i in range(5)] + [b"plain"]


# ---- the decisions, without a broker ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("transactional", "ids", "cap"),
    [(False, True, None), (False, False, 12), (True, True, 11), (True, False, 11)],
)
def test_produce_version_cap(transactional, ids, cap):
    assert produce_version_cap(transactional=transactional, every_topic_id_known=ids) == cap


def _metadata_response(error_code: int, topic_id: uuid.UUID) -> MetadataResponse:
    return MetadataResponse(
        brokers=[MetadataResponse.MetadataResponseBroker(node_id=1, host="h", port=9092)],
        topics=[MetadataResponse.MetadataResponseTopic(name="t", topic_id=topic_id, partitions=[])],
        error_code=error_code,
    )


def test_metadata_v13_rebootstrap_required_answer_is_not_taken():
    # NetworkClient.DefaultMetadataUpdater.handleSuccessfulResponse (Kafka 4.0, KIP-1102): a top-level
    # REBOOTSTRAP_REQUIRED makes the client rebootstrap instead of taking the answer; NONE is an
    # ordinary answer. A zero topic id (a broker below Metadata v10) is no topic id.
    first = ClusterMetadata.from_response(_metadata_response(Errors.NONE, uuid.UUID(int=7)))
    assert first.known_topic_id("t") == uuid.UUID(int=7)
    kept = ClusterMetadata.from_response(_metadata_response(REBOOTSTRAP_REQUIRED, uuid.UUID(int=8)), first)
    assert kept is first
    old = ClusterMetadata.from_response(_metadata_response(Errors.NONE, uuid.UUID(int=0)))
    assert (old.topic_id("t"), old.known_topic_id("t"), old.known_topic_id("absent")) == (
        uuid.UUID(int=0),
        None,
        None,
    )
