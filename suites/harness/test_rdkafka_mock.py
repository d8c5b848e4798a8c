"""librdkafka's mock cluster through ctypes: it serves real clients and its fault hooks take effect."""

from __future__ import annotations

import pytest

from kconform.harness.targets.rdkafka_mock import RdkafkaMockCluster

pytestmark = pytest.mark.peer


def test_mock_cluster_serves_a_real_client():
    from confluent_kafka import Consumer, Producer, TopicPartition

    with RdkafkaMockCluster(brokers=3) as mock:
        host, port = mock.bootstrap.split(",")[0].rsplit(":", 1)
        assert host and int(port) > 0
        mock.create_topic("orders", 2, 3)
        producer = Producer({"bootstrap.servers": mock.bootstrap, "acks": "all"})
        for i in range(20):
            producer.produce("orders", key=b"k%d" % i, value=b"v%d" % i, partition=i % 2)
        assert producer.flush(10) == 0
        settings = {"bootstrap.servers": mock.bootstrap, "group.id": "g", "enable.auto.commit": False}
        consumer = Consumer(settings)
        consumer.assign([TopicPartition("orders", p, 0) for p in range(2)])
        got = set()
        for _ in range(100):
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                got.add((msg.key(), msg.value()))
            if len(got) == 20:
                break
        consumer.close()
        assert got == {(b"k%d" % i, b"v%d" % i) for i in range(20)}


def test_injected_request_errors_reach_the_client():
    from confluent_kafka import KafkaError, Producer

    with RdkafkaMockCluster(brokers=1) as mock:
        mock.create_topic("t", 1)
        # Produce (key 0) fails twice with a non-retriable error: the delivery report says so.
        mock.push_request_errors(0, [KafkaError.INVALID_RECORD, KafkaError.INVALID_RECORD])
        producer = Producer({"bootstrap.servers": mock.bootstrap, "acks": "all", "retries": 0})
        reports = []
        producer.produce("t", value=b"x", on_delivery=lambda err, msg: reports.append(err))
        producer.flush(10)
        assert reports and reports[0] is not None and reports[0].code() == KafkaError.INVALID_RECORD


def test_unknown_fault_target_is_a_clear_error():
    with RdkafkaMockCluster(brokers=1) as mock, pytest.raises(RuntimeError, match="broker_set_down"):
        mock.set_broker_down(99)


def test_the_mock_target_takes_commands_from_threads_while_it_restarts():
    """Causes shrink side by side: one replay may create a topic by the side door (a command to the
    child process) while another restarts the mock after a crash. Each command gets its own reply and
    none goes to a child being replaced."""
    import threading

    from kconform.harness.targets.mock import RdkafkaMockTarget

    with RdkafkaMockTarget() as target:
        errors: list[BaseException] = []

        def create(worker: int) -> None:
            for n in range(15):
                try:
                    target.create_topic(f"lane{worker}-{n}", 1)
                except BaseException as exc:  # noqa: BLE001 - gathered for the assertion below
                    errors.append(exc)

        workers = [threading.Thread(target=create, args=(w,)) for w in range(3)]
        for worker in workers:
            worker.start()
        for _ in range(3):
            target.restart()
        for worker in workers:
            worker.join()
        assert not errors, errors
        assert target.alive() and target.crashes == 3
