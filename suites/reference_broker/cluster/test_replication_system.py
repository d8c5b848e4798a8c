"""Kafka's replication system test (``tests/kafkatest/tests/core/replication_test.py``), short, on a live
three-broker reference cluster: a topic replicated three ways with min.insync.replicas=2, an idempotent
acks=all producer (confluent-kafka) and a consumer group committing its offsets, both running
throughout, while each failure mode (clean shutdown, SIGKILL, clean bounce, hard bounce) hits a
partition leader, a follower and the controller in turn. Afterwards every acknowledged record is in the
log exactly once, at the offset it was acknowledged with and in the order it was sent per partition,
and the group's committed offsets never went back."""

from __future__ import annotations

import logging
import threading
import time

import pytest

from kconform.reference_broker.cluster_processes import CONTROLLER_ID, start_cluster

from .test_failover import admin, describe, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.peer]

CLIENT = {"logger": logging.getLogger("kconform.replication-system.rdkafka")}
TOPIC, GROUP = "replicated", "verifier"
SETTINGS = {
    "broker.session.timeout.ms": "2000",
    "broker.heartbeat.interval.ms": "300",
    "replica.lag.time.max.ms": "2000",
    "replica.fetch.wait.max.ms": "100",
    "min.insync.replicas": "2",
    "offsets.topic.num.partitions": "3",
    "group.initial.rebalance.delay.ms": "0",
}
FAILURES = ("clean_shutdown", "sigkill", "clean_bounce", "hard_bounce")
ROLES = ("leader", "follower", "controller")


class Producing(threading.Thread):
    """Numbered records, idempotent, acks=all, about 200 a second; what was acknowledged where."""

    def __init__(self, bootstrap: str) -> None:
        super().__init__(daemon=True)
        from confluent_kafka import Producer

        self.producer = Producer(
            {
                **CLIENT,
                "bootstrap.servers": bootstrap,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 5,
                "message.timeout.ms": 120_000,
            }
        )
        self.acked: dict[int, dict[int, int]] = {}  # partition -> offset -> number
        self.failed: list[str] = []
        self.sent = 0
        self.stopping = threading.Event()

    def _done(self, err, msg) -> None:
        if err is not None:
            self.failed.append(str(err))
        else:
            self.acked.setdefault(msg.partition(), {})[msg.offset()] = int(msg.key())

    def run(self) -> None:
        while not self.stopping.is_set():
            self.producer.produce(TOPIC, key=str(self.sent).encode(), value=b"x" * 50, on_delivery=self._done)
            self.sent += 1
            self.producer.poll(0.005)

    def finish(self) -> None:
        self.stopping.set()
        self.join(10)
        assert self.producer.flush(120) == 0, "records still undelivered after 120s"


class Consuming(threading.Thread):
    """A group member that reads everything and commits what it read every half second."""

    def __init__(self, bootstrap: str) -> None:
        super().__init__(daemon=True)
        from confluent_kafka import Consumer

        self.consumer = Consumer(
            {
                **CLIENT,
                "bootstrap.servers": bootstrap,
                "group.id": GROUP,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
            }
        )
        self.read = 0
        self.stopping = threading.Event()

    def run(self) -> None:
        self.consumer.subscribe([TOPIC])
        last_commit = time.monotonic()
        while not self.stopping.is_set():
            msg = self.consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                self.read += 1
            if time.monotonic() - last_commit > 0.5:
                last_commit = time.monotonic()
                try:
                    self.consumer.commit(asynchronous=False)
                except Exception:  # no offsets yet, or the coordinator is moving: the next one goes
                    pass
        self.consumer.close()


class CommittedWatch(threading.Thread):
    """Reads the group's committed offsets every 300 ms and keeps any that went back."""

    def __init__(self, bootstrap: str) -> None:
        super().__init__(daemon=True)
        self.client = admin(bootstrap)
        self.highest: dict[int, int] = {}
        self.went_back: list[tuple[int, int, int]] = []
        self.stopping = threading.Event()

    def run(self) -> None:
        from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

        wanted = ConsumerGroupTopicPartitions(GROUP, [TopicPartition(TOPIC, p) for p in range(3)])
        while not self.stopping.wait(0.3):
            try:
                result = self.client.list_consumer_group_offsets([wanted])[GROUP].result(5)
            except Exception:  # the coordinator may be moving
                continue
            for tp in result.topic_partitions:
                if tp.error is None and tp.offset >= 0:
                    before = self.highest.get(tp.partition, -1)
                    if tp.offset < before:
                        self.went_back.append((tp.partition, before, tp.offset))
                    self.highest[tp.partition] = max(before, tp.offset)


def in_sync(bootstrap: str) -> bool:
    try:
        return all(len(isr) == 3 for _, _, isr in describe(bootstrap).values())
    except Exception:
        return False


def victim(cluster, role: str) -> int:
    if role == "controller":
        return CONTROLLER_ID
    leader, replicas, _ = describe(cluster.bootstrap)[0]
    return leader if role == "leader" else next(r for r in replicas if r != leader)


def strike(cluster, failure: str, node_id: int) -> None:
    if failure in ("clean_shutdown", "clean_bounce"):
        cluster.stop_node(node_id)
    else:
        cluster.kill(node_id)
    if failure in ("clean_shutdown", "sigkill"):
        time.sleep(3)  # long enough for the controller to fence a killed broker
    cluster.restart(node_id)


def read_log(bootstrap: str) -> dict[int, list[tuple[int, int]]]:
    from confluent_kafka import Consumer, TopicPartition

    reader = Consumer(
        {**CLIENT, "bootstrap.servers": bootstrap, "group.id": "auditor", "enable.auto.commit": False}
    )
    try:
        marks = {p: reader.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=15) for p in range(3)}
        reader.assign([TopicPartition(TOPIC, p, 0) for p in range(3)])
        out: dict[int, list[tuple[int, int]]] = {p: [] for p in range(3)}
        want = sum(high for _, high in marks.values())
        deadline = time.monotonic() + 120
        while sum(map(len, out.values())) < want and time.monotonic() < deadline:
            msg = reader.poll(0.5)
            if msg is not None and msg.error() is None and msg.offset() < marks[msg.partition()][1]:
                out[msg.partition()].append((msg.offset(), int(msg.key())))
        return out
    finally:
        reader.close()


def test_every_acknowledged_record_survives_every_failure_mode(tmp_path):
    cluster = start_cluster(tmp_path, 3, overrides=SETTINGS)
    try:
        bootstrap = cluster.bootstrap
        from confluent_kafka.admin import NewTopic

        client = admin(bootstrap)
        client.create_topics([NewTopic(TOPIC, num_partitions=3, replication_factor=3)])[TOPIC].result(15)
        wait_for(lambda: in_sync(bootstrap), 20, "a full ISR")
        producing, consuming, watch = Producing(bootstrap), Consuming(bootstrap), CommittedWatch(bootstrap)
        for thread in (producing, consuming, watch):
            thread.start()
        time.sleep(2)
        for failure in FAILURES:
            for role in ROLES:
                node_id = victim(cluster, role)
                strike(cluster, failure, node_id)
                wait_for(
                    lambda: in_sync(bootstrap), 60, f"a full ISR after {failure} of the {role} ({node_id})"
                )
                time.sleep(1)
        producing.finish()
        wait_for(lambda: consuming.read >= sum(map(len, producing.acked.values())), 60, "the group caught up")
        consuming.stopping.set()
        watch.stopping.set()
        consuming.join(15)
        watch.join(10)
        stored = read_log(bootstrap)
    finally:
        cluster.stop()
    assert not producing.failed, f"{len(producing.failed)} records failed: {producing.failed[:3]}"
    acked = sum(map(len, producing.acked.values()))
    assert acked > 1000, f"only {acked} records acknowledged"
    for partition, offsets in producing.acked.items():
        log = dict(stored[partition])
        lost = {o: n for o, n in offsets.items() if log.get(o) != n}
        assert not lost, (
            f"partition {partition}: {len(lost)} acknowledged records missing or moved: {list(lost)[:5]}"
        )
        numbers = [n for _, n in stored[partition]]
        assert len(numbers) == len(set(numbers)), f"partition {partition} holds duplicates"
        assert numbers == sorted(numbers), f"partition {partition} out of send order"
    assert not watch.went_back, f"committed offsets went back: {watch.went_back[:5]}"
    assert watch.highest, "the group never committed"
