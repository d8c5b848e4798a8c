"""The history a chaos workload records, in Jepsen's shape: every operation is an *invoke* by a process,
later completed as *ok* (it happened), *fail* (it did not happen) or *info* (unknown: a timeout).

An operation is a list of micro-operations, each a ``Send`` (value written to a partition, with the
offset the broker acknowledged once known) or a ``Poll`` (what one poll read, per partition, as
(offset, value) pairs in order). A transaction is one operation holding several. Values are unique per
history (the workload makes them so), which lets a read name the write it saw.

Bookkeeping beside the operations, each pointing at an op (type info, a ``note`` naming it) so it has a
place in the history's order: group ``Assignment``s, acknowledged ``Commit``s, leaders' ``Watermark``s and
``LeaderChange``s.

What a workload fills for the replication checks (``replication_checks``); all optional, so a history
without them stays valid and those checks stay quiet or coarser:

- ``Send.broker`` and ``Send.leader_epoch`` on an ok send: the broker the acknowledged ProduceRequest
  went to and the partition's leader epoch in the client's metadata when it was sent. With them a lost
  write is tied to the leader change that lost it (not just any change before the read that misses
  it), and two brokers acknowledging in one epoch show as split-brain.
- ``Poll.high_watermarks``: per partition, the high watermark the Fetch response showed. Each is held
  against the highest the consumer saw before and its highest offset read + 1 (a floor of the high
  watermark); without them hw-backwards stays quiet. A consumer that fetches from followers (KIP-392)
  sees their lagging high watermarks: note the switch as a "seek", or leave them out.
- ``LeaderChange`` with its bookkeeping op (note "leader change") whenever a client sees a partition's
  leader epoch move, ``unclean`` when the new leader was not in the ISR it had before. The chaos runner
  writes these from its cluster observer on replicated clusters.
- ``Op.note`` "seek", "reset" or "rebalance" on a poll that starts again from another position.
- ``BrokerView``: what one broker's Metadata said of a partition (leader, epoch, ISR), written when it
  changes: a broker acknowledging a write after it named another leader in a newer epoch is a stale
  leader; a replica the views keep in the ISR through a long ``ReplicationCut`` was never dropped.
- ``ReplicaRead``: after the faults, one replica's own log of a partition below its high watermark
  (Fetch v11+ answered by a follower): committed records are the same on every replica.
- ``ReplicationCut``: a stretch in which a follower could not fetch from a broker (its replication link
  cut, or its process down), with the ``replica.lag.time.max.ms`` the cluster ran with. The chaos runner
  writes these from its fault log."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

__all__ = [
    "FINAL_READ",
    "Assignment",
    "Commit",
    "History",
    "BrokerView",
    "LeaderChange",
    "Op",
    "Poll",
    "ReplicaRead",
    "ReplicationCut",
    "Send",
    "Watermark",
]

Partition = tuple[str, int]
FINAL_READ = "final read"  # the note on each partition's complete read once the faults were over


@dataclass(frozen=True, slots=True)
class Send:
    partition: Partition
    value: object
    offset: int | None = None  # known on ok
    broker: int | None = None  # the broker that acknowledged it, when known
    leader_epoch: int | None = None  # the partition's leader epoch it was acknowledged in, when known


@dataclass(frozen=True, slots=True)
class Poll:
    records: dict[Partition, tuple[tuple[int, object], ...]]  # per partition: (offset, value), in order
    high_watermarks: dict[Partition, int] = field(default_factory=dict)  # as the Fetch showed, if known


@dataclass(frozen=True, slots=True)
class Op:
    index: int
    process: int
    type: str  # invoke, ok, fail, info
    mops: tuple[Send | Poll, ...]
    time_ns: int = 0
    transactional: bool = False
    note: str = ""  # what the workload wants a reader to know ("rebalance", "seek", "restart")

    def sends(self) -> Iterator[Send]:
        return (m for m in self.mops if isinstance(m, Send))

    def polls(self) -> Iterator[Poll]:
        return (m for m in self.mops if isinstance(m, Poll))


@dataclass(frozen=True, slots=True)
class Assignment:
    """A group member's settled assignment in one generation (what it was told it owns)."""

    op: int
    group: str
    generation: int
    member: str
    partitions: frozenset[Partition]


@dataclass(frozen=True, slots=True)
class Commit:
    """An acknowledged offset commit (``note`` names a deliberate rewind: "seek", "reset")."""

    op: int
    group: str
    partition: Partition
    offset: int
    note: str = ""


@dataclass(frozen=True, slots=True)
class Watermark:
    """A leader's high watermark next to the log end offsets of its in-sync replicas."""

    op: int
    partition: Partition
    high_watermark: int
    isr_log_end_offsets: dict[int, int]


@dataclass(frozen=True, slots=True)
class LeaderChange:
    """A partition's leader epoch moved, as a client (or the cluster observer) saw it at op ``op``."""

    op: int
    partition: Partition
    leader: int  # -1: no leader
    epoch: int
    time_ns: int = 0
    unclean: bool | None = None  # elected from outside the ISR it had before (None: not known)


@dataclass(frozen=True, slots=True)
class BrokerView:
    """Broker ``broker``'s Metadata answer for ``partition`` from ``time_ns`` until its next view."""

    op: int
    partition: Partition
    broker: int
    leader: int
    epoch: int
    isr: tuple[int, ...]
    time_ns: int


@dataclass(frozen=True, slots=True)
class ReplicaRead:
    """Every record of ``partition`` below ``high_watermark`` in replica ``broker``'s own log."""

    op: int
    partition: Partition
    broker: int
    high_watermark: int
    records: tuple[tuple[int, object], ...]


@dataclass(frozen=True, slots=True)
class ReplicationCut:
    """Follower ``follower`` could not fetch from broker ``leader`` (-1: from any) in the stretch."""

    follower: int
    leader: int
    start_ns: int
    end_ns: int
    lag_time_max_ms: int  # the cluster's replica.lag.time.max.ms


@dataclass
class History:
    ops: list[Op] = field(default_factory=list)
    assignments: list[Assignment] = field(default_factory=list)
    commits: list[Commit] = field(default_factory=list)
    watermarks: list[Watermark] = field(default_factory=list)
    leader_changes: list[LeaderChange] = field(default_factory=list)
    broker_views: list[BrokerView] = field(default_factory=list)
    replica_reads: list[ReplicaRead] = field(default_factory=list)
    replication_cuts: list[ReplicationCut] = field(default_factory=list)

    def add(self, process: int, type: str, mops: Iterable[Send | Poll], **kw) -> Op:
        op = Op(len(self.ops), process, type, tuple(mops), **kw)
        self.ops.append(op)
        return op

    def completions(self) -> list[Op]:
        """Every ok, fail and info, in order (the invokes say only that something was asked)."""
        return [op for op in self.ops if op.type != "invoke"]

    def final_reads(self) -> dict[Partition, Op]:
        """Each partition's complete read the run ended with (the last, if several)."""
        return {
            partition: op
            for op in self.ops
            if op.type == "ok" and op.note == FINAL_READ
            for poll in op.polls()
            for partition in poll.records
        }

    def __len__(self) -> int:
        return len(self.ops)
