"""Produce (key 0).

Kafka's rules (KafkaApis.handleProduceRequest, ReplicaManager.handleProduceAppend/appendRecords), in
Kafka's order: the first batch of every partition is read first, and a corrupt one fails the whole
request (``check_request_records``); then unknown topics or partitions get UNKNOWN_TOPIC_OR_PARTITION
and the others go through ProduceRequest.validateRecords and the transactional-batch walk
(``check_partition_records``: partition errors, or again a failure of the whole request); only the
partitions left reach the acks check, where anything but -1, 0 or 1 is INVALID_REQUIRED_ACKS for each.
Each partition's records are then validated and appended on their own, so one bad partition does not
fail the others; acks=-1 waits until the high watermark passes the append (or the request times out
with REQUEST_TIMED_OUT); acks=0 sends no response, and closes the connection when any partition
failed, so the client notices."""

from __future__ import annotations

import asyncio

from kconform.codecs.errors import Errors
from kconform.codecs.messages import ProduceResponse

from ..dispatch import CloseConnection
from ..partition import PartitionError
from ..validation import RecordsRejected, RejectionScope, check_partition_records, check_request_records
from . import handles

PartitionResponse = ProduceResponse.PartitionProduceResponse


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


@handles(0)
async def produce(broker, ctx, request) -> ProduceResponse | None:
    version = ctx.api_version
    acks = request.acks
    try:
        for topic_data in request.topic_data:
            for data in topic_data.partition_data:
                check_request_records(data.records)
    except RecordsRejected as exc:
        return _fail_request(request, exc)
    checked: dict[tuple[str, int], PartitionResponse | None] = {}
    for topic_data in request.topic_data:
        for data in topic_data.partition_data:
            if broker.partition(topic_data.name, data.index) is None:
                checked[(topic_data.name, data.index)] = _error(data.index, Errors.UNKNOWN_TOPIC_OR_PARTITION)
                continue
            try:
                check_partition_records(data.records, produce_version=version)
            except RecordsRejected as exc:
                if exc.scope is not RejectionScope.PARTITION:
                    return _fail_request(request, exc)
                checked[(topic_data.name, data.index)] = _error(data.index, exc.error_code)
                continue
            checked[(topic_data.name, data.index)] = None
    results: list[tuple[str, list[PartitionResponse]]] = []
    waits = []
    for topic_data in request.topic_data:
        partitions = []
        for data in topic_data.partition_data:
            early = checked[(topic_data.name, data.index)]
            if early is not None:
                partitions.append(early)
                continue
            if acks not in (-1, 0, 1):
                partitions.append(_error(data.index, Errors.INVALID_REQUIRED_ACKS))
                continue
            partition = broker.partition(topic_data.name, data.index)
            unverified = _unverified_transaction(broker, partition, data.records, request, version)
            if unverified:
                partitions.append(_error(data.index, unverified))
                continue
            try:
                appended = partition.append_records(
                    data.records,
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
        results.append((topic_data.name, partitions))
    if waits:
        await _await_replication(broker, waits, request.timeout_ms)
    if acks == 0:
        if any(p.error_code for _, parts in results for p in parts):
            raise CloseConnection
        return None
    responses = [
        ProduceResponse.TopicProduceResponse(name=name, partition_responses=parts) for name, parts in results
    ]
    return ProduceResponse(responses=responses)


def _unverified_transaction(broker, partition, records, request, version: int) -> int:
    """KIP-890 verification (``transaction.partition.verification.enable``): the first transactional
    batch of a producer in a partition is accepted only if the coordinator has that partition in the
    producer's ongoing transaction; a late write from an aborted or fenced transaction is refused."""
    if (
        version < 3
        or request.transactional_id is None
        or not broker.config["transaction.partition.verification.enable"]
    ):
        return Errors.NONE
    from kconform.codecs import DecodeError
    from kconform.codecs.records import decode_batch_header

    try:
        header = decode_batch_header(bytes(records))
    except (DecodeError, TypeError):
        return Errors.NONE  # validation answers malformed input
    if not header.is_transactional or header.producer_id < 0:
        return Errors.NONE
    entry = partition.log.producer_state(header.producer_id)
    if entry is not None and entry.current_txn_first_offset is not None:
        return Errors.NONE  # the transaction is already open here
    key = (partition.topic_name, partition.index)
    codes = broker.transaction_coordinator.verify_partitions(
        request.transactional_id, header.producer_id, header.producer_epoch, {key}
    )
    # Producers expect INVALID_PRODUCER_EPOCH here (AddPartitionsToTxnManager's translation).
    return Errors.INVALID_PRODUCER_EPOCH if codes[key] == Errors.PRODUCER_FENCED else codes[key]


def _fail_request(request, exc: RecordsRejected) -> ProduceResponse | None:
    """Kafka's ProduceRequest.getErrorResponse for an exception out of the handler: every partition
    gets the error (and its message); acks=0 closes the connection instead. Where Kafka's error path
    itself throws (null records) it never answers: the connection is closed here too."""
    if request.acks == 0 or exc.scope is RejectionScope.NO_RESPONSE:
        raise CloseConnection
    responses = [
        ProduceResponse.TopicProduceResponse(
            name=topic_data.name,
            partition_responses=[
                _error(data.index, exc.error_code, exc.error_message) for data in topic_data.partition_data
            ],
        )
        for topic_data in request.topic_data
    ]
    return ProduceResponse(responses=responses)


async def _await_replication(broker, waits, timeout_ms: int) -> None:
    """acks=-1: every partition's high watermark must reach its append, within the request timeout."""

    async def one(partition, required_end, response):
        ok = await partition.wait_for_high_watermark(required_end, timeout_ms / 1000)
        if not ok:
            response.error_code = Errors.REQUEST_TIMED_OUT
        elif partition.under_min_isr():
            response.error_code = Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND

    await asyncio.gather(*(one(*w) for w in waits))
