"""Kafka's Fetch and ListOffsets error rules, one test per rule, against a reference broker node in this
process: offsets out of range, unknown topic ids, leader epochs, fetch sessions, max bytes, long polls,
and ListOffsets' specs, leader epochs and duplicate partitions.

Each test names where Apache Kafka 4.0 makes the decision (class and method in the Kafka source); the
broker must give the same error code in the same place of the response, or close the connection
where Kafka closes it."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from kconform.codecs.errors import Errors
from kconform.codecs.messages import (
    ApiVersionsRequest,
    FetchRequest,
    ListOffsetsRequest,
)

from ..support.elections import bump_leader_epoch
from ..support.error_rules_broker import (
    API_VERSIONS,
    EARLIEST,
    FETCH,
    FETCH_V,
    LATEST,
    LIST_OFFSETS,
    LIST_OFFSETS_V,
    MAX_TIMESTAMP,
    TOPIC,
    Broker,
    batch,
    fetched_records,
    now_ms,
    partitions_of,
    run,
)

# ---- Fetch ----------------------------------------------------------------------------------------


def test_fetch_past_the_log_end_is_offset_out_of_range(tmp_path):
    # Fetch past the log end: UnifiedLog.read throws OffsetOutOfRangeException and
    # ReplicaManager.readFromLocalLog answers with createLogReadResult(e), which carries
    # UnifiedLog.UnknownOffset (-1) as high watermark and log start offset, and no last stable offset.
    async def scenario(broker: Broker):
        topic_id = await broker.create_topic()
        await broker.produce(batch(3))
        return await broker.fetch(topic_id, {0: 10})

    body = run(tmp_path, scenario)
    data = partitions_of(body)[0]
    assert data.error_code == Errors.OFFSET_OUT_OF_RANGE
    assert (data.high_watermark, data.last_stable_offset, data.log_start_offset) == (-1, -1, -1)
    assert not fetched_records(data)


def test_fetch_by_unknown_topic_id_is_unknown_topic_id(tmp_path):
    # KafkaApis.handleFetchRequest (v13+): a topic id the metadata cache cannot name -> UNKNOWN_TOPIC_ID;
    # before v13 an unknown name is UNKNOWN_TOPIC_OR_PARTITION.
    async def scenario(broker: Broker):
        topic_id = await broker.create_topic()
        by_id = await broker.fetch(uuid.uuid4(), {0: 0}, version=13)
        # a topic id that resolves, for a partition the topic lacks: the id is known, the partition
        # is not -> UNKNOWN_TOPIC_OR_PARTITION
        missing_partition = await broker.fetch(topic_id, {7: 0}, version=13)
        by_name = await broker.client.call(
            FETCH,
            12,
            FetchRequest(
                max_wait_ms=0,
                min_bytes=1,
                max_bytes=1 << 20,
                topics=[
                    FetchRequest.FetchTopic(
                        topic="nowhere",
                        partitions=[FetchRequest.FetchPartition(partition=0, partition_max_bytes=1 << 20)],
                    )
                ],
            ),
        )
        return by_id, by_name, missing_partition

    by_id, by_name, missing_partition = run(tmp_path, scenario)
    assert partitions_of(by_id)[0].error_code == Errors.UNKNOWN_TOPIC_ID
    assert partitions_of(missing_partition)[7].error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert partitions_of(by_name)[0].error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION


def test_fetch_current_leader_epoch_fenced_and_unknown(tmp_path):
    # Partition.checkCurrentLeaderEpoch: older than the leader's -> FENCED_LEADER_EPOCH, newer ->
    # UNKNOWN_LEADER_EPOCH, -1 unchecked. KafkaApis.handleFetchRequest (v16+, KIP-951) adds the
    # current leader and its endpoint to FENCED_LEADER_EPOCH answers.
    async def scenario(broker: Broker):
        topic_id = await broker.create_topic()
        await broker.produce(batch(1))
        # A leader election as the controller would make it: the partition's leader epoch moves to 3.
        bump_leader_epoch(broker.node, TOPIC, 0, 3)
        return [await broker.fetch(topic_id, {0: 0}, leader_epoch=epoch) for epoch in (2, 4, 3, -1)]

    older, newer, same, unchecked = run(tmp_path, scenario)
    fenced = partitions_of(older)[0]
    assert fenced.error_code == Errors.FENCED_LEADER_EPOCH
    assert (fenced.current_leader.leader_id, fenced.current_leader.leader_epoch) == (1, 3)
    assert [n.node_id for n in older.node_endpoints] == [1]
    assert partitions_of(newer)[0].error_code == Errors.UNKNOWN_LEADER_EPOCH
    assert partitions_of(same)[0].error_code == Errors.NONE
    assert partitions_of(unchecked)[0].error_code == Errors.NONE


def test_fetch_unknown_session_id_is_fetch_session_id_not_found(tmp_path):
    # FetchManager.newContext: an incremental fetch (epoch > 0) naming no cached session ->
    # SessionErrorContext(FETCH_SESSION_ID_NOT_FOUND): top-level error, no partitions, session id 0.
    async def scenario(broker: Broker):
        topic_id = await broker.create_topic()
        return await broker.fetch(topic_id, {0: 0}, session_id=12345, session_epoch=1)

    body = run(tmp_path, scenario)
    assert body.error_code == Errors.FETCH_SESSION_ID_NOT_FOUND
    assert body.session_id == 0 and body.responses == []


def test_fetch_wrong_session_epoch_is_invalid_fetch_session_epoch(tmp_path):
    # FetchManager.newContext: a cached session whose next epoch is not the request's ->
    # INVALID_FETCH_SESSION_EPOCH.
    async def scenario(broker: Broker):
        topic_id = await broker.create_topic()
        full = await broker.fetch(topic_id, {0: 0}, session_epoch=0)
        wrong = await broker.fetch(topic_id, {}, session_id=full.session_id, session_epoch=5)
        return full, wrong

    full, wrong = run(tmp_path, scenario)
    assert full.error_code == Errors.NONE and full.session_id > 0
    assert wrong.error_code == Errors.INVALID_FETCH_SESSION_EPOCH
    assert wrong.responses == []


@pytest.mark.parametrize("version", [3, FETCH_V])
def test_fetch_returns_a_first_batch_larger_than_max_bytes(tmp_path, version):
    # ReplicaManager.readFromLocalLog (v3+: hardMaxBytesLimit false): minOneMessage for the first
    # partition, so a batch larger than max_bytes and partition_max_bytes comes back whole.
    async def scenario(broker: Broker):
        topic_id = await broker.create_topic()
        await broker.produce(batch(4, size=1000))
        if version >= 13:
            return await broker.fetch(topic_id, {0: 0}, max_bytes=100, partition_max_bytes=100)
        request = FetchRequest(
            max_wait_ms=0,
            min_bytes=1,
            max_bytes=100,
            topics=[
                FetchRequest.FetchTopic(
                    topic=TOPIC,
                    partitions=[FetchRequest.FetchPartition(partition=0, partition_max_bytes=100)],
                )
            ],
        )
        return await broker.client.call(FETCH, version, request)

    body = run(tmp_path, scenario, kafka_version="3.9" if version <= 3 else None)  # v3: Kafka 3.x
    data = partitions_of(body)[0]
    assert data.error_code == Errors.NONE
    assert [r.offset for r in fetched_records(data)] == [0, 1, 2, 3]


def test_fetch_long_poll_waits_for_max_wait_without_data(tmp_path):
    # DelayedFetch: fewer than min_bytes available and no error -> wait max_wait_ms.
    async def scenario(broker: Broker):
        topic_id = await broker.create_topic()
        loop = asyncio.get_running_loop()
        start = loop.time()
        body = await broker.fetch(topic_id, {0: 0}, max_wait_ms=500, min_bytes=1)
        return body, loop.time() - start

    body, waited = run(tmp_path, scenario)
    assert partitions_of(body)[0].error_code == Errors.NONE
    assert not fetched_records(partitions_of(body)[0])
    assert 0.45 <= waited < 5


def test_fetch_long_poll_returns_early_when_data_arrives(tmp_path):
    # DelayedFetch.tryComplete: an append that brings min_bytes completes the waiting fetch at once.
    async def scenario(broker: Broker):
        topic_id = await broker.create_topic()
        producer = await broker.connect()
        loop = asyncio.get_running_loop()
        start = loop.time()
        poll = asyncio.create_task(broker.fetch(topic_id, {0: 0}, max_wait_ms=20_000, min_bytes=1))
        await asyncio.sleep(0.3)
        await broker.produce(batch(2), client=producer)
        body = await poll
        await producer.close()
        return body, loop.time() - start

    body, waited = run(tmp_path, scenario)
    assert [r.offset for r in fetched_records(partitions_of(body)[0])] == [0, 1]
    assert 0.25 <= waited < 5


def test_incremental_fetch_session_omits_unchanged_partitions(tmp_path):
    # IncrementalFetchContext.updateAndGenerateResponseData: only partitions with new records, a new
    # high watermark or log start offset, or an error go into the response.
    async def scenario(broker: Broker):
        topic_id = await broker.create_topic(partitions=3)
        full = await broker.fetch(topic_id, {0: 0, 1: 0, 2: 0}, session_epoch=0)
        await broker.produce(batch(2), partition=1)
        first = await broker.fetch(topic_id, {}, session_id=full.session_id, session_epoch=1)
        quiet = await broker.fetch(topic_id, {1: 2}, session_id=full.session_id, session_epoch=2)
        return full, first, quiet

    full, first, quiet = run(tmp_path, scenario)
    assert full.session_id > 0 and sorted(partitions_of(full)) == [0, 1, 2]
    assert list(partitions_of(first)) == [1]
    assert [r.offset for r in fetched_records(partitions_of(first)[1])] == [0, 1]
    assert quiet.error_code == Errors.NONE and partitions_of(quiet) == {}


def test_fetch_negative_max_bytes_is_a_partition_error(tmp_path):
    # ReplicaManager.readFromLocalLog: LogSegment.read refuses a negative max size with
    # IllegalArgumentException, which the per-partition catch-all turns into UNKNOWN_SERVER_ERROR;
    # the request is answered and the connection stays (v5 has no top-level error field).
    async def scenario(broker: Broker):
        await broker.create_topic()
        await broker.produce(batch(2))
        request = FetchRequest(
            max_wait_ms=0,
            min_bytes=1,
            max_bytes=1 << 20,
            topics=[
                FetchRequest.FetchTopic(
                    topic=TOPIC,
                    partitions=[
                        FetchRequest.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=-5)
                    ],
                )
            ],
        )
        v5 = await broker.client.call(FETCH, 5, request)
        v16 = await broker.fetch(broker.node.topics.get(TOPIC).topic_id, {0: 0}, partition_max_bytes=-5)
        after = await broker.client.call(API_VERSIONS, 0, ApiVersionsRequest())
        return v5, v16, after

    v5, v16, after = run(tmp_path, scenario)
    for body in (v5, v16):
        data = partitions_of(body)[0]
        assert (data.error_code, data.high_watermark) == (Errors.UNKNOWN_SERVER_ERROR, -1)
    assert v16.error_code == Errors.NONE
    assert after.error_code == Errors.NONE


# ---- ListOffsets ----------------------------------------------------------------------------------


def test_list_offsets_earliest_latest_max_timestamp_and_by_timestamp(tmp_path):
    # Partition.fetchOffsetForTimestamp / UnifiedLog.fetchOffsetByTimestamp: -2 the log start offset,
    # -1 the high watermark (both without timestamp), -3 the record with the largest timestamp
    # (batch.offsetOfMaxTimestamp), a timestamp the first record at or after it; none -> -1/-1.
    async def scenario(broker: Broker):
        await broker.create_topic()
        base = now_ms() - 100_000
        await broker.produce(batch(3, timestamps=[base, base + 50, base + 10]))
        await broker.produce(batch(2, timestamps=[base + 20, base + 30]))
        found = {}
        for name, ts in [
            ("earliest", EARLIEST),
            ("latest", LATEST),
            ("max", MAX_TIMESTAMP),
            ("at_start", base),
            ("at_10", base + 10),
            ("after_30", base + 31),
            ("too_late", base + 51),
        ]:
            found[name] = await broker.list_offsets(ts)
        return base, found

    base, found = run(tmp_path, scenario)
    got = {name: (p.error_code, p.offset, p.timestamp) for name, p in found.items()}
    assert got == {
        "earliest": (0, 0, -1),
        "latest": (0, 5, -1),
        "max": (0, 1, base + 50),
        "at_start": (0, 0, base),
        "at_10": (0, 1, base + 50),
        "after_30": (0, 1, base + 50),
        "too_late": (0, -1, -1),
    }


def test_list_offsets_latest_carries_the_partitions_leader_epoch(tmp_path):
    # Partition.fetchOffsetForTimestamp, LATEST_TIMESTAMP: TimestampAndOffset(NO_TIMESTAMP,
    # lastFetchableOffset, Optional.of(leaderEpoch)): the partition's current leader epoch, whether
    # the log is empty or its last batch was written under an older epoch.
    async def scenario(broker: Broker):
        await broker.create_topic()
        empty = await broker.list_offsets(LATEST)
        await broker.produce(batch(2))
        bump_leader_epoch(broker.node, TOPIC, 0, 3)  # a leader election, no new writes
        return empty, await broker.list_offsets(LATEST)

    empty, after_election = run(tmp_path, scenario)
    assert (empty.error_code, empty.offset, empty.leader_epoch) == (0, 0, 0)
    assert (after_election.error_code, after_election.offset, after_election.leader_epoch) == (0, 2, 3)


def test_list_offsets_duplicate_partition_is_invalid_request(tmp_path):
    # ReplicaManager.fetchOffset (v1+): partitions named twice (ListOffsetsRequest.duplicatePartitions)
    # -> INVALID_REQUEST for each; the others are answered normally.
    async def scenario(broker: Broker):
        await broker.create_topic(partitions=2)
        wanted = [0, 0, 1]
        request = ListOffsetsRequest(
            replica_id=-1,
            topics=[
                ListOffsetsRequest.ListOffsetsTopic(
                    name=TOPIC,
                    partitions=[
                        ListOffsetsRequest.ListOffsetsPartition(partition_index=i, timestamp=LATEST)
                        for i in wanted
                    ],
                )
            ],
        )
        body = await broker.client.call(LIST_OFFSETS, LIST_OFFSETS_V, request)
        return body.topics[0].partitions

    partitions = run(tmp_path, scenario)
    assert sorted((p.partition_index, p.error_code) for p in partitions) == [
        (0, Errors.INVALID_REQUEST),
        (0, Errors.INVALID_REQUEST),
        (1, Errors.NONE),
    ]
