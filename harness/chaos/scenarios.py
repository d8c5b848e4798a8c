"""The scenario catalogue (``catalogue.toml``): what each scenario runs, under which faults, and what
Kafka promises there. ``Scenario.schedule(duration)`` turns its storms into a nemesis schedule for a run
of that length: pure, so the same scenario and duration always give the same faults.
``Scenario.allowed_anomalies()`` is what a run may show without breaking the scenario's promise: its
settings and its promise (``forbids``, ``allows``) decide it, through ``checkers.allowed_anomalies``.

Two catalogues ship: ``default`` (``catalogue.toml``: one broker or librdkafka's mock, faults on client
links) and ``replication`` (``replication.toml``: replicated clusters, target ``cluster``). A replication
scenario also names its topic's settings (``topic``: replication.factor, min.insync.replicas,
unclean.leader.election.enable), the brokers' (``broker``), fixed steps (``step``, in nemesis-schedule
form) and a seeded random schedule of cluster faults (``random``)."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from kconform.faults.schedule import (
    Schedule,
    ScheduleError,
    Step,
    parse_duration,
    random_schedule,
    schedule_from_data,
)

from ..checkers.promises import Promise, PromiseError, WorkloadSettings, allowed_anomalies

__all__ = ["CATALOGUES", "CatalogueError", "Scenario", "Storm", "load_catalogue", "QUIET_TAIL"]

WORKLOADS = ("produce", "transactions", "group")
TARGETS = ("reference", "rdkafka-mock", "cluster")  # cluster: any replicated one (reference:N, docker:V:N)
CATALOGUES = {"default": "catalogue.toml", "replication": "replication.toml"}
START = 0.5  # seconds of calm before the first fault, so clients connect first


class CatalogueError(ValueError):
    """A catalogue entry that cannot run; the message names the scenario and the field."""


def QUIET_TAIL(duration: float) -> float:  # noqa: N802 - reads as a constant of the run
    """The calm end of a run (no new faults), so retries and rebalances settle before the checks."""
    return max(1.5, 0.25 * duration)


@dataclass(frozen=True)
class Storm:
    fault: str
    on: float
    off: float
    params: dict[str, Any] = field(default_factory=dict)
    links: tuple[str, ...] = ("*",)


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    workload: str
    promise: str
    bites: str
    settings: dict[str, Any]
    storms: tuple[Storm, ...]
    targets: tuple[str, ...] = TARGETS
    start: float = START  # calm before the first fault
    forbids: frozenset[str] = frozenset()  # anomalies the promise rules out, whatever the settings allow
    allows: frozenset[str] = frozenset()  # anomalies the promise only measures
    topic: dict[str, Any] = field(default_factory=dict)  # the workload topic's settings (replication)
    broker: dict[str, str] = field(default_factory=dict)  # broker settings the cluster starts with
    steps: tuple[dict[str, Any], ...] = ()  # fixed steps, nemesis-schedule form
    random: dict[str, Any] = field(default_factory=dict)  # a seeded random schedule's faults and pace

    @property
    def claims(self) -> Promise:
        """The promise as the checkers read it."""
        return Promise(self.promise, self.forbids, self.allows)

    @property
    def workload_settings(self) -> WorkloadSettings:
        """The producer, topic and broker settings the scenario runs with; every run ends with a
        complete read."""
        return WorkloadSettings.from_scenario_settings(
            self.workload, self.settings, topic=self.topic, broker=self.broker
        )

    def allowed_anomalies(self) -> frozenset[str]:
        return allowed_anomalies(self.claims, self.workload_settings)

    @property
    def replication_factor(self) -> int:
        return int(self.topic.get("replication.factor", 3))

    @property
    def topic_configs(self) -> dict[str, str]:
        """The topic's configs as CreateTopics carries them (all but the replication factor)."""
        return {k: _config_text(v) for k, v in self.topic.items() if k != "replication.factor"}

    def schedule(self, duration: float, seed: int = 0) -> Schedule:
        """Each storm's fault on for ``on`` and off for ``off``, from ``start`` to the quiet tail, then
        the fixed steps, then the random ones drawn from ``seed``, as a nemesis schedule (checked, and
        given each fault's default parameters, by the schedule's own loader)."""
        end = duration - QUIET_TAIL(duration)
        steps = [dict(step) for step in self.steps if parse_duration(step.get("at", 0)) < end]
        for storm in self.storms:
            t = self.start
            while t < end:
                length = round(min(storm.on, end - t), 3)
                if length <= 0:  # what is left before the quiet tail rounds to nothing
                    break
                steps.append(
                    {
                        "at": round(t, 3),
                        "fault": storm.fault,
                        "links": list(storm.links),
                        "duration": length,
                        "params": dict(storm.params),
                    }
                )
                t += storm.on + storm.off
        schedule = schedule_from_data({"step": steps}, name=self.name)
        if not self.random:
            return schedule
        drawn = random_schedule(
            seed,
            duration=end - self.start,
            links=list(self.random.get("links", ["*"])),
            faults=list(self.random["faults"]),
            mean_gap=float(self.random.get("mean_gap", 2.0)),
            max_fault=float(self.random.get("max_fault", 3.0)),
            everywhere=0.0,  # one node or link at a time: at most RF-1 replicas fail at once
        )
        shifted = tuple(
            Step(round(s.at + self.start, 3), s.fault, s.links, s.duration, s.params) for s in drawn.steps
        )
        return Schedule(tuple(sorted(schedule.steps + shifted, key=lambda s: s.at)), self.name)

    def allowed_on(self, target: str) -> bool:
        return target in self.targets


def _storm(name: str, raw: Any) -> Storm:
    if not isinstance(raw, dict):
        raise CatalogueError(f"{name}: each storm is a table")
    unknown = set(raw) - {"fault", "on", "off", "params", "links"}
    if unknown:
        raise CatalogueError(f"{name}: unknown storm key(s) {', '.join(sorted(unknown))}")
    try:
        on, off = parse_duration(raw.get("on", "1s")), parse_duration(raw.get("off", "1s"))
    except ScheduleError as exc:
        raise CatalogueError(f"{name}: {exc}") from None
    if on <= 0 or off < 0:
        raise CatalogueError(f"{name}: on must be > 0 and off >= 0")
    links = raw.get("links", ["*"])
    return Storm(str(raw.get("fault")), on, off, dict(raw.get("params", {})), tuple(links))


def _start(name: str, value: Any) -> float:
    try:
        return parse_duration(value)
    except ScheduleError as exc:
        raise CatalogueError(f"{name}: start: {exc}") from None


def scenarios_from_data(data: dict) -> dict[str, Scenario]:
    out = {}
    for name, raw in data.items():
        if not isinstance(raw, dict):
            raise CatalogueError(f"{name}: expected a table")
        known = {
            "description",
            "workload",
            "promise",
            "forbids",
            "allows",
            "bites",
            "settings",
            "storm",
            "targets",
            "start",
            "topic",
            "broker",
            "step",
            "random",
        }
        unknown = set(raw) - known
        if unknown:
            raise CatalogueError(f"{name}: unknown key(s) {', '.join(sorted(unknown))}")
        workload = raw.get("workload")
        if workload not in WORKLOADS:
            raise CatalogueError(f"{name}: workload {workload!r} is not one of {', '.join(WORKLOADS)}")
        targets = tuple(raw.get("targets", TARGETS))
        if not set(targets) <= set(TARGETS):
            raise CatalogueError(f"{name}: targets must be among {', '.join(TARGETS)}")
        out[name] = Scenario(
            name=name,
            description=str(raw.get("description", "")),
            workload=workload,
            promise=str(raw.get("promise", "")),
            bites=str(raw.get("bites", "requests")),
            settings=dict(raw.get("settings", {})),
            storms=tuple(_storm(name, s) for s in raw.get("storm", [])),
            targets=targets,
            start=_start(name, raw.get("start", START)),
            forbids=_anomalies(name, "forbids", raw.get("forbids", [])),
            allows=_anomalies(name, "allows", raw.get("allows", [])),
            topic=_table(name, "topic", raw.get("topic", {})),
            broker={k: _config_text(v) for k, v in _table(name, "broker", raw.get("broker", {})).items()},
            steps=tuple(_table(name, "step", step) for step in raw.get("step", [])),
            random=_random(name, raw.get("random", {})),
        )
        try:  # the fault names and parameters, checked as any nemesis schedule is
            out[name].schedule(60.0)
        except ScheduleError as exc:
            raise CatalogueError(f"{name}: {exc}") from None
        _check_promise(out[name])
    return out


def _table(name: str, key: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise CatalogueError(f"{name}: {key} is a table")
    return dict(value)


def _random(name: str, value: Any) -> dict[str, Any]:
    table = _table(name, "random", value)
    if table and not (isinstance(table.get("faults"), list) and table["faults"]):
        raise CatalogueError(f"{name}: random needs faults, a list of fault names")
    unknown = set(table) - {"faults", "links", "mean_gap", "max_fault"}
    if unknown:
        raise CatalogueError(
            f"{name}: random takes faults, links, mean_gap and max_fault, not {', '.join(sorted(unknown))}"
        )
    return table


def _config_text(value: Any) -> str:
    """A TOML value as a Kafka config string (true -> "true")."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def _anomalies(name: str, key: str, value: Any) -> frozenset[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise CatalogueError(f"{name}: {key} is a list of anomaly names")
    return frozenset(value)


def _check_promise(scenario: Scenario) -> None:
    """A promise must rule something out (else no run can break it) and name only known anomalies."""
    if not scenario.forbids:
        raise CatalogueError(
            f"{scenario.name}: the promise forbids nothing, so no run could break it; name the anomalies "
            "it rules out in `forbids`"
        )
    try:
        Promise(scenario.promise, scenario.forbids, scenario.allows)
    except PromiseError as exc:
        raise CatalogueError(f"{scenario.name}: {exc}") from None


def load_catalogue(text: str | None = None, *, name: str = "default") -> dict[str, Scenario]:
    """A built-in catalogue (``CATALOGUES``), or one given as TOML text."""
    if text is None:
        if name not in CATALOGUES:
            raise CatalogueError(f"no catalogue {name!r}: the catalogues are {', '.join(CATALOGUES)}")
        text = resources.files("kconform.harness.chaos").joinpath(CATALOGUES[name]).read_text()
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CatalogueError(f"the catalogue is not valid TOML: {exc}") from None
    return scenarios_from_data(data)
