"""A reference broker process per test module, on a free port, for the live client suites."""

from __future__ import annotations

import pytest

from kconform.reference_broker.process import start_broker_process


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    node = start_broker_process(tmp_path_factory.mktemp("broker"))
    yield node
    node.stop()
    assert node.process.returncode == 0, "\n".join(node.output[-40:])
