"""One partition's next registration, as Kafka's ``PartitionChangeBuilder.build`` decides it (without
eligible leader replicas): given a target ISR and replica list and which brokers may lead, finish a
reassignment once every target replica is in sync, elect a leader, and write the difference as a
``PartitionChangeRecord``, or nothing when nothing changes.

Steps, in Kafka's order:

1. ``completeReassignmentIfNeeded``: with a reassignment in progress, drop the removing replicas from
   the target ISR and replicas; if both stay non-empty and every remaining replica is in the ISR, that
   is the new assignment and the adding/removing lists empty.
2. ``electLeader``: a valid leader is in the target ISR and may lead. PREFERRED takes the first target
   replica if valid, else keeps the current leader if valid, else the next valid replica in replica
   order. ONLINE and UNCLEAN keep the current leader if valid, else take the first valid replica in
   replica order; UNCLEAN (the caller's choice when the topic's ``unclean.leader.election.enable``
   holds, here ``unclean_allowed``) then takes the first replica that may lead, out of the ISR, sets
   the ISR to it alone and marks it RECOVERING. Otherwise the partition has no leader (-1).
3. ``triggerLeaderEpochBumpForReplicaReassignmentIfNeeded``: when the leader is not changing but a
   replica leaves the replica list, the record names the current leader anyway, so the leader epoch
   moves and the removed replica's fetches are fenced.
4. The ISR is written when it changed and is not empty: the last member of an ISR is never removed, so
   a leaderless partition keeps it and can elect it cleanly when it returns.
5. Replicas (when non-empty), adding, removing and the target leader recovery state, when changed.

A named leader, even unchanged, bumps the leader epoch (``PartitionRegistration.merge``). An ISR change
alone moves only the partition epoch: ``triggerLeaderEpochBumpForIsrShrinkIfNeeded`` does nothing from
metadata version 3.6 (``MetadataVersion.isLeaderEpochBumpRequiredOnIsrShrink``), the versions this
cluster speaks."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from uuid import UUID

from kconform.codecs.metadata_records import PartitionChangeRecord

from ..cluster_metadata import NO_LEADER, NO_LEADER_CHANGE, LeaderRecoveryState, PartitionInfo

__all__ = ["Election", "PartitionChange", "build_partition_change"]


class Election(Enum):
    PREFERRED = "preferred"
    ONLINE = "online"  # keep a valid leader, else elect from the ISR
    UNCLEAN = "unclean"


@dataclass(frozen=True, slots=True)
class PartitionChange:
    """The inputs of one change. ``may_lead(broker)``: Kafka's ``isAcceptableLeader`` (registered,
    unfenced, not shutting down, unless the caller says otherwise). ``unclean_allowed``: the topic's
    unclean.leader.election.enable, which makes an ONLINE election UNCLEAN (never a PREFERRED one).
    ``target_leader_recovery_state``: None keeps the partition's."""

    topic_id: UUID
    partition: PartitionInfo
    may_lead: Callable[[int], bool]
    target_isr: Sequence[int] | None = None
    target_replicas: Sequence[int] | None = None
    target_adding: Sequence[int] | None = None
    target_removing: Sequence[int] | None = None
    election: Election = Election.ONLINE
    unclean_allowed: bool = False
    target_leader_recovery_state: int | None = None


def _elect(change: PartitionChange, replicas: Sequence[int], isr: Sequence[int]) -> tuple[int, bool]:
    """(leader, unclean) per ``PartitionChangeBuilder.electPreferredLeader`` / ``electAnyLeader``."""
    current = change.partition.leader

    def valid(broker: int) -> bool:  # isValidNewLeader
        return broker in isr and change.may_lead(broker)

    if change.election is Election.PREFERRED:
        if replicas and valid(replicas[0]):
            return replicas[0], False
        if valid(current):
            return current, False
        return next((b for b in replicas[1:] if valid(b)), NO_LEADER), False
    if valid(current):
        return current, False
    for broker in replicas:
        if valid(broker):
            return broker, False
    if change.election is Election.UNCLEAN or change.unclean_allowed:
        for broker in replicas:
            if change.may_lead(broker):
                return broker, True
    return NO_LEADER, False


def _complete_reassignment(isr, replicas, adding, removing):
    """``PartitionReassignmentReplicas.maybeCompleteReassignment``: the completed (isr, replicas), or
    None while the reassignment must go on."""
    if not adding and not removing:
        return None
    isr = [r for r in isr if r not in removing]
    replicas = [r for r in replicas if r not in removing]
    if removing and (not isr or not replicas):
        return None
    return (isr, replicas) if all(r in isr for r in replicas) else None


def build_partition_change(change: PartitionChange) -> PartitionChangeRecord | None:
    partition = change.partition
    replicas = list(partition.replicas if change.target_replicas is None else change.target_replicas)
    isr = list(partition.isr if change.target_isr is None else change.target_isr)
    adding = list(partition.adding_replicas if change.target_adding is None else change.target_adding)
    removing = list(partition.removing_replicas if change.target_removing is None else change.target_removing)
    completed = _complete_reassignment(isr, replicas, adding, removing)
    if completed is not None:
        (isr, replicas), adding, removing = completed, [], []

    record = PartitionChangeRecord(partition_id=partition.index, topic_id=change.topic_id)
    leader, unclean = _elect(change, replicas, isr)
    if leader != partition.leader:
        record.leader = leader
        if unclean:  # data may be lost: the new leader alone is in sync
            record.isr = [leader]
            if partition.leader_recovery_state != LeaderRecoveryState.RECOVERING:
                record.leader_recovery_state = LeaderRecoveryState.RECOVERING
    if record.leader == NO_LEADER_CHANGE and not set(partition.replicas) <= set(replicas):
        record.leader = partition.leader  # a replica was removed: fence it with a new leader epoch
    if record.isr is None and isr and tuple(isr) != partition.isr:
        record.isr = isr
    if replicas and tuple(replicas) != partition.replicas:
        record.replicas = replicas
    if tuple(removing) != partition.removing_replicas:
        record.removing_replicas = removing
    if tuple(adding) != partition.adding_replicas:
        record.adding_replicas = adding
    target_recovery = change.target_leader_recovery_state
    if target_recovery is not None and target_recovery != partition.leader_recovery_state:
        record.leader_recovery_state = target_recovery
    return None if _is_no_op(record) else record


def _is_no_op(record: PartitionChangeRecord) -> bool:
    """``PartitionChangeBuilder.changeRecordIsNoOp``."""
    return (
        record.leader == NO_LEADER_CHANGE
        and record.isr is None
        and record.replicas is None
        and record.adding_replicas is None
        and record.removing_replicas is None
        and record.leader_recovery_state == LeaderRecoveryState.NO_CHANGE
    )
