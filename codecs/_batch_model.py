"""The values a records blob decodes to: ``Record``, ``BatchHeader`` and ``RecordBatch``, with the
timestamp and control-record types."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum

from ._batch_layout import (
    COMPRESSION_MASK,
    CONTROL_BIT,
    DELETE_HORIZON_BIT,
    LOG_OVERHEAD,
    TIMESTAMP_TYPE_BIT,
    TRANSACTIONAL_BIT,
)
from .compression import Compression

__all__ = ["BatchHeader", "ControlRecordType", "Headers", "Record", "RecordBatch", "TimestampType"]

Headers = list[tuple[str, bytes | None]]


class TimestampType(IntEnum):
    NO_TIMESTAMP_TYPE = -1  # magic 0 carries no timestamps
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


class ControlRecordType(IntEnum):
    """The ``type`` in a control record's key."""

    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6


@dataclass(slots=True)
class Record:
    """One record. ``offset`` is absolute; ``timestamp`` is -1 where the format has none (magic 0)."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: Headers = field(default_factory=list)


@dataclass(slots=True)
class BatchHeader:
    """The header fields of one batch, as on the wire.

    For magic 0 and 1 (one legacy message, possibly a compressed wrapper) the fields that format lacks
    hold Kafka's "none" values (-1), ``batch_length`` is the message size, ``crc`` its CRC-32, both
    timestamps the message's timestamp (-1 for magic 0), ``base_offset`` the entry's offset field (for
    a compressed wrapper Kafka puts the offset of its *last* inner message there) and
    ``last_offset_delta`` 0, so ``last_offset`` holds for every magic. ``record_count`` is -1 for a
    legacy compressed wrapper until its records are decoded.
    """

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    @property
    def compression(self) -> Compression:
        return Compression(self.attributes & COMPRESSION_MASK)

    @property
    def timestamp_type(self) -> TimestampType:
        if self.magic == 0:
            return TimestampType.NO_TIMESTAMP_TYPE
        return TimestampType((self.attributes & TIMESTAMP_TYPE_BIT) >> 3)

    @property
    def is_transactional(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & TRANSACTIONAL_BIT)

    @property
    def is_control(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & CONTROL_BIT)

    @property
    def has_delete_horizon(self) -> bool:
        """KIP-534: ``base_timestamp`` holds the delete horizon set by log compaction."""
        return self.magic >= 2 and bool(self.attributes & DELETE_HORIZON_BIT)

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def size_in_bytes(self) -> int:
        """Bytes the whole batch occupies, from its base offset to its end."""
        return self.batch_length + LOG_OVERHEAD


@dataclass(slots=True)
class RecordBatch(BatchHeader):
    """A batch with its records decoded (decompressed, absolute offsets and timestamps)."""

    records: list[Record] = field(default_factory=list)
