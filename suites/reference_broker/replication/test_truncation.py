"""A follower whose log diverged from its new leader's, end to end between two real ``PartitionLog``s:
the leader answers the follower's fetch with the diverging epoch (``serving``), the follower cuts its
log there (``follower_log.truncate_to_divergence``) and copies the leader's batches
(``append_fetched``) until both logs hold the same bytes. Each test names the rule of Kafka 4.1's
``Partition.readRecords`` / ``AbstractFetcherThread`` / ``UnifiedLog`` it pins."""

from __future__ import annotations

from kconform.codecs.records import iter_batch_headers
from kconform.reference_broker.replication.follower_log import append_fetched, position, truncation_offset

from ...support.replication_host import apply, batch, log_bytes, registration, replica, replicate_once

REPLICAS = (1, 2)


def elect(leader_id: int, epoch: int, *partitions) -> None:
    """A registration naming ``leader_id`` leader at ``epoch`` (ISR: the leader alone), taken up by
    every replica given as (partition, host)."""
    info = registration(leader_id, REPLICAS, (leader_id,), epoch, epoch)
    for partition, host in partitions:
        apply(partition, host, info)


def epochs(partition) -> list[tuple[int, int]]:
    return [(e.epoch, e.start_offset) for e in partition.log.epoch_entries]


def test_follower_cut_at_divergence_then_copies_the_leader(tmp_path):
    # Partition.readRecords answers divergingEpoch = the leader's (epoch, end offset) for the
    # follower's lastFetchedEpoch; AbstractFetcherThread.getOffsetTruncationState: the follower has
    # that epoch -> truncate to min(its own end of it, the leader's, its LEO); then it fetches on
    a, a_host = replica(tmp_path, 1)
    b, b_host = replica(tmp_path, 2, clock=a_host.clock)
    elect(1, 1, (a, a_host), (b, b_host))
    a.append_internal(batch("a0", "a1", "a2"))
    replicate_once(a, b)
    a.append_internal(batch("a3", "a4"))  # never reaches broker 2
    elect(2, 2, (a, a_host), (b, b_host))
    b.append_internal(batch("b3"))
    b.append_internal(batch("b4", "b5"))
    assert epochs(a) == [(1, 0)] and epochs(b) == [(1, 0), (2, 3)]

    diverged = replicate_once(b, a)
    assert diverged.diverging_epoch == (1, 3) and diverged.records == b""
    assert (a.log_end_offset, epochs(a)) == (3, [(1, 0)])
    assert position(a).last_fetched_epoch == 1
    replicate_once(b, a)
    assert log_bytes(a) == log_bytes(b)
    assert (a.log_end_offset, epochs(a)) == (6, [(1, 0), (2, 3)])


def test_follower_without_the_leaders_epoch_truncates_in_rounds(tmp_path):
    # AbstractFetcherThread.getOffsetTruncationState: the follower lacks the epoch the leader answered
    # -> truncate to the end of its largest epoch below it (truncationCompleted=false) and fetch
    # again with the new lastFetchedEpoch, which may diverge again
    a, a_host = replica(tmp_path, 1)
    b, b_host = replica(tmp_path, 2, clock=a_host.clock)
    elect(1, 1, (a, a_host), (b, b_host))
    a.append_internal(batch("a0", "a1", "a2"))
    replicate_once(a, b)
    a.append_internal(batch("a3", "a4"))
    elect(2, 2, (b, b_host))  # broker 1 is away for epochs 2 and 4
    b.append_internal(batch("b3", "b4", "b5"))
    elect(1, 3, (a, a_host))  # broker 1 leads epoch 3 on its own (an unclean election)
    a.append_internal(batch("a5", "a6"))
    elect(2, 4, (a, a_host), (b, b_host))
    b.append_internal(batch("b6", "b7"))
    assert epochs(a) == [(1, 0), (3, 5)] and epochs(b) == [(1, 0), (2, 3), (4, 6)]

    # the leader ends epoch 2 (its largest at or below 3) at 6; broker 1 has no epoch 2: it cuts to
    # the end of epoch 1 in its own log
    assert replicate_once(b, a).diverging_epoch == (2, 6)
    assert (a.log_end_offset, epochs(a), position(a).last_fetched_epoch) == (5, [(1, 0)], 1)
    assert replicate_once(b, a).diverging_epoch == (1, 3)
    assert (a.log_end_offset, epochs(a)) == (3, [(1, 0)])
    while a.log_end_offset < b.log_end_offset:
        assert replicate_once(b, a, max_bytes=1).diverging_epoch is None
    assert log_bytes(a) == log_bytes(b)
    assert epochs(a) == epochs(b)


def test_batches_of_a_newer_leader_epoch_than_fetched_with_are_not_appended(tmp_path):
    # UnifiedLog.appendAsFollower / analyzeAndValidateRecords (KAFKA-18723): the first batch whose
    # partitionLeaderEpoch is above the fetch's leader epoch, and every batch after it, is skipped;
    # the follower fetches them again once its metadata has that epoch
    a, a_host = replica(tmp_path, 1)
    b, b_host = replica(tmp_path, 2, clock=a_host.clock)
    elect(2, 2, (a, a_host), (b, b_host))
    b.append_internal(batch("b0", "b1"))
    elect(2, 3, (b, b_host))  # broker 1 has not seen epoch 3 yet
    b.append_internal(batch("b2"))
    b.append_internal(batch("b3"))
    answer = b.log.read(0, 1 << 20).region.read()
    assert [h.partition_leader_epoch for h in iter_batch_headers(answer)] == [2, 3, 3]
    append_fetched(a, answer, leader_epoch=2, high_watermark=b.high_watermark, log_start_offset=0)
    assert (a.log_end_offset, epochs(a), a.high_watermark) == (2, [(2, 0)], 2)
    elect(2, 3, (a, a_host))
    replicate_once(b, a)
    assert log_bytes(a) == log_bytes(b)


def test_leader_without_an_end_for_the_epoch_leaves_the_follower_at_its_fetch_offset(tmp_path):
    # AbstractFetcherThread.getOffsetTruncationState: endOffset == UNDEFINED_EPOCH_OFFSET -> truncate
    # to the partition's current fetch offset (its LEO), i.e. keep the log
    a, a_host = replica(tmp_path, 1)
    elect(1, 1, (a, a_host))
    a.append_internal(batch("a0", "a1"))
    elect(2, 2, (a, a_host))
    assert a.high_watermark == 2 and truncation_offset(a, 1, -1) == 2
    a.log.update_high_watermark(0)
    assert truncation_offset(a, 1, -1) == 2
    # UNDEFINED_EPOCH with an offset -> min(that offset, LEO); an epoch above all of the follower's
    # (endOffsetForEpoch empty) -> min(the leader's offset, LEO)
    assert truncation_offset(a, -1, 1) == 1
    assert truncation_offset(a, 7, 1) == 1
