"""The history a chaos workload records, in Jepsen's shape: every operation is an *invoke* by a process,
later completed as *ok* (it happened), *fail* (it did not happen) or *info* (unknown: a timeout).

An operation is a list of micro-operations, each a ``Send`` (value written to a partition, with the
offset the broker acknowledged once known) or a ``Poll`` (what one poll read, per partition, as
(offset, value) pairs in order). A transaction is one operation holding several. Values are unique per
history (the workload makes them so), which lets a read name the write it saw."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

__all__ = ["Assignment", "Commit", "History", "Op", "Poll", "Send", "Watermark"]

Partition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class Send:
    partition: Partition
    value: object
    offset: int | None = None  # known on ok


@dataclass(frozen=True, slots=True)
class Poll:
    records: dict[Partition, tuple[tuple[int, object], ...]]  # per partition: (offset, value), in order


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


@dataclass
class History:
    ops: list[Op] = field(default_factory=list)
    assignments: list[Assignment] = field(default_factory=list)
    commits: list[Commit] = field(default_factory=list)
    watermarks: list[Watermark] = field(default_factory=list)

    def add(self, process: int, type: str, mops: Iterable[Send | Poll], **kw) -> Op:
        op = Op(len(self.ops), process, type, tuple(mops), **kw)
        self.ops.append(op)
        return op

    def completions(self) -> list[Op]:
        """Every ok, fail and info, in order (the invokes say only that something was asked)."""
        return [op for op in self.ops if op.type != "invoke"]

    def invoke_of(self, completion: Op) -> Op | None:
        for op in reversed(self.ops[: completion.index]):
            if op.process == completion.process and op.type == "invoke":
                return op
        return None

    def __len__(self) -> int:
        return len(self.ops)
