"""The stateful differential models, run on ``--kafka-target`` and ``--kafka-target-b`` (two reference
brokers by default here, so every step must agree; point them at any pair to compare)."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test

from kconform.harness.diff.engine import DiffEngine
from kconform.harness.diff.stateful import GroupMachine, LogMachine, StepDiverged, machine_for
from kconform.harness.targets.registry import make_target

SETTINGS = settings(
    max_examples=25,
    stateful_step_count=12,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)


@pytest.fixture
def engine(pair):
    loop = asyncio.new_event_loop()
    engine = DiffEngine(*pair)
    yield engine, loop
    loop.run_until_complete(engine.close())
    loop.close()


@pytest.mark.parametrize("machine", [LogMachine, GroupMachine])
def test_two_equal_brokers_agree_on_every_step(engine, machine):
    run_state_machine_as_test(machine_for(machine, *engine), settings=SETTINGS)
    assert engine[0].pairs_compared > 25


def test_a_planted_difference_fails_a_step_and_shrinks(tmp_path):
    with make_target("reference@planted=list-offsets-latest-off-by-one") as a, make_target("reference") as b:
        loop = asyncio.new_event_loop()
        engine = DiffEngine(a, b)
        with pytest.raises(StepDiverged, match=r"ListOffsets/v\d+/topics\[\*\]\.partitions\[\*\]\.offset"):
            run_state_machine_as_test(machine_for(LogMachine, engine, loop), settings=SETTINGS)
        loop.run_until_complete(engine.close())
        loop.close()
