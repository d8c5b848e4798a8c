"""A disk that refuses writes (ENOSPC, EIO, EROFS): an append answers KAFKA_STORAGE_ERROR
(``ReplicaManager.appendToLocalLog`` maps ``KafkaStorageException``), leaves no torn batch behind and the
partition takes appends again once the disk has room; an internal topic whose logs could not be created
answers the group APIs with retriable coordinator errors and loads once they can be."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import subprocess
from pathlib import Path

import pytest

from kconform.codecs.errors import Errors
from kconform.codecs.records import Record, encode_batch, iter_batches
from kconform.reference_broker import node as node_module
from kconform.reference_broker.storage import AppendOrigin, LogWriteFailed, PartitionLog

from ..support.coordinators import GROUP, find_coordinator
from ..support.error_rules_broker import run as run_broker
from ..support.group_rules_cluster import run as run_groups

RETRIABLE_COORDINATOR_ERRORS = {Errors.NOT_COORDINATOR, Errors.COORDINATOR_NOT_AVAILABLE}


def _batch(values: list[bytes]) -> bytes:
    return encode_batch([Record(i, 1_700_000_000_000, None, v) for i, v in enumerate(values)])


def _values(log: PartitionLog) -> list[bytes]:
    region = log.read(0, 1 << 20, whole_batches=True).region
    data = region.read() if region is not None else b""
    return [record.value for batch in iter_batches(data) for record in batch.records]


class TornDisk:
    """``os.pwrite`` for files whose path holds ``marker``: while ``full``, each append writes half its
    bytes, then the next write fails with ENOSPC, as a disk that fills up midway does."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, marker: str) -> None:
        self.full = True
        self._marker = marker
        self._real = os.pwrite
        self._torn: set[int] = set()
        monkeypatch.setattr(os, "pwrite", self._pwrite)

    def _pwrite(self, fd: int, data, position: int) -> int:
        if not self.full or self._marker not in os.readlink(f"/proc/self/fd/{fd}"):
            return self._real(fd, data, position)
        if len(data) > 1 and fd not in self._torn:
            self._torn.add(fd)
            return self._real(fd, bytes(memoryview(data)[: len(data) // 2]), position)
        self._torn.discard(fd)
        raise OSError(errno.ENOSPC, "No space left on device")


# ---- the log ------------------------------------------------------------------------------------------


def test_a_torn_append_is_cut_back_and_the_log_carries_on(tmp_path, monkeypatch):
    log = PartitionLog.open(tmp_path / "orders-0", clock=lambda: 1_700_000_000_000)
    log.append(_batch([b"first"]), leader_epoch=0)
    size_before = sum(p.stat().st_size for p in (tmp_path / "orders-0").glob("*.log"))
    disk = TornDisk(monkeypatch, "orders-0")
    with pytest.raises(LogWriteFailed) as failure:
        log.append(_batch([b"lost" * 100, b"also lost"]), leader_epoch=0)
    assert failure.value.error_code == Errors.KAFKA_STORAGE_ERROR
    assert "No space left on device" in str(failure.value)
    assert log.log_end_offset == 1
    assert sum(p.stat().st_size for p in (tmp_path / "orders-0").glob("*.log")) == size_before
    assert _values(log) == [b"first"]
    disk.full = False
    info = log.append(_batch([b"second"]), leader_epoch=0)
    assert info.first_offset == 1
    assert _values(log) == [b"first", b"second"]
    log.close()
    reopened = PartitionLog.open(tmp_path / "orders-0", clock=lambda: 1_700_000_000_000)
    assert reopened.recovered_bytes_truncated == 0
    assert _values(reopened) == [b"first", b"second"]
    reopened.close()


# ---- producing --------------------------------------------------------------------------------------


def test_produce_on_a_full_disk_answers_kafka_storage_error(tmp_path, monkeypatch):
    async def scenario(broker):
        await broker.create_topic("orders")
        await broker.create_topic("other")
        assert (await broker.produce(_batch([b"a"]))).error_code == Errors.NONE
        disk = TornDisk(monkeypatch, "orders-0")
        refused = await broker.produce(_batch([b"b" * 500, b"c"]))
        assert refused.error_code == Errors.KAFKA_STORAGE_ERROR
        assert (await broker.produce(_batch([b"x"]), topic="other")).error_code == Errors.NONE
        partition = broker.node.partition("orders", 0)
        assert (partition.log_end_offset, partition.high_watermark) == (1, 1)
        disk.full = False
        accepted = await broker.produce(_batch([b"d"]))
        assert (accepted.error_code, accepted.base_offset) == (Errors.NONE, 1)
        return _values(partition.log)

    assert run_broker(tmp_path, scenario) == [b"a", b"d"]


class RefusedSync:
    """``os.fsync`` failing with EIO for files whose path holds ``marker`` while ``failing``."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, marker: str) -> None:
        self.failing = True
        self._marker = marker
        self._real = os.fsync
        monkeypatch.setattr(os, "fsync", self._fsync)

    def _fsync(self, fd: int) -> None:
        if self.failing and self._marker in os.readlink(f"/proc/self/fd/{fd}"):
            raise OSError(errno.EIO, "Input/output error")
        self._real(fd)


def test_a_flush_the_disk_refuses_answers_kafka_storage_error_and_keeps_the_connection(tmp_path, monkeypatch):
    """Kafka's failed flush is a KafkaStorageException too: KAFKA_STORAGE_ERROR for that partition. The
    records were written before the fsync, so they stay; the connection answers on."""

    async def scenario(broker):
        await broker.create_topic("orders", **{"flush.messages": "1"})
        assert (await broker.produce(_batch([b"a"]))).error_code == Errors.NONE
        disk = RefusedSync(monkeypatch, "orders-0")
        refused = await broker.produce(_batch([b"b"]))
        assert refused.error_code == Errors.KAFKA_STORAGE_ERROR
        disk.failing = False
        accepted = await broker.produce(_batch([b"c"]))  # the same connection
        assert (accepted.error_code, accepted.base_offset) == (Errors.NONE, 2)
        return _values(broker.node.partition("orders", 0).log)

    assert run_broker(tmp_path, scenario) == [b"a", b"b", b"c"]


def test_a_transaction_index_write_the_disk_refuses_still_completes_the_transaction(tmp_path, monkeypatch):
    """The marker is written and the transaction leaves the open set before the index is touched, so a
    failing ``.txnindex`` write cannot leave the LSO stuck behind a finished transaction."""
    from kconform.codecs.records import encode_end_txn_marker_batch

    log = PartitionLog.open(tmp_path / "orders-0", clock=lambda: 1_700_000_000_000)
    begun = encode_batch([Record(0, 1_700_000_000_000, None, b"t")], producer_id=7, producer_epoch=0,
                         base_sequence=0, is_transactional=True)  # fmt: skip
    log.append(begun, leader_epoch=0)
    log.append(_batch([b"plain"]), leader_epoch=0)  # someone else's record after the open transaction
    marker = encode_end_txn_marker_batch(producer_id=7, producer_epoch=0, commit=False, coordinator_epoch=0,
                                         timestamp=1_700_000_000_000)  # fmt: skip

    def refuse(*_args, **_kwargs):
        raise OSError(errno.EIO, "Input/output error")

    from kconform.reference_broker.storage import LogSyncFailed, _segment

    monkeypatch.setattr(_segment.LogSegment, "update_txn_index", refuse)
    with pytest.raises(LogSyncFailed, match="written but not synced"):
        log.append(marker, leader_epoch=0, assign_offsets=True, origin=AppendOrigin.COORDINATOR)
    assert log.log_end_offset == 3
    log.update_high_watermark(3)
    assert log.last_stable_offset == 3  # not held at offset 0 by a transaction that is over
    log.close()


# ---- the coordinators' internal topic ---------------------------------------------------------------


def test_consumer_offsets_created_on_a_full_disk_loads_once_there_is_room(tmp_path, monkeypatch):
    real_open = node_module.PartitionLog.open
    disk = {"full": True}

    def open_log(path, *args, **kwargs):
        if disk["full"] and "__consumer_offsets" in str(path):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(node_module.PartitionLog, "open", open_log)

    async def scenario(cluster):
        with contextlib.suppress(AssertionError):  # the first lookup creates the topic
            await find_coordinator(cluster.client, "g", GROUP, attempts=1)
        while_full = [(await cluster.commit("g", {0: 5}))[0] for _ in range(3)]
        disk["full"] = False
        await asyncio.sleep(1.1)  # a failed log is tried again at most once a second
        after = None
        for _ in range(50):
            await find_coordinator(cluster.client, "g", GROUP)
            after = (await cluster.commit("g", {0: 5}))[0]
            if after == Errors.NONE:
                break
            await asyncio.sleep(0.05)
        return while_full, after, await cluster.fetch_offsets("g", [0])

    while_full, after, fetched = run_groups(tmp_path, scenario)
    assert set(while_full) <= RETRIABLE_COORDINATOR_ERRORS
    assert after == Errors.NONE
    assert fetched == {0: (5, Errors.NONE)}


def test_an_append_to_consumer_offsets_the_disk_refuses_is_a_retriable_coordinator_error(
    tmp_path, monkeypatch
):
    async def scenario(cluster):
        await find_coordinator(cluster.client, "g", GROUP)
        assert (await cluster.commit("g", {0: 1}))[0] == Errors.NONE
        disk = TornDisk(monkeypatch, "__consumer_offsets")
        refused = (await cluster.commit("g", {0: 2}))[0]
        disk.full = False
        return refused, (await cluster.commit("g", {0: 3}))[0], await cluster.fetch_offsets("g", [0])

    refused, accepted, fetched = run_groups(tmp_path, scenario)
    assert refused in RETRIABLE_COORDINATOR_ERRORS
    assert accepted == Errors.NONE
    assert fetched == {0: (3, Errors.NONE)}


# ---- a real full disk -------------------------------------------------------------------------------


@contextlib.contextmanager
def _small_tmpfs(where: Path, size: str):
    where.mkdir(parents=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True, text=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({mounted.stderr.strip() or 'mount refused'})")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


@pytest.mark.slow
def test_a_filled_tmpfs_answers_kafka_storage_error_and_recovers(tmp_path):
    with _small_tmpfs(tmp_path / "disk", "2m") as disk:
        filler = disk / "filler"

        async def scenario(broker):
            await broker.create_topic("orders")
            filler.write_bytes(b"\0" * (1024 * 1024))  # leave the broker well under a megabyte
            answers = []
            while len(answers) < 200 and not any(answers):
                answers.append((await broker.produce(_batch([os.urandom(16 * 1024)]))).error_code)
            partition = broker.node.partition("orders", 0)
            written = len(answers) - 1
            assert answers[-1] == Errors.KAFKA_STORAGE_ERROR, answers
            assert (partition.log_end_offset, partition.high_watermark) == (written, written)
            filler.unlink()
            again = await broker.produce(_batch([b"after"]))
            assert (again.error_code, again.base_offset) == (Errors.NONE, written)
            return written, _values(partition.log)

        written, values = run_broker(tmp_path, scenario, **{"log.dirs": str(disk / "data")})
    assert written > 0
    assert len(values) == written + 1 and values[-1] == b"after"
