"""The checkers catch a broker that breaks Kafka's promises: planted bugs in the reference broker (a
test-only switch) show up as lost or duplicated writes, and the same workload on an honest broker shows
nothing. Faults here are process faults (SIGSTOP / SIGCONT of the broker), so requests time out and
are resent, as a network timeout storm would make them."""

from __future__ import annotations

import asyncio

import pytest

from kconform.harness.checkers import History, check_history, expected_anomalies
from kconform.harness.targets.reference import ReferenceTarget
from kconform.harness.workloads import final_read, produce

pytestmark = pytest.mark.slow

SETTINGS = {"request.timeout.ms": 400, "retry.backoff.ms": 20, "delivery.timeout.ms": 30_000}


def run_workload(planted: tuple[str, ...], *, freeze: bool) -> dict[str, int]:
    with ReferenceTarget("chaos", planted=planted) as target:
        target.create_topic("w", 2)
        history = History()

        async def nemesis():
            if freeze:
                await asyncio.sleep(1.0)
                target.node.freeze()
                await asyncio.sleep(1.5)
                target.node.thaw()

        async def scenario():
            workload = produce(history, target.bootstrap, "w", 2, settings=SETTINGS, seconds=3.5, rate=300)
            await asyncio.gather(nemesis(), workload)
            await final_read(history, target.bootstrap, "w", 2)

        asyncio.run(scenario())
    verdicts = check_history(history, expected_anomalies(acks="all", idempotence=True, complete_reads=True))
    assert sum(op.type == "ok" for op in history.ops) > 300
    return {v.anomaly: v.count for v in verdicts if v.violation}


def test_acknowledging_writes_that_never_land_is_reported_as_lost():
    assert run_workload((), freeze=False) == {}
    violations = run_workload(("ack-without-write",), freeze=False)
    assert violations.get("lost-write", 0) > 0 or violations.get("inconsistent-offsets", 0) > 0, violations


def test_forgetting_idempotent_state_is_reported_as_duplicates():
    assert run_workload((), freeze=True) == {}
    violations = run_workload(("forget-idempotent-state",), freeze=True)
    assert violations.get("duplicate", 0) > 0, violations
