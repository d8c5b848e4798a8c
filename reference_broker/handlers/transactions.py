"""Transactions: InitProducerId (22), AddPartitionsToTxn (24), AddOffsetsToTxn (25), EndTxn (26),
DescribeTransactions (65), ListTransactions (66).

The decisions are the transaction coordinator's; this module reads the request shapes and builds the
answers. As ``KafkaApis`` does, PRODUCER_FENCED becomes INVALID_PRODUCER_EPOCH for clients too old to
know it (InitProducerId before v4; AddPartitionsToTxn, AddOffsetsToTxn and EndTxn before v2).

Transactions v2 (KIP-890 part 2). A Kafka broker offers EndTxn v5 and AddPartitionsToTxn v5 whatever
its finalized ``transaction.version`` (nothing in ``ApiVersionsResponse`` or ``DefaultApiVersionManager``
looks at it; the Java producer is the one that stays at EndTxn v4 unless the cluster finalized level 2,
``TransactionManager.isTransactionV2Enabled``), and the coordinator takes the client's transaction
version from the request version, not from the feature: ``KafkaApis.handleEndTxnRequest`` passes
``TransactionVersion.transactionVersionForEndTxn`` (v5 is TV_2) and ``handleAddPartitionsToTxnRequest``
``transactionVersionForAddPartitionsToTxn`` (v4 and v5, the brokers' form, are TV_2). So this broker,
whose cluster level is below 1, answers these versions exactly as Kafka does at any level: EndTxn v5
runs ``TransactionCoordinator.endTransaction``'s v2 rules and its answer carries the producer id and
epoch. AddPartitionsToTxn v5 is v4 with TRANSACTION_ABORTABLE in its vocabulary: the handler is the same
(the version matters only to the broker that sent it, ``AddPartitionsToTxnManager``). InitProducerId v6
(two-phase commit, KIP-939) is unstable in Kafka 4.3 and not served."""

from __future__ import annotations

from kconform.codecs.errors import Errors
from kconform.codecs.messages import (
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnResponse,
    DescribeTransactionsResponse,
    EndTxnResponse,
    InitProducerIdResponse,
    ListTransactionsResponse,
)

from ..groups.re2 import Re2SyntaxError, compile_re2
from ..producer_ids import ProducerIdsUnavailable
from ..security.acls import Operation, ResourceType
from ..security.authorization import CLUSTER_NAME, allowed, allowed_any, filter_allowed
from ..topic_names import INTERNAL_TOPICS
from ..transactions.decisions import ProducerIdAndEpoch, TxnError
from ..transactions.states import TxnState
from . import handles

R = AddPartitionsToTxnResponse


def _fenced_for_old(code: int, version: int, first_new_version: int) -> int:
    if code == Errors.PRODUCER_FENCED and version < first_new_version:
        return Errors.INVALID_PRODUCER_EPOCH
    return code


@handles(22, max_version=5)  # v6 (KIP-939, two-phase commit) is unstable in Kafka 4.3: no release offers it
async def init_producer_id(broker, ctx, request) -> InitProducerIdResponse:
    version = ctx.api_version
    refusal = _init_producer_id_refusal(broker, ctx, request.transactional_id)
    if refusal != Errors.NONE:
        return InitProducerIdResponse(error_code=refusal, producer_id=-1, producer_epoch=-1)
    if request.transactional_id is None:
        # Without a transactional id: a fresh producer id at epoch 0 every time (KIP-360 bumps are
        # for transactional ids only).
        try:
            producer_id = broker.producer_ids.next_id()
        except ProducerIdsUnavailable:
            return InitProducerIdResponse(
                error_code=Errors.COORDINATOR_LOAD_IN_PROGRESS, producer_id=-1, producer_epoch=-1
            )
        return InitProducerIdResponse(error_code=Errors.NONE, producer_id=producer_id, producer_epoch=0)
    expected = None
    if version >= 3 and request.producer_id != -1:
        expected = ProducerIdAndEpoch(request.producer_id, request.producer_epoch)
    try:
        result = await broker.transaction_coordinator.init_producer_id(
            request.transactional_id, request.transaction_timeout_ms, expected
        )
    except TxnError as exc:
        return InitProducerIdResponse(
            error_code=_fenced_for_old(exc.code, version, 4), producer_id=-1, producer_epoch=-1
        )
    return InitProducerIdResponse(
        error_code=Errors.NONE, producer_id=result.producer_id, producer_epoch=result.producer_epoch
    )


def _init_producer_id_refusal(broker, ctx, transactional_id: str | None) -> int:
    """KafkaApis.handleInitProducerIdRequest: a transactional producer needs WRITE on its id; an
    idempotent one IDEMPOTENT_WRITE on the cluster or WRITE on some topic (authorizeByResourceType)."""
    if transactional_id is not None:
        if allowed(broker, ctx, Operation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id):
            return Errors.NONE
        return Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    if allowed(broker, ctx, Operation.IDEMPOTENT_WRITE, ResourceType.CLUSTER, CLUSTER_NAME):
        return Errors.NONE
    if allowed_any(broker, ctx, Operation.WRITE, ResourceType.TOPIC):
        return Errors.NONE
    return Errors.CLUSTER_AUTHORIZATION_FAILED


def _may_write(broker, ctx, transactional_id: str) -> bool:
    return allowed(broker, ctx, Operation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id)


def _topic_results(partitions: dict[tuple[str, int], int]) -> list:
    by_topic: dict[str, list] = {}
    for (topic, index), code in partitions.items():
        by_topic.setdefault(topic, []).append(
            R.AddPartitionsToTxnPartitionResult(partition_index=index, partition_error_code=code)
        )
    return [
        R.AddPartitionsToTxnTopicResult(name=t, results_by_partition=parts) for t, parts in by_topic.items()
    ]


def _in_cluster(broker, topic: str, index: int) -> bool:
    """``metadataCache.contains``: the partition exists somewhere in the cluster (it need not be here)."""
    info = broker.topics.get(topic)
    return info is not None and 0 <= index < len(info.partitions)


async def _add_partitions(
    broker, ctx, version: int, txn_id, producer_id, producer_epoch, verify_only, topics
) -> list:
    wanted = [(t.name, p) for t in topics for p in t.partitions]
    coordinator = broker.transaction_coordinator
    if version < 4 and not _may_write(broker, ctx, txn_id):
        # a client's request (v3 and below) needs WRITE on the transactional id and on each topic
        return _topic_results(dict.fromkeys(wanted, Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED))
    writable = {t for t, _ in wanted}
    if version < 4:
        # handleAddPartitionsToTxnRequest asks only about topics that are not internal: an internal
        # topic is never authorized
        candidates = {t for t in writable if t not in INTERNAL_TOPICS}
        writable = filter_allowed(broker, ctx, Operation.WRITE, ResourceType.TOPIC, candidates)
    refused = {tp: Errors.TOPIC_AUTHORIZATION_FAILED for tp in wanted if tp[0] not in writable}
    refused.update(
        {
            tp: Errors.UNKNOWN_TOPIC_OR_PARTITION
            for tp in wanted
            if tp not in refused and not _in_cluster(broker, *tp)
        }
    )
    if refused:
        # Any refused or unknown partition fails the whole transaction's request; the others were not
        # attempted (checked before the verify-only branch, as handleAddPartitionsToTxnRequest does).
        return _topic_results({tp: refused.get(tp, Errors.OPERATION_NOT_ATTEMPTED) for tp in wanted})
    if verify_only:
        # handleVerifyPartitionsInTransaction's answer goes back as it is: TRANSACTION_ABORTABLE for a
        # partition outside the transaction (the sending broker translates it for old producers).
        return _topic_results(
            coordinator.verify_partitions_in_transaction(txn_id, producer_id, producer_epoch, set(wanted))
        )
    try:
        # TransactionVersion.transactionVersionForAddPartitionsToTxn: v4 and above are TV_2.
        await coordinator.add_partitions(
            txn_id, producer_id, producer_epoch, set(wanted), transaction_version=2 if version > 3 else 0
        )
        code = Errors.NONE
    except TxnError as exc:
        code = _fenced_for_old(exc.code, version, 2)
    return _topic_results(dict.fromkeys(wanted, code))


@handles(24)
async def add_partitions_to_txn(broker, ctx, request) -> AddPartitionsToTxnResponse:
    version = ctx.api_version
    if version >= 4 and not allowed(
        broker, ctx, Operation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME
    ):
        # v4+ come from brokers (KafkaApis: authorizeClusterOperation; getErrorResponse's top-level error)
        return AddPartitionsToTxnResponse(error_code=Errors.CLUSTER_AUTHORIZATION_FAILED)
    if version < 4:
        results = await _add_partitions(
            broker,
            ctx,
            version,
            request.v3_and_below_transactional_id,
            request.v3_and_below_producer_id,
            request.v3_and_below_producer_epoch,
            False,
            request.v3_and_below_topics,
        )
        return AddPartitionsToTxnResponse(results_by_topic_v3_and_below=results)
    transactions = []
    for txn in request.transactions:
        results = await _add_partitions(
            broker,
            ctx,
            version,
            txn.transactional_id,
            txn.producer_id,
            txn.producer_epoch,
            txn.verify_only,
            txn.topics,
        )
        transactions.append(
            R.AddPartitionsToTxnResult(transactional_id=txn.transactional_id, topic_results=results)
        )
    return AddPartitionsToTxnResponse(error_code=Errors.NONE, results_by_transaction=transactions)


@handles(25)
async def add_offsets_to_txn(broker, ctx, request) -> AddOffsetsToTxnResponse:
    # KafkaApis.handleAddOffsetsToTxnRequest: WRITE on the transactional id, then READ on the group
    if not _may_write(broker, ctx, request.transactional_id):
        return AddOffsetsToTxnResponse(error_code=Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    if not allowed(broker, ctx, Operation.READ, ResourceType.GROUP, request.group_id):
        return AddOffsetsToTxnResponse(error_code=Errors.GROUP_AUTHORIZATION_FAILED)
    # It names the group's offsets partition for the coordinator.
    offsets = broker.consumer_offsets
    offsets.ensure()
    offsets_partition = (offsets.name, offsets.partition_for(request.group_id))
    try:
        await broker.transaction_coordinator.add_offsets(
            request.transactional_id, request.producer_id, request.producer_epoch, offsets_partition
        )
        code = Errors.NONE
    except TxnError as exc:
        code = _fenced_for_old(exc.code, ctx.api_version, 2)
    return AddOffsetsToTxnResponse(error_code=code)


@handles(26)
async def end_txn(broker, ctx, request) -> EndTxnResponse:
    version = ctx.api_version
    if not _may_write(broker, ctx, request.transactional_id):  # KafkaApis.handleEndTxnRequest
        return EndTxnResponse(
            error_code=Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, producer_id=-1, producer_epoch=-1
        )
    try:
        # KafkaApis.handleEndTxnRequest: TransactionVersion.transactionVersionForEndTxn, v5 is TV_2.
        result = await broker.transaction_coordinator.end_txn(
            request.transactional_id,
            request.producer_id,
            request.producer_epoch,
            request.committed,
            transaction_version=2 if version > 4 else 0,
        )
    except TxnError as exc:
        return EndTxnResponse(
            error_code=_fenced_for_old(exc.code, version, 2), producer_id=-1, producer_epoch=-1
        )
    # v5 carries the producer id and epoch for the next transaction (the bumped ones)
    return EndTxnResponse(
        error_code=Errors.NONE, producer_id=result.producer_id, producer_epoch=result.producer_epoch
    )


@handles(65)
async def describe_transactions(broker, ctx, request) -> DescribeTransactionsResponse:
    D = DescribeTransactionsResponse  # noqa: N806
    states = []
    for txn_id in request.transactional_ids:
        # KafkaApis.handleDescribeTransactionsRequest: DESCRIBE on the id, and only the topics the
        # principal may describe
        if not allowed(broker, ctx, Operation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, txn_id):
            states.append(
                D.TransactionState(
                    error_code=Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, transactional_id=txn_id
                )
            )  # every other field keeps the schema's default
            continue
        meta = broker.transaction_coordinator.describe(txn_id)
        if meta is None:
            states.append(
                D.TransactionState(
                    error_code=Errors.TRANSACTIONAL_ID_NOT_FOUND,
                    transactional_id=txn_id,
                    transaction_state="",
                    transaction_timeout_ms=0,
                    transaction_start_time_ms=-1,
                    producer_id=-1,
                    producer_epoch=-1,
                )
            )
            continue
        by_topic: dict[str, list[int]] = {}
        for topic, index in sorted(meta.partitions):
            if allowed(broker, ctx, Operation.DESCRIBE, ResourceType.TOPIC, topic):
                by_topic.setdefault(topic, []).append(index)
        states.append(
            D.TransactionState(
                error_code=Errors.NONE,
                transactional_id=txn_id,
                transaction_state=meta.state.display,
                transaction_timeout_ms=meta.timeout_ms,
                transaction_start_time_ms=meta.start_ms,
                producer_id=meta.producer_id,
                producer_epoch=meta.producer_epoch,
                topics=[D.TopicData(topic=t, partitions=p) for t, p in by_topic.items()],
            )
        )
    return DescribeTransactionsResponse(transaction_states=states)


@handles(66)
async def list_transactions(broker, ctx, request) -> ListTransactionsResponse:
    version = ctx.api_version
    pattern = request.transactional_id_pattern if version >= 2 else None
    if pattern:
        # TransactionStateManager.listTransactionStates compiles it with RE2/J and throws
        # InvalidRegularExpression; the request fails as a whole (ListTransactionsRequest
        # .getErrorResponse: the error code and nothing else).
        try:
            compile_re2(pattern)
        except Re2SyntaxError:
            return ListTransactionsResponse(error_code=Errors.INVALID_REGULAR_EXPRESSION)
    known, unknown = set(), []
    for name in request.state_filters:
        state = TxnState.from_name(name)
        if state is None:
            unknown.append(name)
        else:
            known.add(state)
    if unknown and not known:
        # Kafka lists nothing when every filter names an unknown state.
        return ListTransactionsResponse(error_code=Errors.NONE, unknown_state_filters=unknown)
    duration = request.duration_filter if version >= 1 else -1
    listed = broker.transaction_coordinator.list(known, set(request.producer_id_filters), duration, pattern)
    return ListTransactionsResponse(
        error_code=Errors.NONE,
        unknown_state_filters=unknown,
        transaction_states=[
            ListTransactionsResponse.TransactionState(
                transactional_id=m.transactional_id,
                producer_id=m.producer_id,
                transaction_state=m.state.display,
            )
            for m in listed  # KafkaApis: only the ids the principal may DESCRIBE
            if allowed(broker, ctx, Operation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, m.transactional_id)
        ],
    )
