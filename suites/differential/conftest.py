"""Fixtures the differential suites share."""

from __future__ import annotations

import pytest

from kconform.harness.targets.reference import ReferenceTarget


@pytest.fixture(scope="module")
def pair():
    """Two reference brokers that answer a new group's first join at once."""
    overrides = {"group.initial.rebalance.delay.ms": "0"}
    a, b = ReferenceTarget("a", overrides=overrides), ReferenceTarget("b", overrides=overrides)
    with a, b:
        yield a, b
