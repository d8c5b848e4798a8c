"""The ``__cluster_metadata`` partition on disk and the image replayed from it.

The controller writes it (``append``: records framed as KRaft frames them, in one batch); a broker
replicates it from the controller (``append_replicated``: the controller's batches byte for byte) and
serves nothing from it. Both replay every record into their ``ClusterImage`` as it lands and on start,
and tell their listeners what changed. The log is an ordinary partition log (segments, indexes,
leader epochs, recovery of a torn tail), so a node killed mid-write restarts on what it had flushed.

One controller is the whole quorum: a record is committed once written, so the high watermark is the
log end offset. Kafka's quorum also writes control batches (leader changes) and snapshots; this
controller writes neither, so the log replays from offset 0, and a control batch met while replaying
holds no metadata record and is passed over."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from kconform.codecs import DecodeError
from kconform.codecs.metadata_log import METADATA_TOPIC, METADATA_TOPIC_ID, decode_metadata_record
from kconform.codecs.metadata_log import encode_metadata_record as _encode
from kconform.codecs.records import Record, encode_batch, iter_batches, truncated_tail

from ..storage import LogConfig, PartitionLog
from .image import ClusterImage, ImageChange, ImageError

__all__ = ["MetadataLog", "CorruptMetadataLog", "record_version"]

log = logging.getLogger(__name__)
_READ_CHUNK = 4 * 1024 * 1024

# The version each record is written at: the newest one whose extra fields this cluster fills in.
# PartitionRecord/PartitionChangeRecord v1 add log directories and v2 eligible leader replicas, which
# this cluster does not track; RegisterBrokerRecord v3 adds log directories (left empty).
_VERSIONS = {
    "RegisterBrokerRecord": 3,
    "PartitionRecord": 0,
    "PartitionChangeRecord": 0,
}


def record_version(record) -> int:
    if type(record).__name__ == "BrokerRegistrationChangeRecord":
        # ReplicationControlManager writes a fence or unfence at v0 and a controlled shutdown at v1,
        # the version that has the field
        return 1 if record.in_controlled_shutdown else 0
    return _VERSIONS.get(type(record).__name__, 0)


class CorruptMetadataLog(RuntimeError):
    """The metadata log holds a record that cannot be read or does not fit what came before it."""


class MetadataLog:
    def __init__(self, partition_log: PartitionLog, image: ClusterImage) -> None:
        self.partition_log = partition_log
        self.image = image
        self.listeners: list[Callable[[ImageChange], None]] = []

    @classmethod
    def open(cls, data_dir: Path, *, clock: Callable[[], int]) -> MetadataLog:
        """Open (or create) ``<data_dir>/__cluster_metadata-0`` and replay it."""
        partition_log = PartitionLog.open(
            Path(data_dir) / f"{METADATA_TOPIC}-0",
            LogConfig(segment_bytes=8 * 1024 * 1024, retention_ms=-1, cleanup_policy="delete"),
            clock=clock,
            topic_id=METADATA_TOPIC_ID,
        )
        if partition_log.recovered_bytes_truncated:
            log.warning(
                "recovery of the metadata log cut %d bytes of a torn tail; it ends at offset %d",
                partition_log.recovered_bytes_truncated,
                partition_log.log_end_offset,
            )
        metadata = cls(partition_log, ClusterImage())
        metadata._replay_from(0)
        metadata.partition_log.update_high_watermark(metadata.partition_log.log_end_offset)
        return metadata

    @property
    def end_offset(self) -> int:
        return self.partition_log.log_end_offset

    @property
    def latest_epoch(self) -> int:
        epoch = self.partition_log.latest_epoch
        return -1 if epoch is None else epoch

    def close(self) -> None:
        self.partition_log.close()

    # ---- writing (the controller) ---------------------------------------------------------------

    def append(self, records: Sequence, *, leader_epoch: int, now_ms: int) -> ImageChange:
        """Write ``records`` as one batch, atomically (Kafka's controller appends each operation's
        records as one atomic batch), and replay them."""
        if not records:
            return ImageChange()
        base = self.partition_log.log_end_offset
        batch = encode_batch(
            [
                Record(offset=base + i, timestamp=now_ms, key=None, value=_encode(r, record_version(r)))
                for i, r in enumerate(records)
            ],
            base_offset=base,
            partition_leader_epoch=leader_epoch,
        )
        self.partition_log.append(batch, leader_epoch=leader_epoch, assign_offsets=True)
        self.partition_log.flush()  # the quorum's write is durable before it counts as committed
        self.partition_log.update_high_watermark(self.partition_log.log_end_offset)
        return self._publish(self._replay_records(enumerate(records, start=base)))

    # ---- replicating (a broker) -----------------------------------------------------------------

    def append_replicated(self, batches: bytes, *, high_watermark: int) -> ImageChange:
        """Append batches fetched from the controller (offsets as the controller wrote them) and replay
        the records of the whole batches among them. A torn batch at the end is left for the next fetch."""
        start = self.partition_log.log_end_offset
        whole = bytes(batches)[: _whole_length(batches)]
        if whole:
            self.partition_log.append(whole, assign_offsets=False)
        self.partition_log.update_high_watermark(min(high_watermark, self.partition_log.log_end_offset))
        return self._publish(self._replay_from(start))

    def read(self, offset: int, max_bytes: int) -> bytes:
        """Whole batches from ``offset`` (for a broker's metadata fetch), at most ``max_bytes`` but at
        least one batch."""
        result = self.partition_log.read(offset, max_bytes, whole_batches=True)
        return b"" if result.region is None else result.region.read()

    # ---- replay ---------------------------------------------------------------------------------

    def _replay_from(self, offset: int) -> ImageChange:
        return self._replay_records(self._read_records(offset))

    def _read_records(self, offset: int) -> Iterable[tuple[int, object]]:
        end = self.partition_log.log_end_offset
        while offset < end:
            data = self.read(offset, _READ_CHUNK)
            if not data:
                return
            for batch in iter_batches(data):
                # a control batch (KRaft's leader changes, snapshot markers) holds no metadata record
                for record in () if batch.is_control else batch.records:
                    if record.offset < offset:
                        continue
                    try:
                        _type, _version, decoded = decode_metadata_record(record.value or b"")
                    except DecodeError as exc:
                        raise CorruptMetadataLog(
                            f"metadata record at offset {record.offset} cannot be read: {exc}"
                        ) from exc
                    yield record.offset, decoded
                offset = batch.last_offset + 1

    def _replay_records(self, records: Iterable[tuple[int, object]]) -> ImageChange:
        change = ImageChange()
        for offset, record in records:
            try:
                change.update(self.image.replay(record, offset))
            except ImageError as exc:
                raise CorruptMetadataLog(f"metadata record at offset {offset}: {exc}") from exc
        return change

    def _publish(self, change: ImageChange) -> ImageChange:
        if change:
            for listener in list(self.listeners):
                listener(change)
        return change


def _whole_length(data) -> int:
    """The length of the whole batches at the start of ``data``."""
    return len(data) - truncated_tail(data)
