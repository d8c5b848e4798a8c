"""The checks, each a pure function of a history, returning findings: the anomaly, the operations that
show it (the smallest stretch the check can name), and a sentence.

Anomaly names follow Jepsen's Kafka workload where they mean the same thing: lost-write, duplicate,
inconsistent-offsets, G1a (aborted read), future-read, poll-skip, nonmonotonic-poll, nonmonotonic-send,
their within-one-operation variants (int-...), unseen, G0 and G1c (dependency cycles between
transactions). Skips are judged on each partition's *version order* (the values in offset order), not on
raw offsets, because transaction markers and compaction leave legitimate gaps in offsets.

A lost write is named by the leader changes that may have lost it (``failover``): lost-write with none,
lost-write-leader-change after clean ones, lost-write-unclean after an unclean election. An acknowledged
write the final read ends short of is lost too once a leader changed (else only unseen: the run may
have ended too soon). An offset a new leader gave a second value is that loss, or a vanished read
(``replication_checks``), and reported as such, not as inconsistent-offsets (which is Kafka's "offset
reuse" when no failover explains it), nor as the nonmonotonic-send of the producer whose next send
took the lost offset."""

from __future__ import annotations

from collections import defaultdict, deque
from dataclasses import dataclass

from .failover import Failovers, loss_anomaly, show_change
from .history import History, Op, Send

__all__ = ["Finding", "ALL_CHECKS"]


@dataclass(frozen=True, slots=True)
class Finding:
    anomaly: str
    ops: tuple[int, ...]  # history indexes that show it
    detail: str


class _Index:
    """What the history says happened: acknowledged writes, every read, the version order."""

    def __init__(self, history: History) -> None:
        self.history = history
        self.write_ok: dict[object, tuple[tuple, int, Op]] = {}  # value -> (partition, offset, op)
        self.acks: dict[object, Send] = {}  # value -> its acknowledged send (broker, leader epoch)
        self.invoked: dict[object, Op] = {}  # value -> the invoke that asked for its write
        self.write_ok_blind: dict[object, tuple[tuple, Op]] = {}  # acknowledged with no offset (acks=0)
        self.write_status: dict[object, str] = {}  # value -> ok / fail / info
        self.writer: dict[object, Op] = {}
        self.reads: list[tuple[Op, tuple, list[tuple[int, object]]]] = []  # (op, partition, records)
        self.seen_at: dict[tuple, dict[int, set]] = defaultdict(
            lambda: defaultdict(set)
        )  # p -> off -> values
        self.value_offsets: dict[object, set[tuple[tuple, int]]] = defaultdict(set)
        # A plain dict, never a defaultdict: a check that looks a value up must not make it "read".
        self.readers: dict[object, list[Op]] = {}
        self.failovers = Failovers(history)
        self.final = history.final_reads()
        self.final_offset: dict[tuple, dict[object, int]] = {  # partition -> value -> its final offset
            p: {v: o for poll in op.polls() for o, v in poll.records.get(p, ())}
            for p, op in self.final.items()
        }
        for op in history.ops:
            if op.type == "invoke":
                for send in op.sends():
                    self.invoked.setdefault(send.value, op)
                continue
            for send in op.sends():
                self.write_status[send.value] = op.type
                self.writer[send.value] = op
                if op.type == "ok" and send.offset is None:
                    self.write_ok_blind[send.value] = (send.partition, op)
                if op.type == "ok" and send.offset is not None:
                    self.write_ok[send.value] = (send.partition, send.offset, op)
                    self.acks[send.value] = send
                    self.seen_at[send.partition][send.offset].add(send.value)
                    self.value_offsets[send.value].add((send.partition, send.offset))
            if op.type != "ok":
                continue
            for poll in op.polls():
                for partition, records in poll.records.items():
                    self.reads.append((op, partition, list(records)))
                    for offset, value in records:
                        self.seen_at[partition][offset].add(value)
                        self.value_offsets[value].add((partition, offset))
                        self.readers.setdefault(value, []).append(op)
        # The version order of each partition: its values by offset (only offsets with one value).
        self.order: dict[tuple, list[object]] = {}
        self.position: dict[tuple, dict[object, int]] = {}
        # A value at several offsets is a duplicate (reported as such); the order uses its first offset
        # only, so one duplicate does not also show up as skips, reorderings and cycles.
        self.duplicated = {v for v, places in self.value_offsets.items() if len(places) > 1}
        for partition, offsets in self.seen_at.items():
            values, placed = [], set()
            for _, vs in sorted(offsets.items()):
                if len(vs) == 1:
                    value = next(iter(vs))
                    if value not in placed:
                        values.append(value)
                        placed.add(value)
            self.order[partition] = values
            self.position[partition] = {v: i for i, v in enumerate(values)}
        self.max_read_offset: dict[tuple, int] = {}
        for _, partition, records in self.reads:
            if records:
                top = max(o for o, _ in records)
                self.max_read_offset[partition] = max(top, self.max_read_offset.get(partition, -1))


def duplicates(ix: _Index) -> list[Finding]:
    """A value at several offsets; where leader changes are recorded, whether one lies between the
    write's invoke and the last read that shows it twice (an idempotent producer must not duplicate
    across a failover either)."""
    out = []
    for value, places in ix.value_offsets.items():
        if len(places) > 1:
            ops = sorted(
                {o.index for o in ix.readers.get(value, ())}
                | ({ix.writer[value].index} if value in ix.writer else set())
            )
            detail = f"{value!r} is at {sorted(places)}"
            if ix.failovers:
                invoke = ix.invoked.get(value)
                start = invoke.index if invoke is not None else ops[0]
                changes = [
                    c
                    for partition in sorted({p for p, _ in places})
                    for c in ix.failovers.explaining(partition, ops[-1], after_op=start)
                ]
                if changes:
                    detail += f"; across a leader change ({show_change(changes[0])})"
                    ops = sorted({*ops, changes[0].op})
                else:
                    detail += "; no leader change in the stretch"
            out.append(Finding("duplicate", tuple(ops), detail))
    return out


def inconsistent_offsets(ix: _Index) -> list[Finding]:
    out = []
    for partition, offsets in ix.seen_at.items():
        for offset, values in offsets.items():
            if len(values) > 1 and not _reused_by_a_new_leader(ix, partition, offset, values):
                ops = sorted(
                    {o.index for v in values for o in ix.readers.get(v, ())}
                    | {ix.writer[v].index for v in values if v in ix.writer}
                )
                out.append(
                    Finding(
                        "inconsistent-offsets",
                        tuple(ops),
                        f"{partition} offset {offset} held {sorted(map(repr, values))}",
                    )
                )
    return out


def _reused_by_a_new_leader(ix: _Index, partition, offset: int, values: set) -> bool:
    """The final read's value holds the offset and every other value there was lost to a leader change
    since it was acknowledged or read: the loss or vanished read is the finding, not the offset."""
    final = ix.final.get(partition)
    if final is None:
        return False
    kept = ix.final_offset[partition]
    if not any(kept.get(v) == offset for v in values):
        return False
    for value in values:
        if value in kept:
            if kept[value] != offset:  # moved, not lost
                return False
            continue
        readers = ix.readers.get(value)
        if readers:
            if not ix.failovers.explaining(partition, final.index, after_op=readers[0].index):
                return False
        elif not _lost_to_a_failover(ix, value):
            return False
    return True


def _lost_to_a_failover(ix: _Index, value) -> bool:
    """Acknowledged, never read, and lost across a leader change."""
    if value not in ix.write_ok or value in ix.readers:
        return False
    loss = _loss(ix, value)
    return loss is not None and loss.anomaly != "lost-write"


def _loss(ix: _Index, value) -> Finding | None:
    """How an acknowledged value no read saw is lost: reads reached or passed its offset, or the final
    read ended short of it after a leader change. None when nothing shows it gone (unseen)."""
    partition, offset, op = ix.write_ok[value]
    ack = ix.acks[value]
    reached = [
        (r, records)
        for r, p, records in ix.reads
        if p == partition and records and max(o for o, _ in records) >= offset
    ]
    last = reached[-1][0] if reached else ix.final.get(partition)
    changes = () if last is None else ix.failovers.losing(partition, op.index, last.index, ack.leader_epoch)
    if not reached and not changes:
        return None
    where = f"{value!r} acknowledged at {partition} offset {offset}"
    if ack.leader_epoch is not None or ack.broker is not None:
        where += f" (broker {ack.broker}, epoch {ack.leader_epoch})"
    if not changes:
        passing = [r.index for r, records in reached if min(o for o, _ in records) <= offset]
        return Finding("lost-write", (op.index, *passing[:1]), f"{where}, never read")
    change = next((c for c in changes if c.unclean), changes[0])
    after = next((r for r, _ in reached if r.index > change.op), last)
    detail = f"{where}, never read after {show_change(change)}"
    taken = [v for v, o in ix.final_offset.get(partition, {}).items() if o == offset]
    if taken:
        detail += f"; offset {offset} now holds {taken[0]!r}"
    return Finding(loss_anomaly(changes), tuple(sorted({op.index, change.op, after.index})), detail)


def lost_writes(ix: _Index) -> list[Finding]:
    """Acknowledged, never read, though reads reached its offset (another value there) or went past it,
    named by the leader changes that may have lost it."""
    out = []
    for value in ix.write_ok:
        if value not in ix.readers:
            finding = _loss(ix, value)
            if finding is not None:
                out.append(finding)
    # Acknowledged without an offset (acks=0): lost when a read of its partition that began after the
    # acknowledgement did not see it.
    for value, (partition, op) in ix.write_ok_blind.items():
        if value in ix.readers:
            continue
        later = [r.index for r, p, _ in ix.reads if p == partition and r.index > op.index]
        if later:
            out.append(
                Finding(
                    "lost-write",
                    (op.index, later[0]),
                    f"{value!r} acknowledged (no offset: acks=0) for {partition}, not in a later read",
                )
            )
    return out


def unseen(ix: _Index) -> list[Finding]:
    """Acknowledged, never read, and no read reached its offset (the run may have ended too soon)."""
    return [
        Finding("unseen", (op.index,), f"{value!r} at {partition} offset {offset}")
        for value, (partition, offset, op) in ix.write_ok.items()
        if value not in ix.readers and _loss(ix, value) is None
    ]


def aborted_reads(ix: _Index) -> list[Finding]:
    """G1a: a read of a value whose write failed (an aborted transaction, or a refused send)."""
    out = []
    for value, readers in ix.readers.items():
        if ix.write_status.get(value) == "fail":
            out.append(
                Finding(
                    "G1a",
                    (ix.writer[value].index, readers[0].index),
                    f"{value!r} was read though its write failed",
                )
            )
    return out


def future_reads(ix: _Index) -> list[Finding]:
    out = []
    for value, readers in ix.readers.items():
        # The invoke that asked for this value, not the process's latest: a producer pipelines sends,
        # so later invokes of the same process come before this one's completion.
        invoke = ix.invoked.get(value)
        if invoke is None:
            continue
        for reader in readers:
            if reader.index < invoke.index:
                out.append(
                    Finding(
                        "future-read",
                        (reader.index, invoke.index),
                        f"{value!r} read before its write was asked for",
                    )
                )
    return out


def poll_order(ix: _Index) -> list[Finding]:
    """poll-skip / nonmonotonic-poll between a process's consecutive polls of a partition, and the
    int- variants inside one poll. A note on an op (rebalance, seek, restart) resets the expectation."""
    out = []
    last: dict[tuple[int, tuple], tuple[int, Op]] = {}  # (process, partition) -> (position, op)
    for op, partition, records in ix.reads:
        position = ix.position.get(partition, {})
        seen: set = set()
        positions = []
        for _, value in records:
            if value in position and value not in seen:  # a repeat inside one poll is a duplicate
                positions.append(position[value])
                seen.add(value)
        for a, b in zip(positions, positions[1:], strict=False):
            if b <= a:
                out.append(
                    Finding("int-nonmonotonic-poll", (op.index,), f"{partition}: position {a} then {b}")
                )
            elif b > a + 1:
                out.append(Finding("int-poll-skip", (op.index,), f"{partition}: position {a} then {b}"))
        key = (op.process, partition)
        if op.note:
            last.pop(key, None)
        if positions:
            if key in last:
                prev_position, prev_op = last[key]
                if positions[0] <= prev_position:
                    out.append(
                        Finding(
                            "nonmonotonic-poll",
                            (prev_op.index, op.index),
                            f"{partition}: position {prev_position} then {positions[0]}",
                        )
                    )
                elif positions[0] > prev_position + 1:
                    out.append(
                        Finding(
                            "poll-skip",
                            (prev_op.index, op.index),
                            f"{partition}: position {prev_position} then {positions[0]}",
                        )
                    )
            last[key] = (positions[-1], op)
    return out


def send_order(ix: _Index) -> list[Finding]:
    """nonmonotonic-send: a process's later-sent acknowledged send to a partition landed at a lower
    offset (int-nonmonotonic-send inside one operation). Sends are taken in the order the process
    made them (their invocations), not the order their acknowledgements came: a producer with several
    requests in flight may see an earlier batch acknowledged after a later one (its first answer was
    a retriable error although the batch was written, and the retry found the write), which Kafka's
    own producer does too; what idempotence promises is that offsets follow the order of sending.
    Not when the earlier send was lost to a leader change: the new leader handed its offset out
    again, and the loss is the finding."""
    out = []
    invoked = {send.value: op.index for op in ix.history.ops if op.type == "invoke" for send in op.sends()}
    acknowledged: list[tuple[int, Op, Send]] = []
    for op in ix.history.ops:
        if op.type != "ok":
            continue
        within: dict[tuple, int] = {}
        for send in op.sends():
            if send.offset is None:
                continue
            if send.partition in within and send.offset <= within[send.partition]:
                out.append(
                    Finding(
                        "int-nonmonotonic-send",
                        (op.index,),
                        f"{send.partition}: offset {within[send.partition]} then {send.offset}",
                    )
                )
            within[send.partition] = send.offset
            acknowledged.append((invoked.get(send.value, op.index), op, send))
    last: dict[tuple[int, tuple], tuple[int, Op, object]] = {}  # -> (offset, op, value)
    for _, op, send in sorted(acknowledged, key=lambda entry: entry[0]):  # stable: an op's own order
        key = (op.process, send.partition)
        if (
            key in last
            and last[key][1] is not op
            and send.offset <= last[key][0]
            and not _lost_to_a_failover(ix, last[key][2])  # a new leader reused its offsets
        ):
            earlier, later = sorted((last[key][1].index, op.index))
            out.append(
                Finding(
                    "nonmonotonic-send",
                    (earlier, later),
                    f"{send.partition}: offset {last[key][0]} sent before offset {send.offset}",
                )
            )
        last[key] = (send.offset, op, send.value)
    return out


def cycles(ix: _Index) -> list[Finding]:
    """G0 (write cycle) and G1c (cycle of writes and reads) between acknowledged transactions: a write
    precedes the next write of its partition (ww), a write precedes the reads of it (wr)."""
    ww: dict[int, set[int]] = defaultdict(set)
    wr: dict[int, set[int]] = defaultdict(set)

    def writer(value):
        entry = ix.write_ok.get(value)
        return entry[2].index if entry is not None and entry[2].transactional else None

    for values in ix.order.values():
        writers = [writer(v) for v in values]
        for a, b in zip(writers, writers[1:], strict=False):
            if a is not None and b is not None and a != b:
                ww[a].add(b)
    for value, readers in ix.readers.items():
        source = writer(value)
        if source is not None:
            for reader in readers:
                if reader.index != source and reader.transactional:
                    wr[source].add(reader.index)
    out = []
    g0 = _shortest_cycle(ww)
    if g0:
        out.append(Finding("G0", tuple(g0), "write cycle: " + " -> ".join(map(str, g0))))
    both = defaultdict(set, {k: set(v) for k, v in ww.items()})
    for k, v in wr.items():
        both[k] |= v
    g1c = _shortest_cycle(both)
    if g1c and not (g0 and set(g1c) == set(g0)):
        out.append(Finding("G1c", tuple(g1c), "write/read cycle: " + " -> ".join(map(str, g1c))))
    return out


def _shortest_cycle(graph: dict[int, set[int]]) -> list[int] | None:
    best: list[int] | None = None
    for start in sorted(graph):
        parents = {start: None}
        queue = deque([start])
        while queue:
            node = queue.popleft()
            for nxt in graph.get(node, ()):
                if nxt == start:
                    path = [node]
                    while parents[path[-1]] is not None:
                        path.append(parents[path[-1]])
                    cycle = list(reversed(path))
                    if best is None or len(cycle) < len(best):
                        best = cycle
                    queue.clear()
                    break
                if nxt not in parents:
                    parents[nxt] = node
                    queue.append(nxt)
    return best


ALL_CHECKS = (
    duplicates,
    inconsistent_offsets,
    lost_writes,
    unseen,
    aborted_reads,
    future_reads,
    poll_order,
    send_order,
    cycles,
)


def run_checks(history: History) -> list[Finding]:
    ix = _Index(history)
    out: list[Finding] = []
    for check in ALL_CHECKS:
        out.extend(check(ix))
    return out
