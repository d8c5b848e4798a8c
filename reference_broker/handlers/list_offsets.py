"""ListOffsets (key 2): offsets by timestamp, and the special timestamps.

Kafka's rules (KafkaApis.handleListOffsetRequest, ReplicaManager.fetchOffset,
Partition.fetchOffsetForTimestamp, UnifiedLog.fetchOffsetByTimestamp): -2 is the log start offset, -1
the high watermark (read_uncommitted) or last stable offset (read_committed, v2+), or for a request
with a replica id other than -1 (no isolation level) the log end offset, -3 (v7+) the offset and
timestamp of the record with the largest timestamp, -4 (v8+) the local log start, -5 (v9+, the last
tiered offset) and -6 (v11+, the earliest offset not yet uploaded to tiered storage, KIP-1023) offset
-1 as a log without tiered storage answers them, other values the first offset whose timestamp is at or
after it, never past that same limit (no match: offset -1, timestamp -1); a negative timestamp that is
no special one, or one the request's version does not have yet, is UNSUPPORTED_VERSION; v0 answers
with a list of old-style offsets; a partition named twice in one request is INVALID_REQUEST (v1+);
current_leader_epoch is checked as in Fetch."""

from __future__ import annotations

from collections import Counter

from kconform.codecs.constants import LIST_OFFSETS_TIMESTAMP_MIN_VERSION, ListOffsetsTimestamp
from kconform.codecs.errors import Errors
from kconform.codecs.messages import ListOffsetsResponse

from ..partition import PartitionError
from ..security.acls import Operation, ResourceType
from ..security.authorization import filter_allowed
from . import handles

Partition = ListOffsetsResponse.ListOffsetsPartitionResponse
CONSUMER_REPLICA_ID = -1
DEBUGGING_REPLICA_ID = -2  # reads a follower's log too (ListOffsetsRequest.DEBUGGING_REPLICA_ID)

# UnifiedLog.fetchOffsetByTimestamp without remote storage (remoteLogEnabled() false): LATEST_TIERED
# and EARLIEST_PENDING_UPLOAD (fetchEarliestPendingUploadOffset) are TimestampAndOffset(NO_TIMESTAMP,
# -1, Optional.of(-1)), which ReplicaManager.fetchOffset answers as offset -1, timestamp -1, epoch -1.
_TIERED_ONLY = frozenset({ListOffsetsTimestamp.LATEST_TIERED, ListOffsetsTimestamp.EARLIEST_PENDING_UPLOAD})


def timestamp_unsupported(timestamp: int, version: int) -> bool:
    """ReplicaManager.isListOffsetsTimestampUnsupported (v1+); at v0 every timestamp below -2, as v0
    knows only -1 and -2 (KafkaApis.handleListOffsetRequestV0 in 3.x)."""
    if version == 0:
        return timestamp < ListOffsetsTimestamp.EARLIEST
    first = LIST_OFFSETS_TIMESTAMP_MIN_VERSION.get(timestamp)  # ReplicaManager.timestampMinSupportedVersion
    return timestamp < 0 and (first is None or version < first)


@handles(2)
async def list_offsets(broker, ctx, request) -> ListOffsetsResponse:
    version = ctx.api_version
    read_committed = version >= 2 and request.isolation_level == 1
    counts = Counter((t.name, p.partition_index) for t in request.topics for p in t.partitions)
    # KafkaApis.handleListOffsetRequest: DESCRIBE on each topic first; the refused topics' partitions are
    # TOPIC_AUTHORIZATION_FAILED, answered after the others
    described = filter_allowed(
        broker, ctx, Operation.DESCRIBE, ResourceType.TOPIC, (t.name for t in request.topics)
    )
    topics, refused = [], []
    for topic in request.topics:
        if topic.name not in described:
            refused.append(_refused(topic, version))
            continue
        partitions = []
        for p in topic.partitions:
            out = Partition(partition_index=p.partition_index)
            partition = broker.partition(topic.name, p.partition_index)
            current_leader_epoch = p.current_leader_epoch if version >= 4 else -1
            # ReplicaManager.fetchOffset's order: duplicates, then the timestamp's version, then the
            # partition (getPartitionOrException).
            if version >= 1 and counts[(topic.name, p.partition_index)] > 1:
                out.error_code = Errors.INVALID_REQUEST
            elif timestamp_unsupported(p.timestamp, version):
                out.error_code = Errors.UNSUPPORTED_VERSION
            elif partition is None:
                out.error_code = broker.missing_partition_error(topic.name, p.partition_index, by_id=False)
            else:
                try:
                    if request.replica_id != DEBUGGING_REPLICA_ID:  # ReplicaManager.fetchOffset
                        partition.check_leader_epoch(current_leader_epoch)
                        partition.check_leader()
                    if version == 0:
                        out.old_style_offsets = partition.legacy_offsets(p.timestamp, p.max_num_offsets)
                    elif p.timestamp in _TIERED_ONLY:
                        partition.check_leader_epoch(current_leader_epoch)
                        out.offset, out.timestamp, out.leader_epoch = -1, -1, -1
                    else:
                        offset, timestamp, epoch = partition.offset_for_timestamp(
                            p.timestamp,
                            read_committed=read_committed,
                            current_leader_epoch=current_leader_epoch,
                            from_consumer=request.replica_id == CONSUMER_REPLICA_ID,
                        )
                        out.offset, out.timestamp = offset, timestamp
                        out.leader_epoch = epoch if version >= 4 else -1
                except PartitionError as exc:
                    out.error_code = exc.code
            if out.error_code and version >= 1:
                out.offset, out.timestamp = -1, -1
            partitions.append(out)
        topics.append(ListOffsetsResponse.ListOffsetsTopicResponse(name=topic.name, partitions=partitions))
    return ListOffsetsResponse(topics=topics + refused)


def _refused(topic, version: int) -> ListOffsetsResponse.ListOffsetsTopicResponse:
    """A topic the principal may not describe: every partition TOPIC_AUTHORIZATION_FAILED, offset and
    timestamp -1 from v1 (v0 has neither, and an empty list of old-style offsets)."""
    partitions = []
    for p in topic.partitions:
        out = Partition(partition_index=p.partition_index, error_code=Errors.TOPIC_AUTHORIZATION_FAILED)
        if version >= 1:
            out.offset, out.timestamp = -1, -1
        partitions.append(out)
    return ListOffsetsResponse.ListOffsetsTopicResponse(name=topic.name, partitions=partitions)
