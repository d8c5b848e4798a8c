"""A three-broker reference cluster seen through confluent-kafka (librdkafka): topics replicated three
ways, acks=all writes acknowledged only once the ISR has them, and a SIGKILLed partition leader
replaced by a follower that has every acknowledged record (Kafka's replication guarantees:
ReplicaManager/DelayedProduce, Partition.maybeIncrementLeaderHW, the controller's
handleBrokerFenced election from the ISR)."""

from __future__ import annotations

import logging
import time

import pytest

from kconform.reference_broker.cluster_processes import start_cluster

pytestmark = [pytest.mark.slow, pytest.mark.peer]

CLIENT = {"logger": logging.getLogger("kconform.cluster.rdkafka")}
# Short timeouts so a failover takes seconds: the controller fences a silent broker after its session.
FAST = {
    "broker.session.timeout.ms": "2000",
    "broker.heartbeat.interval.ms": "300",
    "replica.lag.time.max.ms": "2000",
    "replica.fetch.wait.max.ms": "100",
    "num.partitions": "3",
    "default.replication.factor": "3",
    "min.insync.replicas": "2",
}
TOPIC = "replicated"


@pytest.fixture
def cluster(tmp_path):
    running = start_cluster(tmp_path, 3, overrides=FAST)
    yield running
    running.stop()


def admin(bootstrap: str):
    from confluent_kafka.admin import AdminClient

    return AdminClient({**CLIENT, "bootstrap.servers": bootstrap})


def create_topic(bootstrap: str, name: str = TOPIC) -> None:
    from confluent_kafka.admin import NewTopic

    client = admin(bootstrap)  # kept: the futures fail once their client is gone
    client.create_topics([NewTopic(name, num_partitions=3, replication_factor=3)])[name].result(15)


def describe(bootstrap: str, name: str = TOPIC) -> dict[int, tuple[int, list[int], list[int]]]:
    """partition -> (leader, replicas, isr), from Metadata."""
    client = admin(bootstrap)
    meta = client.list_topics(name, timeout=10).topics[name]
    return {p.id: (p.leader, list(p.replicas), list(p.isrs)) for p in meta.partitions.values()}


def wait_for(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"not {what} within {timeout}s")


def produce(bootstrap: str, first: int, count: int) -> dict[int, dict[int, int]]:
    """``count`` numbered records, idempotent acks=all; partition -> offset -> number, each acked."""
    from confluent_kafka import Producer

    producer = Producer(
        {**CLIENT, "bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True, "linger.ms": 5}
    )
    acked: dict[int, dict[int, int]] = {}
    failed = []

    def done(err, msg):
        if err is not None:
            failed.append(err)
        else:
            acked.setdefault(msg.partition(), {})[msg.offset()] = int(msg.key())

    for seq in range(first, first + count):
        producer.produce(TOPIC, key=str(seq).encode(), value=f"value {seq}".encode(), on_delivery=done)
        producer.poll(0)
    assert producer.flush(60) == 0, "records still undelivered after 60s"
    assert not failed, f"{len(failed)} records failed: {failed[:3]}"
    return acked


def read_all(bootstrap: str) -> dict[int, list[tuple[int, int]]]:
    """partition -> [(offset, number)] from the start to the high watermark."""
    from confluent_kafka import Consumer, TopicPartition

    reader = Consumer(
        {**CLIENT, "bootstrap.servers": bootstrap, "group.id": "reader", "enable.auto.commit": False}
    )
    try:
        marks = {p: reader.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=15) for p in range(3)}
        reader.assign([TopicPartition(TOPIC, p, 0) for p in range(3)])
        out: dict[int, list[tuple[int, int]]] = {p: [] for p in range(3)}
        want = sum(high for _, high in marks.values())
        deadline = time.monotonic() + 60
        while sum(map(len, out.values())) < want:
            assert time.monotonic() < deadline, f"read {sum(map(len, out.values()))} of {want}"
            msg = reader.poll(1.0)
            if msg is None:
                continue
            assert msg.error() is None, msg.error()
            out[msg.partition()].append((msg.offset(), int(msg.key())))
        return out
    finally:
        reader.close()


def merge(into: dict[int, dict[int, int]], more: dict[int, dict[int, int]]) -> None:
    for partition, offsets in more.items():
        into.setdefault(partition, {}).update(offsets)


def test_acknowledged_records_survive_a_killed_leader(cluster):
    bootstrap = cluster.bootstrap
    create_topic(bootstrap)
    layout = wait_for(
        lambda: (d := describe(bootstrap)) and all(len(isr) == 3 for _, _, isr in d.values()) and d,
        20,
        "three in-sync replicas everywhere",
    )
    assert all(sorted(replicas) == [1, 2, 3] for _, replicas, _ in layout.values())
    acked = produce(bootstrap, 0, 300)
    leader = layout[0][0]
    cluster.kill(leader)
    moved = wait_for(
        lambda: (d := describe(bootstrap)) and d[0][0] not in (leader, -1) and d,
        20,
        f"a new leader for partition 0 after killing broker {leader}",
    )
    assert leader not in moved[0][2], "the killed broker stays in the ISR"
    merge(acked, produce(bootstrap, 300, 300))
    cluster.restart(leader)
    wait_for(
        lambda: all(len(isr) == 3 for _, _, isr in describe(bootstrap).values()),
        30,
        f"broker {leader} back in every ISR",
    )
    stored = read_all(bootstrap)
    for partition, offsets in acked.items():
        got = dict(stored[partition])
        assert {o: got.get(o) for o in offsets} == offsets, f"partition {partition} lost acknowledged records"
        numbers = [n for _, n in stored[partition]]
        assert len(numbers) == len(set(numbers)), f"partition {partition} has duplicates"
        assert [o for o, _ in stored[partition]] == list(range(len(stored[partition]))), "offsets not dense"
