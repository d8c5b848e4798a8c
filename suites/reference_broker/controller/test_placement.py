"""Replica placement against Kafka's StripedReplicaPlacer
(metadata/src/main/java/org/apache/kafka/metadata/placement/StripedReplicaPlacer.java)."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kconform.reference_broker.cluster_metadata import BrokerInfo
from kconform.reference_broker.controller.placement import NotEnoughBrokers, assign_replicas, place_replicas

from .cluster import image_of


def brokers(racks: dict[int, str | None], fenced=()) -> list[BrokerInfo]:
    return [
        BrokerInfo(b, 0, None, (), rack, b in fenced, False, 0)  # type: ignore[arg-type]
        for b, rack in sorted(racks.items())
    ]


def rack_of(cluster):
    return {b.broker_id: b.rack for b in cluster}


def test_replicas_spread_over_every_rack_when_racks_are_uneven():
    """StripedReplicaPlacer.RackList.place: one broker per rack per turn, so 3 racks hold 3 replicas."""
    cluster = brokers({1: "a", 2: "a", 3: "a", 4: "a", 5: "b", 6: "c"})
    for start in range(20):
        for replicas in place_replicas(cluster, 12, 3, start=start):
            assert sorted(rack_of(cluster)[b] for b in replicas) == ["a", "b", "c"]


def test_leader_rack_moves_one_rack_per_partition():
    """StripedReplicaPlacer.RackList.place: ``offset++`` after each partition picks the leader's rack."""
    cluster = brokers({1: "a", 2: "a", 3: "b", 4: "b", 5: "c"})
    racks = [rack_of(cluster)[replicas[0]] for replicas in place_replicas(cluster, 5, 2, start=7)]
    assert all(racks[i + 1] == "abc"[("abc".index(racks[i]) + 1) % 3] for i in range(4))


def test_leader_is_never_fenced_and_fenced_brokers_follow_only_as_last_resort():
    """StripedReplicaPlacer.RackList.place: the leader is nextUnfenced; Rack.next tries unfenced first."""
    cluster = brokers({1: None, 2: None, 3: None}, fenced={3})
    for replicas in place_replicas(cluster, 6, 2, start=3):
        assert 3 not in replicas
    for replicas in place_replicas(cluster, 6, 3, start=3):
        assert replicas[0] != 3 and sorted(replicas) == [1, 2, 3]


def test_same_start_gives_same_layout():
    """StripedReplicaPlacer(Random): here the seed is ``start``, so a layout can be replayed."""
    cluster = brokers({b: f"r{b % 3}" for b in range(1, 8)})
    assert place_replicas(cluster, 30, 3, start=5) == place_replicas(cluster, 30, 3, start=5)


def test_too_few_brokers_message():
    """StripedReplicaPlacer.throwInvalidReplicationFactorIfTooFewBrokers, wrapped by createTopic."""
    with pytest.raises(NotEnoughBrokers) as caught:
        place_replicas(brokers({1: None, 2: None}), 1, 3)
    assert str(caught.value) == (
        "Unable to replicate the partition 3 time(s): The target replication factor of 3 cannot be "
        "reached because only 2 broker(s) are registered."
    )


def test_fenced_brokers_count_as_registered():
    """StripedReplicaPlacer.place: numTotalBrokers includes fenced brokers."""
    assert len(place_replicas(brokers({1: None, 2: None, 3: None}, fenced={2, 3}), 1, 3)[0]) == 3


def test_assign_replicas_places_over_the_usable_brokers_of_the_image():
    """ReplicationControlManager.createTopic places over ClusterControlManager.usableBrokers
    (BrokerHeartbeatManager.UsableBrokerIterator): every registered broker not shutting down, fenced
    ones included as followers of last resort. Brokers and the controller both place with this."""
    image = image_of((1, 2, 3, 4), fenced=(3,), shutting_down=(4,))
    for start in range(10):
        for replicas in assign_replicas(image, 4, 3, start=start):
            assert sorted(replicas) == [1, 2, 3] and replicas[0] != 3
    with pytest.raises(NotEnoughBrokers, match="only 3 broker"):
        assign_replicas(image, 1, 4)


def test_all_fenced_message():
    """StripedReplicaPlacer.throwInvalidReplicationFactorIfZero: checked before too few brokers."""
    with pytest.raises(NotEnoughBrokers, match=r"time\(s\): All brokers are currently fenced\.$"):
        place_replicas(brokers({1: None}, fenced={1}), 1, 3)


def test_non_positive_factor_message():
    """StripedReplicaPlacer.throwInvalidReplicationFactorIfNonPositive."""
    with pytest.raises(
        NotEnoughBrokers, match="Invalid replication factor 0: the replication factor must be"
    ):
        place_replicas(brokers({1: None}), 1, 0)


@given(
    racks=st.dictionaries(st.integers(1, 12), st.sampled_from([None, "a", "b", "c"]), min_size=1),
    fenced=st.sets(st.integers(1, 12)),
    partitions=st.integers(1, 30),
    start=st.integers(0, 1000),
    data=st.data(),
)
def test_every_placement_is_valid(racks, fenced, partitions, start, data):
    """StripedReplicaPlacer.place: distinct brokers, an unfenced leader, as many racks as possible."""
    cluster = brokers(racks, fenced & set(racks))
    unfenced = [b.broker_id for b in cluster if not b.fenced]
    if not unfenced:
        return
    factor = data.draw(st.integers(1, len(cluster)))
    placed = place_replicas(cluster, partitions, factor, start=start)
    assert len(placed) == partitions
    rack_count = len(set(racks.values()))
    for replicas in placed:
        assert len(set(replicas)) == factor and set(replicas) <= set(racks)
        assert replicas[0] in unfenced
        assert len({racks[b] for b in replicas}) == min(factor, rack_count)
    # One leadership each holds with one rack, or one broker per rack: a rack's list rotates only when the
    # rack is used in a new partition (BrokerList.next), so racks of several brokers can repeat a leader,
    # as Kafka's placer does too (e.g. racks {None: [1, 2], "a": [3]}, factor 2: leaders 2, 3, 2).
    if len(unfenced) == len(cluster) and partitions == len(cluster) and rack_count in (1, len(cluster)):
        assert Counter(r[0] for r in placed) == Counter(unfenced)  # one leadership each
