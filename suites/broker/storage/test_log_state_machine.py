"""A model-checked run of random operations on one partition log: appends (plain and idempotent, with
retries), reads, DeleteRecords, truncation, rolls, retention, clean restarts, crashes and torn tails.
After every step the log must hold exactly the model's records from its log start offset on, and a
producer's retry of its last batch must get that batch's offsets back."""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from kconform.codecs.records import Record, encode_batch, iter_batch_headers, iter_batches
from kconform.reference_broker.storage import LogConfig, PartitionLog

PRODUCER = 42
CONFIG = LogConfig(segment_bytes=700, index_interval_bytes=120, file_delete_delay_ms=0, retention_ms=-1)


class Clock:
    def __init__(self) -> None:
        self.now_ms = 1_700_000_000_000

    def __call__(self) -> int:
        return self.now_ms


class PartitionLogMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp())
        self.dir = self.tmp / "model-0"
        self.clock = Clock()
        self.log = PartitionLog.open(self.dir, CONFIG, clock=self.clock)
        self.batches: list[tuple[int, list[bytes]]] = []  # (base offset, values), in offset order
        self.log_start = 0
        self.epoch = 0
        self.counter = 0
        self.idempotent: list[tuple[int, int, int]] = []  # (first sequence, first offset, last offset)

    def teardown(self) -> None:
        if not self.log.closed:
            self.log.close_handlers()
        shutil.rmtree(self.tmp, ignore_errors=True)

    @property
    def end(self) -> int:
        return self.batches[-1][0] + len(self.batches[-1][1]) if self.batches else self.log_start

    def model_records(self) -> list[tuple[int, bytes]]:
        return [
            (base + i, value)
            for base, values in self.batches
            for i, value in enumerate(values)
            if base + i >= self.log_start
        ]

    def _values(self, records: int, size: int) -> list[bytes]:
        values = []
        for _ in range(records):
            self.counter += 1
            values.append(self.counter.to_bytes(4, "big") * (size // 4 + 1))
        return values

    @rule(records=st.integers(1, 4), size=st.integers(0, 120), bump=st.booleans())
    def append(self, records: int, size: int, bump: bool) -> None:
        self.epoch += bump
        self.clock.now_ms += 1
        values = self._values(records, size)
        data = encode_batch([Record(i, self.clock.now_ms, None, v) for i, v in enumerate(values)])
        info = self.log.append(data, leader_epoch=self.epoch)
        assert info.first_offset == self.end
        self.batches.append((info.first_offset, values))
        self.log.update_high_watermark(self.log.log_end_offset)

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
        info = self.log.append(self._idempotent_batch(first_seq, values), leader_epoch=self.epoch)
        assert not info.duplicate and info.first_offset == self.end
        self.batches.append((info.first_offset, values))
        self.idempotent.append((first_seq, info.first_offset, info.last_offset))
        self.log.update_high_watermark(self.log.log_end_offset)

    @precondition(lambda self: self.idempotent and self.idempotent[-1][1] >= self.log_start)
    @rule()
    def retry_the_last_idempotent_batch(self) -> None:
        first_seq, first_offset, last_offset = self.idempotent[-1]
        values = [b"retry"] * (last_offset - first_offset + 1)
        info = self.log.append(self._idempotent_batch(first_seq, values), leader_epoch=self.epoch)
        assert info.duplicate and (info.first_offset, info.last_offset) == (first_offset, last_offset)

    def _forget_idempotent_from(self, offset: int) -> None:
        self.idempotent = [entry for entry in self.idempotent if entry[1] < offset]

    @precondition(lambda self: self.end > self.log_start)
    @rule(data=st.data())
    def delete_records(self, data: st.DataObject) -> None:
        offset = data.draw(st.integers(self.log_start, self.end))
        assert self.log.delete_records_before(offset) == offset
        self.log_start = offset

    @precondition(lambda self: self.batches)
    @rule(data=st.data())
    def truncate_at_a_batch_boundary(self, data: st.DataObject) -> None:
        keep = data.draw(st.integers(0, len(self.batches) - 1))
        target = self.batches[keep][0]
        self.log.truncate_to(target)
        del self.batches[keep:]
        self._forget_idempotent_from(target)
        self.log_start = min(self.log_start, target)
        assert self.log.log_end_offset == target

    @rule()
    def roll(self) -> None:
        self.log.roll()

    @rule(keep_bytes=st.integers(0, 3000))
    def retention_by_size(self, keep_bytes: int) -> None:
        before = self.log.log_start_offset
        self.log.update_config(replace(CONFIG, retention_bytes=keep_bytes))
        self.log.apply_retention()
        self.log.update_config(CONFIG)
        assert self.log.log_start_offset >= before
        assert self.log.size_in_bytes >= min(keep_bytes, self.log.size_in_bytes)
        self.log_start = self.log.log_start_offset

    @rule()
    def restart_cleanly(self) -> None:
        self.log.close()
        self.log = PartitionLog.open(self.dir, CONFIG, clock=self.clock)
        assert self.log.had_clean_shutdown
        assert self.log.high_watermark == self.log.log_end_offset  # checkpointed on close

    @rule()
    def crash(self) -> None:
        self.log.close_handlers()
        self.log = PartitionLog.open(self.dir, CONFIG, clock=self.clock)
        assert not self.log.had_clean_shutdown
        self.log.update_high_watermark(self.log.log_end_offset)  # a sole replica's leader moves it up

    @precondition(lambda self: self.batches and self.batches[-1][0] >= self.log_start)
    @rule(cut=st.integers(1, 60))
    def crash_with_a_torn_tail(self, cut: int) -> None:
        active = self.log.segments[-1].path
        self.log.close_handlers()
        size = active.stat().st_size
        if size:
            last = list(iter_batch_headers(active.read_bytes()))[-1]
            os.truncate(active, size - min(cut, last.size_in_bytes))
            self.batches.pop()
            self._forget_idempotent_from(last.base_offset)
        self.log = PartitionLog.open(self.dir, CONFIG, clock=self.clock)
        self.log.update_high_watermark(self.log.log_end_offset)
        if not self.batches:
            self.log_start = self.log.log_start_offset

    @invariant()
    def log_matches_the_model(self) -> None:
        log = self.log
        assert (log.log_start_offset, log.log_end_offset) == (self.log_start, self.end)
        seen = []
        offset = log.log_start_offset
        while offset < log.log_end_offset:
            batches = list(iter_batches(log.read(offset, 10_000).read_bytes()))
            assert batches
            seen.extend((r.offset, r.value) for b in batches for r in b.records if r.offset >= offset)
            offset = batches[-1].last_offset + 1
        assert seen == self.model_records()
        assert log.read(log.log_end_offset, 100).region is None


PartitionLogMachine.TestCase.settings = settings(max_examples=30, stateful_step_count=30, deadline=None)
test_partition_log_against_a_model = PartitionLogMachine.TestCase
