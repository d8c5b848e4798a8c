"""Each chaos scenario's promise can be broken: the anomalies it forbids are counted as violations, table
by table over the whole catalogue, whatever its settings would allow; its words name what its lists
forbid and allow; and a live run of acks1-latency on a broker that loses acknowledged writes ends in a
violation, though acks=1 alone would allow loss."""

from __future__ import annotations

import asyncio
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kconform.faults.toxiproxy import open_toxiproxy
from kconform.harness.chaos.runner import run_scenario
from kconform.harness.chaos.scenarios import load_catalogue
from kconform.harness.chaos.topology import ProxiedCluster
from kconform.harness.checkers import History, Poll, Send, WorkloadSettings, check_history
from kconform.harness.checkers.history import (
    FINAL_READ,
    Assignment,
    BrokerView,
    Commit,
    LeaderChange,
    ReplicaRead,
    ReplicationCut,
    Watermark,
)
from kconform.harness.checkers.promises import (
    ANOMALIES,
    Promise,
    PromiseError,
    allowed_anomalies,
    settings_allow,
)

CATALOGUE = load_catalogue()
P, Q = ("t", 0), ("t", 1)


# ---- one hand-made history per anomaly ------------------------------------------------------------


def send(h: History, process: int, value, offset, partition=P, type="ok", **kw):
    h.add(process, "invoke", [Send(partition, value)])
    return h.add(process, type, [Send(partition, value, offset if type == "ok" else None)], **kw)


def poll(h: History, process: int, records, partition=P):
    h.add(process, "invoke", [])
    return h.add(process, "ok", [Poll({partition: tuple(records)})])


def written(count: int) -> History:
    h = History()
    for i in range(count):
        send(h, 1, f"v{i}", i)
    return h


def lost_write() -> History:
    h = written(3)
    poll(h, 9, [(0, "v0"), (2, "v2")])
    return h


def duplicate() -> History:
    h = written(1)
    poll(h, 9, [(0, "v0"), (1, "v0")])
    return h


def inconsistent_offsets() -> History:
    h = written(1)
    poll(h, 9, [(0, "x")])
    return h


def aborted_read() -> History:
    h = History()
    send(h, 1, "aborted", None, type="fail")
    poll(h, 9, [(0, "aborted")])
    return h


def future_read() -> History:
    h = History()
    poll(h, 9, [(0, "early")])
    send(h, 1, "early", 0)
    return h


def poll_skip() -> History:
    h = written(3)
    poll(h, 9, [(0, "v0")])
    poll(h, 9, [(2, "v2")])
    return h


def nonmonotonic_poll() -> History:
    h = written(3)
    poll(h, 9, [(0, "v0"), (1, "v1"), (2, "v2")])
    poll(h, 9, [(1, "v1")])
    return h


def int_poll_skip() -> History:
    h = written(3)
    poll(h, 9, [(0, "v0"), (2, "v2")])
    poll(h, 8, [(1, "v1")])
    return h


def int_nonmonotonic_poll() -> History:
    h = written(2)
    poll(h, 9, [(1, "v1"), (0, "v0")])
    return h


def nonmonotonic_send() -> History:
    h = History()
    send(h, 1, "first", 1)
    send(h, 1, "second", 0)
    poll(h, 9, [(0, "second"), (1, "first")])
    return h


def int_nonmonotonic_send() -> History:
    h = History()
    h.add(1, "invoke", [Send(P, "first"), Send(P, "second")])
    h.add(1, "ok", [Send(P, "first", 1), Send(P, "second", 0)])
    poll(h, 9, [(0, "second"), (1, "first")])
    return h


def unseen() -> History:
    return written(1)


def write_cycle() -> History:
    h = History()
    h.add(1, "invoke", [])
    h.add(1, "ok", [Send(P, "a", 0), Send(Q, "d", 1)], transactional=True)
    h.add(2, "invoke", [])
    h.add(2, "ok", [Send(P, "b", 1), Send(Q, "c", 0)], transactional=True)
    poll(h, 9, [(0, "a"), (1, "b")], partition=P)
    poll(h, 9, [(0, "c"), (1, "d")], partition=Q)
    return h


def read_cycle() -> History:
    h = History()
    h.add(1, "invoke", [])
    h.add(1, "ok", [Send(P, "x", 0), Poll({Q: ((0, "y"),)})], transactional=True)
    h.add(2, "invoke", [])
    h.add(2, "ok", [Send(Q, "y", 0), Poll({P: ((0, "x"),)})], transactional=True)
    return h


def double_ownership() -> History:
    h = History()
    h.assignments += [
        Assignment(0, "g", 3, "m1", frozenset({P})),
        Assignment(1, "g", 3, "m2", frozenset({P})),
    ]
    return h


def committed_offset_backwards() -> History:
    h = History()
    h.commits += [Commit(0, "g", P, 10), Commit(1, "g", P, 7)]
    return h


def hw_ahead_of_isr() -> History:
    h = History()
    h.watermarks.append(Watermark(0, P, 12, {1: 12, 2: 9}))
    return h


def leader_change(h: History, epoch: int, unclean: bool = False) -> None:
    op = h.add(5000, "info", [], note="leader change")
    h.leader_changes.append(LeaderChange(op.index, P, 2, epoch, unclean=unclean))


def final_read(h: History, records) -> None:
    h.add(1000, "invoke", [])
    h.add(1000, "ok", [Poll({P: tuple(records)})], note=FINAL_READ)


def lost_in_a_leader_change(unclean: bool) -> History:
    h = written(2)  # v1 was on the old leader alone
    leader_change(h, 2, unclean)
    final_read(h, [(0, "v0")])
    return h


def vanished_read() -> History:
    h = written(2)
    poll(h, 9, [(0, "v0"), (1, "v1")])
    leader_change(h, 2, unclean=True)
    final_read(h, [(0, "v0")])
    return h


def hw_backwards() -> History:
    h = written(1)
    for hw in (5, 3):
        h.add(9, "invoke", [])
        h.add(9, "ok", [Poll({P: ((0, "v0"),)} if hw == 5 else {}, {P: hw})])
    return h


def split_brain() -> History:
    h = History()
    for value, broker in (("a", 1), ("b", 2)):
        h.add(1, "invoke", [Send(P, value)])
        h.add(1, "ok", [Send(P, value, broker - 1, broker=broker, leader_epoch=3)])
    poll(h, 9, [(0, "a"), (1, "b")])
    return h


def stale_leader_write() -> History:
    h = History()
    op = h.add(5000, "info", [], time_ns=1_000_000_000, note="broker view")
    h.broker_views.append(BrokerView(op.index, P, 1, 2, 4, (2, 3), 1_000_000_000))  # broker 1 names 2
    h.add(1, "invoke", [Send(P, "a")], time_ns=3_000_000_000)
    h.add(1, "ok", [Send(P, "a", 0, broker=1, leader_epoch=3)], time_ns=3_000_000_000)
    poll(h, 9, [(0, "a")])
    return h


def replica_divergence() -> History:
    h = History()
    send(h, 1, "a", 0)
    h.add(1000, "invoke", [])
    h.add(1000, "ok", [Poll({P: ((0, "a"),)})], note=FINAL_READ)
    op = h.add(1001, "info", [], note="replica read")
    h.replica_reads.append(ReplicaRead(op.index, P, 3, 1, ((0, "z"),)))
    return h


def lagging_replica_in_isr() -> History:
    h = History()
    for at in (0, 9):
        op = h.add(5000, "info", [], time_ns=at * 1_000_000_000, note="broker view")
        h.broker_views.append(BrokerView(op.index, P, 1, 1, 0, (1, 2), at * 1_000_000_000))
    h.replication_cuts.append(ReplicationCut(2, 1, 0, 10_000_000_000, 1000))
    return h


EXAMPLES = {
    "lost-write": lost_write,
    "duplicate": duplicate,
    "inconsistent-offsets": inconsistent_offsets,
    "G1a": aborted_read,
    "future-read": future_read,
    "poll-skip": poll_skip,
    "nonmonotonic-poll": nonmonotonic_poll,
    "int-poll-skip": int_poll_skip,
    "int-nonmonotonic-poll": int_nonmonotonic_poll,
    "nonmonotonic-send": nonmonotonic_send,
    "int-nonmonotonic-send": int_nonmonotonic_send,
    "unseen": unseen,
    "G0": write_cycle,
    "G1c": read_cycle,
    "double-ownership": double_ownership,
    "committed-offset-backwards": committed_offset_backwards,
    "hw-ahead-of-isr": hw_ahead_of_isr,
    "lost-write-leader-change": lambda: lost_in_a_leader_change(unclean=False),
    "lost-write-unclean": lambda: lost_in_a_leader_change(unclean=True),
    "vanished-read": vanished_read,
    "hw-backwards": hw_backwards,
    "split-brain": split_brain,
    "stale-leader-write": stale_leader_write,
    "replica-divergence": replica_divergence,
    "lagging-replica-in-isr": lagging_replica_in_isr,
}


def verdict(anomaly: str, allowed: frozenset[str]):
    [v] = [v for v in check_history(EXAMPLES[anomaly](), allowed) if v.anomaly == anomaly]
    return v


def test_every_anomaly_has_an_example_that_shows_it():
    assert set(EXAMPLES) == set(ANOMALIES)
    for anomaly in ANOMALIES:
        assert verdict(anomaly, frozenset()).violation, anomaly


# ---- the catalogue, table-driven -----------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(CATALOGUE))
def test_what_a_scenario_forbids_is_counted_as_a_violation(name):
    scenario = CATALOGUE[name]
    allowed = scenario.allowed_anomalies()
    assert scenario.forbids, f"{name} promises nothing a run could break"
    for anomaly in scenario.forbids:
        assert verdict(anomaly, allowed).violation, f"{name} forbids {anomaly}, but a run showing it passes"
    for anomaly in scenario.allows:
        found = verdict(anomaly, allowed)
        assert found.count and not found.violation, f"{name} only measures {anomaly}"
    for anomaly in set(ANOMALIES) - scenario.forbids - scenario.allows:  # the settings decide the rest
        expected = anomaly not in settings_allow(scenario.workload_settings)
        assert verdict(anomaly, allowed).violation == expected, (name, anomaly)


def test_acks1_latency_forbids_the_loss_acks_1_would_allow():
    scenario = CATALOGUE["acks1-latency"]
    assert "lost-write" in settings_allow(scenario.workload_settings)  # acks=1 alone promises no durability
    assert "lost-write" not in scenario.allowed_anomalies()
    assert verdict("lost-write", scenario.allowed_anomalies()).violation


# What a promise's words say, clause by clause (split at ';'): a clause that says "allowed" names
# anomalies the scenario measures, any other clause anomalies it rules out.
WORDS = {
    r"\blos[st]|losses|every committed write|exactly once": {"lost-write"},
    r"duplicat|twice|exactly once|\bonce\b": {"duplicate"},
    r"\border\b": {"nonmonotonic-send"},
    r"two members": {"double-ownership"},
    r"go back": {"committed-offset-backwards"},
    r"aborted|G1a": {"G1a"},
}


def said(promise: str) -> tuple[set[str], set[str]]:
    """(ruled out, measured) as the promise's words say."""
    forbidden, measured = set(), set()
    for clause in promise.split(";"):
        named = {a for pattern, anomalies in WORDS.items() if re.search(pattern, clause) for a in anomalies}
        (measured if "allowed" in clause else forbidden).update(named)
    return forbidden, measured


@pytest.mark.parametrize("name", sorted(CATALOGUE))
def test_a_promise_says_what_its_lists_forbid_and_allow(name):
    scenario = CATALOGUE[name]
    forbidden, measured = said(scenario.promise)
    assert forbidden == set(scenario.forbids), (
        f"{name}: {scenario.promise!r} vs forbids {sorted(scenario.forbids)}"
    )
    assert measured == set(scenario.allows), (
        f"{name}: {scenario.promise!r} vs allows {sorted(scenario.allows)}"
    )


def test_the_words_check_would_have_caught_the_old_acks1_latency_entry():
    """The entry as it was: its words promised no loss, and nothing forbade it at acks=1."""
    forbidden, _ = said("no acknowledged write lost on a single broker; sends in order per partition")
    old = Promise("...", frozenset({"nonmonotonic-send"}))
    acks1 = WorkloadSettings.from_client_settings(
        "produce", {"acks": "1", "enable.idempotence": False, "retries": 0}
    )
    assert "lost-write" in forbidden and "lost-write" in allowed_anomalies(old, acks1)


# ---- the decision itself ---------------------------------------------------------------------------

SETTINGS = st.builds(
    WorkloadSettings,
    workload=st.sampled_from(["produce", "transactions", "group"]),
    acks=st.sampled_from(["0", "1", "all"]),
    idempotence=st.booleans(),
    retries=st.booleans(),
    max_in_flight=st.integers(1, 5),
    isolation_level=st.sampled_from(["read_committed", "read_uncommitted"]),
    transactional=st.booleans(),
    complete_reads=st.booleans(),
)


@given(SETTINGS, st.sets(st.sampled_from(ANOMALIES)), st.sets(st.sampled_from(ANOMALIES)))
def test_a_promise_overrides_the_settings_both_ways(settings, forbids, allows):
    allows -= forbids
    allowed = allowed_anomalies(Promise("p", frozenset(forbids), frozenset(allows)), settings)
    assert not allowed & forbids and allows <= allowed
    assert allowed - allows == settings_allow(settings) - forbids - allows


def test_a_promise_names_only_known_anomalies_and_never_one_both_ways():
    with pytest.raises(PromiseError, match="unknown anomalies lost"):
        Promise("p", frozenset({"lost"}))
    with pytest.raises(PromiseError, match="duplicate both forbidden and allowed"):
        Promise("p", frozenset({"duplicate"}), frozenset({"duplicate"}))


# ---- live: the acks1-latency scenario on a broker that loses acknowledged writes -------------------


@pytest.mark.slow
def test_acks1_latency_on_a_broker_that_loses_acknowledged_writes_is_a_violation():
    """ack-without-write drops every tenth batch it acknowledges; the next batch takes its offsets."""
    scenario = CATALOGUE["acks1-latency"]
    with open_toxiproxy() as toxiproxy:
        with ProxiedCluster("reference", toxiproxy.client, planted=("ack-without-write",)) as cluster:
            result = asyncio.run(run_scenario(scenario, cluster, duration=5.0))
    violations = {v.anomaly for v in result.violations}
    assert result.verdict == "violation", result.to_json()
    lost = {"lost-write", "inconsistent-offsets"}  # the next batch takes the lost one's offsets
    # May come with them: nonmonotonic-send, when that batch came from the lost one's producer (sent
    # after it, landed at its offset), and unseen, when a partition's last batch was the one lost (its
    # acknowledged offset is past the end of the log, so no read reaches it).
    assert lost <= violations <= lost | {"nonmonotonic-send", "unseen"}, violations
    assert result.excerpts["lost-write"]
