"""kconform's pytest plugin: run the conformance suites against any target, and the differential
suites against any pair.

    pytest suites/conformance --kafka-target bootstrap:localhost:9092
    pytest suites/differential --kafka-target reference --kafka-target-b rdkafka-mock
    pytest ... --kconform-traces runs/today     # every exchange the suites make, as trace rows

Fixtures: ``kafka_target`` (started once per session, stopped at the end), ``kafka_target_pair``,
``kafka_bootstrap``, ``kconform_traces`` (a TraceWriter, or None). The repository's suites load it from
their conftest; any other test tree loads it with ``pytest -p kconform.harness.pytest_plugin``."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

DEFAULT_TARGET = "reference"
DEFAULT_TARGET_B = "rdkafka-mock"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kconform")
    group.addoption(
        "--kafka-target",
        default=DEFAULT_TARGET,
        help="target for suites/conformance (reference, rdkafka-mock, docker:4.0, tansu, bootstrap:H:PORT)",
    )
    group.addoption(
        "--kafka-target-b", default=DEFAULT_TARGET_B, help="second target for suites/differential"
    )
    group.addoption(
        "--kconform-traces",
        default=None,
        type=Path,
        help="write the suites' exchanges as trace rows to this run directory",
    )


def _start(spec: str):
    from kconform.harness.targets.base import TargetError
    from kconform.harness.targets.registry import make_target

    try:
        target = make_target(spec)
        target.start()
    except TargetError as exc:
        pytest.fail(f"target {spec!r} could not be started: {exc}", pytrace=False)
    return target


@pytest.fixture(scope="session")
def kafka_target(request: pytest.FixtureRequest):
    target = _start(request.config.getoption("--kafka-target"))
    yield target
    target.stop()


@pytest.fixture(scope="session")
def kafka_target_pair(request: pytest.FixtureRequest):
    a = _start(request.config.getoption("--kafka-target"))
    b = _start(request.config.getoption("--kafka-target-b"))
    yield a, b
    a.stop()
    b.stop()


@pytest.fixture(scope="session")
def kafka_bootstrap(kafka_target) -> str:
    return kafka_target.bootstrap


@pytest.fixture(scope="session")
def kconform_traces(request: pytest.FixtureRequest):
    directory = request.config.getoption("--kconform-traces")
    if directory is None:
        yield None
        return
    from kconform.traces import TraceWriter

    worker = getattr(request.config, "workerinput", {}).get("workerid", "main")
    writer = TraceWriter(directory, f"pytest-{worker}-{uuid.uuid4().hex[:8]}")
    yield writer
    writer.close()
