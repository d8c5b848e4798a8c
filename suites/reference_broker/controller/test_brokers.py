"""Broker registration, heartbeats and fencing against Kafka's ClusterControlManager,
BrokerHeartbeatManager and ReplicationControlManager (metadata/src/main/java/org/apache/kafka/controller/)."""

from __future__ import annotations

import pytest

from kconform.codecs.errors import Errors
from kconform.codecs.metadata_records import (
    BrokerRegistrationChangeRecord,
    PartitionChangeRecord,
    RegisterBrokerRecord,
    UnfenceBrokerRecord,
)
from kconform.reference_broker.clock import ManualClock
from kconform.reference_broker.cluster_metadata import ImageError, record_version
from kconform.reference_broker.controller import brokers as rules

from .cluster import heartbeat, image_of, join, new_controller, partition, registration


@pytest.fixture
def clock():
    return ManualClock()


@pytest.fixture
def cluster(tmp_path, clock):
    """A controller with brokers 1-3 registered and unfenced, and topic t (3 partitions, 3 replicas)."""
    controller = new_controller(tmp_path, clock)
    epochs = {b: join(controller, b) for b in (1, 2, 3)}
    controller.create_topic("t", controller.assign_replicas(3, 3), {})
    yield controller, epochs
    controller.close()


def kinds(records):
    return [type(r).__name__ for r in records]


# ---- registration --------------------------------------------------------------------------------


def test_broker_epoch_is_offset_of_its_registration(tmp_path):
    """QuorumController.registerBroker: newBrokerEpoch = offsetControl.nextWriteOffset()."""
    controller = new_controller(tmp_path)
    first = controller.register_broker(registration(1))
    second = controller.register_broker(registration(2))
    assert (first, second) == (0, 1)
    assert controller.image.brokers[2].registered_at_offset == 1 and controller.image.brokers[2].fenced


def test_new_incarnation_epoch_is_first_offset_of_its_write():
    """ClusterControlManager.registerBroker: shutdown records precede the RegisterBrokerRecord; epoch is
    the write's first offset."""
    image = image_of(topics={"t": [partition([1, 2, 3], leader=1)]})
    records, epoch = rules.registration(
        image, registration(1, 7), next_offset=50, session_alive=False, unclean_default=False
    )
    assert kinds(records) == ["PartitionChangeRecord", "RegisterBrokerRecord"] and epoch == 50
    assert (records[0].isr, records[0].leader) == ([2, 3], 2)
    assert (records[1].broker_epoch, records[1].fenced) == (50, True)


def test_duplicate_incarnation_with_live_session_is_refused(cluster):
    """ClusterControlManager.registerBroker: hasValidSession and another incarnation -> DUPLICATE."""
    controller, _ = cluster
    with pytest.raises(rules.Refused) as caught:
        controller.register_broker(registration(1, 99))
    assert caught.value.code == Errors.DUPLICATE_BROKER_REGISTRATION


def test_new_incarnation_accepted_once_session_lapses(cluster, clock):
    """BrokerHeartbeatManager.hasValidSession: lastContactNs + sessionTimeoutNs >= now, else none."""
    controller, epochs = cluster
    clock.advance(9001)
    epoch = controller.register_broker(registration(1, 99))
    assert epoch > epochs[1] and controller.image.brokers[1].fenced


def test_new_incarnation_after_unclean_shutdown_leaves_isrs(cluster, clock):
    """ReplicationControlManager.handleBrokerShutdown (KAFKA-18106, no ELR): leave ISRs as if fenced."""
    controller, _ = cluster
    clock.advance(9001)  # the session lapsed, but no tick has fenced the broker yet
    controller.register_broker(registration(1, 99))
    for p in controller.image.get("t").partitions:
        assert 1 not in p.isr and p.leader != 1


def test_new_incarnation_after_clean_shutdown_leaves_isrs_too():
    """ReplicationControlManager.handleBrokerShutdown: without ELR a clean shutdown is handled the same."""
    image = image_of(topics={"t": [partition([1, 2, 3], leader=2)]})
    request = registration(1, 7, previous_broker_epoch=image.brokers[1].epoch)
    records, _ = rules.registration(image, request, next_offset=9, session_alive=False, unclean_default=False)
    assert records[0] == PartitionChangeRecord(partition_id=0, topic_id=records[0].topic_id, isr=[2, 3])


def test_same_incarnation_amends_registration(cluster):
    """ClusterControlManager.registerBroker: same incarnation keeps epoch, fenced and shutdown state."""
    controller, epochs = cluster
    before = controller.image.get("t").partitions
    assert controller.register_broker(registration(2, rack="r2")) == epochs[2]
    broker = controller.image.brokers[2]
    assert (broker.epoch, broker.fenced, broker.rack) == (epochs[2], False, "r2")
    assert controller.image.get("t").partitions == before


# ---- heartbeats ----------------------------------------------------------------------------------


def test_heartbeat_with_stale_or_unknown_epoch(cluster):
    """ClusterControlManager.checkBrokerEpoch: STALE_BROKER_EPOCH, also before any registration."""
    controller, epochs = cluster
    for request in (heartbeat(1, epochs[1] + 1000), heartbeat(9, 0)):
        with pytest.raises(rules.Refused) as caught:
            controller.heartbeat(request)
        assert caught.value.code == Errors.STALE_BROKER_EPOCH


def test_fenced_broker_unfenced_only_when_caught_up(tmp_path):
    """BrokerHeartbeatManager.calculateNextBrokerState: FENCED -> UNFENCED at registerBrokerRecordOffset."""
    controller = new_controller(tmp_path)
    controller.register_broker(registration(1))
    epoch = controller.register_broker(registration(2))
    behind = controller.heartbeat(heartbeat(2, epoch, offset=0))
    assert (behind.is_caught_up, behind.is_fenced, behind.records) == (False, True, [])
    caught_up = controller.heartbeat(heartbeat(2, epoch, offset=1))
    assert (caught_up.is_caught_up, caught_up.is_fenced) == (True, False)
    assert caught_up.records == [BrokerRegistrationChangeRecord(broker_id=2, broker_epoch=epoch, fenced=-1)]


def test_unfenced_broker_leads_leaderless_partitions():
    """ReplicationControlManager.handleBrokerUnfenced: the change record, then elections with brokerToAdd."""
    image = image_of(fenced={2}, topics={"t": [partition([1, 2, 3], [2], leader=-1)]})
    answer = rules.heartbeat(image, heartbeat(2, 102), unclean_default=False)
    assert kinds(answer.records) == ["BrokerRegistrationChangeRecord", "PartitionChangeRecord"]
    assert (answer.records[1].leader, answer.records[1].isr) == (2, None)


def test_want_fence_keeps_fenced_broker_fenced():
    """BrokerHeartbeatManager.calculateNextBrokerState: FENCED with wantFence stays FENCED."""
    image = image_of(fenced={2})
    answer = rules.heartbeat(image, heartbeat(2, 102, want_fence=True), unclean_default=False)
    assert (answer.records, answer.is_fenced, answer.should_shut_down) == ([], True, False)


def test_want_fence_fences_unfenced_broker():
    """ReplicationControlManager.handleBrokerFenced: leave ISRs, then a FENCE change record."""
    image = image_of(topics={"t": [partition([1, 2, 3], leader=2)]})
    answer = rules.heartbeat(image, heartbeat(2, 102, want_fence=True), unclean_default=False)
    assert kinds(answer.records) == ["PartitionChangeRecord", "BrokerRegistrationChangeRecord"]
    assert (answer.records[0].leader, answer.records[0].isr) == (1, [1, 3])
    assert answer.records[1] == BrokerRegistrationChangeRecord(broker_id=2, broker_epoch=102, fenced=1)
    assert (answer.is_fenced, answer.should_shut_down) == (True, False)


def test_shutdown_of_broker_leading_nothing_is_immediate():
    """BrokerHeartbeatManager.calculateNextBrokerState: UNFENCED, wantShutDown, no leaders -> SHUTDOWN_NOW."""
    image = image_of(topics={"t": [partition([1, 2, 3], leader=1)]})
    answer = rules.heartbeat(image, heartbeat(3, 103, want_shut_down=True), unclean_default=False)
    assert (answer.is_fenced, answer.should_shut_down) == (True, True)
    assert kinds(answer.records) == ["PartitionChangeRecord", "BrokerRegistrationChangeRecord"]


def test_fenced_broker_may_shut_down_at_once():
    """BrokerHeartbeatManager.calculateNextBrokerState: FENCED, wantShutDown -> SHUTDOWN_NOW (fence again)."""
    answer = rules.heartbeat(
        image_of(fenced={2}), heartbeat(2, 102, want_shut_down=True), unclean_default=False
    )
    assert (answer.is_fenced, answer.should_shut_down) == (True, True)
    assert answer.records == [BrokerRegistrationChangeRecord(broker_id=2, broker_epoch=102, fenced=1)]


def test_controlled_shutdown_waits_for_leaders_to_move_and_brokers_to_catch_up(cluster):
    """BrokerHeartbeatManager.calculateNextBrokerState: CONTROLLED_SHUTDOWN until no leaderships and
    controlledShutdownOffset <= lowestActiveOffset; then SHUTDOWN_NOW (handleBrokerFenced)."""
    controller, epochs = cluster
    start = controller.metadata.end_offset
    first = controller.heartbeat(heartbeat(1, epochs[1], start, want_shut_down=True))
    assert (first.is_fenced, first.in_controlled_shutdown, first.should_shut_down) == (False, True, False)
    assert first.records[0] == BrokerRegistrationChangeRecord(
        broker_id=1, broker_epoch=epochs[1], in_controlled_shutdown=1
    )
    image = controller.image
    assert image.brokers[1].in_controlled_shutdown and not image.brokers[1].fenced
    assert all(1 not in p.isr and p.leader != 1 for p in image.get("t").partitions)
    # the other brokers last reported offsets from before the shutdown record: not yet
    waiting = controller.heartbeat(heartbeat(1, epochs[1], controller.metadata.end_offset))
    assert (waiting.in_controlled_shutdown, waiting.should_shut_down, waiting.records) == (True, False, [])
    for b in (2, 3):
        controller.heartbeat(heartbeat(b, epochs[b], controller.metadata.end_offset))
    done = controller.heartbeat(heartbeat(1, epochs[1], controller.metadata.end_offset))
    assert (done.is_fenced, done.should_shut_down) == (True, True)
    assert controller.image.brokers[1].fenced


def test_broker_registration_change_versions():
    """ReplicationControlManager: fence/unfence written at version 0, controlled shutdown at version 1."""
    assert record_version(BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=1, fenced=1)) == 0
    assert (
        record_version(BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=1, in_controlled_shutdown=1))
        == 1
    )


# ---- fencing on session lapse --------------------------------------------------------------------


def test_session_lapse_fences_and_moves_leadership(cluster, clock):
    """QuorumController.maybeFenceStaleBroker -> ReplicationControlManager.handleBrokerFenced."""
    controller, epochs = cluster
    clock.advance(4000)
    for b in (2, 3):
        controller.heartbeat(heartbeat(b, epochs[b]))
    clock.advance(5000)  # broker 1 last heard from exactly broker.session.timeout.ms ago: still valid
    assert controller.fence_lapsed_sessions() == []
    clock.advance(1)
    assert controller.fence_lapsed_sessions() == [1]
    assert controller.image.brokers[1].fenced
    for p in controller.image.get("t").partitions:
        assert 1 not in p.isr and p.leader in (2, 3)


def test_fencing_last_isr_member_leaves_partition_leaderless(tmp_path, clock):
    """generateLeaderAndIsrUpdates with brokerToRemove: no ISR left to elect from -> leader -1, ISR kept."""
    controller = new_controller(tmp_path, clock)
    epoch = join(controller, 1)
    controller.create_topic("solo", controller.assign_replicas(1, 1), {})
    clock.advance(9001)
    controller.tick()
    p = controller.image.get("solo").partitions[0]
    assert (p.leader, p.isr, p.leader_epoch) == (-1, (1,), 1)
    epoch = controller.register_broker(registration(1, 2))
    controller.heartbeat(heartbeat(1, epoch, controller.metadata.end_offset))
    p = controller.image.get("solo").partitions[0]
    assert (p.leader, p.isr, p.leader_epoch) == (1, (1,), 2)


# ---- replay of broker records --------------------------------------------------------------------


def test_unfence_record_keeps_controlled_shutdown_flag():
    """ClusterDelta.replay(UnfenceBrokerRecord): cloneWith(UNFENCE, no shutdown change)."""
    image = image_of(fenced={2}, shutting_down={2})
    image.replay(UnfenceBrokerRecord(id=2, epoch=102))
    assert (image.brokers[2].fenced, image.brokers[2].in_controlled_shutdown) == (False, True)


def test_unknown_registration_change_value_is_an_error():
    """ClusterDelta.replay(BrokerRegistrationChangeRecord): unknown fenced value -> IllegalStateException."""
    with pytest.raises(ImageError):
        image_of().replay(BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=101, fenced=2))


def test_registration_record_content():
    """ClusterControlManager.registerBroker: a new incarnation registers fenced, not shutting down."""
    records, _ = rules.registration(
        image_of(brokers=()),
        registration(4, rack="r"),
        next_offset=3,
        session_alive=False,
        unclean_default=False,
    )
    (record,) = records
    assert isinstance(record, RegisterBrokerRecord)
    assert (record.broker_epoch, record.fenced, record.in_controlled_shutdown, record.rack) == (
        3,
        True,
        False,
        "r",
    )
    assert [(e.name, e.port) for e in record.end_points] == [("PLAINTEXT", 9004)]
