"""Bad input never crashes the broker or loses data: many connections send mutated and random requests,
truncated and oversized frames, negative sizes, random bytes, and abandon connections half-way, while a
well-behaved producer and consumer keep working beside them. At the end the broker still answers and
every acknowledged record reads back at its offset, intact.

Everything is seeded (``KCONFORM_FUZZ_SEED`` replays a run), bounded in iterations and time, and stays
on the loopback interface."""

from __future__ import annotations

import asyncio
import os
import random
from collections import Counter
from dataclasses import dataclass, field

from kconform.codecs import (
    DecodeError,
    api_schema,
    decode_request_header,
    decode_response,
    encode_request,
    size_prefixed,
)
from kconform.codecs.errors import Errors
from kconform.codecs.messages import (
    ApiVersionsRequest,
    CreateTopicsRequest,
    FetchRequest,
    InitProducerIdRequest,
    ListOffsetsRequest,
    MetadataRequest,
    ProduceRequest,
)
from kconform.codecs.records import Record, encode_batch, iter_batches
from kconform.codecs.strategies import sample
from kconform.reference_broker.node import BrokerNode

from ..support.rawclient import RawClient

SEED = int(os.environ.get("KCONFORM_FUZZ_SEED", "1927"))
MAX_REQUEST_BYTES = 64 * 1024
FUZZ_WORKERS = 16
ATTACKS_PER_WORKER = 60
MIN_LEDGER_BATCHES = 40
LEDGER, FUZZ = "ledger", "fuzz"
PRODUCE, FETCH, LIST_OFFSETS, METADATA, API_VERSIONS, CREATE_TOPICS, INIT_PRODUCER_ID = 0, 1, 2, 3, 18, 19, 22
# APIs whose random bodies are harmless here (no topic creation or deletion, no record deletion),
# plus some this broker does not serve (it must close the connection on those).
SAMPLED_APIS = {
    PRODUCE: range(3, 12),
    FETCH: range(4, 18),
    LIST_OFFSETS: range(1, 11),
    METADATA: range(0, 13),
    API_VERSIONS: range(0, 5),
    INIT_PRODUCER_ID: range(0, 6),
    8: range(2, 10),  # OffsetCommit
    10: range(0, 6),  # FindCoordinator
    11: range(0, 10),  # JoinGroup
}


async def started_node(tmp_path, **overrides: str) -> tuple[BrokerNode, str, int]:
    props = {"node.id": "1", "log.dirs": str(tmp_path / "data")}
    props.update(overrides)
    node = BrokerNode.from_config_file(None, props)
    host, port = await node.start("127.0.0.1", 0)
    return node, host, port


async def create_topic(client: RawClient, name: str, partitions: int):
    topic = CreateTopicsRequest.CreatableTopic(name=name, num_partitions=partitions, replication_factor=1)
    body = await client.call(CREATE_TOPICS, 7, CreateTopicsRequest(topics=[topic], timeout_ms=5000))
    assert body.topics[0].error_code == Errors.NONE, body
    return body.topics[0].topic_id


def ledger_value(offset: int) -> tuple[bytes, bytes]:
    """The key and value of the ledger record at ``offset``: the well-behaved producer writes them so
    that every reader can check a record from its offset alone."""
    return f"k{offset % 7}".encode(), f"ledger record {offset} ".encode() * (1 + offset % 5)


# ---- the well-behaved client ----------------------------------------------------------------------


@dataclass
class Ledger:
    """What the well-behaved producer got acknowledged, and what its consumer read back."""

    acknowledged: int = 0  # records 0 .. acknowledged-1 are acknowledged
    batches: int = 0
    fetched: int = 0
    fetches: int = 0


async def produce_ledger(address, ledger: Ledger, fuzz_done: asyncio.Event) -> None:
    """Idempotent acks=all (and acks=1) batches until the fuzzers are done; each acknowledged at the
    next offset."""
    async with await RawClient.connect(*address, client_id="ledger-producer") as client:
        init = await client.call(INIT_PRODUCER_ID, 4, InitProducerIdRequest(transactional_id=None))
        assert init.error_code == Errors.NONE
        rng = random.Random(SEED + 1)
        while ledger.batches < MIN_LEDGER_BATCHES or not fuzz_done.is_set():
            if ledger.batches >= 2000:
                break
            first = ledger.acknowledged
            count = rng.randint(1, 6)
            # offsets within the batch from 0, as producers send them; the broker assigns the real ones
            records = [
                Record(i, 1_700_000_000_000 + first + i, *ledger_value(first + i)) for i in range(count)
            ]
            batch = encode_batch(
                records,
                producer_id=init.producer_id,
                producer_epoch=init.producer_epoch,
                base_sequence=first,
            )
            acks = -1 if ledger.batches % 3 else 1
            request = ProduceRequest(
                transactional_id=None,
                acks=acks,
                timeout_ms=10_000,
                topic_data=[
                    ProduceRequest.TopicProduceData(
                        name=LEDGER,
                        partition_data=[ProduceRequest.PartitionProduceData(index=0, records=batch)],
                    )
                ],
            )
            body = await client.call(PRODUCE, 9, request)
            answer = body.responses[0].partition_responses[0]
            assert (answer.error_code, answer.base_offset) == (Errors.NONE, first), (
                f"ledger batch {ledger.batches} (seed {SEED}): {answer}"
            )
            ledger.acknowledged = first + count
            ledger.batches += 1
            await asyncio.sleep(0)


def check_ledger_records(raw: bytes, start: int) -> int:
    """Check fetched ledger bytes record by record from offset ``start``; returns the next offset."""
    expected = start
    for batch in iter_batches(raw):
        for record in batch.records:
            if record.offset < expected:
                continue  # a batch can begin before the fetch offset
            assert record.offset == expected, f"gap in the ledger at {expected} (seed {SEED})"
            assert (record.key, record.value) == ledger_value(expected), f"ledger record {expected} corrupted"
            expected += 1
    return expected


async def read_ledger(client: RawClient, topic_id, offset: int, max_wait_ms: int) -> tuple[int, int]:
    """One fetch from ``offset``: (next offset after what came back and checked, high watermark)."""
    request = FetchRequest(
        max_wait_ms=max_wait_ms,
        min_bytes=1,
        max_bytes=256 * 1024,
        topics=[
            FetchRequest.FetchTopic(
                topic_id=topic_id,
                partitions=[
                    FetchRequest.FetchPartition(
                        partition=0, fetch_offset=offset, partition_max_bytes=128 * 1024
                    )
                ],
            )
        ],
    )
    body = await client.call(FETCH, 16, request)
    assert body.error_code == Errors.NONE, body
    data = body.responses[0].partitions[0]
    assert data.error_code == Errors.NONE, f"ledger fetch at {offset} (seed {SEED}): {data}"
    records = data.records
    raw = records.read() if hasattr(records, "read") else bytes(records or b"")
    return check_ledger_records(raw, offset), data.high_watermark


async def consume_ledger(address, topic_id, ledger: Ledger, producer_done: asyncio.Event) -> None:
    """Follow the ledger with long polls, checking every record, until the producer has finished and
    everything acknowledged has been read."""
    async with await RawClient.connect(*address, client_id="ledger-consumer") as client:
        while not (producer_done.is_set() and ledger.fetched >= ledger.acknowledged):
            ledger.fetched, high_watermark = await read_ledger(client, topic_id, ledger.fetched, 100)
            assert ledger.fetched <= high_watermark
            ledger.fetches += 1


# ---- the attacks ----------------------------------------------------------------------------------


@dataclass
class Fuzz:
    address: tuple[str, int]
    rng: random.Random
    templates: list[bytes]
    outcomes: Counter = field(default_factory=Counter)
    abandoned: list[RawClient] = field(default_factory=list)

    async def connect(self) -> RawClient:
        return await RawClient.connect(*self.address, client_id="fuzz", timeout=2.0)


def templates() -> list[bytes]:
    """Valid request frames (without size prefix) to mutate: every version of the APIs served here."""
    batch = encode_batch([Record(i, 1_700_000_000_000 + i, b"k", b"fuzz value") for i in range(3)])
    bodies = []
    for v in range(0, 5):
        bodies.append(
            (API_VERSIONS, v, ApiVersionsRequest(client_software_name="fz", client_software_version="1"))
        )
    for v in range(1, 13):
        bodies.append(
            (METADATA, v, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=FUZZ)]))
        )
    for v in range(3, 12):
        partition = ProduceRequest.PartitionProduceData(index=v % 2, records=batch)
        topic = ProduceRequest.TopicProduceData(name=FUZZ, partition_data=[partition])
        bodies.append((PRODUCE, v, ProduceRequest(acks=1, timeout_ms=1000, topic_data=[topic])))
    for v in range(4, 13):
        partition = FetchRequest.FetchPartition(partition=v % 2, fetch_offset=0, partition_max_bytes=4096)
        topic = FetchRequest.FetchTopic(topic=FUZZ, partitions=[partition])
        bodies.append((FETCH, v, FetchRequest(max_wait_ms=50, min_bytes=1, max_bytes=8192, topics=[topic])))
    for v in range(1, 11):
        partition = ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=-1 - v % 2)
        topic = ListOffsetsRequest.ListOffsetsTopic(name=FUZZ, partitions=[partition])
        bodies.append((LIST_OFFSETS, v, ListOffsetsRequest(replica_id=-1, topics=[topic])))
    for v in range(0, 6):
        bodies.append(
            (INIT_PRODUCER_ID, v, InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=1))
        )
    return [encode_request(key, v, 1000 + i, "fuzz", body) for i, (key, v, body) in enumerate(bodies)]


def mutate(frame: bytes, rng: random.Random) -> bytes:
    """One to three mutations anywhere after the API key (kept, so that a mutation never turns a
    request into a topic deletion)."""
    data = bytearray(frame)
    for _ in range(rng.randint(1, 3)):
        at = rng.randrange(2, max(3, len(data)))
        kind = rng.randrange(6)
        if kind == 0:
            data[at % len(data)] ^= 1 << rng.randrange(8)
        elif kind == 1:
            data[at % len(data)] = rng.randrange(256)
        elif kind == 2:
            data[at:at] = rng.randbytes(rng.randint(1, 8))
        elif kind == 3:
            del data[at : at + rng.randint(1, 8)]
        elif kind == 4:
            del data[max(2, at) :]
        else:  # a length or count field set to a boundary value
            data[at : at + 4] = rng.choice([b"\xff\xff\xff\xff", b"\x7f\xff\xff\xff", b"\x80\x00\x00\x00"])
    return bytes(data)


def response_version(frame: bytes) -> tuple[int, int, int] | None:
    """(api key, version to decode the answer at, correlation id) of a request frame, or None when its
    header does not parse (the broker must close the connection then)."""
    try:
        header, _ = decode_request_header(frame)
    except DecodeError:
        return None
    key, version = header.request_api_key, header.request_api_version
    if key == API_VERSIONS and not api_schema(API_VERSIONS).supports(version):
        version = 0  # an unknown ApiVersions version is answered at v0
    return key, version, header.correlation_id


async def attack_request(fuzz: Fuzz, frame: bytes, label: str) -> None:
    """Send ``frame`` as one request: an answer must decode and carry the frame's correlation id, and
    the connection must then still answer a clean request; otherwise it is closed or stays silent."""
    client = await fuzz.connect()
    try:
        parsed = response_version(frame)
        await client.send_bytes(size_prefixed(frame))
        reply = await client.wait_closed(0.5)
        fuzz.outcomes[f"{label}:{reply.fate}"] += 1
        if not reply.answered:
            return
        assert parsed is not None, (
            f"{label}: a request whose header does not parse was answered (seed {SEED})"
        )
        key, version, correlation_id = parsed
        header, _ = decode_response(reply.frame, key, version)
        assert header.correlation_id == correlation_id, f"{label}: wrong correlation id (seed {SEED})"
        after = await client.request(API_VERSIONS, 0, ApiVersionsRequest(), timeout=5.0)
        assert after.answered and after.body.error_code == Errors.NONE, (
            f"{label}: connection out of step after an answered request (seed {SEED})"
        )
    finally:
        await client.close()


async def attack_mutated(fuzz: Fuzz) -> None:
    await attack_request(fuzz, mutate(fuzz.rng.choice(fuzz.templates), fuzz.rng), "mutated")


async def attack_sampled(fuzz: Fuzz) -> None:
    key = fuzz.rng.choice(sorted(SAMPLED_APIS))
    version = fuzz.rng.choice(SAMPLED_APIS[key])
    body = sample(api_schema(key).request, version, fuzz.rng)
    frame = encode_request(key, version, fuzz.rng.randrange(2**31), "fuzz", body)
    await attack_request(fuzz, frame, "sampled")


async def attack_truncated(fuzz: Fuzz) -> None:
    """A whole frame announced, part of it sent, then the writing side closed: the broker must close."""
    frame = fuzz.rng.choice(fuzz.templates)
    client = await fuzz.connect()
    try:
        await client.send_bytes(size_prefixed(frame)[: fuzz.rng.randrange(1, len(frame) + 4)])
        await client.shutdown_write()
        reply = await client.wait_closed(3.0)
        fuzz.outcomes[f"truncated:{reply.fate}"] += 1
        assert reply.closed, (
            f"truncated then half-closed: the broker left the connection {reply.fate} (seed {SEED})"
        )
    finally:
        await client.close()


async def attack_bad_size(fuzz: Fuzz) -> None:
    """A size prefix above socket.request.max.bytes, or negative: the broker must close at once."""
    if fuzz.rng.random() < 0.5:
        size = fuzz.rng.choice([MAX_REQUEST_BYTES + 1, fuzz.rng.randint(MAX_REQUEST_BYTES + 1, 2**31 - 1)])
        label = "oversized"
    else:
        size = fuzz.rng.choice([-1, -(2**31), fuzz.rng.randint(-(2**31), -1)])
        label = "negative"
    client = await fuzz.connect()
    try:
        await client.send_bytes(
            size.to_bytes(4, "big", signed=True) + fuzz.rng.randbytes(fuzz.rng.randrange(64))
        )
        reply = await client.wait_closed(3.0)
        fuzz.outcomes[f"{label}:{reply.fate}"] += 1
        assert reply.closed, f"{label} size {size}: the broker left the connection {reply.fate} (seed {SEED})"
    finally:
        await client.close()


async def attack_random_bytes(fuzz: Fuzz) -> None:
    client = await fuzz.connect()
    try:
        await client.send_bytes(fuzz.rng.randbytes(fuzz.rng.randint(1, 3000)))
        reply = await client.wait_closed(0.3)
        fuzz.outcomes[f"random:{reply.fate}"] += 1
    finally:
        await client.close()


async def attack_abandon(fuzz: Fuzz) -> None:
    """Connect, maybe start a frame, and walk away without closing: the connection stays open until the
    end of the run."""
    client = await fuzz.connect()
    frame = size_prefixed(fuzz.rng.choice(fuzz.templates))
    await client.send_bytes(frame[: fuzz.rng.randrange(0, len(frame))])
    fuzz.abandoned.append(client)
    fuzz.outcomes["abandoned"] += 1


ATTACKS = [
    (attack_mutated, 5),
    (attack_sampled, 3),
    (attack_truncated, 1),
    (attack_bad_size, 1),
    (attack_random_bytes, 1),
    (attack_abandon, 1),
]


async def fuzz_worker(fuzz: Fuzz) -> None:
    attacks, weights = zip(*ATTACKS, strict=True)
    for _ in range(ATTACKS_PER_WORKER):
        attack = fuzz.rng.choices(attacks, weights)[0]
        await attack(fuzz)


# ---- the tests ------------------------------------------------------------------------------------


def test_fuzzed_connections_leave_the_broker_and_acknowledged_records_intact(tmp_path):
    async def scenario():
        node, host, port = await started_node(
            tmp_path,
            **{"socket.request.max.bytes": str(MAX_REQUEST_BYTES), "auto.create.topics.enable": "false"},
        )
        address = (host, port)
        fuzzers = [Fuzz(address, random.Random(SEED * 1000 + i), templates()) for i in range(FUZZ_WORKERS)]
        try:
            async with await RawClient.connect(host, port) as admin:
                ledger_id = await create_topic(admin, LEDGER, 1)
                await create_topic(admin, FUZZ, 2)
            ledger = Ledger()
            fuzz_done, producer_done = asyncio.Event(), asyncio.Event()

            async def producer():
                try:
                    await produce_ledger(address, ledger, fuzz_done)
                finally:
                    producer_done.set()

            async def fuzzing():
                try:
                    async with asyncio.TaskGroup() as workers:
                        for f in fuzzers:
                            workers.create_task(fuzz_worker(f))
                finally:
                    fuzz_done.set()

            # A task group: the first failure cancels the others before the node stops.
            async with asyncio.TaskGroup() as group:
                group.create_task(fuzzing())
                group.create_task(producer())
                group.create_task(consume_ledger(address, ledger_id, ledger, producer_done))
            # Afterwards: the broker answers, and a fresh reader finds every acknowledged record.
            async with await RawClient.connect(host, port) as reader:
                versions = await reader.call(API_VERSIONS, 3, ApiVersionsRequest("after", "1"))
                assert versions.error_code == Errors.NONE
                offset = high_watermark = 0
                while offset < ledger.acknowledged:
                    offset, high_watermark = await read_ledger(reader, ledger_id, offset, 0)
                assert offset == high_watermark == ledger.acknowledged
            return ledger, sum((f.outcomes for f in fuzzers), Counter())
        finally:
            for f in fuzzers:
                for client in f.abandoned:
                    await client.close()
            await node.stop()

    ledger, outcomes = asyncio.run(asyncio.wait_for(scenario(), 50))
    assert ledger.batches >= MIN_LEDGER_BATCHES and ledger.fetches > 0
    assert sum(outcomes.values()) == FUZZ_WORKERS * ATTACKS_PER_WORKER
    # The run really reached each kind of bad input and each reaction.
    assert outcomes["mutated:closed"] and outcomes["mutated:answered"], outcomes
    assert outcomes["oversized:closed"] and outcomes["negative:closed"] and outcomes["truncated:closed"], (
        outcomes
    )


def test_a_frame_over_socket_request_max_bytes_closes_only_that_connection(tmp_path):
    # Kafka's NetworkReceive: a size above socket.request.max.bytes is InvalidReceiveException and the
    # Selector closes that channel; a size of exactly the maximum is read. Other connections, even
    # with requests in flight, carry on.
    limit = 2000

    def api_versions_frame(size: int) -> bytes:
        """A valid ApiVersions v3 request frame of exactly ``size`` bytes (without the size prefix)."""
        for name_length in range(size, 0, -1):
            body = ApiVersionsRequest(client_software_name="n" * name_length, client_software_version="1")
            frame = encode_request(API_VERSIONS, 3, 7, "limits", body)
            if len(frame) == size:
                return frame
        raise AssertionError(f"no ApiVersions frame of {size} bytes")

    async def scenario():
        node, host, port = await started_node(tmp_path, **{"socket.request.max.bytes": str(limit)})
        try:
            async with (
                await RawClient.connect(host, port) as bystander,
                await RawClient.connect(host, port) as at_limit,
                await RawClient.connect(host, port) as over_limit,
            ):
                first = await bystander.send(API_VERSIONS, 0, ApiVersionsRequest())
                await at_limit.send_bytes(size_prefixed(api_versions_frame(limit)))
                await over_limit.send_bytes(size_prefixed(api_versions_frame(limit + 1)))
                over = await over_limit.wait_closed(5)
                at = await at_limit.wait_closed(5)
                answered = await bystander.receive()
                again = await bystander.call(API_VERSIONS, 3, ApiVersionsRequest("still", "here"))
                return first, over, at, answered, again
        finally:
            await node.stop()

    first, over, at, answered, again = asyncio.run(asyncio.wait_for(scenario(), 30))
    assert over.closed
    assert at.answered  # exactly the limit is a legal size
    assert answered.correlation_id == first and answered.body.error_code == Errors.NONE
    assert again.error_code == Errors.NONE


def test_the_node_stops_promptly_while_a_client_keeps_sending(tmp_path):
    # Kafka's SocketServer.shutdown closes every channel whatever the clients are doing.
    attempts, allowed_s = 5, 1.0

    async def attempt(index: int) -> bool:
        # a short idle timeout bounds how long a connection can outlive a lost cancellation
        node, host, port = await started_node(tmp_path / str(index), **{"connections.max.idle.ms": "3000"})
        reader, writer = await asyncio.open_connection(host, port)
        frames = size_prefixed(encode_request(API_VERSIONS, 0, 1, "busy", ApiVersionsRequest())) * 4

        async def keep_sending():  # pipelined requests, answers read as they come
            while True:
                writer.write(frames)
                await writer.drain()
                if not await reader.read(65536):
                    return

        sender = asyncio.create_task(keep_sending())
        await asyncio.sleep(0.05)
        try:
            await asyncio.wait_for(node.stop(), allowed_s)
            return True
        except TimeoutError:
            return False
        finally:
            sender.cancel()
            await asyncio.gather(sender, return_exceptions=True)
            writer.transport.abort()
            await node.stop()  # with the client gone the connection ends and the stop completes

    async def scenario():
        return [await attempt(i) for i in range(attempts)]

    stopped = asyncio.run(asyncio.wait_for(scenario(), 30))
    assert all(stopped), (
        f"stop() took longer than {allowed_s} s in {stopped.count(False)} of {attempts} tries"
    )
