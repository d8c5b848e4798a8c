"""Transactions whose partitions lead on other brokers than the transaction coordinator, on a live
three-broker reference cluster, through confluent-kafka (librdkafka):

- the coordinator sends WriteTxnMarkers to each partition's leader and completes the transaction only
  once every marker is in (``TransactionMarkerChannelManager``, ``TransactionStateManager``'s
  CompleteCommit after ``maybeWriteTxnCompletion``): a read_committed consumer then reads every committed
  record on every broker and nothing of an aborted transaction, and each partition's last stable offset
  reaches its end;
- offsets sent to the transaction land in ``__consumer_offsets`` on the group coordinator's broker with
  the commit marker (``GroupCoordinator.onTransactionCompleted``);
- a partition leader SIGKILLed between the writes and the commit gets its marker on the leader elected
  after it (the completion handler retries NOT_LEADER_OR_FOLLOWER against the partition's new leader)."""

from __future__ import annotations

import time
import uuid

import pytest

from kconform.reference_broker.cluster_processes import start_cluster

from .test_failover import CLIENT, admin, describe, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.peer]

FAST = {
    "broker.session.timeout.ms": "2000",
    "broker.heartbeat.interval.ms": "300",
    "replica.lag.time.max.ms": "2000",
    "replica.fetch.wait.max.ms": "100",
    "offsets.topic.num.partitions": "3",
    "transaction.state.log.num.partitions": "3",
}


@pytest.fixture
def cluster(tmp_path):
    running = start_cluster(tmp_path, 3, overrides=FAST)
    yield running
    running.stop()


def create(bootstrap: str, name: str, assignment: list[list[int]]) -> None:
    from confluent_kafka.admin import NewTopic

    client = admin(bootstrap)
    client.create_topics([NewTopic(name, num_partitions=len(assignment), replica_assignment=assignment)])[
        name
    ].result(15)


def transactional_producer(bootstrap: str):
    from confluent_kafka import Producer

    producer = Producer(
        {
            **CLIENT,
            "bootstrap.servers": bootstrap,
            "transactional.id": f"spread-{uuid.uuid4().hex[:8]}",
            "transaction.timeout.ms": 60000,
            "linger.ms": 5,
        }
    )
    producer.init_transactions(30)
    return producer


def read_committed(bootstrap: str, topic: str, partitions: int, expected: int, group: str | None = None):
    """Values read with isolation.level=read_committed until ``expected`` arrive (or 30 s pass)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            **CLIENT,
            "bootstrap.servers": bootstrap,
            "group.id": group or f"reader-{uuid.uuid4().hex[:8]}",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    values: list[str] = []
    deadline = time.monotonic() + 30
    try:
        while len(values) < expected and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                values.append(message.value().decode())
        # a moment more: nothing beyond the expected (no aborted record) may turn up
        end = time.monotonic() + 1.5
        while time.monotonic() < end:
            message = consumer.poll(0.3)
            if message is not None and message.error() is None:
                values.append(message.value().decode())
    finally:
        consumer.close()
    return values


def offsets(bootstrap: str, topic: str, partitions: int) -> dict[int, tuple[int, int]]:
    """partition -> (last stable offset as read_committed sees it, high watermark)."""
    from confluent_kafka import Consumer, TopicPartition

    def high(isolation: str) -> dict[int, int]:
        consumer = Consumer(
            {**CLIENT, "bootstrap.servers": bootstrap, "group.id": "watermarks", "isolation.level": isolation}
        )
        try:
            return {
                p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
                for p in range(partitions)
            }
        finally:
            consumer.close()

    committed, uncommitted = high("read_committed"), high("read_uncommitted")
    return {p: (committed[p], uncommitted[p]) for p in range(partitions)}


def test_commit_and_abort_reach_partitions_led_by_every_broker(cluster):
    bootstrap = cluster.bootstrap
    create(bootstrap, "spread", [[1], [2], [3]])  # one partition led by each broker
    producer = transactional_producer(bootstrap)

    producer.begin_transaction()
    for p in range(3):
        for i in range(4):
            producer.produce("spread", f"committed-{p}-{i}".encode(), partition=p)
    producer.commit_transaction(30)

    producer.begin_transaction()
    for p in range(3):
        producer.produce("spread", f"aborted-{p}".encode(), partition=p)
    producer.flush(30)  # written before the abort (librdkafka purges what it has not sent)
    producer.abort_transaction(30)

    values = read_committed(bootstrap, "spread", 3, 12)
    assert sorted(values) == sorted(f"committed-{p}-{i}" for p in range(3) for i in range(4))
    # each partition: 4 records + commit marker + 1 aborted record + abort marker, all of them stable
    assert wait_for(
        lambda: offsets(bootstrap, "spread", 3) == {p: (7, 7) for p in range(3)}, 20, "every marker in"
    )


def test_offsets_sent_to_the_transaction_commit_with_it(cluster):
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

    bootstrap = cluster.bootstrap
    create(bootstrap, "source", [[1], [2], [3]])
    create(bootstrap, "sink", [[3], [1], [2]])
    producer = transactional_producer(bootstrap)
    group = "transactional-reader"

    from confluent_kafka import Consumer

    consumer = Consumer({**CLIENT, "bootstrap.servers": bootstrap, "group.id": group})
    metadata = consumer.consumer_group_metadata()
    producer.begin_transaction()
    for p in range(3):
        producer.produce("sink", f"out-{p}".encode(), partition=p)
    producer.send_offsets_to_transaction(
        [TopicPartition("source", p, 10 + p) for p in range(3)], metadata, 30
    )
    producer.commit_transaction(30)
    consumer.close()

    client = admin(bootstrap)  # kept: its futures never complete once it is gone

    def committed():
        result = client.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])
        listed = result[group].result(10).topic_partitions
        return {tp.partition: tp.offset for tp in listed if tp.topic == "source"}

    assert wait_for(lambda: committed() == {0: 10, 1: 11, 2: 12}, 20, "offsets committed")
    assert sorted(read_committed(bootstrap, "sink", 3, 3)) == ["out-0", "out-1", "out-2"]


def test_a_marker_reaches_the_leader_elected_after_a_sigkill(cluster):
    bootstrap = cluster.bootstrap
    create(bootstrap, "moving", [[1, 2, 3], [2, 3, 1], [3, 1, 2]])
    wait_for(
        lambda: all(len(isr) == 3 for _l, _r, isr in describe(bootstrap, "moving").values()), 20, "ISR full"
    )
    producer = transactional_producer(bootstrap)
    producer.begin_transaction()
    for p in range(3):
        for i in range(5):
            producer.produce("moving", f"{p}-{i}".encode(), partition=p)
    producer.flush(30)  # every record acknowledged by its ISR before the kill

    victim = describe(bootstrap, "moving")[2][0]
    cluster.kill(victim)
    producer.commit_transaction(60)

    values = read_committed(bootstrap, "moving", 3, 15)
    assert sorted(values) == sorted(f"{p}-{i}" for p in range(3) for i in range(5))
    moved = describe(bootstrap, "moving")
    assert moved[2][0] not in (victim, -1)
    # Every partition's transaction is closed by a marker. A coordinator that died with the victim
    # leaves its successor to send every marker again (``loadTransactionsForTxnTopicPartition``), so a
    # partition may hold a second COMMIT marker: its end offset is then 7, still with nothing open.
    seen = []
    try:
        wait_for(
            lambda: (
                seen.append(offsets(bootstrap, "moving", 3))
                or all(lso == hw >= 6 for lso, hw in seen[-1].values())
            ),
            30,
            "every marker in",
        )
    except AssertionError as exc:
        raise AssertionError(f"{exc}: last stable offsets and high watermarks {seen[-1:]}") from None
