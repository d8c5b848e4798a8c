"""Fetch (key 1): consumers' reads, with long polling and incremental fetch sessions.

Kafka's rules (KafkaApis.handleFetchRequest, ReplicaManager.fetchMessages/readFromLocalLog,
DelayedFetch): partitions are read in request order within the response's max_bytes (v3+; before v3
only per-partition limits apply), and the first partition that has data returns at least one whole
batch even when it is larger than the limits; reads stop at the high watermark (read_uncommitted) or
the last stable offset (read_committed, v4+, which also lists the aborted transactions overlapping
what was read, an empty list rather than null when there are none); a fetch that found fewer than
min_bytes and no errors waits up to max_wait_ms for new data; a current_leader_epoch older than the
partition's is FENCED_LEADER_EPOCH, newer UNKNOWN_LEADER_EPOCH (from v16 a fenced partition names the
current leader);
a partition that cannot be read (offset out of range, ...; an unexpected failure, such as a negative
max bytes reaching a segment, is UNKNOWN_SERVER_ERROR) reports -1 for its high watermark and log start
and last stable offsets; from v13 topics are named by id (UNKNOWN_TOPIC_ID). v18's tagged partition
HighWatermark (KIP-1166, the replica's own high watermark) is read only by the KRaft quorum's fetch
handling (KafkaRaftClient, KAFKA-14145), which answers a follower at once when its high watermark is
behind the leader's; KafkaApis.handleFetchRequest builds its partitions with FetchRequest.fetchData
(fetch offset, log start offset, max bytes, current and last fetched leader epochs), so a partition
fetch is the same whatever the field holds, from a consumer (which leaves it at its default, Long.MAX)
or a follower.

KIP-392, fetch from followers: a consumer's Fetch v11+ carries client metadata (its rack_id;
KafkaApis.handleFetchRequest), so it may read from a follower, up to the follower's own high
watermark or last stable offset (FetchParams.fetchOnlyLeader is false for it; Partition.fetchRecords
-> localLogWithEpochOrThrow, whose leader epoch check holds on a follower too); before v11, and for
a follower, only the leader answers. With a replica.selector.class, a leader asked by such a consumer
first looks for a preferred read replica (ReplicaManager.readFromLog, findPreferredReadReplica): when
it names a follower the partition is answered without a read, error NONE, the leader's high
watermark, last stable offset and log start offset (fetchOffsetSnapshot, after the leader epoch
check), no aborted list and preferred_read_replica set, and the fetch does not wait
(fetchMessages); every other answer says -1."""

from __future__ import annotations

import logging
import time

from kconform.codecs.constants import ZERO_UUID, IsolationLevel
from kconform.codecs.errors import Errors
from kconform.codecs.messages import FetchResponse

from ..down_conversion import UnsupportedCompressionForDownConversion, down_convert, fetch_magic
from ..fetch_sessions import CachedPartition
from ..partition import FetchRead, LogSlice, PartitionError
from ..quotas import fetch_response_size, fetch_throttle_ms, set_throttle_time
from ..replication.serving import serve_follower_fetch
from ..security.acls import Operation, ResourceType
from ..security.authorization import CLUSTER_NAME, allowed, filter_allowed
from . import handles

log = logging.getLogger(__name__)
PartitionData = FetchResponse.PartitionData
READ_COMMITTED = IsolationLevel.READ_COMMITTED


def _error_data(index: int, code: int, *, read_failed: bool = True) -> PartitionData:
    """A partition answered with an error. Kafka builds a failed read from its ``LogReadResult``
    (aborted transactions null) but a partition it never reads, unknown to its metadata, with
    ``FetchResponse.partitionResponse`` (the list left at its empty default)."""
    return PartitionData(
        partition_index=index,
        error_code=code,
        high_watermark=-1,
        last_stable_offset=-1,
        log_start_offset=-1,
        aborted_transactions=None if read_failed else [],
        records=b"",
    )


def _requested(version: int, request) -> tuple[dict, list]:
    """Partition keys -> CachedPartition, and the forgotten keys. A key is (topic name or id, index)."""
    requested = {}
    for topic in request.topics:
        topic_key = topic.topic_id if version >= 13 else topic.topic
        for p in topic.partitions:
            requested[(topic_key, p.partition)] = CachedPartition(
                fetch_offset=p.fetch_offset,
                max_bytes=p.partition_max_bytes,
                log_start_offset=p.log_start_offset,
                current_leader_epoch=p.current_leader_epoch,
                last_fetched_epoch=p.last_fetched_epoch if version >= 12 else -1,
            )
    forgotten = []
    for topic in request.forgotten_topics_data:
        topic_key = topic.topic_id if version >= 13 else topic.topic
        forgotten.extend((topic_key, index) for index in topic.partitions)
    return requested, forgotten


def _read_once(
    broker,
    version: int,
    partitions: dict,
    max_bytes: int,
    isolation: int,
    replica=None,
    first=True,
    client_rack: str | None = None,
    denied: frozenset = frozenset(),
):
    """One pass over the partitions: {key: PartitionData}, bytes read, and whether any errored (or,
    for a follower, diverged: an answer that must go back at once). ``replica`` is a follower's
    (id, broker epoch); its reads go to the log end and record its progress. ``client_rack`` is a
    consumer's rack_id from Fetch v11 on (None before: only a leader may answer it). Keys in ``denied``
    are answered TOPIC_AUTHORIZATION_FAILED unread, and count as no error: Kafka leaves them out of the
    read (``erroneous``), so they neither end the wait nor fill it."""
    hard_limit = version <= 2
    min_one = not hard_limit
    remaining = max_bytes if version >= 3 else 0x7FFFFFFF
    results = {}
    total = 0
    errored = False
    for key, wanted in partitions.items():
        topic_key, index = key
        if key in denied:
            results[key] = _error_data(index, Errors.TOPIC_AUTHORIZATION_FAILED, read_failed=False)
            continue
        partition = broker.partition_by_key(topic_key, index, by_id=version >= 13)
        if partition is None:
            code = broker.missing_partition_error(topic_key, index, by_id=version >= 13)
            results[key] = _error_data(index, code, read_failed=code == Errors.NOT_LEADER_OR_FOLLOWER)
            errored = True
            continue
        preferred = None
        try:
            if replica is not None:
                read = serve_follower_fetch(
                    partition,
                    replica_id=replica[0],
                    replica_epoch=replica[1],
                    fetch_offset=wanted.fetch_offset,
                    log_start_offset=wanted.log_start_offset,
                    last_fetched_epoch=wanted.last_fetched_epoch,
                    current_leader_epoch=wanted.current_leader_epoch,
                    max_bytes=min(wanted.max_bytes, remaining),
                    record_progress=first,
                )
                if read.diverging_epoch is not None:
                    errored = True
            else:
                if client_rack is not None:
                    preferred = broker.replication.preferred_read_replica(
                        partition, client_rack=client_rack, fetch_offset=wanted.fetch_offset
                    )
                if preferred is not None:
                    read = _redirected(partition, wanted.current_leader_epoch)
                else:
                    read = partition.read_for_fetch(
                        wanted.fetch_offset,
                        min(wanted.max_bytes, remaining),
                        min_one_batch=min_one,
                        read_committed=isolation == READ_COMMITTED,
                        current_leader_epoch=wanted.current_leader_epoch,
                        leader_only=client_rack is None,
                    )
        except PartitionError as exc:
            # ReplicaManager.createLogReadResult(e): no high watermark, log start or last stable offset
            results[key] = _error_data(index, exc.code)
            errored = True
            continue
        except Exception:  # readFromLocalLog's catch-all, e.g. a negative max size reaching a segment
            log.exception("fetch of %s-%s at offset %s failed", topic_key, index, wanted.fetch_offset)
            results[key] = _error_data(index, Errors.UNKNOWN_SERVER_ERROR)
            errored = True
            continue
        size = len(read.records)
        if size:
            min_one = False
        remaining = max(0, remaining - size)
        total += size
        results[key] = PartitionData(
            partition_index=index,
            error_code=Errors.NONE,
            high_watermark=read.high_watermark,
            last_stable_offset=read.last_stable_offset,
            log_start_offset=read.log_start_offset,
            aborted_transactions=_aborted(getattr(read, "aborted_transactions", None)),
            records=read.records,
            preferred_read_replica=-1 if preferred is None else preferred,
        )
        diverging = getattr(read, "diverging_epoch", None)
        if diverging is not None:
            results[key].diverging_epoch = FetchResponse.EpochEndOffset(
                epoch=diverging[0], end_offset=diverging[1]
            )
    return results, total, errored


def _denied(broker, ctx, version: int, partitions: dict, is_follower: bool) -> frozenset:
    """The partition keys this principal may not fetch (KafkaApis.handleFetchRequest): for a follower
    every one unless it has CLUSTER_ACTION on the cluster; for a consumer those of topics it may not
    READ. An id no topic has is not asked about: it stays UNKNOWN_TOPIC_ID."""
    if is_follower:
        if allowed(broker, ctx, Operation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME):
            return frozenset()
        return frozenset(partitions)
    names = {}
    for topic_key, _index in partitions:
        if version >= 13:
            topic = broker.topics.by_id(topic_key)
            names[topic_key] = None if topic is None else topic.name
        else:
            names[topic_key] = topic_key
    readable = filter_allowed(broker, ctx, Operation.READ, ResourceType.TOPIC, filter(None, names.values()))
    return frozenset(key for key in partitions if names[key[0]] is not None and names[key[0]] not in readable)


def _redirected(partition, current_leader_epoch: int) -> FetchRead:
    """A consumer sent to a preferred read replica: nothing read, the leader's offsets
    (``Partition.fetchOffsetSnapshot``, which checks the leader epoch first) and no aborted list."""
    partition.check_leader_epoch(current_leader_epoch)
    return FetchRead(
        b"", partition.high_watermark, partition.last_stable_offset, partition.log_start_offset, None
    )


def _aborted(aborted):
    if aborted is None:
        return None
    return [FetchResponse.AbortedTransaction(producer_id=pid, first_offset=first) for pid, first in aborted]


@handles(1)
async def fetch(broker, ctx, request) -> FetchResponse:
    version = ctx.api_version
    replica_id = request.replica_state.replica_id if version >= 15 else request.replica_id
    replica_epoch = request.replica_state.replica_epoch if version >= 15 else -1
    is_follower = replica_id >= 0
    replica = (replica_id, replica_epoch) if is_follower else None
    client_rack = request.rack_id if version >= 11 and not is_follower else None
    isolation = request.isolation_level if version >= 4 else 0
    requested, forgotten = _requested(version, request)
    now = broker.clock.now_ms()
    if version >= 7:
        context = broker.fetch_sessions.new_context(
            request.session_id,
            request.session_epoch,
            requested,
            forgotten,
            is_follower=is_follower,
            now_ms=now,
        )
    else:
        context = broker.fetch_sessions.new_context(0, -1, requested, [], is_follower=is_follower, now_ms=now)
    if context.kind == "error":
        throttled = _throttled(broker, ctx, version, context, {}, is_follower, waited_ns=0)
        return throttled or FetchResponse(error_code=context.error, session_id=0, responses=[])
    max_bytes = request.max_bytes if version >= 3 else 0x7FFFFFFF
    denied = _denied(broker, ctx, version, context.partitions, is_follower)
    results, total, errored = _read_once(
        broker,
        version,
        context.partitions,
        max_bytes,
        isolation,
        replica,
        client_rack=client_rack,
        denied=denied,
    )
    waited_ns = 0
    # a preferred read replica is answered at once (fetchMessages); found only by a re-read, it waits
    # like any other answer (DelayedFetch.tryComplete does not look for one)
    redirected = any(data.preferred_read_replica >= 0 for data in results.values())
    if (
        request.max_wait_ms > 0
        and len(denied) < len(context.partitions)
        and total < request.min_bytes
        and not (errored or redirected)
    ):
        watch = [broker.partition_watch_key(key, by_id=version >= 13) for key in context.partitions]
        state = {}

        def enough() -> bool:
            # a re-read records no follower progress (Kafka's readFromPurgatory): it was recorded above
            state["read"] = _read_once(
                broker,
                version,
                context.partitions,
                max_bytes,
                isolation,
                replica,
                first=False,
                client_rack=client_rack,
                denied=denied,
            )
            return state["read"][1] >= request.min_bytes or state["read"][2]

        parked = time.perf_counter_ns()
        await broker.purgatory.wait_until(watch, enough, request.max_wait_ms / 1000, clock=broker.clock)
        waited_ns = time.perf_counter_ns() - parked
        results, total, errored = state.get("read", (results, total, errored))
    throttled = _throttled(broker, ctx, version, context, results, is_follower, waited_ns=waited_ns)
    if throttled is not None:
        return throttled
    magic = fetch_magic(version)
    if magic is not None and not is_follower:
        results = {
            key: _down_converted(broker, key, data, magic, context.partitions[key].fetch_offset)
            for key, data in results.items()
        }
    session_id = 0
    if context.kind == "full":
        for key, data in results.items():
            context.partitions[key].must_respond(
                has_records=bool(data.records),
                high_watermark=data.high_watermark,
                log_start_offset=data.log_start_offset,
                error=data.error_code,
                preferred_read_replica=data.preferred_read_replica,
            )
        session_id = broker.fetch_sessions.maybe_create(context.privileged, context.partitions, now)
    elif context.kind == "incremental":
        session_id = context.session.id
        results = {
            key: data
            for key, data in results.items()
            if context.session.partitions[key].must_respond(
                has_records=bool(data.records),
                high_watermark=data.high_watermark,
                log_start_offset=data.log_start_offset,
                error=data.error_code,
                preferred_read_replica=data.preferred_read_replica,
            )
        }
    return FetchResponse(
        error_code=Errors.NONE,
        session_id=session_id,
        responses=_group(version, results),
        node_endpoints=_point_to_leaders(broker, results, ctx.listener) if version >= 16 else [],
    )


def _throttled(broker, ctx, version: int, context, results: dict, is_follower: bool, *, waited_ns: int):
    """A consumer over its byte-rate or request quota gets an empty answer with the throttle time
    (KafkaApis.handleFetchRequest, ``FetchContext.getThrottledResponse``), decided before the session
    learns of this response; None when the fetch goes on. The bytes counted are those of the response
    it would get, before down-conversion (``getResponseSize``), and the time the handler spent apart
    from waiting for data (Kafka counts a delayed fetch's request thread time up to its parking)."""
    quota, quotas = ctx.quota, broker.image.client_quotas
    if quota is None or is_follower or not len(quotas):
        return None
    if context.kind == "incremental":
        session = context.session.partitions
        results = {key: data for key, data in results.items() if session[key].must_respond(
            has_records=bool(data.records), high_watermark=data.high_watermark,
            log_start_offset=data.log_start_offset, error=data.error_code,
            preferred_read_replica=data.preferred_read_replica, update=False)}  # fmt: skip
    would_send = FetchResponse(error_code=Errors.NONE, session_id=0, responses=_group(version, results))
    quota.throttle_ms = fetch_throttle_ms(
        broker.quotas, quotas, ctx, response_bytes=fetch_response_size(version, would_send),
        handler_nanos=max(0, time.perf_counter_ns() - quota.started_ns - waited_ns),
        now_ms=broker.clock.now_ms(),
    )  # fmt: skip
    if quota.throttle_ms <= 0:
        return None
    response = FetchResponse(error_code=Errors.NONE, session_id=context.throttled_session_id(), responses=[])
    set_throttle_time(response, version, quota.throttle_ms)
    return response


def _down_converted(broker, key, data: PartitionData, magic: int, fetch_offset: int) -> PartitionData:
    """Fetch v0-3 carry magic 0/1 only: KafkaApis.handleFetchRequest (Kafka 3.x) down-converts what
    it read (``maybeConvertFetchedData``), refusing with UNSUPPORTED_VERSION where the topic's
    message.downconversion.enable is false and with UNSUPPORTED_COMPRESSION_TYPE for zstd batches."""
    if data.error_code != Errors.NONE or not data.records:
        return data
    partition = broker.partition_by_key(key[0], key[1], by_id=False)
    default = broker.config["log.message.downconversion.enable"]
    enabled = partition.settings.get("message.downconversion.enable", str(default)).lower() == "true"
    if not enabled:
        return _error_data(data.partition_index, Errors.UNSUPPORTED_VERSION)
    try:
        stored = data.records.read() if isinstance(data.records, LogSlice) else data.records
        data.records = down_convert(stored, magic, fetch_offset)
    except UnsupportedCompressionForDownConversion:
        return _error_data(data.partition_index, Errors.UNSUPPORTED_COMPRESSION_TYPE)
    return data


def _point_to_leaders(broker, results: dict, listener: str) -> list:
    """v16+ (KIP-951): a partition refused for a changed leadership names the current leader and
    epoch, from the local replica or else the metadata, and the response carries that leader's
    endpoint with its rack when it is alive (KafkaApis.handleFetchRequest, getCurrentLeader,
    getAliveBrokerNode): a consumer sent to a follower finds its way back to the leader."""
    endpoints = {}
    alive = {node_id: (host, port, rack) for node_id, host, port, rack in broker.alive_brokers(listener)}
    for (topic_id, index), data in results.items():
        if data.error_code not in (Errors.NOT_LEADER_OR_FOLLOWER, Errors.FENCED_LEADER_EPOCH):
            continue
        partition = broker.partition_by_key(topic_id, index, by_id=True)
        if partition is not None:
            leader, epoch = partition.state.leader, partition.leader_epoch
        else:
            topic = broker.topics.by_id(topic_id)
            known = topic is not None and 0 <= index < len(topic.partitions)
            info = topic.partitions[index] if known else None
            leader, epoch = (info.leader, info.leader_epoch) if info is not None else (-1, -1)
        data.current_leader = FetchResponse.LeaderIdAndEpoch(leader_id=leader, leader_epoch=epoch)
        if leader in alive:
            host, port, rack = alive[leader]
            endpoints[leader] = FetchResponse.NodeEndpoint(node_id=leader, host=host, port=port, rack=rack)
    return list(endpoints.values())


def _group(version: int, results: dict) -> list:
    topics: dict = {}
    for (topic_key, _index), data in results.items():
        topics.setdefault(topic_key, []).append(data)
    out = []
    for topic_key, partitions in topics.items():
        if version >= 13:
            out.append(FetchResponse.FetchableTopicResponse(topic_id=topic_key, partitions=partitions))
        else:
            out.append(
                FetchResponse.FetchableTopicResponse(
                    topic=topic_key, topic_id=ZERO_UUID, partitions=partitions
                )
            )
    return out
