"""``kconform.interbroker.addresses``: kconform's own test hook (no Kafka property), ``ID=HOST:PORT``
entries naming where this broker dials a peer broker. A malformed value stops the broker at start
with a message naming the bad entry; the node dials a listed peer at its given address and any other
at its registered endpoint, while what it tells clients (``endpoint_of``) stays the registered one."""

from __future__ import annotations

import pytest

from kconform.reference_broker.config import BROKER_CONFIGS, BrokerConfig, ConfigError, peer_addresses

from ...support.error_rules_broker import run

NAME = "kconform.interbroker.addresses"


def config(value: str) -> BrokerConfig:
    return BrokerConfig.from_sources(None, {"process.roles": "broker", "node.id": "1", NAME: value})


def test_absent_or_empty_means_every_peer_at_its_registered_endpoint():
    assert BrokerConfig.from_sources(None, {"process.roles": "broker", "node.id": "1"})[NAME] == []
    assert peer_addresses(config("")[NAME]) == {}


def test_entries_parse_to_broker_ids_and_addresses():
    parsed = peer_addresses(config("2=127.0.0.1:19093, 3 = proxy.local:19094")[NAME])
    assert parsed == {2: ("127.0.0.1", 19093), 3: ("proxy.local", 19094)}


def test_it_is_not_a_kafka_property():
    definition = BROKER_CONFIGS[NAME]
    assert definition.internal, "DescribeConfigs must not list it: a Kafka broker has no such config"
    assert "not a Kafka property" in definition.note


@pytest.mark.parametrize(
    ("value", "bad_entry", "why"),
    [
        ("2", "'2'", "is not ID=HOST:PORT"),
        ("2=127.0.0.1", "'2=127.0.0.1'", "is not ID=HOST:PORT"),
        ("two=127.0.0.1:9093", "'two=127.0.0.1:9093'", "is not ID=HOST:PORT"),
        ("2=:9093", "'2=:9093'", "is not ID=HOST:PORT"),
        ("2=host:port", "'2=host:port'", "is not ID=HOST:PORT"),
        ("2=127.0.0.1:0", "'2=127.0.0.1:0'", "has port 0, not 1-65535"),
        ("2=127.0.0.1:70000", "'2=127.0.0.1:70000'", "has port 70000, not 1-65535"),
        ("2=a:1,3=b:2,2=c:3", "'2=c:3'", "names broker 2 a second time"),
    ],
)
def test_a_malformed_value_is_a_config_error_naming_the_entry(value, bad_entry, why):
    with pytest.raises(ConfigError) as caught:
        config(value)
    assert caught.value.name == NAME
    message = str(caught.value)
    assert message.startswith(f"Invalid value [{value.replace(',', ', ')}] for configuration {NAME}: ")
    assert message.endswith(f"entry {bad_entry} {why}")


def test_a_node_dials_listed_peers_at_their_given_address_and_tells_clients_the_registered_one(tmp_path):
    async def scenario(broker):
        node = broker.node
        registered = (broker.host, broker.port)
        assert node.endpoint_of(1) == node.peer_address(1) == registered  # itself: not listed
        assert node.peer_address(2) == ("127.0.0.1", 19093)
        assert node.endpoint_of(2) is None  # not registered: clients are told of no broker 2
        assert node.peer_address(3) is None  # neither listed nor registered: not known yet

    run(tmp_path, scenario, **{NAME: "2=127.0.0.1:19093"})
