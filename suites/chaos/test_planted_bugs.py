"""The checkers catch a broker that breaks Kafka's promises. Each planted bug (a test-only switch in the
reference broker, ``reference_broker/planted.py``) runs under the workload that exercises it and must
show exactly the anomalies it causes, no fewer and no others; the same workload on an honest broker
shows none. ``COVERAGE`` names, for every anomaly the checkers know, the planted bug that shows it, or
why no bug in a single broker can (those are proven on hand-made histories in test_promises.py).

Why some bugs show more than one anomaly: a broker that acknowledges a batch and loses it gives its
offsets to the next batch, so the loss comes with two values at one offset (inconsistent-offsets), and a
producer whose next send takes the lost one's offset has sent out of order (nonmonotonic-send, and
int-nonmonotonic-send inside one operation): on a single broker, sends go out of order only that way.
A fetch that skips a batch on resuming shows as poll-skip to a consumer polling one record at a time and
as int-poll-skip to a reader that makes one poll of many fetches."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import pytest

from kconform.harness.chaos.readers import consume_assigned, read_in_single_batches, record_watermarks
from kconform.harness.chaos.scenarios import load_catalogue
from kconform.harness.checkers import History, Send, WorkloadSettings, check_history
from kconform.harness.checkers.promises import ANOMALIES, settings_allow
from kconform.harness.client.producer import Producer
from kconform.harness.targets.reference import ReferenceTarget
from kconform.harness.workloads import final_read, group_consume, produce, transactions
from kconform.reference_broker.planted import PLANTED_BUGS

pytestmark = pytest.mark.slow

TOPIC, PARTITIONS = "w", 2
RETRYING = {"request.timeout.ms": 400, "retry.backoff.ms": 20, "delivery.timeout.ms": 30_000}
NO_RETRIES = {"acks": "all", "enable.idempotence": False, "retries": 0, "request.timeout.ms": 1000}
ACKS1 = {"acks": "1", "enable.idempotence": False, "retries": 0, "linger.ms": 0}
BROKER = {"group.initial.rebalance.delay.ms": "0"}  # groups form at once


# ---- workloads: each returns the anomalies Kafka allows under its settings --------------------------------


async def read_every_way(history: History, target: ReferenceTarget) -> frozenset[str]:
    """Two producers without retries, then every reader: the high watermark against the log end, a
    consumer one record a poll, a whole read in one-batch fetches, and the final read."""
    await asyncio.to_thread(target.create_topic, TOPIC, PARTITIONS)
    bootstrap = target.bootstrap
    await produce(history, bootstrap, TOPIC, PARTITIONS, settings=NO_RETRIES, seconds=1.5, rate=200)
    await record_watermarks(history, bootstrap, TOPIC, PARTITIONS)
    await consume_assigned(history, bootstrap, TOPIC, PARTITIONS)
    await read_in_single_batches(history, bootstrap, TOPIC, PARTITIONS)
    await final_read(history, bootstrap, TOPIC, PARTITIONS, read_committed=False)
    return settings_allow(WorkloadSettings.from_client_settings("produce", NO_RETRIES))


async def sends_in_threes(history: History, target: ReferenceTarget) -> frozenset[str]:
    """One producer, acks=1, one partition: each operation is three sends, each its own batch. Allowed
    is what the acks1-latency scenario allows: its promise forbids loss though acks=1 would allow it.
    With every tenth batch dropped, batch 10 is an operation's first send (its second takes the same
    offset: int-nonmonotonic-send) and batch 30 an operation's last (the next operation's first takes
    it: nonmonotonic-send)."""
    await asyncio.to_thread(target.create_topic, TOPIC, 1)
    tp = (TOPIC, 0)
    async with Producer({"bootstrap.servers": target.bootstrap, **ACKS1}) as producer:
        for n in range(21):  # 63 batches: every dropped one (each tenth) has a successor
            values = [f"t{n}-{i}".encode() for i in range(3)]
            history.add(1, "invoke", [Send(tp, v) for v in values])
            offsets = [(await (await producer.send(TOPIC, v, partition=0))).offset for v in values]
            history.add(1, "ok", [Send(tp, v, o) for v, o in zip(values, offsets, strict=True)])
    await final_read(history, target.bootstrap, TOPIC, 1, read_committed=False)
    return load_catalogue()["acks1-latency"].allowed_anomalies()


async def produce_through_a_freeze(history: History, target: ReferenceTarget) -> frozenset[str]:
    """Idempotent producers while the broker is frozen (SIGSTOP) for 1.5 s: requests time out and are
    resent, as a network timeout storm would make them."""

    async def nemesis():
        await asyncio.sleep(1.0)
        target.node.freeze()
        await asyncio.sleep(1.5)
        target.node.thaw()

    await asyncio.to_thread(target.create_topic, TOPIC, PARTITIONS)
    workload = produce(history, target.bootstrap, TOPIC, PARTITIONS, settings=RETRYING, seconds=3.5, rate=300)
    await asyncio.gather(nemesis(), workload)
    await final_read(history, target.bootstrap, TOPIC, PARTITIONS)
    return settings_allow(WorkloadSettings.from_client_settings("produce", RETRYING))


async def transact(history: History, target: ReferenceTarget) -> frozenset[str]:
    """Transactional producers committing and aborting, read back read_committed."""
    await asyncio.to_thread(target.create_topic, TOPIC, PARTITIONS)
    await transactions(history, target.bootstrap, TOPIC, PARTITIONS, seconds=4.0)
    await final_read(history, target.bootstrap, TOPIC, PARTITIONS, read_committed=True)
    return settings_allow(WorkloadSettings.from_client_settings("transactions", {}))


async def join_a_group(history: History, target: ReferenceTarget) -> frozenset[str]:
    """Three consumers join one group on a topic with three partitions (no records: no commits)."""
    await asyncio.to_thread(target.create_topic, TOPIC, 3)
    await group_consume(history, target.bootstrap, TOPIC, group="g", members=3, seconds=3.0)
    return settings_allow(WorkloadSettings.from_client_settings("group", {}))


async def take_a_group_over(history: History, target: ReferenceTarget) -> frozenset[str]:
    """A consumer of a group reads a few records a poll and commits after each poll; then another
    consumer of the group takes over from the committed offsets."""
    await asyncio.to_thread(target.create_topic, TOPIC, PARTITIONS)
    await produce(history, target.bootstrap, TOPIC, PARTITIONS, settings=RETRYING, seconds=1.0, rate=200)
    few = {"max.poll.records": 5}
    for first_process in (100, 200):
        await group_consume(
            history,
            target.bootstrap,
            TOPIC,
            group="g",
            members=1,
            seconds=3.0,
            settings=few,
            first_process=first_process,
        )
    await final_read(history, target.bootstrap, TOPIC, PARTITIONS)
    return settings_allow(WorkloadSettings.from_client_settings("group", {}))


Workload = Callable[[History, ReferenceTarget], Awaitable[frozenset[str]]]


@dataclass(frozen=True)
class Case:
    bug: str
    workload: Workload
    shows: frozenset[str]  # exactly the violations the checkers must report


def case(bug: str, workload: Workload, *shows: str):
    return pytest.param(Case(bug, workload, frozenset(shows)), id=f"{bug}/{workload.__name__}")


CASES = [
    case("ack-without-write", read_every_way, "lost-write", "inconsistent-offsets"),
    case(
        "ack-without-write",
        sends_in_threes,
        "lost-write",
        "inconsistent-offsets",
        "nonmonotonic-send",
        "int-nonmonotonic-send",
    ),
    case("forget-idempotent-state", produce_through_a_freeze, "duplicate"),
    case("read-committed-serves-aborted", transact, "G1a"),
    case("fetch-hides-newest-batch", read_every_way, "unseen"),
    case("fetch-serves-batches-newest-first", read_every_way, "int-nonmonotonic-poll"),
    case("fetch-high-watermark-past-log-end", read_every_way, "hw-ahead-of-isr"),
    case("fetch-skips-a-batch-on-resume", read_every_way, "poll-skip", "int-poll-skip"),
    case("fetch-out-of-range-once", read_every_way, "nonmonotonic-poll"),
    case("sync-group-copies-leaders-assignment", join_a_group, "double-ownership"),
    case("offset-commit-keeps-first", take_a_group_over, "committed-offset-backwards"),
]
WORKLOADS = [
    read_every_way,
    sends_in_threes,
    produce_through_a_freeze,
    transact,
    join_a_group,
    take_a_group_over,
]

# Anomalies no planted bug in one broker can show, and why; each has a hand-made history instead.
NO_PLANTED_BUG = {
    "future-read": "a value read before its write was asked for: a broker cannot serve a value the client "
    "has not made up yet; only a history recorded out of order shows it",
    "G0": "a write cycle needs two transactions' writes interleaved in opposite orders on two partitions; "
    "the reference broker appends a produce request's partitions without yielding, so it cannot "
    "interleave them without a hook on every produce",
    "G1c": "a cycle through reads needs transactions that read what others wrote; the workloads' "
    "transactions only write",
}
# The replication anomalies need a replicated cluster: their planted bugs run on one, in the catalogue
# scenario that shows each (test_catalogue_catches_replication_bugs.py).
CLUSTER_COVERAGE = {
    "lost-write-leader-change": "hw-before-isr",
    "lagging-replica-in-isr": "isr-never-shrinks",
    "replica-divergence": "follower-skips-truncation",
    "lost-write-unclean": "unclean-election-without-flag",
    "stale-leader-write": "stale-leader-accepts-writes",
}
NO_PLANTED_BUG |= {
    "vanished-read": "needs a consumer to read from a leader in the moment before it fails with a suffix "
    "its followers lack: a window too narrow to hit on purpose; hand-made histories in test_promises.py",
    "split-brain": "needs the controller to hand one leader epoch to two brokers; the planted stale "
    "leader keeps its old epoch (stale-leader-write); hand-made histories in test_replication_checks.py",
    "hw-backwards": "needs a leader whose high watermark falls while it leads; none of the planted bugs "
    "lowers one; hand-made histories in test_replication_checks.py",
}
COVERAGE = {anomaly: c.values[0].bug for c in CASES for anomaly in c.values[0].shows} | CLUSTER_COVERAGE


def run(bug: str | None, workload: Workload) -> tuple[dict[str, int], History]:
    planted = (bug,) if bug else ()
    with ReferenceTarget("planted", planted=planted, overrides=BROKER) as target:
        history = History()
        allowed = asyncio.run(workload(history, target))
    verdicts = check_history(history, allowed)
    return {v.anomaly: v.count for v in verdicts if v.violation}, history


def progress(history: History) -> str:
    """What the workload did, and "" when it did too little to prove anything."""
    writes = sum(1 for op in history.ops if op.type == "ok" and any(True for _ in op.sends()))
    did = f"{writes} acknowledged writes, {len(history.assignments)} assignments"
    did += f", {len(history.commits)} commits"
    return did if writes >= 20 or len(history.assignments) >= 3 else ""


def test_every_anomaly_has_a_planted_bug_or_a_reason_why_none_can_show_it():
    assert set(COVERAGE) | set(NO_PLANTED_BUG) == set(ANOMALIES)
    assert not set(COVERAGE) & set(NO_PLANTED_BUG)
    assert {c.values[0].bug for c in CASES} <= set(PLANTED_BUGS)


@pytest.mark.parametrize("workload", WORKLOADS, ids=lambda w: w.__name__)
def test_an_honest_broker_shows_nothing(workload):
    violations, history = run(None, workload)
    did = progress(history)
    assert did, "the workload did too little to prove anything"
    assert violations == {}, did


@pytest.mark.parametrize("planted", CASES)
def test_a_planted_bug_shows_exactly_its_anomalies(planted: Case):
    violations, history = run(planted.bug, planted.workload)
    did = progress(history)
    assert did, "the workload did too little to prove anything"
    assert set(violations) == planted.shows, (planted.bug, violations, did)


WRAPPED = {  # the one broker function each planted bug replaces
    "list-offsets-latest-off-by-one": "Partition.offset_for_timestamp",
    "ack-without-write": "PartitionLog.append",
    "forget-idempotent-state": "check_sequence",
    "read-committed-serves-aborted": "Partition.read_for_fetch",
    "fetch-hides-newest-batch": "Partition.read_for_fetch",
    "fetch-serves-batches-newest-first": "Partition.read_for_fetch",
    "fetch-high-watermark-past-log-end": "Partition.read_for_fetch",
    "fetch-skips-a-batch-on-resume": "Partition.read_for_fetch",
    "fetch-out-of-range-once": "Partition.read_for_fetch",
    "sync-group-copies-leaders-assignment": "GroupCoordinator.sync_group",
    "offset-commit-keeps-first": "GroupCoordinator.commit_offsets",
    "hw-before-isr": "Partition._advance_high_watermark",
    "isr-never-shrinks": "Partition.maybe_shrink_isr",
    "follower-skips-truncation": "fetcher.position",
    "unclean-election-without-flag": "partition_change._elect",
    "stale-leader-accepts-writes": "Partition.apply_registration",
    "authorizer-allow-before-deny": "Authorizer.authorize",
}
INSTALL = """
import json
from kconform.reference_broker.controller import partition_change
from kconform.reference_broker.groups.coordinator import GroupCoordinator
from kconform.reference_broker.node import BrokerNode  # its constructor is where the broker installs them
from kconform.reference_broker.partition import Partition
from kconform.reference_broker.planted import install
from kconform.reference_broker.replication import fetcher
from kconform.reference_broker.security.authorizer import Authorizer
from kconform.reference_broker.storage import PartitionLog
from kconform.reference_broker.storage import _producer_state_manager as manager

def functions():
    found = {f"{c.__name__}.{n}": getattr(c, n) for c in (Partition, PartitionLog, GroupCoordinator)
             for n in ("read_for_fetch", "offset_for_timestamp", "append", "sync_group", "commit_offsets",
                       "_advance_high_watermark", "maybe_shrink_isr", "apply_registration")
             if hasattr(c, n)}
    return {**found, "check_sequence": manager.check_sequence, "fetcher.position": fetcher.position,
            "partition_change._elect": partition_change._elect, "Authorizer.authorize": Authorizer.authorize}

before = functions()
on = install()
once = functions()
install()
print(json.dumps({"on": sorted(on), "wrapped": sorted(k for k in before if before[k] is not once[k]),
                  "again": sorted(k for k in once if once[k] is not functions()[k])}))
"""


@pytest.mark.parametrize("bug", [None, *sorted(PLANTED_BUGS)])
def test_a_planted_bug_wraps_one_function_once_and_none_is_wrapped_without_one(bug):
    """Off, a broker runs its own functions (no switch is checked on any request); on, the bug replaces
    one function, once, however often the broker starts."""
    env = {k: v for k, v in os.environ.items() if k != "KCONFORM_PLANTED_BUGS"}
    if bug:
        env["KCONFORM_PLANTED_BUGS"] = bug
    done = subprocess.run(
        [sys.executable, "-c", INSTALL], env=env, capture_output=True, text=True, check=True
    )
    report = json.loads(done.stdout)
    assert report == {"on": [bug] if bug else [], "wrapped": [WRAPPED[bug]] if bug else [], "again": []}
    assert set(WRAPPED) == set(PLANTED_BUGS)
