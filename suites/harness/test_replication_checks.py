"""The replication checks on hand-made histories: a write lost to a leader change is told from one lost
to a bug, a read that vanishes, a high watermark that goes back, two leaders in one epoch, and each
verdict naming the setting that allowed or forbade it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kconform.harness.checkers import (
    History,
    LeaderChange,
    Poll,
    Promise,
    Send,
    WorkloadSettings,
    allowed_anomalies,
    check_history,
    verdict_reasons,
)
from kconform.harness.checkers.excerpt import excerpt
from kconform.harness.checkers.history import FINAL_READ
from kconform.harness.checkers.promises import ANOMALIES

P = ("t", 0)
ACKS1 = WorkloadSettings.from_scenario_settings(
    "produce", {"acks": "1"}, topic={"replication.factor": 3, "min.insync.replicas": 1}
)
DURABLE = WorkloadSettings.from_scenario_settings(
    "produce", {"acks": "all"}, topic={"replication.factor": 3, "min.insync.replicas": 2}
)
UNCLEAN = WorkloadSettings.from_scenario_settings(
    "produce",
    {"acks": "all"},
    topic={"replication.factor": 3, "min.insync.replicas": 1, "unclean.leader.election.enable": True},
)
NO_PROMISE = Promise("only what the settings promise")


def found(history: History) -> dict[str, object]:
    """Every anomaly found (allowed or not), with its verdict."""
    return {v.anomaly: v for v in check_history(history) if v.count}


def send(h: History, value, offset, *, epoch=None, broker=None, process=1):
    h.add(process, "invoke", [Send(P, value)])
    return h.add(process, "ok", [Send(P, value, offset, broker=broker, leader_epoch=epoch)])


def poll(h: History, process: int, records, *, hw=None, note=""):
    h.add(process, "invoke", [])
    return h.add(process, "ok", [Poll({P: tuple(records)}, {P: hw} if hw is not None else {})], note=note)


def leader_change(h: History, epoch: int, *, leader=2, unclean=False, time_ns=0):
    op = h.add(5000, "info", [], time_ns=time_ns, note="leader change")
    h.leader_changes.append(LeaderChange(op.index, P, leader, epoch, time_ns, unclean))
    return op


def final_read(h: History, records):
    h.add(1000, "invoke", [])
    return h.add(1000, "ok", [Poll({P: tuple(records)})], note=FINAL_READ)


# ---- lost writes, classified by the leader changes that may have lost them ---------------------------


def test_a_write_lost_across_a_clean_leader_change_names_the_change():
    h = History()
    send(h, "a", 0, epoch=1)
    ack = send(h, "b", 1, epoch=1)  # the old leader alone had it
    change = leader_change(h, 2)
    send(h, "c", 1, epoch=2)  # the new leader gives its offset away
    final = final_read(h, [(0, "a"), (1, "c")])
    result = found(h)
    assert set(result) == {"lost-write-leader-change"}  # not inconsistent-offsets: the loss is the finding
    lost = result["lost-write-leader-change"]
    assert lost.example == (ack.index, change.index, final.index)
    assert "t-0 led by 2 in epoch 2 (clean)" in lost.detail and "now holds 'c'" in lost.detail


def test_an_unclean_election_makes_it_lost_write_unclean():
    h = History()
    send(h, "a", 0, epoch=1)
    leader_change(h, 2, unclean=True)
    final_read(h, [])
    assert set(found(h)) == {"lost-write-unclean"}


def test_a_loss_no_leader_change_explains_stays_lost_write():
    h = History()
    leader_change(h, 2)
    send(h, "a", 0, epoch=2)  # acknowledged by the new leader, in the new epoch
    send(h, "b", 1, epoch=2)
    final_read(h, [(1, "b")])
    assert set(found(h)) == {"lost-write"}

    h = History()  # no leader change at all: as before, with the offset's second value
    send(h, "a", 0)
    poll(h, 9, [(0, "x")])
    assert set(found(h)) == {"lost-write", "inconsistent-offsets"}


def test_without_epochs_the_change_after_the_ack_or_the_last_before_it_explains():
    h = History()
    send(h, "a", 0)
    change = leader_change(h, 2)
    final_read(h, [])
    assert found(h)["lost-write-leader-change"].example[1] == change.index

    h = History()  # a deposed leader goes on acknowledging acks=1 writes it will lose
    first = leader_change(h, 2)
    send(h, "a", 0)
    final_read(h, [])
    assert found(h)["lost-write-leader-change"].example[0] == first.index


def test_a_short_final_read_without_a_leader_change_is_only_unseen():
    h = History()
    send(h, "a", 0)
    send(h, "b", 1)
    final_read(h, [(0, "a")])
    assert set(found(h)) == {"unseen"}


# ---- vanished reads ---------------------------------------------------------------------------------


def test_a_read_value_missing_from_the_final_read_vanished():
    h = History()
    send(h, "a", 0)
    send(h, "b", 1)
    read = poll(h, 9, [(0, "a"), (1, "b")])
    change = leader_change(h, 2, unclean=True)
    final = final_read(h, [(0, "a"), (1, "z")])
    result = found(h)
    assert set(result) == {"vanished-read"}  # z at offset 1 is b's vanishing, not a second finding
    assert result["vanished-read"].example == (read.index, change.index, final.index)
    assert "now holds 'z'" in result["vanished-read"].detail


def test_what_the_final_read_still_holds_or_was_never_committed_has_not_vanished():
    h = History()
    send(h, "a", 0)
    h.add(1, "invoke", [Send(P, "aborted")])
    h.add(1, "fail", [Send(P, "aborted")])
    poll(h, 9, [(0, "a"), (1, "aborted")])
    final_read(h, [(0, "a")])
    result = found(h)
    assert "vanished-read" not in result and "G1a" in result

    h = History()  # no final read: nothing to vanish from
    send(h, "a", 0)
    poll(h, 9, [(0, "a")])
    assert "vanished-read" not in found(h)


# ---- the high watermark a consumer sees --------------------------------------------------------------


def test_a_high_watermark_that_goes_back_within_a_leader_is_found():
    h = History()
    send(h, "a", 0)
    first = poll(h, 9, [(0, "a")], hw=5)
    second = poll(h, 9, [], hw=3)
    assert found(h)["hw-backwards"].example == (first.index, second.index)

    h = History()  # below what the consumer had already read: a floor of the high watermark
    send(h, "a", 0)
    send(h, "b", 1)
    first = poll(h, 9, [(0, "a"), (1, "b")])
    second = poll(h, 9, [], hw=1)
    assert found(h)["hw-backwards"].example == (first.index, second.index)


def test_a_high_watermark_may_go_back_across_a_leader_change_a_seek_or_another_consumer():
    def history(between, reader=9):
        h = History()
        send(h, "a", 0)
        poll(h, 9, [(0, "a")], hw=5)
        between(h)
        poll(h, reader, [], hw=3)
        return h

    assert "hw-backwards" not in found(history(lambda h: leader_change(h, 2)))
    assert "hw-backwards" not in found(history(lambda h: poll(h, 9, [], hw=0, note="seek")))
    assert "hw-backwards" not in found(history(lambda h: None, reader=8))


def test_a_leader_change_the_observer_wrote_down_just_after_the_poll_still_counts():
    h = History()
    send(h, "a", 0)
    h.add(9, "invoke", [])
    h.add(9, "ok", [Poll({P: ((0, "a"),)}, {P: 5})], time_ns=1_000)
    h.add(9, "invoke", [])
    h.add(9, "ok", [Poll({}, {P: 3})], time_ns=2_000)
    leader_change(h, 2, time_ns=1_500)  # sampled between the polls, written after the second
    assert "hw-backwards" not in found(h)
    h.leader_changes[-1] = LeaderChange(h.leader_changes[-1].op, P, 2, 2, 5_000_000_000)
    assert "hw-backwards" in found(h)  # seen seconds later: not the change that polls met


def test_without_high_watermarks_reading_lower_offsets_is_left_to_nonmonotonic_poll():
    h = History()
    send(h, "a", 0)
    send(h, "b", 1)
    poll(h, 9, [(0, "a"), (1, "b")])
    poll(h, 9, [(0, "a")])
    assert set(found(h)) == {"nonmonotonic-poll"}


# ---- split brain --------------------------------------------------------------------------------------


def test_two_brokers_acknowledging_in_one_leader_epoch_is_split_brain():
    h = History()
    one = send(h, "a", 0, epoch=3, broker=1)
    two = send(h, "b", 1, epoch=3, broker=2)
    poll(h, 9, [(0, "a"), (1, "b")])
    assert found(h)["split-brain"].example == (one.index, two.index)

    h = History()  # a new epoch, a new leader: as it should be
    send(h, "a", 0, epoch=3, broker=1)
    send(h, "b", 1, epoch=4, broker=2)
    poll(h, 9, [(0, "a"), (1, "b")])
    assert "split-brain" not in found(h)

    h = History()  # a broker acknowledging in an epoch the cluster gave another
    send(h, "a", 0, epoch=3, broker=1)
    leader_change(h, 3, leader=2)
    poll(h, 9, [(0, "a")])
    assert "split-brain" in found(h)


# ---- duplicates across leader changes ----------------------------------------------------------------


def test_a_duplicate_says_whether_a_leader_changed_in_its_stretch():
    def history(change: bool) -> History:
        h = History()
        h.add(1, "invoke", [Send(P, "a")])
        if change:
            leader_change(h, 2)
        h.add(1, "ok", [Send(P, "a", 0)])
        poll(h, 9, [(0, "a"), (1, "a")])
        return h

    assert "across a leader change (t-0 led by 2" in found(history(True))["duplicate"].detail
    h = history(False)
    leader_change(h, 2)  # after the stretch
    assert found(h)["duplicate"].detail.endswith("no leader change in the stretch")


# ---- verdicts name the setting ---------------------------------------------------------------------


def reasons(settings: WorkloadSettings, history: History, promise: Promise = NO_PROMISE):
    verdicts = check_history(
        history, allowed_anomalies(promise, settings), verdict_reasons(promise, settings)
    )
    return {v.anomaly: v for v in verdicts if v.count}


def lost_in_a_change(unclean: bool = False) -> History:
    h = History()
    send(h, "a", 0, epoch=1)
    leader_change(h, 2, unclean=unclean)
    final_read(h, [])
    return h


def test_the_verdict_names_the_setting_that_allowed_or_forbade_the_loss():
    allowed = reasons(ACKS1, lost_in_a_change())["lost-write-leader-change"]
    assert not allowed.violation
    assert allowed.reason == "allowed: acks=1 loses writes the leader alone had when it changes"
    forbidden = reasons(DURABLE, lost_in_a_change())["lost-write-leader-change"]
    assert forbidden.violation
    assert forbidden.reason.startswith("forbidden: acks=all, min.insync.replicas=2, unclean election off")


def test_unclean_election_allows_only_the_losses_an_unclean_leader_explains():
    unclean = reasons(UNCLEAN, lost_in_a_change(unclean=True))["lost-write-unclean"]
    assert not unclean.violation and "unclean.leader.election.enable=true" in unclean.reason
    clean = reasons(UNCLEAN, lost_in_a_change())["lost-write-leader-change"]
    assert clean.violation and "unclean election on" in clean.reason  # a clean leader had the write
    without_flag = reasons(DURABLE, lost_in_a_change(unclean=True))["lost-write-unclean"]
    assert without_flag.violation
    assert "unclean.leader.election.enable=false" in without_flag.reason

    h = History()
    send(h, "a", 0)
    poll(h, 9, [(0, "a")])
    leader_change(h, 2, unclean=True)
    final_read(h, [])
    assert not reasons(UNCLEAN, h)["vanished-read"].violation
    assert reasons(DURABLE, h)["vanished-read"].reason.startswith("forbidden: unclean election off")


def test_a_promise_that_forbids_what_the_settings_allow_says_both():
    promise = Promise("no acknowledged write lost", frozenset({"lost-write-leader-change"}))
    verdict = reasons(ACKS1, lost_in_a_change(), promise)["lost-write-leader-change"]
    assert verdict.violation
    assert verdict.reason.startswith("forbidden: the promise rules it out (no acknowledged write lost)")
    assert "acks=1 loses writes" in verdict.reason


def test_replication_settings_come_from_the_topic_over_the_brokers():
    settings = WorkloadSettings.from_scenario_settings(
        "produce",
        {"acks": "all"},
        topic={"min.insync.replicas": 2, "replication.factor": 3},
        broker={"unclean.leader.election.enable": "true", "min.insync.replicas": "1"},
    )
    assert settings.min_insync_replicas == 2 and settings.replication_factor == 3
    assert settings.unclean_leader_election
    assert settings.durability == "acks=all, min.insync.replicas=2, unclean election on"
    plain = WorkloadSettings.from_client_settings("produce", {"acks": "1"})
    assert plain.min_insync_replicas is None and not plain.unclean_leader_election
    assert plain.durability == "acks=1"


SETTINGS = st.builds(
    WorkloadSettings,
    workload=st.sampled_from(["produce", "transactions", "group"]),
    acks=st.sampled_from(["0", "1", "all"]),
    idempotence=st.booleans(),
    retries=st.booleans(),
    isolation_level=st.sampled_from(["read_committed", "read_uncommitted"]),
    transactional=st.booleans(),
    complete_reads=st.booleans(),
    min_insync_replicas=st.sampled_from([None, 1, 2]),
    unclean_leader_election=st.booleans(),
    replication_factor=st.sampled_from([None, 3]),
)


@given(SETTINGS, st.sets(st.sampled_from(ANOMALIES)), st.sets(st.sampled_from(ANOMALIES)))
def test_every_reason_agrees_with_the_ruling(settings, forbids, allows):
    promise = Promise("p", frozenset(forbids), frozenset(allows - forbids))
    allowed = allowed_anomalies(promise, settings)
    for anomaly, reason in verdict_reasons(promise, settings).items():
        assert reason.startswith("allowed: " if anomaly in allowed else "forbidden: "), (anomaly, reason)


# ---- the excerpt a verdict shows -----------------------------------------------------------------------


def test_the_excerpt_shows_the_ack_the_leader_change_and_the_read():
    h = History()
    send(h, b"a", 0, epoch=1, broker=1)
    leader_change(h, 2, unclean=True)
    final_read(h, [])
    [verdict] = [v for v in check_history(h) if v.count]
    assert excerpt(h, verdict.example) == [
        "1 p1 ok send t-0 a@0 (broker 1, epoch 1)",
        "2 p5000 info leader change: t-0 led by 2 in epoch 2 (unclean: from outside the ISR)",
        "4 p1000 ok poll t-0 [] (final read)",
    ]
