"""A chaos run's record replays to the verdicts the live run gave: written and read back, a record judges
the same; ``kconform chaos --replay`` prints the table with the live run's exit code, and a record it
cannot read is a clear error with exit code 2, never a traceback."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from kconform.faults.nemesis import FaultEvent
from kconform.harness.chaos.cluster_observer import StateChange
from kconform.harness.chaos.replay import (
    ReplayError,
    RunRecord,
    load_record,
    load_records,
    record_directory,
    write_record,
)
from kconform.harness.chaos.runner import ObserverLog, judge
from kconform.harness.chaos.scenarios import load_catalogue
from kconform.harness.checkers import History, LeaderChange, Poll, Send
from kconform.harness.checkers.history import FINAL_READ
from kconform.harness.cli import cli

P = ("chaos-t", 0)
SCENARIOS = load_catalogue(
    """
[acks1-failover]
workload = "produce"
promise = "acks=1 loses what the deposed leader alone had: allowed and measured; no duplicates"
forbids = ["duplicate"]
bites = "leader-changes"
settings = { acks = "1", "enable.idempotence" = false, retries = 0 }
topic = { "replication.factor" = 3, "min.insync.replicas" = 1 }
storm = [{ fault = "latency", on = "1s", off = "1s", params = { latency = 100 } }]

[durable-failover]
workload = "produce"
promise = "no acknowledged write lost or duplicated"
forbids = ["lost-write", "duplicate"]
bites = "leader-changes"
settings = { acks = "all", "enable.idempotence" = true }
topic = { "replication.factor" = 3, "min.insync.replicas" = 2 }
storm = [{ fault = "latency", on = "1s", off = "1s", params = { latency = 100 } }]
"""
)


def failover_history() -> History:
    """Three writes, a leader change that loses the last (epoch 1, the old leader alone had it), a
    consumer that saw a high watermark, and the final read."""
    h = History()
    for offset, value in enumerate([b"p0-0", b"p0-1", "p0-\u00e9"]):
        h.add(0, "invoke", [Send(P, value)], time_ns=1_000 + offset)
        h.add(0, "ok", [Send(P, value, offset, broker=1, leader_epoch=1)], time_ns=2_000 + offset)
    h.add(7, "invoke", [])
    h.add(7, "ok", [Poll({P: ((0, b"p0-0"), (1, b"p0-1"))}, {P: 2})], time_ns=3_000)
    op = h.add(5000, "info", [], time_ns=4_000, note="leader change")
    h.leader_changes.append(LeaderChange(op.index, P, 2, 2, 4_000, False))
    h.add(1000, "invoke", [])
    h.add(1000, "ok", [Poll({P: ((0, b"p0-0"), (1, b"p0-1"))})], note=FINAL_READ)
    return h


def record(name: str, started_ns: int = 1) -> RunRecord:
    faults = [FaultEvent(0.5, "start", "latency@*", True), FaultEvent(1.5, "end", "latency@*", True)]
    stats = {"requests": 40, "leader-changes": 1}
    return RunRecord(SCENARIOS[name], "cluster", 5.0, 0, started_ns, stats, "", faults, failover_history())


def run_directory(tmp_path: Path) -> Path:
    for started, name in enumerate(["durable-failover", "acks1-failover"]):
        write_record(record_directory(tmp_path, name), record(name, started))
    return tmp_path


def test_a_written_record_replays_to_the_same_verdicts(tmp_path):
    for name in SCENARIOS:
        live = judge(record(name))
        write_record(tmp_path / name, record(name))
        again = judge(load_record(tmp_path / name))
        assert again.to_json() == live.to_json()
        assert again.excerpts == live.excerpts and again.excerpts["lost-write-leader-change"]
    loss = {a["anomaly"]: a for a in judge(record("acks1-failover")).to_json()["anomalies"]}
    assert loss["lost-write-leader-change"]["reason"] == (
        "allowed: acks=1 loses writes the leader alone had when it changes"
    )
    durable = {v.anomaly: v for v in judge(record("durable-failover")).violations}
    assert durable["lost-write-leader-change"].reason.startswith(
        "forbidden: acks=all, min.insync.replicas=2, unclean election off"
    )


def test_a_run_directory_replays_in_the_order_it_ran(tmp_path):
    records = load_records(run_directory(tmp_path))
    assert [r.scenario.name for r in records] == ["durable-failover", "acks1-failover"]
    assert [judge(r).verdict for r in records] == ["violation", "pass"]


def output(outcome) -> str:
    return re.sub(r"\s+", " ", outcome.output)


def test_kconform_chaos_replay_prints_the_table_and_the_live_exit_code(tmp_path):
    run = run_directory(tmp_path)
    runner = CliRunner()
    both = runner.invoke(cli, ["chaos", "--replay", str(run)])
    assert both.exit_code == 1, both.output
    text = output(both)
    assert "durable-failover" in text and "violation" in text and "acks1-failover" in text
    assert "unclean election off" in text  # the violation says which settings forbid it
    one = runner.invoke(cli, ["chaos", "--replay", str(run / "replay" / "acks1-failover")])
    assert one.exit_code == 0, one.output
    assert "pass" in output(one) and "acks=1 loses writes" in output(one)
    chosen = runner.invoke(cli, ["chaos", "--replay", str(run), "--scenario", "acks1-failover"])
    assert chosen.exit_code == 0 and "durable-failover" not in output(chosen)
    unknown = runner.invoke(cli, ["chaos", "--replay", str(run), "--scenario", "nope"])
    assert unknown.exit_code == 2 and "nope not recorded" in output(unknown)


def rewrite(path: Path, change) -> None:
    path.write_text(change(path.read_text()))


def _history_version_2(text: str) -> str:
    return text.replace('"version":1', '"version":2', 1)


DAMAGE = {
    "a missing file": (lambda d: (d / "faults.jsonl").unlink(), "faults.jsonl: no such file"),
    "a line cut short": (
        lambda d: rewrite(d / "history.jsonl", lambda t: t[: t.rindex("{") + 8]),
        "not JSON (a line cut short?)",
    ),
    "a file cut at a line": (
        lambda d: rewrite(d / "history.jsonl", lambda t: "".join(t.splitlines(True)[:-1])),
        "without its end line: the file was cut short",
    ),
    "an unknown history version": (
        lambda d: rewrite(d / "history.jsonl", _history_version_2),
        "history version 2; this kconform reads version 1",
    ),
    "an unknown record version": (
        lambda d: rewrite(d / "scenario.json", lambda t: t.replace('"version": 1', '"version": 9')),
        "chaos run record version 9",
    ),
    "an unknown fault log": (
        lambda d: rewrite(d / "faults.jsonl", lambda t: t.replace("kconform-chaos-faults", "x", 1)),
        "not a kconform fault log",
    ),
    "an anomaly this kconform does not know": (
        lambda d: rewrite(d / "scenario.json", lambda t: t.replace('"duplicate"', '"tachyon"')),
        "unknown anomalies tachyon",
    ),
    "a malformed op": (
        lambda d: rewrite(d / "history.jsonl", lambda t: t.replace('"index":1,', '"index":7,', 1)),
        "line 3: a 'op' line has index 7, expected 1",
    ),
}


@pytest.mark.parametrize("damage", DAMAGE, ids=str)
def test_a_record_that_cannot_be_read_is_exit_code_2_with_the_file_named(tmp_path, damage):
    directory = record_directory(run_directory(tmp_path), "acks1-failover")
    spoil, message = DAMAGE[damage]
    spoil(directory)
    with pytest.raises(ReplayError, match=re.escape(message)):
        load_record(directory)
    outcome = CliRunner().invoke(cli, ["chaos", "--replay", str(tmp_path)])
    assert outcome.exit_code == 2, outcome.output
    assert isinstance(outcome.exception, SystemExit) and "Traceback" not in outcome.output
    assert message in output(outcome) and str(directory) in output(outcome).replace(" ", "")


def test_no_record_at_all_is_a_clear_error(tmp_path):
    runner = CliRunner()
    for path, message in [(tmp_path / "absent", "no such directory"), (tmp_path, "no chaos run record here")]:
        outcome = runner.invoke(cli, ["chaos", "--replay", str(path)])
        assert outcome.exit_code == 2 and message in output(outcome), outcome.output


def test_the_scenario_file_holds_what_the_verdicts_depend_on(tmp_path):
    write_record(tmp_path, record("acks1-failover"))
    document = json.loads((tmp_path / "scenario.json").read_text())
    assert document["format"] == "kconform-chaos-run" and document["version"] == 1
    assert document["scenario"]["topic"] == {"replication.factor": 3, "min.insync.replicas": 1}
    assert document["scenario"]["forbids"] == ["duplicate"] and document["stats"]["leader-changes"] == 1
    assert not list(tmp_path.glob("*.tmp"))


def test_the_observers_leader_changes_go_into_the_history_unclean_when_from_outside_the_isr():
    timeline = [
        StateChange(0.0, 0, 1, 5, (1, 2, 3), ()),
        StateChange(1.0, 0, 1, 5, (1,), ("isr-shrinks",)),
        StateChange(2.0, 0, -1, 6, (), ("leader-changes", "leaderless")),
        StateChange(3.0, 0, 2, 7, (2,), ("leader-changes",)),  # 2 was not in the ISR {1}: unclean
    ]
    history = History()
    log = ObserverLog(history, "t", started_ns=10**9)
    log.take_timeline(timeline)
    timeline += [
        StateChange(4.0, 1, 3, 2, (3, 1), ()),
        StateChange(5.0, 1, 1, 3, (1,), ("leader-changes", "isr-shrinks")),  # 1 was in {3, 1}: clean
    ]
    log.take_timeline(timeline)
    log.take_timeline(timeline)  # nothing new: nothing written twice
    assert [(c.partition, c.leader, c.epoch, c.unclean) for c in history.leader_changes] == [
        (("t", 0), -1, 6, None),
        (("t", 0), 2, 7, True),
        (("t", 1), 1, 3, False),
    ]
    assert [op.note for op in history.ops] == ["leader change"] * 3
    assert [c.time_ns for c in history.leader_changes] == [3 * 10**9, 4 * 10**9, 6 * 10**9]


@pytest.mark.slow
def test_a_live_run_replays_to_its_own_verdicts(tmp_path):
    from kconform.faults.toxiproxy import open_toxiproxy
    from kconform.harness.chaos.runner import run_scenario
    from kconform.harness.chaos.topology import ProxiedCluster

    scenario = load_catalogue()["idempotent-partition-heal"]
    with open_toxiproxy() as toxiproxy:
        with ProxiedCluster("reference", toxiproxy.client) as cluster:
            live = asyncio.run(run_scenario(scenario, cluster, duration=5.0, out=tmp_path))
    replayed = judge(load_record(tmp_path))
    assert replayed.to_json() == live.to_json()
    assert replayed.operations.get("ok", 0) > 0


def test_the_observer_keeps_each_brokers_answer_when_it_changes_and_follows_the_freshest():
    from kconform.harness.chaos.cluster_observer import ClusterObserver

    answers = iter(
        [
            {1: {0: (1, 4, (1, 2), (1, 2))}, 2: {0: (1, 4, (1, 2), (1, 2))}},
            {1: {0: (1, 4, (1, 2), (1, 2))}, 2: {0: (2, 5, (1, 2), (2,))}},  # broker 2 has heard first
            {1: {0: (2, 5, (1, 2), (2,))}},  # broker 2 did not answer
        ]
    )
    ticks = iter(range(100))
    observer = ClusterObserver(lambda: next(answers), interval=0, clock=lambda: float(next(ticks)))
    asyncio.run(observer.run(5.5))
    assert [(v.broker, v.leader, v.epoch, v.isr) for v in observer.views] == [
        (1, 1, 4, (1, 2)),
        (2, 1, 4, (1, 2)),
        (2, 2, 5, (2,)),
        (1, 2, 5, (2,)),
    ]
    assert [(c.leader, c.epoch, c.events) for c in observer.timeline] == [
        (1, 4, ()),
        (2, 5, ("leader-changes", "isr-shrinks")),
    ]
    history = History()
    log = ObserverLog(history, "t", started_ns=10**9)
    log.take_views(observer.views)
    log.take_views(observer.views)  # nothing new: nothing written twice
    assert [(v.partition, v.broker, v.leader) for v in history.broker_views] == [
        (("t", 0), 1, 1),
        (("t", 0), 2, 1),
        (("t", 0), 2, 2),
        (("t", 0), 1, 2),
    ]
    assert [op.note for op in history.ops] == ["broker view"] * 4
