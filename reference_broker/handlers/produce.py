"""Produce (key 0).

Kafka's rules (KafkaApis.handleProduceRequest, ReplicaManager.handleProduceAppend/appendRecords), in
Kafka's order: the first batch of every partition is read first, and a corrupt one fails the whole
request (``check_request_records``); from v13 topics are named by id (KIP-516), and an id the broker
does not know gets UNKNOWN_TOPIC_ID for each of its partitions; then unknown topics or partitions get
UNKNOWN_TOPIC_OR_PARTITION and the others go through ProduceRequest.validateRecords and the
transactional-batch walk (``check_partition_records``: partition errors, or again a failure of the
whole request); a transactional batch is then checked with the transaction coordinator (KIP-890:
verified before v12, added to the transaction from v12), and only the partitions left reach the acks
check, where anything but -1, 0 or 1 is INVALID_REQUIRED_ACKS for each. Each partition's records
are then validated and appended on their own, so one bad partition does not fail the others; acks=-1
waits until the high watermark passes the append (or the request times out with REQUEST_TIMED_OUT);
acks=0 sends no response, and closes the connection when any partition failed, so the client notices.

Each partition's records are framed once, as the request comes in (``frame_records``: every batch's
header read, its CRC checked); the checks, the transaction check, validation and the log append all
read that framing instead of parsing the batches again."""

from __future__ import annotations

import asyncio
import uuid

from kconform.codecs.errors import Errors, error_for
from kconform.codecs.messages import ProduceResponse

from ..dispatch import CloseConnection
from ..partition import PartitionError
from ..security.acls import Operation, ResourceType
from ..security.authorization import allowed, filter_allowed
from ..transactions.partition_verification import add_or_verify_partitions
from ..validation import (
    FramedRecords,
    RecordsRejected,
    RejectionScope,
    check_partition_records,
    check_request_records,
    frame_records,
    scan_compressed_records,
)
from . import handles

PartitionResponse = ProduceResponse.PartitionProduceResponse
# Produce v13 names topics by id (KIP-516); v12 is the last version that names them.
FIRST_TOPIC_ID_VERSION = 13
# AddPartitionsToTxnManager.produceRequestVersionToTransactionSupportedOperation: v11 is
# GENERIC_ERROR_SUPPORTED (the producer knows TRANSACTION_ABORTABLE), v12 and later ADD_PARTITION.
FIRST_GENERIC_ERROR_VERSION = 11
FIRST_ADD_PARTITION_VERSION = 12
# The client transaction version the coordinator records for a partition a v12+ produce adds: the
# leader sends AddPartitionsToTxn v4+ (Builder.forBroker), which the coordinator's broker takes as TV_2
# (TransactionVersion.transactionVersionForAddPartitionsToTxn).
ADDED_BY_PRODUCE_TRANSACTION_VERSION = 2
# ReplicaManager.handleProduceAppend's postVerificationCallback turns these coordinator errors into
# NOT_ENOUGH_REPLICAS, a retriable error that does not make old producers refresh their metadata.
_RETRY_AS_NOT_ENOUGH_REPLICAS = frozenset(
    {
        Errors.NETWORK_EXCEPTION,
        Errors.COORDINATOR_LOAD_IN_PROGRESS,
        Errors.COORDINATOR_NOT_AVAILABLE,
        Errors.NOT_COORDINATOR,
    }
)


def _error(index: int, code: int, message: str | None = None, record_errors=()) -> PartitionResponse:
    return PartitionResponse(
        index=index,
        error_code=code,
        base_offset=-1,
        log_append_time_ms=-1,
        log_start_offset=-1,
        record_errors=[
            ProduceResponse.BatchIndexAndErrorMessage(batch_index=i, batch_index_error_message=m)
            for i, m in record_errors
        ],
        error_message=message,
    )


def _topic_key(topic_data, version: int):
    """How Kafka keys the topic (its TopicIdPartition): by id from v13, by name before."""
    return topic_data.topic_id if version >= FIRST_TOPIC_ID_VERSION else topic_data.name


def _topic_name(broker, topic_data, version: int) -> str | None:
    """The topic's name, or None for a v13+ topic id the broker does not know.

    KafkaApis.handleProduceRequest (Kafka 4.1+) takes ``metadataCache.getTopicName(topicId)`` or else
    the request's name, which v13 does not carry (""), and answers UNKNOWN_TOPIC_ID when that is empty
    and the version is above 12; a zero id at v13 goes the same way."""
    if version < FIRST_TOPIC_ID_VERSION:
        return topic_data.name
    topic = broker.topics.by_id(topic_data.topic_id)
    return None if topic is None else topic.name


def _topic_response(topic_data, version: int, parts: list) -> ProduceResponse.TopicProduceResponse:
    """ProduceResponse's topics keyed as the request's were (ProduceResponse.toData and
    ProduceRequest.getErrorResponse find them by name and id): the request's topic id from v13, where
    the name is not on the wire, and the name before."""
    if version >= FIRST_TOPIC_ID_VERSION:
        return ProduceResponse.TopicProduceResponse(topic_id=topic_data.topic_id, partition_responses=parts)
    return ProduceResponse.TopicProduceResponse(name=topic_data.name, partition_responses=parts)


@handles(0)
async def produce(broker, ctx, request) -> ProduceResponse | None:
    version = ctx.api_version
    acks = request.acks
    # one framing per partition entry, in request order (an entry may repeat a partition)
    framings = [[frame_records(data.records) for data in t.partition_data] for t in request.topic_data]
    try:
        for topic_framings in framings:
            for records in topic_framings:
                check_request_records(records)
    except RecordsRejected as exc:
        return _fail_request(request, exc, version)
    if not _transactional_id_allowed(broker, ctx, request, framings):
        return _refuse_request(request, version, Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    names = [_topic_name(broker, topic_data, version) for topic_data in request.topic_data]
    writable = filter_allowed(broker, ctx, Operation.WRITE, ResourceType.TOPIC, filter(None, names))
    checked: dict[tuple[str | uuid.UUID, int], PartitionResponse | None] = {}
    for topic_data, name, topic_framings in zip(request.topic_data, names, framings, strict=True):
        topic_key = _topic_key(topic_data, version)
        for data, records in zip(topic_data.partition_data, topic_framings, strict=True):
            key = (topic_key, data.index)
            if name is None:
                checked[key] = _error(data.index, Errors.UNKNOWN_TOPIC_ID)
                continue
            if name not in writable:  # KafkaApis: authorization before the topic's existence
                checked[key] = _error(data.index, Errors.TOPIC_AUTHORIZATION_FAILED)
                continue
            if broker.partition(name, data.index) is None:
                checked[key] = _error(
                    data.index, broker.missing_partition_error(name, data.index, by_id=False)
                )
                continue
            try:
                check_partition_records(records, produce_version=version)
            except RecordsRejected as exc:
                if exc.scope is not RejectionScope.PARTITION:
                    return _fail_request(request, exc, version)
                checked[key] = _error(data.index, exc.error_code)
                continue
            checked[key] = None
    responses: list[ProduceResponse.TopicProduceResponse] = []
    waits = []
    for topic_data, name, topic_framings in zip(request.topic_data, names, framings, strict=True):
        topic_key = _topic_key(topic_data, version)
        partitions = []
        for data, records in zip(topic_data.partition_data, topic_framings, strict=True):
            early = checked[(topic_key, data.index)]
            if early is not None:
                partitions.append(early)
                continue
            partition = broker.partition(name, data.index)
            # handleProduceAppend checks the transaction before appendRecords checks acks: a
            # partition the coordinator refused keeps that error whatever the acks.
            refused, message = await _transaction_check(broker, partition, records, request, version)
            if refused:
                partitions.append(_error(data.index, refused, message))
                continue
            if acks not in (-1, 0, 1):
                partitions.append(_error(data.index, Errors.INVALID_REQUIRED_ACKS))
                continue
            # compressed records are read ahead in time slices, so a compression bomb cannot hold the loop;
            # with the topic's rules and the clock, so records to judge or rebuild are not read again
            records = await scan_compressed_records(
                records, config=partition.validation, now_ms=broker.clock.now_ms()
            )
            try:
                appended = partition.append_records(
                    records,
                    produce_version=version,
                    required_acks=acks,
                    transactional_id=request.transactional_id if version >= 3 else None,
                )
            except PartitionError as exc:
                partitions.append(_error(data.index, exc.code, exc.message, exc.record_errors))
                continue
            response = PartitionResponse(
                index=data.index,
                error_code=Errors.NONE,
                base_offset=appended.first_offset,
                log_append_time_ms=appended.log_append_time_ms,
                log_start_offset=partition.log_start_offset,
            )
            partitions.append(response)
            if acks == -1 and appended.last_offset >= 0:
                waits.append((partition, appended.last_offset + 1, response))
        responses.append(_topic_response(topic_data, version, partitions))
    if waits:
        await _await_replication(broker, waits, request.timeout_ms)
    if acks == 0:
        if any(p.error_code for topic in responses for p in topic.partition_responses):
            raise CloseConnection
        return None
    return ProduceResponse(responses=responses)


async def _transaction_check(
    broker, partition, records: FramedRecords | None, request, version: int
) -> tuple[int, str | None]:
    """KIP-890 for the first transactional batch of a producer in a partition (ReplicaManager
    ``maybeSendPartitionsToTransactionCoordinator``), as (error code, message); NONE lets it through.

    Before v12 the leader only verifies (AddPartitionsToTxn with verifyOnly, when
    ``transaction.partition.verification.enable`` is on): the partition must already be in the
    producer's ongoing transaction, so a late write from an aborted or fenced transaction is refused.
    From v12 (ADD_PARTITION, whose ``supportsEpochBump`` skips the configuration check) the leader asks
    the coordinator to add the partition itself (``AddPartitionsToTxnManager.addOrVerifyTransaction``:
    ``setVerifyOnly(!supportsEpochBump)``). Kafka does this whatever the cluster's finalized
    ``transaction.version``: neither ``KafkaApis.handleProduceRequest``, ReplicaManager nor
    ``TransactionCoordinator.handleAddPartitionsToTransaction`` reads the feature, and
    ``KafkaApis.handleAddPartitionsToTxnRequest`` takes the transaction version from the
    AddPartitionsToTxn version (TV_2). Keeping a transactional producer at v11 while transactions v2
    are not finalized is the producer's part (``Sender.sendProduceRequest``, ``useTransactionV1Version``)."""
    adds = version >= FIRST_ADD_PARTITION_VERSION
    if version < 3 or request.transactional_id is None:
        return Errors.NONE, None
    if not adds and not broker.config["transaction.partition.verification.enable"]:
        return Errors.NONE, None
    header = None if records is None else records.first_header
    if header is None:
        return Errors.NONE, None  # validation answers malformed input
    if not header.is_transactional or header.producer_id < 0:
        return Errors.NONE, None
    entry = partition.log.producer_state(header.producer_id)
    if (
        entry is not None
        and entry.current_txn_first_offset is not None
        and entry.producer_epoch == header.producer_epoch
    ):
        return Errors.NONE, None  # UnifiedLog.hasOngoingTransaction: the transaction is open here
    key = (partition.topic_name, partition.index)
    codes = await add_or_verify_partitions(
        broker,
        request.transactional_id,
        header.producer_id,
        header.producer_epoch,
        {key},
        verify_only=not adds,
        transaction_version=ADDED_BY_PRODUCE_TRANSACTION_VERSION,
    )
    return transaction_check_answer(codes[key], version)


def transaction_check_answer(code: int, version: int) -> tuple[int, str | None]:
    """What a producer hears of the coordinator's answer, as (error code, message).

    AddPartitionsToTxnManager (AddPartitionsToTxnHandler.onComplete): PRODUCER_FENCED becomes
    INVALID_PRODUCER_EPOCH, and TRANSACTION_ABORTABLE becomes INVALID_TXN_STATE for producers before
    v11 (DEFAULT_ERROR). ReplicaManager.handleProduceAppend (postVerificationCallback): INVALID_TXN_STATE
    gets the message "Partition was not added to the transaction"; NETWORK_EXCEPTION,
    COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE and NOT_COORDINATOR become
    NOT_ENOUGH_REPLICAS, and so does CONCURRENT_TRANSACTIONS below v12 (from v12, transactions v2, it
    is passed on as it is: common while a transaction ends, and retried by the producer)."""
    if code == Errors.PRODUCER_FENCED:
        code = Errors.INVALID_PRODUCER_EPOCH
    elif code == Errors.TRANSACTION_ABORTABLE and version < FIRST_GENERIC_ERROR_VERSION:
        code = Errors.INVALID_TXN_STATE
    if code == Errors.INVALID_TXN_STATE:
        return code, "Partition was not added to the transaction"
    if code in _RETRY_AS_NOT_ENOUGH_REPLICAS or (
        code == Errors.CONCURRENT_TRANSACTIONS and version < FIRST_ADD_PARTITION_VERSION
    ):
        message = "Unable to verify the partition has been added to the transaction. Underlying error: "
        return Errors.NOT_ENOUGH_REPLICAS, message + error_for(code).name
    return code, None


def _transactional_id_allowed(broker, ctx, request, framings) -> bool:
    """KafkaApis.handleProduceRequest: when any partition's first batch is transactional
    (RequestUtils.hasTransactionalRecords) the request needs a transactional id the principal may
    WRITE; without one the whole request is TRANSACTIONAL_ID_AUTHORIZATION_FAILED."""
    transactional = any(
        records.first_header is not None and records.first_header.is_transactional
        for topic_framings in framings
        for records in topic_framings
        if records is not None
    )
    if not transactional:
        return True
    txn_id = request.transactional_id if ctx.api_version >= 3 else None
    return txn_id is not None and allowed(broker, ctx, Operation.WRITE, ResourceType.TRANSACTIONAL_ID, txn_id)


def _refuse_request(request, version: int, code: int) -> ProduceResponse:
    """ProduceRequest.getErrorResponse: every partition gets ``code``; acks=0 closes instead."""
    if request.acks == 0:
        raise CloseConnection
    responses = [
        _topic_response(topic_data, version, [_error(data.index, code) for data in topic_data.partition_data])
        for topic_data in request.topic_data
    ]
    return ProduceResponse(responses=responses)


def _fail_request(request, exc: RecordsRejected, version: int) -> ProduceResponse | None:
    """Kafka's ProduceRequest.getErrorResponse for an exception out of the handler: every partition
    gets the error (and its message); acks=0 closes the connection instead. Where Kafka's error path
    itself throws (null records) it never answers: the connection is closed here too."""
    if request.acks == 0 or exc.scope is RejectionScope.NO_RESPONSE:
        raise CloseConnection
    responses = [
        _topic_response(
            topic_data,
            version,
            [_error(data.index, exc.error_code, exc.error_message) for data in topic_data.partition_data],
        )
        for topic_data in request.topic_data
    ]
    return ProduceResponse(responses=responses)


async def _await_replication(broker, waits, timeout_ms: int) -> None:
    """acks=-1: every partition's high watermark must reach its append, within the request timeout,
    with enough in-sync replicas (``Partition.wait_for_replication``)."""

    async def one(partition, required_end, response):
        response.error_code = await partition.wait_for_replication(required_end, timeout_ms / 1000)

    await asyncio.gather(*(one(*w) for w in waits))
