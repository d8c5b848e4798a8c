"""The scenario catalogue as data: its storms become nemesis schedules (pure), and a broken entry is a
clear error naming the scenario."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from kconform.harness.chaos.scenarios import QUIET_TAIL, CatalogueError, load_catalogue

CATALOGUE = load_catalogue()


def test_the_catalogue_has_the_scenarios_the_issue_names():
    assert len(CATALOGUE) >= 10
    for name in (
        "idempotent-reset-peer",
        "idempotent-timeout-storm",
        "acks0-resets",
        "no-idempotence-retries",
        "group-link-flaps",
        "txn-latency",
    ):
        assert name in CATALOGUE
    assert {s.workload for s in CATALOGUE.values()} == {"produce", "transactions", "group"}


@given(st.sampled_from(sorted(CATALOGUE)), st.floats(4, 120))
@example("acks0-resets", 8.667064433014303)  # a last cycle under a millisecond long: dropped
def test_storms_fill_the_run_between_the_start_and_the_quiet_tail(name, duration):
    scenario = CATALOGUE[name]
    schedule = scenario.schedule(duration)
    end = duration - QUIET_TAIL(duration)
    assert all(
        scenario.start <= step.at < end and step.at + step.duration <= end + 1e-3 for step in schedule.steps
    )
    for storm in scenario.storms:  # each storm: on/off cycles, as many as fit
        ats = [
            s.at
            for s in schedule.steps
            if s.fault == storm.fault and s.params.items() >= storm.params.items()
        ]
        # a cycle starts every on + off until the quiet tail; one left with under a millisecond is dropped
        starts = [scenario.start + k * (storm.on + storm.off) for k in range(int(duration / storm.on) + 2)]
        expected = sum(1 for t in starts if t < end and round(min(storm.on, end - t), 3) > 0)
        assert len(ats) >= expected if len(scenario.storms) > 1 else len(ats) == expected
    assert scenario.schedule(duration) == schedule  # pure


@pytest.mark.parametrize(
    "text, message",
    [
        ('[x]\nworkload = "produce"\nstorm = [{ fault = "nope" }]', "fault 'nope'"),
        ('[x]\nworkload = "produce"\nstorm = [{ fault = "latency", params = { bogus = 1 } }]', "not bogus"),
        ('[x]\nworkload = "nap"', "workload 'nap'"),
        ('[x]\nworkload = "produce"\ncolour = "red"', "unknown key(s) colour"),
        ('[x]\nworkload = "produce"\ntargets = ["docker"]', "targets must be among"),
        ('[x]\nworkload = "produce"\nstorm = [{ fault = "latency", on = "soon" }]', "not a duration"),
        ("[x", "not valid TOML"),
        ('[x]\nworkload = "produce"\npromise = "fine"', "the promise forbids nothing"),
        ('[x]\nworkload = "produce"\nforbids = "lost-write"', "forbids is a list of anomaly names"),
        ('[x]\nworkload = "produce"\nforbids = ["lost"]', "unknown anomalies lost"),
        (
            '[x]\nworkload = "produce"\nforbids = ["duplicate"]\nallows = ["duplicate"]',
            "both forbidden and allowed",
        ),
    ],
)
def test_a_broken_entry_is_a_clear_error(text, message):
    with pytest.raises(CatalogueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_catalogue(text)
