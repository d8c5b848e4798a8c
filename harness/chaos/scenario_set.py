"""A chaos run of a set of scenarios on one target kind, each on a fresh proxied cluster, with traces and
``chaos.json`` in the run directory.

``chaos.json`` (schema 1) is ``{"schema": 1, "run_id": ..., "target": ..., "toxiproxy": {"kind", "url"},
"results": [ScenarioResult.to_json(), ...]}``; every result names its scenario, target, verdict (pass,
violation, faults-did-not-bite, faults-not-applied, no-progress, error), the promise, the client's
counters, each anomaly class with its count, whether the settings allow it, and the smallest stretch of
history that shows it, and the fault log. A scenario the target cannot run as written (a docker cluster
cannot cut one directed replication link) is a ``SkippedScenario``: verdict "skipped" and the reason.
A docker cluster brings its own Toxiproxy container, so its run's ``toxiproxy`` is
``{"kind": "container", "url": null, "image": ...}``."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kconform.faults.toxiproxy import open_toxiproxy
from kconform.traces import TraceWriter

from ..targets.base import TargetError
from ..targets.docker_cluster_specs import MAX_BROKERS, TOXIPROXY_IMAGE, cluster_version
from .cluster_topology import ProxiedReferenceCluster
from .docker_topology import ProxiedDockerCluster, unsupported
from .runner import ScenarioResult, run_scenario
from .scenarios import Scenario
from .topology import ProxiedCluster

__all__ = [
    "CHAOS_FILE",
    "SkippedScenario",
    "docker_cluster_of",
    "kafka_version_of",
    "parse_target",
    "run_chaos",
    "write_chaos_results",
]

CHAOS_FILE = "chaos.json"


def parse_target(spec: str) -> tuple[str, int]:
    """``reference[@kafka=V]``, ``reference:N[@kafka=V]`` (a replicated cluster of N >= 2 brokers: kind
    ``cluster``), ``docker:VERSION:N`` (Apache Kafka in containers, N >= 2 brokers: kind ``cluster``
    too, the kind the replication catalogue's scenarios name) or ``rdkafka-mock[:BROKERS]`` (three
    brokers by default)."""
    kafka_version_of(spec)  # checks the options
    docker = docker_cluster_of(spec)
    if docker is not None:
        return "cluster", docker[1]
    kind, _, brokers = spec.partition("@")[0].partition(":")
    if kind not in ("reference", "rdkafka-mock"):
        raise ValueError(
            f"chaos runs on reference[:N], docker:VERSION:N or rdkafka-mock[:BROKERS], not {spec!r}"
        )
    if brokers and not brokers.isdigit():
        raise ValueError(f"{spec!r}: the broker count must be a number")
    if kind == "reference" and brokers and int(brokers) != 1:
        if int(brokers) < 2:
            raise ValueError(f"{spec!r}: a reference cluster has at least 2 brokers")
        return "cluster", int(brokers)
    return kind, int(brokers) if brokers else (3 if kind == "rdkafka-mock" else 1)


def docker_cluster_of(spec: str) -> tuple[str, int] | None:
    """The apache/kafka tag and broker count of a ``docker:VERSION:N`` target (None for other kinds);
    VERSION is checked as the docker targets check it (a Kafka release, 3.7 or newer)."""
    kind, _, rest = spec.partition("@")[0].partition(":")
    if kind != "docker":
        return None
    version, _, brokers = rest.partition(":")
    if not brokers:
        raise ValueError(
            f"{spec!r}: chaos runs on a replicated docker cluster, docker:VERSION:N with N >= 2 brokers "
            "(e.g. docker:4.1.1:3)"
        )
    if not brokers.isdigit():
        raise ValueError(f"{spec!r}: the broker count must be a number, not {brokers!r}")
    if not 2 <= int(brokers) <= MAX_BROKERS:
        raise ValueError(f"{spec!r}: a docker chaos cluster has 2 to {MAX_BROKERS} brokers, not {brokers}")
    try:
        return cluster_version(version, spec), int(brokers)
    except TargetError as exc:
        raise ValueError(str(exc)) from None


def kafka_version_of(spec: str) -> str | None:
    """The release a ``reference@kafka=V`` target answers as (None: the default)."""
    base, _, options = spec.partition("@")
    pairs = dict(item.partition("=")[::2] for item in options.split(",") if item)
    version = pairs.pop("kafka", None)
    if pairs or (version is not None and not base.startswith("reference")):
        raise ValueError(f"{spec!r}: chaos targets take only the reference broker's kafka=VERSION option")
    if version is not None:
        from kconform.codecs.releases import UnknownRelease, kafka_release

        try:
            return kafka_release(version).version
        except UnknownRelease as exc:
            raise ValueError(str(exc)) from None
    return None


@dataclass(frozen=True, slots=True)
class SkippedScenario:
    """A scenario the target cannot run as written, and why: reported, never counted as a pass."""

    scenario: str
    target: str
    promise: str
    reason: str

    @property
    def verdict(self) -> str:
        return "skipped"

    def to_json(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "target": self.target,
            "verdict": self.verdict,
            "promise": self.promise,
            "reason": self.reason,
            "error": "",
        }


def write_chaos_results(run_dir: Path, run_id: str, target: str, toxiproxy: dict, results: list) -> Path:
    path = Path(run_dir) / CHAOS_FILE
    document = {
        "schema": 1,
        "run_id": run_id,
        "target": target,
        "toxiproxy": toxiproxy,
        "results": [r.to_json() if isinstance(r, ScenarioResult | SkippedScenario) else r for r in results],
    }
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(document, indent=2))
    temporary.replace(path)  # readers never see half a file
    return path


def run_chaos(
    target: str,
    scenarios: list[Scenario],
    *,
    duration: float,
    out: Path,
    seed: int = 0,
    toxiproxy_url: str | None = None,
    docker_options: dict[str, Any] | None = None,
    client_properties: dict[str, str] | None = None,
    broker_properties: dict[str, str] | None = None,
    on_start: Callable[[Scenario], None] | None = None,
    on_tick: Callable[[Scenario, float], None] | None = None,
    on_result: Callable[[ScenarioResult | SkippedScenario], None] | None = None,
) -> list[ScenarioResult | SkippedScenario]:
    """Each scenario on a fresh proxied target. ``toxiproxy_url`` is for the reference broker and the
    mock: a docker cluster runs its own Toxiproxy container, and ``docker_options`` go to its target
    (``DockerClusterTarget``: a Docker client, a Toxiproxy client factory ...). ``client_properties``
    and ``broker_properties`` secure a reference broker or cluster (``ProxiedCluster``,
    ``ProxiedReferenceCluster``)."""
    kind, brokers = parse_target(target)
    docker = docker_cluster_of(target)
    out.mkdir(parents=True, exist_ok=True)
    run_id = f"chaos-{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:6]}"
    results: list[ScenarioResult | SkippedScenario] = []
    toxiproxies = contextlib.nullcontext() if docker else open_toxiproxy(toxiproxy_url)
    with toxiproxies as toxiproxy, TraceWriter(out, run_id) as traces:
        if toxiproxy is None:
            about = {"kind": "container", "url": None, "image": TOXIPROXY_IMAGE}
        else:
            about = {"kind": toxiproxy.kind, "url": toxiproxy.url}
        for number, scenario in enumerate(scenarios):
            # the schedule the run would draw (same duration and seed), as the docker proxies can cut it
            schedule = scenario.schedule(duration, seed)
            reason = unsupported(schedule, tuple(range(1, brokers + 1))) if docker else None
            if reason is not None:
                result: ScenarioResult | SkippedScenario = SkippedScenario(
                    scenario.name, target, scenario.promise, reason
                )
            else:
                if on_start is not None:
                    on_start(scenario)
                prefix = f"kconform-{run_id[-6:]}-{number}"
                security = (client_properties, broker_properties)
                with _proxied(
                    kind, toxiproxy, brokers, prefix, target, scenario, docker_options, security
                ) as cluster:
                    result = asyncio.run(
                        run_scenario(
                            scenario,
                            cluster,
                            duration=duration,
                            seed=seed,
                            traces=traces,
                            tick=(lambda f, s=scenario: on_tick(s, f)) if on_tick else None,
                        )
                    )
            results.append(result)
            write_chaos_results(out, run_id, target, about, results)
            if on_result is not None:
                on_result(result)
    return results


def _proxied(
    kind: str, toxiproxy, brokers: int, prefix: str, target: str, scenario: Scenario, docker_options,
    security=(None, None),
):  # fmt: skip
    """A fresh proxied target for one scenario: a replicated cluster (in containers, with their own
    Toxiproxy, or reference processes) with the scenario's broker settings, or one broker or the mock."""
    docker = docker_cluster_of(target)
    if docker is not None:
        version, _ = docker
        return ProxiedDockerCluster(
            version, brokers=brokers, overrides=scenario.broker, **(docker_options or {})
        )
    client_properties, broker_properties = security
    if kind == "cluster":
        return ProxiedReferenceCluster(
            toxiproxy.client,
            brokers=brokers,
            prefix=prefix,
            overrides=scenario.broker,
            kafka_version=kafka_version_of(target),
            client_properties=client_properties,
            broker_properties=broker_properties,
        )
    return ProxiedCluster(
        kind,
        toxiproxy.client,
        brokers=brokers,
        prefix=prefix,
        kafka_version=kafka_version_of(target),
        client_properties=client_properties,
        broker_properties=broker_properties,
    )
