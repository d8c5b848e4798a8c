"""Brokers dialing each other where ``kconform.interbroker.addresses`` says (kconform's own test hook,
not a Kafka property: the chaos harness puts a proxy on every directed replication link), live on a
three-broker cluster whose every broker-to-broker link is a TCP forwarder of the test's own and whose
brokers advertise forwarders to clients (``start_cluster``'s ``advertise``):

- the followers fetch through their forwarders and the records reach them (acks=all acknowledged with
  the full ISR, the same log size on every replica);
- a cut link stops one follower's fetches only: it leaves the ISR after replica.lag.time.max.ms
  (``Partition.maybeShrinkIsr``) though it is not fenced, and rejoins once the link is back;
- every broker reaches the controller through the address its ``controller.quorum.bootstrap.servers``
  gives, and a restarted broker keeps that, its peer addresses and its advertised address
  (``ReferenceCluster.restart``)."""

from __future__ import annotations

import asyncio
import time

import pytest

from kconform.codecs.errors import Errors
from kconform.codecs.messages import DescribeLogDirsRequest, MetadataRequest
from kconform.harness.ports import free_port
from kconform.reference_broker.cluster_processes import start_cluster

from ...support.rawclient import RawClient
from ...support.tcp_forwarder import TcpForwarder
from .test_cluster_rules import FAST, brokers_listed, create, produce, state
from .test_failover import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.peer]

BROKERS = (1, 2, 3)
LAG_S = int(FAST["replica.lag.time.max.ms"]) / 1000
SETTINGS = {**FAST, "replica.fetch.backoff.ms": "100"}  # a healed link is fetched through again at once
METADATA, DESCRIBE_LOG_DIRS = 3, 35


@pytest.fixture
def linked(tmp_path):
    """(cluster, links): ``links[(i, j)]`` carries broker i's connections to node j (0: the controller,
    dialed at ``controller.quorum.bootstrap.servers``)."""
    ports = {node: free_port() for node in (0, *BROKERS)}
    links = {(i, j): TcpForwarder(("127.0.0.1", ports[j])) for i in BROKERS for j in (0, *BROKERS) if i != j}
    clients = {b: TcpForwarder(("127.0.0.1", ports[b])) for b in BROKERS}
    dialing = {
        i: {
            "kconform.interbroker.addresses": ",".join(
                f"{j}={links[i, j].address}" for j in BROKERS if j != i
            ),
            "controller.quorum.bootstrap.servers": links[i, 0].address,
        }
        for i in BROKERS
    }
    advertise = {b: clients[b].address for b in BROKERS}
    try:
        cluster = start_cluster(
            tmp_path, 3, overrides=SETTINGS, ports=ports, node_overrides=dialing, advertise=advertise
        )
        yield cluster, links
        cluster.stop()
    finally:
        for forwarder in (*links.values(), *clients.values()):
            forwarder.close()


def ask(cluster, broker: int, api_key: int, version: int, body):
    node = cluster.brokers[broker]

    async def call():
        async with await RawClient.connect(node.host, node.port) as client:
            return await client.call(api_key, version, body, timeout=10)

    return asyncio.run(call())


def log_size(cluster, broker: int, topic: str) -> int:
    """The bytes of ``topic``-0 in the broker's own log (DescribeLogDirs), leader or follower."""
    request = DescribeLogDirsRequest(topics=[DescribeLogDirsRequest.DescribableLogDirTopic(topic, [0])])
    response = ask(cluster, broker, DESCRIBE_LOG_DIRS, 4, request)
    return sum(p.partition_size for r in response.results for t in r.topics for p in t.partitions)


def advertised(cluster) -> dict[int, str]:
    response = ask(cluster, 1, METADATA, 12, MetadataRequest(topics=[]))
    return {b.node_id: f"{b.host}:{b.port}" for b in response.brokers}


def test_followers_fetch_through_the_given_addresses_and_a_cut_link_leaves_the_isr(linked):
    cluster, links = linked
    bootstrap = cluster.bootstrap
    # a broker is listed once the controller has unfenced it, which a loaded machine may not have done
    wanted = {b: cluster.advertise[b] for b in BROKERS}
    wait_for(lambda: advertised(cluster) == wanted, 15, "every broker listed at its given address")
    assert all(links[b, 0].connections > 0 for b in BROKERS), "a broker reached the controller directly"
    create(bootstrap, "linked", {0: [1, 2, 3]})
    wait_for(lambda: state(bootstrap, "linked")[1] == [1, 2, 3], 15, "the ISR complete")
    # a new partition's ISR is full before any follower has fetched: a loaded follower that starts late
    # would leave the ISR after replica.lag.time.max.ms and acks=all would not need it
    wait_for(lambda: links[2, 1].connections > 0 and links[3, 1].connections > 0, 15, "both followers")
    for _ in range(3):
        assert produce(cluster, 1, "linked", acks=-1) == Errors.NONE
    size = log_size(cluster, 1, "linked")
    assert size > 0
    wait_for(
        lambda: log_size(cluster, 2, "linked") == log_size(cluster, 3, "linked") == size, 10, "replicated"
    )

    links[3, 1].cut()
    cut_at = time.monotonic()
    # a follower at the leader's log end is never out of sync (ReplicaState.isCaughtUp): move the end
    assert produce(cluster, 1, "linked", acks=1) == Errors.NONE
    wait_for(lambda: state(bootstrap, "linked")[1] == [1, 2], 15, "broker 3 out of the ISR")
    assert time.monotonic() - cut_at >= LAG_S, "the ISR shrank before replica.lag.time.max.ms"
    assert 3 in brokers_listed(bootstrap), "broker 3 was fenced: its controller link was never cut"
    assert produce(cluster, 1, "linked", acks=-1) == Errors.NONE

    links[3, 1].heal()
    wait_for(lambda: state(bootstrap, "linked")[1] == [1, 2, 3], 15, "broker 3 back in the ISR")
    size = log_size(cluster, 1, "linked")
    wait_for(lambda: log_size(cluster, 3, "linked") == size, 10, "broker 3 caught up")


def test_a_restarted_broker_keeps_its_addresses(linked):
    cluster, links = linked
    bootstrap = cluster.bootstrap
    create(bootstrap, "restarted", {0: [1, 2, 3]})
    wait_for(lambda: state(bootstrap, "restarted")[1] == [1, 2, 3], 15, "the ISR complete")
    before, to_controller = links[3, 1].connections, links[3, 0].connections
    cluster.restart(3)
    assert links[3, 0].connections > to_controller, "the restarted broker reached the controller directly"
    assert produce(cluster, 1, "restarted", acks=1) == Errors.NONE
    wait_for(lambda: links[3, 1].connections > before, 15, "the restarted broker fetching through its link")
    wait_for(lambda: state(bootstrap, "restarted")[1] == [1, 2, 3], 15, "broker 3 back in the ISR")
    assert advertised(cluster)[3] == cluster.advertise[3]
    size = log_size(cluster, 1, "restarted")
    wait_for(lambda: log_size(cluster, 3, "restarted") == size, 10, "the record on broker 3")
