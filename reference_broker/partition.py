"""One partition replica on this broker: as leader, validated appends with idempotence checks, reads
capped at the high watermark or last stable offset, offsets by timestamp, follower fetches that move
the high watermark and the ISR, and waiting for replication; as follower, appends of what it fetched
from the leader and truncation where its log diverged.

The on-disk log is ``storage.PartitionLog``; batch validation is ``validation``; the producer
sequence rules are ``storage`` producer state; the role, the followers' progress and the ISR changes
asked for are ``replication.Leadership``. The high watermark is the smallest log end offset of the
maximal ISR (``replication.follower_progress``); with no other replica it is the log end offset.

A partition reaches its node only through ``PartitionHost``: the clock, the purgatory, the image
registration and the replication settings and controls."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from kconform.codecs.errors import Errors

from .clock import Clock
from .purgatory import Purgatory
from .replication.follower_progress import high_watermark as next_high_watermark
from .replication.leadership import IsrProposal, Leadership, Role

if TYPE_CHECKING:
    from .storage import FileRegion, PartitionLog
    from .validation import FramedRecords

__all__ = [
    "Partition",
    "PartitionError",
    "PartitionHost",
    "AppendResult",
    "FetchRead",
    "LogSlice",
    "TopicLookup",
]


class TopicLookup(Protocol):
    def get(self, name: str):
        """The topic named ``name`` (with its ``partitions`` registrations), if the node knows it."""


class ReplicationControl(Protocol):
    """The node's replication settings and the controller link a leader uses."""

    lag_ms: int  # replica.lag.time.max.ms

    def isr_eligible(self, broker_id: int, broker_epoch: int = -1) -> bool:
        """Registered, unfenced, not shutting down (and at that epoch, when one is given)."""

    def alive_broker_epoch(self, broker_id: int) -> int:
        """The broker's registered epoch if it is unfenced, else -1."""

    def propose_isr(self, partition: Partition, proposal: IsrProposal) -> None:
        """Send an AlterPartition for the partition's proposed ISR; its answer comes back through
        ``Partition.isr_committed`` or ``isr_refused``."""


class PartitionHost(Protocol):
    """All a partition needs from the node that holds it (``BrokerNode`` is one), and all it may reach.

    ``clock``: the wall-clock time validation and transaction markers are stamped with, and the clock
    replication waits time out by. ``purgatory``: where requests waiting on this partition's high
    watermark are parked (``wait_until``) and woken after every append (``notify``). ``topics``: where
    the partition finds its own leader state (leader epoch, replicas, in-sync replicas), looked up on
    each use so that it is always the node's current one. Configuration is not reached through the
    host: the topic's settings are given to ``Partition`` and ``configure``."""

    @property
    def clock(self) -> Clock: ...

    @property
    def purgatory(self) -> Purgatory: ...

    @property
    def topics(self) -> TopicLookup: ...

    @property
    def node_id(self) -> int: ...

    @property
    def replication(self) -> ReplicationControl: ...


class PartitionError(Exception):
    """A per-partition failure with Kafka's error code."""

    def __init__(
        self, code: int, message: str | None = None, record_errors: Iterable[tuple[int, str]] = ()
    ) -> None:
        super().__init__(message or str(code))
        self.code = code
        self.message = message
        self.record_errors = list(record_errors)


@dataclass(slots=True)
class AppendResult:
    first_offset: int
    last_offset: int
    log_append_time_ms: int


class LogSlice:
    """Record bytes still in a segment file: the response encoder leaves a hole for them and the
    server sends them straight from the file (sendfile), never copying them through Python."""

    __slots__ = ("region",)

    def __init__(self, region: FileRegion) -> None:
        self.region = region

    def __len__(self) -> int:
        return self.region.size

    def read(self) -> bytes:
        return self.region.read()


@dataclass(slots=True)
class FetchRead:
    records: bytes | LogSlice
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    aborted_transactions: list[tuple[int, int]] | None
    """(producer id, first offset) of each aborted transaction overlapping the read; None for a
    read_uncommitted read (Kafka leaves the response's list null then)."""


class Partition:
    def __init__(
        self, host: PartitionHost, topic_name: str, index: int, log: PartitionLog, settings: Mapping[str, str]
    ) -> None:
        self._host = host
        self.topic_name = topic_name
        self.index = index
        self.log = log
        self.watch_key = (topic_name, index)
        self.leadership = Leadership(host.node_id)
        self.configure(settings)

    def configure(self, settings: Mapping[str, str]) -> None:
        self.settings = dict(settings)
        from .validation import LogValidationConfig

        self.validation = LogValidationConfig.from_topic_settings(settings)
        self.min_insync_replicas = int(settings.get("min.insync.replicas", "1"))

    # ---- role and leader state ---------------------------------------------------------------

    @property
    def state(self):
        """The partition's registration in the node's metadata image."""
        topic = self._host.topics.get(self.topic_name)
        if topic is None:  # deleted while a request still held the partition
            raise LookupError(f"topic {self.topic_name} is no longer on this node")
        return topic.partitions[self.index]

    @property
    def leader_epoch(self) -> int:
        return self.leadership.leader_epoch

    @property
    def is_leader(self) -> bool:
        return self.leadership.is_leader

    @property
    def replication(self) -> ReplicationControl:
        return self._host.replication

    def apply_registration(self, info) -> bool:
        """Follow the image's registration (Kafka's makeLeader / makeFollower). True when the role or
        leader epoch changed. A new leader's epoch starts at its log end offset; its high watermark
        then moves only as its ISR's log end offsets allow (at once when it is the only replica)."""
        changed = self.leadership.apply(
            info, log_end_offset=self.log.log_end_offset, now_ms=self._host.clock.now_ms()
        )
        if changed and self.leadership.is_leader:
            latest = self.log.latest_epoch
            if latest is None or latest < self.leader_epoch:
                self.log.assign_epoch_start_offset(self.leader_epoch, self.log.log_end_offset)
        if self.leadership.is_leader:
            self._advance_high_watermark()
        else:
            self._host.purgatory.notify(self.watch_key)  # waiting acks=all produces learn of it
        return changed

    def replica_progressed(self) -> None:
        """A follower's log or high watermark moved: wake whoever waits on this partition."""
        self._host.purgatory.notify(self.watch_key)

    def check_leader(self) -> None:
        if not self.leadership.is_leader:
            raise PartitionError(Errors.NOT_LEADER_OR_FOLLOWER)

    def isr_committed(self, isr, leader_epoch: int, partition_epoch: int) -> None:
        self.leadership.committed(tuple(isr), leader_epoch, partition_epoch)
        self._advance_high_watermark()

    def isr_refused(self) -> None:
        self.leadership.refused()
        self._advance_high_watermark()

    def record_follower_fetch(
        self, replica_id: int, replica_epoch: int, fetch_offset: int, log_start_offset: int
    ) -> None:
        """A follower fetched from ``fetch_offset`` (its log end): its progress, an ISR expansion when
        it has caught up (``maybeExpandIsr``), and the high watermark that follows."""
        replication = self._host.replication
        proposal = self.leadership.follower_fetched(
            replica_id,
            fetch_offset=fetch_offset,
            log_start_offset=log_start_offset,
            leader_end_offset=self.log.log_end_offset,
            high_watermark=self.high_watermark,
            now_ms=self._host.clock.now_ms(),
            broker_epoch=replica_epoch,
            isr_eligible=replication.isr_eligible(replica_id, replica_epoch),
        )
        if proposal is not None:
            replication.propose_isr(self, proposal)
        self._advance_high_watermark()

    def maybe_shrink_isr(self) -> None:
        """Drop followers that have not caught up for replica.lag.time.max.ms (``maybeShrinkIsr``)."""
        proposal = self.leadership.shrink(
            leader_end_offset=self.log.log_end_offset,
            now_ms=self._host.clock.now_ms(),
            lag_ms=self._host.replication.lag_ms,
        )
        if proposal is not None:
            self._host.replication.propose_isr(self, proposal)

    @property
    def high_watermark(self) -> int:
        return self.log.high_watermark

    @property
    def last_stable_offset(self) -> int:
        """Kafka's LSO: the first offset of the oldest transaction still open (or completed by a
        marker the high watermark has not passed), and never past the high watermark."""
        return self.log.last_stable_offset

    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    def _effective_min_isr(self) -> int:
        """Kafka's ``Partition.effectiveMinIsr`` (KAFKA-15583): min.insync.replicas counts only up to
        the number of replicas, so a topic with fewer replicas than that is not refused acks=all."""
        return min(self.min_insync_replicas, len(self.leadership.replicas))

    def under_min_isr(self) -> bool:
        """The committed ISR is too small for acks=all (checked before an append)."""
        return len(self.leadership.isr) < self._effective_min_isr()

    def _advance_high_watermark(self) -> None:
        # Waiters are told after every append, so read_committed fetches also see the last stable
        # offset move when a marker lands.
        if self.leadership.is_leader and not self.under_min_isr():
            replication = self._host.replication
            target = next_high_watermark(
                self.log.high_watermark,
                self.log.log_end_offset,
                self.leadership.followers,
                self.leadership.maximal_isr,
                now_ms=self._host.clock.now_ms(),
                lag_ms=replication.lag_ms,
                isr_eligible=replication.isr_eligible,
            )
            if target > self.log.high_watermark:
                self.log.update_high_watermark(target)
        self._host.purgatory.notify(self.watch_key)

    def check_leader_epoch(self, current_leader_epoch: int) -> None:
        if current_leader_epoch < 0:
            return
        if current_leader_epoch < self.leader_epoch:
            raise PartitionError(Errors.FENCED_LEADER_EPOCH)
        if current_leader_epoch > self.leader_epoch:
            raise PartitionError(Errors.UNKNOWN_LEADER_EPOCH)

    # ---- produce ------------------------------------------------------------------------------

    def append_records(
        self,
        records: FramedRecords | bytes | None,
        *,
        produce_version: int,
        required_acks: int,
        transactional_id: str | None,
    ) -> AppendResult:
        """Validate and append one partition's produced records (framed once by the handler, or bytes);
        the validated batch's header goes to the log with it, so the log does not parse it again."""
        from .storage import AppendOrigin, InvalidAppend, LogWriteFailed, ProducerStateError
        from .validation import RecordsRejected, validate_produce_records

        self.check_leader()
        if required_acks == -1 and self.under_min_isr():
            raise PartitionError(
                Errors.NOT_ENOUGH_REPLICAS,
                f"The size of the current ISR {set(self.state.isr)} is insufficient to satisfy the min.isr "
                f"requirement of {self.min_insync_replicas} for partition {self.topic_name}-{self.index}",
            )
        try:
            validated = validate_produce_records(
                records,
                produce_version=produce_version,
                config=self.validation,
                now_ms=self._host.clock.now_ms(),
                first_offset=self.log.log_end_offset,
                partition_leader_epoch=self.leader_epoch,
                topic_partition=f"{self.topic_name}-{self.index}",
            )
        except RecordsRejected as exc:
            raise PartitionError(exc.error_code, exc.error_message, exc.record_errors) from None
        if validated.first_offset < 0:
            return AppendResult(-1, -1, -1)
        try:
            info = self.log.append(
                validated.records,
                leader_epoch=self.leader_epoch,
                assign_offsets=False,
                origin=AppendOrigin.CLIENT,
                headers=[batch.header for batch in validated.batches],
            )
        except (ProducerStateError, LogWriteFailed) as exc:  # LogWriteFailed: KAFKA_STORAGE_ERROR
            raise PartitionError(exc.error_code, str(exc)) from None
        except InvalidAppend as exc:
            raise PartitionError(Errors.CORRUPT_MESSAGE, str(exc)) from None
        if info.duplicate:
            return AppendResult(info.first_offset, info.last_offset, info.log_append_time)
        self._advance_high_watermark()
        try:
            self._flush_if_due()
        except LogWriteFailed as exc:
            raise PartitionError(exc.error_code, str(exc)) from None
        return AppendResult(validated.first_offset, validated.last_offset, validated.log_append_time_ms)

    def _flush_if_due(self) -> None:
        """The fsync ``flush.messages``/``flush.ms`` ask for; a disk that refuses it is LogSyncFailed
        (KAFKA_STORAGE_ERROR, as Kafka's failed flush): the records are written, not made durable."""
        from .storage import LogSyncFailed

        try:
            self.log.flush_if_due()
        except OSError as exc:
            where = f"{self.topic_name}-{self.index}"
            raise LogSyncFailed(f"flush of {where} failed: {exc.strerror or exc}") from exc

    def append_internal(self, batch: bytes) -> int:
        """A coordinator's own write (group or transaction state): offsets assigned here, producer
        epochs checked but not sequences, no produce validation. Returns the last offset written."""
        from .storage import AppendOrigin

        self.check_leader()
        info = self.log.append(
            batch, leader_epoch=self.leader_epoch, assign_offsets=True, origin=AppendOrigin.COORDINATOR
        )
        self._advance_high_watermark()
        self._flush_if_due()
        return info.last_offset

    def append_control_marker(
        self,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        commit: bool,
        transaction_version: int = 0,
    ) -> int:
        """Write a transaction's COMMIT or ABORT marker (what WriteTxnMarkers asks of a leader) as one
        control batch, appended with the coordinator's origin: the producer and coordinator epochs
        are checked as Kafka's producer state checks them (``ProducerAppendInfo.appendEndTxnMarker``:
        INVALID_PRODUCER_EPOCH, TRANSACTION_COORDINATOR_FENCED). Returns the marker's offset; the
        LSO may move past the transaction now."""
        from kconform.codecs.records import encode_end_txn_marker_batch

        from .storage import AppendOrigin, LogWriteFailed, ProducerStateError

        self.check_leader()
        batch = encode_end_txn_marker_batch(
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            commit=commit,
            coordinator_epoch=coordinator_epoch,
            timestamp=self._host.clock.now_ms(),
        )
        try:
            info = self.log.append(
                batch,
                leader_epoch=self.leader_epoch,
                assign_offsets=True,
                origin=AppendOrigin.COORDINATOR,
                transaction_version=transaction_version,
            )
        except (ProducerStateError, LogWriteFailed) as exc:
            raise PartitionError(exc.error_code, str(exc)) from None
        self._advance_high_watermark()
        try:
            self._flush_if_due()
        except LogWriteFailed as exc:
            raise PartitionError(exc.error_code, str(exc)) from None
        return info.first_offset

    async def wait_for_replication(self, required_end: int, timeout_s: float) -> int:
        """acks=-1 (Kafka's DelayedProduce with ``checkEnoughReplicasReachOffset``): NONE once the high
        watermark passes the append with the maximal ISR at least min.insync.replicas;
        NOT_ENOUGH_REPLICAS_AFTER_APPEND when it passes with fewer; NOT_LEADER_OR_FOLLOWER when this
        broker stops leading (or starts a new leader epoch) first; REQUEST_TIMED_OUT otherwise."""
        host = self._host
        epoch = self.leader_epoch

        def settled() -> bool:
            return not self.is_leader or self.leader_epoch != epoch or self.high_watermark >= required_end

        if not await host.purgatory.wait_until([self.watch_key], settled, timeout_s, clock=host.clock):
            return Errors.REQUEST_TIMED_OUT
        if not self.is_leader or self.leader_epoch != epoch:
            return Errors.NOT_LEADER_OR_FOLLOWER
        if len(self.leadership.maximal_isr) < self._effective_min_isr():
            return Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        return Errors.NONE

    # ---- fetch ---------------------------------------------------------------------------------

    def read_for_fetch(
        self,
        fetch_offset: int,
        max_bytes: int,
        *,
        min_one_batch: bool,
        read_committed: bool,
        current_leader_epoch: int,
        leader_only: bool = True,
    ) -> FetchRead:
        from .storage import OffsetOutOfRange

        self.check_leader_epoch(current_leader_epoch)
        if leader_only or self.leadership.role is not Role.FOLLOWER:  # a follower reads to its own HW
            self.check_leader()
        limit = self.last_stable_offset if read_committed else self.high_watermark
        try:
            result = self.log.read(
                fetch_offset,
                max_bytes,
                max_offset=limit,
                min_one_batch=min_one_batch,
                include_aborted_txns=read_committed,
            )
        except OffsetOutOfRange:
            raise PartitionError(Errors.OFFSET_OUT_OF_RANGE) from None
        txns = result.aborted_transactions
        return FetchRead(
            records=LogSlice(result.region) if result.region is not None else b"",
            high_watermark=self.high_watermark,
            last_stable_offset=self.last_stable_offset,
            log_start_offset=self.log_start_offset,
            aborted_transactions=None if txns is None else [(t.producer_id, t.first_offset) for t in txns],
        )

    # ---- offsets -------------------------------------------------------------------------------

    def offset_for_timestamp(
        self, timestamp: int, *, read_committed: bool, current_leader_epoch: int, from_consumer: bool = True
    ) -> tuple[int, int, int]:
        """(offset, timestamp, leader epoch) for ListOffsets v1+. A consumer (replica id -1) sees up
        to the LSO (read_committed) or the high watermark; any other replica id has no isolation
        level and sees up to the log end offset (``Partition.fetchOffsetForTimestamp``)."""
        from .storage import EARLIEST_LOCAL_TIMESTAMP, EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP

        self.check_leader_epoch(current_leader_epoch)
        if not from_consumer:
            upper = self.log_end_offset
        else:
            upper = self.last_stable_offset if read_committed else self.high_watermark
        if timestamp == LATEST_TIMESTAMP:  # Kafka answers with the partition's leader epoch
            return upper, -1, self.leader_epoch
        if timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
            found = self.log.fetch_offset_by_timestamp(timestamp)
            return found.offset, -1, found.leader_epoch if found.leader_epoch is not None else -1
        if timestamp == MAX_TIMESTAMP:
            found = self.log.latest_timestamp_offset()
        elif timestamp < 0:
            raise PartitionError(Errors.INVALID_REQUEST if timestamp < -5 else Errors.UNSUPPORTED_VERSION)
        else:
            found = self.log.offset_for_timestamp(timestamp)
        if found is None or found.offset >= upper:
            return -1, -1, -1
        return found.offset, found.timestamp, found.leader_epoch if found.leader_epoch is not None else -1

    def legacy_offsets(self, timestamp: int, max_num_offsets: int) -> list[int]:
        """ListOffsets v0: segment base offsets at or before the timestamp, newest first (Kafka's
        ``fetchOffsetsBefore``), with the log end offset first for LATEST."""
        from .storage import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP

        if timestamp == LATEST_TIMESTAMP:
            offsets = [self.high_watermark] + [s.base_offset for s in reversed(self.log.segments)]
        elif timestamp == EARLIEST_TIMESTAMP:
            offsets = [self.log_start_offset]
        else:
            offsets = [s.base_offset for s in reversed(self.log.segments) if s.max_timestamp <= timestamp]
        seen: list[int] = []
        for offset in offsets:
            if offset not in seen:
                seen.append(offset)
        return seen[: max(0, max_num_offsets)]
