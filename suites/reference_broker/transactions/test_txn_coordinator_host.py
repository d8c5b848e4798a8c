"""The transaction coordinator reaches its node only through ``TxnCoordinatorHost``: a broker node must
provide every member of it (checked here, so that a change to the node that drops one fails fast)."""

from __future__ import annotations

from kconform.reference_broker.node import BrokerNode
from kconform.reference_broker.transactions import TxnCoordinatorHost
from kconform.reference_broker.transactions.marker_writer import MarkerHost


def test_a_broker_node_is_a_transaction_coordinator_host(tmp_path):
    node = BrokerNode.from_config_file(None, {"node.id": "1", "log.dirs": str(tmp_path / "data")})
    assert isinstance(node, TxnCoordinatorHost)
    assert isinstance(node, MarkerHost)
    assert callable(node.group_coordinator.complete_transaction)  # the name and arity the writer uses
    assert callable(node.producer_ids.next_id)
    assert callable(node.clock.now_ms)
    topic = node.transaction_state
    for member in ("name", "partition_count", "exists", "ensure", "partition_for", "append", "read"):
        assert hasattr(topic, member), member
