"""``kconform bench cluster``: what replication costs, in the same run on the same machine.

1. Throughput: the same confluent-kafka load (acks=all, 100-byte values) through a single reference node
   and through a three-broker reference cluster with replication factor 3; ratio cluster / single.
2. Latency at a fixed rate, as the OpenMessaging Benchmark measures it: a producer paced at half the
   single node's maximum produce rate (measured in 1.), a consumer reading as it goes; end-to-end
   latency per record is the consumer's receive time minus the record's create time; p50/p99/p99.9 for
   the single node, the cluster and librdkafka's mock cluster at the same rate. Goals: single node p99
   within 2x the mock's, cluster p99 within 3x the single node's.
3. Failover window: SIGKILL the leader of a partition an acks=all producer is writing to, ten times;
   from the kill to the first acknowledged write to that partition. Goal: at most
   broker.session.timeout.ms + 2 s (the controller fences the dead leader after its session)."""

from __future__ import annotations

import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

from .broker_bench import VALUE_BYTES, run_load
from .report import Comparison, print_comparisons

PARTITIONS = 6
SESSION_TIMEOUT_MS = 6000
CLUSTER_SETTINGS = {
    "broker.session.timeout.ms": str(SESSION_TIMEOUT_MS),
    "broker.heartbeat.interval.ms": "1000",
}


def _admin(bootstrap: str):
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": bootstrap})


def _create(bootstrap: str, topic: str, partitions: int, factor: int) -> None:
    from confluent_kafka.admin import NewTopic

    client = _admin(bootstrap)
    client.create_topics([NewTopic(topic, partitions, factor)])[topic].result(30)
    time.sleep(1.0)  # every replica has taken up its partitions


def paced_latency(bootstrap: str, topic: str, rate: float, seconds: float) -> list[float]:
    """End-to-end latencies (ms) of records produced at ``rate`` a second for ``seconds``."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"lat-{uuid.uuid4().hex[:6]}", "fetch.wait.max.ms": 10}
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    latencies: list[float] = []
    total = int(rate * seconds)
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set() and len(latencies) < total:
            for msg in consumer.consume(num_messages=1000, timeout=0.1):
                if msg.error() is None:
                    latencies.append(time.time() * 1000 - msg.timestamp()[1])

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    value = b"x" * VALUE_BYTES
    start = time.perf_counter()
    for i in range(total):
        due = start + i / rate
        while (now := time.perf_counter()) < due:
            producer.poll(min(due - now, 0.001))
        while True:
            try:
                producer.produce(topic, value=value, partition=i % PARTITIONS)
                break
            except BufferError:  # the target fell behind the pace: wait, and the latency shows it
                producer.poll(0.01)
    producer.flush(60)
    reader.join(timeout=30)
    stop.set()
    consumer.close()
    return latencies


def percentiles(values: list[float]) -> tuple[float, float, float]:
    cuts = statistics.quantiles(values, n=1000, method="inclusive")
    return cuts[499], cuts[989], cuts[998]


def failover_windows(cluster, topic: str, kills: int) -> list[float]:
    """Seconds from each SIGKILL of partition 0's leader to the first acknowledged write to it."""
    from confluent_kafka import Producer

    producer = Producer(
        {"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 0, "retry.backoff.ms": 50}
    )
    acked_at: list[float] = []
    producer_lock = threading.Lock()

    def delivered(err, _msg) -> None:
        if err is None:
            with producer_lock:
                acked_at.append(time.monotonic())

    windows = []
    for _ in range(kills):
        leader = _admin(cluster.bootstrap).list_topics(topic, timeout=10).topics[topic].partitions[0].leader
        killed = time.monotonic()
        cluster.kill(leader)
        deadline = killed + 60
        while time.monotonic() < deadline:
            producer.produce(topic, value=b"f", partition=0, on_delivery=delivered)
            producer.poll(0.05)
            with producer_lock:
                after = [t for t in acked_at if t > killed]
            if after:
                windows.append(after[0] - killed)
                break
        cluster.restart(leader)
        time.sleep(2)
    producer.flush(30)
    return windows


def run(*, records: int, latency_seconds: float, kills: int, as_json: bool) -> list[Comparison]:
    from kconform.reference_broker.cluster_processes import start_cluster
    from kconform.reference_broker.process import start_broker_process

    from ..targets.rdkafka_mock import RdkafkaMockCluster

    rows: list[Comparison] = []
    with tempfile.TemporaryDirectory(prefix="kconform-bench-cluster-") as tmp:
        single = start_broker_process(Path(tmp) / "single")
        try:
            _create(single.bootstrap, "throughput", PARTITIONS, 1)
            print(f"single node: {records:,} records ...", file=sys.stderr, flush=True)
            alone = run_load(single.bootstrap, "throughput", records, "all", PARTITIONS)
            rate = alone.produce_rate / 2
            _create(single.bootstrap, "latency", PARTITIONS, 1)
            print(f"single node: paced at {rate:,.0f}/s ...", file=sys.stderr, flush=True)
            single_latency = percentiles(paced_latency(single.bootstrap, "latency", rate, latency_seconds))
        finally:
            single.stop()
        mock = RdkafkaMockCluster(1)
        try:
            mock.create_topic("latency", PARTITIONS, 1)
            print(f"rdkafka mock: paced at {rate:,.0f}/s ...", file=sys.stderr, flush=True)
            mock_latency = percentiles(paced_latency(mock.bootstrap, "latency", rate, latency_seconds))
        finally:
            mock.close()
        cluster = start_cluster(Path(tmp) / "cluster", 3, overrides=CLUSTER_SETTINGS)
        try:
            _create(cluster.bootstrap, "throughput", PARTITIONS, 3)
            print(f"3-node cluster: {records:,} records ...", file=sys.stderr, flush=True)
            replicated = run_load(cluster.bootstrap, "throughput", records, "all", PARTITIONS)
            _create(cluster.bootstrap, "latency", PARTITIONS, 3)
            print(f"3-node cluster: paced at {rate:,.0f}/s ...", file=sys.stderr, flush=True)
            cluster_latency = percentiles(paced_latency(cluster.bootstrap, "latency", rate, latency_seconds))
            _create(cluster.bootstrap, "failover", 1, 3)
            print(f"3-node cluster: {kills} leader kills ...", file=sys.stderr, flush=True)
            windows = failover_windows(cluster, "failover", kills)
        finally:
            cluster.stop()
    case = f"acks=all {records} x {VALUE_BYTES} B, RF 3 vs 1"
    for metric, ours, theirs in (
        ("produce records/s", replicated.produce_rate, alone.produce_rate),
        ("consume records/s", replicated.consume_rate, alone.consume_rate),
    ):
        rows.append(Comparison("cluster", case, metric, ours, "single node", theirs, higher_is_better=True))
    paced = f"paced {rate:,.0f}/s for {latency_seconds:g} s"
    for name, index in (("p50", 0), ("p99", 1), ("p99.9", 2)):
        rows.append(
            Comparison(
                "cluster",
                paced,
                f"single node {name} ms",
                single_latency[index],
                "rdkafka-mock",
                mock_latency[index],
            )
        )
        rows.append(
            Comparison(
                "cluster",
                paced,
                f"3-node {name} ms",
                cluster_latency[index],
                "single node",
                single_latency[index],
            )
        )
    goal_s = SESSION_TIMEOUT_MS / 1000 + 2
    if windows:
        kill_case = f"{len(windows)} of {kills} leader kills recovered"
        rows.append(
            Comparison("cluster", kill_case, "failover median s", statistics.median(windows), "goal", goal_s)
        )
        rows.append(Comparison("cluster", kill_case, "failover max s", max(windows), "goal", goal_s))
    print_comparisons(rows, as_json=as_json, title="kconform bench cluster (replication, same run)")
    return rows
