"""confluent-kafka transactions against the reference broker: commits and aborts (by the producer, by
the transaction timeout, by fencing a zombie), read_committed and read_uncommitted consumers, and
consume-transform-produce with ``send_offsets_to_transaction``."""

from __future__ import annotations

import time

import pytest

from kconform.reference_broker.process import start_broker_process

confluent_kafka = pytest.importorskip("confluent_kafka")
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

pytestmark = [pytest.mark.peer, pytest.mark.slow]

OVERRIDES = {
    "group.initial.rebalance.delay.ms": "0",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "200",
    "offsets.topic.num.partitions": "5",
    "transaction.state.log.num.partitions": "5",
}


def transactional(broker, txn_id: str, **extra) -> Producer:
    producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": txn_id, **extra})
    producer.init_transactions(20)
    return producer


def send(producer: Producer, topic: str, values: list[str]) -> None:
    for value in values:
        producer.produce(topic, value.encode(), partition=hash(value) % 2)
    assert producer.flush(20) == 0  # on the broker before any abort: an abort must hide them


def read_all(broker, topic: str, isolation: str, expected_count: int) -> list[str]:
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": f"reader-{isolation}-{time.monotonic_ns()}",
            "auto.offset.reset": "earliest",
            "isolation.level": isolation,
            "enable.partition.eof": True,
        }
    )
    consumer.subscribe([topic])
    values, eof, deadline = [], set(), time.monotonic() + 30
    while time.monotonic() < deadline and (len(eof) < 2 or len(values) < expected_count):
        message = consumer.poll(0.2)
        if message is None:
            continue
        if message.error():
            if message.error().code() == confluent_kafka.KafkaError._PARTITION_EOF:
                eof.add(message.partition())
            continue
        values.append(message.value().decode())
    consumer.close()
    return sorted(values)


def test_transactions_commit_abort_timeout_fencing_and_consume_transform_produce(tmp_path):
    broker = start_broker_process(tmp_path / "data", overrides=OVERRIDES)
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        for future in admin.create_topics([NewTopic("out", 2, 1), NewTopic("in", 1, 1)]).values():
            future.result(15)

        # Committed and aborted by the producer.
        p1 = transactional(broker, "t1")
        p1.begin_transaction()
        send(p1, "out", [f"A{i}" for i in range(5)])
        p1.commit_transaction(20)
        p1.begin_transaction()
        send(p1, "out", [f"B{i}" for i in range(5)])
        p1.abort_transaction(20)

        # Aborted by the coordinator when the transaction outlives its timeout.
        p2 = transactional(broker, "t2", **{"transaction.timeout.ms": 1000})
        p2.begin_transaction()
        send(p2, "out", [f"T{i}" for i in range(5)])
        time.sleep(2.5)
        with pytest.raises(KafkaException):
            p2.commit_transaction(20)

        # Aborted by fencing: a new producer with the same transactional id takes over.
        zombie = transactional(broker, "t3")
        zombie.begin_transaction()
        send(zombie, "out", [f"Z{i}" for i in range(5)])
        successor = transactional(broker, "t3")
        with pytest.raises(KafkaException) as fenced:
            zombie.commit_transaction(20)
        assert fenced.value.args[0].fatal() or "fenced" in str(fenced.value).lower()
        successor.begin_transaction()
        send(successor, "out", [f"N{i}" for i in range(5)])
        successor.commit_transaction(20)

        # Consume-transform-produce: the group's offsets move with the output, or not at all.
        source = Producer({"bootstrap.servers": broker.bootstrap})
        for i in range(10):
            source.produce("in", f"I{i}".encode(), partition=0)
        assert source.flush(20) == 0
        consumer = Consumer(
            {
                "bootstrap.servers": broker.bootstrap,
                "group.id": "ctp",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
            }
        )
        consumer.assign([TopicPartition("in", 0)])
        transformer = transactional(broker, "t4")

        def transform(count: int, commit: bool) -> None:
            transformer.begin_transaction()
            taken = []
            while len(taken) < count:
                message = consumer.poll(5)
                assert message is not None and not message.error(), message
                taken.append(message)
                transformer.produce("out", b"X" + message.value()[1:], partition=0)
            assert transformer.flush(20) == 0
            transformer.send_offsets_to_transaction(
                [TopicPartition("in", 0, taken[-1].offset() + 1)], consumer.consumer_group_metadata(), 20
            )
            if commit:
                transformer.commit_transaction(20)
            else:
                transformer.abort_transaction(20)

        transform(5, commit=True)
        after_commit = consumer.committed([TopicPartition("in", 0)], 10)[0].offset
        transform(5, commit=False)
        after_abort = consumer.committed([TopicPartition("in", 0)], 10)[0].offset
        consumer.close()

        committed_view = read_all(broker, "out", "read_committed", 15)
        everything = read_all(broker, "out", "read_uncommitted", 35)
    finally:
        broker.stop()

    assert (after_commit, after_abort) == (5, 5)
    expected = [f"A{i}" for i in range(5)] + [f"N{i}" for i in range(5)] + [f"X{i}" for i in range(5)]
    assert committed_view == sorted(expected)
    every = expected + [f"{p}{i}" for p in "BTZ" for i in range(5)] + [f"X{i}" for i in range(5, 10)]
    assert everything == sorted(every)
