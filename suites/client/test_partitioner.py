"""The reference client's partitioners against Kafka's: murmur2 on Kafka's own test vectors, the
sticky and round-robin behaviour, and live agreement with librdkafka's ``murmur2_random`` partitioner
(the one that matches the Java client) for 10,000 random keys over several partition counts."""

from __future__ import annotations

import random
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kconform.harness.client.partitioner import (
    BuiltInPartitioner,
    RoundRobinPartitioner,
    murmur2,
    partition_for_key,
    to_positive,
)
from kconform.reference_broker.process import start_broker_process

# Kafka's UtilsTest.testMurmur2
KAFKA_VECTORS = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}


def test_murmur2_matches_kafkas_test_vectors():
    assert {k: murmur2(k) for k in KAFKA_VECTORS} == KAFKA_VECTORS


def test_to_positive_drops_the_sign_bit_rather_than_negating():
    assert to_positive(-(2**31)) == 0 and to_positive(-1) == 2**31 - 1 and to_positive(5) == 5


@given(st.binary(max_size=64), st.integers(1, 1000))
def test_keyed_records_always_go_to_the_same_partition_in_range(key, partitions):
    chosen = partition_for_key(key, partitions)
    assert 0 <= chosen < partitions and chosen == partition_for_key(key, partitions)


def test_keyless_records_stick_to_a_partition_until_a_batch_is_full():
    partitioner = BuiltInPartitioner(batch_size=100, rng=random.Random(7))
    chosen = []
    for _ in range(50):
        p = partitioner.partition("t", None, 8, list(range(8)))
        chosen.append(p)
        partitioner.record_appended("t", 10, 8, list(range(8)))
    runs = [chosen[i : i + 10] for i in range(0, 50, 10)]
    assert all(len(set(run)) == 1 for run in runs)  # 10 records of 10 bytes fill a 100-byte batch
    assert len(set(chosen)) > 1


def test_keyless_records_only_go_to_available_partitions():
    partitioner = BuiltInPartitioner(batch_size=1, rng=random.Random(1))
    seen = set()
    for _ in range(200):
        seen.add(partitioner.partition("t", None, 6, [1, 4]))
        partitioner.record_appended("t", 1, 6, [1, 4])
    assert seen == {1, 4}


def test_round_robin_cycles_through_available_partitions_per_topic():
    rr = RoundRobinPartitioner()
    assert [rr.partition("a", None, 3, [0, 1, 2]) for _ in range(5)] == [0, 1, 2, 0, 1]
    assert [rr.partition("b", b"k", 4, []) for _ in range(3)] == [0, 1, 2]


@pytest.mark.peer
def test_default_partitioner_agrees_with_librdkafka_murmur2_random(tmp_path):
    """10,000 random keys produced by confluent-kafka with ``partitioner=murmur2_random``: the partition
    each delivery report names is the one ours picks, for every partition count tried."""
    confluent_kafka = pytest.importorskip("confluent_kafka")
    from confluent_kafka.admin import AdminClient, NewTopic

    counts = (1, 3, 7, 16, 50)
    rng = random.Random(20261122)
    keys = [rng.randbytes(rng.randrange(0, 40)) for _ in range(10_000)]
    broker = start_broker_process(tmp_path / "data")
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        topics = {n: f"partitions-{n}-{uuid.uuid4().hex[:6]}" for n in counts}
        for future in admin.create_topics([NewTopic(t, n, 1) for n, t in topics.items()]).values():
            future.result(30)
        producer = confluent_kafka.Producer(
            {"bootstrap.servers": broker.bootstrap, "partitioner": "murmur2_random", "linger.ms": 20}
        )
        theirs: dict[tuple[int, bytes], int] = {}

        def delivered(err, msg, n):
            assert err is None, err
            theirs[(n, msg.key())] = msg.partition()

        for n, topic in topics.items():
            for key in keys:
                producer.produce(topic, b"v", key=key, on_delivery=lambda e, m, n=n: delivered(e, m, n))
                producer.poll(0)
        assert producer.flush(60) == 0
    finally:
        broker.stop()
    mismatches = [(n, k) for n in counts for k in keys if theirs[(n, k)] != partition_for_key(k, n)]
    assert len(theirs) == len(counts) * len(set(keys))
    assert not mismatches, f"{len(mismatches)} keys partitioned differently, e.g. {mismatches[:3]}"
