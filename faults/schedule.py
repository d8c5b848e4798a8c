"""Nemesis schedules as data: timed steps that start a fault on some links or nodes and (after its
duration) end it. Written in TOML, checked when loaded, generated at random from a seed.

    [[step]]
    at = "2s"            # from the start of the run
    fault = "latency"    # latency, jitter, bandwidth, timeout, reset_peer, slow_close, slicer,
                         # limit_data, partition, flap, kill, freeze, stop, isolate, split, reassign,
                         # elect, broker_down, rtt, request_errors
    links = ["broker-1"] # proxies (links) for network faults; nodes for process faults; on a
                         # replicated cluster also roles: "leader", "follower", "controller",
                         # "replication:leader", "clients" ... (faults.cluster_links)
    duration = "5s"      # omitted: until the end of the run
    [step.params]
    latency = 200
    jitter = 50

Times take ``ms`` / ``s`` / ``m`` suffixes. Network faults become Toxiproxy toxics (or disable a proxy:
``partition``; ``flap`` toggles it every ``period``); process faults act on broker processes (``kill``
then restart after the duration, ``freeze`` with SIGSTOP then SIGCONT); ``broker_down``, ``rtt`` and
``request_errors`` use librdkafka's mock cluster's own hooks. On a replicated cluster ``stop`` stops a
node cleanly (controlled shutdown) and restarts it, ``isolate`` cuts a node (``leader``, ``follower``,
``controller`` or an id) off from its followers, its clients, the controller or all of them, ``split``
cuts a minority of brokers (the leader first) off from the rest and the controller, ``reassign`` moves
a partition's preferred replica to the next broker, ``elect`` runs a preferred leader election."""

from __future__ import annotations

import random
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "FAULTS",
    "ScheduleError",
    "Schedule",
    "Step",
    "load_schedule",
    "random_schedule",
    "parse_duration",
]

# fault -> (kind, parameters it takes with their defaults)
FAULTS: dict[str, tuple[str, dict[str, Any]]] = {
    "latency": ("toxic", {"latency": 100, "jitter": 0, "stream": "downstream"}),
    "bandwidth": ("toxic", {"rate": 64, "stream": "downstream"}),
    "timeout": ("toxic", {"timeout": 0, "stream": "downstream"}),
    "reset_peer": ("toxic", {"timeout": 0, "stream": "downstream"}),
    "slow_close": ("toxic", {"delay": 500, "stream": "downstream"}),
    "slicer": ("toxic", {"average_size": 64, "size_variation": 32, "delay": 10, "stream": "downstream"}),
    "limit_data": ("toxic", {"bytes": 4096, "stream": "downstream"}),
    "partition": ("link", {}),
    "flap": ("link", {"period": 1.0}),
    "kill": ("process", {}),
    "freeze": ("process", {}),
    "stop": ("process", {}),
    # replicated clusters (``cluster_links``): resolved by role when the fault starts
    "isolate": ("link", {"node": "leader", "from": "all"}),
    "split": ("link", {"minority": 1}),
    "reassign": ("admin", {"partition": 0}),
    "elect": ("admin", {}),
    "broker_down": ("mock", {}),
    "rtt": ("mock", {"rtt_ms": 500}),
    "request_errors": ("mock", {"api_key": 0, "errors": [6, 6, 7]}),
}

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m)?\s*$")


class ScheduleError(ValueError):
    """A schedule that cannot run; the message names the step and what to change."""


def parse_duration(value: Any) -> float:
    """Seconds from ``1.5``, ``"200ms"``, ``"2s"``, ``"1m"``."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    match = _DURATION.match(str(value))
    if not match:
        raise ScheduleError(f"{value!r} is not a duration (try 500ms, 2s or 1m)")
    number, unit = float(match.group(1)), match.group(2) or "s"
    return number / 1000 if unit == "ms" else number * 60 if unit == "m" else number


@dataclass(frozen=True)
class Step:
    at: float  # seconds from the start
    fault: str
    links: tuple[str, ...]  # proxy names, or node names for process faults ("*": every one)
    duration: float | None = None  # None: until the end of the run
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def kind(self) -> str:
        return FAULTS[self.fault][0]

    @property
    def ends(self) -> float | None:
        return None if self.duration is None else self.at + self.duration

    def label(self) -> str:
        """How the fault appears in traces' ``faults`` column."""
        details = ",".join(f"{k}={v}" for k, v in sorted(self.params.items()) if k != "stream")
        where = "+".join(self.links)
        return f"{self.fault}@{where}" + (f"({details})" if details else "")


@dataclass(frozen=True)
class Schedule:
    steps: tuple[Step, ...]
    name: str = "schedule"

    def active_at(self, t: float) -> list[Step]:
        return [s for s in self.steps if s.at <= t and (s.ends is None or t < s.ends)]

    def to_toml(self) -> str:
        lines = [f'name = "{self.name}"', ""]
        for s in self.steps:
            lines += [
                "[[step]]",
                f'at = "{_fmt(s.at)}"',
                f'fault = "{s.fault}"',
                "links = [" + ", ".join(f'"{link}"' for link in s.links) + "]",
            ]
            if s.duration is not None:
                lines.append(f'duration = "{_fmt(s.duration)}"')
            if s.params:
                lines.append("[step.params]")
                lines += [f"{k} = {_toml_value(v)}" for k, v in sorted(s.params.items())]
            lines.append("")
        return "\n".join(lines)


def _fmt(seconds: float) -> str:
    return f"{round(seconds * 1000)}ms"


def _toml_value(value: Any) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return repr(value)


def schedule_from_data(data: dict, *, name: str = "schedule") -> Schedule:
    steps = []
    for number, raw in enumerate(data.get("step", []), start=1):
        where = f"step {number}"
        if not isinstance(raw, dict):
            raise ScheduleError(f"{where}: expected a table")
        unknown = set(raw) - {"at", "fault", "links", "duration", "params"}
        if unknown:
            raise ScheduleError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
        fault = raw.get("fault")
        if fault not in FAULTS:
            raise ScheduleError(f"{where}: fault {fault!r} is not one of {', '.join(FAULTS)}")
        links = raw.get("links", ["*"])
        if isinstance(links, str):
            links = [links]
        if not links or not all(isinstance(link, str) and link for link in links):
            raise ScheduleError(f"{where}: links must be a list of proxy or node names")
        params = dict(FAULTS[fault][1])
        given = raw.get("params", {})
        extra = set(given) - set(params)
        if extra:
            raise ScheduleError(
                f"{where}: {fault} takes {', '.join(params) or 'no parameters'}, "
                f"not {', '.join(sorted(extra))}"
            )
        params.update(given)
        if "stream" in params and params["stream"] not in ("upstream", "downstream"):
            raise ScheduleError(f"{where}: stream must be upstream or downstream")
        try:
            at = parse_duration(raw.get("at", 0))
            duration = parse_duration(raw["duration"]) if "duration" in raw else None
        except ScheduleError as exc:
            raise ScheduleError(f"{where}: {exc}") from None
        if at < 0 or (duration is not None and duration <= 0):
            raise ScheduleError(f"{where}: at must be >= 0 and duration > 0")
        steps.append(Step(at, fault, tuple(links), duration, params))
    return Schedule(tuple(sorted(steps, key=lambda s: s.at)), data.get("name", name))


def load_schedule(path: str | Path) -> Schedule:
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise ScheduleError(f"{path}: not valid TOML: {exc}") from None
    return schedule_from_data(data, name=path.stem)


def random_schedule(
    seed: int,
    *,
    duration: float,
    links: list[str],
    faults: list[str] | None = None,
    mean_gap: float = 2.0,
    max_fault: float = 3.0,
    everywhere: float = 0.3,
) -> Schedule:
    """A seeded random schedule: faults drawn from ``faults`` (network faults by default) start after
    exponential gaps and last up to ``max_fault`` seconds, each on one link or (with probability
    ``everywhere``) all of them."""
    rng = random.Random(seed)
    choices = faults or ["latency", "bandwidth", "timeout", "reset_peer", "slicer", "partition", "flap"]
    steps = []
    t = rng.expovariate(1 / mean_gap)
    while round(t, 3) < duration:  # a start that rounds up to the end would fall outside the run
        fault = rng.choice(choices)
        params = dict(FAULTS[fault][1])
        if fault == "latency":
            params.update(latency=rng.choice([20, 100, 300]), jitter=rng.choice([0, 20, 50]))
        elif fault == "bandwidth":
            params.update(rate=rng.choice([8, 32, 128]))
        elif fault == "timeout":
            params.update(timeout=rng.choice([0, 500, 2000]))
        where = (rng.choice(links),) if rng.random() < 1 - everywhere else ("*",)
        length = round(rng.uniform(0.2, max_fault), 3)
        steps.append(Step(round(t, 3), fault, where, min(length, max(duration - t, 0.1)), params))
        t += length + rng.expovariate(1 / mean_gap)
    return Schedule(tuple(steps), f"random-{seed}")
