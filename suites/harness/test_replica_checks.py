"""The checks that need the cluster observer's per-broker views, the followers' own logs and the fault
log, on hand-made histories: a broker acknowledging writes after it named another leader, replicas that
hold different committed records, a follower kept in the ISR through a long replication cut; and the
cuts read from a fault log."""

from __future__ import annotations

from kconform.faults.nemesis import FaultEvent
from kconform.harness.chaos.replication_cuts import replication_cuts
from kconform.harness.checkers import History, Poll, Send, WorkloadSettings, check_history, verdict_reasons
from kconform.harness.checkers.history import FINAL_READ, BrokerView, ReplicaRead, ReplicationCut
from kconform.harness.checkers.promises import Promise, allowed_anomalies

P = ("t", 0)
S = 1_000_000_000  # a second in nanoseconds


def found(history: History) -> dict[str, object]:
    return {v.anomaly: v for v in check_history(history) if v.count}


def view(h: History, broker: int, leader: int, epoch: int, at_s: float, isr=(1, 2, 3), partition=P):
    op = h.add(5000, "info", [], time_ns=int(at_s * S), note="broker view")
    h.broker_views.append(BrokerView(op.index, partition, broker, leader, epoch, tuple(isr), int(at_s * S)))
    return op


def ack(h: History, value, offset, *, broker: int, epoch: int, at_s: float):
    h.add(1, "invoke", [Send(P, value)], time_ns=int(at_s * S) - 1000)
    return h.add(1, "ok", [Send(P, value, offset, broker, epoch)], time_ns=int(at_s * S))


def final_read(h: History, records):
    h.add(1000, "invoke", [])
    return h.add(1000, "ok", [Poll({P: tuple(records)})], note=FINAL_READ)


# ---- stale-leader-write ------------------------------------------------------------------------------


def test_a_broker_acknowledging_after_it_named_a_newer_leader_is_a_stale_leader():
    h = History()
    view(h, 2, 2, 0, 0.0)
    ack(h, "a", 0, broker=2, epoch=0, at_s=1.0)  # broker 2 leads epoch 0: fine
    told = view(h, 2, 3, 1, 2.0)  # broker 2 itself names broker 3 leader in epoch 1
    ack(h, "b", 1, broker=2, epoch=0, at_s=2.5)  # within the observer's lag: it may not have known
    late = ack(h, "c", 2, broker=2, epoch=0, at_s=4.0)
    ack(h, "d", 1, broker=3, epoch=1, at_s=4.1)  # the new leader: fine
    result = found(h)
    stale = result["stale-leader-write"]
    assert stale.count == 1 and stale.example == (told.index, late.index)
    assert "acknowledged by broker 2" in stale.detail and "named broker 3 leader in epoch 1" in stale.detail


def test_a_broker_that_leads_again_or_is_routed_in_the_newer_epoch_is_no_stale_leader():
    h = History()
    view(h, 2, 3, 1, 0.0)  # broker 2 names broker 3 ...
    view(h, 2, 2, 2, 3.2)  # ... then leads again, seen just after the write below
    ack(h, "a", 0, broker=2, epoch=0, at_s=3.0)  # a client with old metadata: epoch 0, broker 2 leads again
    ack(h, "b", 1, broker=2, epoch=2, at_s=5.0)
    view(h, 1, 3, 1, 0.0)
    ack(h, "c", 2, broker=1, epoch=1, at_s=5.0)  # routed by the epoch broker 1 names: not older
    assert "stale-leader-write" not in found(h)


def test_without_views_or_epochs_there_is_nothing_to_hold_an_acknowledgement_against():
    unobserved, unknown = History(), History()
    ack(unobserved, "a", 0, broker=2, epoch=0, at_s=5.0)  # no broker view at all
    view(unknown, 2, 3, 1, 0.0)
    unknown.add(1, "invoke", [Send(P, "b")], time_ns=6 * S)
    unknown.add(1, "ok", [Send(P, "b", 1)], time_ns=6 * S)  # broker and epoch not known
    for h in (unobserved, unknown):
        assert "stale-leader-write" not in found(h)


# ---- replica-divergence ---------------------------------------------------------------------------


def replica_read(h: History, broker: int, high_watermark: int, records):
    op = h.add(1001, "info", [], note="replica read")
    h.replica_reads.append(ReplicaRead(op.index, P, broker, high_watermark, tuple(records)))
    return op


def test_a_replica_holding_another_record_below_its_high_watermark_diverges():
    h = History()
    final = final_read(h, [(0, "a"), (1, "b"), (2, "c")])
    replica_read(h, 2, 3, [(0, "a"), (1, "b"), (2, "c")])
    diverging = replica_read(h, 3, 3, [(0, "a"), (1, "x"), (2, "c")])
    result = found(h)
    assert set(result) == {"replica-divergence"}
    divergence = result["replica-divergence"]
    assert divergence.count == 1 and divergence.example == (final.index, diverging.index)
    assert "offset 1: broker 3 holds 'x' below its high watermark 3" in divergence.detail


def test_only_committed_records_the_leader_also_has_are_compared():
    h = History()
    final_read(h, [(0, "a"), (1, "b")])
    replica_read(h, 2, 1, [(0, "a"), (1, "y")])  # offset 1 is above its high watermark: uncommitted there
    replica_read(h, 3, 3, [(0, "a"), (1, "b"), (2, "z")])  # offset 2: not in the leader's read
    assert "replica-divergence" not in found(h)


def test_unclean_election_allows_divergence_and_nothing_else_does():
    durable = WorkloadSettings.from_scenario_settings("produce", {}, topic={"min.insync.replicas": 2})
    unclean = WorkloadSettings.from_scenario_settings(
        "produce", {}, topic={"min.insync.replicas": 1, "unclean.leader.election.enable": True}
    )
    promise = Promise("what the settings promise")
    assert "replica-divergence" not in allowed_anomalies(promise, durable)
    assert "replica-divergence" in allowed_anomalies(promise, unclean)
    assert verdict_reasons(promise, durable)["replica-divergence"].startswith(
        "forbidden: unclean election off"
    )


# ---- lagging-replica-in-isr ---------------------------------------------------------------------------


def cut(h: History, follower: int, leader: int, start_s: float, end_s: float, lag_ms: int = 1000):
    h.replication_cuts.append(ReplicationCut(follower, leader, int(start_s * S), int(end_s * S), lag_ms))


def test_a_follower_kept_in_the_isr_through_a_long_cut_is_found():
    h = History()
    first = view(h, 2, 2, 0, 0.0, isr=(2, 1, 3))
    cut(h, 1, 2, 1.0, 8.0)  # due out by 1 + 1.5 + 3 = 5.5 s
    last = view(h, 3, 2, 0, 6.0, isr=(2, 1, 3))
    result = found(h)
    kept = result["lagging-replica-in-isr"]
    assert kept.count == 1 and kept.example == (first.index, last.index)
    assert "broker 1 stayed in the ISR [2, 1, 3] of leader 2 through a 7.0 s replication cut" in kept.detail
    assert "replica.lag.time.max.ms=1000" in kept.detail


def test_a_follower_dropped_in_time_a_short_cut_or_another_leader_is_no_finding():
    dropped, short, moved, other = History(), History(), History(), History()
    for h in (dropped, short, moved, other):
        view(h, 2, 2, 0, 0.0, isr=(2, 1, 3))
    view(dropped, 2, 2, 0, 3.0, isr=(2, 3))
    cut(dropped, 1, 2, 1.0, 8.0)
    cut(short, 1, 2, 1.0, 5.0)  # over before the ISR had to change
    view(moved, 3, 3, 1, 6.0, isr=(3, 1))  # broker 3 leads from 6 s: the cut was from broker 2
    cut(moved, 1, 2, 1.0, 8.0)
    cut(other, 3, 1, 1.0, 8.0)  # broker 3 cut from broker 1, which leads nothing here
    leaderless = History()
    view(leaderless, 1, -1, 1, 0.5, isr=(2,))  # its last in-sync replica, broker 2, is down
    cut(leaderless, 2, -1, 1.0, 8.0)
    for h in (dropped, short, moved, other, leaderless):
        assert "lagging-replica-in-isr" not in found(h)


def test_a_follower_that_is_down_must_leave_every_isr():
    h = History()
    view(h, 1, 1, 0, 0.0, isr=(1, 3))
    view(h, 2, 3, 0, 0.1, isr=(3, 1), partition=("t", 1))
    view(h, 2, 3, 0, 2.0, isr=(3,), partition=("t", 1))
    cut(h, 3, -1, 1.0, 9.0)  # broker 3 killed
    kept = found(h)["lagging-replica-in-isr"]
    assert kept.count == 1 and "t-0: broker 3" in kept.detail


# ---- replication cuts from the fault log --------------------------------------------------------------


def event(at, action, label, *targets):
    return FaultEvent(at, action, label, True, "", tuple(targets))


def test_cuts_come_from_isolations_splits_and_processes_down():
    started = 10 * S
    log = [
        event(
            1.0, "start", "isolate@*(from=followers,node=leader)", "k-repl-1-2", "k-repl-2-1", "k-repl-3-2"
        ),
        event(1.0, "start", "latency@replication(latency=100)", "k-repl-1-3"),  # slower, not cut
        event(2.0, "start", "kill@follower", "3"),
        event(3.0, "end", "isolate@*(from=followers,node=leader)", "k-repl-1-2", "k-repl-2-1", "k-repl-3-2"),
        event(4.0, "start", "isolate@*(from=all,node=leader)", "k-ctrl-2", "k-repl-1-2", "k-client-2"),
        event(5.0, "start", "kill@controller", "0"),
        event(6.0, "start", "flap@replication:follower(period=0.7)", "k-repl-1-2"),
    ]
    cuts = replication_cuts(log, started, 2000, run_seconds=10.0)
    assert [(c.follower, c.leader, c.start_ns, c.end_ns, c.lag_time_max_ms) for c in cuts] == [
        (1, 2, 11 * S, 13 * S, 2000),
        (2, 1, 11 * S, 13 * S, 2000),
        (3, 2, 11 * S, 13 * S, 2000),
        (3, -1, 12 * S, 20 * S, 2000),  # never restarted in the log: cut until the run's end
    ]  # a leader cut off from the controller cannot shrink its ISR; the controller is no follower


def test_a_fault_that_failed_to_start_cuts_nothing():
    log = [FaultEvent(1.0, "start", "kill@follower", False, "no such node", ("3",))]
    assert replication_cuts(log, 0, 2000, run_seconds=5.0) == []
