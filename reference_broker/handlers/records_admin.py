"""DeleteRecords (21), OffsetForLeaderEpoch (23), DescribeLogDirs (35) and DescribeProducers (61).

Kafka's rules:
- DeleteRecords (KafkaApis.handleDeleteRecordsRequest, ReplicaManager.deleteRecordsOnLocalLog,
  Partition.deleteRecordsOnLeader, UnifiedLog.maybeIncrementLogStartOffset): a partition Kafka does not
  know is UNKNOWN_TOPIC_OR_PARTITION, an internal topic INVALID_TOPIC_EXCEPTION, a topic whose
  cleanup.policy lacks ``delete`` POLICY_VIOLATION; offset -1 means the high watermark, a negative one or
  one above the high watermark is OFFSET_OUT_OF_RANGE; the answer is the new low watermark (log start
  offset), -1 on any error. A partition named twice is answered once, for its last offset.
- OffsetForLeaderEpoch (ReplicaManager.lastOffsetForLeaderEpoch, Partition.lastOffsetForLeaderEpoch,
  LeaderEpochFileCache.endOffsetFor): unknown partitions UNKNOWN_TOPIC_OR_PARTITION; a current leader
  epoch other than -1 below ours FENCED_LEADER_EPOCH, above it UNKNOWN_LEADER_EPOCH; otherwise the
  largest epoch at or below the one asked for and where the next one starts (the log end offset for the
  current epoch), or -1/-1 when the cache has no answer. replica_id is not looked at (Kafka answers every
  caller from the leader). Topics come back in request order, repeats included.
- DescribeLogDirs (ReplicaManager.describeLogDirs): every configured log dir by absolute path with its file
  store's total and usable bytes, and the size of each asked-for partition in it (topics null: all); offset
  lag is max(high watermark - log end offset, 0), never a future replica; topics with no partition left
  are dropped. v5 (KIP-1066, Kafka 4.3) adds is_cordoned: true for a directory the broker's
  ``cordoned.log.dirs`` names (``ServerLogConfigs.CORDONED_LOG_DIRS_CONFIG``; no new replicas go there).
  This broker has no such setting (as a 4.3 broker with it unset), so every directory answers false.
- DescribeProducers (KafkaApis.handleDescribeProducersRequest, UnifiedLog.activeProducers): an illegal
  topic name INVALID_TOPIC_EXCEPTION and an unknown topic UNKNOWN_TOPIC_OR_PARTITION (with Kafka's
  messages) for each partition asked for; an unknown partition of a known topic UNKNOWN_TOPIC_OR_PARTITION;
  otherwise every producer the partition's producer state holds, in Java HashMap order.
"""

from __future__ import annotations

import os
from pathlib import Path

from kconform.codecs.errors import Errors
from kconform.codecs.messages import (
    DeleteRecordsResponse,
    DescribeLogDirsResponse,
    DescribeProducersResponse,
    OffsetForLeaderEpochResponse,
)

from ..security.acls import Operation, ResourceType
from ..security.authorization import allowed, filter_allowed, topics_described_or_cluster_action
from ..storage import EpochEntry, LeaderEpochCache, OffsetOutOfRange
from ..topic_names import INTERNAL_TOPICS, topic_name_error
from . import handles
from .admin_access import cluster_allowed

_INVALID_LOW_WATERMARK = -1
_NO_LEADER_EPOCH = -1
# Errors.UNKNOWN_TOPIC_OR_PARTITION's own message, which new ApiError(error) carries.
_UNKNOWN_TOPIC_MESSAGE = "This server does not host this topic-partition."
_TOPIC_REFUSED_MESSAGE = "Topic authorization failed."


# ---- DeleteRecords ----------------------------------------------------------------------------------


def _delete_records_in(broker, topic: str, index: int, offset: int) -> tuple[int, int]:
    """(error code, low watermark) for one partition."""
    partition = broker.partition(topic, index)
    if partition is None:  # NOT_LEADER_OR_FOLLOWER when it leads elsewhere
        return broker.missing_partition_error(topic, index, by_id=False), _INVALID_LOW_WATERMARK
    if topic in INTERNAL_TOPICS:
        return Errors.INVALID_TOPIC_EXCEPTION, _INVALID_LOW_WATERMARK
    policy = [part.strip() for part in partition.settings.get("cleanup.policy", "delete").split(",")]
    if "delete" not in policy:
        return Errors.POLICY_VIOLATION, _INVALID_LOW_WATERMARK
    try:
        low_watermark = partition.log.delete_records_before(offset)
    except OffsetOutOfRange:
        return Errors.OFFSET_OUT_OF_RANGE, _INVALID_LOW_WATERMARK
    broker.purgatory.notify(partition.watch_key)
    return Errors.NONE, low_watermark


@handles(21)
async def delete_records(broker, ctx, request) -> DeleteRecordsResponse:
    wanted: dict[str, dict[int, int]] = {}
    for topic in request.topics:
        for p in topic.partitions:
            wanted.setdefault(topic.name, {})[p.partition_index] = p.offset
    # KafkaApis.handleDeleteRecordsRequest: DELETE on each topic, asked before anyone looks whether it exists
    deletable = filter_allowed(broker, ctx, Operation.DELETE, ResourceType.TOPIC, wanted)
    topics = []
    for name, offsets in wanted.items():
        partitions = []
        for index, offset in offsets.items():
            if name not in deletable:
                code, low_watermark = Errors.TOPIC_AUTHORIZATION_FAILED, _INVALID_LOW_WATERMARK
            else:
                code, low_watermark = _delete_records_in(broker, name, index, offset)
            partitions.append(
                DeleteRecordsResponse.DeleteRecordsPartitionResult(
                    partition_index=index, low_watermark=low_watermark, error_code=code
                )
            )
        topics.append(DeleteRecordsResponse.DeleteRecordsTopicResult(name=name, partitions=partitions))
    return DeleteRecordsResponse(topics=topics)


# ---- OffsetForLeaderEpoch ---------------------------------------------------------------------------


def _epoch_end_offset(partition, requested_epoch: int) -> tuple[int, int]:
    """(epoch, end offset) from the partition's leader epoch cache.

    Kafka's leader records its epoch at the log end offset when it takes over (Partition.makeLeader), so
    the cache always holds the current epoch; where this node's cache does not yet, it is answered as if
    it did."""
    log = partition.log
    entries = list(log.epoch_entries)
    if not entries or entries[-1].epoch < partition.leader_epoch:
        entries.append(EpochEntry(partition.leader_epoch, log.log_end_offset))
    return LeaderEpochCache(None, entries).end_offset_for(requested_epoch, log.log_end_offset)


def _leader_epoch_error(partition, current_leader_epoch: int) -> int:
    """Partition.checkCurrentLeaderEpoch: only -1 (NO_PARTITION_LEADER_EPOCH) skips the check."""
    if current_leader_epoch == _NO_LEADER_EPOCH:
        return Errors.NONE
    if current_leader_epoch < partition.leader_epoch:
        return Errors.FENCED_LEADER_EPOCH
    if current_leader_epoch > partition.leader_epoch:
        return Errors.UNKNOWN_LEADER_EPOCH
    return Errors.NONE


@handles(23)
async def offset_for_leader_epoch(broker, ctx, request) -> OffsetForLeaderEpochResponse:
    EpochEndOffset = OffsetForLeaderEpochResponse.EpochEndOffset
    # KafkaApis.handleOffsetForLeaderEpochRequest: CLUSTER_ACTION (a follower) may ask about every topic,
    # others need DESCRIBE on each; refused topics are TOPIC_AUTHORIZATION_FAILED, answered last
    described = topics_described_or_cluster_action(broker, ctx, (t.topic for t in request.topics))
    topics, refused = [], []
    for topic in request.topics:
        if topic.topic not in described:
            refused.append(
                OffsetForLeaderEpochResponse.OffsetForLeaderTopicResult(
                    topic=topic.topic,
                    partitions=[
                        EpochEndOffset(partition=p.partition, error_code=Errors.TOPIC_AUTHORIZATION_FAILED)
                        for p in topic.partitions
                    ],
                )
            )
            continue
        partitions = []
        for p in topic.partitions:
            out = EpochEndOffset(partition=p.partition)
            partition = broker.partition(topic.topic, p.partition)
            if partition is None:
                out.error_code = broker.missing_partition_error(topic.topic, p.partition, by_id=False)
            else:
                out.error_code = _leader_epoch_error(partition, p.current_leader_epoch)
                if out.error_code == Errors.NONE:
                    epoch, end_offset = _epoch_end_offset(partition, p.leader_epoch)
                    if end_offset != -1:
                        out.leader_epoch, out.end_offset = epoch, end_offset
            partitions.append(out)
        topics.append(
            OffsetForLeaderEpochResponse.OffsetForLeaderTopicResult(topic=topic.topic, partitions=partitions)
        )
    return OffsetForLeaderEpochResponse(topics=topics + refused)


# ---- DescribeLogDirs --------------------------------------------------------------------------------


def _log_dir_result(broker, log_dir: str, wanted: set[tuple[str, int]] | None):
    Result = DescribeLogDirsResponse.DescribeLogDirsResult
    path = str(Path(log_dir).absolute())
    try:
        stats = os.statvfs(path)
    except OSError:  # Files.getFileStore throws an IOException, answered as Kafka answers any Throwable
        return Result(log_dir=path, error_code=Errors.UNKNOWN_SERVER_ERROR)
    by_topic: dict[str, list] = {}
    if path == str(broker.data_dir.absolute()):
        for (name, index), partition in sorted(broker.partitions.items()):
            if wanted is None or (name, index) in wanted:
                by_topic.setdefault(name, []).append(
                    DescribeLogDirsResponse.DescribeLogDirsPartition(
                        partition_index=index,
                        partition_size=partition.log.size_in_bytes,
                        offset_lag=max(partition.high_watermark - partition.log_end_offset, 0),
                        is_future_key=False,
                    )
                )
    return Result(
        error_code=Errors.NONE,
        log_dir=path,
        topics=[
            DescribeLogDirsResponse.DescribeLogDirsTopic(name=name, partitions=partitions)
            for name, partitions in by_topic.items()
        ],
        total_bytes=stats.f_blocks * stats.f_frsize,
        usable_bytes=stats.f_bavail * stats.f_frsize,
        is_cordoned=False,  # no cordoned.log.dirs here
    )


@handles(35)
async def describe_log_dirs(broker, ctx, request) -> DescribeLogDirsResponse:
    if not cluster_allowed(broker, ctx, Operation.DESCRIBE):  # KafkaApis: no directories, the error
        return DescribeLogDirsResponse(error_code=Errors.CLUSTER_AUTHORIZATION_FAILED, results=[])
    wanted = None
    if request.topics is not None:
        wanted = {(t.topic, index) for t in request.topics for index in t.partitions}
    log_dirs = dict.fromkeys(broker.config.log_dirs)  # Kafka walks config.logDirs.toSet
    return DescribeLogDirsResponse(results=[_log_dir_result(broker, d, wanted) for d in log_dirs])


# ---- DescribeProducers ------------------------------------------------------------------------------


def _java_hash_map_order(producers: dict) -> list:
    """``HashMap<Long, ...>`` iteration order: by bucket (``h ^ (h >>> 16)`` of the Long's hash, masked
    by a table of 16 doubled while more than 3/4 full), insertion order within a bucket."""
    length = 16
    while len(producers) > length * 3 // 4:
        length *= 2

    def bucket(producer_id: int) -> int:
        unsigned = producer_id & 0xFFFFFFFFFFFFFFFF
        h = (unsigned ^ (unsigned >> 32)) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (length - 1)

    return sorted(producers.items(), key=lambda item: bucket(item[0]))


def _active_producers(partition) -> list[DescribeProducersResponse.ProducerState]:
    return [
        DescribeProducersResponse.ProducerState(
            producer_id=producer_id,
            producer_epoch=entry.producer_epoch,
            last_sequence=entry.last_seq,
            last_timestamp=entry.last_timestamp,
            coordinator_epoch=entry.coordinator_epoch,
            current_txn_start_offset=(
                -1 if entry.current_txn_first_offset is None else entry.current_txn_first_offset
            ),
        )
        for producer_id, entry in _java_hash_map_order(dict(partition.log.active_producers))
    ]


@handles(61)
async def describe_producers(broker, ctx, request) -> DescribeProducersResponse:
    PartitionResponse = DescribeProducersResponse.PartitionResponse
    topics = []
    for topic in request.topics:
        topic_error: tuple[int, str] | None = None
        reason = topic_name_error(topic.name)
        if reason is not None:
            topic_error = (Errors.INVALID_TOPIC_EXCEPTION, reason)
        elif not allowed(broker, ctx, Operation.READ, ResourceType.TOPIC, topic.name):  # before existence
            topic_error = (Errors.TOPIC_AUTHORIZATION_FAILED, _TOPIC_REFUSED_MESSAGE)
        elif topic.name not in broker.topics:
            topic_error = (Errors.UNKNOWN_TOPIC_OR_PARTITION, _UNKNOWN_TOPIC_MESSAGE)
        partitions = []
        for index in topic.partition_indexes:
            out = PartitionResponse(partition_index=index)
            partition = broker.partition(topic.name, index)
            if topic_error is not None:
                out.error_code, out.error_message = topic_error
            elif partition is None:
                out.error_code = Errors.UNKNOWN_TOPIC_OR_PARTITION
            else:
                out.active_producers = _active_producers(partition)
            partitions.append(out)
        topics.append(DescribeProducersResponse.TopicResponse(name=topic.name, partitions=partitions))
    return DescribeProducersResponse(topics=topics)
