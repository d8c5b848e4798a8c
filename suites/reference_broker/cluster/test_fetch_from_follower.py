"""KIP-392, fetch from followers, on a live three-broker reference cluster whose brokers sit in racks
r1, r2 and r3 with ``replica.selector.class`` = Kafka's ``RackAwareReplicaSelector``: raw Fetch requests
as the wire carries them, then confluent-kafka (librdkafka) with ``client.rack`` set.

- a leader asked by a consumer's Fetch v11+ from a follower's rack answers that partition with no
  records, error NONE, its own high watermark, last stable and log start offsets and
  ``preferred_read_replica`` = the follower (``ReplicaManager.readFromLog``,
  ``findPreferredReadReplica``, ``RackAwareReplicaSelector.select``); from the leader's rack, from no
  rack or from an unknown rack it answers with the records and -1;
- a follower serves a consumer's Fetch v11+ up to its own high watermark (``FetchParams.fetchOnlyLeader``
  is false for a consumer with client metadata; ``Partition.fetchRecords``), refuses Fetch v10 with
  NOT_LEADER_OR_FOLLOWER, reads nothing at its high watermark, answers OFFSET_OUT_OF_RANGE past its log
  end and UNKNOWN_LEADER_EPOCH for a leader epoch it does not know yet (``checkCurrentLeaderEpoch``);
- a broker with no replica answers a v16 fetch with NOT_LEADER_OR_FOLLOWER and points at the leader,
  with its endpoint and rack (``KafkaApis.getCurrentLeader``, ``getAliveBrokerNode``)."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest

from kconform.codecs.errors import Errors
from kconform.codecs.messages import FetchRequest, MetadataRequest
from kconform.codecs.records import iter_batch_headers
from kconform.reference_broker.cluster_processes import start_cluster
from kconform.reference_broker.replication.read_replica import RACK_AWARE_REPLICA_SELECTOR

from ...support.rawclient import RawClient
from .test_cluster_rules import create, produce, state
from .test_failover import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.peer]

FETCH, METADATA = 1, 3
CLIENT = {"logger": logging.getLogger("kconform.fetch-from-follower.rdkafka")}
SETTINGS = {
    "broker.session.timeout.ms": "3000",
    "broker.heartbeat.interval.ms": "300",
    "replica.fetch.wait.max.ms": "100",
    "replica.selector.class": RACK_AWARE_REPLICA_SELECTOR,
}
RACKS = {broker: {"broker.rack": f"r{broker}"} for broker in (1, 2, 3)}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    running = start_cluster(tmp_path_factory.mktemp("racks"), 3, overrides=SETTINGS, node_overrides=RACKS)
    yield running
    running.stop()


def call(cluster, broker: int, api_key: int, version: int, request):
    node = cluster.brokers[broker]

    async def send():
        async with await RawClient.connect(node.host, node.port) as client:
            return await client.call(api_key, version, request, timeout=15)

    return asyncio.run(send())


def topic_id_and_epoch(cluster, topic: str) -> tuple[object, int]:
    """The topic's id and partition 0's leader epoch, from Metadata v12 of broker 1."""
    request = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=topic)])
    found = call(cluster, 1, METADATA, 12, request).topics[0]
    return found.topic_id, found.partitions[0].leader_epoch


def fetch(cluster, broker: int, topic: str, *, version=16, offset=0, rack="", leader_epoch=-1):
    """A sessionless consumer Fetch (replica id -1) of partition 0; its one partition answer and the
    response's node endpoints."""
    topic_id, _ = topic_id_and_epoch(cluster, topic) if version >= 13 else (None, -1)
    wanted = FetchRequest.FetchPartition(
        partition=0, current_leader_epoch=leader_epoch, fetch_offset=offset, partition_max_bytes=1 << 20
    )
    named = FetchRequest.FetchTopic(topic_id=topic_id, partitions=[wanted])
    if version < 13:
        named = FetchRequest.FetchTopic(topic=topic, partitions=[wanted])
    request = FetchRequest(max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, topics=[named], rack_id=rack)
    response = call(cluster, broker, FETCH, version, request)
    assert response.error_code == Errors.NONE
    return response.responses[0].partitions[0], response.node_endpoints


def offsets(data) -> list[tuple[int, int]]:
    return [(h.base_offset, h.last_offset) for h in iter_batch_headers(bytes(data.records or b""))]


def replicated(cluster, topic: str, replicas: list[int], batches: int) -> None:
    """``topic`` on ``replicas`` (the first leads), with ``batches`` acks=all batches of two records,
    and every follower's high watermark at the end of them."""
    create(cluster.bootstrap, topic, {0: replicas})
    wait_for(lambda: state(cluster.bootstrap, topic) == (replicas[0], sorted(replicas), 0), 15, "full ISR")
    for _ in range(batches):
        assert produce(cluster, replicas[0], topic, acks=-1) == Errors.NONE
    end = 2 * batches
    for follower in replicas[1:]:
        wait_for(
            lambda f=follower: fetch(cluster, f, topic)[0].high_watermark == end,
            15,
            f"{follower}'s HW at {end}",
        )


def test_leader_names_the_follower_in_the_clients_rack(cluster):
    # ReplicaManager.readFromLog: with a preferred read replica "skip the read"; LogReadResult with
    # the fetchOffsetSnapshot's high watermark, log start and last stable offsets, no aborted list
    replicated(cluster, "nearby", [1, 2, 3], batches=2)
    for rack, follower in (("r2", 2), ("r3", 3)):
        data, _ = fetch(cluster, 1, "nearby", rack=rack)
        assert (data.error_code, data.preferred_read_replica, offsets(data)) == (Errors.NONE, follower, [])
        assert (data.high_watermark, data.last_stable_offset, data.log_start_offset) == (4, 4, 0)
        assert data.aborted_transactions is None
    # Fetch v11 (topics by name) is the first version with rack_id (KafkaApis: "Fetch API version 11
    # added preferred replica logic")
    data, _ = fetch(cluster, 1, "nearby", version=11, rack="r2")
    assert (data.error_code, data.preferred_read_replica) == (Errors.NONE, 2)


def test_leader_serves_its_own_rack_no_rack_and_unknown_racks(cluster):
    # RackAwareReplicaSelector: the leader for the leader's rack, an empty rack id or a rack without
    # a replica; findPreferredReadReplica then answers None and the leader reads (preferred -1)
    replicated(cluster, "homely", [1, 2, 3], batches=2)
    for rack in ("r1", "", "r9"):
        data, _ = fetch(cluster, 1, "homely", rack=rack)
        assert (data.error_code, data.preferred_read_replica) == (Errors.NONE, -1), rack
        assert offsets(data) == [(0, 1), (2, 3)], rack
    data, _ = fetch(cluster, 1, "homely", version=10)  # no client metadata before v11
    assert (data.error_code, offsets(data)) == (Errors.NONE, [(0, 1), (2, 3)])


def test_follower_serves_consumers_from_fetch_v11_only(cluster):
    # FetchParams.fetchOnlyLeader = isFromFollower || (isFromConsumer && clientMetadata.isEmpty), and
    # KafkaApis.handleFetchRequest gives client metadata to every Fetch v11+: the follower reads to its
    # own high watermark (whatever the rack: no selector runs on a follower), never names a preferred
    # replica (findPreferredReadReplica: leaderIdIfLocal is empty), and refuses v10
    replicated(cluster, "followed", [1, 2, 3], batches=2)
    for rack in ("r2", ""):
        data, _ = fetch(cluster, 2, "followed", rack=rack)
        assert (data.error_code, data.preferred_read_replica) == (Errors.NONE, -1)
        assert offsets(data) == [(0, 1), (2, 3)]
        assert (data.high_watermark, data.last_stable_offset, data.log_start_offset) == (4, 4, 0)
    data, _ = fetch(cluster, 3, "followed", version=11, rack="r3")
    assert (data.error_code, offsets(data)) == (Errors.NONE, [(0, 1), (2, 3)])
    refused, _ = fetch(cluster, 2, "followed", version=10)
    assert refused.error_code == Errors.NOT_LEADER_OR_FOLLOWER
    assert (refused.high_watermark, refused.log_start_offset) == (-1, -1)


def test_follower_at_and_past_its_log_end_and_with_an_unknown_leader_epoch(cluster):
    # LocalLog.read: at the HW (the max offset) nothing is read; past the log end ->
    # OFFSET_OUT_OF_RANGE (ReplicaManager.readFromLog -> createLogReadResult: offsets -1).
    # Partition.getLocalLog checks the leader epoch on a follower as on a leader.
    replicated(cluster, "edges", [1, 2, 3], batches=1)
    data, _ = fetch(cluster, 2, "edges", rack="r2", offset=2)
    assert (data.error_code, offsets(data), data.high_watermark) == (Errors.NONE, [], 2)
    data, _ = fetch(cluster, 2, "edges", rack="r2", offset=100)
    assert (data.error_code, data.high_watermark, data.log_start_offset) == (
        Errors.OFFSET_OUT_OF_RANGE,
        -1,
        -1,
    )
    _, epoch = topic_id_and_epoch(cluster, "edges")
    data, _ = fetch(cluster, 2, "edges", rack="r2", leader_epoch=epoch)
    assert data.error_code == Errors.NONE
    data, _ = fetch(cluster, 2, "edges", rack="r2", leader_epoch=epoch + 1)
    assert data.error_code == Errors.UNKNOWN_LEADER_EPOCH


def test_broker_without_a_replica_points_at_the_leader_and_its_rack(cluster):
    # ReplicaManager.getPartitionOrError: no replica here -> NOT_LEADER_OR_FOLLOWER; v16 (KIP-951)
    # KafkaApis.getCurrentLeader falls back to the metadata cache, with getAliveBrokerNode's endpoint
    replicated(cluster, "elsewhere", [1, 2], batches=1)
    data, endpoints = fetch(cluster, 3, "elsewhere", rack="r3")
    _, epoch = topic_id_and_epoch(cluster, "elsewhere")
    assert data.error_code == Errors.NOT_LEADER_OR_FOLLOWER
    assert (data.current_leader.leader_id, data.current_leader.leader_epoch) == (1, epoch)
    leader = cluster.brokers[1]
    assert [(n.node_id, n.host, n.port, n.rack) for n in endpoints] == [(1, leader.host, leader.port, "r1")]


def test_confluent_consumer_in_a_followers_rack_reads_everything_from_that_follower(cluster):
    # The client side of KIP-392 (librdkafka: client.rack is the Fetch rack_id; a preferred read
    # replica in the answer moves the partition's fetches to that broker). Observed through
    # librdkafka's statistics: topics.<t>.partitions.<p>.broker is "the broker that messages are
    # currently being fetched from", .leader the partition leader; a consumer in the leader's rack is
    # the control.
    from confluent_kafka import Producer

    topic, count = "racked", 60
    create(cluster.bootstrap, topic, {0: [1, 2, 3]})
    wait_for(lambda: state(cluster.bootstrap, topic) == (1, [1, 2, 3], 0), 15, "full ISR")
    producer = Producer({**CLIENT, "bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 5})
    for i in range(count):
        producer.produce(topic, value=str(i).encode(), partition=0)
    assert producer.flush(20) == 0
    expected = [str(i).encode() for i in range(count)]
    assert consume(cluster, topic, "r2", count) == (expected, (2, 1))
    assert consume(cluster, topic, "r1", count) == (expected, (1, 1))


def consume(cluster, topic: str, rack: str, count: int) -> tuple[list[bytes], tuple[int, int]]:
    """Partition 0's first ``count`` values, read by a consumer with ``client.rack`` = ``rack``, and the
    (fetching broker, leader) of librdkafka's first statistics report after the last of them."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    reports: list[tuple[int, int]] = []

    def stats(report: str) -> None:
        partition = json.loads(report).get("topics", {}).get(topic, {}).get("partitions", {}).get("0")
        if partition is not None:
            reports.append((partition["broker"], partition["leader"]))

    consumer = Consumer(
        {
            **CLIENT,
            "bootstrap.servers": cluster.bootstrap,
            "group.id": f"near-{rack}",
            "client.rack": rack,
            "enable.auto.commit": False,
            "statistics.interval.ms": 200,
            "stats_cb": stats,
        }
    )
    values: list[bytes] = []

    def poll() -> int:  # whatever is there now (wait_for sleeps between calls)
        while (message := consumer.poll(0.1)) is not None:
            if message.error() is None:
                values.append(message.value())
        return len(values)

    try:
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        wait_for(lambda: poll() >= count, 30, f"{count} records consumed")
        seen = len(reports)
        wait_for(lambda: poll() and len(reports) > seen, 10, "a statistics report")
    finally:
        consumer.close()
    return values[:count], reports[-1]
