"""Control records: the key every control record carries, and the commit and abort markers a
transaction coordinator writes into each partition."""

from __future__ import annotations

import struct
from dataclasses import dataclass

from ._batch_model import ControlRecordType, Record
from ._batches import encode_batch
from ._exceptions import DecodeError

__all__ = [
    "EndTransactionMarker",
    "decode_control_key",
    "decode_end_txn_marker",
    "encode_control_key",
    "encode_end_txn_marker",
    "encode_end_txn_marker_batch",
]

_INT16_INT16 = struct.Struct(">hh")
_INT16_INT32 = struct.Struct(">hi")


@dataclass(frozen=True, slots=True)
class EndTransactionMarker:
    """The commit or abort marker a transaction coordinator writes into each partition."""

    type: ControlRecordType
    coordinator_epoch: int
    version: int = 0

    @property
    def committed(self) -> bool:
        return self.type == ControlRecordType.COMMIT


def encode_control_key(type: ControlRecordType | int, version: int = 0) -> bytes:
    """A control record key: version int16, type int16."""
    return _INT16_INT16.pack(version, type)


def decode_control_key(key: bytes | None) -> tuple[int, int]:
    """``(version, type)`` of a control record key (unknown types are returned as plain ints)."""
    if key is None or len(key) < 4:
        raise DecodeError("ControlRecordKey", None, "control record key is shorter than 4 bytes", field="key")
    version, type_ = _INT16_INT16.unpack_from(key, 0)
    if version < 0:
        raise DecodeError("ControlRecordKey", version, "negative control record key version", field="version")
    try:
        return version, ControlRecordType(type_)
    except ValueError:
        return version, type_


def encode_end_txn_marker(coordinator_epoch: int, version: int = 0) -> bytes:
    """An end-transaction marker value: version int16, coordinator epoch int32."""
    return _INT16_INT32.pack(version, coordinator_epoch)


def decode_end_txn_marker(record: Record) -> EndTransactionMarker:
    """The marker carried by a control record of type ABORT or COMMIT."""
    _, type_ = decode_control_key(record.key)
    if type_ not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        raise DecodeError(
            "EndTxnMarker", None, f"control record type {type_} is not a transaction marker", field="key"
        )
    value = record.value
    if value is None or len(value) < 6:
        raise DecodeError("EndTxnMarker", None, "marker value is shorter than 6 bytes", field="value")
    version, coordinator_epoch = _INT16_INT32.unpack_from(value, 0)
    if version < 0:
        raise DecodeError("EndTxnMarker", version, "negative marker version", field="version")
    return EndTransactionMarker(type_, coordinator_epoch, version)


def encode_end_txn_marker_batch(
    *,
    producer_id: int,
    producer_epoch: int,
    commit: bool,
    coordinator_epoch: int,
    timestamp: int,
    base_offset: int = 0,
    partition_leader_epoch: int = -1,
) -> bytes:
    """A control batch holding one commit/abort marker, as ``MemoryRecords.withEndTransactionMarker``."""
    type_ = ControlRecordType.COMMIT if commit else ControlRecordType.ABORT
    marker = Record(
        base_offset, timestamp, encode_control_key(type_), encode_end_txn_marker(coordinator_epoch)
    )
    return encode_batch(
        [marker],
        base_offset=base_offset,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=-1,
        is_transactional=True,
        is_control=True,
        partition_leader_epoch=partition_leader_epoch,
    )
