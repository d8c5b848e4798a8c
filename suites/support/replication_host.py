"""A broker for one ``Partition`` without a network, for the replication suites
(``reference_broker/replication/``): ``FakeHost`` is a ``partition.PartitionHost`` with a manual clock,
a real purgatory, the registration it was last given and replication controls that record the ISR
changes asked for instead of sending them. ``replica`` opens a partition on a real ``PartitionLog``;
``replicate_once`` is one round of a follower's fetcher against a leader, as ``ReplicaFetcher`` does it
(``position`` → ``serve_follower_fetch`` → ``truncate_to_divergence`` or ``append_fetched``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kconform.codecs.records import Record, encode_batch
from kconform.reference_broker.clock import ManualClock
from kconform.reference_broker.cluster_metadata import PartitionInfo
from kconform.reference_broker.partition import Partition
from kconform.reference_broker.purgatory import Purgatory
from kconform.reference_broker.replication.follower_log import (
    append_fetched,
    position,
    truncate_to_divergence,
)
from kconform.reference_broker.replication.leadership import IsrProposal
from kconform.reference_broker.replication.serving import FollowerRead, serve_follower_fetch
from kconform.reference_broker.storage import PartitionLog

__all__ = [
    "BROKER_EPOCH",
    "LAG_MS",
    "START_MS",
    "TOPIC",
    "FakeHost",
    "FakeReplication",
    "apply",
    "batch",
    "log_bytes",
    "registration",
    "replica",
    "replicate_once",
]

START_MS = 1_700_000_000_000
LAG_MS = 30_000  # replica.lag.time.max.ms
BROKER_EPOCH = 100  # every broker's registered epoch unless a test says otherwise
TOPIC = "orders"


@dataclass
class FakeReplication:
    """``partition.ReplicationControl``: brokers are registered at ``BROKER_EPOCH`` (or the epoch in
    ``broker_epochs``) and unfenced unless in ``fenced``; AlterPartition proposals pile up in
    ``proposals`` for the test to answer."""

    lag_ms: int = LAG_MS
    fenced: set[int] = field(default_factory=set)
    broker_epochs: dict[int, int] = field(default_factory=dict)
    proposals: list[IsrProposal] = field(default_factory=list)

    def isr_eligible(self, broker_id: int, broker_epoch: int = -1) -> bool:
        if broker_id in self.fenced:
            return False
        return broker_epoch == -1 or broker_epoch == self.broker_epochs.get(broker_id, BROKER_EPOCH)

    def alive_broker_epoch(self, broker_id: int) -> int:
        return -1 if broker_id in self.fenced else self.broker_epochs.get(broker_id, BROKER_EPOCH)

    def propose_isr(self, partition: Partition, proposal: IsrProposal) -> None:
        self.proposals.append(proposal)


@dataclass
class _Topic:
    partitions: tuple[PartitionInfo, ...]


class FakeHost:
    def __init__(self, node_id: int, clock: ManualClock | None = None) -> None:
        self.node_id = node_id
        self.clock = clock or ManualClock(START_MS)
        self.purgatory = Purgatory()
        self.replication = FakeReplication()
        self.topics: dict[str, _Topic] = {}


def registration(
    leader: int, replicas: tuple[int, ...], isr: tuple[int, ...], leader_epoch: int, partition_epoch: int
) -> PartitionInfo:
    return PartitionInfo(
        index=0,
        replicas=replicas,
        isr=isr,
        leader=leader,
        leader_epoch=leader_epoch,
        partition_epoch=partition_epoch,
    )


def replica(
    directory: Path, node_id: int, *, min_isr: int = 1, clock: ManualClock | None = None
) -> tuple[Partition, FakeHost]:
    """Broker ``node_id``'s replica of ``orders-0``, its log under ``directory/broker-<id>``."""
    host = FakeHost(node_id, clock)
    log = PartitionLog.open(directory / f"broker-{node_id}" / f"{TOPIC}-0", clock=host.clock.now_ms)
    partition = Partition(host, TOPIC, 0, log, {"min.insync.replicas": str(min_isr)})
    return partition, host


def apply(partition: Partition, host: FakeHost, info: PartitionInfo) -> bool:
    """The host's image now holds ``info``, and the partition takes it up (``makeLeader`` /
    ``makeFollower``)."""
    host.topics[TOPIC] = _Topic((info,))
    return partition.apply_registration(info)


def batch(*values: str, timestamp: int = START_MS) -> bytes:
    """One magic 2 batch as a producer sends it (base offset 0, no producer id)."""
    return encode_batch([Record(i, timestamp, None, v.encode()) for i, v in enumerate(values)])


def replicate_once(
    leader: Partition, follower: Partition, *, replica_epoch: int = BROKER_EPOCH, max_bytes: int = 1 << 20
) -> FollowerRead:
    """One fetch of ``follower`` from ``leader`` and what the follower makes of the answer."""
    at = position(follower)
    read = serve_follower_fetch(
        leader,
        replica_id=follower.leadership.broker_id,
        replica_epoch=replica_epoch,
        fetch_offset=at.fetch_offset,
        log_start_offset=at.log_start_offset,
        last_fetched_epoch=at.last_fetched_epoch,
        current_leader_epoch=at.current_leader_epoch,
        max_bytes=max_bytes,
    )
    if read.diverging_epoch is not None:
        truncate_to_divergence(follower, *read.diverging_epoch)
    else:
        append_fetched(
            follower,
            read.records,
            leader_epoch=at.current_leader_epoch,
            high_watermark=read.high_watermark,
            log_start_offset=read.log_start_offset,
        )
    return read


def log_bytes(partition: Partition) -> bytes:
    """Every batch the partition's log holds, as stored."""
    log = partition.log
    if log.log_end_offset == log.log_start_offset:
        return b""
    return log.read(log.log_start_offset, 1 << 30).region.read()
