"""Runs a nemesis schedule: turns its steps into timed start and end events (``plan``, pure), then
applies each through the driver for its kind: Toxiproxy for network faults (the same calls to a real
Toxiproxy or to kconform's embedded one), broker processes for kill and freeze, librdkafka's mock
cluster's own hooks for its faults. On a replicated cluster a ``ClusterDriver`` decides what a step acts
on when it starts (the partition's leader then, the links that cut it off), and its end undoes exactly
that. Every event is logged with its outcome and what it acted on, and ``active()`` names the faults in
force, which the workloads copy into their trace rows."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from .schedule import Schedule, Step

__all__ = ["ClusterDriver", "FaultEvent", "Nemesis", "NetworkDriver", "ProcessDriver", "plan"]


@dataclass(frozen=True, slots=True)
class PlannedEvent:
    at: float
    action: str  # start, end, toggle_off, toggle_on
    step: Step
    number: int  # the step's position in the schedule


@dataclass(frozen=True, slots=True)
class FaultEvent:
    at: float  # seconds since the run started, when it was applied
    action: str
    label: str
    ok: bool
    error: str = ""
    targets: tuple[str, ...] = ()  # the links or nodes it acted on


def plan(schedule: Schedule, run_seconds: float) -> list[PlannedEvent]:
    """Every event of the schedule within the run, in time order (ends before starts at one time)."""
    events: list[PlannedEvent] = []
    for number, step in enumerate(schedule.steps):
        if step.at >= run_seconds:
            continue
        end = min(step.ends if step.ends is not None else run_seconds, run_seconds)
        events.append(PlannedEvent(step.at, "start", step, number))
        if step.fault == "flap":
            period = float(step.params.get("period", 1.0))
            t, off = step.at + period, True
            while t < end:
                events.append(PlannedEvent(t, "toggle_on" if off else "toggle_off", step, number))
                t, off = t + period, not off
        events.append(PlannedEvent(end, "end", step, number))
    order = {"end": 0, "toggle_on": 1, "toggle_off": 2, "start": 3}
    return sorted(events, key=lambda e: (e.at, order[e.action], e.number))


class NetworkDriver(Protocol):
    def links(self) -> list[str]: ...
    def add_toxic(self, link: str, name: str, type: str, stream: str, attributes: dict) -> None: ...
    def remove_toxic(self, link: str, name: str) -> None: ...
    def set_enabled(self, link: str, enabled: bool) -> None: ...


class ProcessDriver(Protocol):
    def nodes(self) -> list[str]: ...
    def kill(self, node: str) -> None: ...
    def restart(self, node: str) -> None: ...
    def freeze(self, node: str) -> None: ...
    def thaw(self, node: str) -> None: ...
    def stop(self, node: str) -> None: ...


class ClusterDriver(Protocol):
    """A replicated cluster's roles: what a step names (``leader``, ``isolate`` ...) resolved now."""

    def resolve(self, step: Step) -> list[str]:
        """The links (network faults) or node ids (process faults) the step acts on."""

    def admin(self, step: Step) -> None:
        """Carry out an admin step (``reassign``, ``elect``)."""


class ToxiproxyDriver:
    """Network faults through toxiproxy-python, against any Toxiproxy-compatible server. ``links``
    limits ``*`` to one cluster's proxies (default: every proxy on the server)."""

    def __init__(self, client, links: list[str] | None = None) -> None:
        self.client = client
        self._links = None if links is None else list(links)

    def links(self) -> list[str]:
        return sorted(self.client.proxies()) if self._links is None else list(self._links)

    def add_toxic(self, link, name, type, stream, attributes) -> None:
        self.client.get_proxy(link).add_toxic(
            name=name, type=type, stream=stream, toxicity=1.0, attributes=attributes
        )

    def remove_toxic(self, link, name) -> None:
        self.client.get_proxy(link).destroy_toxic(name)

    def set_enabled(self, link, enabled) -> None:
        proxy = self.client.get_proxy(link)
        proxy.enable() if enabled else proxy.disable()


class Nemesis:
    def __init__(
        self,
        schedule: Schedule,
        *,
        network: NetworkDriver | None = None,
        processes: ProcessDriver | None = None,
        mock: Any = None,  # a target's FaultHooks (rdkafka-mock)
        cluster: ClusterDriver | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.schedule = schedule
        self.network = network
        self.processes = processes
        self.mock = mock
        self.cluster = cluster
        self.clock = clock
        self._resolved: dict[int, list[str]] = {}  # step number -> what its start acted on
        self.log: list[FaultEvent] = []
        self._active: dict[int, Step] = {}
        self._started: float | None = None

    def active(self) -> list[str]:
        return [step.label() for _, step in sorted(self._active.items())]

    async def run(self, run_seconds: float) -> list[FaultEvent]:
        """Apply the schedule for ``run_seconds``; every fault still on at the end is ended."""
        self._started = self.clock()
        for event in plan(self.schedule, run_seconds):
            delay = event.at - (self.clock() - self._started)
            if delay > 0:
                await asyncio.sleep(delay)
            await asyncio.to_thread(self.apply, event)
        return self.log

    def apply(self, event: PlannedEvent) -> None:
        step = event.step
        targets: list[str] = []
        try:
            # an end (or toggle) undoes what the start did, whoever leads now
            targets = self._resolved.get(event.number) if event.action != "start" else None
            if targets is None:
                targets = self._targets(step)
                if event.action == "start":
                    self._resolved[event.number] = targets
            if step.kind == "admin":
                if event.action == "start":
                    self._need(self.cluster, step).admin(step)
            else:
                for target in targets:
                    self._apply_one(event, step, target)
            ok, error = True, ""
        except Exception as exc:  # noqa: BLE001 - a fault that cannot be applied is logged, not fatal
            ok, error = False, f"{type(exc).__name__}: {exc}"
        if event.action == "start":
            self._active[event.number] = step
        elif event.action == "end":
            self._active.pop(event.number, None)
        elapsed = self.clock() - self._started if self._started is not None else event.at
        self.log.append(
            FaultEvent(round(elapsed, 3), event.action, step.label(), ok, error, tuple(targets or ()))
        )

    def _targets(self, step: Step) -> list[str]:
        if self.cluster is not None:
            return self.cluster.resolve(step)
        if step.kind == "admin" or step.fault in ("isolate", "split"):
            raise RuntimeError(f"{step.fault} needs a replicated cluster")
        if step.links != ("*",):
            return list(step.links)
        if step.kind in ("toxic", "link"):
            return self._need(self.network, step).links()
        if step.kind == "process":
            return self._need(self.processes, step).nodes()
        hooks = self._need(self.mock, step)
        if step.fault == "request_errors" or not hasattr(hooks, "nodes"):
            return ["1"]  # request errors are queued cluster-wide: applied once
        return hooks.nodes()

    @staticmethod
    def _need(driver, step: Step):
        if driver is None:
            raise RuntimeError(f"{step.fault} needs a driver this run does not have")
        return driver

    def _apply_one(self, event: PlannedEvent, step: Step, target: str) -> None:
        action = event.action
        name = f"kconform-{event.number}-{step.fault}"
        if step.kind == "toxic":
            net = self._need(self.network, step)
            if action == "start":
                attributes = {k: v for k, v in step.params.items() if k != "stream"}
                net.add_toxic(target, name, step.fault, step.params.get("stream", "downstream"), attributes)
            elif action == "end":
                net.remove_toxic(target, name)
        elif step.kind == "link":
            net = self._need(self.network, step)
            if action in ("start", "toggle_off"):
                net.set_enabled(target, False)
            else:
                net.set_enabled(target, True)
        elif step.kind == "process":
            procs = self._need(self.processes, step)
            if step.fault == "kill":
                procs.kill(target) if action == "start" else procs.restart(target)
            elif step.fault == "stop":
                procs.stop(target) if action == "start" else procs.restart(target)
            else:
                procs.freeze(target) if action == "start" else procs.thaw(target)
        else:
            mock = self._need(self.mock, step)
            node = int(target) if target.isdigit() else 1
            if step.fault == "broker_down":
                mock.broker_down(node) if action == "start" else mock.broker_up(node)
            elif step.fault == "rtt":
                mock.set_rtt(node, int(step.params["rtt_ms"]) if action == "start" else 0)
            elif step.fault == "request_errors" and action == "start":
                mock.push_request_errors(int(step.params["api_key"]), list(step.params["errors"]))
