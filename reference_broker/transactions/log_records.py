"""The transaction coordinator's records in ``__transaction_state``: Kafka's ``TransactionLogKey`` and
``TransactionLogValue``, generated from its definitions (``kconform.codecs.coordinator_records``).

Value version 0 is written, as a coordinator whose transaction.version is below 2 writes it
(``TransactionLog.valueToBytes``); version 1 (flexible, with the previous and next producer ids and the
client's transaction version as tagged fields) is read too. A None value is a tombstone."""

from __future__ import annotations

from kconform.codecs import DecodeError
from kconform.codecs.coordinator_log import (
    decode_coordinator_key,
    decode_coordinator_value,
    encode_coordinator_key,
    encode_coordinator_value,
)
from kconform.codecs.coordinator_records import TransactionLogKey, TransactionLogValue

from .metadata import TxnMetadata
from .states import TxnState

__all__ = ["TxnRecordError", "decode_txn_key", "decode_txn_value", "encode_txn_key", "encode_txn_value"]

TOPIC = "__transaction_state"
_KEY_TYPE = 0
_WRITTEN_VALUE_VERSION = 0


class TxnRecordError(ValueError):
    """A transaction log record that cannot be read."""


def encode_txn_key(transactional_id: str) -> bytes:
    return encode_coordinator_key(TransactionLogKey(transactional_id=transactional_id), _KEY_TYPE)


def encode_txn_value(meta: TxnMetadata) -> bytes:
    partitions = None  # Kafka writes no partition list for an empty transaction
    if meta.state is not TxnState.EMPTY:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in sorted(meta.partitions):
            by_topic.setdefault(topic, []).append(partition)
        partitions = [
            TransactionLogValue.PartitionsSchema(topic=topic, partition_ids=parts)
            for topic, parts in by_topic.items()
        ]
    value = TransactionLogValue(
        producer_id=meta.producer_id,
        producer_epoch=meta.producer_epoch,
        transaction_timeout_ms=meta.timeout_ms,
        transaction_status=meta.state.code,
        transaction_partitions=partitions,
        transaction_last_update_timestamp_ms=meta.last_update_ms,
        transaction_start_timestamp_ms=meta.start_ms,
    )
    return encode_coordinator_value(value, _WRITTEN_VALUE_VERSION)


def decode_txn_key(key: bytes) -> str:
    try:
        _, decoded = decode_coordinator_key(TOPIC, key)
    except DecodeError as exc:
        raise TxnRecordError(f"transaction log key: {exc}") from None
    return decoded.transactional_id


def decode_txn_value(transactional_id: str, data: bytes) -> TxnMetadata:
    try:
        _, value = decode_coordinator_value(TransactionLogValue, data)
        state = TxnState.from_code(value.transaction_status)
    except (DecodeError, ValueError) as exc:
        raise TxnRecordError(f"transaction log value of {transactional_id!r}: {exc}") from None
    partitions = frozenset(
        (topic.topic, partition)
        for topic in value.transaction_partitions or ()
        for partition in topic.partition_ids
    )
    # Built from the record, not by a transition: this is the state the log says the transaction is in.
    return TxnMetadata(
        transactional_id=transactional_id,
        producer_id=value.producer_id,
        producer_epoch=value.producer_epoch,
        timeout_ms=value.transaction_timeout_ms,
        state=state,
        partitions=partitions,
        last_update_ms=value.transaction_last_update_timestamp_ms,
        start_ms=value.transaction_start_timestamp_ms,
    )
