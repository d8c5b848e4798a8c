"""Shared pytest set-up for every kconform suite."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

REPO_ROOT = Path(__file__).resolve().parent.parent

pytest_plugins = ["kconform.harness.pytest_plugin"]  # --kafka-target, --kafka-target-b, --kconform-traces

settings.register_profile(
    "kconform",
    deadline=None,  # shared CI machines stall; hangs are caught by explicit timeouts instead
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "kconform"))


def kafka_spec_dir() -> Path:
    """Apache Kafka's message definitions: ``$KCONFORM_KAFKA_SPEC`` or ``../shared/kafka-spec``."""
    return Path(os.environ.get("KCONFORM_KAFKA_SPEC", REPO_ROOT.parent / "shared" / "kafka-spec"))


@pytest.fixture(scope="session")
def spec_dir() -> Path:
    """Kafka's own definitions, for the tests that check the committed extract against them. A clone
    without them builds and tests from the extract alone; those few checks are then skipped."""
    path = kafka_spec_dir()
    if not (path / "message").is_dir():
        pytest.skip(f"no Kafka definitions at {path} (set KCONFORM_KAFKA_SPEC): extract not re-checked")
    return path
