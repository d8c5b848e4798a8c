"""Real clients on a three-broker reference cluster: each produces with acks=all while the leader of the
partition it writes is SIGKILLed and restarted, then reads everything back as a consumer group; every
record the client was told was written is there (clients fail over through NOT_LEADER_OR_FOLLOWER and
the new leader Metadata names, as against Kafka)."""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

from kconform.reference_broker.cluster_processes import start_cluster

from ..test_durability import watermarks
from .test_failover import admin, describe, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.peer]

CLIENT = {"logger": logging.getLogger("kconform.cluster-clients.rdkafka")}
RECORDS = 300
SETTINGS = {
    "broker.session.timeout.ms": "2000",
    "broker.heartbeat.interval.ms": "300",
    "replica.lag.time.max.ms": "2000",
    "replica.fetch.wait.max.ms": "100",
    "min.insync.replicas": "2",
    "offsets.topic.num.partitions": "3",
    "group.initial.rebalance.delay.ms": "0",
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    running = start_cluster(tmp_path_factory.mktemp("cluster"), 3, overrides=SETTINGS)
    yield running
    running.stop()


def prepare(cluster, topic: str) -> None:
    from confluent_kafka.admin import NewTopic

    client = admin(cluster.bootstrap)
    client.create_topics([NewTopic(topic, num_partitions=1, replication_factor=3)])[topic].result(15)
    wait_for(lambda: len(describe(cluster.bootstrap, topic)[0][2]) == 3, 15, f"{topic}'s ISR complete")


def kill_the_leader_soon(
    cluster, topic: str, after_s: float = 0.3, once_written: int = 0
) -> threading.Thread:
    """SIGKILL the partition's leader a moment into the stream, and start it again 2.5 s later. With
    ``once_written``, the moment is when the partition holds that many records: a client in a process of
    its own may take longer than ``after_s`` to start, and a leader killed before it connects tests its
    bootstrap, not its failover."""

    def strike() -> None:
        time.sleep(after_s)
        if once_written:
            written = f"{once_written} records in {topic}"
            wait_for(lambda: _written(cluster, topic) >= once_written, 60, written)
        leader = describe(cluster.bootstrap, topic)[0][0]
        cluster.kill(leader)
        time.sleep(2.5)
        cluster.restart(leader)
        thread.struck = True

    thread = threading.Thread(target=strike, daemon=True)
    thread.struck = False
    thread.start()
    return thread


def _written(cluster, topic: str) -> int:
    """The high watermark of the topic's partition 0 (0 while it cannot be read)."""
    from confluent_kafka import KafkaException

    try:
        return watermarks(cluster.bootstrap, topic, 1)[0][1]
    except KafkaException:
        return 0


def settle(cluster, topic: str, striker: threading.Thread) -> None:
    striker.join(90)
    assert striker.struck, "the leader was not killed during the stream"
    wait_for(lambda: len(describe(cluster.bootstrap, topic)[0][2]) == 3, 30, f"{topic}'s ISR complete again")


def check(acked: set[str], read: list[str]) -> None:
    assert len(acked) >= RECORDS * 0.9, f"only {len(acked)} of {RECORDS} records acknowledged"
    missing = acked - set(read)
    assert not missing, f"{len(missing)} acknowledged records not read back: {sorted(missing)[:5]}"


def values(count: int = RECORDS) -> list[str]:
    return [f"record-{i:05d}" for i in range(count)]


# ---- confluent-kafka (librdkafka) -------------------------------------------------------------------


def test_confluent_kafka(cluster):
    from confluent_kafka import Consumer, Producer

    topic = "rc-confluent"
    prepare(cluster, topic)
    producer = Producer(
        {**CLIENT, "bootstrap.servers": cluster.bootstrap, "acks": "all", "enable.idempotence": True}
    )
    acked: set[str] = set()
    striker = kill_the_leader_soon(cluster, topic)
    for value in values():
        producer.produce(
            topic, value=value.encode(), on_delivery=lambda err, msg: err or acked.add(msg.value().decode())
        )
        producer.poll(0.002)
        time.sleep(0.005)
    assert producer.flush(60) == 0
    settle(cluster, topic, striker)
    consumer = Consumer(
        {
            **CLIENT,
            "bootstrap.servers": cluster.bootstrap,
            "group.id": "g-confluent",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([topic])
    read: list[str] = []
    deadline = time.monotonic() + 60
    while len(set(read)) < len(acked) and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            read.append(msg.value().decode())
    consumer.close()
    check(acked, read)


# ---- kafka-python -----------------------------------------------------------------------------------


def test_kafka_python(cluster):
    from kafka import KafkaConsumer, KafkaProducer

    topic = "rc-kafka-python"
    prepare(cluster, topic)
    producer = KafkaProducer(
        bootstrap_servers=cluster.bootstrap.split(","), acks="all", retries=50, retry_backoff_ms=200
    )
    striker = kill_the_leader_soon(cluster, topic)
    futures = []
    for value in values():
        futures.append((value, producer.send(topic, value.encode())))
        time.sleep(0.005)
    producer.flush(60)
    acked = {value for value, future in futures if future.succeeded()}
    producer.close()
    settle(cluster, topic, striker)
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=cluster.bootstrap.split(","),
        group_id="g-kafka-python",
        auto_offset_reset="earliest",
        consumer_timeout_ms=10_000,
    )
    read = [msg.value.decode() for msg in consumer]
    consumer.close()
    check(acked, read)


# ---- aiokafka -----------------------------------------------------------------------------------------


def test_aiokafka(cluster):
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    topic = "rc-aiokafka"
    prepare(cluster, topic)

    async def produce() -> set[str]:
        producer = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap, acks="all", enable_idempotence=True)
        await producer.start()
        acked: set[str] = set()
        try:
            for value in values():
                try:
                    await producer.send_and_wait(topic, value.encode())
                    acked.add(value)
                except Exception:  # a send that gave up is simply not acknowledged
                    pass
        finally:
            await producer.stop()
        return acked

    async def consume(want: int) -> list[str]:
        consumer = AIOKafkaConsumer(
            topic, bootstrap_servers=cluster.bootstrap, group_id="g-aiokafka", auto_offset_reset="earliest"
        )
        await consumer.start()
        read: list[str] = []
        try:
            deadline = time.monotonic() + 60
            while len(set(read)) < want and time.monotonic() < deadline:
                batches = await consumer.getmany(timeout_ms=500)
                read += [m.value.decode() for records in batches.values() for m in records]
        finally:
            await consumer.stop()
        return read

    striker = kill_the_leader_soon(cluster, topic)
    acked = asyncio.run(produce())
    settle(cluster, topic, striker)
    check(acked, asyncio.run(consume(len(acked))))


# ---- kcat (librdkafka's command-line client) ----------------------------------------------------------


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is installed by ci/install-tools.sh")
def test_kcat(cluster):
    topic = "rc-kcat"
    prepare(cluster, topic)
    striker = kill_the_leader_soon(cluster, topic, after_s=0.1)
    lines = "\n".join(values()) + "\n"
    produced = subprocess.run(
        [
            "kcat",
            "-P",
            "-b",
            cluster.bootstrap,
            "-t",
            topic,
            "-X",
            "acks=all",
            "-X",
            "enable.idempotence=true",
        ],
        input=lines,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert produced.returncode == 0, produced.stderr
    # kcat exits 0 only when every message was delivered; a failed one is reported on stderr
    assert "Delivery failed" not in produced.stderr
    settle(cluster, topic, striker)
    consumed = subprocess.run(
        ["kcat", "-b", cluster.bootstrap, "-G", "g-kcat", "-e", "-X", "auto.offset.reset=earliest", topic],
        capture_output=True,
        text=True,
        timeout=120,
    )
    check(set(values()), consumed.stdout.split())


# ---- kafkajs (npm) and sarama (Go, from Debian's source packages) --------------------------------------

CLIENTS_DIR = Path(__file__).parent / "clients"
KAFKAJS_HOME = Path(os.environ.get("KCONFORM_KAFKAJS_HOME", Path.home() / ".cache" / "kconform" / "kafkajs"))
GOPATH = "/usr/share/gocode"  # golang-github-shopify-sarama-dev installs sarama here


def _acked_and_read(run, cluster, topic: str, group: str) -> None:
    prepare(cluster, topic)
    striker = kill_the_leader_soon(cluster, topic, once_written=10)
    produced = run("produce", cluster.bootstrap, topic, str(RECORDS))
    acked = {line.split(" ", 1)[1] for line in produced.stdout.splitlines() if line.startswith("acked ")}
    assert len(acked) >= RECORDS * 0.9, f"{len(acked)} of {RECORDS} acknowledged:\n{produced.stderr[-2000:]}"
    settle(cluster, topic, striker)
    consumed = run("consume", cluster.bootstrap, topic, group, str(len(acked)))
    check(acked, [line.split(" ", 1)[1] for line in consumed.stdout.splitlines() if line.startswith("read ")])


@pytest.mark.skipif(
    shutil.which("node") is None or not (KAFKAJS_HOME / "node_modules" / "kafkajs").is_dir(),
    reason="kafkajs is installed by ci/install-tools.sh (npm)",
)
def test_kafkajs(cluster):
    def run(*args: str):
        env = {**os.environ, "NODE_PATH": str(KAFKAJS_HOME / "node_modules")}
        script = str(CLIENTS_DIR / "kafkajs_failover.js")
        return subprocess.run(["node", script, *args], capture_output=True, text=True, timeout=180, env=env)

    _acked_and_read(run, cluster, "rc-kafkajs", "g-kafkajs")


@pytest.fixture(scope="module")
def sarama_binary(tmp_path_factory):
    if shutil.which("go") is None or not Path(GOPATH, "src/github.com/Shopify/sarama").is_dir():
        pytest.skip("Go and sarama are installed by ci/install-tools.sh (golang-github-shopify-sarama-dev)")
    binary = tmp_path_factory.mktemp("sarama") / "sarama_failover"
    env = {**os.environ, "GOPATH": GOPATH, "GO111MODULE": "off", "GOCACHE": str(binary.parent / "cache")}
    built = subprocess.run(
        ["go", "build", "-o", str(binary), str(CLIENTS_DIR / "sarama_failover.go")],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert built.returncode == 0, built.stderr[-2000:]
    return binary


def test_sarama(cluster, sarama_binary):
    def run(*args: str):
        return subprocess.run([str(sarama_binary), *args], capture_output=True, text=True, timeout=180)

    _acked_and_read(run, cluster, "rc-sarama", "g-sarama")
