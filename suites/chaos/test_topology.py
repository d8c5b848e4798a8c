"""Every client-to-broker link goes through its own proxy, and brokers advertise the proxies, so clients
cannot route around a fault: a toxic on one broker's link slows exactly the partitions it leads."""

from __future__ import annotations

import asyncio
import time

import pytest

from kconform.faults.toxiproxy import open_toxiproxy
from kconform.harness.chaos.topology import ProxiedCluster
from kconform.harness.client.network import NetworkClient
from kconform.harness.client.producer import Producer

pytestmark = pytest.mark.peer


async def advertised(bootstrap: str) -> dict[int, str]:
    client = NetworkClient(bootstrap)
    try:
        await client.refresh_metadata()
        return {b.node_id: f"{b.host}:{b.port}" for b in client.metadata.brokers.values()}
    finally:
        await client.close()


@pytest.mark.parametrize("kind", ["reference", "rdkafka-mock"])
def test_brokers_advertise_their_proxies(kind):
    with open_toxiproxy() as toxiproxy:
        with ProxiedCluster(kind, toxiproxy.client, brokers=3) as cluster:
            listens = {p.listen for p in cluster.proxies.values()}
            addresses = asyncio.run(advertised(cluster.bootstrap))
            assert set(addresses.values()) == listens and len(listens) == cluster.brokers


def test_a_toxic_on_one_link_slows_only_that_brokers_partitions():
    with open_toxiproxy() as toxiproxy:
        with ProxiedCluster("rdkafka-mock", toxiproxy.client, brokers=3) as cluster:
            cluster.create_topic("t", 3)  # broker n+1 leads partition n
            toxiproxy.client.get_proxy(cluster.link_name(2)).add_toxic(
                type="latency", attributes={"latency": 300}
            )

            async def send_times():
                settings = {"bootstrap.servers": cluster.bootstrap, "linger.ms": 0, **cluster.client_settings}
                async with Producer(settings) as producer:
                    for p in range(3):  # warm up: metadata and connections
                        await (await producer.send("t", b"w", partition=p))
                    times = {}
                    for p in range(3):
                        start = time.monotonic()
                        await (await producer.send("t", b"x", partition=p))
                        times[p] = time.monotonic() - start
                    return times

            times = asyncio.run(send_times())
    assert times[1] >= 0.29, times  # partition 1: broker 2, behind the toxic
    assert times[0] < 0.15 and times[2] < 0.15, times
