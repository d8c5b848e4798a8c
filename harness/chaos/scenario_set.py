"""A chaos run of a set of scenarios on one target kind, each on a fresh proxied cluster, with traces and
``chaos.json`` in the run directory.

``chaos.json`` (schema 1) is ``{"schema": 1, "run_id": ..., "target": ..., "toxiproxy": {"kind", "url"},
"results": [ScenarioResult.to_json(), ...]}``; every result names its scenario, target, verdict (pass,
violation, faults-did-not-bite, faults-not-applied, no-progress, error), the promise, the client's
counters, each anomaly class with its count, whether the settings allow it, and the smallest stretch of
history that shows it, and the fault log."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from kconform.faults.toxiproxy import open_toxiproxy
from kconform.traces import TraceWriter

from .cluster_topology import ProxiedReferenceCluster
from .runner import ScenarioResult, run_scenario
from .scenarios import Scenario
from .topology import ProxiedCluster

__all__ = ["CHAOS_FILE", "run_chaos", "write_chaos_results"]

CHAOS_FILE = "chaos.json"


def parse_target(spec: str) -> tuple[str, int]:
    """``reference[@kafka=V]``, ``reference:N[@kafka=V]`` (a replicated cluster of N >= 2 brokers: kind
    ``cluster``) or ``rdkafka-mock[:BROKERS]`` (three brokers by default)."""
    kafka_version_of(spec)  # checks the options
    kind, _, brokers = spec.partition("@")[0].partition(":")
    if kind not in ("reference", "rdkafka-mock"):
        raise ValueError(f"chaos runs on reference[:N] or rdkafka-mock[:BROKERS], not {spec!r}")
    if brokers and not brokers.isdigit():
        raise ValueError(f"{spec!r}: the broker count must be a number")
    if kind == "reference" and brokers and int(brokers) != 1:
        if int(brokers) < 2:
            raise ValueError(f"{spec!r}: a reference cluster has at least 2 brokers")
        return "cluster", int(brokers)
    return kind, int(brokers) if brokers else (3 if kind == "rdkafka-mock" else 1)


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


def write_chaos_results(run_dir: Path, run_id: str, target: str, toxiproxy: dict, results: list) -> Path:
    path = Path(run_dir) / CHAOS_FILE
    document = {
        "schema": 1,
        "run_id": run_id,
        "target": target,
        "toxiproxy": toxiproxy,
        "results": [r.to_json() if isinstance(r, ScenarioResult) else r for r in results],
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
    on_start: Callable[[Scenario], None] | None = None,
    on_tick: Callable[[Scenario, float], None] | None = None,
    on_result: Callable[[ScenarioResult], None] | None = None,
) -> list[ScenarioResult]:
    kind, brokers = parse_target(target)
    out.mkdir(parents=True, exist_ok=True)
    run_id = f"chaos-{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:6]}"
    results: list[ScenarioResult] = []
    with open_toxiproxy(toxiproxy_url) as toxiproxy, TraceWriter(out, run_id) as traces:
        about = {"kind": toxiproxy.kind, "url": toxiproxy.url}
        for number, scenario in enumerate(scenarios):
            if on_start is not None:
                on_start(scenario)
            prefix = f"kconform-{run_id[-6:]}-{number}"
            with _proxied(kind, toxiproxy.client, brokers, prefix, target, scenario) as cluster:
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


def _proxied(kind: str, client, brokers: int, prefix: str, target: str, scenario: Scenario):
    """A fresh proxied target for one scenario: a replicated cluster with the scenario's broker
    settings, or one broker or the mock."""
    if kind == "cluster":
        return ProxiedReferenceCluster(
            client,
            brokers=brokers,
            prefix=prefix,
            overrides=scenario.broker,
            kafka_version=kafka_version_of(target),
        )
    return ProxiedCluster(
        kind, client, brokers=brokers, prefix=prefix, kafka_version=kafka_version_of(target)
    )
