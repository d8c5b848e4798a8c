"""AlterConfigs and IncrementalAlterConfigs on a live three-broker reference cluster whose brokers run
without the controller role, with the raw client:

- a broker preprocesses the request (``ConfigAdminManager.preprocess``: a BROKER resource must be "" or
  its own id) and forwards the rest to the controller (``KafkaApis.handleAlterConfigsRequest`` /
  ``handleIncrementalAlterConfigsRequest`` through ``ForwardingManager``), whose answers come back in
  request order (``ConfigAdminManager.reassembleIncrementalResponse``);
- the controller stores topic configs and dynamic broker configs as ConfigRecords in the metadata log
  (``ConfigurationControlManager``), refuses what ``ControllerConfigurationValidator`` and the
  existence check refuse, and writes nothing for validate_only;
- every broker applies the records it fetches (``DynamicConfigPublisher``), so DescribeConfigs on another
  broker shows the topic configs and the cluster default (DYNAMIC_DEFAULT_BROKER_CONFIG), and the
  broker named by a per-broker config shows it as DYNAMIC_BROKER_CONFIG (``ConfigHelper
  .describeConfigs``)."""

from __future__ import annotations

import asyncio

import pytest

from kconform.codecs.errors import Errors
from kconform.codecs.messages import CreateTopicsRequest
from kconform.reference_broker.cluster_processes import start_cluster

from ...support.admin_handlers_client import BROKER, DELETE, SET, TOPIC, AdminTestClient, error
from .test_failover import wait_for

pytestmark = [pytest.mark.slow]

DYNAMIC_TOPIC, DYNAMIC_BROKER, DYNAMIC_DEFAULT, STATIC_BROKER, DEFAULT = 1, 2, 3, 4, 5
NAME = "settings"
AT_LEAST_1MB = "Value must be at least 1048576"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    running = start_cluster(tmp_path_factory.mktemp("cluster"), 3)
    try:
        ask(running, 1, lambda client: create_topic(client, NAME))
        yield running
    finally:
        running.stop()


def ask(cluster, broker_id: int, talk):
    """Run ``talk(client)`` against one broker and return what it returns."""
    node = cluster.brokers[broker_id]

    async def session():
        async with await AdminTestClient.connect(node.host, node.port, client_id="configs") as client:
            return await talk(client)

    return asyncio.run(session())


async def create_topic(client, name: str) -> None:
    topic = CreateTopicsRequest.CreatableTopic(name=name, num_partitions=1, replication_factor=3)
    response = await client.call(19, 7, CreateTopicsRequest(topics=[topic], timeout_ms=15000))
    assert response.topics[0].error_code == Errors.NONE, response


def described(cluster, broker_id: int, kind: int, name: str) -> dict[str, tuple[str | None, int]] | None:
    """name -> (value, source) of a resource as one broker describes it; None while it cannot."""
    result = ask(cluster, broker_id, lambda client: client.describe(kind, name))
    if result.error_code != Errors.NONE:
        return None
    return {c.name: (c.value, c.config_source) for c in result.configs}


def shows(cluster, broker_id: int, kind: int, name: str, expected: dict) -> bool:
    configs = described(cluster, broker_id, kind, name)
    return configs is not None and all(configs.get(k) == v for k, v in expected.items())


def test_incremental_alter_configs_through_a_broker_reaches_every_broker(cluster):
    """ControllerApis.handleIncrementalAlterConfigs: SET and DELETE become ConfigRecords; the brokers'
    DescribeConfigs follow the metadata log."""
    responses = ask(cluster, 1, lambda client: client.incremental(
        (TOPIC, NAME, [("retention.ms", SET, "3600000"), ("segment.ms", DELETE, None)]),
        (BROKER, "", [("message.max.bytes", SET, "2000000")]),
        (BROKER, "1", [("message.max.bytes", SET, "3000000")]),
    ))  # fmt: skip
    assert [error(r) for r in responses] == [(Errors.NONE, None)] * 3
    wait_for(
        lambda: shows(cluster, 2, TOPIC, NAME, {"retention.ms": ("3600000", DYNAMIC_TOPIC)}),
        15,
        "the topic config on broker 2",
    )
    # the cluster default on every broker, as its own resource and under the topic's synonym
    default = {"message.max.bytes": ("2000000", DYNAMIC_DEFAULT)}
    for broker_id in (2, 3):
        wait_for(
            lambda b=broker_id: shows(cluster, b, BROKER, "", default),
            15,
            f"the cluster default on broker {broker_id}",
        )
        configs = described(cluster, broker_id, BROKER, str(broker_id))
        assert configs["message.max.bytes"] == ("2000000", DYNAMIC_DEFAULT)
        assert described(cluster, broker_id, TOPIC, NAME)["max.message.bytes"] == ("2000000", DYNAMIC_DEFAULT)
    # broker 1's own layer only on broker 1, which took it from the log like the others
    wait_for(
        lambda: shows(cluster, 1, BROKER, "1", {"message.max.bytes": ("3000000", DYNAMIC_BROKER)}),
        15,
        "broker 1's own config",
    )
    assert described(cluster, 1, TOPIC, NAME)["max.message.bytes"] == ("3000000", DYNAMIC_BROKER)


def test_alter_configs_through_a_broker_replaces_whole_config_sets(cluster):
    """ControllerApis.handleLegacyAlterConfigs: each resource's whole config is replaced, the keys left out
    deleted (legacyAlterConfigResource's implicit deletions)."""
    ask(cluster, 2, lambda client: client.incremental((TOPIC, NAME, [("retention.ms", SET, "3600000")])))
    wait_for(
        lambda: shows(cluster, 1, TOPIC, NAME, {"retention.ms": ("3600000", DYNAMIC_TOPIC)}),
        15,
        "a first value",
    )
    responses = ask(cluster, 3, lambda client: client.alter(
        (TOPIC, NAME, {"segment.ms": "7200000"}),
        (BROKER, "", {"log.retention.ms": "5400000"}),
    ))  # fmt: skip
    assert [error(r) for r in responses] == [(Errors.NONE, None)] * 2
    expected = {
        "segment.ms": ("7200000", DYNAMIC_TOPIC),
        "retention.ms": ("5400000", DYNAMIC_DEFAULT),  # no topic override left: the new cluster default
    }
    wait_for(lambda: shows(cluster, 1, TOPIC, NAME, expected), 15, "the replaced topic config on broker 1")
    wait_for(
        lambda: described(cluster, 2, BROKER, "") == {"log.retention.ms": ("5400000", DYNAMIC_DEFAULT)},
        15,
        "the replaced cluster default on broker 2",
    )
    assert described(cluster, 2, BROKER, "2")["message.max.bytes"][1] in (STATIC_BROKER, DEFAULT)


def test_errors_come_back_in_request_order_and_validate_only_keeps_nothing(cluster):
    """ConfigAdminManager.preprocess refuses another broker's id on the broker; the controller refuses an
    unknown topic (ConfigResourceExistenceChecker) and a bad value (LogConfig.validate: INVALID_CONFIG);
    reassembleIncrementalResponse puts every answer back in request order."""
    responses = ask(cluster, 1, lambda client: client.incremental(
        (BROKER, "2", [("message.max.bytes", SET, "2000000")]),
        (TOPIC, "ghost", [("retention.ms", SET, "1000")]),
        (TOPIC, NAME, [("segment.bytes", SET, "12")]),
    ))  # fmt: skip
    assert [error(r) for r in responses] == [
        (Errors.INVALID_REQUEST, "Unexpected broker id, expected 1, but received 2"),
        (Errors.UNKNOWN_TOPIC_OR_PARTITION, "The topic 'ghost' does not exist."),
        (Errors.INVALID_CONFIG, f"Invalid value 12 for configuration segment.bytes: {AT_LEAST_1MB}"),
    ]
    dry = ask(
        cluster, 1, lambda client: client.alter((TOPIC, NAME, {"retention.ms": "1"}), validate_only=True)
    )
    assert error(dry[0]) == (Errors.NONE, None)
    # a later change arrives; the validate_only one, earlier, never does (the log keeps their order)
    ask(cluster, 1, lambda client: client.incremental((TOPIC, NAME, [("flush.ms", SET, "60000")])))
    wait_for(lambda: shows(cluster, 3, TOPIC, NAME, {"flush.ms": ("60000", DYNAMIC_TOPIC)}), 15, "the change")
    assert described(cluster, 3, TOPIC, NAME)["retention.ms"] != ("1", DYNAMIC_TOPIC)
