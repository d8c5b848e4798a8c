"""Fixtures for the storage suites: a clock that moves only when told, a partition directory, a batch
builder (``make_batch``) and a way to open a ``PartitionLog`` on them. Suites run with
``--import-mode=importlib``, so helpers reach the tests as fixtures, never as imports."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from kconform.codecs.records import Record, encode_batch
from kconform.reference_broker.storage import LogConfig, PartitionLog

START_MS = 1_700_000_000_000


class FakeClock:
    def __init__(self, now_ms: int = START_MS) -> None:
        self.now_ms = now_ms

    def __call__(self) -> int:
        return self.now_ms

    def advance(self, ms: int) -> None:
        self.now_ms += ms


def make_batch(
    records: int = 1,
    *,
    timestamp: int = START_MS,
    value_size: int = 10,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    transactional: bool = False,
    timestamps: list[int] | None = None,
) -> bytes:
    """One magic 2 batch at base offset 0, as a producer sends it."""
    stamps = timestamps if timestamps is not None else [timestamp] * records
    return encode_batch(
        [
            Record(i, stamps[i], f"k{i}".encode(), bytes([65 + i % 26]) * value_size)
            for i in range(len(stamps))
        ],
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        is_transactional=transactional,
    )


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(scope="session")
def new_clock() -> type[FakeClock]:
    """The FakeClock class, for tests (Hypothesis ones) that need a fresh clock per example."""
    return FakeClock


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    return tmp_path / "orders-0"


@pytest.fixture(scope="session", name="make_batch")
def make_batch_fixture() -> Callable[..., bytes]:
    return make_batch


@pytest.fixture
def open_log(log_dir: Path, clock: FakeClock):
    """``open_log(config=None, **kwargs)`` opens the partition directory; every log it opened and
    the test left open is closed at the end."""
    opened: list[PartitionLog] = []

    def opener(config: LogConfig | None = None, **kwargs) -> PartitionLog:
        log = PartitionLog.open(log_dir, config, clock=clock, **kwargs)
        opened.append(log)
        return log

    yield opener
    for log in opened:
        if not log.closed:
            log.close_handlers()
