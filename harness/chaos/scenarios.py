"""The scenario catalogue (``catalogue.toml``): what each scenario runs, under which faults, and what
Kafka promises there. ``Scenario.schedule(duration)`` turns its storms into a nemesis schedule for a run
of that length: pure, so the same scenario and duration always give the same faults.
``Scenario.allowed_anomalies()`` is what a run may show without breaking the scenario's promise: its
settings and its promise (``forbids``, ``allows``) decide it, through ``checkers.allowed_anomalies``."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from kconform.faults.schedule import Schedule, ScheduleError, parse_duration, schedule_from_data

from ..checkers.promises import Promise, PromiseError, WorkloadSettings, allowed_anomalies

__all__ = ["CatalogueError", "Scenario", "Storm", "load_catalogue", "QUIET_TAIL"]

WORKLOADS = ("produce", "transactions", "group")
TARGETS = ("reference", "rdkafka-mock")
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

    @property
    def claims(self) -> Promise:
        """The promise as the checkers read it."""
        return Promise(self.promise, self.forbids, self.allows)

    @property
    def workload_settings(self) -> WorkloadSettings:
        """The producer settings the scenario runs with; every run ends with a complete read."""
        return WorkloadSettings.from_client_settings(self.workload, self.settings)

    def allowed_anomalies(self) -> frozenset[str]:
        return allowed_anomalies(self.claims, self.workload_settings)

    def schedule(self, duration: float) -> Schedule:
        """Each storm's fault on for ``on`` and off for ``off``, from ``start`` to the quiet tail, as a
        nemesis schedule (checked, and given each fault's default parameters, by the schedule's own
        loader)."""
        end = duration - QUIET_TAIL(duration)
        steps = []
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
        return schedule_from_data({"step": steps}, name=self.name)

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
        )
        try:  # the fault names and parameters, checked as any nemesis schedule is
            out[name].schedule(60.0)
        except ScheduleError as exc:
            raise CatalogueError(f"{name}: {exc}") from None
        _check_promise(out[name])
    return out


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


def load_catalogue(text: str | None = None) -> dict[str, Scenario]:
    """The built-in catalogue, or one given as TOML text."""
    if text is None:
        text = resources.files("kconform.harness.chaos").joinpath("catalogue.toml").read_text()
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CatalogueError(f"the catalogue is not valid TOML: {exc}") from None
    return scenarios_from_data(data)
