"""``kconform bench broker``: the same confluent-kafka load through the reference broker and through
librdkafka's mock cluster, in the same run.

For each acks setting: a producer (linger 5 ms, 100-byte values) sends N records, then a consumer reads
them all back. Reported: produce and consume records/s and MB/s, p99 produce latency (librdkafka's own
per-message latency, from produce() to the delivery report), and the ratio reference / mock."""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from .report import Comparison

VALUE_BYTES = 100
# librdkafka's mock cluster keeps at most a few MB per partition in memory and drops older batches, so
# the load is spread over enough partitions that every record is still there for the consumer.
MOCK_RETAINED_BYTES_PER_PARTITION = 2 * 1024 * 1024
RECORD_OVERHEAD_BYTES = 20


def partitions_for(records: int) -> int:
    total = records * (VALUE_BYTES + RECORD_OVERHEAD_BYTES)
    return max(4, -(-total // MOCK_RETAINED_BYTES_PER_PARTITION))


@dataclass(slots=True)
class LoadResult:
    records: int
    produce_s: float
    consume_s: float
    p99_ms: float

    @property
    def produce_rate(self) -> float:
        return self.records / self.produce_s

    @property
    def consume_rate(self) -> float:
        return self.records / self.consume_s


def run_load(bootstrap: str, topic: str, records: int, acks: str, partitions: int) -> LoadResult:
    from confluent_kafka import Consumer, Producer, TopicPartition

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": acks,
            "linger.ms": 5,
            "queue.buffering.max.messages": 1_000_000,
            "queue.buffering.max.kbytes": 1_048_576,
        }
    )
    latencies: list[float] = []
    failures: list[str] = []

    def delivered(err, msg) -> None:
        if err is not None:
            failures.append(str(err))
        else:
            latencies.append(msg.latency())

    value = os.urandom(VALUE_BYTES)
    start = time.perf_counter()
    for i in range(records):
        while True:
            try:
                producer.produce(topic, value=value, partition=i % partitions, on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.01)
        if i % 10_000 == 0:
            producer.poll(0)
    remaining = producer.flush(120)
    produce_s = time.perf_counter() - start
    if remaining or failures:
        raise RuntimeError(f"{remaining} records undelivered, {len(failures)} failed: {failures[:3]}")
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-{uuid.uuid4().hex[:6]}",
            "enable.auto.commit": False,
            "fetch.max.bytes": 52_428_800,
            "max.partition.fetch.bytes": 10_485_760,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got = 0
    start = time.perf_counter()
    deadline = start + 300
    while got < records and time.perf_counter() < deadline:
        for msg in consumer.consume(num_messages=10_000, timeout=1.0):
            if msg.error() is None:
                got += 1
    consume_s = time.perf_counter() - start
    consumer.close()
    if got < records:
        raise RuntimeError(f"consumed only {got} of {records} records")
    p99_s = statistics.quantiles(latencies, n=100)[98] if len(latencies) >= 100 else max(latencies)
    p99 = p99_s * 1000
    return LoadResult(records, produce_s, consume_s, p99)


def _reference_target(data_dir: Path, partitions: int):
    from confluent_kafka.admin import AdminClient, NewTopic

    from kconform.reference_broker.process import start_broker_process

    node = start_broker_process(data_dir)

    def create(topic: str) -> None:
        admin = AdminClient({"bootstrap.servers": node.bootstrap})
        admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)

    return node.bootstrap, create, node.stop


def _mock_target(partitions: int):
    from ..targets.rdkafka_mock import RdkafkaMockCluster

    mock = RdkafkaMockCluster(1)
    return mock.bootstrap, lambda topic: mock.create_topic(topic, partitions, 1), mock.close


def run(*, records: int, as_json: bool) -> list[Comparison]:
    rows: list[Comparison] = []
    results: dict[tuple[str, str], LoadResult] = {}
    with tempfile.TemporaryDirectory(prefix="kconform-bench-") as tmp:
        partitions = partitions_for(records)
        targets = (
            ("rdkafka-mock", lambda: _mock_target(partitions)),
            ("reference", lambda: _reference_target(Path(tmp), partitions)),
        )
        for target, build in targets:
            bootstrap, create, stop = build()
            try:
                for acks in ("1", "all"):
                    topic = f"bench-{acks}-{uuid.uuid4().hex[:6]}"
                    create(topic)
                    print(f"{target}: acks={acks}, {records:,} records ...", file=sys.stderr, flush=True)
                    results[(target, acks)] = run_load(bootstrap, topic, records, acks, partitions)
            finally:
                stop()
    mb = records * VALUE_BYTES / 1e6
    for acks in ("1", "all"):
        ours, peer = results[("reference", acks)], results[("rdkafka-mock", acks)]
        case = f"acks={acks} {records} x {VALUE_BYTES} B"
        for metric, o, p, higher in (
            ("produce records/s", ours.produce_rate, peer.produce_rate, True),
            ("produce MB/s", mb / ours.produce_s, mb / peer.produce_s, True),
            ("consume records/s", ours.consume_rate, peer.consume_rate, True),
            ("consume MB/s", mb / ours.consume_s, mb / peer.consume_s, True),
            ("produce p99 latency ms", ours.p99_ms, peer.p99_ms, False),
        ):
            rows.append(Comparison("broker", case, metric, o, "rdkafka-mock", p, higher_is_better=higher))
    from .report import print_comparisons

    title = "kconform bench broker (reference vs librdkafka mock cluster)"
    print_comparisons(rows, as_json=as_json, title=title)
    return rows
