"""A model-checked run of random operations on one partition log: appends (plain and idempotent, with
retries), a high watermark that lags behind the log end, reads, DeleteRecords, truncation, rolls,
retention by size and by time, clean restarts, crashes and torn tails.

The model keeps its own segments (rolled where Kafka's ``LogSegment.shouldRoll`` rolls on size, and by
``roll()``) and computes what retention leaves with Kafka's rules, never by asking the log. After every
step the log must have the model's segments, log start offset and high watermark, and hold exactly the
model's records from its log start offset on; a producer's retry of its last batch must get that
batch's offsets back.

Retention follows ``UnifiedLog`` (Apache Kafka, ``storage/.../log/UnifiedLog.java``): ``deleteOldSegments``
runs ``deleteLogStartOffsetBreachedSegments``, then ``deleteRetentionSizeBreachedSegments``, then
``deleteRetentionMsBreachedSegments``. Each pass walks the segments oldest first and stops at the first
one that must stay (``deletableSegments``): a segment goes only while the high watermark is at or past
the next segment's base offset (the log end offset for the last one) and its predicate holds; the last
segment never goes while empty. The size pass starts only when the log is at least ``retention.bytes``
and deletes while ``diff - segment.size() >= 0`` (``diff`` = size - retention.bytes, less each deleted
segment); the time pass deletes while ``now - segment.largestTimestamp() > retention.ms``. When every
segment is to go, the active one included, ``deleteSegments`` rolls first, so the log then starts at
its end in a new empty segment; otherwise the log start offset moves up to the first kept segment's
base offset. The tests at the end plant wrong retention into the log and check the machine fails."""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from kconform.codecs.records import Record, encode_batch, iter_batch_headers, iter_batches
from kconform.reference_broker.storage import (
    LogConfig,
    PartitionLog,
    _log_retention,  # only to plant retention faults
)

PRODUCER = 42
# segment.ms keeps its 7-day default: the clock moves at most a few minutes in a run, so segments roll
# on size (and by roll()) only; index files are far from full at these sizes. Batches stay under
# segment.bytes (at most 4 records of 64-byte values).
CONFIG = LogConfig(segment_bytes=400, index_interval_bytes=120, file_delete_delay_ms=0, retention_ms=-1)
NO_TIMESTAMP = -1


class Clock:
    def __init__(self) -> None:
        self.now_ms = 1_700_000_000_000

    def __call__(self) -> int:
        return self.now_ms


@dataclass
class ModelBatch:
    base: int
    values: list[bytes]
    size: int  # bytes on disk: the batch as encoded (offsets are rewritten in place)
    max_timestamp: int

    @property
    def end(self) -> int:
        return self.base + len(self.values)


@dataclass
class ModelSegment:
    base: int
    batches: list[ModelBatch] = field(default_factory=list)

    @property
    def size(self) -> int:
        return sum(b.size for b in self.batches)

    @property
    def max_timestamp(self) -> int:
        return max((b.max_timestamp for b in self.batches), default=NO_TIMESTAMP)


class PartitionLogMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp())
        self.dir = self.tmp / "model-0"
        self.clock = Clock()
        self.log = PartitionLog.open(self.dir, CONFIG, clock=self.clock)
        self.batches: list[ModelBatch] = []  # every batch appended and not truncated, in offset order
        self.segments = [ModelSegment(0)]
        self.log_start = 0
        self.high_watermark = 0
        self.epoch = 0
        self.counter = 0
        self.idempotent: list[tuple[int, int, int]] = []  # (first sequence, first offset, last offset)

    def teardown(self) -> None:
        if not self.log.closed:
            self.log.close_handlers()
        shutil.rmtree(self.tmp, ignore_errors=True)

    # --- the model -----------------------------------------------------------------------------

    @property
    def end(self) -> int:
        active = self.segments[-1]
        return active.batches[-1].end if active.batches else active.base

    def model_records(self) -> list[tuple[int, bytes]]:
        return [
            (batch.base + i, value)
            for segment in self.segments
            for batch in segment.batches
            for i, value in enumerate(batch.values)
            if batch.base + i >= self.log_start
        ]

    def _model_append(self, batch: ModelBatch) -> None:
        """``LogSegment.shouldRoll`` on size: ``size > segment.bytes - messagesSize`` rolls to a new
        segment at the log end offset before the batch is written."""
        if self.segments[-1].size > CONFIG.segment_bytes - batch.size:
            self.segments.append(ModelSegment(self.end))
        self.segments[-1].batches.append(batch)
        self.batches.append(batch)

    def _model_roll(self) -> None:
        """``roll()``: a new segment at the log end offset; an empty active segment stays as it is."""
        if self.segments[-1].batches:
            self.segments.append(ModelSegment(self.end))

    def _delete_oldest(self, should_delete) -> int:
        """``deletableSegments`` + ``deleteSegments``: how many segments one pass deletes."""
        count = 0
        for i, segment in enumerate(self.segments):
            following = self.segments[i + 1] if i + 1 < len(self.segments) else None
            upper_bound = following.base if following is not None else self.end
            last_and_empty = following is None and not segment.batches
            if (
                self.high_watermark >= upper_bound
                and should_delete(segment, following)
                and not last_and_empty
            ):
                count += 1
            else:
                break
        if count == len(self.segments):
            self._model_roll()  # the active segment is not empty (an empty last one never goes)
        if count:
            del self.segments[:count]
            self.log_start = max(self.log_start, self.segments[0].base)
        return count

    def _log_start_breach(self) -> int:
        """``deleteLogStartOffsetBreachedSegments``: segments wholly below the log start offset."""
        return self._delete_oldest(
            lambda s, following: following is not None and following.base <= self.log_start
        )

    def _retention(self, retention_bytes: int, retention_ms: int) -> int:
        """``deleteOldSegments`` with ``cleanup.policy=delete``: the segments it deletes."""
        deleted = self._log_start_breach()
        size = sum(s.size for s in self.segments)
        if retention_bytes >= 0 and size >= retention_bytes:
            diff = size - retention_bytes

            def size_breached(segment: ModelSegment, following: ModelSegment | None) -> bool:
                nonlocal diff
                if diff - segment.size >= 0:
                    diff -= segment.size
                    return True
                return False

            deleted += self._delete_oldest(size_breached)
        if retention_ms >= 0:
            now = self.clock.now_ms
            # an empty segment is only ever the last one, which never goes: no file time is needed
            deleted += self._delete_oldest(
                lambda s, following: bool(s.batches) and now - s.max_timestamp > retention_ms
            )
        return deleted

    # --- rules ---------------------------------------------------------------------------------

    def _values(self, records: int, size: int) -> list[bytes]:
        values = []
        for _ in range(records):
            self.counter += 1
            values.append(self.counter.to_bytes(4, "big") * (size // 4 + 1))
        return values

    @rule(
        records=st.integers(1, 4),
        size=st.integers(0, 60),
        bump=st.booleans(),
        replicated=st.sampled_from([True, True, True, False]),
    )
    def append(self, records: int, size: int, bump: bool, replicated: bool) -> None:
        self.epoch += bump
        self.clock.now_ms += 1
        values = self._values(records, size)
        data = encode_batch([Record(i, self.clock.now_ms, None, v) for i, v in enumerate(values)])
        info = self.log.append(data, leader_epoch=self.epoch)
        assert info.first_offset == self.end
        self._model_append(ModelBatch(info.first_offset, values, len(data), self.clock.now_ms))
        if replicated:  # else the followers have not caught up: the high watermark stays behind
            self.log.update_high_watermark(self.log.log_end_offset)
            self.high_watermark = self.end

    @rule(batches=st.lists(st.tuples(st.integers(1, 4), st.integers(0, 60)), min_size=2, max_size=10))
    def append_a_run(self, batches: list[tuple[int, int]]) -> None:
        """Several segments' worth in one step, so that retention has old segments to judge."""
        for records, size in batches:
            self.append(records, size, bump=False, replicated=True)

    @precondition(lambda self: self.high_watermark < self.end)
    @rule(data=st.data())
    def followers_catch_up(self, data: st.DataObject) -> None:
        offset = data.draw(st.integers(self.high_watermark + 1, self.end))
        assert self.log.update_high_watermark(offset) == offset
        self.high_watermark = offset

    def _idempotent_batch(self, first_seq: int, values: list[bytes]) -> bytes:
        records = [Record(i, self.clock.now_ms, None, v) for i, v in enumerate(values)]
        return encode_batch(records, producer_id=PRODUCER, producer_epoch=0, base_sequence=first_seq)

    @rule(records=st.integers(1, 3))
    def produce_idempotently(self, records: int) -> None:
        self.clock.now_ms += 1
        first_seq = (
            self.idempotent[-1][0] + self.idempotent[-1][2] - self.idempotent[-1][1] + 1
            if self.idempotent
            else 0
        )
        values = self._values(records, 8)
        data = self._idempotent_batch(first_seq, values)
        info = self.log.append(data, leader_epoch=self.epoch)
        assert not info.duplicate and info.first_offset == self.end
        self._model_append(ModelBatch(info.first_offset, values, len(data), self.clock.now_ms))
        self.idempotent.append((first_seq, info.first_offset, info.last_offset))
        self.log.update_high_watermark(self.log.log_end_offset)
        self.high_watermark = self.end

    @precondition(lambda self: self.idempotent and self.idempotent[-1][1] >= self.log_start)
    @rule()
    def retry_the_last_idempotent_batch(self) -> None:
        first_seq, first_offset, last_offset = self.idempotent[-1]
        values = [b"retry"] * (last_offset - first_offset + 1)
        info = self.log.append(self._idempotent_batch(first_seq, values), leader_epoch=self.epoch)
        assert info.duplicate and (info.first_offset, info.last_offset) == (first_offset, last_offset)

    def _forget_idempotent_from(self, offset: int) -> None:
        self.idempotent = [entry for entry in self.idempotent if entry[1] < offset]

    @precondition(lambda self: self.high_watermark > self.log_start)
    @rule(data=st.data())
    def delete_records(self, data: st.DataObject) -> None:
        offset = data.draw(st.integers(self.log_start, self.high_watermark))
        assert self.log.delete_records_before(offset) == offset
        self.log_start = offset
        self._log_start_breach()

    @precondition(lambda self: self.batches)
    @rule(data=st.data())
    def truncate_at_a_batch_boundary(self, data: st.DataObject) -> None:
        keep = data.draw(st.integers(0, len(self.batches) - 1))
        target = self.batches[keep].base
        self.log.truncate_to(target)
        del self.batches[keep:]
        self._forget_idempotent_from(target)
        if self.segments[0].base > target:  # truncateFullyAndStartAt
            self.segments = [ModelSegment(target)]
        else:  # segments above the target go; the one holding it is cut there
            self.segments = [s for s in self.segments if s.base <= target]
            self.segments[-1].batches = [b for b in self.segments[-1].batches if b.base < target]
        self.log_start = min(self.log_start, target)
        self.high_watermark = min(self.high_watermark, target)
        assert self.log.log_end_offset == target

    @rule()
    def roll(self) -> None:
        self._model_roll()
        assert self.log.roll() == self.segments[-1].base

    @rule(ms=st.integers(0, 3000))
    def time_passes(self, ms: int) -> None:
        self.clock.now_ms += ms

    @rule(data=st.data())
    def apply_retention(self, data: st.DataObject) -> None:
        # besides any value, settings at Kafka's edges: a size that keeps exactly the newest k segments
        # (and a byte either side), an age exactly that of a segment's newest record (and 1 ms under)
        sizes = [s.size for s in self.segments]
        near_sizes = [max(0, sum(sizes[k:]) + d) for k in range(len(sizes) + 1) for d in (-1, 0, 1)]
        ages = [self.clock.now_ms - s.max_timestamp for s in self.segments if s.batches]
        near_ages = [max(0, age + d) for age in ages for d in (-1, 0)] or [0]
        retention_bytes = data.draw(
            st.one_of(st.just(-1), st.integers(0, 3000), st.sampled_from(near_sizes)), label="retention.bytes"
        )
        retention_ms = data.draw(
            st.one_of(st.just(-1), st.integers(0, 4000), st.sampled_from(near_ages)), label="retention.ms"
        )
        self.log.update_config(replace(CONFIG, retention_bytes=retention_bytes, retention_ms=retention_ms))
        deleted = self.log.apply_retention()
        self.log.update_config(CONFIG)
        expected = self._retention(retention_bytes, retention_ms)
        self._check_layout(f"retention.bytes={retention_bytes}, retention.ms={retention_ms}")
        assert deleted == expected

    @rule()
    def restart_cleanly(self) -> None:
        self.log.close()
        self.log = PartitionLog.open(self.dir, CONFIG, clock=self.clock)
        assert self.log.had_clean_shutdown
        assert self.log.high_watermark == self.high_watermark  # checkpointed on close

    @rule()
    def crash(self) -> None:
        self.log.close_handlers()
        self.log = PartitionLog.open(self.dir, CONFIG, clock=self.clock)
        assert not self.log.had_clean_shutdown
        self.log.update_high_watermark(self.log.log_end_offset)  # a sole replica's leader moves it up
        self.high_watermark = self.end

    @precondition(lambda self: self.batches and self.batches[-1].base >= self.log_start)
    @rule(cut=st.integers(1, 60))
    def crash_with_a_torn_tail(self, cut: int) -> None:
        active = self.log.segments[-1].path
        self.log.close_handlers()
        size = active.stat().st_size
        if size:
            last = list(iter_batch_headers(active.read_bytes()))[-1]
            os.truncate(active, size - min(cut, last.size_in_bytes))
            assert self.segments[-1].batches[-1] is self.batches[-1]
            self.segments[-1].batches.pop()
            self.batches.pop()
            self._forget_idempotent_from(last.base_offset)
        self.log = PartitionLog.open(self.dir, CONFIG, clock=self.clock)
        self.log.update_high_watermark(self.log.log_end_offset)
        self.high_watermark = self.end

    def _check_layout(self, after: str) -> None:
        log = self.log
        ours = (log.log_start_offset, [s.base_offset for s in log.segments])
        kafkas = (self.log_start, [s.base for s in self.segments])
        assert ours == kafkas, (
            f"after {after} the log starts at {ours[0]} with segments at {ours[1]}; "
            f"Kafka's rules give {kafkas[0]} with segments at {kafkas[1]}"
        )

    @invariant()
    def log_matches_the_model(self) -> None:
        log = self.log
        self._check_layout("this step")
        assert (log.log_end_offset, log.high_watermark) == (self.end, self.high_watermark)
        assert [(s.base_offset, s.size_in_bytes, s.max_timestamp) for s in log.segments] == [
            (s.base, s.size, s.max_timestamp) for s in self.segments
        ]
        seen = []
        offset = log.log_start_offset
        while offset < log.log_end_offset:
            batches = list(iter_batches(log.read(offset, 10_000).read_bytes()))
            assert batches
            seen.extend((r.offset, r.value) for b in batches for r in b.records if r.offset >= offset)
            offset = batches[-1].last_offset + 1
        assert seen == self.model_records()
        assert log.read(log.log_end_offset, 100).region is None


PartitionLogMachine.TestCase.settings = settings(max_examples=50, stateful_step_count=40, deadline=None)
test_partition_log_against_a_model = PartitionLogMachine.TestCase


# --- planted retention faults: the machine must catch each ------------------------------------------

PLANTED = settings(
    max_examples=300,
    stateful_step_count=30,
    deadline=None,
    derandomize=True,
    database=None,
    phases=[Phase.generate],  # the first failure is enough: no shrinking
    report_multiple_bugs=False,
    suppress_health_check=list(HealthCheck),
)
CAUGHT = "Kafka's rules give"


def _expect_the_model_to_catch_it() -> None:
    with pytest.raises(AssertionError, match=CAUGHT):
        run_state_machine_as_test(PartitionLogMachine, settings=PLANTED)


def test_a_size_retention_that_deletes_one_segment_too_many_is_caught(monkeypatch):
    kafkas = _log_retention.retention_size_breach

    def one_too_many(total_size: int, retention_bytes: int):
        should_delete = kafkas(total_size, retention_bytes)
        if should_delete is None:
            return None
        spare = [True]

        def planted(segment, following) -> bool:
            if should_delete(segment, following):
                return True
            if spare:
                return spare.pop()
            return False

        return planted

    monkeypatch.setattr(_log_retention, "retention_size_breach", one_too_many)
    _expect_the_model_to_catch_it()


def test_a_time_retention_that_reads_a_segments_first_timestamp_is_caught(monkeypatch):
    """Judging a segment by its oldest batch deletes segments whose newest records are still young."""

    def by_first_batch(now_ms: int, retention_ms: int):
        if retention_ms < 0:
            return None

        def planted(segment, following) -> bool:
            first = next(segment.batches_from(0), None)
            return first is not None and now_ms - first[1].max_timestamp > retention_ms

        return planted

    monkeypatch.setattr(_log_retention, "retention_ms_breach", by_first_batch)
    _expect_the_model_to_catch_it()


def test_a_retention_that_never_takes_the_active_segment_is_caught(monkeypatch):
    """Kafka deletes the active segment too (rolling first) once the high watermark reaches the log end
    and the segment breaches retention; a log that always keeps it differs."""
    kafkas = _log_retention.count_deletable

    def all_but_the_active(segments, **kwargs) -> int:
        return min(kafkas(segments, **kwargs), len(segments) - 1)

    monkeypatch.setattr(_log_retention, "count_deletable", all_but_the_active)
    _expect_the_model_to_catch_it()


def test_a_time_retention_that_deletes_a_segment_exactly_retention_ms_old_is_caught(monkeypatch):
    """Kafka deletes a segment only when its newest record is strictly older than retention.ms."""

    def at_the_limit(now_ms: int, retention_ms: int):
        if retention_ms < 0:
            return None
        return lambda segment, following: now_ms - segment.largest_timestamp() >= retention_ms

    monkeypatch.setattr(_log_retention, "retention_ms_breach", at_the_limit)
    _expect_the_model_to_catch_it()


def test_a_retention_that_keeps_every_segment_is_caught(monkeypatch):
    """The old check (size >= min(retention.bytes, size)) passed even when retention deleted nothing."""
    monkeypatch.setattr(_log_retention, "count_deletable", lambda segments, **kwargs: 0)
    _expect_the_model_to_catch_it()
