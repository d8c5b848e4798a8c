"""Replication rules on a live three-broker reference cluster, with error codes as the wire carries them
(the raw client) and the partition state from Metadata:

- a follower that stops fetching leaves the ISR after replica.lag.time.max.ms (``Partition.maybeShrinkIsr``)
  and rejoins once it has caught up (``maybeExpandIsr``);
- with the ISR below min.insync.replicas an acks=all write is refused before the append with
  NOT_ENOUGH_REPLICAS (``Partition.appendRecordsToLeader``) while acks=1 still appends, and one already
  waiting times out, the high watermark frozen (``maybeIncrementLeaderHW``);
- the controller fences a broker whose heartbeats stop for broker.session.timeout.ms and elects a new
  leader from the ISR (``ReplicationControlManager.handleBrokerFenced``); Metadata stops listing it;
- a partition whose only in-sync replica is gone stays leaderless unless the topic allows unclean
  elections (``PartitionChangeBuilder.electLeader``, ``QuorumController``'s periodic unclean election);
- a clean stop of a leader moves its leaderships away first (controlled shutdown)."""

from __future__ import annotations

import asyncio
import time

import pytest

from kconform.codecs.errors import Errors
from kconform.reference_broker.cluster_processes import start_cluster

from ...support.error_rules_broker import batch, produce_request
from ...support.rawclient import RawClient
from .test_failover import admin, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.peer]

PRODUCE = 0
FAST = {
    "broker.session.timeout.ms": "2000",
    "broker.heartbeat.interval.ms": "300",
    "replica.lag.time.max.ms": "1500",
    "replica.fetch.wait.max.ms": "100",
    "unclean.leader.election.interval.ms": "500",
}


@pytest.fixture
def cluster(tmp_path):
    running = start_cluster(tmp_path, 3, overrides=FAST)
    yield running
    for node in running.nodes():
        if node.alive():
            node.thaw()
    running.stop()


def create(bootstrap: str, name: str, replicas: dict[int, list[int]], **configs: str) -> None:
    from confluent_kafka.admin import NewTopic

    client = admin(bootstrap)
    assignment = [replicas[p] for p in sorted(replicas)]
    topic = NewTopic(name, num_partitions=len(assignment), replica_assignment=assignment, config=configs)
    client.create_topics([topic])[name].result(15)


def state(bootstrap: str, name: str, partition: int = 0) -> tuple[int, list[int], int]:
    """(leader, isr, error code) of one partition, from Metadata; (-1, [], the topic's error code) while
    a topic just created is listed without its partitions."""
    client = admin(bootstrap)
    topic = client.list_topics(name, timeout=10).topics[name]
    meta = topic.partitions.get(partition)
    if meta is None:
        return -1, [], topic.error.code() if topic.error else -1
    return meta.leader, sorted(meta.isrs), meta.error.code() if meta.error else 0


def brokers_listed(bootstrap: str) -> set[int]:
    return set(admin(bootstrap).list_topics(timeout=10).brokers)


def produce(cluster, broker_id: int, topic: str, acks: int, timeout: float = 15) -> int:
    node = cluster.brokers[broker_id]

    async def send() -> int:
        async with await RawClient.connect(node.host, node.port) as client:
            response = await client.call(
                PRODUCE, 9, produce_request(topic, 0, batch(2), acks=acks), timeout=timeout
            )
            return response.responses[0].partition_responses[0].error_code

    return asyncio.run(send())


def test_isr_shrinks_and_expands_and_min_insync_replicas_guards_acks_all(cluster):
    bootstrap = cluster.bootstrap
    create(bootstrap, "strict", {0: [1, 2, 3]}, **{"min.insync.replicas": "3"})
    wait_for(lambda: state(bootstrap, "strict")[1] == [1, 2, 3], 10, "the ISR complete")
    assert produce(cluster, 1, "strict", acks=-1) == Errors.NONE
    cluster.node(3).freeze()
    started = time.monotonic()
    # the ISR still holds broker 3: the write is appended, the high watermark cannot pass it
    assert produce(cluster, 1, "strict", acks=-1, timeout=20) == Errors.REQUEST_TIMED_OUT
    wait_for(lambda: state(bootstrap, "strict")[1] == [1, 2], 10, "broker 3 out of the ISR")
    assert time.monotonic() - started >= 1.5, "the ISR shrank before replica.lag.time.max.ms"
    # Metadata may come from a broker that learned the new ISR before the leader had its AlterPartition
    # answer: the leader's own answers are awaited (a client retries these errors the same way)
    wait_for(
        lambda: produce(cluster, 1, "strict", acks=-1) == Errors.NOT_ENOUGH_REPLICAS,
        20,
        "NOT_ENOUGH_REPLICAS from the leader",
    )
    assert produce(cluster, 1, "strict", acks=1) == Errors.NONE
    cluster.node(3).thaw()
    wait_for(lambda: state(bootstrap, "strict")[1] == [1, 2, 3], 15, "broker 3 back in the ISR")
    wait_for(lambda: produce(cluster, 1, "strict", acks=-1) == Errors.NONE, 20, "acks=all accepted again")


def test_a_silent_broker_is_fenced_and_its_leaderships_move_to_the_isr(cluster):
    bootstrap = cluster.bootstrap
    create(bootstrap, "moving", {0: [2, 1, 3]})
    wait_for(lambda: state(bootstrap, "moving") == (2, [1, 2, 3], 0), 10, "broker 2 leading a full ISR")
    cluster.node(2).freeze()
    leader, isr, _ = wait_for(
        lambda: (s := state(bootstrap, "moving"))[0] in (1, 3) and s, 10, "a new leader from the ISR"
    )
    assert isr == [1, 3]
    assert 2 not in brokers_listed(bootstrap), "Metadata lists a fenced broker"
    wait_for(lambda: produce(cluster, leader, "moving", acks=-1) == Errors.NONE, 20, "the new leader's ack")
    cluster.node(2).thaw()
    wait_for(lambda: state(bootstrap, "moving")[1] == [1, 2, 3], 15, "broker 2 back in the ISR")
    assert 2 in brokers_listed(bootstrap)


def test_unclean_election_only_where_the_topic_allows_it(cluster):
    bootstrap = cluster.bootstrap
    create(bootstrap, "careful", {0: [1, 2]})
    create(bootstrap, "reckless", {0: [1, 2]}, **{"unclean.leader.election.enable": "true"})
    for name in ("careful", "reckless"):
        wait_for(lambda name=name: state(bootstrap, name)[1] == [1, 2], 10, f"{name}'s ISR complete")
    cluster.node(2).freeze()  # broker 2 falls out of both ISRs ...
    for name in ("careful", "reckless"):
        wait_for(lambda name=name: state(bootstrap, name)[1] == [1], 10, f"{name}'s ISR down to broker 1")
    cluster.kill(1)  # ... then the only in-sync replica dies
    cluster.node(2).thaw()
    wait_for(lambda: state(bootstrap, "reckless")[0] == 2, 15, "an unclean election of broker 2")
    leader, isr, error = state(bootstrap, "careful")
    assert (leader, isr, error) == (-1, [1], Errors.LEADER_NOT_AVAILABLE)
    assert state(bootstrap, "reckless")[1] == [2]


def test_a_clean_stop_moves_leaderships_away_first(cluster):
    bootstrap = cluster.bootstrap
    create(bootstrap, "handover", {0: [3, 1, 2]})
    wait_for(lambda: state(bootstrap, "handover") == (3, [1, 2, 3], 0), 10, "broker 3 leading")
    cluster.stop_node(3)
    # moved before broker 3 exited; another broker's Metadata may take a moment to show it
    leader, isr, _ = wait_for(
        lambda: (s := state(cluster.brokers[1].bootstrap, "handover"))[0] in (1, 2) and s, 5, "a new leader"
    )
    assert 3 not in isr, isr
