"""Readers beside the chaos workloads (``harness.workloads``), for what those do not write down: a
partition's high watermark next to its in-sync replicas' log end offsets, a consumer's polls one record
at a time, and a whole log read as one poll in fetches of one batch each. The planted-bug suite uses
them to put every anomaly the checkers know in front of them.

- ``record_watermarks``: per partition, the high watermark a consumer's Fetch answers, then each
  in-sync replica's log end offset (ListOffsets for the latest offset with replica id -2, Kafka's
  debugging replica id: a replica answers it for itself, not capped at the high watermark). Log end
  offsets only grow, so reading the high watermark first means an honest broker never shows it ahead.
- ``consume_assigned``: for each partition a consumer assigned it alone (no group), one record a poll
  and one batch a fetch, until it has been idle for a while: each poll is an ok operation.
- ``read_in_single_batches``: every partition from offset 0 to its high watermark, one batch a Fetch,
  all of it one poll per partition."""

from __future__ import annotations

import time

from kconform.codecs.messages import ListOffsetsRequest
from kconform.codecs.records import iter_batches

from ..checkers.history import History, Poll, Watermark
from ..client.errors import BrokerError
from ..client.network import NetworkClient
from ..client.requests import single_partition_fetch

__all__ = ["consume_assigned", "read_in_single_batches", "record_watermarks"]

_FETCH, _LIST_OFFSETS = 1, 2
_DEBUGGING_REPLICA_ID = -2  # ListOffsetsRequest.DEBUGGING_REPLICA_ID: any replica answers, uncapped
_LATEST = -1


async def _fetch(client: NetworkClient, topic: str, partition: int, offset: int, max_bytes: int):
    conn = await client.connection(client.metadata.leader_for(topic, partition))
    request = single_partition_fetch(topic, partition, offset, max_bytes=max_bytes)
    data = (
        (await conn.send(_FETCH, request, version=conn.version_for(_FETCH, cap=12)))
        .responses[0]
        .partitions[0]
    )
    if data.error_code:
        raise BrokerError(data.error_code, f"fetch of {topic}-{partition} at offset {offset}")
    return data


async def _log_end_offset(client: NetworkClient, node: int, topic: str, partition: int) -> int:
    conn = await client.connection(node)
    request = ListOffsetsRequest(
        replica_id=_DEBUGGING_REPLICA_ID,
        isolation_level=0,
        topics=[
            ListOffsetsRequest.ListOffsetsTopic(
                name=topic,
                partitions=[
                    ListOffsetsRequest.ListOffsetsPartition(partition_index=partition, timestamp=_LATEST)
                ],
            )
        ],
    )
    response = await conn.send(_LIST_OFFSETS, request, version=conn.version_for(_LIST_OFFSETS, floor=1))
    answer = response.topics[0].partitions[0]
    if answer.error_code:
        raise BrokerError(answer.error_code, f"log end offset of {topic}-{partition} on broker {node}")
    return answer.offset


async def record_watermarks(
    history: History,
    bootstrap: str,
    topic: str,
    partitions: int,
    *,
    process: int = 2000,
    timeout: float = 30.0,
) -> None:
    client = NetworkClient(bootstrap)
    try:
        await client.wait_for_topic(topic, timeout)
        for partition in range(partitions):
            high_watermark = (await _fetch(client, topic, partition, 0, 1)).high_watermark
            info = client.metadata.topics[topic].partitions[partition]
            ends = {node: await _log_end_offset(client, node, topic, partition) for node in info.isr}
            op = history.add(process, "info", [], time_ns=time.time_ns(), note="watermark")
            history.watermarks.append(Watermark(op.index, (topic, partition), high_watermark, ends))
    finally:
        await client.close()


async def consume_assigned(
    history: History,
    bootstrap: str,
    topic: str,
    partitions: int,
    *,
    process: int = 3000,
    idle_s: float = 0.5,
    timeout: float = 30.0,
    settings: dict | None = None,
) -> None:
    """Each partition in turn, by a consumer assigned it alone (process ``process`` + partition)."""
    from ..client.consumer import Consumer

    config = {
        "bootstrap.servers": bootstrap,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "max.poll.records": 1,
        "max.partition.fetch.bytes": 1,  # one batch a fetch (a fetch returns at least one)
        **(settings or {}),
    }
    deadline = time.monotonic() + timeout
    for partition in range(partitions):
        async with Consumer(config) as consumer:
            consumer.assign([(topic, partition)])
            last_read = time.monotonic()
            while time.monotonic() < deadline and time.monotonic() - last_read < idle_s:
                history.add(process + partition, "invoke", [], time_ns=time.time_ns())
                records = await consumer.poll(100)
                read = tuple((r.offset, bytes(r.value)) for r in records)
                history.add(
                    process + partition,
                    "ok",
                    [Poll({(topic, partition): read} if read else {})],
                    time_ns=time.time_ns(),
                )
                if read:
                    last_read = time.monotonic()


async def read_in_single_batches(
    history: History,
    bootstrap: str,
    topic: str,
    partitions: int,
    *,
    process: int = 4000,
    timeout: float = 30.0,
) -> None:
    client = NetworkClient(bootstrap)
    try:
        await client.wait_for_topic(topic, timeout)
        for partition in range(partitions):
            records: list[tuple[int, object]] = []
            offset, end = 0, None
            while end is None or offset < end:
                data = await _fetch(client, topic, partition, offset, 1)
                end = data.high_watermark
                batches = list(iter_batches(bytes(data.records or b"")))
                if not batches:
                    break
                for batch in batches:
                    offset = max(offset, batch.next_offset)
                    if not batch.is_control:
                        records += [(r.offset, bytes(r.value)) for r in batch.records if r.offset < end]
            history.add(process, "invoke", [])
            history.add(
                process, "ok", [Poll({(topic, partition): tuple(records)})], note="read in single batches"
            )
    finally:
        await client.close()
