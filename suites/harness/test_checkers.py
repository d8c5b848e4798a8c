"""The history checkers on hand-made histories: quiet on a correct one, and each anomaly found with the
operations that show it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kconform.harness.checkers import History, Poll, Send, check_history, expected_anomalies
from kconform.harness.checkers.history import Assignment, Commit, Watermark

P = ("t", 0)
Q = ("t", 1)


def found(history, allowed=frozenset()) -> dict[str, tuple]:
    return {v.anomaly: v.example for v in check_history(history, allowed) if v.violation}


def send(h: History, process: int, value, offset, partition=P, type="ok", **kw):
    h.add(process, "invoke", [Send(partition, value)])
    return h.add(process, type, [Send(partition, value, offset if type == "ok" else None)], **kw)


def poll(h: History, process: int, records, partition=P, note=""):
    h.add(process, "invoke", [])
    return h.add(process, "ok", [Poll({partition: tuple(records)})], note=note)


@given(st.integers(1, 40), st.integers(1, 5), st.integers(1, 3))
def test_a_correct_history_shows_nothing(count, producers, readers):
    h = History()
    for i in range(count):
        send(h, i % producers, f"v{i}", i)
    for r in range(readers):  # each reader polls the log in contiguous chunks
        start = 0
        while start < count:
            end = min(count, start + 1 + (start * 7 + r) % 5)
            poll(h, 100 + r, [(o, f"v{o}") for o in range(start, end)])
            start = end
    assert found(h) == {}


def test_each_log_anomaly_is_found_with_its_operations():
    h = History()
    send(h, 1, "a", 0)
    send(h, 1, "b", 1)  # acknowledged, never read although reads pass it: lost
    send(h, 1, "c", 2)
    poll(h, 9, [(0, "a"), (2, "c")])
    assert "lost-write" in found(h)
    assert found(h)["lost-write"][0] == 3  # the send of "b"

    h = History()
    send(h, 1, "a", 0)
    poll(h, 9, [(0, "a"), (1, "a")])
    assert "duplicate" in found(h)

    h = History()
    send(h, 1, "a", 0)
    poll(h, 9, [(0, "x")])
    assert "inconsistent-offsets" in found(h)

    h = History()
    send(h, 1, "aborted", None, type="fail")
    poll(h, 9, [(0, "aborted")])
    assert "G1a" in found(h)
    assert "G1a" not in found(h, expected_anomalies(isolation_level="read_uncommitted"))

    h = History()
    poll(h, 9, [(0, "early")])
    send(h, 1, "early", 0)
    assert "future-read" in found(h)

    h = History()  # a pipelined producer: "a" is read after it was asked for, before its ack came
    h.add(1, "invoke", [Send(P, "a")])
    poll(h, 9, [(0, "a")])
    h.add(1, "invoke", [Send(P, "b")])
    h.add(1, "ok", [Send(P, "a", 0)])
    h.add(1, "ok", [Send(P, "b", 1)])
    assert "future-read" not in found(h)


def test_polls_must_neither_skip_nor_go_back_unless_the_consumer_was_moved():
    def base():
        h = History()
        for i in range(6):
            send(h, 1, f"v{i}", i)
        return h

    h = base()
    poll(h, 9, [(0, "v0"), (1, "v1")])
    poll(h, 9, [(3, "v3")])  # v2 skipped
    poll(h, 8, [(2, "v2"), (4, "v4")])  # another reader: v2 exists; inside one poll, v3 skipped
    result = found(h)
    assert "poll-skip" in result and "int-poll-skip" in result

    h = base()
    poll(h, 9, [(0, "v0"), (1, "v1"), (2, "v2")])
    poll(h, 9, [(1, "v1")])
    assert "nonmonotonic-poll" in found(h)
    h = base()
    poll(h, 9, [(0, "v0"), (1, "v1"), (2, "v2")])
    poll(h, 9, [(0, "v0")], note="seek")  # a deliberate rewind is not an anomaly
    poll(h, 9, [(1, "v1"), (2, "v2"), (3, "v3"), (4, "v4"), (5, "v5")])
    assert found(h) == {}


def test_gaps_in_offsets_from_transaction_markers_are_not_skips():
    h = History()
    send(h, 1, "a", 0)
    send(h, 1, "b", 2)  # offset 1 holds a commit marker
    poll(h, 9, [(0, "a")])
    poll(h, 9, [(2, "b")])
    assert found(h) == {}


def test_a_process_whose_later_send_lands_earlier():
    h = History()
    send(h, 1, "first", 5)
    send(h, 1, "second", 4)
    poll(h, 9, [(4, "second"), (5, "first")])
    assert "nonmonotonic-send" in found(h)
    assert "nonmonotonic-send" not in found(h, expected_anomalies(idempotence=False, retries=True))


def test_sends_are_ordered_by_when_they_were_sent_not_when_they_were_acknowledged():
    # A pipelining producer: "first" is answered with a retriable error although it was written, and
    # its retry is acknowledged after "second" was. Its offset is still the lower one: in order.
    h = History()
    h.add(1, "invoke", [Send(P, "first")])
    h.add(1, "invoke", [Send(P, "second")])
    h.add(1, "ok", [Send(P, "second", 5)])
    h.add(1, "ok", [Send(P, "first", 4)])
    poll(h, 9, [(4, "first"), (5, "second")])
    assert "nonmonotonic-send" not in found(h)
    # The same acknowledgements with the offsets the other way round: "second" overtook "first".
    h = History()
    h.add(1, "invoke", [Send(P, "first")])
    h.add(1, "invoke", [Send(P, "second")])
    h.add(1, "ok", [Send(P, "second", 4)])
    h.add(1, "ok", [Send(P, "first", 5)])
    poll(h, 9, [(4, "second"), (5, "first")])
    assert "nonmonotonic-send" in found(h)


def test_dependency_cycles_between_transactions():
    # T1 writes a then (later in P) T2 writes b; in Q, T2's c comes before T1's d: ww both ways -> G0
    h = History()
    h.add(1, "invoke", [])
    t1 = h.add(1, "ok", [Send(P, "a", 0), Send(Q, "d", 1)], transactional=True)
    h.add(2, "invoke", [])
    t2 = h.add(2, "ok", [Send(P, "b", 1), Send(Q, "c", 0)], transactional=True)
    poll(h, 9, [(0, "a"), (1, "b")], partition=P)
    poll(h, 9, [(0, "c"), (1, "d")], partition=Q)
    result = found(h)
    assert "G0" in result and set(result["G0"]) == {t1.index, t2.index}

    # T1 reads T2's write and T2 reads T1's write: G1c
    h = History()
    h.add(1, "invoke", [])
    h.add(1, "ok", [Send(P, "x", 0), Poll({Q: ((0, "y"),)})], transactional=True)
    h.add(2, "invoke", [])
    h.add(2, "ok", [Send(Q, "y", 0), Poll({P: ((0, "x"),)})], transactional=True)
    assert "G1c" in found(h)


def test_kafka_promises_ownership_commits_and_the_high_watermark():
    h = History()
    h.assignments += [
        Assignment(1, "g", 3, "m1", frozenset({P})),
        Assignment(2, "g", 3, "m2", frozenset({P, Q})),
        Assignment(3, "g", 4, "m2", frozenset({P})),
    ]
    h.commits += [
        Commit(4, "g", P, 10),
        Commit(5, "g", P, 7),
        Commit(6, "g", Q, 3),
        Commit(7, "g", Q, 1, note="seek"),
    ]
    h.watermarks += [Watermark(8, P, 12, {1: 12, 2: 12}), Watermark(9, P, 13, {1: 13, 2: 11})]
    result = found(h)
    assert result["double-ownership"] == (1, 2)
    assert result["committed-offset-backwards"] == (4, 5)
    assert result["hw-ahead-of-isr"] == (9,)


def test_what_the_settings_allow():
    assert "lost-write" in expected_anomalies(acks="0")
    assert "lost-write" not in expected_anomalies(acks="all")
    assert "duplicate" in expected_anomalies(idempotence=False, retries=True)
    assert "duplicate" not in expected_anomalies(idempotence=True)
    assert "G1a" not in expected_anomalies(transactional=True, isolation_level="read_committed")
    verdicts = check_history(History(), expected_anomalies(acks="0"))
    assert not any(v.violation for v in verdicts)
