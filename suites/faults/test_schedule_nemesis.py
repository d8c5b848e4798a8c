"""Nemesis schedules: TOML in and out, clear errors, seeded random schedules, the event plan, and a run
against recording drivers."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kconform.faults.nemesis import Nemesis, plan
from kconform.faults.schedule import (
    ScheduleError,
    load_schedule,
    parse_duration,
    random_schedule,
    schedule_from_data,
)

EXAMPLE = """
name = "leader-latency"

[[step]]
at = "500ms"
fault = "latency"
links = ["broker-1"]
duration = "2s"
[step.params]
latency = 200
jitter = 50

[[step]]
at = "1s"
fault = "flap"
links = ["*"]
duration = "1s"
[step.params]
period = 0.25

[[step]]
at = "3s"
fault = "kill"
links = ["node-1"]
"""


def test_a_schedule_reads_from_toml_and_writes_back_the_same(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(EXAMPLE)
    schedule = load_schedule(path)
    assert [s.fault for s in schedule.steps] == ["latency", "flap", "kill"]
    first = schedule.steps[0]
    assert (first.at, first.duration, first.params["latency"], first.params["stream"]) == (
        0.5,
        2.0,
        200,
        "downstream",
    )
    assert schedule.steps[2].duration is None
    again = tmp_path / "again.toml"
    again.write_text(schedule.to_toml())
    assert load_schedule(again).steps == schedule.steps
    assert [s.label() for s in schedule.active_at(1.2)] == [
        "latency@broker-1(jitter=50,latency=200)",
        "flap@*(period=0.25)",
    ]


@pytest.mark.parametrize(
    ("step", "message"),
    [
        ({"fault": "earthquake"}, "is not one of"),
        ({"fault": "latency", "params": {"latncy": 5}}, "latency takes"),
        ({"fault": "latency", "at": "soon"}, "not a duration"),
        ({"fault": "latency", "duration": "0s"}, "duration > 0"),
        ({"fault": "latency", "params": {"stream": "sideways"}}, "upstream or downstream"),
        ({"fault": "kill", "links": []}, "links must be"),
        ({"fault": "kill", "when": 3}, "unknown key"),
    ],
)
def test_bad_schedules_are_refused_with_the_step_named(step, message):
    with pytest.raises(ScheduleError, match=message):
        schedule_from_data({"step": [step]})


def test_invalid_toml_is_a_clear_error(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text("[[step]\nat=")
    with pytest.raises(ScheduleError, match="not valid TOML"):
        load_schedule(path)


@given(st.integers(0, 10_000))
def test_random_schedules_are_reproducible_and_stay_in_the_run(seed):
    a = random_schedule(seed, duration=20, links=["b1", "b2"])
    assert a == random_schedule(seed, duration=20, links=["b1", "b2"])
    assert all(0 <= s.at < 20 and s.duration and s.duration > 0 for s in a.steps)
    events = plan(a, 20)
    assert all(0 <= e.at <= 20 for e in events)
    starts = sum(e.action == "start" for e in events)
    assert starts == sum(e.action == "end" for e in events) == len(a.steps)


def test_the_plan_orders_events_and_toggles_flaps():
    schedule = schedule_from_data(
        {
            "step": [
                {"at": 1, "fault": "flap", "links": ["l"], "duration": 1, "params": {"period": 0.3}},
                {"at": 0, "fault": "latency", "links": ["l"], "duration": 1},
            ]
        }
    )
    events = [(e.at, e.action, e.step.fault) for e in plan(schedule, 5)]
    assert events[:2] == [(0, "start", "latency"), (1, "end", "latency")]
    assert events[2] == (1, "start", "flap")
    assert [a for _, a, f in events if f == "flap"] == [
        "start",
        "toggle_on",
        "toggle_off",
        "toggle_on",
        "end",
    ]
    assert plan(schedule, 0.5)[-1].at == 0.5  # the run's end ends what is still on


class Recorder:
    def __init__(self):
        self.calls = []

    def links(self):
        return ["b1", "b2"]

    def nodes(self):
        return ["node-1"]

    def __getattr__(self, name):
        return lambda *args: self.calls.append((name, *args))


def test_a_run_applies_every_event_through_its_driver_and_logs_it():
    schedule = schedule_from_data(
        {
            "step": [
                {"at": 0, "fault": "latency", "links": ["*"], "duration": "50ms", "params": {"latency": 7}},
                {"at": "20ms", "fault": "freeze", "links": ["node-1"], "duration": "20ms"},
                {"at": "30ms", "fault": "rtt", "links": ["2"], "duration": "10ms"},
            ]
        }
    )
    network, processes, mock = Recorder(), Recorder(), Recorder()
    nemesis = Nemesis(schedule, network=network, processes=processes, mock=mock)
    log = asyncio.run(nemesis.run(0.2))
    assert (
        "add_toxic",
        "b1",
        "kconform-0-latency",
        "latency",
        "downstream",
        {"latency": 7, "jitter": 0},
    ) in network.calls
    assert ("remove_toxic", "b2", "kconform-0-latency") in network.calls
    assert processes.calls == [("freeze", "node-1"), ("thaw", "node-1")]
    assert mock.calls == [("set_rtt", 2, 500), ("set_rtt", 2, 0)]
    assert [e.action for e in log] == ["start", "start", "start", "end", "end", "end"]
    assert all(e.ok for e in log) and nemesis.active() == []


def test_a_fault_without_its_driver_is_logged_as_failed_not_raised():
    schedule = schedule_from_data({"step": [{"at": 0, "fault": "kill", "links": ["n"], "duration": "10ms"}]})
    log = asyncio.run(Nemesis(schedule).run(0.05))
    assert not log[0].ok and "needs a driver" in log[0].error


def test_durations():
    assert [parse_duration(v) for v in ("250ms", "2s", "1m", 3, "1.5")] == [0.25, 2.0, 60.0, 3.0, 1.5]
