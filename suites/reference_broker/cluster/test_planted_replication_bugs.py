"""Planted replication bugs on a live cluster, planted on chosen nodes only (``start_cluster``'s
``planted``), each scenario run on an honest cluster and on one with the bug:

- ``follower-skips-truncation`` on broker 1: it led, wrote records its follower never fetched (the
  replication link cut), stepped down and came back as a follower of the new leader. Honest, it cuts
  its log where the new leader's epoch began (``AbstractFetcherThread.truncateOnFetchResponse``) and
  then holds the leader's records; with the bug it keeps its uncommitted suffix under the leader's
  offsets, and is taken back into the ISR with it.
- ``unclean-election-without-flag`` on the controller: the only in-sync replica dies; honest, the
  partition stays leaderless (``PartitionChangeBuilder.electLeader`` without
  unclean.leader.election.enable); with the bug the out-of-sync replica is elected.

The others (``hw-before-isr``, ``isr-never-shrinks``, ``stale-leader-accepts-writes``) are shown in
process: ``replication/test_planted_replication_bugs.py``."""

from __future__ import annotations

import asyncio

import pytest

from kconform.codecs.errors import Errors
from kconform.codecs.records import iter_batches
from kconform.harness.ports import free_port
from kconform.reference_broker.cluster_processes import start_cluster
from kconform.reference_broker.storage import PartitionLog

from ...support.error_rules_broker import produce_request
from ...support.rawclient import RawClient
from ...support.replication_host import batch
from ...support.tcp_forwarder import TcpForwarder
from .test_cluster_rules import FAST, brokers_listed, create, state
from .test_failover import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.peer]

PRODUCE = 0
BOTH = pytest.mark.parametrize("planted", [False, True], ids=["honest", "planted"])
ACTIVE = "planted bugs active (test only)"


def send(cluster, broker: int, topic: str, *values: str, acks: int) -> int:
    """Produce one batch of ``values`` straight to ``broker``; the error code."""
    node = cluster.brokers[broker]

    async def call() -> int:
        async with await RawClient.connect(node.host, node.port) as client:
            request = produce_request(topic, 0, batch(*values), acks=acks)
            response = await client.call(PRODUCE, 9, request, timeout=15)
            return response.responses[0].partition_responses[0].error_code

    return asyncio.run(call())


def values(cluster, broker: int, topic: str) -> list[str]:
    """Every record value in the broker's own log of ``topic``-0, in offset order (cluster stopped)."""
    log = PartitionLog.open(cluster.data_dir / f"broker-{broker}" / f"{topic}-0", clock=lambda: 0)
    try:
        raw = log.read(log.log_start_offset, 1 << 30).region.read() if log.log_end_offset else b""
    finally:
        log.close()
    return [r.value.decode() for b in iter_batches(raw) for r in b.records]


@pytest.fixture
def stopped_at_end():
    """Clusters to stop (thawed first) when the test ends, however it ends."""
    clusters = []
    yield clusters
    for cluster in clusters:
        for node in cluster.nodes():
            if node.alive():
                node.thaw()
        cluster.stop()


@BOTH
def test_follower_skips_truncation_keeps_its_uncommitted_suffix(tmp_path, stopped_at_end, planted):
    ports = {node: free_port() for node in (0, 1, 2)}
    links = {(1, 2): TcpForwarder(("127.0.0.1", ports[2])), (2, 1): TcpForwarder(("127.0.0.1", ports[1]))}
    try:
        cluster = start_cluster(
            tmp_path,
            2,
            # broker 2 must stay in the ISR while its link is cut, to take over cleanly
            overrides={**FAST, "replica.lag.time.max.ms": "30000", "replica.fetch.backoff.ms": "100"},
            ports=ports,
            node_overrides={
                1: {"kconform.interbroker.addresses": f"2={links[1, 2].address}"},
                2: {"kconform.interbroker.addresses": f"1={links[2, 1].address}"},
            },
            planted={1: ["follower-skips-truncation"] if planted else []},
        )
        stopped_at_end.append(cluster)
        assert any(ACTIVE in line for line in cluster.brokers[1].output) == planted
        assert not any(ACTIVE in line for line in cluster.brokers[2].output + cluster.controller.output)
        second = cluster.brokers[2].bootstrap
        create(cluster.bootstrap, "diverging", {0: [1, 2]})
        wait_for(lambda: state(cluster.bootstrap, "diverging")[1] == [1, 2], 15, "the ISR complete")
        assert send(cluster, 1, "diverging", "a0", "a1", acks=-1) == Errors.NONE
        for link in links.values():  # broker 1 must not fetch from broker 2 either until it restarts
            link.cut()
        assert send(cluster, 1, "diverging", "x2", "x3", acks=1) == Errors.NONE  # never reaches broker 2
        cluster.stop_node(1)  # controlled shutdown: broker 2, still in the ISR, takes over
        wait_for(lambda: state(second, "diverging")[0] == 2, 15, "broker 2 leading")
        assert send(cluster, 2, "diverging", "b2", "b3", acks=1) == Errors.NONE
        assert send(cluster, 2, "diverging", "b4", "b5", acks=1) == Errors.NONE
        for link in links.values():
            link.heal()
        cluster.restart(1)  # the planted bug goes with it
        assert any(ACTIVE in line for line in cluster.brokers[1].output) == planted
        wait_for(lambda: state(second, "diverging")[1] == [1, 2], 15, "broker 1 back in the ISR")
        cluster.stop()
    finally:
        for link in links.values():
            link.close()
    leader = values(cluster, 2, "diverging")
    assert leader == ["a0", "a1", "b2", "b3", "b4", "b5"]
    if not planted:
        assert values(cluster, 1, "diverging") == leader
        return
    # offsets 2 and 3 hold what the old leader alone wrote; the new leader's records from its own end
    assert values(cluster, 1, "diverging") == ["a0", "a1", "x2", "x3", "b4", "b5"]


@BOTH
def test_unclean_election_without_flag_elects_a_replica_out_of_the_isr(tmp_path, stopped_at_end, planted):
    cluster = start_cluster(
        tmp_path, 2, overrides=FAST, planted={0: ["unclean-election-without-flag"] if planted else []}
    )
    stopped_at_end.append(cluster)
    assert any(ACTIVE in line for line in cluster.controller.output) == planted
    second = cluster.brokers[2].bootstrap
    create(cluster.bootstrap, "careful", {0: [1, 2]})
    wait_for(lambda: state(cluster.bootstrap, "careful")[1] == [1, 2], 15, "the ISR complete")
    cluster.node(2).freeze()  # fenced, and out of the ISR ...
    wait_for(lambda: state(cluster.brokers[1].bootstrap, "careful")[1] == [1], 15, "the ISR down to broker 1")
    cluster.kill(1)  # ... then the only in-sync replica dies
    cluster.node(2).thaw()
    if planted:
        leader, isr, _ = wait_for(
            lambda: (s := state(second, "careful"))[0] == 2 and s, 15, "broker 2 elected"
        )
        assert isr == [2]
        assert send(cluster, 2, "careful", "after", acks=-1) == Errors.NONE
        return
    wait_for(lambda: brokers_listed(second) == {2}, 15, "broker 2 back and broker 1 fenced")
    assert state(second, "careful") == (-1, [1], Errors.LEADER_NOT_AVAILABLE)
