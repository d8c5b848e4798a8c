"""Requests and records the rules build, at any version: topics carry both their name and their id, and
the version under test decides which goes on the wire (names until Produce v12 and Fetch v12, ids
after)."""

from __future__ import annotations

import time

from kconform.codecs.constants import ZERO_UUID
from kconform.codecs.messages import FetchRequest, ListOffsetsRequest, MetadataRequest, ProduceRequest
from kconform.codecs.records import Record, encode_batch, iter_batches

__all__ = [
    "EARLIEST",
    "LATEST",
    "MAX_TIMESTAMP",
    "batch",
    "fetch_request",
    "fetched_records",
    "list_offsets_request",
    "metadata_request",
    "now_ms",
    "produce_request",
]

PRODUCE, FETCH, LIST_OFFSETS, METADATA = 0, 1, 2, 3
EARLIEST, LATEST, MAX_TIMESTAMP = -2, -1, -3


def now_ms() -> int:
    return int(time.time() * 1000)


def batch(
    count: int = 3, *, timestamps: list[int] | None = None, key: bytes | None = b"k", size: int = 10, **kwargs
) -> bytes:
    """One magic 2 batch as a producer sends it (base offset 0); ``kwargs`` go to ``encode_batch``
    (producer id, epoch, base sequence, transactional, compression, ...)."""
    stamps = timestamps if timestamps is not None else [now_ms()] * count
    return encode_batch(
        [Record(i, ts, key, bytes([97 + i % 26]) * size) for i, ts in enumerate(stamps)], **kwargs
    )


def produce_request(
    topic: str,
    records: bytes | None,
    *,
    partition: int = 0,
    topic_id=None,
    acks: int = -1,
    timeout_ms: int = 5000,
    transactional_id: str | None = None,
) -> ProduceRequest:
    return ProduceRequest(
        transactional_id=transactional_id,
        acks=acks,
        timeout_ms=timeout_ms,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name=topic,
                topic_id=topic_id or ZERO_UUID,
                partition_data=[ProduceRequest.PartitionProduceData(index=partition, records=records)],
            )
        ],
    )


def fetch_request(
    topic: str,
    topic_id,
    offsets: dict[int, int],
    *,
    max_wait_ms: int = 0,
    min_bytes: int = 1,
    max_bytes: int = 1 << 20,
    partition_max_bytes: int = 1 << 20,
    isolation_level: int = 0,
    session_id: int = 0,
    session_epoch: int = -1,
    leader_epoch: int = -1,
) -> FetchRequest:
    """A sessionless (by default) consumer Fetch of ``{partition: offset}``."""
    partitions = [
        FetchRequest.FetchPartition(
            partition=index,
            current_leader_epoch=leader_epoch,
            fetch_offset=offset,
            log_start_offset=-1,
            partition_max_bytes=partition_max_bytes,
        )
        for index, offset in offsets.items()
    ]
    return FetchRequest(
        replica_id=-1,
        max_wait_ms=max_wait_ms,
        min_bytes=min_bytes,
        max_bytes=max_bytes,
        isolation_level=isolation_level,
        session_id=session_id,
        session_epoch=session_epoch,
        topics=[FetchRequest.FetchTopic(topic=topic, topic_id=topic_id or ZERO_UUID, partitions=partitions)]
        if partitions
        else [],
    )


def list_offsets_request(
    topic: str, timestamp: int, *, partition: int = 0, isolation_level: int = 0, leader_epoch: int = -1
) -> ListOffsetsRequest:
    return ListOffsetsRequest(
        replica_id=-1,
        isolation_level=isolation_level,
        topics=[
            ListOffsetsRequest.ListOffsetsTopic(
                name=topic,
                partitions=[
                    ListOffsetsRequest.ListOffsetsPartition(
                        partition_index=partition, timestamp=timestamp, current_leader_epoch=leader_epoch
                    )
                ],
            )
        ],
    )


def metadata_request(*names: str, auto_create: bool = False) -> MetadataRequest:
    """Metadata for ``names`` (all topics when none is given)."""
    return MetadataRequest(
        topics=[MetadataRequest.MetadataRequestTopic(name=n) for n in names] if names else None,
        allow_auto_topic_creation=auto_create,
    )


def fetched_records(partition_data) -> list[Record]:
    data = partition_data.records
    raw = data.read() if hasattr(data, "read") else bytes(data or b"")
    return [record for b in iter_batches(raw) for record in b.records]
