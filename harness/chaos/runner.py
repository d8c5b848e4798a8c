"""Runs one chaos scenario on a proxied cluster: the nemesis and the workload together for the run's
length, then a complete read once the faults are over, then the checkers.

Trace rows, one per completed client operation (``api_version`` -1: the operation, not one exchange,
e.g. a send with all its retries; outcome pass / error / timeout for ok / fail / info), carry the faults
active when the operation began and the scenario's verdict. Each fault start and end is a row too, with
``api_key`` -1, ``api_name`` "fault" and ``signature`` "<action> <fault label>".

Every run also leaves its record (``replay``: history, fault log, scenario and settings) in
``<run directory>/replay/<scenario>/``, and ``judge`` turns a record into the result, so a replay of the
record gives the verdicts the live run gave. On a replicated cluster the observer's leader changes and
each broker's own view of the partitions go into the history as bookkeeping (``ObserverLog``), for the
checks that tell a failover's losses from a bug's and catch a stale leader; after the complete read each
follower's log is read too (``replica_reads``), and the fault log's replication cuts are written down
for the ISR check."""

from __future__ import annotations

import asyncio
import collections
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kconform.faults.nemesis import FaultEvent, Nemesis
from kconform.faults.schedule import Schedule, Step
from kconform.traces import TraceRow, TraceWriter

from ..checkers import History, check_history
from ..checkers.excerpt import excerpt
from ..checkers.history import BrokerView, LeaderChange
from ..checkers.promises import WorkloadSettings, allowed_anomalies, verdict_reasons
from ..checkers.report import Verdict
from ..workloads import final_read, group_consume, produce, replica_reads, transactions
from .cluster_observer import BrokerViewChange, ClusterObserver, StateChange, count_truncations
from .replay import RunRecord, record_directory, write_record
from .replication_cuts import replication_cuts
from .scenarios import Scenario
from .topology import ProxiedCluster

__all__ = ["ObserverLog", "ScenarioResult", "judge", "run_scenario"]

PARTITIONS = 3
OBSERVER = 5000  # the process the cluster observer's bookkeeping ops are written as
LEADER_CHANGE = "leader change"
BROKER_VIEW = "broker view"
_OUTCOME = {"ok": "pass", "fail": "error", "info": "timeout"}
_BOOKKEEPING = (  # not client operations
    "assignment",
    "commit",
    "final read",
    "replica read",
    "watermark",
    LEADER_CHANGE,
    BROKER_VIEW,
)
KAFKA_REPLICA_LAG_TIME_MAX_MS = 30_000


@dataclass
class ScenarioResult:
    scenario: str
    target: str
    duration: float
    seed: int
    promise: str
    bites: str
    verdicts: list[Verdict]
    operations: dict[str, int]  # completed client operations by type (ok, fail, info)
    stats: dict[str, int]  # the clients' own counters: requests, retries, errors by name, polls
    faults: list[FaultEvent]
    excerpts: dict[str, list[str]] = field(default_factory=dict)  # anomaly -> its smallest stretch
    error: str = ""

    @property
    def violations(self) -> list[Verdict]:
        return [v for v in self.verdicts if v.violation]

    @property
    def measured(self) -> dict[str, int]:
        """Anomalies the settings allow, with how often they happened."""
        return {v.anomaly: v.count for v in self.verdicts if v.allowed and v.count}

    @property
    def bit(self) -> bool:
        return self.stats.get(self.bites, 0) > 0

    @property
    def verdict(self) -> str:
        if self.error:
            return "error"
        if self.violations:
            return "violation"
        if not all(event.ok for event in self.faults):
            return "faults-not-applied"
        if not self.progressed:
            return "no-progress"
        return "pass" if self.bit else "faults-did-not-bite"

    @property
    def progressed(self) -> bool:
        """The workload did its work at all: sends acknowledged, and for a group, records polled."""
        if self.operations.get("ok", 0) == 0:
            return False
        return self.stats.get("polls", 1) > 0 and self.stats.get("assignments", 1) > 0

    def to_json(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "target": self.target,
            "verdict": self.verdict,
            "promise": self.promise,
            "duration_s": self.duration,
            "seed": self.seed,
            "operations": self.operations,
            "client": self.stats,
            "violations": {v.anomaly: v.count for v in self.violations},
            "measured": self.measured,
            "anomalies": [
                {
                    "anomaly": v.anomaly,
                    "count": v.count,
                    "allowed": v.allowed,
                    "verdict": "violation" if v.violation else "allowed" if v.count else "ok",
                    "reason": v.reason,
                    "detail": v.detail,
                    "excerpt": self.excerpts.get(v.anomaly, []),
                }
                for v in self.verdicts
            ],
            "faults": [
                {"at": e.at, "action": e.action, "fault": e.label, "ok": e.ok, "error": e.error}
                for e in self.faults
            ],
            "error": self.error,
        }


def _resolve_links(schedule: Schedule, cluster: ProxiedCluster) -> Schedule:
    """``broker-N`` in a scenario means this cluster's proxy for broker N."""

    def name(link: str) -> str:
        if link.startswith("broker-") and link[7:].isdigit():
            return cluster.link_name(int(link[7:]))
        return link

    steps = tuple(
        Step(s.at, s.fault, tuple(name(x) for x in s.links), s.duration, s.params)
        if s.kind in ("toxic", "link")
        else s
        for s in schedule.steps
    )
    return Schedule(steps, schedule.name)


async def run_scenario(
    scenario: Scenario,
    cluster: ProxiedCluster,
    *,
    duration: float,
    seed: int = 0,
    traces: TraceWriter | None = None,
    tick: Callable[[float], None] | None = None,
    out: Path | None = None,
) -> ScenarioResult:
    """Run ``scenario`` for ``duration`` seconds; ``tick`` is called about every half second with the
    fraction done (for a progress display). The run's record goes to ``out`` (default: the traces' run
    directory's ``replay/<scenario>/``; none without either)."""
    topic = f"chaos-{scenario.name}-{seed}"
    driver = getattr(cluster, "cluster_driver", None)  # a replicated cluster: roles, every link
    if driver is not None:
        await asyncio.to_thread(
            cluster.create_topic, topic, PARTITIONS, scenario.replication_factor, scenario.topic_configs
        )
    else:
        await asyncio.to_thread(cluster.create_topic, topic, PARTITIONS)
    settings = {**cluster.client_settings, **scenario.settings}
    bootstrap = cluster.bootstrap
    history = History()
    stats: collections.Counter = collections.Counter()
    schedule = scenario.schedule(duration, seed)
    nemesis = Nemesis(
        schedule if driver is not None else _resolve_links(schedule, cluster),
        network=cluster.network,
        processes=cluster.processes,
        mock=cluster.mock,
        cluster=driver,
    )
    observer = ClusterObserver(driver.topic_views) if driver is not None else None
    started_ns = time.time_ns()
    observed = ObserverLog(history, topic, started_ns)

    async def workload() -> None:
        if scenario.workload == "produce":
            await produce(
                history,
                bootstrap,
                topic,
                PARTITIONS,
                settings=settings,
                seconds=duration,
                seed=seed,
                stats=stats,
            )
        elif scenario.workload == "transactions":
            await transactions(
                history,
                bootstrap,
                topic,
                PARTITIONS,
                seconds=duration,
                seed=seed,
                settings=settings,
                stats=stats,
            )
        else:
            producer_settings = {**cluster.client_settings, "acks": "all", "enable.idempotence": True}
            await asyncio.gather(
                produce(
                    history,
                    bootstrap,
                    topic,
                    PARTITIONS,
                    settings=producer_settings,
                    seconds=duration,
                    seed=seed,
                    rate=100,
                    stats=stats,
                ),
                group_consume(
                    history,
                    bootstrap,
                    topic,
                    group=f"{topic}-group",
                    seconds=duration,
                    settings=settings,
                ),
            )
            stats["assignments"] = len(history.assignments)
            stats["polls"] = sum(
                1 for op in history.ops if op.type == "ok" and any(p.records for p in op.polls())
            )

    async def progress() -> None:
        begun = time.monotonic()
        while True:
            if tick is not None:
                tick(min((time.monotonic() - begun) / duration, 1.0))
            await asyncio.sleep(0.5)

    error = ""
    ticker = asyncio.ensure_future(progress())
    try:
        watching = []
        if observer is not None:
            watching = [observer.run(duration), observed.follow(observer, duration)]
        await asyncio.gather(nemesis.run(duration), workload(), *watching)
        if observer is not None:
            observed.catch_up(observer)
        await final_read(
            history,
            bootstrap,
            topic,
            PARTITIONS,
            read_committed=scenario.workload == "transactions",
        )
        if driver is not None:
            await replica_reads(history, bootstrap, topic, PARTITIONS)
    except Exception as exc:  # noqa: BLE001 - a run that breaks is reported as such, with what it saw
        error = f"{type(exc).__name__}: {exc}"
    finally:
        ticker.cancel()
        if observer is not None:  # what it saw before the run broke off, if it did
            observed.catch_up(observer)
    stats.update(slowdown(history, nemesis.log, started_ns))
    if driver is not None:
        lag = int(
            getattr(cluster, "overrides", {}).get("replica.lag.time.max.ms", KAFKA_REPLICA_LAG_TIME_MAX_MS)
        )
        history.replication_cuts += replication_cuts(nemesis.log, started_ns, lag, duration)
    if observer is not None:  # what the cluster showed: ISR shrinks, leader changes, truncations
        stats.update(observer.counts)
        stats["truncations"] = count_truncations(cluster.broker_output())
    record = RunRecord(
        scenario, cluster.kind, duration, seed, started_ns, dict(stats), error, list(nemesis.log), history
    )
    if out is None and traces is not None:
        out = record_directory(traces.directory.parent, scenario.name)
    if out is not None:
        write_record(out, record)
    result = judge(record)
    if traces is not None:
        write_trace_rows(traces, result, history, topic, started_ns)
    return result


def judge(record: RunRecord) -> ScenarioResult:
    """A run's result from its record: the checkers' verdicts under the scenario's settings (client,
    topic and broker) and promise, each with its reason. A live run and its replay both come here."""
    scenario, history = record.scenario, record.history
    settings = WorkloadSettings.from_scenario_settings(
        scenario.workload, scenario.settings, topic=scenario.topic, broker=scenario.broker
    )
    verdicts = check_history(
        history,
        allowed_anomalies(scenario.claims, settings),
        verdict_reasons(scenario.claims, settings),
    )
    completed = collections.Counter(
        op.type for op in history.ops if op.type != "invoke" and op.note not in _BOOKKEEPING
    )
    return ScenarioResult(
        scenario.name,
        record.target,
        record.duration,
        record.seed,
        scenario.promise,
        scenario.bites,
        verdicts,
        dict(completed),
        dict(record.stats),
        list(record.faults),
        {v.anomaly: excerpt(history, v.example[:20]) for v in verdicts if v.count},
        record.error,
    )


class ObserverLog:
    """Writes what the cluster observer saw of the workload's topic into the history as it is seen:
    each leader change (a bookkeeping op noted "leader change" and a ``LeaderChange``, unclean when the
    new leader was not in the ISR the partition had before) and each change in one broker's own answer
    (noted "broker view", a ``BrokerView``)."""

    def __init__(self, history: History, topic: str, started_ns: int) -> None:
        self.history, self.topic, self.started_ns = history, topic, started_ns
        self.taken = 0  # timeline entries already read
        self.views_taken = 0
        self.isr: dict[int, tuple[int, ...]] = {}  # partition -> its ISR in the last sample

    def catch_up(self, observer: ClusterObserver) -> None:
        self.take_timeline(observer.timeline)
        self.take_views(observer.views)

    def take_timeline(self, timeline: Sequence[StateChange]) -> None:
        for change in timeline[self.taken :]:
            before = self.isr.get(change.partition)
            if "leader-changes" in change.events:
                unclean = None if before is None or change.leader < 0 else change.leader not in before
                at_ns = self.started_ns + int(change.at * 1e9)
                op = self.history.add(OBSERVER, "info", [], time_ns=at_ns, note=LEADER_CHANGE)
                self.history.leader_changes.append(
                    LeaderChange(
                        op.index, (self.topic, change.partition), change.leader, change.epoch, at_ns, unclean
                    )
                )
            if change.isr:  # a leaderless partition may show none; the last one it had still counts
                self.isr[change.partition] = change.isr
        self.taken = len(timeline)

    def take_views(self, views: Sequence[BrokerViewChange]) -> None:
        for view in views[self.views_taken :]:
            at_ns = self.started_ns + int(view.at * 1e9)
            op = self.history.add(OBSERVER, "info", [], time_ns=at_ns, note=BROKER_VIEW)
            partition = (self.topic, view.partition)
            self.history.broker_views.append(
                BrokerView(op.index, partition, view.broker, view.leader, view.epoch, view.isr, at_ns)
            )
        self.views_taken = len(views)

    async def follow(self, observer: ClusterObserver, seconds: float, every: float = 0.1) -> None:
        """Catch up every ``every`` seconds for ``seconds``, so changes land near the ops they touched."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.catch_up(observer)
            await asyncio.sleep(every)


def active_faults(faults: list[FaultEvent], seconds: float) -> list[str]:
    """The faults in force ``seconds`` into the run, by the nemesis log."""
    on: dict[str, int] = {}
    for event in faults:
        if event.at > seconds:
            break
        if event.action == "start":
            on[event.label] = on.get(event.label, 0) + 1
        elif event.action == "end":
            on[event.label] = on.get(event.label, 0) - 1
    return sorted(label for label, n in on.items() if n > 0)


def timed_operations(history: History):
    """Each completed client operation with the invoke that began it: (invoke or None, completion)."""
    invoked: dict[tuple, collections.deque] = collections.defaultdict(collections.deque)
    for op in history.ops:
        first = next(iter(op.sends()), None)
        key = (op.process, first.value if first is not None else None)
        if op.type == "invoke":
            invoked[key].append(op)
        elif op.note not in _BOOKKEEPING:
            yield (invoked[key].popleft() if invoked[key] else None), op


def slowdown(history: History, faults: list[FaultEvent], started_ns: int) -> dict[str, int]:
    """Median operation latency (ms) begun under a fault and begun in calm, and whether faults slowed
    clients (``slower``: 1 when the faulted median is at least 1.5x and 5 ms above the calm one)."""
    faulted, calm = [], []
    for start, op in timed_operations(history):
        if start is None or not start.time_ns or not op.time_ns:
            continue
        latency = (op.time_ns - start.time_ns) / 1e6
        (faulted if active_faults(faults, (start.time_ns - started_ns) / 1e9) else calm).append(latency)
    if not faulted or not calm:
        return {}
    f, c = statistics.median(faulted), statistics.median(calm)
    return {"p50_ms_faulted": round(f), "p50_ms_calm": round(c), "slower": int(f >= 1.5 * c and f - c >= 5)}


def write_trace_rows(
    traces: TraceWriter, result: ScenarioResult, history: History, topic: str, started_ns: int
) -> None:
    verdict = result.verdict
    target = result.target
    for start, op in timed_operations(history):
        first = next(iter(op.sends()), None)
        begun_ns = start.time_ns if start is not None and start.time_ns else op.time_ns
        if op.transactional:
            api_key, api_name = 26, "EndTxn"
        elif first is not None:
            api_key, api_name = 0, "Produce"
        else:
            api_key, api_name = 1, "Fetch"
        traces.append(
            TraceRow(
                target=target,
                api_key=api_key,
                api_version=-1,
                outcome=_OUTCOME.get(op.type, "error"),
                case_id=result.scenario,
                api_name=api_name,
                latency_us=max(0, (op.time_ns - begun_ns) // 1000) if op.time_ns else None,
                topics=[topic],
                faults=active_faults(result.faults, (begun_ns - started_ns) / 1e9),
                verdict=verdict,
                started_at_us=begun_ns // 1000 if begun_ns else None,
            )
        )
    for event in result.faults:
        traces.append(
            TraceRow(
                target=target,
                api_key=-1,
                api_version=-1,
                outcome="pass" if event.ok else "error",
                case_id=result.scenario,
                api_name="fault",
                signature=f"{event.action} {event.label}",
                faults=[event.label],
                verdict=verdict,
                started_at_us=(started_ns + int(event.at * 1e9)) // 1000,
            )
        )
    traces.flush()
