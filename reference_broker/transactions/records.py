"""The transaction coordinator's records in ``__transaction_state``, in Kafka's layout.

Key: version int16 (0), transactional id string. Value: version int16, producer id int64, producer
epoch int16, transaction timeout int32, status int8, partitions (nullable array of topic string and
int32 partition array), last update timestamp int64, start timestamp int64. Version 0 is written;
version 1 (flexible: compact lengths and tagged fields, which are skipped) is read too. A None value
is a tombstone."""

from __future__ import annotations

import struct

from kconform.codecs._primitives import read_uvarint

from .metadata import TxnMetadata, TxnState

__all__ = ["TxnRecordError", "decode_txn_key", "decode_txn_value", "encode_txn_key", "encode_txn_value"]

_I8, _I16, _I32, _I64 = (struct.Struct(f">{c}") for c in "bhiq")


class TxnRecordError(ValueError):
    """A transaction log record that cannot be read."""


def encode_txn_key(transactional_id: str) -> bytes:
    data = transactional_id.encode()
    return _I16.pack(0) + _I16.pack(len(data)) + data


def encode_txn_value(meta: TxnMetadata) -> bytes:
    out = bytearray(_I16.pack(0))
    out += _I64.pack(meta.producer_id) + _I16.pack(meta.producer_epoch) + _I32.pack(meta.timeout_ms)
    out += _I8.pack(meta.state.code)
    if meta.state is TxnState.EMPTY:  # Kafka writes no partition list for an empty transaction
        out += _I32.pack(-1)
    else:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in sorted(meta.partitions):
            by_topic.setdefault(topic, []).append(partition)
        out += _I32.pack(len(by_topic))
        for topic, parts in by_topic.items():
            name = topic.encode()
            out += _I16.pack(len(name)) + name + _I32.pack(len(parts))
            out += b"".join(_I32.pack(p) for p in parts)
    out += _I64.pack(meta.last_update_ms) + _I64.pack(meta.start_ms)
    return bytes(out)


class _Reader:
    def __init__(self, data: bytes, flexible: bool) -> None:
        self.data, self.pos, self.flexible = data, 0, flexible

    def fixed(self, s: struct.Struct) -> int:
        if self.pos + s.size > len(self.data):
            raise TxnRecordError(f"transaction log record ends early at byte {self.pos}")
        (value,) = s.unpack_from(self.data, self.pos)
        self.pos += s.size
        return value

    def length(self, wide: bool) -> int:
        if self.flexible:
            try:
                n, self.pos = read_uvarint(self.data, self.pos)
            except Exception as exc:
                raise TxnRecordError(f"bad length at byte {self.pos}") from exc
            return n - 1
        return self.fixed(_I32 if wide else _I16)

    def string(self) -> str:
        n = self.length(False)
        if n < 0 or self.pos + n > len(self.data):
            raise TxnRecordError(f"bad string length {n} at byte {self.pos}")
        value = self.data[self.pos : self.pos + n]
        self.pos += n
        try:
            return bytes(value).decode()
        except UnicodeDecodeError as exc:
            raise TxnRecordError("a string is not UTF-8") from exc

    def skip_tags(self) -> None:
        if self.flexible:
            count, self.pos = read_uvarint(self.data, self.pos)
            for _ in range(count):
                _tag, self.pos = read_uvarint(self.data, self.pos)
                size, self.pos = read_uvarint(self.data, self.pos)
                self.pos += size


def decode_txn_key(key: bytes) -> str:
    r = _Reader(key, False)
    version = r.fixed(_I16)
    if version != 0:
        raise TxnRecordError(f"transaction log key version {version} is unknown")
    return r.string()


def decode_txn_value(transactional_id: str, data: bytes) -> TxnMetadata:
    r = _Reader(data, False)
    version = r.fixed(_I16)
    if version not in (0, 1):
        raise TxnRecordError(f"transaction log value version {version} is unknown")
    r.flexible = version >= 1
    producer_id, epoch, timeout = r.fixed(_I64), r.fixed(_I16), r.fixed(_I32)
    status = r.fixed(_I8)
    try:
        state = TxnState.from_code(status)
    except ValueError as exc:
        raise TxnRecordError(str(exc)) from None
    partitions: set[tuple[str, int]] = set()
    count = r.length(True)
    if count > len(data):
        raise TxnRecordError(f"impossible topic count {count}")
    for _ in range(max(count, 0)):
        topic = r.string()
        n = r.length(True)
        if n < 0 or n * 4 > len(data):
            raise TxnRecordError(f"impossible partition count {n}")
        partitions.update((topic, r.fixed(_I32)) for _ in range(n))
        r.skip_tags()
    last_update, start = r.fixed(_I64), r.fixed(_I64)
    return TxnMetadata(
        transactional_id=transactional_id,
        producer_id=producer_id,
        producer_epoch=epoch,
        timeout_ms=timeout,
        state=state,
        partitions=partitions,
        last_update_ms=last_update,
        start_ms=start,
    )
