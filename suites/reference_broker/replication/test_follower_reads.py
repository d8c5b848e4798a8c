"""KIP-392 on one partition, without a network: a follower answering a consumer's read
(``Partition.read_for_fetch`` with ``leader_only=False``, as the Fetch handler asks from v11 on) and a
leader choosing a preferred read replica from what its followers' fetches told it
(``read_replica.preferred_read_replica`` over ``Leadership.followers``). Each test names the rule of
Kafka 4.1's ``Partition.fetchRecords`` / ``localLogWithEpochOrThrow`` / ``readRecords``,
``UnifiedLog.read`` or ``ReplicaManager.findPreferredReadReplica`` it pins."""

from __future__ import annotations

import pytest

from kconform.codecs.errors import Errors
from kconform.codecs.records import Record, encode_batch, iter_batch_headers
from kconform.reference_broker.partition import PartitionError
from kconform.reference_broker.replication.read_replica import (
    RACK_AWARE_REPLICA_SELECTOR,
    preferred_read_replica,
    replica_selector,
)

from ...support.replication_host import START_MS, apply, batch, registration, replica, replicate_once

REPLICAS = (1, 2, 3)


def cluster(tmp_path, *, leader_epoch: int = 1):
    """Broker 1 leading orders-0 over 1, 2 and 3; brokers 2 and 3 following it."""
    info = registration(1, REPLICAS, REPLICAS, leader_epoch, leader_epoch)
    replicas = {}
    for broker in REPLICAS:
        partition, host = replica(tmp_path, broker)
        apply(partition, host, info)
        replicas[broker] = partition
    return replicas


def consumer_read(partition, fetch_offset=0, *, leader_only=False, current_leader_epoch=-1, committed=False):
    return partition.read_for_fetch(
        fetch_offset,
        1 << 20,
        min_one_batch=True,
        read_committed=committed,
        current_leader_epoch=current_leader_epoch,
        leader_only=leader_only,
    )


def offsets(read) -> list[tuple[int, int]]:
    data = read.records.read() if hasattr(read.records, "read") else read.records
    return [(h.base_offset, h.last_offset) for h in iter_batch_headers(data)]


def error_of(partition, fetch_offset=0, **kwargs) -> int:
    with pytest.raises(PartitionError) as raised:
        consumer_read(partition, fetch_offset, **kwargs)
    return raised.value.code


def test_follower_serves_a_consumer_up_to_its_own_high_watermark(tmp_path):
    # Partition.fetchRecords -> readRecords: a consumer reads with FetchIsolation.HIGH_WATERMARK, the
    # follower's own; it learns the leader's from the next fetch answer (ReplicaFetcherThread
    # .processPartitionData), never past its own log end
    replicas = cluster(tmp_path)
    leader, follower = replicas[1], replicas[2]
    leader.append_internal(batch("a", "b"))
    replicate_once(leader, follower)
    assert (follower.log_end_offset, follower.high_watermark) == (2, 0)
    read = consumer_read(follower)
    assert (offsets(read), read.high_watermark) == ([], 0)
    for _ in range(2):  # follower 3 fetches from its log end, 2
        replicate_once(leader, replicas[3])
    replicate_once(leader, follower)  # and so does 2: the leader's HW moves to 2 after this answer
    assert (leader.high_watermark, follower.high_watermark) == (2, 0)
    assert offsets(consumer_read(follower)) == []
    replicate_once(leader, follower)  # the next answer carries it (Partition.readRecords)
    read = consumer_read(follower)
    assert (offsets(read), read.high_watermark, read.log_start_offset) == ([(0, 1)], 2, 0)
    assert read.last_stable_offset == 2


def test_follower_refuses_a_leader_only_read(tmp_path):
    # FetchParams.fetchOnlyLeader (a follower's fetch, or a consumer without client metadata, Fetch
    # < v11) -> localLogWithEpochOrThrow(requireLeader = true) -> NOT_LEADER_OR_FOLLOWER
    follower = cluster(tmp_path)[2]
    assert error_of(follower, leader_only=True) == Errors.NOT_LEADER_OR_FOLLOWER
    assert offsets(consumer_read(follower)) == []


def test_follower_answers_past_its_high_watermark_empty_and_past_its_log_end_out_of_range(tmp_path):
    # UnifiedLog.read / LocalLog.read: a start offset beyond the isolation's max offset (here the HW)
    # but within the log reads nothing; beyond the log end -> OffsetOutOfRangeException, which
    # ReplicaManager.readFromLog answers with OFFSET_OUT_OF_RANGE (a client then asks the leader again)
    replicas = cluster(tmp_path)
    leader, follower = replicas[1], replicas[2]
    leader.append_internal(batch("a", "b", "c"))
    replicate_once(leader, follower)
    assert (follower.log_end_offset, follower.high_watermark) == (3, 0)
    assert offsets(consumer_read(follower, 2)) == []
    assert offsets(consumer_read(follower, 3)) == []
    assert error_of(follower, 4) == Errors.OFFSET_OUT_OF_RANGE


def test_follower_checks_the_consumers_leader_epoch(tmp_path):
    # Partition.getLocalLog -> checkCurrentLeaderEpoch, on a follower as on a leader: older than the
    # replica's leader epoch -> FENCED_LEADER_EPOCH, newer -> UNKNOWN_LEADER_EPOCH, -1 unchecked
    follower = cluster(tmp_path, leader_epoch=3)[2]
    assert error_of(follower, current_leader_epoch=2) == Errors.FENCED_LEADER_EPOCH
    assert error_of(follower, current_leader_epoch=4) == Errors.UNKNOWN_LEADER_EPOCH
    assert offsets(consumer_read(follower, current_leader_epoch=3)) == []
    # the epoch is checked before the role (getLocalLog), for a leader-only read too
    assert error_of(follower, current_leader_epoch=2, leader_only=True) == Errors.FENCED_LEADER_EPOCH


def test_leader_prefers_only_followers_whose_fetches_reached_the_fetch_offset(tmp_path):
    # findPreferredReadReplica: candidates are ISR followers whose last fetch offset (their log end
    # offset as the leader knows it) >= the consumer's fetch offset
    replicas = cluster(tmp_path)
    leader = replicas[1]
    leader.append_internal(batch("a", "b"))
    replicate_once(leader, replicas[2])
    replicate_once(leader, replicas[2])  # the leader now knows follower 2's log ends at 2
    replicate_once(leader, replicas[3])  # follower 3's first fetch asked from 0

    def preferred(rack: str, fetch_offset: int):
        return preferred_read_replica(
            replica_selector(RACK_AWARE_REPLICA_SELECTOR),
            client_rack=rack,
            leader_id=1,
            leader_end_offset=leader.log_end_offset,
            followers=leader.leadership.followers,
            isr=leader.leadership.isr,
            racks={1: "r1", 2: "r2", 3: "r3"},
            fetch_offset=fetch_offset,
            now_ms=START_MS,  # the hosts' manual clocks stand still
        )

    assert leader.leadership.followers[3].log_end_offset == 0
    assert preferred("r2", 2) == 2
    assert preferred("r3", 2) is None
    assert preferred("r3", 0) == 3


def test_follower_serves_read_committed_up_to_its_last_stable_offset(tmp_path):
    # readRecords with FetchIsolation.TXN_COMMITTED: the follower's own LSO, from the producer state it
    # replays from the batches it copies (UnifiedLog.appendAsFollower), below its HW while a
    # transaction is open
    replicas = cluster(tmp_path)
    leader, follower = replicas[1], replicas[2]
    leader.append_internal(batch("plain"))
    open_txn = encode_batch(
        [Record(0, START_MS, None, b"t1"), Record(1, START_MS, None, b"t2")],
        producer_id=7,
        producer_epoch=0,
        base_sequence=0,
        is_transactional=True,
    )
    leader.append_records(open_txn, produce_version=9, required_acks=1, transactional_id="tx")
    for _ in range(3):
        for broker in (2, 3):
            replicate_once(leader, replicas[broker])
    assert (follower.high_watermark, follower.last_stable_offset) == (3, 1)
    committed = consumer_read(follower, committed=True)
    assert (offsets(committed), committed.last_stable_offset, committed.aborted_transactions) == (
        [(0, 0)],
        1,
        [],
    )
    assert offsets(consumer_read(follower)) == [(0, 0), (1, 2)]
