"""KIP-392's choice of a preferred read replica (``replication.read_replica``), each test pinned to the
rule of Kafka 4.1's ``ReplicaManager.findPreferredReadReplica`` / ``createReplicaSelector``,
``RackAwareReplicaSelector.select``, ``ReplicaView.comparator`` or ``FetchSession`` it names."""

from __future__ import annotations

import pytest

from kconform.reference_broker.config import BROKER_CONFIGS, ConfigError
from kconform.reference_broker.fetch_sessions import CachedPartition
from kconform.reference_broker.replication.follower_progress import FollowerProgress
from kconform.reference_broker.replication.read_replica import (
    RACK_AWARE_REPLICA_SELECTOR,
    ReplicaView,
    preferred_read_replica,
    rack_aware_selector,
    replica_selector,
)

NOW_MS = 1_000_000
RACKS = {1: "r1", 2: "r2", 3: "r3"}


def follower(broker: int, *, end: int = 10, start: int = 0, caught_up_ms_ago: int = 0) -> FollowerProgress:
    return FollowerProgress(
        broker, log_end_offset=end, log_start_offset=start, last_caught_up_ms=NOW_MS - caught_up_ms_ago
    )


def choose(client_rack: str, *, followers=None, isr=(1, 2, 3), racks=RACKS, fetch_offset=5, selector=None):
    """Broker 1 leads, its log ending at 10; followers 2 and 3 caught up unless ``followers`` says."""
    followers = followers if followers is not None else [follower(2), follower(3)]
    return preferred_read_replica(
        replica_selector(RACK_AWARE_REPLICA_SELECTOR) if selector is None else selector,
        client_rack=client_rack,
        leader_id=1,
        leader_end_offset=10,
        followers={f.broker_id: f for f in followers},
        isr=isr,
        racks=racks,
        fetch_offset=fetch_offset,
        now_ms=NOW_MS,
    )


def test_follower_in_the_clients_rack_is_preferred():
    # RackAwareReplicaSelector.select: the replicas whose endpoint rack equals the client's rack id
    assert choose("r2") == 2
    assert choose("r3") == 3


def test_no_replica_in_the_clients_rack_keeps_the_leader():
    # RackAwareReplicaSelector: no same-rack replica -> the leader, which findPreferredReadReplica
    # never sends out (None: the leader serves the fetch)
    assert choose("elsewhere") is None


def test_leader_in_the_clients_rack_keeps_the_leader():
    # RackAwareReplicaSelector: "Use the leader if it's in this rack", even with followers there too
    assert choose("r1", racks={1: "r1", 2: "r1", 3: "r1"}) is None


def test_client_without_rack_reads_from_the_leader():
    # RackAwareReplicaSelector: a null or empty rack id -> the leader
    assert choose("") is None


def test_no_selector_configured_means_leader_only():
    # ReplicaManager.replicaSelectorOpt: None when replica.selector.class is unset (its default)
    assert BROKER_CONFIGS["replica.selector.class"].default is None
    assert replica_selector(None) is None
    assert preferred_read_replica(
        None,
        client_rack="r2",
        leader_id=1,
        leader_end_offset=10,
        followers={2: follower(2)},
        isr=(1, 2),
        racks=RACKS,
        fetch_offset=0,
        now_ms=NOW_MS,
    ) is None  # fmt: skip


def test_follower_behind_the_fetch_offset_is_not_a_candidate():
    # findPreferredReadReplica: a follower counts only when logEndOffset >= fetchOffset
    assert choose("r2", followers=[follower(2, end=4), follower(3)], fetch_offset=5) is None
    assert choose("r2", followers=[follower(2, end=5), follower(3)], fetch_offset=5) == 2


def test_follower_that_deleted_the_fetch_offset_is_not_a_candidate():
    # findPreferredReadReplica: ... and logStartOffset <= fetchOffset
    assert choose("r2", followers=[follower(2, start=6), follower(3)], fetch_offset=5) is None


def test_follower_outside_the_isr_is_not_a_candidate():
    # findPreferredReadReplica: "Exclude replicas that are not in the ISR as the follower may lag behind"
    assert choose("r2", isr=(1, 3)) is None
    assert choose("r3", isr=(1, 3)) == 3


def test_follower_without_an_endpoint_is_never_the_answer():
    # getPartitionReplicaEndpoints lists unfenced brokers with an endpoint on the client's listener; any
    # other replica is Node.noNode() (no rack), and an empty endpoint is not sent out
    assert choose("r2", racks={1: "r1", 3: "r3"}) is None


def test_most_caught_up_of_the_rack_wins():
    # RackAwareReplicaSelector: max by ReplicaView.comparator(): log end offset, then the shorter time
    # since last caught up, then the larger broker id
    same_rack = {1: "r1", 2: "r2", 3: "r2"}
    assert choose("r2", racks=same_rack, followers=[follower(2, end=9), follower(3, end=8)]) == 2
    later = [follower(2, caught_up_ms_ago=50), follower(3, caught_up_ms_ago=10)]
    assert choose("r2", racks=same_rack, followers=later) == 3
    assert choose("r2", racks=same_rack) == 3


def test_selector_naming_the_leader_or_nothing_keeps_the_leader():
    # findPreferredReadReplica: the selected replica is sent out only when it is not the leader; an
    # empty Optional from the selector is no preferred replica either
    leader_only = lambda rack, replicas, leader: leader  # noqa: E731
    nothing = lambda rack, replicas, leader: None  # noqa: E731
    assert choose("r2", selector=leader_only) is None
    assert choose("r2", selector=nothing) is None


def test_selector_sees_leader_and_in_sync_candidates_with_their_lag():
    # findPreferredReadReplica: DefaultReplicaView(endpoint, logEndOffset, now - lastCaughtUpTimeMs)
    # for each candidate, and the leader with its own log end offset and 0
    seen = {}

    def spy(rack, replicas, leader):
        seen["replicas"], seen["leader"] = sorted(replicas, key=lambda r: r.broker_id), leader
        return leader

    choose("r2", selector=spy, followers=[follower(2, end=7, caught_up_ms_ago=30), follower(3, end=4)])
    assert seen["leader"] == ReplicaView(1, "r1", 10, 0)
    assert seen["replicas"] == [ReplicaView(1, "r1", 10, 0), ReplicaView(2, "r2", 7, 30)]


def test_rack_aware_selector_alone():
    leader = ReplicaView(1, "r1", 10, 0)
    near = ReplicaView(2, "r2", 10, 0)
    assert rack_aware_selector("r2", [leader, near], leader) == near
    assert rack_aware_selector("r9", [leader, near], leader) == leader


def test_unknown_selector_class_is_a_config_error():
    # ReplicaManager.createReplicaSelector: CoreUtils.createObject fails the broker's start on a class
    # it cannot load; here every class but Kafka's RackAwareReplicaSelector is one
    with pytest.raises(ConfigError) as raised:
        replica_selector("com.example.NearestReplicaSelector")
    message = str(raised.value)
    assert message.startswith(
        "Invalid value com.example.NearestReplicaSelector for configuration replica.selector.class"
    )
    assert RACK_AWARE_REPLICA_SELECTOR in message


def test_broker_with_an_unknown_selector_does_not_start(tmp_path):
    from kconform.reference_broker.node import BrokerNode

    props = {
        "node.id": "1",
        "log.dirs": str(tmp_path / "data"),
        "replica.selector.class": "com.example.NearestReplicaSelector",
    }
    with pytest.raises(ConfigError, match="replica.selector.class"):
        BrokerNode.from_config_file(None, props)


def test_incremental_fetch_session_always_sends_a_preferred_read_replica():
    # FetchSession CachedPartition.maybeUpdateResponseData: FetchResponse.isPreferredReplica -> the
    # partition is in the incremental response even with nothing else changed
    cached = CachedPartition(fetch_offset=0, max_bytes=1024, log_start_offset=-1, current_leader_epoch=0)
    same = dict(has_records=False, high_watermark=4, log_start_offset=0, error=0)
    assert cached.must_respond(**same, preferred_read_replica=2)
    assert cached.must_respond(**same, preferred_read_replica=2)
    assert not cached.must_respond(**same)
