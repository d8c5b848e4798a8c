"""The producer's requests to the transaction and group coordinators: InitProducerId, AddPartitionsToTxn,
AddOffsetsToTxn, TxnOffsetCommit, EndTxn. Each retries what the Java client retries (the coordinator
moving or loading, CONCURRENT_TRANSACTIONS while the previous transaction completes) and raises
BrokerError for the rest.

Versions are capped at the last ones before transactions v2 (KIP-890 part 2): EndTxn v4, TxnOffsetCommit
v4, AddPartitionsToTxn v3. The Java producer moves to EndTxn v5 (its answer carries the bumped epoch),
TxnOffsetCommit v5 (no AddOffsetsToTxn) and Produce v12 (no AddPartitionsToTxn) together, and only when
the cluster finalized ``transaction.version`` 2 (``TransactionManager.isTransactionV2Enabled``); this
client keeps the v1 sequence, which every broker serves whatever its level (Kafka takes the transaction
version from the request version: ``TransactionVersion.transactionVersionForEndTxn``)."""

from __future__ import annotations

import asyncio

from kconform.codecs.messages import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    EndTxnRequest,
    InitProducerIdRequest,
    TxnOffsetCommitRequest,
)

from .errors import BrokerError, ConnectionLost, RequestTimedOut
from .network import NetworkClient
from .transaction_manager import TransactionManager

__all__ = ["add_offsets", "add_partitions", "end_txn", "init_producer_id", "txn_offset_commit"]

_INIT_PRODUCER_ID = 22
_ADD_PARTITIONS = 24
_ADD_OFFSETS = 25
_END_TXN = 26
_TXN_OFFSET_COMMIT = 28
_ADD_PARTITIONS_CLIENT_MAX = 3  # v4+ is the brokers' batched form
_END_TXN_V1_MAX = 4  # v5 bumps the epoch at every commit (transactions v2)
_TXN_OFFSET_COMMIT_V1_MAX = 4  # v5 adds the offsets partition itself (transactions v2)

_TRANSACTION_KEY = 1
_GROUP_KEY = 0
_COORDINATOR_MOVED = frozenset({"NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE"})
_RETRY_SOON = frozenset({"COORDINATOR_LOAD_IN_PROGRESS", "CONCURRENT_TRANSACTIONS"})
_CONCURRENT_TXN_BACKOFF = 0.02  # Java retries CONCURRENT_TRANSACTIONS after 20 ms, not retry.backoff.ms


async def _coordinator_call(
    client: NetworkClient,
    key: str,
    key_type: int,
    api_key: int,
    build,
    parse,
    *,
    cap: int | None,
    what: str,
    timeout: float | None = None,
):
    """Send to the coordinator of ``key`` until the answer is final; ``parse`` returns the error code
    that decides (0 for success) and ``build(version)`` makes the request."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + (timeout if timeout is not None else client.request_timeout * 2)
    attempts = 0
    while True:
        node = await client.find_coordinator(key, key_type)
        conn = await client.connection(node)
        version = conn.version_for(api_key, cap=cap)
        try:
            response = await conn.send(api_key, build(version), version=version)
        except (ConnectionLost, RequestTimedOut):  # find the coordinator again
            client.forget_coordinator(key, key_type)
            if loop.time() >= deadline:
                raise
            await asyncio.sleep(client.backoff.backoff_ms(attempts) / 1000)
            attempts += 1
            continue
        code, message = parse(response, version)
        if code == 0:
            return response
        error = BrokerError(code, what, message)
        if error.name in _COORDINATOR_MOVED:
            client.forget_coordinator(key, key_type)
        elif error.name not in _RETRY_SOON and not error.retriable:
            raise error
        if loop.time() >= deadline:
            raise error
        wait = (
            _CONCURRENT_TXN_BACKOFF
            if error.name == "CONCURRENT_TRANSACTIONS"
            else (client.backoff.backoff_ms(attempts) / 1000)
        )
        await asyncio.sleep(wait)
        attempts += 1


async def init_producer_id(client: NetworkClient, txn: TransactionManager, *, bump: bool) -> tuple[int, int]:
    """A producer id and epoch. ``bump`` asks for the next epoch of the current id (KIP-360)."""

    def build(version):
        producer_id, epoch = (txn.producer_id, txn.producer_epoch) if bump and version >= 3 else (-1, -1)
        return InitProducerIdRequest(
            transactional_id=txn.transactional_id,
            transaction_timeout_ms=txn.transaction_timeout_ms,
            producer_id=producer_id,
            producer_epoch=epoch,
        )

    def parse(response, _version):
        return response.error_code, None

    if txn.transactional:
        response = await _coordinator_call(
            client,
            txn.transactional_id,
            _TRANSACTION_KEY,
            _INIT_PRODUCER_ID,
            build,
            parse,
            cap=None,
            what=f"InitProducerId for {txn.transactional_id!r}",
        )
    else:
        attempts = 0
        while True:
            conn = await client.any_connection()
            version = conn.version_for(_INIT_PRODUCER_ID)
            response = await conn.send(_INIT_PRODUCER_ID, build(version), version=version)
            error = BrokerError(response.error_code, "InitProducerId") if response.error_code else None
            if error is None:
                break
            if not error.retriable or attempts >= 20:
                raise error
            await asyncio.sleep(client.backoff.backoff_ms(attempts) / 1000)
            attempts += 1
    return response.producer_id, response.producer_epoch


async def add_partitions(client: NetworkClient, txn: TransactionManager) -> None:
    """Add every partition written to since the last call to the transaction."""
    while txn.pending_partitions:
        wanted = set(txn.pending_partitions)
        by_topic: dict[str, list[int]] = {}
        for topic, partition in sorted(wanted):
            by_topic.setdefault(topic, []).append(partition)

        def build(_version, by_topic=by_topic):
            return AddPartitionsToTxnRequest(
                v3_and_below_transactional_id=txn.transactional_id,
                v3_and_below_producer_id=txn.producer_id,
                v3_and_below_producer_epoch=txn.producer_epoch,
                v3_and_below_topics=[
                    AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=t, partitions=p)
                    for t, p in by_topic.items()
                ],
            )

        def parse(response, _version):
            if response.error_code:
                return response.error_code, None
            for topic in response.results_by_topic_v3_and_below:
                for part in topic.results_by_partition:
                    # OPERATION_NOT_ATTEMPTED marks partitions held back by another's error
                    if part.partition_error_code not in (0, 55):
                        return part.partition_error_code, f"{topic.name}-{part.partition_index}"
            for topic in response.results_by_topic_v3_and_below:
                for part in topic.results_by_partition:
                    if part.partition_error_code:
                        return part.partition_error_code, f"{topic.name}-{part.partition_index}"
            return 0, None

        await _coordinator_call(
            client,
            txn.transactional_id,
            _TRANSACTION_KEY,
            _ADD_PARTITIONS,
            build,
            parse,
            cap=_ADD_PARTITIONS_CLIENT_MAX,
            what=f"AddPartitionsToTxn for {txn.transactional_id!r}",
        )
        txn.partitions_added(wanted)


async def add_offsets(client: NetworkClient, txn: TransactionManager, group_id: str) -> None:
    def build(_version):
        return AddOffsetsToTxnRequest(
            transactional_id=txn.transactional_id,
            producer_id=txn.producer_id,
            producer_epoch=txn.producer_epoch,
            group_id=group_id,
        )

    await _coordinator_call(
        client,
        txn.transactional_id,
        _TRANSACTION_KEY,
        _ADD_OFFSETS,
        build,
        lambda r, _v: (r.error_code, None),
        cap=None,
        what=f"AddOffsetsToTxn for {group_id!r}",
    )


async def txn_offset_commit(
    client: NetworkClient,
    txn: TransactionManager,
    group_id: str,
    offsets: dict[tuple[str, int], tuple[int, str | None]],
    *,
    generation_id: int = -1,
    member_id: str = "",
    group_instance_id: str | None = None,
) -> None:
    by_topic: dict[str, list] = {}
    for (topic, partition), (offset, metadata) in sorted(offsets.items()):
        by_topic.setdefault(topic, []).append(
            TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition(
                partition_index=partition,
                committed_offset=offset,
                committed_leader_epoch=-1,
                committed_metadata=metadata,
            )
        )

    def build(_version):
        return TxnOffsetCommitRequest(
            transactional_id=txn.transactional_id,
            group_id=group_id,
            producer_id=txn.producer_id,
            producer_epoch=txn.producer_epoch,
            generation_id=generation_id,
            member_id=member_id,
            group_instance_id=group_instance_id,
            topics=[
                TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(name=t, partitions=p)
                for t, p in by_topic.items()
            ],
        )

    def parse(response, _version):
        for topic in response.topics:
            for part in topic.partitions:
                if part.error_code:
                    return part.error_code, f"{topic.name}-{part.partition_index}"
        return 0, None

    await _coordinator_call(
        client,
        group_id,
        _GROUP_KEY,
        _TXN_OFFSET_COMMIT,
        build,
        parse,
        cap=_TXN_OFFSET_COMMIT_V1_MAX,
        what=f"TxnOffsetCommit for {group_id!r}",
    )


async def end_txn(client: NetworkClient, txn: TransactionManager, *, commit: bool) -> None:
    def build(_version):
        return EndTxnRequest(
            transactional_id=txn.transactional_id,
            producer_id=txn.producer_id,
            producer_epoch=txn.producer_epoch,
            committed=commit,
        )

    await _coordinator_call(
        client,
        txn.transactional_id,
        _TRANSACTION_KEY,
        _END_TXN,
        build,
        lambda r, _v: (r.error_code, None),
        cap=_END_TXN_V1_MAX,
        what=f"EndTxn({'commit' if commit else 'abort'}) for {txn.transactional_id!r}",
    )
