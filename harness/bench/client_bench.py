"""``kconform bench client``: our reference client against kafka-python and aiokafka, producing and then
consuming the same load through the same broker, in the same run.

Each client runs in its own process (so one's garbage and caches do not slow another) and does the
same work with the same settings: produce N records of 100 bytes (acks=1, linger 5 ms, 16 KiB
batches, no compression, no idempotence: the settings all three share), wait for every
acknowledgement, then read the N records back from the beginning with manual assignment (no group),
up to 5,000 records a poll. Reported: records/s for each, and ours / peer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from .report import Comparison, print_comparisons

VALUE_BYTES = 100
BATCH_BYTES = 16_384
LINGER_MS = 5
MAX_POLL_RECORDS = 5000
CLIENTS = ("kconform", "aiokafka", "kafka-python")


def _value() -> bytes:
    return os.urandom(VALUE_BYTES)


# ---- workers (each runs in its own process) ------------------------------------------------------


def _ours(bootstrap: str, topic: str, records: int, partitions: int) -> dict:
    import asyncio

    from kconform.harness.client.consumer import Consumer
    from kconform.harness.client.producer import Producer

    value = _value()

    async def produce() -> float:
        config = {
            "bootstrap.servers": bootstrap,
            "acks": "1",
            "linger.ms": LINGER_MS,
            "batch.size": BATCH_BYTES,
            "enable.idempotence": False,
        }
        async with Producer(config) as producer:
            await producer.partitions_for(topic)
            start = time.perf_counter()
            send = producer.send
            for _ in range(records):
                await send(topic, value)
            await producer.flush()
            return time.perf_counter() - start

    async def consume() -> float:
        config = {
            "bootstrap.servers": bootstrap,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "max.poll.records": MAX_POLL_RECORDS,
        }
        consumer = Consumer(config)
        await consumer.start()
        try:
            consumer.assign([(topic, p) for p in range(partitions)])
            start = time.perf_counter()
            got = 0
            while got < records:
                got += len(await consumer.poll(1000))
            return time.perf_counter() - start
        finally:
            await consumer.close()

    produce_s = asyncio.run(produce())
    consume_s = asyncio.run(consume())
    return {"produce_s": produce_s, "consume_s": consume_s}


def _aiokafka(bootstrap: str, topic: str, records: int, partitions: int) -> dict:
    import asyncio

    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    value = _value()

    async def produce() -> float:
        producer = AIOKafkaProducer(
            bootstrap_servers=bootstrap,
            acks=1,
            linger_ms=LINGER_MS,
            max_batch_size=BATCH_BYTES,
            enable_idempotence=False,
        )
        await producer.start()
        try:
            await producer.partitions_for(topic)
            start = time.perf_counter()
            send = producer.send
            for _ in range(records):
                await send(topic, value)
            await producer.flush()
            return time.perf_counter() - start
        finally:
            await producer.stop()

    async def consume() -> float:
        consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest"
        )
        await consumer.start()
        try:
            consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
            await consumer.seek_to_beginning()
            start = time.perf_counter()
            got = 0
            while got < records:
                batches = await consumer.getmany(timeout_ms=1000, max_records=MAX_POLL_RECORDS)
                got += sum(len(b) for b in batches.values())
            return time.perf_counter() - start
        finally:
            await consumer.stop()

    return {"produce_s": asyncio.run(produce()), "consume_s": asyncio.run(consume())}


def _kafka_python(bootstrap: str, topic: str, records: int, partitions: int) -> dict:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    value = _value()
    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        acks=1,
        linger_ms=LINGER_MS,
        batch_size=BATCH_BYTES,
        enable_idempotence=False,
    )
    producer.partitions_for(topic)
    start = time.perf_counter()
    send = producer.send
    for _ in range(records):
        send(topic, value)
    producer.flush()
    produce_s = time.perf_counter() - start
    producer.close()
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest"
    )
    consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
    consumer.seek_to_beginning()
    start = time.perf_counter()
    got = 0
    while got < records:
        batches = consumer.poll(timeout_ms=1000, max_records=MAX_POLL_RECORDS)
        got += sum(len(b) for b in batches.values())
    consume_s = time.perf_counter() - start
    consumer.close()
    return {"produce_s": produce_s, "consume_s": consume_s}


_WORKERS = {"kconform": _ours, "aiokafka": _aiokafka, "kafka-python": _kafka_python}


def worker_main(argv: list[str]) -> None:
    client, bootstrap, topic, records, partitions = argv
    result = _WORKERS[client](bootstrap, topic, int(records), int(partitions))
    print(json.dumps(result), flush=True)


# ---- driver ---------------------------------------------------------------------------------------


def _run_worker(client: str, bootstrap: str, topic: str, records: int, partitions: int) -> dict:
    args = [
        sys.executable,
        "-m",
        "kconform.harness.bench.client_bench",
        client,
        bootstrap,
        topic,
        str(records),
        str(partitions),
    ]
    done = subprocess.run(args, capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        raise RuntimeError(f"{client} worker failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    import asyncio

    from kconform.codecs.messages import CreateTopicsRequest
    from kconform.harness.client.errors import raise_for
    from kconform.harness.client.network import NetworkClient

    async def create() -> None:
        client = NetworkClient(bootstrap)
        try:
            request = CreateTopicsRequest(
                topics=[
                    CreateTopicsRequest.CreatableTopic(
                        name=topic, num_partitions=partitions, replication_factor=1
                    )
                ],
                timeout_ms=30_000,
            )
            response = await client.send_any(19, request)
            raise_for(response.topics[0].error_code, f"creating {topic}", response.topics[0].error_message)
        finally:
            await client.close()

    asyncio.run(create())


def run(*, records: int, partitions: int, bootstrap: str | None, as_json: bool) -> list[Comparison]:
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="kconform-bench-client-") as tmp:
        node = None
        if bootstrap is None:
            from kconform.reference_broker.process import start_broker_process

            node = start_broker_process(Path(tmp))
            bootstrap = node.bootstrap
        try:
            for client in CLIENTS:
                topic = f"bench-client-{client}-{uuid.uuid4().hex[:6]}"
                _create_topic(bootstrap, topic, partitions)
                print(f"{client}: {records:,} records ...", file=sys.stderr, flush=True)
                results[client] = _run_worker(client, bootstrap, topic, records, partitions)
        finally:
            if node is not None:
                node.stop()
    rows = []
    case = f"{records:,} x {VALUE_BYTES} B, {partitions} partitions"
    ours = results["kconform"]
    for peer in CLIENTS[1:]:
        theirs = results[peer]
        for metric, key in (("produce records/s", "produce_s"), ("consume records/s", "consume_s")):
            rows.append(
                Comparison(
                    "client",
                    case,
                    metric,
                    records / ours[key],
                    peer,
                    records / theirs[key],
                    higher_is_better=True,
                )
            )
    print_comparisons(rows, as_json=as_json, title="kconform bench client (ours vs peers, same broker)")
    return rows


if __name__ == "__main__":
    worker_main(sys.argv[1:])
