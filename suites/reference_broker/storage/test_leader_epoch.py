"""The leader epoch cache: the cases of Kafka's LeaderEpochFileCacheTest (end offsets for
OffsetForLeaderEpoch, monotonic assignment, truncation from either end), the checkpoint file, and
the log keeping it in step with appends, truncation and restarts."""

from __future__ import annotations

import pytest

from kconform.reference_broker.storage import EpochEntry, LeaderEpochCache

UNDEFINED = (-1, -1)


def entries(cache):
    return [(e.epoch, e.start_offset) for e in cache.entries]


@pytest.fixture
def cache(tmp_path):
    return LeaderEpochCache(tmp_path / "leader-epoch-checkpoint")


def test_previous_epoch(cache):
    assert cache.previous_epoch() is None
    cache.assign(2, 10)
    assert cache.previous_epoch() is None
    cache.assign(4, 15)
    assert cache.previous_epoch() == 2
    cache.assign(10, 20)
    assert cache.previous_epoch() == 4
    cache.truncate_from_end(18)
    assert cache.previous_epoch() == 2
    assert cache.previous_epoch(4) == 2 and cache.previous_epoch(2) is None
    assert cache.next_epoch(2) == 4 and cache.next_epoch(4) is None


def test_latest_epoch_ends_at_the_log_end_offset(cache):
    cache.assign(2, 10)
    assert cache.latest_epoch == 2
    assert cache.entries == [EpochEntry(2, 10)]
    assert cache.end_offset_for(2, 11) == (2, 11)
    cache.assign(2, 12)
    assert cache.end_offset_for(2, 14) == (2, 14)


def test_undefined_epoch_gives_undefined_offset(cache):
    assert cache.end_offset_for(-1, 73) == UNDEFINED  # empty cache
    cache.assign(2, 11)
    cache.assign(3, 12)
    assert cache.end_offset_for(-1, 0) == UNDEFINED


def test_an_assigned_epoch_keeps_its_start_offset(cache):
    cache.assign(2, 9)
    cache.assign(2, 10)
    assert entries(cache) == [(2, 9)]
    cache.assign(2, 6)  # a lower start offset for the same epoch does replace it
    assert entries(cache) == [(2, 6)]


def test_start_offsets_and_epochs_must_increase(cache):
    cache.assign(2, 9)
    cache.assign(3, 9)
    assert entries(cache) == [(3, 9)]
    cache.assign(4, 5)
    assert entries(cache) == [(4, 5)]


def test_empty_cache_has_no_end_offset(cache):
    assert cache.end_offset_for(0, 0) == UNDEFINED
    assert cache.end_offset_for(7, 0) == UNDEFINED
    assert cache.latest_epoch is None


def test_epoch_below_the_first_gets_the_first_start_offset(cache):
    for epoch, offset in ((5, 11), (6, 12), (7, 13)):
        cache.assign(epoch, offset)
    assert cache.end_offset_for(4, 0) == (4, 11)


def test_matching_epoch_with_earlier_offset_truncates(cache):
    for epoch, offset in ((5, 11), (6, 12), (7, 13)):
        cache.assign(epoch, offset)
    cache.assign(7, 12)
    assert entries(cache) == [(5, 11), (7, 12)]
    assert cache.end_offset_for(5, 0) == (5, 12)
    assert cache.end_offset_for(6, 0) == (5, 12)


def test_end_offset_of_an_older_epoch_is_the_next_epochs_start(cache):
    for epoch, offset in ((1, 11), (1, 12), (2, 13), (2, 14), (3, 15), (3, 16)):
        cache.assign(epoch, offset)
    assert cache.end_offset_for(2, 17) == (2, 15)


def test_missing_epochs_answer_with_the_largest_lower_epoch(cache):
    for epoch, offset in ((0, 10), (2, 13), (4, 17)):
        cache.assign(epoch, offset)
    assert cache.end_offset_for(1, 0) == (0, 13)
    assert cache.end_offset_for(2, 0) == (2, 17)
    assert cache.end_offset_for(3, 0) == (2, 17)


def test_epoch_above_every_known_one_is_undefined(cache):
    cache.assign(2, 100)
    assert cache.end_offset_for(3, 100) == UNDEFINED


def test_a_lower_epoch_after_a_higher_one_replaces_it(cache):
    cache.assign(1, 5)
    cache.assign(2, 6)
    cache.assign(1, 7)
    assert cache.latest_epoch == 1
    assert cache.end_offset_for(1, 8) == (1, 8)
    assert cache.end_offset_for(2, 8) == UNDEFINED
    assert entries(cache) == [(1, 7)]


def test_epochs_tracked_as_leaders_change(cache):
    cache.assign(0, 0)
    cache.assign(1, 0)
    assert cache.latest_epoch == 1
    assert cache.end_offset_for(1, 0) == (1, 0)
    assert entries(cache) == [(1, 0)]  # epoch 0 had no data and was replaced
    assert cache.end_offset_for(0, 0) == (0, 0)  # below the first epoch: its start offset
    assert cache.end_offset_for(1, 5) == (1, 5)
    cache.assign(2, 5)
    assert cache.end_offset_for(2, 10) == (2, 10)
    assert cache.end_offset_for(1, 10) == (1, 5)
    assert cache.end_offset_for(0, 10) == (0, 0)


def test_epochs_tracked_as_a_follower_receives_batches(cache):
    for offset in range(9):
        cache.assign(offset // 3, offset)
    assert entries(cache) == [(0, 0), (1, 3), (2, 6)]
    assert cache.end_offset_for(2, 9) == (2, 9)
    assert cache.end_offset_for(0, 9) == (0, 3)
    assert cache.end_offset_for(1, 9) == (1, 6)


@pytest.mark.parametrize(
    ("end_offset", "kept"),
    [(8, [(2, 6)]), (9, [(2, 6), (3, 8)]), (-1, [(2, 6), (3, 8), (4, 11)]), (12, [(2, 6), (3, 8), (4, 11)])],
)
def test_truncate_from_end(cache, end_offset, kept):
    for epoch, offset in ((2, 6), (3, 8), (4, 11)):
        cache.assign(epoch, offset)
    cache.truncate_from_end(end_offset)
    assert entries(cache) == kept


@pytest.mark.parametrize(
    ("start_offset", "kept"),
    [
        (8, [(3, 8), (4, 11)]),
        (1, [(2, 6), (3, 8), (4, 11)]),
        (6, [(2, 6), (3, 8), (4, 11)]),
        (11, [(4, 11)]),
        (9, [(3, 9), (4, 11)]),
        (15, [(4, 15)]),
        (-1, [(2, 6), (3, 8), (4, 11)]),
    ],
)
def test_truncate_from_start(cache, start_offset, kept):
    for epoch, offset in ((2, 6), (3, 8), (4, 11)):
        cache.assign(epoch, offset)
    cache.truncate_from_start(start_offset)
    assert entries(cache) == kept


def test_truncate_from_start_between_the_first_two_epochs(cache):
    for epoch, offset in ((0, 0), (1, 7), (2, 10)):
        cache.assign(epoch, offset)
    cache.truncate_from_start(5)
    assert entries(cache) == [(0, 5), (1, 7), (2, 10)]


def test_clearing_and_truncating_an_empty_cache(cache):
    cache.truncate_from_start(7)
    cache.truncate_from_end(7)
    for epoch, offset in ((2, 6), (3, 8)):
        cache.assign(epoch, offset)
    cache.clear()
    assert cache.entries == []


def test_epoch_for_offset(cache):
    for epoch, offset in ((2, 6), (3, 8), (4, 11)):
        cache.assign(epoch, offset)
    assert [cache.epoch_for_offset(o) for o in (5, 6, 7, 8, 10, 11, 99)] == [None, 2, 2, 3, 3, 4, 4]


def test_negative_entries_are_refused(cache):
    with pytest.raises(ValueError):
        cache.assign(-1, 0)
    with pytest.raises(ValueError):
        cache.assign(0, -1)


def test_the_checkpoint_is_kafkas_text_format_and_survives_instances(tmp_path):
    path = tmp_path / "leader-epoch-checkpoint"
    first = LeaderEpochCache(path)
    first.assign(2, 6)
    first.assign(5, 40)
    assert path.read_text() == "0\n2\n2 6\n5 40\n"
    assert LeaderEpochCache.load(path).entries == [EpochEntry(2, 6), EpochEntry(5, 40)]
    first.truncate_from_end(40)
    assert path.read_text() == "0\n1\n2 6\n"


def test_the_log_records_epoch_starts_and_answers_offset_for_leader_epoch(open_log, make_batch, log_dir):
    log = open_log()
    for epoch in (0, 0, 1, 3, 3):
        log.append(make_batch(2), leader_epoch=epoch)
    assert [(e.epoch, e.start_offset) for e in log.epoch_entries] == [(0, 0), (1, 4), (3, 6)]
    assert log.end_offset_for_epoch(0) == (0, 4)
    assert log.end_offset_for_epoch(2) == (1, 6)
    assert log.end_offset_for_epoch(3) == (3, 10)
    assert log.end_offset_for_epoch(4) == UNDEFINED
    assert (log_dir / "leader-epoch-checkpoint").read_text() == "0\n3\n0 0\n1 4\n3 6\n"
    log.truncate_to(5)
    assert [(e.epoch, e.start_offset) for e in log.epoch_entries] == [(0, 0), (1, 4)]
    log.assign_epoch_start_offset(4, log.log_end_offset)
    assert log.end_offset_for_epoch(1) == (1, 5) and log.latest_epoch == 4
