"""Kafka's rules for the newest versions of the data-path APIs, one test per rule, against a reference
broker node in this process: Produce v12 (transactions v2, KIP-890 part 2) and v13 (topic ids,
KIP-516), Fetch v18 (KIP-1166), ListOffsets v11 (KIP-1023) and Metadata v13 (KIP-1102).

Each test names where Apache Kafka makes the decision (class and method in the Kafka source, and the
release that brought the version); the broker must give the same answer in the same place."""

from __future__ import annotations

import uuid

import pytest

from kconform.codecs.errors import Errors
from kconform.codecs.messages import (
    DescribeTransactionsRequest,
    EndTxnRequest,
    FetchRequest,
    InitProducerIdRequest,
    ListOffsetsRequest,
    MetadataRequest,
    ProduceRequest,
)
from kconform.codecs.records import Record, encode_batch, iter_batches
from kconform.reference_broker.handlers.produce import transaction_check_answer

from ..support.coordinators import find_coordinator
from ..support.elections import bump_leader_epoch
from ..support.error_rules_broker import (
    FETCH,
    LIST_OFFSETS,
    METADATA,
    PRODUCE,
    TOPIC,
    Broker,
    batch,
    fetch_request,
    fetched_records,
    now_ms,
    partitions_of,
    run,
)

INIT_PRODUCER_ID, END_TXN, DESCRIBE_TRANSACTIONS = 22, 26, 65
ZERO_ID = uuid.UUID(int=0)
EARLIEST_LOCAL, LATEST_TIERED, EARLIEST_PENDING_UPLOAD = -4, -5, -6
TXN_ID = "tx"
LIST_OFFSETS_V11_RELEASE = "4.2"  # the first release serving ListOffsets v11 (the default answers as 4.1)
TXN_CONFIG = {"transaction.state.log.num.partitions": "3", "offsets.topic.num.partitions": "3"}


def produce_by_id(partitions: dict[uuid.UUID, dict[int, bytes]], *, acks: int = -1, txn_id=None):
    """A Produce request naming its topics by id (v13+): ``{topic id: {partition: records}}``."""
    return ProduceRequest(
        transactional_id=txn_id,
        acks=acks,
        timeout_ms=5000,
        topic_data=[
            ProduceRequest.TopicProduceData(
                topic_id=topic_id,
                partition_data=[
                    ProduceRequest.PartitionProduceData(index=index, records=records)
                    for index, records in parts.items()
                ],
            )
            for topic_id, parts in partitions.items()
        ],
    )


def answers_of(body) -> dict[tuple[uuid.UUID, int], object]:
    return {(t.topic_id, p.index): p for t in body.responses for p in t.partition_responses}


def unknown_answer(p) -> tuple:
    return (p.error_code, p.base_offset, p.log_append_time_ms, p.log_start_offset, p.record_errors)


# ---- Produce v13: topics by id -----------------------------------------------------------------


def test_produce_v13_by_topic_id_round_trip(tmp_path):
    # KafkaApis.handleProduceRequest (Kafka 4.1, KIP-516): a v13 topic is its id,
    # metadataCache.getTopicName resolves it, and ProduceResponse.toData answers the topic by the same
    # id (the name, versions 0-12, is not on the wire, so it reads back as ""). The records are the
    # partition's, as a v12 request by name and a Fetch by id (v18) see them.
    async def scenario(broker: Broker):
        topic_id = await broker.create_topic()
        first = await broker.client.call(PRODUCE, 13, produce_by_id({topic_id: {0: batch(3)}}))
        by_name = await broker.produce(batch(2), version=12)
        second = await broker.client.call(PRODUCE, 13, produce_by_id({topic_id: {0: batch(1)}}))
        fetched = await broker.fetch(topic_id, {0: 0}, version=18)
        return topic_id, first, by_name, second, fetched

    topic_id, first, by_name, second, fetched = run(tmp_path, scenario)
    [topic] = first.responses
    assert (topic.topic_id, topic.name) == (topic_id, "")
    [part] = topic.partition_responses
    assert (part.index, part.error_code, part.base_offset, part.log_start_offset) == (0, Errors.NONE, 0, 0)
    assert (by_name.error_code, by_name.base_offset) == (Errors.NONE, 3)
    assert answers_of(second)[(topic_id, 0)].base_offset == 5
    data = partitions_of(fetched)[0]
    assert (data.error_code, data.high_watermark) == (Errors.NONE, 6)
    assert [r.offset for r in fetched_records(data)] == list(range(6))


def test_produce_v13_unknown_topic_id_is_unknown_topic_id(tmp_path):
    # KafkaApis.handleProduceRequest (Kafka 4.1): an id metadataCache.getTopicName cannot name leaves
    # the topic name empty (v13 carries none), and "topicName.isEmpty && apiVersion > 12" puts every
    # partition of it in nonExistingTopicResponses as PartitionResponse(UNKNOWN_TOPIC_ID): base offset
    # -1, no log append time, log start -1, no record errors; the zero id is no topic either. A known
    # id with a partition the topic lacks is still UNKNOWN_TOPIC_OR_PARTITION (metadataCache.contains),
    # and the other partitions of the request are written.
    async def scenario(broker: Broker):
        known = await broker.create_topic()
        missing = uuid.uuid4()
        request = produce_by_id(
            {missing: {0: batch(), 1: batch()}, known: {0: batch(3), 5: batch()}, ZERO_ID: {0: batch()}}
        )
        body = await broker.client.call(PRODUCE, 13, request)
        return known, missing, body, await broker.list_offsets(-1)

    known, missing, body, latest = run(tmp_path, scenario)
    answers = answers_of(body)
    assert [t.topic_id for t in body.responses] == [missing, known, ZERO_ID]
    unknown = (Errors.UNKNOWN_TOPIC_ID, -1, -1, -1, [])
    assert unknown_answer(answers[(missing, 0)]) == unknown
    assert unknown_answer(answers[(missing, 1)]) == unknown
    assert unknown_answer(answers[(ZERO_ID, 0)]) == unknown
    assert answers[(known, 5)].error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert (answers[(known, 0)].error_code, answers[(known, 0)].base_offset) == (Errors.NONE, 0)
    assert latest.offset == 3  # only the known partition's batch was written


def test_produce_v13_whole_request_failure_answers_topics_by_id(tmp_path):
    # KafkaApis.handleProduceRequest starts with RequestUtils.hasTransactionalRecords, which reads every
    # partition's first batch before any topic id is resolved: a batch size below the record overhead
    # throws CorruptRecordException, and ProduceRequest.getErrorResponse answers each partition,
    # unknown ids included, with CORRUPT_MESSAGE under the request's topic id (the TopicIdPartition
    # keys of partitionSizes); nothing is appended.
    async def scenario(broker: Broker):
        topic_id = await broker.create_topic()
        missing = uuid.uuid4()
        too_short = bytes(8) + (5).to_bytes(4, "big")
        request = produce_by_id({topic_id: {0: batch()}, missing: {0: too_short}})
        body = await broker.client.call(PRODUCE, 13, request)
        return topic_id, missing, body, await broker.list_offsets(-1)

    topic_id, missing, body, latest = run(tmp_path, scenario)
    answers = answers_of(body)
    assert [t.topic_id for t in body.responses] == [topic_id, missing]
    assert {key: p.error_code for key, p in answers.items()} == {
        (topic_id, 0): Errors.CORRUPT_MESSAGE,
        (missing, 0): Errors.CORRUPT_MESSAGE,
    }
    assert latest.offset == 0


# ---- Produce v12: transactions v2 (KIP-890 part 2) ------------------------------------------------


async def init_transactional(broker: Broker) -> tuple[int, int]:
    await find_coordinator(broker.client, TXN_ID)
    request = InitProducerIdRequest(transactional_id=TXN_ID, transaction_timeout_ms=60_000)
    for _ in range(20):  # the coordinator may still be loading its partition
        body = await broker.client.call(INIT_PRODUCER_ID, 4, request)
        if body.error_code != Errors.CONCURRENT_TRANSACTIONS:
            break
    assert body.error_code == Errors.NONE, body
    return body.producer_id, body.producer_epoch


async def produce_transactional(broker: Broker, version: int, pid: int, epoch: int, seq: int, values):
    records = encode_batch(
        [Record(i, now_ms(), None, v) for i, v in enumerate(values)],
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        is_transactional=True,
    )
    request = ProduceRequest(
        transactional_id=TXN_ID,
        acks=-1,
        timeout_ms=5000,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name=TOPIC, partition_data=[ProduceRequest.PartitionProduceData(index=0, records=records)]
            )
        ],
    )
    body = await broker.client.call(PRODUCE, version, request)
    return body.responses[0].partition_responses[0]


async def transaction_partitions(broker: Broker) -> tuple[str, list[tuple[str, int]]]:
    body = await broker.client.call(
        DESCRIBE_TRANSACTIONS, 0, DescribeTransactionsRequest(transactional_ids=[TXN_ID])
    )
    state = body.transaction_states[0]
    return state.transaction_state, sorted((t.topic, p) for t in state.topics for p in t.partitions)


@pytest.mark.parametrize("verification", ["true", "false"])
def test_produce_v12_transactional_batch_adds_its_partition_to_the_transaction(tmp_path, verification):
    # ReplicaManager.maybeSendPartitionsToTransactionCoordinator (Kafka 4.0+): Produce v12 is
    # ADD_PARTITION (AddPartitionsToTxnManager.produceRequestVersionToTransactionSupportedOperation,
    # "version > 11"), whose supportsEpochBump skips the transaction.partition.verification.enable
    # check, and AddPartitionsToTxnManager.addOrVerifyTransaction sends setVerifyOnly(false): the
    # coordinator adds the partition (TransactionCoordinator.handleAddPartitionsToTransaction, with
    # TransactionVersion.transactionVersionForAddPartitionsToTxn's TV_2). None of these reads the
    # cluster's finalized transaction.version, so a broker below level 2 does the same; an EndTxn then
    # commits what was written.
    async def scenario(broker: Broker):
        await broker.create_topic()
        pid, epoch = await init_transactional(broker)
        before = await transaction_partitions(broker)
        answer = await produce_transactional(broker, 12, pid, epoch, 0, [b"a", b"b"])
        during = await transaction_partitions(broker)
        ended = await broker.client.call(
            END_TXN,
            4,
            EndTxnRequest(transactional_id=TXN_ID, producer_id=pid, producer_epoch=epoch, committed=True),
        )
        read_committed = fetch_request(broker.node.topics.get(TOPIC).topic_id, {0: 0})
        read_committed.isolation_level = 1
        committed = await broker.client.call(FETCH, 16, read_committed)
        return before, answer, during, ended.error_code, committed

    before, answer, during, ended, committed = run(
        tmp_path, scenario, **TXN_CONFIG, **{"transaction.partition.verification.enable": verification}
    )
    assert before == ("Empty", [])
    assert (answer.error_code, answer.base_offset) == (Errors.NONE, 0)
    assert during == ("Ongoing", [(TOPIC, 0)])
    assert ended == Errors.NONE
    data = partitions_of(committed)[0]
    assert [r.value for b in iter_batches(bytes(data.records)) if not b.is_control for r in b.records] == [
        b"a",
        b"b",
    ]
    assert data.last_stable_offset == 3  # the two records and the commit marker


@pytest.mark.parametrize(
    ("version", "code", "message"),
    [
        (10, Errors.INVALID_TXN_STATE, "Partition was not added to the transaction"),
        (11, Errors.TRANSACTION_ABORTABLE, None),
    ],
)
def test_produce_before_v12_only_verifies_the_partition(tmp_path, version, code, message):
    # Below v12 the leader only verifies (setVerifyOnly(true)): TransactionCoordinator.
    # handleVerifyPartitionsInTransaction answers TRANSACTION_ABORTABLE for a partition outside the
    # transaction, which AddPartitionsToTxnHandler.onComplete turns into INVALID_TXN_STATE for
    # DEFAULT_ERROR producers (v10 and below) and ReplicaManager.handleProduceAppend's
    # postVerificationCallback gives the message "Partition was not added to the transaction"; v11
    # (GENERIC_ERROR_SUPPORTED) hears TRANSACTION_ABORTABLE as it is. Nothing is added or written.
    async def scenario(broker: Broker):
        await broker.create_topic()
        pid, epoch = await init_transactional(broker)
        answer = await produce_transactional(broker, version, pid, epoch, 0, [b"a"])
        return answer, await transaction_partitions(broker), await broker.list_offsets(-1)

    answer, txn, latest = run(tmp_path, scenario, **TXN_CONFIG)
    assert (answer.error_code, answer.error_message, answer.base_offset) == (code, message, -1)
    assert txn == ("Empty", [])
    assert latest.offset == 0


def test_produce_v11_without_verification_writes_unchecked(tmp_path):
    # ReplicaManager.maybeSendPartitionsToTransactionCoordinator: "!transactionPartitionVerificationEnable
    # && !supportsEpochBump" skips the coordinator below v12, so the batch is written although the
    # partition was never added (the pre-KIP-890 behaviour the setting keeps).
    async def scenario(broker: Broker):
        await broker.create_topic()
        pid, epoch = await init_transactional(broker)
        answer = await produce_transactional(broker, 11, pid, epoch, 0, [b"a"])
        return answer, await transaction_partitions(broker)

    answer, txn = run(
        tmp_path, scenario, **TXN_CONFIG, **{"transaction.partition.verification.enable": "false"}
    )
    assert (answer.error_code, answer.base_offset) == (Errors.NONE, 0)
    assert txn == ("Empty", [])


UNVERIFIED = "Unable to verify the partition has been added to the transaction. Underlying error: "


@pytest.mark.parametrize(
    ("coordinator", "version", "heard"),
    [
        (Errors.PRODUCER_FENCED, 12, (Errors.INVALID_PRODUCER_EPOCH, None)),
        (
            Errors.TRANSACTION_ABORTABLE,
            10,
            (Errors.INVALID_TXN_STATE, "Partition was not added to the transaction"),
        ),
        (Errors.TRANSACTION_ABORTABLE, 11, (Errors.TRANSACTION_ABORTABLE, None)),
        (
            Errors.COORDINATOR_LOAD_IN_PROGRESS,
            12,
            (Errors.NOT_ENOUGH_REPLICAS, UNVERIFIED + "COORDINATOR_LOAD_IN_PROGRESS"),
        ),
        (Errors.NOT_COORDINATOR, 9, (Errors.NOT_ENOUGH_REPLICAS, UNVERIFIED + "NOT_COORDINATOR")),
        (
            Errors.CONCURRENT_TRANSACTIONS,
            11,
            (Errors.NOT_ENOUGH_REPLICAS, UNVERIFIED + "CONCURRENT_TRANSACTIONS"),
        ),
        (Errors.CONCURRENT_TRANSACTIONS, 12, (Errors.CONCURRENT_TRANSACTIONS, None)),
        (Errors.INVALID_PRODUCER_ID_MAPPING, 13, (Errors.INVALID_PRODUCER_ID_MAPPING, None)),
    ],
)
def test_what_a_producer_hears_of_the_coordinators_answer(coordinator, version, heard):
    # AddPartitionsToTxnManager's AddPartitionsToTxnHandler.onComplete (PRODUCER_FENCED ->
    # INVALID_PRODUCER_EPOCH; TRANSACTION_ABORTABLE -> INVALID_TXN_STATE for DEFAULT_ERROR producers)
    # and ReplicaManager.handleProduceAppend's postVerificationCallback (coordinator trouble ->
    # NOT_ENOUGH_REPLICAS with the underlying error; from v12, whose supportsEpochBump marks
    # transactions v2, CONCURRENT_TRANSACTIONS is passed on unchanged, Kafka 4.1).
    assert transaction_check_answer(coordinator, version) == heard


# ---- Fetch v18 ---------------------------------------------------------------------------------


def test_fetch_v18_at_the_default_high_watermark_answers_as_v17(tmp_path):
    # KIP-1166 (KAFKA-14145, Kafka 4.1) adds a tagged FetchPartition.HighWatermark, default
    # Long.MAX_VALUE and so not written by a consumer; only KafkaRaftClient reads it.
    # KafkaApis.handleFetchRequest builds its partitions with FetchRequest.fetchData (fetch offset, log
    # start offset, max bytes, current and last fetched leader epochs), so a v18 fetch is answered as a
    # v17 one, whatever the field holds.
    async def scenario(broker: Broker):
        topic_id = await broker.create_topic()
        await broker.produce(batch(3))
        await broker.produce(batch(2))
        answers = {version: await broker.fetch(topic_id, {0: 1}, version=version) for version in (17, 18)}
        request = fetch_request(topic_id, {0: 1})
        for hw in (0, -1):
            request.topics[0].partitions[0].high_watermark = hw
            answers[f"18 hw {hw}"] = await broker.client.call(FETCH, 18, request)
        return answers

    answers = run(tmp_path, scenario)
    default = FetchRequest.FetchPartition().high_watermark
    assert default == 2**63 - 1

    def seen(body):
        data = partitions_of(body)[0]
        return (
            body.error_code,
            data.error_code,
            data.high_watermark,
            data.last_stable_offset,
            data.log_start_offset,
            [(r.offset, r.value) for r in fetched_records(data)],
        )

    expected = seen(answers[17])
    assert expected[:5] == (Errors.NONE, Errors.NONE, 5, 5, 0)
    assert [offset for offset, _ in expected[5]] == [0, 1, 2, 3, 4]  # whole batches from offset 1's
    assert {name: seen(body) for name, body in answers.items()} == dict.fromkeys(answers, expected)


def test_fetch_v18_request_at_the_default_high_watermark_carries_no_tag():
    # A tagged field at its default is not written (Kafka's MessageData): a consumer's v18 request is
    # byte for byte its v17 request.
    topic_id = uuid.uuid4()
    request = fetch_request(topic_id, {0: 5, 1: 7})
    assert request.encode(18) == request.encode(17)
    request.topics[0].partitions[0].high_watermark = 42
    assert request.encode(18) != request.encode(17)


# ---- ListOffsets v11 ------------------------------------------------------------------------------


async def list_offsets(broker: Broker, version: int, timestamp: int, *, partition: int = 0, epoch: int = -1):
    request = ListOffsetsRequest(
        replica_id=-1,
        topics=[
            ListOffsetsRequest.ListOffsetsTopic(
                name=TOPIC,
                partitions=[
                    ListOffsetsRequest.ListOffsetsPartition(
                        partition_index=partition, timestamp=timestamp, current_leader_epoch=epoch
                    )
                ],
            )
        ],
    )
    p = (await broker.client.call(LIST_OFFSETS, version, request)).topics[0].partitions[0]
    return p.error_code, p.offset, p.timestamp, p.leader_epoch


def test_list_offsets_v11_earliest_pending_upload_without_tiered_storage(tmp_path):
    # KIP-1023 (ListOffsets v11, Kafka 4.2): -6 is EARLIEST_PENDING_UPLOAD_TIMESTAMP.
    # UnifiedLog.fetchOffsetByTimestamp -> fetchEarliestPendingUploadOffset: without remote storage
    # (remoteLogEnabled() false) TimestampAndOffset(NO_TIMESTAMP, -1, Optional.of(-1)), as for -5
    # (LATEST_TIERED_TIMESTAMP); ReplicaManager.fetchOffset answers NONE with offset -1, timestamp -1,
    # leader epoch -1. The partition's leader epoch is still checked first (Partition.
    # fetchOffsetForTimestamp), and an unknown partition is UNKNOWN_TOPIC_OR_PARTITION.
    async def scenario(broker: Broker):
        await broker.create_topic()
        await broker.produce(batch(4))
        bump_leader_epoch(broker.node, TOPIC, 0, 3)
        return {
            "pending": await list_offsets(broker, 11, EARLIEST_PENDING_UPLOAD),
            "pending current epoch": await list_offsets(broker, 11, EARLIEST_PENDING_UPLOAD, epoch=3),
            "pending fenced": await list_offsets(broker, 11, EARLIEST_PENDING_UPLOAD, epoch=1),
            "pending unknown partition": await list_offsets(broker, 11, EARLIEST_PENDING_UPLOAD, partition=7),
            "tiered v9": await list_offsets(broker, 9, LATEST_TIERED),
            "tiered v11": await list_offsets(broker, 11, LATEST_TIERED),
            "earliest v11": await list_offsets(broker, 11, -2),
            "latest v11": await list_offsets(broker, 11, -1),
        }

    got = run(tmp_path, scenario, kafka_version=LIST_OFFSETS_V11_RELEASE)
    no_tiered_storage = (Errors.NONE, -1, -1, -1)
    assert got == {
        "pending": no_tiered_storage,
        "pending current epoch": no_tiered_storage,
        "pending fenced": (Errors.FENCED_LEADER_EPOCH, -1, -1, -1),
        "pending unknown partition": (Errors.UNKNOWN_TOPIC_OR_PARTITION, -1, -1, -1),
        "tiered v9": no_tiered_storage,
        "tiered v11": no_tiered_storage,
        "earliest v11": (Errors.NONE, 0, -1, 0),
        "latest v11": (Errors.NONE, 4, -1, 3),
    }


@pytest.mark.parametrize(
    ("timestamp", "first_version"),
    [
        (-3, 7),  # MAX_TIMESTAMP, KIP-734
        (EARLIEST_LOCAL, 8),  # KIP-405
        (LATEST_TIERED, 9),  # KIP-1005
        (EARLIEST_PENDING_UPLOAD, 11),  # KIP-1023
    ],
)
def test_list_offsets_special_timestamp_below_its_version_is_unsupported_version(
    tmp_path, timestamp, first_version
):
    # ReplicaManager.isListOffsetsTimestampUnsupported (timestampMinSupportedVersion, Kafka 4.2; in
    # KafkaApis.handleListOffsetRequestV1AndAbove before 4.0): a special timestamp in a request older
    # than its first version is UNSUPPORTED_VERSION with offset and timestamp -1, checked after the
    # duplicate-partition check and before the partition is looked up.
    async def scenario(broker: Broker):
        await broker.create_topic()
        await broker.produce(batch(2))
        return (
            await list_offsets(broker, first_version - 1, timestamp),
            await list_offsets(broker, first_version - 1, timestamp, partition=7),
            (await list_offsets(broker, first_version, timestamp))[0],
        )

    below, below_unknown_partition, at_first = run(tmp_path, scenario, kafka_version=LIST_OFFSETS_V11_RELEASE)
    assert below == below_unknown_partition == (Errors.UNSUPPORTED_VERSION, -1, -1, -1)
    assert at_first == Errors.NONE


@pytest.mark.parametrize("timestamp", [-7, -100])
def test_list_offsets_negative_timestamp_that_is_no_special_one_is_unsupported_version(tmp_path, timestamp):
    # ReplicaManager.isListOffsetsTimestampUnsupported: "!timestampMinSupportedVersion.contains(timestamp)".
    async def scenario(broker: Broker):
        await broker.create_topic()
        return await list_offsets(broker, 11, timestamp)

    assert run(tmp_path, scenario, kafka_version=LIST_OFFSETS_V11_RELEASE) == (
        Errors.UNSUPPORTED_VERSION,
        -1,
        -1,
        -1,
    )


# ---- Metadata v13 ---------------------------------------------------------------------------------


def test_metadata_v13_top_level_error_code_is_none(tmp_path):
    # KIP-1102 (Metadata v13, Kafka 4.0): KafkaApis.handleTopicMetadataRequest answers with
    # MetadataResponse.prepareResponse, which never sets the top-level ErrorCode: NONE, also when a
    # topic asked for fails (topic errors stay in the topics) and for every-topic requests. Only
    # MetadataRequest.getErrorResponse sets it, and no broker code path sends REBOOTSTRAP_REQUIRED.
    async def scenario(broker: Broker):
        topic_id = await broker.create_topic()
        named = MetadataRequest(
            topics=[MetadataRequest.MetadataRequestTopic(name=n) for n in (TOPIC, "absent")],
            allow_auto_topic_creation=False,
        )
        by_id = MetadataRequest(
            topics=[MetadataRequest.MetadataRequestTopic(name=None, topic_id=uuid.uuid4())],
            allow_auto_topic_creation=False,
        )
        return (
            topic_id,
            await broker.client.call(METADATA, 13, named),
            await broker.client.call(METADATA, 12, named),
            await broker.client.call(METADATA, 13, by_id),
            await broker.client.call(METADATA, 13, MetadataRequest(topics=None)),
        )

    topic_id, v13, v12, by_id, everything = run(tmp_path, scenario)
    assert v13.error_code == by_id.error_code == everything.error_code == Errors.NONE
    topics = {t.name: (t.error_code, t.topic_id) for t in v13.topics}
    assert topics == {TOPIC: (Errors.NONE, topic_id), "absent": (Errors.UNKNOWN_TOPIC_OR_PARTITION, ZERO_ID)}
    assert [(t.name, t.error_code, t.topic_id) for t in v12.topics] == [
        (t.name, t.error_code, t.topic_id) for t in v13.topics
    ]
    assert [t.error_code for t in by_id.topics] == [Errors.UNKNOWN_TOPIC_ID]
    assert [t.name for t in everything.topics] == [TOPIC]
