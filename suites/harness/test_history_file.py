"""A history written as JSON lines reads back equal, every field and value type kept, and a file that is
not whole is refused with the line named."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kconform.harness.checkers.history import (
    Assignment,
    BrokerView,
    Commit,
    History,
    LeaderChange,
    Poll,
    ReplicaRead,
    ReplicationCut,
    Send,
    Watermark,
)
from kconform.harness.checkers.history_file import HistoryFileError, history_lines, parse_history

P, Q = ("t", 0), ("u", 1)
VALUES = st.one_of(st.binary(max_size=8), st.text(max_size=8), st.integers(), st.none(), st.booleans())


def every_kind() -> History:
    h = History()
    h.add(1, "invoke", [Send(P, b"a")], time_ns=5)
    h.add(1, "ok", [Send(P, b"a", 3, broker=2, leader_epoch=4)], time_ns=6, transactional=True, note="x")
    h.add(2, "ok", [Poll({P: ((3, b"a"), (4, b"\xff")), Q: ()}, {P: 9})])
    h.add(3, "fail", [Send(Q, "s"), Poll({})])
    h.assignments.append(Assignment(1, "g", 2, "m", frozenset({P, Q})))
    h.commits.append(Commit(1, "g", P, 4, "seek"))
    h.watermarks.append(Watermark(2, P, 9, {1: 9, 2: 10}))
    h.leader_changes += [LeaderChange(3, P, 2, 5, 123, True), LeaderChange(3, Q, -1, 1)]
    h.broker_views.append(BrokerView(3, P, 1, 2, 5, (2, 3), 124))
    h.replica_reads.append(ReplicaRead(3, P, 3, 5, ((3, b"a"), (4, b"\xff"), (5, "s"))))
    h.replication_cuts.append(ReplicationCut(3, 2, 100, 200, 1000))
    return h


def test_every_kind_of_entry_reads_back_equal():
    h = every_kind()
    assert parse_history(history_lines(h)) == h


@given(st.lists(st.tuples(VALUES, st.integers(0, 10**12)), max_size=10))
def test_values_keep_their_type(values):
    h = History()
    for value, offset in values:
        h.add(1, "ok", [Send(P, value, offset), Poll({P: ((offset, value),)})])
    assert parse_history(history_lines(h)) == h


def lines() -> list[str]:
    return list(history_lines(every_kind()))


@pytest.mark.parametrize(
    ("spoil", "message"),
    [
        (lambda ls: [], "empty"),
        (lambda ls: ls[:3] + [ls[3][:20]] + ls[4:], "line 4: not JSON"),
        (lambda ls: ls[:-1], "without its end line"),
        (lambda ls: [*ls, ls[1]], "more after the end line"),
        (lambda ls: ls[:2] + ls[3:], "line 3: a 'op' line has index 2, expected 1"),
        (lambda ls: ls[:5] + ls[6:], "the end line counts"),
        (lambda ls: [ls[0].replace("1", "2"), *ls[1:]], "history version 2"),
        (lambda ls: ['{"format": "other"}', *ls[1:]], "not a kconform history"),
        (lambda ls: [ls[0], '{"kind": "comet"}', *ls[1:]], "line 2: a 'comet' line is of no kind"),
        (lambda ls: [ls[0], '{"kind": "op", "index": 0}', *ls[2:]], "lacks the field 'type'"),
    ],
)
def test_a_file_that_is_not_whole_is_refused_with_the_line_named(spoil, message):
    with pytest.raises(HistoryFileError, match=message):
        parse_history(spoil(lines()))


def test_a_file_from_before_the_replication_records_still_reads():
    """An end line written before broker views, replica reads and cuts existed counts none of them."""
    h = History()
    h.add(1, "invoke", [Send(P, b"a")], time_ns=5)
    lines = list(history_lines(h))
    end = lines[-1]
    for name in ("broker_views", "replica_reads", "replication_cuts"):
        end = end.replace(f',"{name}":0', "")
    assert end != lines[-1]
    assert parse_history([*lines[:-1], end]) == h
