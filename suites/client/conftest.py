"""Fixtures shared by the admin-client suites (test_admin_*.py): a reference broker process per module,
its bootstrap address, and a fresh 3-partition topic made with confluent-kafka."""

from __future__ import annotations

import pytest

from ..support.admin_client import _name

# ---- fixtures --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    from kconform.reference_broker.process import start_broker_process

    process = start_broker_process(
        tmp_path_factory.mktemp("admin-broker"),
        overrides={"group.initial.rebalance.delay.ms": "0"},
    )
    yield process
    process.stop()


@pytest.fixture(scope="module")
def bootstrap(broker) -> str:
    return broker.bootstrap


@pytest.fixture
def topic(bootstrap) -> str:
    """A fresh 3-partition topic, made with confluent-kafka so our own create is not under test."""
    from confluent_kafka.admin import AdminClient
    from confluent_kafka.admin import NewTopic as PeerNewTopic

    name = _name("t")
    peer = AdminClient({"bootstrap.servers": bootstrap})
    peer.create_topics([PeerNewTopic(name, num_partitions=3, replication_factor=1)])[name].result(15)
    return name
