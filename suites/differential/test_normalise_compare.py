"""Normalisation rules and the comparator, on hand-made answers."""

from __future__ import annotations

from kconform.harness.diff.compare import diff_trees, signature
from kconform.harness.diff.normalise import RULES, normalise


def _metadata(node_ids, controller, leader, topic_id, cluster="c1", host="h"):
    return {
        "throttle_time_ms": 7,
        "brokers": [{"node_id": n, "host": host, "port": 9000 + n, "rack": None} for n in node_ids],
        "cluster_id": cluster,
        "controller_id": controller,
        "topics": [
            {
                "name": "t",
                "topic_id": topic_id,
                "error_code": 0,
                "partitions": [
                    {
                        "partition_index": 0,
                        "leader_id": leader,
                        "replica_nodes": [leader],
                        "isr_nodes": [leader],
                    }
                ],
            }
        ],
    }


def test_deployment_details_and_random_ids_do_not_count():
    a = normalise(3, _metadata([1, 2, 3], 2, 3, "aaaa", cluster="x", host="a"))
    b = normalise(3, _metadata([0, 1, 2], 1, 2, "bbbb", cluster="y", host="b"))
    assert diff_trees(a, b) == []
    assert a["brokers"] == [{"node_id": 0}, {"node_id": 1}, {"node_id": 2}]
    assert a["topics"][0]["topic_id"] == "<set>"


def test_a_node_id_that_names_no_listed_broker_stays_visible():
    a = normalise(3, _metadata([1], 1, 1, "id"))
    b = normalise(3, _metadata([1], 0, 1, "id"))  # a controller that is not among the brokers
    [difference] = diff_trees(a, b)
    assert difference.path == "controller_id" and difference.b == "<not a broker: 0>"


def test_member_ids_are_compared_by_order_of_appearance():
    a = normalise(11, {"member_id": "m-1", "leader": "m-1", "members": [{"member_id": "m-1"}]})
    b = normalise(11, {"member_id": "xyz", "leader": "xyz", "members": [{"member_id": "xyz"}]})
    assert diff_trees(a, b) == []
    c = normalise(11, {"member_id": "xyz", "leader": "other", "members": [{"member_id": "xyz"}]})
    assert [d.path for d in diff_trees(a, c)] == ["leader"]


def test_producer_id_0_is_an_id_and_only_minus_1_is_none():
    """Kafka hands producer ids out from 0 (ProducerIdControlManager: the first block starts at 0), so a
    new cluster's first InitProducerId carries 0: an id like any other. -1 (NO_PRODUCER_ID) is none."""
    first = normalise(22, {"error_code": 0, "producer_id": 0, "producer_epoch": 0})
    later = normalise(22, {"error_code": 0, "producer_id": 4000, "producer_epoch": 0})
    refused = normalise(22, {"error_code": 53, "producer_id": -1, "producer_epoch": -1})
    assert first["producer_id"] == later["producer_id"] == "<set>"
    assert refused["producer_id"] == "<unset>"


def test_differences_have_kinds_and_signatures_generalise_indexes():
    a = {"topics": [{"partitions": [{"error_code": 0, "offset": 5}, {"error_code": 0}]}], "x": 1}
    b = {"topics": [{"partitions": [{"error_code": 3, "offset": 6}]}], "y": None}
    found = {(d.path, d.kind) for d in diff_trees(a, b)}
    assert found == {
        ("topics[0].partitions", "length"),
        ("topics[0].partitions[0].error_code", "error_code"),
        ("topics[0].partitions[0].offset", "value"),
        ("x", "missing"),
        ("y", "extra"),
    }
    offset = next(d for d in diff_trees(a, b) if d.kind == "value")
    assert signature("ListOffsets", 7, offset) == "ListOffsets/v7/topics[*].partitions[*].offset/value"


def test_every_rule_says_why():
    assert all(rule.why for rule in RULES.values())
