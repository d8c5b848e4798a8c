"""Durability of a reference broker process across crashes and restarts, seen through confluent-kafka.

- SIGKILL in the middle of an acks=all stream: every acknowledged record comes back after the restart at
  the offset it was acknowledged with, in order per partition, and each partition's offsets are dense
  (no holes); records that were never acknowledged may or may not be there. With an idempotent
  producer nothing is written twice, even when the producer retries straight through the crash and the
  restart on the same port.
- A torn tail (a partial batch, garbage, or a whole batch with a bad CRC after the last good one) is cut
  off on restart: every acknowledged record survives, new records continue at the right offset, and the
  broker says what it cut.
- A clean restart keeps topics, topic ids, offsets and (where DeleteRecords exists) the log start offset.

Kafka writes a ``.kafka_cleanshutdown`` marker only after a clean close has flushed everything, and skips
recovery when it finds it; a torn tail cannot coexist with that marker. So the "stopped" torn-tail case
removes the marker after the clean stop, as a crash during the final write would have left things; the
"killed" case needs no help."""

from __future__ import annotations

import itertools
import logging
import random
import threading
import time
from collections import defaultdict
from pathlib import Path

import pytest

from kconform.codecs.records import iter_batch_headers
from kconform.reference_broker.process import BrokerProcess, start_broker_process

pytestmark = [pytest.mark.slow, pytest.mark.peer]

CLEAN_SHUTDOWN_MARKER = ".kafka_cleanshutdown"
# librdkafka logs through Python logging, so pytest keeps its reconnect chatter with the test it belongs to
CLIENT = {"logger": logging.getLogger("kconform.durability.rdkafka")}
PARTITIONS = 3
KILL_AFTER_ACKS = 1500
KILL_AFTER_S = 1.2  # with segment.ms=300 every partition has rolled a few segments by then
MAX_OUTSTANDING = 400
RATE = 3000  # records a second

Record = tuple[int, bytes, bytes]  # offset, key, value


class Brokers:
    """Broker processes started by one test; whatever is still running at the end is stopped."""

    def __init__(self) -> None:
        self.started: list[BrokerProcess] = []

    def start(self, data_dir: Path, port: int = 0) -> BrokerProcess:
        node = start_broker_process(data_dir, port=port)
        self.started.append(node)
        return node


@pytest.fixture
def brokers():
    pool = Brokers()
    yield pool
    for node in pool.started:
        node.stop()


# ---- confluent-kafka helpers ---------------------------------------------------------------------


def create_topic(bootstrap: str, name: str, partitions: int, configs: dict[str, str] | None = None) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({**CLIENT, "bootstrap.servers": bootstrap})
    topic = NewTopic(name, num_partitions=partitions, replication_factor=1, config=configs or {})
    admin.create_topics([topic])[name].result(15)


def consumer(bootstrap: str):
    from confluent_kafka import Consumer

    return Consumer(
        {
            **CLIENT,
            "bootstrap.servers": bootstrap,
            "group.id": "kconform-durability",
            "enable.auto.commit": False,
        }
    )


def watermarks(bootstrap: str, topic: str, partitions: int) -> dict[int, tuple[int, int]]:
    """(log start offset, high watermark) per partition, from ListOffsets."""
    from confluent_kafka import TopicPartition

    reader = consumer(bootstrap)
    try:
        return {
            p: reader.get_watermark_offsets(TopicPartition(topic, p), timeout=15, cached=False)
            for p in range(partitions)
        }
    finally:
        reader.close()


def read_all(bootstrap: str, topic: str, partitions: int, timeout: float = 60.0) -> dict[int, list[Record]]:
    """Every record from the log start offset to the high watermark, per partition."""
    from confluent_kafka import TopicPartition

    marks = watermarks(bootstrap, topic, partitions)
    reader = consumer(bootstrap)
    reader.assign([TopicPartition(topic, p, low) for p, (low, _) in marks.items()])
    records: dict[int, list[Record]] = {p: [] for p in range(partitions)}
    want = sum(high - low for low, high in marks.values())
    got = 0
    deadline = time.monotonic() + timeout
    try:
        while got < want:
            assert time.monotonic() < deadline, f"read {got} of {want} records below {marks} in {timeout}s"
            msg = reader.poll(1.0)
            if msg is None:
                continue
            assert msg.error() is None, f"consumer error: {msg.error()}"
            if msg.offset() < marks[msg.partition()][1]:
                records[msg.partition()].append((msg.offset(), msg.key(), msg.value()))
                got += 1
    finally:
        reader.close()
    return records


def produce_and_wait(
    bootstrap: str, topic: str, items: list[tuple[int, bytes, bytes]], *, batch: int = 0
) -> list[tuple[int, int]]:
    """Produce (partition, key, value) items with acks=all, one flush (or one per ``batch`` items, so
    each batch is a batch of its own in the log); returns (partition, offset) each."""
    from confluent_kafka import Producer

    producer = Producer({**CLIENT, "bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    results: list = [None] * len(items)
    for i, (partition, key, value) in enumerate(items):

        def done(err, msg, i=i):
            results[i] = err if err is not None else (msg.partition(), msg.offset())

        producer.produce(topic, value=value, key=key, partition=partition, on_delivery=done)
        if batch and (i + 1) % batch == 0:
            assert producer.flush(30) == 0, "records still undelivered after 30s"
    assert producer.flush(30) == 0, "records still undelivered after 30s"
    failed = [r for r in results if not isinstance(r, tuple)]
    assert not failed, f"{len(failed)} records failed: {failed[:3]}"
    return results


def key_of(seq: int) -> bytes:
    return f"{seq:07d}".encode()


def value_of(seq: int) -> bytes:
    return f"value {seq} ".encode() * 6


# ---- (a) SIGKILL in the middle of a stream -------------------------------------------------------


class AckLog:
    """What the producer was told: each acknowledged record's (partition, offset), and the failures."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.by_partition: dict[int, dict[int, int]] = defaultdict(dict)  # partition -> offset -> seq
        self.count = 0
        self.failed: list[tuple[int, str]] = []
        self.offset_reused: list[tuple[int, int, int, int]] = []

    def on_delivery(self, err, msg) -> None:
        seq = int(msg.key())
        with self.lock:
            if err is not None:
                self.failed.append((seq, str(err)))
                return
            acked = self.by_partition[msg.partition()]
            if msg.offset() in acked:
                self.offset_reused.append((msg.partition(), msg.offset(), acked[msg.offset()], seq))
            acked[msg.offset()] = seq
            self.count += 1

    @property
    def done(self) -> int:
        with self.lock:
            return self.count + len(self.failed)


def stream(
    producer, topic: str, acks: AckLog, *, until, total: int | None = None, limit_s: float = 60
) -> int:
    """Produce numbered records round-robin over the partitions until ``until()`` (or ``total``), at
    most RATE a second and never more than MAX_OUTSTANDING unanswered; returns how many were sent."""
    seq = 0
    start = time.monotonic()
    while not until() and (total is None or seq < total):
        elapsed = time.monotonic() - start
        assert elapsed < limit_s, f"still producing after {limit_s}s: {acks.count} acknowledged"
        if seq - acks.done >= MAX_OUTSTANDING or seq >= RATE * elapsed:
            producer.poll(0.005)
            continue
        producer.produce(
            topic,
            key=key_of(seq),
            value=value_of(seq),
            partition=seq % PARTITIONS,
            on_delivery=acks.on_delivery,
        )
        producer.poll(0)
        seq += 1
    return seq


def check_log_against_acks(
    log: dict[int, list[Record]], acks: AckLog, sent: int, *, idempotent: bool
) -> None:
    assert not acks.offset_reused, f"one (partition, offset) acknowledged twice: {acks.offset_reused[:5]}"
    for partition, records in log.items():
        offsets = [offset for offset, _, _ in records]
        assert offsets == list(range(offsets[0] if offsets else 0, (offsets[-1] + 1) if offsets else 0)), (
            f"partition {partition}: offsets are not dense: {_gaps(offsets)}"
        )
        by_offset = {offset: (key, value) for offset, key, value in records}
        acked = acks.by_partition.get(partition, {})
        lost = [(offset, seq) for offset, seq in sorted(acked.items()) if offset not in by_offset]
        assert not lost, (
            f"partition {partition}: {len(lost)} acknowledged records missing after the restart, the first "
            f"(offset, seq): {lost[:5]}; log has offsets {offsets[:1]}..{offsets[-1:]}"
        )
        wrong = [
            (offset, seq)
            for offset, seq in sorted(acked.items())
            if by_offset[offset] != (key_of(seq), value_of(seq))
        ]
        assert not wrong, f"partition {partition}: other records at acknowledged offsets: {wrong[:5]}"
        in_ack_order = [offset for _, offset in sorted((seq, offset) for offset, seq in acked.items())]
        assert in_ack_order == sorted(in_ack_order), f"partition {partition}: acknowledged records reordered"
        seqs = [int(key) for _, key, _ in records]
        strangers = [s for s in seqs if not (0 <= s < sent and s % PARTITIONS == partition)]
        assert not strangers, f"partition {partition}: records never sent there: {strangers[:5]}"
        if idempotent:
            assert len(set(seqs)) == len(seqs), f"partition {partition}: duplicates {_duplicates(seqs)[:5]}"
            assert seqs == sorted(seqs), f"partition {partition}: an idempotent producer's records reordered"


def _gaps(offsets: list[int]) -> list[tuple[int, int]]:
    return [(a, b) for a, b in itertools.pairwise(offsets) if b != a + 1][:5]


def _duplicates(seqs: list[int]) -> list[int]:
    seen: set[int] = set()
    return [s for s in seqs if s in seen or seen.add(s)]


@pytest.mark.parametrize("idempotent", [True, False], ids=["idempotent", "plain"])
def test_sigkill_mid_stream_keeps_every_acknowledged_record(tmp_path, brokers, idempotent):
    from confluent_kafka import Producer

    data = tmp_path / "data"
    broker = brokers.start(data)
    topic = "crash-stream"
    create_topic(broker.bootstrap, topic, PARTITIONS, {"segment.ms": "300"})  # several segments each
    acks = AckLog()
    killed_at: list[float] = []
    first = broker

    def kill_mid_stream() -> None:
        started = time.monotonic()
        while (acks.count < KILL_AFTER_ACKS or time.monotonic() - started < KILL_AFTER_S) and first.alive():
            time.sleep(0.002)
        first.kill()
        killed_at.append(time.monotonic())

    killer = threading.Thread(target=kill_mid_stream, daemon=True)
    killer.start()
    producer = Producer(
        {
            **CLIENT,
            "bootstrap.servers": broker.bootstrap,
            "acks": "all",
            "enable.idempotence": idempotent,
            # without idempotence only one request in flight keeps acknowledged records in order
            "max.in.flight.requests.per.connection": 5 if idempotent else 1,
            "linger.ms": 2,
            "batch.num.messages": 25,
            "message.timeout.ms": 4000,
        }
    )
    sent = stream(
        producer, topic, acks, until=lambda: bool(killed_at) and time.monotonic() > killed_at[0] + 0.3
    )
    assert producer.flush(30) == 0
    killer.join(10)
    assert acks.count >= KILL_AFTER_ACKS and acks.failed, (
        f"the kill was not mid-stream: {acks.count} acknowledged, {len(acks.failed)} failed of {sent}"
    )

    broker = brokers.start(data)
    marks = watermarks(broker.bootstrap, topic, PARTITIONS)
    for partition, acked in acks.by_partition.items():
        assert marks[partition][1] > max(acked), (
            f"partition {partition}: high watermark {marks[partition][1]} after the restart, but offset "
            f"{max(acked)} was acknowledged before the kill: acknowledged records are invisible to consumers"
        )
    log = read_all(broker.bootstrap, topic, PARTITIONS)
    check_log_against_acks(log, acks, sent, idempotent=idempotent)
    segments = {p: len(list((data / f"{topic}-{p}").glob("*.log"))) for p in range(PARTITIONS)}
    assert max(segments.values()) > 1, f"segment.ms rolled no segment before the kill: {segments}"

    # new records continue each partition's offsets where the recovered log ends
    more = [
        (p, key_of(sent + i * PARTITIONS + p), value_of(sent + i * PARTITIONS + p))
        for i in range(10)
        for p in range(PARTITIONS)
    ]
    delivered = produce_and_wait(broker.bootstrap, topic, more)
    for partition in range(PARTITIONS):
        offsets = sorted(o for p, o in delivered if p == partition)
        start = marks[partition][1]
        assert offsets == list(range(start, start + 10)), f"partition {partition}: new offsets {offsets}"
    after = read_all(broker.bootstrap, topic, PARTITIONS)
    for partition in range(PARTITIONS):
        assert after[partition][: len(log[partition])] == log[partition]
        assert [o for o, _, _ in after[partition]] == list(range(marks[partition][1] + 10))


def test_idempotent_producer_rides_through_a_crash_and_restart(tmp_path, brokers):
    from confluent_kafka import Producer

    data = tmp_path / "data"
    broker = brokers.start(data)
    topic = "crash-ride"
    create_topic(broker.bootstrap, topic, PARTITIONS)
    acks = AckLog()
    restarted: list[BrokerProcess] = []

    def crash_and_restart() -> None:
        while acks.count < KILL_AFTER_ACKS and broker.alive():
            time.sleep(0.002)
        broker.kill()
        time.sleep(0.5)
        restarted.append(brokers.start(data, port=broker.port))  # same address: the producer reconnects

    chaos = threading.Thread(target=crash_and_restart, daemon=True)
    chaos.start()
    producer = Producer(
        {
            **CLIENT,
            "bootstrap.servers": broker.bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 2,
            "batch.num.messages": 25,
            "message.timeout.ms": 60000,
            "reconnect.backoff.max.ms": 200,
        }
    )
    total = 4 * KILL_AFTER_ACKS
    sent = stream(producer, topic, acks, until=lambda: False, total=total)
    assert producer.flush(90) == 0, "records still undelivered 90s after the restart"
    chaos.join(30)
    assert restarted, "the broker was not restarted"
    assert not acks.failed, f"{len(acks.failed)} records failed across the restart: {acks.failed[:3]}"
    log = read_all(restarted[0].bootstrap, topic, PARTITIONS)
    check_log_against_acks(log, acks, sent, idempotent=True)
    assert sum(len(records) for records in log.values()) == total, "every record exactly once"


# ---- (b) a torn tail ---------------------------------------------------------------------------------


def _tear(log_file: Path, tail: str) -> None:
    """Append a torn tail after the last whole batch of a segment file."""
    data = log_file.read_bytes()
    position, last = 0, None
    for header in iter_batch_headers(data):
        last = (position, header)
        position += header.size_in_bytes
    assert last is not None and position == len(data), f"{log_file} does not end with a whole batch"
    start, header = last
    batch = bytearray(data[start:position])
    if tail == "partial-batch":  # the first bytes of a write that never finished
        appended = bytes(batch[: len(batch) // 2])
    elif tail == "garbage":
        appended = random.Random(7).randbytes(97)
    else:  # a whole batch at the next offset whose CRC does not match its bytes
        batch[0:8] = header.next_offset.to_bytes(8, "big")
        batch[-1] ^= 0xFF
        appended = bytes(batch)
    with open(log_file, "ab") as fh:
        fh.write(appended)


@pytest.mark.parametrize("tail", ["partial-batch", "garbage", "bad-crc-batch"])
@pytest.mark.parametrize("how", ["killed", "stopped"])
def test_a_torn_tail_is_cut_at_the_last_whole_batch(tmp_path, brokers, how, tail):
    data = tmp_path / "data"
    broker = brokers.start(data)
    topic = "torn"
    create_topic(broker.bootstrap, topic, 1)
    items = [(0, key_of(seq), value_of(seq)) for seq in range(50)]
    acked = produce_and_wait(broker.bootstrap, topic, items, batch=5)  # ten batches of five records
    assert [o for _, o in acked] == list(range(50))
    before = read_all(broker.bootstrap, topic, 1)[0]
    if how == "killed":
        broker.kill()
    else:
        assert broker.stop() == 0, "\n".join(broker.output[-30:])
        (data / f"{topic}-0" / CLEAN_SHUTDOWN_MARKER).unlink()
    log_file = sorted((data / f"{topic}-0").glob("*.log"))[-1]
    whole_size = log_file.stat().st_size
    _tear(log_file, tail)

    broker = brokers.start(data)
    assert log_file.stat().st_size == whole_size, "the torn tail is still in the segment file"
    said = [line for line in broker.output if "truncat" in line.lower() and f"{topic}-0" in line]
    assert said, "the broker did not log the truncation of the torn tail:\n" + "\n".join(broker.output[-20:])
    assert watermarks(broker.bootstrap, topic, 1)[0] == (0, 50)
    assert read_all(broker.bootstrap, topic, 1)[0] == before
    new = produce_and_wait(broker.bootstrap, topic, [(0, key_of(50 + i), value_of(50 + i)) for i in range(5)])
    assert [o for _, o in new] == list(range(50, 55))
    after = read_all(broker.bootstrap, topic, 1)[0]
    assert after[:50] == before and [(o, k) for o, k, _ in after[50:]] == [
        (50 + i, key_of(50 + i)) for i in range(5)
    ]


# ---- (c) a clean restart -------------------------------------------------------------------------


def _describe_topics(bootstrap: str, names: list[str]) -> dict[str, tuple[str, int]]:
    """(topic id, partition count) of each topic, from Metadata."""
    from confluent_kafka import TopicCollection
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({**CLIENT, "bootstrap.servers": bootstrap})
    described = admin.describe_topics(TopicCollection(names))
    return {
        name: (str(topic.topic_id), len(topic.partitions))
        for name, topic in ((name, future.result(15)) for name, future in described.items())
    }


def test_a_clean_restart_keeps_topics_ids_and_offsets(tmp_path, brokers):
    data = tmp_path / "data"
    broker = brokers.start(data)
    topics = {"kept-three": 3, "kept-one": 1}
    for name, partitions in topics.items():
        create_topic(broker.bootstrap, name, partitions)
        produce_and_wait(
            broker.bootstrap,
            name,
            [(i % partitions, key_of(i), value_of(i)) for i in range(20 * partitions + 1)],
        )
    described = _describe_topics(broker.bootstrap, list(topics))
    assert {name: count for name, (_, count) in described.items()} == topics
    marks = {name: watermarks(broker.bootstrap, name, n) for name, n in topics.items()}
    logs = {name: read_all(broker.bootstrap, name, n) for name, n in topics.items()}
    assert broker.stop() == 0, "\n".join(broker.output[-30:])

    broker = brokers.start(data)
    assert _describe_topics(broker.bootstrap, list(topics)) == described
    for name, partitions in topics.items():
        assert watermarks(broker.bootstrap, name, partitions) == marks[name]
        assert read_all(broker.bootstrap, name, partitions) == logs[name]
        new = produce_and_wait(broker.bootstrap, name, [(p, b"after", b"restart") for p in range(partitions)])
        assert sorted(new) == [(p, marks[name][p][1]) for p in range(partitions)]


def test_a_clean_restart_keeps_the_log_start_offset(tmp_path, brokers):
    from confluent_kafka import KafkaException, TopicPartition
    from confluent_kafka.admin import AdminClient

    data = tmp_path / "data"
    broker = brokers.start(data)
    topic = "trimmed"
    create_topic(broker.bootstrap, topic, 1)
    produce_and_wait(broker.bootstrap, topic, [(0, key_of(i), value_of(i)) for i in range(30)])
    admin = AdminClient({**CLIENT, "bootstrap.servers": broker.bootstrap})
    [deleted] = admin.delete_records([TopicPartition(topic, 0, 10)]).values()
    try:  # the broker implements DeleteRecords (API key 21): an error here is a regression, not a skip
        assert deleted.result(15).low_watermark == 10
    except KafkaException as exc:
        log = "\n".join(broker.output[-20:])
        pytest.fail(f"DeleteRecords failed: {exc}; the broker's last lines:\n{log}", pytrace=False)
    assert watermarks(broker.bootstrap, topic, 1)[0] == (10, 30)
    assert broker.stop() == 0, "\n".join(broker.output[-30:])

    broker = brokers.start(data)
    assert watermarks(broker.bootstrap, topic, 1)[0] == (10, 30)
    assert [o for o, _, _ in read_all(broker.bootstrap, topic, 1)[0]] == list(range(10, 30))
