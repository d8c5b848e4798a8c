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

Lost acknowledged writes are classified by the leader changes between acknowledgement and read in
``checks`` (lost-write, lost-write-leader-change, lost-write-unclean); an offset a new leader gave a
second value is that loss or a vanished read, and reported as such."""

from __future__ import annotations

from collections import defaultdict

from .checks import Finding
from .failover import Failovers, show_change
from .history import FINAL_READ, History

__all__ = ["REPLICATION_CHECKS", "hw_backwards", "split_brain", "vanished_reads"]


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


REPLICATION_CHECKS = (vanished_reads, hw_backwards, split_brain)
