"""A verdict's stretch of history as lines a person reads, Jepsen-style: index, process, type, what it
did; a bookkeeping op shows its entry (the leader change, the commit, the assignment, the watermark)."""

from __future__ import annotations

from collections.abc import Iterable

from .failover import show_change
from .history import History, Op, Poll, Send

__all__ = ["describe", "excerpt"]

SHOWN_RECORDS = 6  # per partition of a poll


def excerpt(history: History, indexes: Iterable[int]) -> list[str]:
    """One line per op index, in the order given."""
    entries: dict[int, list[str]] = {}
    for change in history.leader_changes:
        entries.setdefault(change.op, []).append(f"leader change: {show_change(change)}")
    for c in history.commits:
        entries.setdefault(c.op, []).append(f"commit {c.group} {_partition(c.partition)} @{c.offset}")
    for a in history.assignments:
        owned = " ".join(sorted(_partition(p) for p in a.partitions))
        entries.setdefault(a.op, []).append(
            f"assignment {a.group} generation {a.generation} {a.member}: {owned}"
        )
    for w in history.watermarks:
        ends = " ".join(f"{n}:{o}" for n, o in sorted(w.isr_log_end_offsets.items()))
        entries.setdefault(w.op, []).append(
            f"watermark {_partition(w.partition)} {w.high_watermark}, in-sync log ends {ends}"
        )
    return [describe(history.ops[i], entries.get(i, ())) for i in indexes if 0 <= i < len(history.ops)]


def describe(op: Op, entries: Iterable[str] = ()) -> str:
    """One history line: ``12 p0 ok send t-0 p0-5@7 (broker 1, epoch 3)``."""
    parts = list(entries)
    bookkept = bool(parts)
    for mop in op.mops:
        if isinstance(mop, Send):
            at = f"@{mop.offset}" if mop.offset is not None else ""
            by = [f"broker {mop.broker}"] if mop.broker is not None else []
            by += [f"epoch {mop.leader_epoch}"] if mop.leader_epoch is not None else []
            acked = f" ({', '.join(by)})" if by else ""
            parts.append(f"send {_partition(mop.partition)} {_show(mop.value)}{at}{acked}")
        elif isinstance(mop, Poll):
            for partition in sorted(mop.records.keys() | mop.high_watermarks.keys()):
                records = mop.records.get(partition, ())
                shown = " ".join(f"{o}:{_show(v)}" for o, v in records[:SHOWN_RECORDS])
                more = f" (+{len(records) - SHOWN_RECORDS})" if len(records) > SHOWN_RECORDS else ""
                hw = mop.high_watermarks.get(partition)
                mark = f" hw {hw}" if hw is not None else ""
                parts.append(f"poll {_partition(partition)} [{shown}{more}]{mark}")
    note = f" ({op.note})" if op.note and not bookkept else ""
    return f"{op.index} p{op.process} {op.type} " + "; ".join(parts) + note


def _partition(partition: tuple[str, int]) -> str:
    return f"{partition[0]}-{partition[1]}"


def _show(value: object) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)
