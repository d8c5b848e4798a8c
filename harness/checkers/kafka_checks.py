"""Kafka's own promises, beyond a log's: one owner per partition per generation, committed offsets that
do not go back, and a high watermark no further than every in-sync replica has the log."""

from __future__ import annotations

from collections import defaultdict

from .checks import Finding
from .history import History

__all__ = ["committed_offsets_backwards", "double_ownership", "hw_ahead_of_isr", "KAFKA_CHECKS"]


def double_ownership(history: History) -> list[Finding]:
    owners: dict[tuple[str, int, tuple], list] = defaultdict(list)
    for a in history.assignments:
        for partition in a.partitions:
            owners[(a.group, a.generation, partition)].append(a)
    out = []
    for (group, generation, partition), holders in owners.items():
        members = {h.member for h in holders}
        if len(members) > 1:
            out.append(
                Finding(
                    "double-ownership",
                    tuple(sorted(h.op for h in holders)),
                    f"{group} generation {generation}: {partition} owned by {sorted(members)}",
                )
            )
    return out


def committed_offsets_backwards(history: History) -> list[Finding]:
    last: dict[tuple[str, tuple], object] = {}
    out = []
    for commit in history.commits:
        key = (commit.group, commit.partition)
        previous = last.get(key)
        if previous is not None and not commit.note and commit.offset < previous.offset:
            out.append(
                Finding(
                    "committed-offset-backwards",
                    (previous.op, commit.op),
                    f"{commit.group} {commit.partition}: {previous.offset} then {commit.offset}",
                )
            )
        last[key] = commit
    return out


def hw_ahead_of_isr(history: History) -> list[Finding]:
    out = []
    for w in history.watermarks:
        if w.isr_log_end_offsets and w.high_watermark > min(w.isr_log_end_offsets.values()):
            laggard = min(w.isr_log_end_offsets, key=w.isr_log_end_offsets.get)
            out.append(
                Finding(
                    "hw-ahead-of-isr",
                    (w.op,),
                    f"{w.partition}: high watermark {w.high_watermark}, in-sync replica {laggard} "
                    f"has only {w.isr_log_end_offsets[laggard]}",
                )
            )
    return out


KAFKA_CHECKS = (double_ownership, committed_offsets_backwards, hw_ahead_of_isr)
