"""Chaos workloads: clients that do ordinary work through the reference client while faults hit the
links and nodes, and write down everything as a history (``checkers.history``) for the checkers.

- ``produce``: processes sending unique values with the given producer settings (acks, idempotence,
  retries); each send is invoked, then ok (with the acknowledged offset), fail (the client gave up for
  good) or info (the outcome is unknown: a timeout).
- ``transactions``: processes writing a few values per transaction to random partitions, committing
  or aborting; a committed transaction is ok, an aborted one fail.
- ``group_consume``: consumers in one group subscribed to a topic, polling and committing while members'
  links fail; each settled assignment (member, generation, partitions), each poll and each acknowledged
  commit is written down, a poll after a reassignment noted as such (it may go back to a committed offset).
- ``final_read``: after the faults end, every record of every partition read straight from the leaders,
  one poll per partition, so the checkers see the whole log (read_committed or not).
- ``replica_reads``: then each follower's own log below its high watermark, to hold against the
  leader's."""

from __future__ import annotations

import asyncio
import collections
import heapq
import random
import time
from collections.abc import Callable

from kconform.codecs import DecodeError
from kconform.codecs.records import iter_batches

from .checkers.history import Assignment, Commit, History, Poll, ReplicaRead, Send
from .client.errors import BrokerError, ClientError, DeliveryTimedOut, RequestTimedOut
from .client.network import NetworkClient
from .client.producer import Producer
from .client.requests import single_partition_fetch

__all__ = ["final_read", "group_consume", "produce", "replica_reads", "transactions"]

_UNKNOWN = (DeliveryTimedOut, RequestTimedOut, TimeoutError)
REPLICA_READER = 1001  # the process replica reads are written down as


async def produce(
    history: History,
    bootstrap: str,
    topic: str,
    partitions: int,
    *,
    settings: dict,
    processes: int = 2,
    seconds: float = 5.0,
    rate: float = 200.0,
    seed: int = 0,
    clock: Callable[[], float] = time.monotonic,
    stats: collections.Counter | None = None,
) -> None:
    """Send unique values for ``seconds`` at about ``rate`` a second in all; the producers' own counts
    (requests, retries, errors by name) are added to ``stats``."""
    rng = random.Random(seed)
    deadline = clock() + seconds

    async def worker(process: int) -> None:
        config = {"bootstrap.servers": bootstrap, "linger.ms": 2, **settings}
        async with Producer(config) as producer:
            n = 0
            pending: list[asyncio.Task] = []
            while clock() < deadline:
                value = f"p{process}-{n}".encode()
                partition = rng.randrange(partitions)
                n += 1
                history.add(process, "invoke", [Send((topic, partition), value)], time_ns=time.time_ns())
                # The record is handed over before the next is made, so the order of the invocations
                # is the order the producer was given them (sends waiting on one await in tasks of
                # their own, for the topic's metadata, may resume in any order); only the answers
                # are awaited side by side.
                try:
                    delivery = await producer.send(topic, value, partition=partition)
                except (ClientError, TimeoutError) as exc:
                    _record_unsettled(history, process, Send((topic, partition), value), exc)
                else:
                    pending.append(
                        asyncio.ensure_future(_one_send(history, delivery, process, topic, partition, value))
                    )
                await asyncio.sleep(processes / rate)
            await asyncio.gather(*pending)
            if stats is not None and producer.sender is not None:
                stats.update(producer.sender.stats)
                stats.update(producer.client.stats)

    await asyncio.gather(*(worker(p) for p in range(processes)))


async def _one_send(history: History, delivery, process: int, topic: str, partition: int, value):
    tp = (topic, partition)
    try:
        metadata = await delivery
    except (ClientError, TimeoutError) as exc:
        _record_unsettled(history, process, Send(tp, value), exc)
        return
    offset = metadata.offset if metadata.offset >= 0 else None  # acks=0: no offset comes back
    broker = metadata.broker if metadata.broker >= 0 else None
    epoch = metadata.leader_epoch if metadata.leader_epoch >= 0 else None
    history.add(process, "ok", [Send(tp, value, offset, broker, epoch)], time_ns=time.time_ns())


def _record_unsettled(history: History, process: int, send: Send, error: Exception) -> None:
    """A send that raised: "info" when it may still have been written (a timeout), else "fail"."""
    outcome = "info" if isinstance(error, _UNKNOWN) else "fail"
    history.add(process, outcome, [send], time_ns=time.time_ns())


async def transactions(
    history: History,
    bootstrap: str,
    topic: str,
    partitions: int,
    *,
    processes: int = 2,
    seconds: float = 5.0,
    per_transaction: int = 3,
    abort_ratio: float = 0.3,
    seed: int = 0,
    clock: Callable[[], float] = time.monotonic,
    settings: dict | None = None,
    stats: collections.Counter | None = None,
) -> None:
    rng = random.Random(seed)
    deadline = clock() + seconds

    async def worker(process: int) -> None:
        config = {
            "bootstrap.servers": bootstrap,
            "transactional.id": f"chaos-{seed}-{process}",
            "transaction.timeout.ms": 10_000,
            **(settings or {}),
        }
        async with Producer(config) as producer:
            try:
                await _transact(producer, process)
            finally:
                if stats is not None and producer.sender is not None:
                    stats.update(producer.sender.stats)
                    stats.update(producer.client.stats)

    async def _transact(producer: Producer, process: int) -> None:
        await producer.init_transactions()
        n = 0
        while clock() < deadline:
            sends = []
            for _ in range(per_transaction):
                sends.append(((topic, rng.randrange(partitions)), f"t{process}-{n}".encode()))
                n += 1
            history.add(
                process,
                "invoke",
                [Send(tp, v) for tp, v in sends],
                transactional=True,
                time_ns=time.time_ns(),
            )
            abort = rng.random() < abort_ratio
            try:
                producer.begin_transaction()
                futures = [await producer.send(tp[0], v, partition=tp[1]) for tp, v in sends]
                if abort:
                    await producer.flush()
                    await producer.abort_transaction()
                    history.add(
                        process,
                        "fail",
                        [Send(tp, v) for tp, v in sends],
                        transactional=True,
                        time_ns=time.time_ns(),
                    )
                    continue
                await producer.commit_transaction()
                offsets = [(await f).offset for f in futures]
                history.add(
                    process,
                    "ok",
                    [Send(tp, v, o) for (tp, v), o in zip(sends, offsets, strict=True)],
                    transactional=True,
                    time_ns=time.time_ns(),
                )
            except ClientError as exc:
                history.add(
                    process,
                    "info",
                    [Send(tp, v) for tp, v in sends],
                    transactional=True,
                    time_ns=time.time_ns(),
                    note=str(exc)[:80],
                )
                try:
                    await producer.abort_transaction()
                except ClientError:
                    return  # the producer is fenced or failed: this process stops

    await asyncio.gather(*(worker(p) for p in range(processes)))


async def group_consume(
    history: History,
    bootstrap: str,
    topic: str,
    *,
    group: str,
    members: int = 3,
    seconds: float = 5.0,
    settings: dict | None = None,
    first_process: int = 100,
    clock: Callable[[], float] = time.monotonic,
    stats: collections.Counter | None = None,
) -> None:
    """``members`` consumers of ``group`` poll ``topic`` for ``seconds``, committing after each poll;
    their network counters (reconnects, connect failures) are added to ``stats``."""
    from .client.consumer import Consumer, ConsumerRebalanceListener

    deadline = clock() + seconds
    config = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "heartbeat.interval.ms": 300,
        "session.timeout.ms": 6000,
        "request.timeout.ms": 3000,
        "max.poll.records": 100,
        **(settings or {}),
    }
    if str(config.get("group.protocol", "classic")).lower() == "consumer":
        # KIP-848: the broker sets the session and heartbeat (group.consumer.*), not the member
        for classic in ("heartbeat.interval.ms", "session.timeout.ms"):
            config.pop(classic)

    class Recorder(ConsumerRebalanceListener):
        def __init__(self, consumer_ref: list, process: int) -> None:
            self.consumer_ref, self.process, self.moved = consumer_ref, process, True

        def on_partitions_assigned(self, partitions) -> None:
            consumer = self.consumer_ref[0]
            generation, member = consumer.group.commit_generation
            op = history.add(self.process, "info", [], time_ns=time.time_ns(), note="assignment")
            history.assignments.append(
                Assignment(op.index, group, generation, member, frozenset(consumer.assignment()))
            )
            self.moved = True

        def on_partitions_revoked(self, partitions) -> None:
            self.moved = True

        def on_partitions_lost(self, partitions) -> None:
            self.moved = True

    async def member(process: int) -> None:
        ref: list = []
        listener = Recorder(ref, process)
        consumer = Consumer(config, rebalance_listener=listener)
        ref.append(consumer)
        await consumer.start()
        try:
            consumer.subscribe([topic])
            while clock() < deadline:
                history.add(process, "invoke", [], time_ns=time.time_ns())
                try:
                    records = await consumer.poll(200)
                except (ClientError, DecodeError) as exc:  # DecodeError: a broker's malformed answer
                    history.add(process, "fail", [], time_ns=time.time_ns(), note=str(exc)[:80])
                    continue
                read: dict = {}
                for r in records:
                    read.setdefault((r.topic, r.partition), []).append((r.offset, bytes(r.value)))
                note = "rebalance" if listener.moved else ""
                listener.moved = False
                history.add(
                    process,
                    "ok",
                    [Poll({tp: tuple(rs) for tp, rs in read.items()}, high_watermarks(consumer))],
                    time_ns=time.time_ns(),
                    note=note,
                )
                if read:
                    positions = {tp: rs[-1][0] + 1 for tp, rs in read.items()}
                    try:
                        await consumer.commit(positions)
                    except ClientError:
                        continue  # refused (a rebalance, a lost link): the next owner re-reads
                    op = history.add(process, "info", [], time_ns=time.time_ns(), note="commit")
                    history.commits += [Commit(op.index, group, tp, o) for tp, o in positions.items()]
        finally:
            if stats is not None:
                stats.update(consumer.client.stats)
            try:
                await asyncio.wait_for(consumer.close(), 10)
            except (ClientError, TimeoutError):
                pass

    await asyncio.gather(*(member(first_process + m) for m in range(members)))


def high_watermarks(consumer) -> dict:
    """Each assigned partition's high watermark as the consumer's last Fetch answered it."""
    assigned = consumer.subscriptions.assignment
    return {tuple(tp): state.high_watermark for tp, state in assigned.items() if state.high_watermark >= 0}


async def final_read(
    history: History,
    bootstrap: str,
    topic: str,
    partitions: int,
    *,
    read_committed: bool = True,
    process: int = 1000,
    timeout: float = 30.0,
) -> None:
    """Every record of each partition, from offset 0 to the end, one poll per partition."""
    client = NetworkClient(bootstrap)
    try:
        await client.wait_for_topic(topic, timeout)
        for partition in range(partitions):

            async def leader_connection(partition=partition):
                return await client.connection(client.metadata.leader_for(topic, partition))

            records, _ = await _read_log(leader_connection, topic, partition, read_committed=read_committed)
            history.add(process, "invoke", [])
            history.add(process, "ok", [Poll({(topic, partition): tuple(records)})], note="final read")
    finally:
        await client.close()


async def replica_reads(
    history: History, bootstrap: str, topic: str, partitions: int, *, timeout: float = 30.0
) -> None:
    """Each follower's own log of each partition below its high watermark (Fetch v11+ without a rack:
    a follower answers consumers from its log, as Kafka's ReplicaManager does once the request carries
    client metadata), written down as ``ReplicaRead``s. A replica that cannot answer is left out."""
    client = NetworkClient(bootstrap)
    try:
        await client.wait_for_topic(topic, timeout)
        for partition in range(partitions):
            info = client.metadata.topics[topic].partitions[partition]
            for broker in info.replicas:
                if broker == info.leader:
                    continue

                async def replica_connection(broker=broker):
                    return await client.connection(broker)

                try:
                    records, high_watermark = await _read_log(
                        replica_connection, topic, partition, read_committed=False, floor=11
                    )
                except (ClientError, DecodeError, OSError):
                    continue  # down, or answering nothing a consumer may read
                op = history.add(REPLICA_READER, "info", [], time_ns=time.time_ns(), note="replica read")
                history.replica_reads.append(
                    ReplicaRead(op.index, (topic, partition), broker, high_watermark, tuple(records))
                )
    finally:
        await client.close()


async def _read_log(
    connect, topic: str, partition: int, *, read_committed: bool, floor: int | None = None
) -> tuple[list[tuple[int, object]], int]:
    """Every data record of one partition from offset 0 to the end the broker serves (its high
    watermark, or last stable offset read_committed), and that end."""
    records: list[tuple[int, object]] = []
    offset = 0
    while True:
        conn = await connect()
        request = single_partition_fetch(topic, partition, offset, read_committed=read_committed)
        version = conn.version_for(1, cap=12, floor=floor)
        data = (await conn.send(1, request, version=version)).responses[0].partitions[0]
        if data.error_code:
            raise BrokerError(data.error_code, f"a complete read of {topic}-{partition}")
        # Kafka's read_committed rule (FetchCollector): a producer's transactional batches are
        # skipped from the first offset of one of its aborted transactions to its abort marker.
        pending = sorted((a.first_offset, a.producer_id) for a in data.aborted_transactions or [])
        aborting: set[int] = set()
        end = data.high_watermark
        if read_committed and data.last_stable_offset >= 0:
            end = data.last_stable_offset
        got_any = False
        for batch in iter_batches(bytes(data.records or b"")):
            got_any = True
            offset = max(offset, batch.next_offset)
            while pending and pending[0][0] <= batch.last_offset:
                aborting.add(heapq.heappop(pending)[1])
            if batch.is_control:
                aborting.discard(batch.producer_id)
                continue
            if read_committed and batch.is_transactional and batch.producer_id in aborting:
                continue
            records += [(r.offset, bytes(r.value)) for r in batch.records if r.offset < end]
        if not got_any or offset >= end:
            return records, end
