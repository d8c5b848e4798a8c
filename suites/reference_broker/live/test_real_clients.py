"""Real Kafka clients against the reference broker: create a topic, produce with acks=all under every
compression codec (idempotent where the client has it), and read everything back byte-identical."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import time
import uuid

import pytest

pytestmark = [pytest.mark.peer, pytest.mark.slow]

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
COUNT = 200


def _payloads(tag: str) -> list[tuple[bytes, bytes]]:
    return [(f"{tag}-key-{i}".encode(), os.urandom(50) + f"-{tag}-{i}".encode()) for i in range(COUNT)]


def _topic(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.mark.parametrize("codec", CODECS)
def test_confluent_kafka(broker, codec):
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = _topic(f"ck-{codec}")
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=1)])[topic].result(15)
    sent = _payloads(codec)
    producer = Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "compression.type": codec,
            "linger.ms": 5,
        }
    )
    delivered = []
    for key, value in sent:
        producer.produce(
            topic,
            value=value,
            key=key,
            on_delivery=lambda err, msg: delivered.append((err, msg.partition(), msg.offset())),
        )
    assert producer.flush(30) == 0
    assert all(err is None for err, _, _ in delivered) and len(delivered) == COUNT
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": "ck-reader",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(3)])
    got = []
    while len(got) < COUNT:
        msg = consumer.poll(10)
        assert msg is not None, f"timed out after {len(got)} records"
        assert msg.error() is None, msg.error()
        got.append((msg.key(), msg.value(), msg.partition(), msg.offset()))
    consumer.close()
    assert sorted((k, v) for k, v, _, _ in got) == sorted(sent)
    assert sorted((p, o) for _, _, p, o in got) == sorted((p, o) for _, p, o in delivered)


@pytest.mark.parametrize("codec", CODECS)
def test_kafka_python(broker, codec):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import KafkaAdminClient, NewTopic

    topic = _topic(f"kp-{codec}")
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)])
    admin.close()
    sent = _payloads(codec)
    producer = KafkaProducer(
        bootstrap_servers=broker.bootstrap,
        acks="all",
        enable_idempotence=True,
        compression_type=None if codec == "none" else codec,
        linger_ms=5,
    )
    futures = [producer.send(topic, key=k, value=v) for k, v in sent]
    producer.flush(30)
    metadata = [f.get(10) for f in futures]
    producer.close()
    consumer = KafkaConsumer(
        bootstrap_servers=broker.bootstrap,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    consumer.assign([TopicPartition(topic, p) for p in range(2)])
    got = _poll_all(consumer, len(sent))
    consumer.close()
    assert sorted((k, v) for k, v, _, _ in got) == sorted(sent)
    assert sorted((p, o) for _, _, p, o in got) == sorted((m.partition, m.offset) for m in metadata)


def _poll_all(consumer, expected: int, timeout_s: float = 30.0, quiet_s: float = 1.0) -> list:
    """(key, value, partition, offset) of what a kafka-python consumer reads: until ``expected`` records
    came, then for ``quiet_s`` more (so a duplicate would show), or until ``timeout_s``."""
    got: list = []
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=200).values():
            got += [(m.key, m.value, m.partition, m.offset) for m in records]
        if len(got) >= expected:
            deadline = min(deadline, time.monotonic() + quiet_s)
    return got


@pytest.mark.parametrize("codec", CODECS)
def test_aiokafka(broker, codec):
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    topic = _topic(f"ak-{codec}")
    sent = _payloads(codec)

    async def run():
        admin = AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap)
        await admin.start()
        await admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)])
        await admin.close()
        producer = AIOKafkaProducer(
            bootstrap_servers=broker.bootstrap,
            acks="all",
            enable_idempotence=True,
            compression_type=None if codec == "none" else codec,
            linger_ms=5,
        )
        await producer.start()
        try:
            results = await asyncio.gather(*[await producer.send(topic, key=k, value=v) for k, v in sent])
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(
            bootstrap_servers=broker.bootstrap, enable_auto_commit=False, auto_offset_reset="earliest"
        )
        await consumer.start()
        try:
            consumer.assign([TopicPartition(topic, p) for p in range(2)])
            got = []
            while len(got) < COUNT:
                batch = await asyncio.wait_for(consumer.getmany(timeout_ms=1000), 15)
                for messages in batch.values():
                    got.extend((m.key, m.value, m.partition, m.offset) for m in messages)
        finally:
            await consumer.stop()
        return results, got

    results, got = asyncio.run(run())
    assert sorted((k, v) for k, v, _, _ in got) == sorted(sent)
    assert sorted((p, o) for _, _, p, o in got) == sorted((r.partition, r.offset) for r in results)


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is installed by ci/install-tools.sh")
@pytest.mark.parametrize("codec", CODECS)
def test_kcat(broker, codec):
    topic = _topic(f"kcat-{codec}")
    lines = [f"key-{i}\tvalue-{i}-{os.urandom(8).hex()}" for i in range(COUNT)]
    produce = subprocess.run(
        [
            "kcat",
            "-P",
            "-b",
            broker.bootstrap,
            "-t",
            topic,
            "-K",
            "\t",
            "-z",
            codec,
            "-X",
            "acks=all",
            "-X",
            "enable.idempotence=true",
            "-X",
            "allow.auto.create.topics=true",
        ],
        input="\n".join(lines) + "\n",
        text=True,
        capture_output=True,
        timeout=60,
    )
    assert produce.returncode == 0, produce.stderr
    consume = subprocess.run(
        ["kcat", "-C", "-b", broker.bootstrap, "-t", topic, "-o", "beginning", "-e", "-f", "%k\t%s\n"],
        text=True,
        capture_output=True,
        timeout=60,
    )
    assert consume.returncode == 0, consume.stderr
    assert sorted(consume.stdout.splitlines()) == sorted(lines)
