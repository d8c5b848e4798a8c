"""A partition's role on this broker and, while it leads, what it knows of its followers and the ISR
change it has asked the controller for (Kafka's ``Partition`` leader state: ``partitionState``
committed or pending, ``remoteReplicasMap``, ``leaderEpochStartOffsetOpt``).

The role follows the metadata image (``apply``): a registration naming this broker leader at a new
leader epoch makes it leader (``makeLeader``), any other makes it a follower (``makeFollower``). The
ISR is the committed one (from the image, or earlier from the controller's AlterPartition answer);
while an expansion is pending, the maximal ISR includes the replica being added, so the high
watermark waits for it; a pending shrink keeps counting the replicas it removes until committed. One
ISR change is in flight at a time."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from ..cluster_metadata import PartitionInfo
from .follower_progress import FollowerProgress, after_fetch, may_join_isr, new_leader_view, out_of_sync

__all__ = ["Leadership", "Role", "IsrProposal"]


class Role(Enum):
    NONE = "none"  # not a replica, or not yet told
    LEADER = "leader"
    FOLLOWER = "follower"


@dataclass(frozen=True, slots=True)
class IsrProposal:
    """An AlterPartition to send: the ISR wanted, from the leader and partition epochs it knows."""

    isr: tuple[int, ...]
    leader_epoch: int
    partition_epoch: int


@dataclass(slots=True)
class Leadership:
    broker_id: int
    role: Role = Role.NONE
    leader: int = -1
    leader_epoch: int = -1
    partition_epoch: int = -1
    replicas: tuple[int, ...] = ()
    isr: tuple[int, ...] = ()
    pending: IsrProposal | None = None
    epoch_start_offset: int = 0
    followers: dict[int, FollowerProgress] = field(default_factory=dict)

    @property
    def is_leader(self) -> bool:
        return self.role is Role.LEADER

    @property
    def maximal_isr(self) -> tuple[int, ...]:
        if self.pending is None:
            return self.isr
        return self.isr + tuple(b for b in self.pending.isr if b not in self.isr)

    def apply(self, info: PartitionInfo, *, log_end_offset: int, now_ms: int) -> bool:
        """Take the image's registration. True when the role or leader epoch changed (the caller then
        records the epoch start or starts fetching)."""
        leads = info.leader == self.broker_id
        was_leader = self.role is Role.LEADER
        new_epoch = info.leader_epoch != self.leader_epoch
        changed = new_epoch or was_leader != leads or self.role is Role.NONE
        if info.leader_epoch < self.leader_epoch or info.partition_epoch < self.partition_epoch:
            # an older registration than the one acted on; the partition epoch may have moved ahead of
            # the image by an AlterPartition answer (makeLeader / makeFollower skip it)
            return False
        if info.partition_epoch > self.partition_epoch:  # also ends a pending change, accepted or not
            self.isr, self.partition_epoch = info.isr, info.partition_epoch
            self.pending = None
        self.replicas, self.leader, self.leader_epoch = info.replicas, info.leader, info.leader_epoch
        if leads and changed:
            self.role = Role.LEADER
            self.epoch_start_offset = log_end_offset
            self.followers = new_leader_view(
                [b for b in info.replicas if b != self.broker_id],
                info.isr,
                now_ms,
                kept=self.followers if was_leader else None,
                leader_end_offset=log_end_offset,
            )
        elif leads:
            for broker in info.replicas:  # a reassignment added replicas
                if broker != self.broker_id and broker not in self.followers:
                    self.followers[broker] = FollowerProgress(broker)
            for broker in list(self.followers):
                if broker not in info.replicas:
                    del self.followers[broker]
        else:
            self.role = Role.FOLLOWER if self.broker_id in info.replicas else Role.NONE
            self.followers = {}
            self.pending = None
        return changed

    def committed(self, isr: tuple[int, ...], leader_epoch: int, partition_epoch: int) -> None:
        """The controller accepted an ISR change (its AlterPartition answer). Ignored when metadata
        replaced the proposal meanwhile (nothing pending); an answer for another leader epoch or an
        older partition epoch leaves the change pending until metadata arrives
        (``Partition.submitAlterPartition``, ``handleAlterPartitionUpdate``)."""
        stale = leader_epoch != self.leader_epoch or partition_epoch < self.partition_epoch
        if self.pending is None or stale:
            return
        self.isr, self.partition_epoch = tuple(isr), partition_epoch
        self.pending = None

    def refused(self) -> None:
        self.pending = None

    def follower_fetched(
        self,
        broker_id: int,
        *,
        fetch_offset: int,
        log_start_offset: int,
        leader_end_offset: int,
        high_watermark: int,
        now_ms: int,
        broker_epoch: int,
        isr_eligible: bool,
    ) -> IsrProposal | None:
        """Record a follower's fetch; an expansion proposal when it may join the ISR now."""
        progress = self.followers.get(broker_id)
        if progress is None:
            return None
        progress = after_fetch(
            progress,
            fetch_offset=fetch_offset,
            log_start_offset=log_start_offset,
            leader_end_offset=leader_end_offset,
            now_ms=now_ms,
            broker_epoch=broker_epoch,
        )
        self.followers[broker_id] = progress
        if (
            self.pending is None
            and broker_id not in self.isr
            and isr_eligible
            and may_join_isr(progress, high_watermark, self.epoch_start_offset)
        ):
            return self._propose(self.isr + (broker_id,))
        return None

    def shrink(self, *, leader_end_offset: int, now_ms: int, lag_ms: int) -> IsrProposal | None:
        if not self.is_leader or self.pending is not None:
            return None
        lagging = out_of_sync(self.followers, self.isr, self.broker_id, leader_end_offset, now_ms, lag_ms)
        if not lagging:
            return None
        return self._propose(tuple(b for b in self.isr if b not in lagging))

    def _propose(self, isr: tuple[int, ...]) -> IsrProposal:
        self.pending = IsrProposal(isr, self.leader_epoch, self.partition_epoch)
        return self.pending
