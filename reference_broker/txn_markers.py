"""Writing a transaction's COMMIT or ABORT markers to its partitions (what a partition leader does for
WriteTxnMarkers; the transaction coordinator of this node calls it directly).

For a ``__consumer_offsets`` partition the group coordinator is told afterwards, so that the
transaction's offset commits take effect or are dropped (Kafka's ``onTransactionCompleted``)."""

from __future__ import annotations

import logging
from collections.abc import Iterable

from kconform.codecs.errors import Errors

from .internal_topics import CONSUMER_OFFSETS
from .partition import PartitionError

__all__ = ["write_txn_markers"]

log = logging.getLogger(__name__)


def write_txn_markers(
    broker,
    *,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    commit: bool,
    partitions: Iterable[tuple[str, int]],
    transaction_version: int = 0,
) -> dict[tuple[str, int], int]:
    """The error code for each partition: NONE once its marker is in the log."""
    results: dict[tuple[str, int], int] = {}
    for topic, index in partitions:
        partition = broker.partition(topic, index)
        if partition is None:
            results[(topic, index)] = Errors.UNKNOWN_TOPIC_OR_PARTITION
            continue
        try:
            partition.append_control_marker(
                producer_id, producer_epoch, coordinator_epoch, commit, transaction_version
            )
        except PartitionError as exc:
            results[(topic, index)] = exc.code
            continue
        except Exception:  # a disk failure on one partition must not stop the others
            log.exception("marker for producer %d on %s-%d failed", producer_id, topic, index)
            results[(topic, index)] = Errors.KAFKA_STORAGE_ERROR
            continue
        results[(topic, index)] = Errors.NONE
        if topic == CONSUMER_OFFSETS:
            broker.group_coordinator.complete_transaction(index, producer_id, producer_epoch, commit)
    return results
