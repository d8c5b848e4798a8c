"""The Controller's topic, producer-id and election operations against Kafka's ReplicationControlManager,
ProducerIdControlManager and QuorumController, each surviving a reopen of the metadata log."""

from __future__ import annotations

import pytest

from kconform.codecs.errors import Errors
from kconform.codecs.metadata_records import ConfigRecord, PartitionRecord, TopicRecord
from kconform.reference_broker.clock import ManualClock
from kconform.reference_broker.cluster_metadata import TOPIC_RESOURCE
from kconform.reference_broker.controller import brokers as rules
from kconform.reference_broker.controller.controller import PRODUCER_ID_BLOCK_SIZE
from kconform.reference_broker.controller.partition_change import Election
from kconform.reference_broker.controller.placement import NotEnoughBrokers

from .cluster import alter, heartbeat, join, new_controller, records_from, registration


@pytest.fixture
def clock():
    return ManualClock()


@pytest.fixture
def controller(tmp_path, clock):
    """Brokers 1-3 registered and unfenced."""
    c = new_controller(tmp_path, clock)
    c.epochs = {b: join(c, b) for b in (1, 2, 3)}
    yield c
    c.close()


def reopen(controller, tmp_path, clock):
    controller.close()
    return new_controller(tmp_path, clock)


def snapshot(image):
    return (
        {t.name: (t.topic_id, list(t.partitions), dict(t.configs)) for t in image},
        image.brokers,
        image.next_producer_id,
    )


def test_create_topic_writes_topic_configs_then_partitions(controller, tmp_path, clock):
    """ReplicationControlManager.createTopic: TopicRecord, its ConfigRecords, then PartitionRecords."""
    start = controller.metadata.end_offset
    topic = controller.create_topic("t", [[1, 2, 3], [2, 3, 1]], {"retention.ms": "1000"})
    written = records_from(controller, start)
    assert [type(r) for r in written] == [TopicRecord, ConfigRecord, PartitionRecord, PartitionRecord]
    assert written[1] == ConfigRecord(TOPIC_RESOURCE, "t", "retention.ms", "1000")
    p0 = topic.partitions[0]
    assert (p0.replicas, p0.isr, p0.leader, p0.leader_epoch, p0.partition_epoch) == (
        (1, 2, 3),
        (1, 2, 3),
        1,
        0,
        0,
    )
    assert topic.configs == {"retention.ms": "1000"}
    before = snapshot(controller.image)
    assert snapshot(reopen(controller, tmp_path, clock).image) == before


def test_new_partition_isr_is_its_active_replicas(controller):
    """ReplicationControlManager.createTopic: ISR = replicas filtered by isActive; leader = isr[0]."""
    controller.heartbeat(heartbeat(1, controller.epochs[1], want_fence=True))
    (p,) = controller.create_topic("t", [[1, 2, 3]], {}).partitions
    assert (p.isr, p.leader) == ((2, 3), 2)
    controller.heartbeat(heartbeat(2, controller.epochs[2], want_shut_down=True))  # leads t-0
    (p,) = controller.create_topic("u", [[2, 3]], {}).partitions
    assert (p.isr, p.leader) == ((3,), 3)


def test_partition_with_no_active_replica_is_refused(controller):
    """ReplicationControlManager.createTopic: an empty ISR is INVALID_REPLICATION_FACTOR."""
    controller.heartbeat(heartbeat(3, controller.epochs[3], want_fence=True))
    with pytest.raises(NotEnoughBrokers, match="All brokers are currently fenced or in controlled shutdown"):
        controller.create_topic("t", [[3]], {})
    assert "t" not in controller.image


def test_assign_replicas_uses_fenced_brokers_as_followers(controller):
    """ClusterControlManager.usableBrokers: fenced brokers count for placement (never as first replica)."""
    controller.heartbeat(heartbeat(3, controller.epochs[3], want_fence=True))
    for replicas in controller.assign_replicas(6, 3, start=1):
        assert sorted(replicas) == [1, 2, 3] and replicas[0] != 3


def test_add_partitions_survives_reopen(controller, tmp_path, clock):
    """ReplicationControlManager.createPartitions: new PartitionRecords after the existing ones."""
    controller.create_topic("t", [[1, 2]], {})
    topic = controller.add_partitions("t", [[2, 3], [3, 1]])
    assert [(p.index, p.replicas, p.leader) for p in topic.partitions] == [
        (0, (1, 2), 1),
        (1, (2, 3), 2),
        (2, (3, 1), 3),
    ]
    assert snapshot(reopen(controller, tmp_path, clock).image)[0]["t"][1] == topic.partitions


def test_delete_topic_removes_partitions_and_configs(controller, tmp_path, clock):
    """ReplicationControlManager.deleteTopic: RemoveTopicRecord; replaying it drops the topic configs."""
    topic = controller.create_topic("t", [[1]], {"cleanup.policy": "compact"})
    assert controller.delete_topic("t").topic_id == topic.topic_id
    assert "t" not in controller.image and controller.image.topic_configs("t") == {}
    reopened = reopen(controller, tmp_path, clock)
    assert "t" not in reopened.image and reopened.image.by_id(topic.topic_id) is None
    with pytest.raises(KeyError):
        reopened.delete_topic("t")


def test_alter_topic_configs_sets_and_deletes_overrides(controller, tmp_path, clock):
    """ConfigurationControlManager: a ConfigRecord with a null value deletes the override."""
    controller.create_topic("t", [[1]], {"retention.ms": "1", "segment.ms": "2"})
    start = controller.metadata.end_offset
    controller.alter_topic_configs("t", {"retention.ms": "5", "cleanup.policy": "compact"})
    written = records_from(controller, start)
    assert [(r.name, r.value) for r in written] == [
        ("cleanup.policy", "compact"),
        ("retention.ms", "5"),
        ("segment.ms", None),
    ]
    expected = {"retention.ms": "5", "cleanup.policy": "compact"}
    assert controller.image.get("t").configs == expected
    assert reopen(controller, tmp_path, clock).image.get("t").configs == expected


def test_producer_id_blocks_follow_each_other_across_reopen(controller, tmp_path, clock):
    """ProducerIdControlManager.generateNextProducerId: blocks of 1000, nextProducerId in the record."""
    assert controller.allocate_producer_ids(1, controller.epochs[1]) == (0, PRODUCER_ID_BLOCK_SIZE)
    assert controller.allocate_producer_ids(2, controller.epochs[2]) == (1000, PRODUCER_ID_BLOCK_SIZE)
    epoch = controller.epochs[1]
    reopened = reopen(controller, tmp_path, clock)
    assert reopened.allocate_producer_ids(1, epoch) == (2000, PRODUCER_ID_BLOCK_SIZE)
    reopened.close()


def test_producer_ids_need_the_registered_epoch(controller):
    """ProducerIdControlManager.generateNextProducerId: clusterControlManager.checkBrokerEpoch first."""
    with pytest.raises(rules.Refused) as caught:
        controller.allocate_producer_ids(1, controller.epochs[1] + 1)
    assert caught.value.code == Errors.STALE_BROKER_EPOCH
    assert controller.image.next_producer_id == 0


def test_registrations_survive_reopen_and_sessions_restart(controller, tmp_path, clock):
    """ClusterControlManager.activate: every registered broker gets a fresh session on a new controller."""
    epochs = controller.epochs
    reopened = reopen(controller, tmp_path, clock)
    assert {b: reopened.image.brokers[b].epoch for b in epochs} == epochs
    with pytest.raises(rules.Refused):
        reopened.register_broker(registration(1, 99))
    clock.advance(9001)
    assert sorted(reopened.fence_lapsed_sessions()) == [1, 2, 3]
    reopened.close()


# ---- ElectLeaders ------------------------------------------------------------------------------


def test_preferred_election_not_needed_when_preferred_leads(controller):
    """ReplicationControlManager.electLeader: PREFERRED and hasPreferredLeader -> ELECTION_NOT_NEEDED."""
    topic = controller.create_topic("t", [[1, 2, 3]], {})
    assert controller.elect(topic, 0, Election.PREFERRED) == Errors.ELECTION_NOT_NEEDED


def test_preferred_election_moves_leadership_back(controller):
    """ReplicationControlManager.electLeader: PREFERRED elects replicas[0] when it is valid."""
    controller.create_topic("t", [[1, 2, 3]], {})
    controller.heartbeat(heartbeat(1, controller.epochs[1], want_fence=True))  # leadership moves to 2
    controller.heartbeat(heartbeat(1, controller.epochs[1], controller.metadata.end_offset))
    topic = controller.image.get("t")
    assert topic.partitions[0].leader == 2
    assert controller.elect(topic, 0, Election.PREFERRED) == Errors.PREFERRED_LEADER_NOT_AVAILABLE
    p = topic.partitions[0]  # 2 takes 1 back into the ISR
    request = alter(2, controller.epochs[2], [2, 3, 1], leader_epoch=p.leader_epoch,
                    partition_epoch=p.partition_epoch, topic_id=topic.topic_id)  # fmt: skip
    assert controller.alter_partition(request, 3).topics[0].partitions[0].error_code == Errors.NONE
    assert controller.elect(controller.image.get("t"), 0, Election.PREFERRED) == Errors.NONE
    assert controller.image.get("t").partitions[0].leader == 1


def test_unclean_election_not_needed_when_partition_has_leader(controller):
    """ReplicationControlManager.electLeader: UNCLEAN and hasLeader -> ELECTION_NOT_NEEDED."""
    topic = controller.create_topic("t", [[2, 1]], {})
    assert controller.elect(topic, 0, Election.UNCLEAN) == Errors.ELECTION_NOT_NEEDED


def test_unclean_election_elects_out_of_sync_replica_or_reports_none(controller):
    """ReplicationControlManager.electLeader: no record -> ELIGIBLE_LEADERS_NOT_AVAILABLE."""
    controller.create_topic("t", [[1, 2]], {})
    controller.heartbeat(heartbeat(2, controller.epochs[2], want_fence=True))  # ISR [1]
    controller.heartbeat(heartbeat(1, controller.epochs[1], want_fence=True))  # leaderless, ISR [1]
    topic = controller.image.get("t")
    assert (topic.partitions[0].leader, topic.partitions[0].isr) == (-1, (1,))
    assert controller.elect(topic, 0, Election.UNCLEAN) == Errors.ELIGIBLE_LEADERS_NOT_AVAILABLE
    controller.heartbeat(heartbeat(2, controller.epochs[2], controller.metadata.end_offset))
    assert controller.elect(controller.image.get("t"), 0, Election.UNCLEAN) == Errors.NONE
    p = controller.image.get("t").partitions[0]
    assert (p.leader, p.isr, p.leader_recovery_state) == (2, (2,), 1)


def test_election_of_unknown_partition(controller):
    """ReplicationControlManager.electLeader: a missing partition is UNKNOWN_TOPIC_OR_PARTITION."""
    topic = controller.create_topic("t", [[1]], {})
    assert controller.elect(topic, 5, Election.PREFERRED) == Errors.UNKNOWN_TOPIC_OR_PARTITION


def test_unfenced_broker_leads_uncleanly_only_where_topic_allows(controller):
    """ReplicationControlManager.generateLeaderAndIsrUpdates: Election.UNCLEAN if the topic enables it."""
    controller.create_topic("strict", [[1, 2]], {})
    controller.create_topic("loose", [[1, 2]], {"unclean.leader.election.enable": "true"})
    controller.heartbeat(heartbeat(2, controller.epochs[2], want_fence=True))  # ISRs [1]
    controller.heartbeat(heartbeat(1, controller.epochs[1], want_fence=True))  # leaderless, ISRs [1]
    controller.heartbeat(heartbeat(2, controller.epochs[2], controller.metadata.end_offset))
    loose, strict = controller.image.get("loose").partitions[0], controller.image.get("strict").partitions[0]
    assert (loose.leader, loose.isr, loose.leader_recovery_state) == (2, (2,), 1)
    assert (strict.leader, strict.isr) == (-1, (1,))


def test_tick_elects_unclean_leaders_once_topic_allows(controller, clock):
    """ReplicationControlManager.maybeTriggerUncleanLeaderElectionForLeaderlessPartitions, run every
    unclean.leader.election.interval.ms (QuorumController's periodic task)."""
    controller.create_topic("t", [[1, 2]], {})
    controller.heartbeat(heartbeat(2, controller.epochs[2], want_fence=True))
    controller.heartbeat(heartbeat(1, controller.epochs[1], want_fence=True))
    controller.heartbeat(heartbeat(2, controller.epochs[2], controller.metadata.end_offset))
    interval_ms = int(controller.config["unclean.leader.election.interval.ms"])

    def tick_after(ms: int) -> None:
        clock.advance(ms)
        controller.heartbeat(heartbeat(2, controller.epochs[2], controller.metadata.end_offset))  # alive
        controller.tick()

    tick_after(interval_ms)
    assert controller.image.get("t").partitions[0].leader == -1
    controller.alter_topic_configs("t", {"unclean.leader.election.enable": "true"})
    tick_after(interval_ms - 1)
    assert controller.image.get("t").partitions[0].leader == -1, "elected before the interval passed"
    tick_after(1)
    p = controller.image.get("t").partitions[0]
    assert (p.leader, p.isr, p.leader_recovery_state) == (2, (2,), 1)


def test_rebalance_moves_leaders_to_preferred_replicas(controller):
    """ReplicationControlManager.maybeBalancePartitionLeaders: PREFERRED elections where possible."""
    controller.create_topic("t", [[3, 1], [1, 3]], {})
    controller.heartbeat(heartbeat(3, controller.epochs[3], want_fence=True))
    controller.heartbeat(heartbeat(3, controller.epochs[3], controller.metadata.end_offset))
    assert [p.leader for p in controller.image.get("t").partitions] == [1, 1]
    assert controller.rebalance_leaders() == 0  # 3 is not back in the ISR yet
    topic = controller.image.get("t")
    p = topic.partitions[0]
    request = alter(1, controller.epochs[1], [1, 3], leader_epoch=p.leader_epoch,
                    partition_epoch=p.partition_epoch, topic_id=topic.topic_id)  # fmt: skip
    controller.alter_partition(request, 3)
    assert controller.rebalance_leaders() == 1
    assert [p.leader for p in controller.image.get("t").partitions] == [3, 1]
