"""The reference producer against live brokers: our reference broker and librdkafka's mock cluster.
What it wrote is read back with confluent-kafka (librdkafka), an independent implementation."""

from __future__ import annotations

import asyncio
import collections

import pytest

from kconform.codecs.errors import Errors
from kconform.harness.client.errors import BrokerError
from kconform.harness.client.producer import Producer, ProducerInterceptor
from kconform.harness.client.transaction_manager import IllegalTransactionState
from kconform.reference_broker.process import start_broker_process

confluent_kafka = pytest.importorskip("confluent_kafka")
from kconform.harness.targets.rdkafka_mock import RdkafkaMockCluster  # noqa: E402

pytestmark = pytest.mark.peer

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    node = start_broker_process(tmp_path_factory.mktemp("broker"), overrides={"num.partitions": "3"})
    yield node
    node.stop()
    assert node.process.returncode == 0, "\n".join(node.output[-40:])


@pytest.fixture
def mock():
    with RdkafkaMockCluster(brokers=3) as cluster:
        yield cluster


def consume_all(bootstrap: str, topic: str, expected: int, *, isolation="read_uncommitted", timeout=30.0):
    """Every record of ``topic`` as (partition, offset, key, value, headers), read by librdkafka."""
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"check-{topic}-{isolation}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "isolation.level": isolation,
            "enable.partition.eof": True,
        }
    )
    consumer.subscribe([topic])
    out = []
    loop = asyncio.new_event_loop()
    deadline = loop.time() + timeout
    eof: set[int] = set()
    partitions = None
    try:
        while loop.time() < deadline:
            msg = consumer.poll(0.5)
            if partitions is None and consumer.assignment():
                partitions = {tp.partition for tp in consumer.assignment()}
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == confluent_kafka.KafkaError._PARTITION_EOF:
                    eof.add(msg.partition())
                    if len(out) >= expected and partitions and eof >= partitions:
                        break
                    continue
                raise AssertionError(msg.error())
            eof.discard(msg.partition())
            out.append((msg.partition(), msg.offset(), msg.key(), msg.value(), msg.headers() or []))
    finally:
        consumer.close()
        loop.close()
    return out


def run(coro):
    return asyncio.run(coro)


@pytest.mark.parametrize("acks", ["0", "1", "all"])
@pytest.mark.parametrize("codec", CODECS)
def test_round_trip_every_acks_and_codec_on_the_reference_broker(broker, acks, codec):
    topic = f"rt-{acks}-{codec}"
    sent = [(f"k{i % 7}".encode(), f"value-{i}".encode() * (i % 5 + 1)) for i in range(300)]

    async def produce():
        config = {
            "bootstrap.servers": broker.bootstrap,
            "acks": acks,
            "compression.type": codec,
            "linger.ms": 2,
            "batch.size": 2000,
        }
        async with Producer(config) as producer:
            futures = [
                await producer.send(topic, v, key=k, headers=[("n", b"%d" % i)])
                for i, (k, v) in enumerate(sent)
            ]
            return [await f for f in futures]

    metadata = run(produce())
    got = consume_all(broker.bootstrap, topic, len(sent))
    assert sorted((k, v) for _, _, k, v, _ in got) == sorted(sent)
    by_partition = collections.defaultdict(list)
    for partition, _offset, _key, _value, headers in got:
        by_partition[partition].append(int(dict(headers)["n"]))
    for order in by_partition.values():
        assert order == sorted(order)  # send order kept within each partition
    for md, (key, _) in zip(metadata, sent, strict=True):
        from kconform.harness.client.partitioner import partition_for_key

        assert md.partition == partition_for_key(key, 3)
        assert md.offset == (-1 if acks == "0" else md.offset) and (acks == "0" or md.offset >= 0)
    if acks != "0":  # the acknowledged offsets are where the records are
        placed = {(p, o): (k, v) for p, o, k, v, _ in got}
        assert all(placed[(md.partition, md.offset)] == s for md, s in zip(metadata, sent, strict=True))


@pytest.mark.parametrize("codec", CODECS)
def test_round_trip_on_the_mock_cluster(mock, codec):
    mock.create_topic("m", 4)
    sent = [(b"k%d" % (i % 11), b"v%d" % i) for i in range(400)]

    async def produce():
        config = {"bootstrap.servers": mock.bootstrap, "compression.type": codec, "linger.ms": 1}
        async with Producer(config) as producer:
            futures = [await producer.send("m", v, key=k) for k, v in sent]
            return [await f for f in futures]

    metadata = run(produce())
    got = consume_all(mock.bootstrap, "m", len(sent))
    placed = {(p, o): (k, v) for p, o, k, v, _ in got}
    assert len(got) == len(sent) == len(placed)
    assert [placed[(md.partition, md.offset)] for md in metadata] == sent


@pytest.mark.parametrize("acks", ["0", "1"])
def test_acks_zero_and_one_on_the_mock_cluster(mock, acks):
    mock.create_topic("a", 2)

    async def produce():
        config = {"bootstrap.servers": mock.bootstrap, "acks": acks, "enable.idempotence": False}
        async with Producer(config) as producer:
            futures = [await producer.send("a", b"%d" % i, partition=i % 2) for i in range(100)]
            return [await f for f in futures]

    metadata = run(produce())
    got = consume_all(mock.bootstrap, "a", 100)
    assert sorted(int(v) for *_, v, _ in got) == list(range(100))
    assert all((md.offset == -1) == (acks == "0") for md in metadata)


def test_idempotent_producer_gets_a_producer_id_and_stamps_sequences(broker):
    async def produce():
        async with Producer({"bootstrap.servers": broker.bootstrap, "batch.size": 500}) as producer:
            futures = [await producer.send("idem", b"x" * 50, partition=0) for _ in range(100)]
            await producer.flush()
            return producer.txn.producer_id, [f.result().offset for f in futures]

    producer_id, offsets = run(produce())
    assert producer_id >= 0 and offsets == list(range(100))


RETRIABLE = [
    Errors.NOT_LEADER_OR_FOLLOWER,
    Errors.REQUEST_TIMED_OUT,
    Errors.NOT_ENOUGH_REPLICAS,
    Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
    Errors.LEADER_NOT_AVAILABLE,
]


def _read_by_partition(bootstrap, expected, topic, **kw):
    got = consume_all(bootstrap, topic, expected, **kw)
    read = collections.defaultdict(list)
    for partition, _, _, value, _ in sorted(got, key=lambda r: (r[0], r[1])):
        read[partition].append(value)
    return read


def test_retries_keep_every_record_exactly_once_in_send_order(mock):
    """max.in.flight 5 with idempotence: the mock cluster fails produce requests with retriable errors,
    some between successful ones, so later batches of a partition land on the broker while an earlier
    one waits for its retry. The broker refuses them as out of order, the client resends them behind the
    failed one, and every record ends up exactly once, in send order per partition.

    The producer is transactional because librdkafka's mock checks sequence numbers only for producer
    ids it gave to a transactional id (see the next test); Kafka checks them for every idempotent batch."""
    mock.create_topic("r", 3)
    sent = collections.defaultdict(list)

    async def produce():
        config = {
            "bootstrap.servers": mock.bootstrap,
            "max.in.flight.requests.per.connection": 5,
            "linger.ms": 0,
            "batch.size": 300,
            "retry.backoff.ms": 20,
            "transactional.id": "retries",
        }
        async with Producer(config) as producer:
            await producer.init_transactions()
            producer.begin_transaction()
            await producer.send_and_wait("r", b"warm-up", partition=0)
            sent[0].append(b"warm-up")
            pattern = []
            for i, code in enumerate(RETRIABLE * 4):
                pattern += [code] + [0] * (i % 3)  # failures interleaved with successes
            mock.push_request_errors(0, pattern)
            futures = []
            for i in range(3000):
                partition = i % 3
                sent[partition].append(b"r-%d" % i)
                futures.append(await producer.send("r", b"r-%d" % i, partition=partition))
            offsets = collections.defaultdict(list)
            for f in futures:
                md = await f
                offsets[md.partition].append(md.offset)
            await producer.commit_transaction()
            assert producer.sender.stats["OUT_OF_ORDER_SEQUENCE_NUMBER"] > 0  # batches did overtake
            assert producer.sender.stats["retries"] >= len(RETRIABLE) * 4
            return offsets

    offsets = run(produce())
    assert all(o == sorted(set(o)) for o in offsets.values())  # acknowledged offsets rise with send order
    read = _read_by_partition(mock.bootstrap, sum(map(len, sent.values())), "r", isolation="read_committed")
    for partition, values in sent.items():
        assert read[partition] == values, f"partition {partition}: not exactly once in send order"


def test_the_mock_cluster_does_not_check_sequences_of_plain_idempotent_producers(mock):
    """A known difference, kept as a test so it is noticed if librdkafka changes: the mock appends a
    plain idempotent producer's batch again when it is resent, and out of order. Kafka refuses the
    second (UnifiedLog.analyzeAndValidateProducerState finds the duplicate and answers with the first
    write's offset; ProducerAppendInfo.checkSequence refuses a gap with OUT_OF_ORDER_SEQUENCE_NUMBER)."""
    from kconform.codecs.messages import InitProducerIdRequest, ProduceRequest
    from kconform.codecs.records import Record, encode_batch
    from kconform.harness.client.connection import BrokerConnection

    mock.create_topic("seq", 1)
    host, port = mock.bootstrap.split(",")[0].rsplit(":", 1)

    async def probe():
        conn = await BrokerConnection.connect(host, int(port))
        try:
            ids = await conn.send(22, InitProducerIdRequest(transaction_timeout_ms=60_000))
            answers = []
            for sequence, count in [(0, 2), (0, 2), (7, 1)]:  # first write, its resend, a gap
                batch = encode_batch(
                    [Record(i, 1, None, b"v") for i in range(count)],
                    producer_id=ids.producer_id,
                    producer_epoch=ids.producer_epoch,
                    base_sequence=sequence,
                )
                data = ProduceRequest.PartitionProduceData(index=0, records=batch)
                request = ProduceRequest(
                    acks=-1,
                    timeout_ms=5000,
                    topic_data=[ProduceRequest.TopicProduceData(name="seq", partition_data=[data])],
                )
                part = (await conn.send(0, request)).responses[0].partition_responses[0]
                answers.append((part.error_code, part.base_offset))
            return answers
        finally:
            await conn.wait_closed()

    assert run(probe()) == [(0, 0), (0, 2), (0, 4)]  # Kafka: (0, 0), (0, 0), OUT_OF_ORDER


def test_timed_out_requests_resent_to_a_frozen_broker_are_not_duplicated(tmp_path):
    """The broker stops (SIGSTOP) with produce requests on the wire: they time out in the client, which
    closes the connection and resends the same batches (same sequence numbers) once the broker is back.
    The broker has the first copies too; its duplicate check leaves every record exactly once."""
    node = start_broker_process(tmp_path / "frozen", overrides={"num.partitions": "2"})
    sent = collections.defaultdict(list)
    try:

        async def produce():
            config = {
                "bootstrap.servers": node.bootstrap,
                "linger.ms": 1,
                "batch.size": 300,
                "request.timeout.ms": 500,
                "retry.backoff.ms": 20,
                "delivery.timeout.ms": 60_000,
                "socket.connection.setup.timeout.ms": 500,
            }
            async with Producer(config) as producer:
                for p in range(2):
                    await producer.send_and_wait("frozen", b"warm-up", partition=p)
                    sent[p].append(b"warm-up")
                node.freeze()
                futures = []
                for i in range(200):
                    sent[i % 2].append(b"f-%d" % i)
                    futures.append(await producer.send("frozen", b"f-%d" % i, partition=i % 2))
                await asyncio.sleep(1.5)  # several request timeouts pass
                node.thaw()
                for f in futures:
                    await f
                assert producer.sender.stats["RequestTimedOut"] > 0 and producer.sender.stats["retries"] > 0

        run(produce())
        read = _read_by_partition(node.bootstrap, sum(map(len, sent.values())), "frozen")
        for partition, values in sent.items():
            assert read[partition] == values, f"partition {partition}: not exactly once in send order"
    finally:
        node.thaw()
        node.stop()


async def _wait(future):
    return await future


def test_transactions_commit_and_abort_seen_by_read_committed(broker):
    async def produce():
        config = {"bootstrap.servers": broker.bootstrap, "transactional.id": "txn-live"}
        async with Producer(config) as producer:
            await producer.init_transactions()
            producer.begin_transaction()
            for i in range(10):
                await producer.send("txn", b"committed-%d" % i, partition=i % 3)
            await producer.commit_transaction()
            producer.begin_transaction()
            for i in range(5):
                await producer.send("txn", b"aborted-%d" % i, partition=i % 3)
            await producer.flush()
            await producer.abort_transaction()
            producer.begin_transaction()
            await producer.send("txn", b"last", partition=0)
            await producer.send_offsets_to_transaction({("txn", 0): 42}, "txn-group")
            await producer.commit_transaction()
            with pytest.raises(IllegalTransactionState):
                await producer.commit_transaction()

    run(produce())
    committed = consume_all(broker.bootstrap, "txn", 11, isolation="read_committed")
    values = sorted(v for *_, v, _ in committed)
    assert values == sorted([b"committed-%d" % i for i in range(10)] + [b"last"])
    everything = consume_all(broker.bootstrap, "txn", 16)
    assert len(everything) == 16  # read_uncommitted sees the aborted ones too
    consumer = confluent_kafka.Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "txn-group"})
    try:
        [tp] = consumer.committed([confluent_kafka.TopicPartition("txn", 0)], timeout=10)
        assert tp.offset == 42
    finally:
        consumer.close()


def test_a_second_producer_with_the_same_transactional_id_fences_the_first(broker):
    async def produce():
        config = {"bootstrap.servers": broker.bootstrap, "transactional.id": "txn-fence"}
        async with Producer(config) as old, Producer(config) as new:
            await old.init_transactions()
            old.begin_transaction()
            await old.send_and_wait("fence", b"zombie", partition=0)
            await new.init_transactions()  # bumps the epoch and aborts old's transaction
            with pytest.raises(BrokerError) as caught:
                await old.commit_transaction()
            return caught.value.name

    assert run(produce()) in ("PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH")
    assert consume_all(broker.bootstrap, "fence", 0, isolation="read_committed", timeout=10) == []


def test_callbacks_and_interceptors_see_every_outcome(broker):
    seen, acked = [], []

    class Tagging(ProducerInterceptor):
        def on_send(self, record):
            record.headers = [*record.headers, ("tag", b"1")]
            return record

        def on_acknowledgement(self, metadata, exception):
            acked.append((metadata.offset if metadata else None, exception))

    async def produce():
        config = {"bootstrap.servers": broker.bootstrap}
        async with Producer(
            config, interceptors=[Tagging()], value_serializer=lambda _t, v: v.encode()
        ) as producer:
            for i in range(5):
                await producer.send(
                    "cb", f"v{i}", partition=0, callback=lambda md, exc: seen.append((md.offset, exc))
                )
            await producer.flush()

    run(produce())
    assert seen == [(i, None) for i in range(5)] and acked == seen
    got = consume_all(broker.bootstrap, "cb", 5)
    assert all(("tag", b"1") in headers for *_, headers in got)


def test_an_unknown_topic_fails_after_max_block_ms(tmp_path):
    node = start_broker_process(tmp_path / "no-auto", overrides={"auto.create.topics.enable": "false"})

    async def produce():
        config = {"bootstrap.servers": node.bootstrap, "max.block.ms": 300}
        async with Producer(config) as producer:
            with pytest.raises(BrokerError, match="UNKNOWN_TOPIC_OR_PARTITION"):
                await producer.send("no-such-topic", b"x")

    try:
        run(produce())
    finally:
        node.stop()


def test_a_batch_the_broker_finds_too_large_is_split_and_every_offset_is_right(broker):
    """Kafka's Sender splits a batch refused with MESSAGE_TOO_LARGE and resends the pieces; each
    record's metadata must still name the offset it landed at."""
    from kconform.codecs.messages import CreateTopicsRequest
    from kconform.harness.client.network import NetworkClient

    async def produce():
        client = NetworkClient(broker.bootstrap)
        config = CreateTopicsRequest.CreatableTopicConfig(name="max.message.bytes", value="3000")
        topic = CreateTopicsRequest.CreatableTopic(
            name="small", num_partitions=1, replication_factor=1, configs=[config]
        )
        created = await client.send_any(19, CreateTopicsRequest(topics=[topic], timeout_ms=10_000))
        assert created.topics[0].error_code == 0
        await client.close()
        settings = {"bootstrap.servers": broker.bootstrap, "batch.size": 16_384, "linger.ms": 200}
        async with Producer(settings) as producer:
            futures = [await producer.send("small", b"%04d" % i + b"x" * 196) for i in range(60)]
            offsets = [(await f).offset for f in futures]
            return offsets, producer.sender.stats["splits"]

    offsets, splits = run(produce())
    assert splits >= 1 and offsets == list(range(60)), (splits, offsets)
    got = consume_all(broker.bootstrap, "small", 60)
    assert [(o, v[:4]) for _, o, _, v, _ in sorted(got)] == [(i, b"%04d" % i) for i in range(60)]


def test_send_blocks_on_a_full_buffer_and_gives_up_after_max_block_ms(tmp_path):
    """buffer.memory bounds what waits unsent; with the broker stopped, send() waits max.block.ms for
    room and then fails, and what was accepted is still delivered once the broker is back."""
    from kconform.harness.client.producer import BufferExhausted

    node = start_broker_process(tmp_path / "full")
    try:

        async def produce():
            config = {
                "bootstrap.servers": node.bootstrap,
                "buffer.memory": 8_000,
                "batch.size": 1_000,
                "max.block.ms": 300,
                "linger.ms": 0,
            }
            async with Producer(config) as producer:
                await producer.send_and_wait("full", b"warm-up", partition=0)
                node.freeze()
                accepted = []
                loop = asyncio.get_running_loop()
                with pytest.raises(BufferExhausted):
                    for i in range(1000):
                        started = loop.time()
                        accepted.append(await producer.send("full", b"%03d" % i + b"x" * 400, partition=0))
                blocked = loop.time() - started
                node.thaw()
                offsets = [(await f).offset for f in accepted]
                return len(accepted), offsets, blocked

        count, offsets, blocked = run(produce())
        assert 0.3 <= blocked < 3
        assert 5 <= count < 30  # about buffer.memory / batch.size batches of two records
        assert offsets == list(range(1, count + 1))
    finally:
        node.thaw()
        node.stop()
