"""One consumer-group member as its own process, for the live group tests: it consumes, commits every
record synchronously after processing it, and logs what happened as JSON lines (assign, revoke,
consumed, committed) to a file. It leaves the group cleanly when the stop file appears, or dies for
real when the test kills it.

    python group_member.py LIBRARY BOOTSTRAP GROUP TOPIC LOG STOP_FILE [STRATEGY]

LIBRARY is confluent, kafka-python or aiokafka."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time


class Log:
    def __init__(self, path: str) -> None:
        self.file = open(path, "a", buffering=1)  # noqa: SIM115 - lives as long as the process

    def write(self, event: str, **fields) -> None:
        self.file.write(json.dumps({"event": event, "t": time.time(), **fields}) + "\n")


def run_confluent(bootstrap, group, topic, log: Log, stop_file, strategy) -> None:
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    config = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "session.timeout.ms": 2000,
        "heartbeat.interval.ms": 300,
        "topic.metadata.refresh.interval.ms": 2000,
    }
    if strategy == "consumer":
        config = {k: v for k, v in config.items() if k not in ("session.timeout.ms", "heartbeat.interval.ms")}
        config["group.protocol"] = "consumer"
    elif strategy:
        config["partition.assignment.strategy"] = strategy
    consumer = Consumer(config)
    incremental = strategy in ("cooperative-sticky", "consumer")

    def on_assign(c, partitions):
        log.write("assign", partitions=[p.partition for p in partitions])
        if incremental:
            c.incremental_assign(partitions)
        else:
            c.assign(partitions)

    def on_revoke(c, partitions):
        log.write("revoke", partitions=[p.partition for p in partitions])
        if incremental:
            c.incremental_unassign(partitions)
        else:
            c.unassign()

    def on_lost(c, partitions):
        log.write("lost", partitions=[p.partition for p in partitions])

    consumer.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
    log.write("started")
    while not os.path.exists(stop_file):
        message = consumer.poll(0.1)
        if message is None or message.error():
            continue
        log.write("consumed", p=message.partition(), o=message.offset(), v=message.value().decode())
        try:  # a commit can fail while the group rebalances (ILLEGAL_GENERATION...): the work is redone
            consumer.commit(
                offsets=[TopicPartition(topic, message.partition(), message.offset() + 1)], asynchronous=False
            )
        except KafkaException as exc:
            log.write("commit_failed", p=message.partition(), o=message.offset() + 1, error=str(exc))
            continue
        log.write("committed", p=message.partition(), o=message.offset() + 1)
    consumer.close()
    log.write("closed")


def run_kafka_python(bootstrap, group, topic, log: Log, stop_file, strategy) -> None:
    from kafka import ConsumerRebalanceListener, KafkaConsumer, TopicPartition
    from kafka.errors import KafkaError
    from kafka.structs import OffsetAndMetadata

    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=2000,
        heartbeat_interval_ms=300,
        metadata_max_age_ms=2000,
    )

    class Listener(ConsumerRebalanceListener):
        def on_partitions_assigned(self, assigned):
            log.write("assign", partitions=[p.partition for p in assigned])

        def on_partitions_revoked(self, revoked):
            log.write("revoke", partitions=[p.partition for p in revoked])

    consumer.subscribe([topic], listener=Listener())
    log.write("started")
    while not os.path.exists(stop_file):
        # A poll that times out in the middle of a rebalance can lose the join's completion in
        # kafka-python 3.0 (the member then never learns its assignment): poll long enough.
        for tp, messages in consumer.poll(1000).items():
            for m in messages:
                log.write("consumed", p=tp.partition, o=m.offset, v=m.value.decode())
                try:  # a commit can fail while the group rebalances: the work is then redone
                    consumer.commit(
                        {TopicPartition(topic, tp.partition): OffsetAndMetadata(m.offset + 1, "", -1)}
                    )
                except KafkaError as exc:
                    log.write("commit_failed", p=tp.partition, o=m.offset + 1, error=repr(exc))
                    continue
                log.write("committed", p=tp.partition, o=m.offset + 1)
    consumer.close()
    log.write("closed")


def run_aiokafka(bootstrap, group, topic, log: Log, stop_file, strategy) -> None:
    from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition
    from aiokafka.errors import KafkaError

    class Listener(ConsumerRebalanceListener):
        async def on_partitions_assigned(self, assigned):
            log.write("assign", partitions=[p.partition for p in assigned])

        async def on_partitions_revoked(self, revoked):
            log.write("revoke", partitions=[p.partition for p in revoked])

    async def main():
        consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap,
            group_id=group,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            session_timeout_ms=2000,
            heartbeat_interval_ms=300,
            metadata_max_age_ms=2000,
        )
        consumer.subscribe([topic], listener=Listener())
        await consumer.start()
        log.write("started")
        while not os.path.exists(stop_file):
            batches = await consumer.getmany(timeout_ms=100)
            for tp, messages in batches.items():
                for m in messages:
                    log.write("consumed", p=tp.partition, o=m.offset, v=m.value.decode())
                    try:  # a commit can fail while the group rebalances: the work is then redone
                        await consumer.commit({TopicPartition(topic, tp.partition): m.offset + 1})
                    except KafkaError as exc:
                        log.write("commit_failed", p=tp.partition, o=m.offset + 1, error=repr(exc))
                        continue
                    log.write("committed", p=tp.partition, o=m.offset + 1)
        await consumer.stop()
        log.write("closed")

    asyncio.run(main())


RUNNERS = {"confluent": run_confluent, "kafka-python": run_kafka_python, "aiokafka": run_aiokafka}

if __name__ == "__main__":
    if os.environ.get("KCONFORM_MEMBER_DEBUG"):
        import logging

        logging.basicConfig(level=logging.DEBUG, format="%(asctime)s %(threadName)s %(name)s %(message)s")
    library, bootstrap, group, topic, log_path, stop_file, *rest = sys.argv[1:]
    RUNNERS[library](bootstrap, group, topic, Log(log_path), stop_file, rest[0] if rest else "")
