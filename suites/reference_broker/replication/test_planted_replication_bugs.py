"""The planted replication bugs (``reference_broker/planted.py``) in process, each shown beside the same
scenario on an honest broker: replicas with a fake host (``support/replication_host.py``) and the
controller's pure election (``controller.partition_change``). Each bug is installed as a broker
installs it (``PlantedBug.install``), over a function saved first, so it is undone after the test.
``follower-skips-truncation`` runs against the real fetcher: ``cluster/test_planted_replication_bugs.py``
shows it there, and shows the others can be planted on chosen nodes of a live cluster."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from kconform.codecs.errors import Errors
from kconform.reference_broker.cluster_metadata import NO_LEADER, LeaderRecoveryState, PartitionInfo
from kconform.reference_broker.controller import partition_change
from kconform.reference_broker.controller.partition_change import PartitionChange, build_partition_change
from kconform.reference_broker.partition import Partition, PartitionError
from kconform.reference_broker.planted import PLANTED_BUGS

from ...support.replication_host import LAG_MS, apply, registration, replica, replicate_once
from .test_partition_leader import produce, trio

WRAPS = {  # what each bug replaces, saved so that the test leaves it as it found it
    "hw-before-isr": (Partition, "_advance_high_watermark"),
    "isr-never-shrinks": (Partition, "maybe_shrink_isr"),
    "unclean-election-without-flag": (partition_change, "_elect"),
    "stale-leader-accepts-writes": (Partition, "apply_registration"),
}
BOTH = pytest.mark.parametrize("planted", [False, True], ids=["honest", "planted"])


def plant(monkeypatch, name: str) -> None:
    """Switch ``name`` on as a broker does at start, over the function it wraps saved first."""
    owner, attribute = WRAPS[name]
    original = getattr(owner, attribute)
    monkeypatch.setattr(owner, attribute, original)  # put back after the test
    PLANTED_BUGS[name].install()
    assert getattr(owner, attribute) is not original


@BOTH
def test_hw_before_isr_moves_the_high_watermark_past_the_followers(tmp_path, monkeypatch, planted):
    # honest: Partition.maybeIncrementLeaderHW takes the smallest log end offset of the ISR
    if planted:
        plant(monkeypatch, "hw-before-isr")
    leader, _, followers = trio(tmp_path)
    for follower in followers:
        replicate_once(leader, follower)
    end = produce(leader, "a", "b", acks=1)
    assert [f.log_end_offset for f in followers] == [0, 0]
    assert leader.leadership.isr == (1, 2, 3)
    if not planted:
        assert leader.high_watermark == 0
        return
    assert leader.high_watermark == end == 2  # above both in-sync followers' log end
    acks_all = asyncio.run(leader.wait_for_replication(end, 5.0))
    assert acks_all == Errors.NONE, "acks=all acknowledged with no follower holding the write"


@BOTH
def test_isr_never_shrinks_keeps_a_frozen_follower(tmp_path, monkeypatch, planted):
    # honest: Partition.maybeShrinkIsr drops a follower not caught up for replica.lag.time.max.ms
    if planted:
        plant(monkeypatch, "isr-never-shrinks")
    leader, host, (second, frozen) = trio(tmp_path)
    for follower in (second, frozen):
        replicate_once(leader, follower)
    end = produce(leader, "a", acks=1)
    host.clock.advance(LAG_MS + 1)
    replicate_once(leader, second)
    replicate_once(leader, second)  # caught up; the frozen follower never fetches again
    leader.maybe_shrink_isr()
    proposals = host.replication.proposals
    if not planted:
        assert [p.isr for p in proposals] == [(1, 2)]
        leader.isr_committed((1, 2), 1, 2)
        assert leader.high_watermark == end
        return
    assert proposals == [] and leader.leadership.isr == (1, 2, 3)
    assert leader.high_watermark == 0 < end, "the high watermark waits on the frozen follower"


@BOTH
def test_unclean_election_without_flag_elects_outside_the_isr(monkeypatch, planted):
    # honest: PartitionChangeBuilder.electLeader elects out of the ISR only with
    # unclean.leader.election.enable; broker 1, the only ISR member, is fenced (isr_without_broker)
    if planted:
        plant(monkeypatch, "unclean-election-without-flag")
    partition = PartitionInfo(index=0, replicas=(1, 2), isr=(1,), leader=1, leader_epoch=3, partition_epoch=5)
    topic_id = uuid.uuid4()

    def change(unclean_allowed: bool):
        return build_partition_change(
            PartitionChange(
                topic_id, partition, lambda b: b != 1, target_isr=[], unclean_allowed=unclean_allowed
            )
        )

    record = change(unclean_allowed=False)
    if not planted:
        assert record.leader == NO_LEADER and record.isr is None  # the last ISR member is kept
        return
    assert (record.leader, record.isr) == (2, [2])
    assert record.leader_recovery_state == LeaderRecoveryState.RECOVERING
    assert record == change(unclean_allowed=True), "not the election the flag would have allowed"


@BOTH
def test_stale_leader_accepts_writes_beside_the_new_leader(tmp_path, monkeypatch, planted):
    # honest: Partition.makeFollower at the newer leader epoch; appendRecordsToLeader then answers
    # NOT_LEADER_OR_FOLLOWER
    if planted:
        plant(monkeypatch, "stale-leader-accepts-writes")
    old, old_host = replica(tmp_path, 1)
    new, new_host = replica(tmp_path, 2, clock=old_host.clock)
    for partition, host in ((old, old_host), (new, new_host)):
        apply(partition, host, registration(1, (1, 2), (1, 2), 1, 1))
    for partition, host in ((old, old_host), (new, new_host)):
        apply(partition, host, registration(2, (1, 2), (1, 2), 2, 2))
    assert produce(new, "new", acks=1) == 1
    if not planted:
        with pytest.raises(PartitionError) as refused:
            produce(old, "stale", acks=1)
        assert refused.value.code == Errors.NOT_LEADER_OR_FOLLOWER
        return
    assert produce(old, "stale", acks=1) == 1, "both brokers took offset 0 of the partition"
    assert (old.is_leader, old.leader_epoch) == (True, 1)
