"""A partition leader asking the transaction coordinator about a transactional write (Kafka's
``AddPartitionsToTxnManager``): verify that the partition is in the producer's transaction (KIP-890
part 1) or add it (part 2, Produce v12+ and TxnOffsetCommit v5).

The coordinator is the leader of the transactional id's ``__transaction_state`` partition. When that
is this broker the coordinator is asked in place; otherwise AddPartitionsToTxn goes to it as a broker
request, v4 with ``verify_only`` or v5 adding (``addPartitionsToTxnRequestVersion``). With no
coordinator leader the answer is COORDINATOR_NOT_AVAILABLE, a lost connection NETWORK_EXCEPTION, and an
error for the whole request is every partition's (``AddPartitionsToTxnHandler.onComplete``); the caller
translates them for its producer."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from kconform.codecs.errors import Errors
from kconform.codecs.messages import AddPartitionsToTxnRequest, AddPartitionsToTxnResponse

from .decisions import TxnError

if TYPE_CHECKING:
    from ..node import BrokerNode

__all__ = ["add_or_verify_partitions", "request_for", "codes_from"]

log = logging.getLogger(__name__)
ADD_PARTITIONS_TO_TXN = 24
VERIFY_VERSION, ADD_VERSION = 4, 5
TopicPartition = tuple[str, int]


def coordinator_of(broker: BrokerNode, transactional_id: str) -> int | None:
    """The coordinator's broker id; None while the topic is not there yet (the local coordinator
    creates it), -1 while its partition has no leader."""
    topic = broker.transaction_state
    info = broker.image.get(topic.name)
    if info is None:
        return None
    return info.partitions[topic.partition_for(transactional_id)].leader


async def add_or_verify_partitions(
    broker: BrokerNode,
    transactional_id: str,
    producer_id: int,
    producer_epoch: int,
    partitions: set[TopicPartition],
    *,
    verify_only: bool,
    transaction_version: int = 2,
) -> dict[TopicPartition, int]:
    """Each partition's error code from the coordinator (NONE: in the transaction now)."""
    coordinator_id = coordinator_of(broker, transactional_id)
    if coordinator_id is None or coordinator_id == broker.node_id:
        return await _ask_here(
            broker,
            transactional_id,
            producer_id,
            producer_epoch,
            partitions,
            verify_only,
            transaction_version,
        )
    if coordinator_id < 0:
        return dict.fromkeys(partitions, Errors.COORDINATOR_NOT_AVAILABLE)
    request = request_for(transactional_id, producer_id, producer_epoch, partitions, verify_only)
    timeout_s = int(broker.config["request.timeout.ms"]) / 1000
    try:
        response = await broker.transaction_coordinator.peers.send(
            coordinator_id,
            ADD_PARTITIONS_TO_TXN,
            request,
            version=VERIFY_VERSION if verify_only else ADD_VERSION,
            timeout_s=timeout_s,
        )
    except (TimeoutError, ConnectionError) as exc:
        log.info("AddPartitionsToTxn to broker %d for %s failed: %s", coordinator_id, transactional_id, exc)
        return dict.fromkeys(partitions, Errors.NETWORK_EXCEPTION)
    return codes_from(response, transactional_id, partitions)


async def _ask_here(
    broker, transactional_id, producer_id, producer_epoch, partitions, verify_only, transaction_version
) -> dict[TopicPartition, int]:
    coordinator = broker.transaction_coordinator
    if verify_only:
        return coordinator.verify_partitions_in_transaction(
            transactional_id, producer_id, producer_epoch, set(partitions)
        )
    try:
        await coordinator.add_partitions(
            transactional_id,
            producer_id,
            producer_epoch,
            set(partitions),
            transaction_version=transaction_version,
        )
    except TxnError as exc:
        return dict.fromkeys(partitions, exc.code)
    return dict.fromkeys(partitions, Errors.NONE)


def request_for(
    transactional_id: str,
    producer_id: int,
    producer_epoch: int,
    partitions: set[TopicPartition],
    verify_only: bool,
) -> AddPartitionsToTxnRequest:
    by_topic: dict[str, list[int]] = {}
    for topic, index in sorted(partitions):
        by_topic.setdefault(topic, []).append(index)
    R = AddPartitionsToTxnRequest
    return R(
        transactions=[
            R.AddPartitionsToTxnTransaction(
                transactional_id=transactional_id,
                producer_id=producer_id,
                producer_epoch=producer_epoch,
                verify_only=verify_only,
                topics=[R.AddPartitionsToTxnTopic(name=t, partitions=ps) for t, ps in by_topic.items()],
            )
        ]
    )


def codes_from(
    response: AddPartitionsToTxnResponse, transactional_id: str, partitions: set[TopicPartition]
) -> dict[TopicPartition, int]:
    """A top-level error is every partition's; a partition the answer leaves out is
    COORDINATOR_NOT_AVAILABLE (retried by the producer once translated)."""
    if response.error_code != Errors.NONE:
        return dict.fromkeys(partitions, response.error_code)
    codes = dict.fromkeys(partitions, Errors.COORDINATOR_NOT_AVAILABLE)
    for result in response.results_by_transaction:
        if result.transactional_id != transactional_id:
            continue
        for topic in result.topic_results:
            for partition in topic.results_by_partition:
                key = (topic.name, partition.partition_index)
                if key in codes:
                    codes[key] = partition.partition_error_code
    return codes
