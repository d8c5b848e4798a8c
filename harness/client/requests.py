"""Ready-made requests the harness sends outside the consumer's own fetch path."""

from __future__ import annotations

from kconform.codecs.messages import FetchRequest

__all__ = ["single_partition_fetch"]


def single_partition_fetch(
    topic: str,
    partition: int,
    offset: int,
    *,
    read_committed: bool = False,
    max_wait_ms: int = 50,
    max_bytes: int = 1 << 22,
) -> FetchRequest:
    """A consumer's Fetch (no session, no leader epoch) of one partition from ``offset``, valid at every
    version up to 12 (topics named, not by id)."""
    part = FetchRequest.FetchPartition(
        partition=partition,
        fetch_offset=offset,
        current_leader_epoch=-1,
        log_start_offset=-1,
        partition_max_bytes=min(max_bytes, 1 << 20),
    )
    return FetchRequest(
        replica_id=-1,
        max_wait_ms=max_wait_ms,
        min_bytes=0,
        max_bytes=max_bytes,
        isolation_level=1 if read_committed else 0,
        session_id=0,
        session_epoch=-1,
        topics=[FetchRequest.FetchTopic(topic=topic, partitions=[part])],
    )
