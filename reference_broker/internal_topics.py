"""The coordinators' internal topics, ``__consumer_offsets`` and ``__transaction_state``: created on
first use (as Kafka creates them when a coordinator is first looked up), compacted, written in whole
batches by the coordinator that owns them and read back in full when the broker starts.

A coordinator state record is a key and a value (None is a tombstone: the key's state is gone). The
layouts of keys and values belong to the coordinators (``groups.classic_log_records``,
``groups.kip848_log_records``, ``transactions.log_records``); this module only moves bytes in and out
of the partition logs."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from kconform.codecs import DecodeError
from kconform.codecs.errors import Errors
from kconform.codecs.records import Record, encode_batch, iter_batches

from .clock import Clock
from .java_hash_map import string_hash
from .storage import StorageError

if TYPE_CHECKING:  # the partition imports nothing of this module; only the type is named here
    from .partition import Partition, TopicLookup

__all__ = [
    "CONSUMER_OFFSETS",
    "TRANSACTION_STATE",
    "CoordinatorLogUnavailable",
    "CorruptInternalTopic",
    "InternalTopic",
    "InternalTopicHost",
    "StoredRecord",
    "java_string_hash",
    "partition_for",
]

CONSUMER_OFFSETS = "__consumer_offsets"
TRANSACTION_STATE = "__transaction_state"
_READ_CHUNK = 4 * 1024 * 1024
_REOPEN_INTERVAL_MS = 1000  # how often a coordinator request tries again to create a failed local log

# name -> (partition count, segment size, replication factor settings)
_SETTINGS = {
    CONSUMER_OFFSETS: (
        "offsets.topic.num.partitions",
        "offsets.topic.segment.bytes",
        "offsets.topic.replication.factor",
    ),
    TRANSACTION_STATE: (
        "transaction.state.log.num.partitions",
        "transaction.state.log.segment.bytes",
        "transaction.state.log.replication.factor",
    ),
}


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` as a signed 32-bit int."""
    h = string_hash(text)
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for(key: str, partitions: int) -> int:
    """Kafka's ``Utils.abs(key.hashCode) % partitions``: the partition (and so the coordinator) of a
    group id or transactional id. ``Utils.abs`` maps Integer.MIN_VALUE to 0 rather than overflowing."""
    h = java_string_hash(key)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


@dataclass(frozen=True, slots=True)
class StoredRecord:
    """One record read back from an internal topic, with the batch facts a loader needs: transactional
    offset commits are held until their producer's COMMIT or ABORT marker arrives."""

    offset: int
    key: bytes | None
    value: bytes | None
    producer_id: int = -1
    producer_epoch: int = -1
    is_transactional: bool = False
    control: int | None = None  # 0 ABORT, 1 COMMIT for a transaction marker; None for data


class InternalTopicHost(Protocol):
    """What an internal topic needs from its node: its settings, the clock for record timestamps, the
    topic registry, and the partitions it writes to and reads from."""

    @property
    def config(self) -> Mapping[str, object]: ...

    @property
    def clock(self) -> Clock: ...

    @property
    def topics(self) -> TopicLookup: ...

    def assign_replicas(self, partitions: int, factor: int) -> list[list[int]]: ...

    def create_topic(self, name: str, replicas: list[list[int]], configs: dict[str, str]) -> object: ...

    def partition(self, topic_name: str, index: int) -> Partition | None: ...

    @property
    def node_id(self) -> int: ...

    @property
    def replication(self) -> ReplicaOpener: ...


class ReplicaOpener(Protocol):
    """Opens this node's replica of one partition and follows its registration (the replica manager):
    how a partition whose log could not be created (a full disk) is tried again."""

    def apply_partition(self, topic: object, info: object) -> None: ...


class CoordinatorLogUnavailable(Exception):
    """A coordinator write found no local log to write to (it could not be created: a full disk) or the
    disk refused it. It carries no error code, so the coordinator rules answer the failed write with
    their retriable NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE (Kafka's ``GroupCoordinatorService``
    turns a ``KafkaStorageException`` into NOT_COORDINATOR), never an AttributeError."""


class InternalTopic:
    """One internal topic of a broker node."""

    def __init__(self, host: InternalTopicHost, name: str) -> None:
        if name not in _SETTINGS:
            raise ValueError(f"{name} is not an internal topic")
        self._host = host
        self.name = name
        count_key, segment_key, factor_key = _SETTINGS[name]
        self.partition_count = int(host.config[count_key])
        self._segment_bytes = str(int(host.config[segment_key]))
        self._factor_key = factor_key
        self._next_reopen_ms = 0

    @property
    def exists(self) -> bool:
        return self._host.topics.get(self.name) is not None

    def ensure(self) -> None:
        """Create the topic if it does not exist: ``partition_count`` partitions, compacted. If it
        exists but a replica of this node has no log (its creation failed, e.g. on a full disk), try
        to open it again, at most once a second: once the disk has room the coordinator loads without
        a restart."""
        topic = self._host.topics.get(self.name)
        if topic is not None:
            self._reopen_missing(topic)
            return
        configs = {"cleanup.policy": "compact", "segment.bytes": self._segment_bytes}
        if self.name == CONSUMER_OFFSETS:
            configs["compression.type"] = "producer"
        else:
            configs["min.insync.replicas"] = str(int(self._host.config["transaction.state.log.min.isr"]))
        # The configured factor, or as many copies as there are brokers: Kafka refuses to create the
        # topic until enough brokers have registered, which would leave a single node without it.
        registered = len(getattr(self._host.topics, "brokers", {})) or 1
        factor = min(int(self._host.config[self._factor_key]), registered)
        self._host.create_topic(self.name, self._host.assign_replicas(self.partition_count, factor), configs)

    def _reopen_missing(self, topic) -> None:
        node_id = self._host.node_id
        missing = [
            info
            for info in topic.partitions
            if node_id in info.replicas and self._host.partition(self.name, info.index) is None
        ]
        now = self._host.clock.now_ms()
        if not missing or now < self._next_reopen_ms:
            return
        self._next_reopen_ms = now + _REOPEN_INTERVAL_MS
        for info in missing:  # the replica manager logs and leaves offline what still fails
            self._host.replication.apply_partition(topic, info)

    def partition_for(self, key: str) -> int:
        return partition_for(key, self.partition_count)

    def append(
        self,
        partition: int,
        records: Sequence[tuple[bytes | None, bytes | None]],
        *,
        producer_id: int = -1,
        producer_epoch: int = -1,
        transactional: bool = False,
    ) -> int:
        """Write ``records`` (key, value) as one batch; returns the offset of the last one. A
        transactional batch (a TxnOffsetCommit) carries the producer's id and epoch and is completed
        by a marker written through ``Partition.append_control_marker``."""
        self.ensure()
        target = self._host.partition(self.name, partition)
        if target is None:
            raise CoordinatorLogUnavailable(f"{self.name}-{partition} has no log on this broker")
        now = self._host.clock.now_ms()
        batch = encode_batch(
            [Record(offset=i, timestamp=now, key=k, value=v) for i, (k, v) in enumerate(records)],
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            base_sequence=-1,
            is_transactional=transactional,
        )
        try:
            return target.append_internal(batch)
        except StorageError as exc:
            if exc.error_code != Errors.KAFKA_STORAGE_ERROR:
                raise
            raise CoordinatorLogUnavailable(str(exc)) from exc

    def committed(self, partition: int, end_offset: int) -> bool:
        target = self._host.partition(self.name, partition)
        return target is not None and target.high_watermark >= end_offset

    async def wait_committed(self, partition: int, end_offset: int, timeout_s: float) -> int:
        """NONE once the high watermark passes ``end_offset`` (a coordinator's write is durable);
        NOT_LEADER_OR_FOLLOWER if this broker stops leading, REQUEST_TIMED_OUT after ``timeout_s``."""
        target = self._host.partition(self.name, partition)
        if target is None:
            return Errors.NOT_LEADER_OR_FOLLOWER
        code = await target.wait_for_replication(end_offset, timeout_s)
        # the high watermark passed: that is all a coordinator waits for (NOT_ENOUGH_REPLICAS_AFTER_APPEND
        # is an acks=all producer's concern; the high watermark does not move below min.insync.replicas)
        return Errors.NONE if code == Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND else code

    def read(self, partition: int) -> Iterator[StoredRecord]:
        """Every record of one partition, from the log start to the log end, in offset order."""
        target = self._host.partition(self.name, partition)
        if target is None:
            return
        offset = target.log_start_offset
        end = target.log_end_offset
        while offset < end:
            result = target.log.read(offset, _READ_CHUNK, min_one_batch=True, whole_batches=True)
            if result.region is None:
                return
            data = result.region.read()
            advanced = offset
            try:
                for batch in iter_batches(data):
                    control = batch.is_control
                    for record in batch.records:
                        if record.offset < offset:
                            continue
                        yield StoredRecord(
                            offset=record.offset,
                            key=record.key,
                            value=record.value,
                            producer_id=batch.producer_id,
                            producer_epoch=batch.producer_epoch,
                            is_transactional=batch.is_transactional,
                            control=_marker_type(record.key) if control else None,
                        )
                    advanced = batch.last_offset + 1
            except DecodeError as exc:
                raise CorruptInternalTopic(
                    f"{self.name}-{partition} has an unreadable batch after offset {advanced}: {exc}"
                ) from exc
            if advanced <= offset:
                return
            offset = advanced


class CorruptInternalTopic(Exception):
    """A coordinator log cannot be read back; the message says which partition and where."""


def _marker_type(key: bytes | None) -> int | None:
    # A control record key is version int16, type int16 (0 ABORT, 1 COMMIT).
    if key is None or len(key) < 4:
        return None
    kind = int.from_bytes(key[2:4], "big", signed=True)
    return kind if kind in (0, 1) else None
