"""Kafka's replication promises, each a pure check of a history: what a consumer read never vanishes, the
high watermark a consumer sees never goes back within a leader epoch, and one partition has one leader
per leader epoch.

- vanished-read: a value a consumer read is not in the final complete read of its partition. Consumers
  read only below the high watermark, which every in-sync replica has, so only an unclean election
  (a leader from outside the ISR) may drop it.
- hw-backwards: a Fetch showed a consumer a high watermark below one it saw before (or below what it
  had already read, a floor of the high watermark). Not counted across a recorded leader change: a new
  leader's high watermark may lag its predecessor's until its followers fetch (KIP-207 makes ListOffsets
  answer OFFSET_NOT_AVAILABLE then; Fetch has no such guard). Needs ``Poll.high_watermarks``; a consumer
  reading lower offsets than before is nonmonotonic-poll's finding, not this one's.
- split-brain: two brokers acknowledged writes for, or were seen leading, one partition in one leader
  epoch. Needs ``Send.broker`` and ``Send.leader_epoch``, or ``LeaderChange`` records.
- stale-leader-write: a broker acknowledged a write routed to it in a leader epoch when its own Metadata
  had named another leader in a newer epoch for a while (``OBSERVER_LAG_NS``) and never itself since: a
  broker acts on the metadata it serves (``ReplicaManager.applyDelta`` makes it a follower, whose
  appends answer NOT_LEADER_OR_FOLLOWER). Needs ``Send.broker``, ``Send.leader_epoch`` and
  ``BrokerView`` records.
- replica-divergence: a replica holds, below its own high watermark, a record other than the one the
  leader's complete read has at that offset. Records below a high watermark are on every in-sync
  replica, and a follower truncates to its leader's log before fetching on (truncation by leader epoch,
  KIP-101/KIP-279), so only an unclean election leaves different committed records behind. Needs
  ``ReplicaRead`` records.
- lagging-replica-in-isr: a follower stayed in a partition's ISR, as every broker's Metadata showed it,
  while it could not fetch from the leader for well over ``replica.lag.time.max.ms`` (the leader drops
  such a follower, ``Partition.maybeShrinkIsr``; the controller drops a fenced broker). Needs
  ``ReplicationCut`` and ``BrokerView`` records.

Lost acknowledged writes are classified by the leader changes between acknowledgement and read in
``checks`` (lost-write, lost-write-leader-change, lost-write-unclean); an offset a new leader gave a
second value is that loss or a vanished read, and reported as such."""

from __future__ import annotations

import bisect
from collections import defaultdict

from .checks import Finding
from .failover import OBSERVER_LAG_NS, Failovers, show_change
from .history import FINAL_READ, BrokerView, History, Partition

__all__ = [
    "REPLICATION_CHECKS",
    "hw_backwards",
    "lagging_replicas_in_isr",
    "replica_divergence",
    "split_brain",
    "stale_leader_writes",
    "vanished_reads",
]

# How long past replica.lag.time.max.ms a cut-off follower may still show in the ISR: the leader looks
# every half lag time (ReplicaManager's isr-expiration task), then the controller commits the shrink and
# the brokers' metadata and the observer's sampling follow.
ISR_SHRINK_GRACE_NS = 3_000_000_000


def vanished_reads(history: History) -> list[Finding]:
    final = history.final_reads()
    kept = {p: {v: o for poll in op.polls() for o, v in poll.records.get(p, ())} for p, op in final.items()}
    # A value whose write failed, or whose transaction's outcome is unknown, was read uncommitted: G1a's
    # business if anything's, not a vanished read.
    uncommitted = {
        s.value
        for op in history.ops
        if op.type == "fail" or (op.type == "info" and op.transactional)
        for s in op.sends()
    }
    failovers = Failovers(history)
    out, reported = [], set()
    for op in history.ops:
        if op.type != "ok" or op.note == FINAL_READ:
            continue
        for poll in op.polls():
            for partition, records in poll.records.items():
                last = final.get(partition)
                if last is None or last.index < op.index:
                    continue
                for offset, value in records:
                    if value in kept[partition] or value in uncommitted or (partition, value) in reported:
                        continue
                    reported.add((partition, value))
                    changes = failovers.explaining(partition, last.index, after_op=op.index)
                    detail = f"{value!r} read at {partition} offset {offset}, not in the final read"
                    if changes:
                        detail += f"; gone after {show_change(changes[0])}"
                    else:
                        detail += "; no leader change recorded in between"
                    taken = [v for v, o in kept[partition].items() if o == offset]
                    if taken:
                        detail += f"; offset {offset} now holds {taken[0]!r}"
                    ops = {op.index, last.index, *(c.op for c in changes[:1])}
                    out.append(Finding("vanished-read", tuple(sorted(ops)), detail))
    return out


def hw_backwards(history: History) -> list[Finding]:
    """Per consumer (process) and partition, across its polls; a note on a poll (seek, reset,
    rebalance) starts the consumer's expectations afresh."""
    failovers = Failovers(history)
    # (process, partition) -> the highest high watermark it may assume, the op that showed it, and how
    floor: dict[tuple, tuple[int, int, str]] = {}
    out = []
    for op in history.ops:
        if op.type != "ok":
            continue
        polls = list(op.polls())
        if op.note and polls:
            floor = {k: v for k, v in floor.items() if k[0] != op.process}
        for poll in polls:
            for partition in sorted(poll.records.keys() | poll.high_watermarks.keys()):
                key = (op.process, partition)
                hw = poll.high_watermarks.get(partition)
                before = floor.get(key)
                if hw is not None and before is not None and hw < before[0]:
                    if not failovers.between(partition, before[1], op):
                        out.append(
                            Finding(
                                "hw-backwards",
                                (before[1], op.index),
                                f"{partition}: high watermark {hw} for process {op.process}, which had "
                                f"seen {before[2]}, with no leader change in between",
                            )
                        )
                    before = floor[key] = (hw, op.index, f"high watermark {hw}")  # one drop, one finding
                records = poll.records.get(partition, ())
                shown = [(hw, f"high watermark {hw}")] if hw is not None else []
                if records:
                    top = max(o for o, _ in records)
                    shown.append((top + 1, f"records up to offset {top}"))
                for value, what in shown:
                    if before is None or value > before[0]:
                        before = floor[key] = (value, op.index, what)
    return out


def split_brain(history: History) -> list[Finding]:
    """Two brokers for one partition and leader epoch, by acknowledgements and by leader changes seen."""
    claims: dict[tuple, dict[int, int]] = defaultdict(dict)  # (partition, epoch) -> broker -> first op
    for op in history.ops:
        if op.type == "ok":
            for send in op.sends():
                if send.broker is not None and send.leader_epoch is not None:
                    claims[(send.partition, send.leader_epoch)].setdefault(send.broker, op.index)
    for change in history.leader_changes:
        if change.leader >= 0:
            claims[(change.partition, change.epoch)].setdefault(change.leader, change.op)
    out = []
    for (partition, epoch), brokers in claims.items():
        if len(brokers) > 1:
            out.append(
                Finding(
                    "split-brain",
                    tuple(sorted(brokers.values())),
                    f"{partition} leader epoch {epoch}: brokers {sorted(brokers)} each acknowledged writes "
                    "or were seen leading",
                )
            )
    return out


def stale_leader_writes(history: History) -> list[Finding]:
    """Acknowledgements from a broker that had itself named a newer leader, one finding per write."""
    views: dict[tuple[int, Partition], list[BrokerView]] = defaultdict(list)
    for view in sorted(history.broker_views, key=lambda v: v.time_ns):
        views[(view.broker, view.partition)].append(view)
    times = {key: [v.time_ns for v in seen] for key, seen in views.items()}
    out = []
    for op in history.ops:
        if op.type != "ok" or not op.time_ns:
            continue
        for send in op.sends():
            if send.broker is None or send.leader_epoch is None:
                continue
            key = (send.broker, send.partition)
            seen = views.get(key)
            if not seen:
                continue
            known = bisect.bisect_right(times[key], op.time_ns - OBSERVER_LAG_NS) - 1
            if known < 0:
                continue
            view = seen[known]
            if view.leader == send.broker or view.epoch <= send.leader_epoch:
                continue
            # it may have led again since, seen by the observer a little after the write
            later = bisect.bisect_right(times[key], op.time_ns + OBSERVER_LAG_NS)
            if any(v.leader == send.broker for v in seen[known + 1 : later]):
                continue
            topic, number = send.partition
            out.append(
                Finding(
                    "stale-leader-write",
                    (view.op, op.index),
                    f"{send.value!r} acknowledged by broker {send.broker} for {topic}-{number} in leader "
                    f"epoch {send.leader_epoch}, after broker {send.broker} itself named broker "
                    f"{view.leader} leader in epoch {view.epoch}",
                )
            )
    return out


def replica_divergence(history: History) -> list[Finding]:
    """Each offset at which a replica's committed record differs from the leader's complete read."""
    final = history.final_reads()
    leader_logs = {
        p: dict(record for poll in op.polls() for record in poll.records.get(p, ()))
        for p, op in final.items()
    }
    out = []
    for read in history.replica_reads:
        leader_log = leader_logs.get(read.partition)
        if leader_log is None:
            continue
        topic, number = read.partition
        for offset, value in read.records:
            theirs = leader_log.get(offset, value)
            if offset < read.high_watermark and theirs != value:
                out.append(
                    Finding(
                        "replica-divergence",
                        tuple(sorted((read.op, final[read.partition].index))),
                        f"{topic}-{number} offset {offset}: broker {read.broker} holds {value!r} below its "
                        f"high watermark {read.high_watermark}; the leader's log holds {theirs!r}",
                    )
                )
    return out


def lagging_replicas_in_isr(history: History) -> list[Finding]:
    """Per replication cut long enough to matter, each partition whose ISR kept the cut-off follower,
    in every state the observer saw from the time it should have gone until the cut healed."""
    timelines = _freshest_states(history.broker_views)
    out = []
    for cut in history.replication_cuts:
        due = cut.start_ns + cut.lag_time_max_ms * 1_500_000 + ISR_SHRINK_GRACE_NS
        if due >= cut.end_ns:
            continue
        for partition, timeline in sorted(timelines.items()):
            times = [view.time_ns for view in timeline]
            first = bisect.bisect_right(times, due) - 1
            states = timeline[max(first, 0) : bisect.bisect_right(times, cut.end_ns)]
            if first < 0 or not states:
                continue
            # a leaderless partition keeps its last ISR: no leader is there to drop anyone
            kept = all(
                cut.follower in v.isr and 0 <= v.leader != cut.follower and cut.leader in (-1, v.leader)
                for v in states
            )
            if kept:
                topic, number = partition
                seconds = (cut.end_ns - cut.start_ns) / 1e9
                out.append(
                    Finding(
                        "lagging-replica-in-isr",
                        tuple(sorted({states[0].op, states[-1].op})),
                        f"{topic}-{number}: broker {cut.follower} stayed in the ISR {list(states[-1].isr)} "
                        f"of leader {states[-1].leader} through a {seconds:.1f} s replication cut, "
                        f"replica.lag.time.max.ms={cut.lag_time_max_ms}",
                    )
                )
    return out


def _freshest_states(views: list[BrokerView]) -> dict[Partition, list[BrokerView]]:
    """Per partition, in time order, the state with the highest leader epoch any broker reported as of
    each view (the first broker's at a tie)."""
    latest: dict[Partition, dict[int, BrokerView]] = defaultdict(dict)
    out: dict[Partition, list[BrokerView]] = defaultdict(list)
    for view in sorted(views, key=lambda v: v.time_ns):
        latest[view.partition][view.broker] = view
        best = max(latest[view.partition].values(), key=lambda v: (v.epoch, -v.broker))
        out[view.partition].append(
            BrokerView(view.op, view.partition, best.broker, best.leader, best.epoch, best.isr, view.time_ns)
        )
    return out


REPLICATION_CHECKS = (
    vanished_reads,
    hw_backwards,
    split_brain,
    stale_leader_writes,
    replica_divergence,
    lagging_replicas_in_isr,
)
