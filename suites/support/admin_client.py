"""What the admin-client suites of ``client`` share (``test_admin_*.py``): names, the topic and
broker constants, and helpers that run the admin client, produce and join a group."""

from __future__ import annotations

import asyncio
import time
import uuid

from kconform.harness.client.admin import (
    Admin,
    ConfigResourceType,
)
from kconform.harness.client.errors import BrokerError

TOPIC = ConfigResourceType.TOPIC


_CALL_TIMEOUT = 30  # seconds; a hang fails the test instead of stalling the suite


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def admin_run(bootstrap: str, body, **config):
    """Run ``await body(admin)`` with a started Admin, in a fresh event loop."""

    async def main():
        settings = {"bootstrap.servers": bootstrap, "default.api.timeout.ms": 10_000, **config}
        async with Admin(settings) as admin:
            return await body(admin)

    return asyncio.run(asyncio.wait_for(main(), _CALL_TIMEOUT))


def _code(outcome) -> int:
    assert isinstance(outcome, BrokerError), f"expected a broker error, got {outcome!r}"
    return outcome.code


def produce(bootstrap: str, topic: str, partition: int, timestamps: list[int]) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "acks": "all"})
    failures = []
    for i, ts in enumerate(timestamps):
        producer.produce(
            topic,
            value=f"v{i}".encode(),
            partition=partition,
            timestamp=ts,
            on_delivery=lambda err, _msg: failures.append(err) if err else None,
        )
    assert producer.flush(15) == 0
    assert failures == []


def join_group(bootstrap: str, group_id: str, topic: str, partitions: int, protocol: str):
    """A confluent-kafka consumer in ``group_id`` that owns every partition of ``topic``, with
    partition 0's offset 1 committed. The caller closes it."""
    from confluent_kafka import Consumer, TopicPartition

    config = {
        "bootstrap.servers": bootstrap,
        "group.id": group_id,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "group.protocol": protocol,
    }
    if protocol == "classic":
        config["session.timeout.ms"] = 10_000
    consumer = Consumer(config)
    consumer.subscribe([topic])
    deadline = time.monotonic() + 20
    while len(consumer.assignment()) < partitions:
        assert time.monotonic() < deadline, f"{protocol} consumer got no full assignment"
        consumer.poll(0.2)
    consumer.commit(offsets=[TopicPartition(topic, 0, 1)], asynchronous=False)
    return consumer
