"""Committed offsets: OffsetCommit (8), OffsetFetch (9), TxnOffsetCommit (28), OffsetDelete (47).

Validation and storage are the group coordinator's; this module does what ``KafkaApis`` does around it.
For a commit (``handleOffsetCommitRequest``, ``handleTxnOffsetCommitRequest``): topics the cluster does
not know are UNKNOWN_TOPIC_OR_PARTITION, and so are partitions a known topic lacks, before the
coordinator sees the rest; the answer is Kafka's ``OffsetCommitResponse.Builder``: those errors first,
then the coordinator's answer merged into them (a topic already there gets its partitions appended).

OffsetCommit v10 and OffsetFetch v10 (KIP-848) name topics by id: the name is looked up in the cluster's
metadata (``metadataCache.getTopicName``), and an id that names no topic (the zero id included) is
UNKNOWN_TOPIC_ID for each of its partitions. The responses name topics by id too (the name is not on the
wire from v10), and a commit keeps the id with the offset (KAFKA-19141), so that a fetch by id of a topic
deleted and created again under the same name finds no offset (KAFKA-19154). v10 is not tied to the
group's protocol: the broker takes it from any group (Kafka's Java consumer sends it only from the
consumer protocol, when it knows every topic id, ``CommitRequestManager``).

TxnOffsetCommit makes sure the offsets partition is in the producer's transaction before the coordinator
sees the commit (``CoordinatorPartitionWriter.maybeStartTransactionVerification``, through
``AddPartitionsToTxnManager.txnOffsetCommitRequestVersionToTransactionSupportedOperation``): v5 adds it
(transactions v2: a TxnOffsetCommit does AddOffsetsToTxn's job), v4 and below verify it when
``transaction.partition.verification.enable`` is set."""

from __future__ import annotations

from uuid import UUID

from kconform.codecs.errors import Errors
from kconform.codecs.messages import (
    OffsetCommitResponse,
    OffsetDeleteResponse,
    OffsetFetchResponse,
    TxnOffsetCommitResponse,
)

from ..security.acls import Operation, ResourceType
from ..security.authorization import allowed, filter_allowed
from ..transactions.partition_verification import add_or_verify_partitions
from . import handles

ZERO_UUID = UUID(int=0)
_TOPIC_IDS_FROM = 10  # OffsetCommitResponse.useTopicIds, OffsetFetchRequest.TOPIC_ID_MIN_VERSION


class _CommitAnswer:
    """Kafka's OffsetCommitResponse.Builder (and TxnOffsetCommitResponse.Builder): response topics keyed
    by topic id (v10+) or by name."""

    def __init__(self, by_id: bool, topic_cls, partition_cls) -> None:
        self.by_id = by_id
        self.topic_cls, self.partition_cls = topic_cls, partition_cls
        self.topics: list = []
        self._index: dict = {}

    def _new_topic(self, topic_id: UUID, name: str):
        if self.by_id:
            return self.topic_cls(name=name, topic_id=topic_id, partitions=[])
        return self.topic_cls(name=name, partitions=[])

    def add(self, topic_id: UUID, name: str, partitions: list[int], code: int) -> None:
        key = topic_id if self.by_id else name
        topic = self._index.get(key)
        if topic is None:
            topic = self._index[key] = self._new_topic(topic_id, name)
            self.topics.append(topic)
        topic.partitions += [self.partition_cls(partition_index=p, error_code=code) for p in partitions]

    def merge(self, answered: list[tuple[UUID, str, list[tuple[int, int]]]]) -> None:
        """The coordinator's answer, one entry per topic it was given: taken as it is when nothing was
        answered before it, else merged into the topics already there."""
        fresh = not self.topics
        for topic_id, name, codes in answered:
            parts = [self.partition_cls(partition_index=p, error_code=c) for p, c in codes]
            existing = None if fresh else self._index.get(topic_id if self.by_id else name)
            if existing is not None:
                existing.partitions += parts
                continue
            topic = self._new_topic(topic_id, name)
            topic.partitions = parts
            self.topics.append(topic)
            if not fresh:
                self._index[topic_id if self.by_id else name] = topic


def _topic_name(broker, topic_id: UUID) -> str:
    """``metadataCache.getTopicName``: "" for an id no topic has."""
    topic = broker.topics.by_id(topic_id) if topic_id != ZERO_UUID else None
    return "" if topic is None else topic.name


def _refuse_all(topics, by_id: bool, answer: _CommitAnswer, code: int) -> list:
    """OffsetCommitRequest.getErrorResponse (and TxnOffsetCommit's): every partition asked for gets
    ``code``."""
    for t in topics:
        answer.add(
            t.topic_id if by_id else ZERO_UUID, t.name, [p.partition_index for p in t.partitions], code
        )
    return answer.topics


def _sort_out(broker, ctx, topics, by_id: bool, answer: _CommitAnswer) -> list[tuple[UUID, str, list]]:
    """The request's topics the coordinator should see, as (topic id, name, partitions); the others
    are answered in ``answer`` (unknown id; no READ on the topic, checked before whether it exists, as
    KafkaApis does; unknown topic; unknown partition)."""
    accepted = []
    names = [_topic_name(broker, t.topic_id) if by_id else t.name for t in topics]
    readable = filter_allowed(broker, ctx, Operation.READ, ResourceType.TOPIC, filter(None, names))
    for t, name in zip(topics, names, strict=True):
        topic_id = t.topic_id if by_id else ZERO_UUID
        indexes = [p.partition_index for p in t.partitions]
        if by_id and not name:
            answer.add(topic_id, name, indexes, Errors.UNKNOWN_TOPIC_ID)
        elif name not in readable:
            answer.add(topic_id, name, indexes, Errors.TOPIC_AUTHORIZATION_FAILED)
        elif name not in broker.topics:
            answer.add(topic_id, name, indexes, Errors.UNKNOWN_TOPIC_OR_PARTITION)
        else:
            valid = []
            partition_count = len(broker.topics.get(name).partitions)
            for p in t.partitions:
                # metadataCache.contains: the partition exists in the cluster, wherever it leads
                if not 0 <= p.partition_index < partition_count:
                    answer.add(topic_id, name, [p.partition_index], Errors.UNKNOWN_TOPIC_OR_PARTITION)
                else:
                    valid.append(p)
            if valid:
                accepted.append((topic_id, name, valid))
    return accepted


def _entries(accepted, version_has_epoch: bool) -> list[tuple[str, int, int, int, str | None]]:
    return [
        (
            name,
            p.partition_index,
            p.committed_offset,
            p.committed_leader_epoch if version_has_epoch else -1,
            p.committed_metadata,
        )
        for _, name, partitions in accepted
        for p in partitions
    ]


def _answered(accepted, results: dict) -> list[tuple[UUID, str, list[tuple[int, int]]]]:
    return [
        (topic_id, name, [(p.partition_index, results[(name, p.partition_index)]) for p in partitions])
        for topic_id, name, partitions in accepted
    ]


@handles(8)
async def offset_commit(broker, ctx, request) -> OffsetCommitResponse:
    version = ctx.api_version
    by_id = version >= _TOPIC_IDS_FROM
    R = OffsetCommitResponse  # noqa: N806
    answer = _CommitAnswer(by_id, R.OffsetCommitResponseTopic, R.OffsetCommitResponsePartition)
    if not allowed(broker, ctx, Operation.READ, ResourceType.GROUP, request.group_id):
        refused = _refuse_all(request.topics, by_id, answer, Errors.GROUP_AUTHORIZATION_FAILED)
        return OffsetCommitResponse(topics=refused)
    accepted = _sort_out(broker, ctx, request.topics, by_id, answer)
    if accepted:
        results = await broker.group_coordinator.commit_offsets(
            group_id=request.group_id,
            generation=request.generation_id_or_member_epoch if version >= 1 else -1,
            member_id=request.member_id if version >= 1 else "",
            instance_id=request.group_instance_id if version >= 7 else None,
            offsets=_entries(accepted, version >= 6),
            api_version=version,
            topic_ids={name: topic_id for topic_id, name, _ in accepted} if by_id else None,
        )
        answer.merge(_answered(accepted, results))
    return OffsetCommitResponse(topics=answer.topics)


# How the group coordinator reports a failed transactional write or verification
# (CoordinatorOperationExceptionHelper.handleOperationException).
_OPERATION_ERRORS = {
    Errors.NETWORK_EXCEPTION: Errors.COORDINATOR_LOAD_IN_PROGRESS,
    Errors.UNKNOWN_TOPIC_OR_PARTITION: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.NOT_ENOUGH_REPLICAS: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.REQUEST_TIMED_OUT: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.NOT_LEADER_OR_FOLLOWER: Errors.NOT_COORDINATOR,
    Errors.KAFKA_STORAGE_ERROR: Errors.NOT_COORDINATOR,
    Errors.MESSAGE_TOO_LARGE: Errors.UNKNOWN_SERVER_ERROR,
    Errors.RECORD_LIST_TOO_LARGE: Errors.UNKNOWN_SERVER_ERROR,
    Errors.INVALID_FETCH_SIZE: Errors.UNKNOWN_SERVER_ERROR,
}


async def _offsets_partition_in_transaction(broker, version: int, request) -> int:
    """ReplicaManager.maybeSendPartitionToTransactionCoordinator for the group's offsets partition:
    v5 (ADD_PARTITION) adds it to the transaction with the client at transaction version 2 (Kafka sends
    AddPartitionsToTxn v5 with verifyOnly false); v4 and below only verify it, and only with
    transaction.partition.verification.enable. No check when the producer already has an open
    transaction in the partition at this epoch (UnifiedLog.hasOngoingTransaction); an epoch below the
    partition's is INVALID_PRODUCER_EPOCH (maybeStartTransactionVerification). The coordinator's answer
    is translated as AddPartitionsToTxnManager does: PRODUCER_FENCED is INVALID_PRODUCER_EPOCH, and
    TRANSACTION_ABORTABLE is INVALID_TXN_STATE for v3 and below (DEFAULT_ERROR)."""
    adds = version >= 5
    if not adds and not broker.config["transaction.partition.verification.enable"]:
        return Errors.NONE
    offsets = broker.consumer_offsets
    offsets.ensure()
    index = offsets.partition_for(request.group_id)
    partition = broker.partition(offsets.name, index)
    if partition is None:
        return Errors.NOT_LEADER_OR_FOLLOWER
    pid, epoch = request.producer_id, request.producer_epoch
    entry = partition.log.producer_state(pid)
    if entry is not None and epoch < entry.producer_epoch:
        return Errors.INVALID_PRODUCER_EPOCH
    if entry is not None and entry.current_txn_first_offset is not None and entry.producer_epoch == epoch:
        return Errors.NONE
    tp = (offsets.name, index)
    codes = await add_or_verify_partitions(
        broker, request.transactional_id, pid, epoch, {tp}, verify_only=not adds, transaction_version=2
    )
    code = codes[tp]
    if not adds and code == Errors.TRANSACTION_ABORTABLE and version < 4:
        code = Errors.INVALID_TXN_STATE
    return Errors.INVALID_PRODUCER_EPOCH if code == Errors.PRODUCER_FENCED else code


@handles(28)
async def txn_offset_commit(broker, ctx, request) -> TxnOffsetCommitResponse:
    version = ctx.api_version
    R = TxnOffsetCommitResponse  # noqa: N806
    answer = _CommitAnswer(False, R.TxnOffsetCommitResponseTopic, R.TxnOffsetCommitResponsePartition)
    # KafkaApis.handleTxnOffsetCommitRequest: WRITE on the transactional id, then READ on the group
    refusal = Errors.NONE
    if not allowed(broker, ctx, Operation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id):
        refusal = Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    elif not allowed(broker, ctx, Operation.READ, ResourceType.GROUP, request.group_id):
        refusal = Errors.GROUP_AUTHORIZATION_FAILED
    if refusal != Errors.NONE:
        return TxnOffsetCommitResponse(topics=_refuse_all(request.topics, False, answer, refusal))
    accepted = _sort_out(broker, ctx, request.topics, False, answer)
    if not accepted:
        return TxnOffsetCommitResponse(topics=answer.topics)
    # GroupCoordinatorService.commitTransactionalOffsets: an empty group id first, then the
    # transaction (scheduleTransactionalWriteOperation), then the group's own rules.
    code = (
        await _offsets_partition_in_transaction(broker, version, request) if request.group_id else Errors.NONE
    )
    if code != Errors.NONE:
        code = _OPERATION_ERRORS.get(code, code)
        if version < 2 and code == Errors.COORDINATOR_LOAD_IN_PROGRESS:
            code = Errors.COORDINATOR_NOT_AVAILABLE  # handleTxnOffsetCommitRequest, for 0.11 to 2.0 clients
        results = {(name, p.partition_index): code for _, name, parts in accepted for p in parts}
    else:
        results = await broker.group_coordinator.commit_offsets(
            group_id=request.group_id,
            generation=request.generation_id if version >= 3 else -1,
            member_id=request.member_id if version >= 3 else "",
            instance_id=request.group_instance_id if version >= 3 else None,
            offsets=_entries(accepted, version >= 2),
            api_version=version,
            producer=(request.producer_id, request.producer_epoch),
            transactional_id=request.transactional_id,
        )
    answer.merge(_answered(accepted, results))
    return TxnOffsetCommitResponse(topics=answer.topics)


def _member_error(broker, group_id: str, member: tuple[str | None, int] | None) -> int:
    """OffsetFetch v9+'s member check (``validateOffsetFetch``): the member id and epoch, when given,
    must be the group's."""
    group = broker.group_coordinator.groups.get(group_id)
    if group is not None and member is not None:
        return group.validate_offset_fetch(member[0], member[1], 9)
    if group is None and member is not None and member[0] is not None and member[1] >= 0:
        return Errors.GROUP_ID_NOT_FOUND
    return Errors.NONE


Fetched = tuple[UUID, str, list[tuple[int, int, int, str, int]]]  # id, name, (partition, offset, ...)


def _fetch_topics(broker, ctx, group_id: str, wanted, require_stable: bool, by_id: bool) -> list[Fetched]:
    """The committed offsets of ``wanted`` [(topic id, name, partitions)], one answer per topic asked
    for (OffsetMetadataManager.fetchOffsets), or of every partition the group has when ``wanted`` is
    None (fetchAllOffsets; named by id from v10, where a topic the cluster no longer has is left out,
    as ``KafkaApis.fetchAllOffsetsForGroup`` does). Topics the principal may not DESCRIBE are left out
    of an all-topics answer, and answered TOPIC_AUTHORIZATION_FAILED after the others when named."""
    coordinator = broker.group_coordinator
    if wanted is None:
        found = coordinator.fetch_offsets(group_id, None, require_stable=require_stable)
        grouped: dict[str, list] = {}
        for (topic, partition), entry in found.items():
            grouped.setdefault(topic, []).append((partition, *entry))
        out = []
        for name, parts in grouped.items():
            topic = broker.topics.get(name) if by_id else None
            if by_id and topic is None:
                continue
            out.append((topic.topic_id if topic is not None else ZERO_UUID, name, parts))
        described = filter_allowed(broker, ctx, Operation.DESCRIBE, ResourceType.TOPIC, (t[1] for t in out))
        return [entry for entry in out if entry[1] in described]
    described = filter_allowed(broker, ctx, Operation.DESCRIBE, ResourceType.TOPIC, (t[1] for t in wanted))
    refused = [
        (topic_id, name, [(p, -1, -1, "", Errors.TOPIC_AUTHORIZATION_FAILED) for p in parts])
        for topic_id, name, parts in wanted
        if name not in described
    ]
    wanted = [entry for entry in wanted if entry[1] in described]
    found = coordinator.fetch_offsets(
        group_id,
        [(name, list(parts)) for _, name, parts in wanted],
        require_stable=require_stable,
        topic_ids={name: topic_id for topic_id, name, _ in wanted} if by_id else None,
    )
    answered = [(topic_id, name, [(p, *found[(name, p)]) for p in parts]) for topic_id, name, parts in wanted]
    return answered + refused


@handles(9)
async def offset_fetch(broker, ctx, request) -> OffsetFetchResponse:
    version = ctx.api_version
    require_stable = request.require_stable if version >= 7 else False
    R = OffsetFetchResponse  # noqa: N806
    if version < 8:
        topics = request.topics if (version >= 2 or request.topics is not None) else []
        wanted = None if topics is None else [(ZERO_UUID, t.name, t.partition_indexes) for t in topics]
        if not allowed(broker, ctx, Operation.DESCRIBE, ResourceType.GROUP, request.group_id):
            # OffsetFetchResponse: the group's error at the top (below v2 the field is not written)
            return OffsetFetchResponse(error_code=Errors.GROUP_AUTHORIZATION_FAILED, topics=[])
        found = _fetch_topics(broker, ctx, request.group_id, wanted, require_stable, False)
        return OffsetFetchResponse(
            error_code=Errors.NONE,
            topics=[
                R.OffsetFetchResponseTopic(
                    name=name,
                    partitions=[
                        R.OffsetFetchResponsePartition(
                            partition_index=p,
                            committed_offset=o,
                            committed_leader_epoch=e if version >= 5 else -1,
                            metadata=m,
                            error_code=code,
                        )
                        for p, o, e, m, code in parts
                    ],
                )
                for _, name, parts in found
            ],
        )
    by_id = version >= _TOPIC_IDS_FROM
    groups = []
    for g in request.groups:
        member = (g.member_id, g.member_epoch) if version >= 9 else None
        if not allowed(broker, ctx, Operation.DESCRIBE, ResourceType.GROUP, g.group_id):
            # KafkaApis.handleOffsetFetchRequest: DESCRIBE on each group
            groups.append(
                R.OffsetFetchResponseGroup(
                    group_id=g.group_id, error_code=Errors.GROUP_AUTHORIZATION_FAILED, topics=[]
                )
            )
            continue
        wanted, unknown_ids = None, []
        if g.topics is not None:
            # KafkaApis.fetchOffsetsForGroup: an id no topic has is UNKNOWN_TOPIC_ID, answered after
            # the coordinator's topics (and not at all when the group itself is in error)
            wanted = []
            for t in g.topics:
                name = _topic_name(broker, t.topic_id) if by_id else t.name
                if by_id and not name:
                    unknown_ids.append(
                        R.OffsetFetchResponseTopics(
                            name=name,
                            topic_id=t.topic_id,
                            partitions=[
                                R.OffsetFetchResponsePartitions(
                                    partition_index=p,
                                    committed_offset=-1,
                                    committed_leader_epoch=-1,
                                    metadata="",
                                    error_code=Errors.UNKNOWN_TOPIC_ID,
                                )
                                for p in t.partition_indexes
                            ],
                        )
                    )
                else:
                    wanted.append((t.topic_id if by_id else ZERO_UUID, name, t.partition_indexes))
        error = _member_error(broker, g.group_id, member)
        if error != Errors.NONE:
            groups.append(R.OffsetFetchResponseGroup(group_id=g.group_id, error_code=error, topics=[]))
            continue
        found = _fetch_topics(broker, ctx, g.group_id, wanted, require_stable, by_id)
        topics = [
            R.OffsetFetchResponseTopics(
                name=name,
                topic_id=topic_id,
                partitions=[
                    R.OffsetFetchResponsePartitions(
                        partition_index=p,
                        committed_offset=o,
                        committed_leader_epoch=e,
                        metadata=m,
                        error_code=code,
                    )
                    for p, o, e, m, code in parts
                ],
            )
            for topic_id, name, parts in found
        ]
        groups.append(
            R.OffsetFetchResponseGroup(
                group_id=g.group_id, error_code=Errors.NONE, topics=topics + unknown_ids
            )
        )
    return OffsetFetchResponse(groups=groups)


@handles(47)
async def offset_delete(broker, ctx, request) -> OffsetDeleteResponse:
    # KafkaApis.handleOffsetDeleteRequest: DELETE on the group, then READ on each topic
    if not allowed(broker, ctx, Operation.DELETE, ResourceType.GROUP, request.group_id):
        return OffsetDeleteResponse(error_code=Errors.GROUP_AUTHORIZATION_FAILED)
    readable = filter_allowed(
        broker, ctx, Operation.READ, ResourceType.TOPIC, (t.name for t in request.topics)
    )
    wanted = [(t.name, p.partition_index) for t in request.topics if t.name in readable for p in t.partitions]
    error, results = await broker.group_coordinator.delete_offsets(request.group_id, wanted)
    if error != Errors.NONE:
        return OffsetDeleteResponse(error_code=error)
    results = dict(results)
    for t in request.topics:
        if t.name not in readable:
            results.update(
                dict.fromkeys(
                    ((t.name, p.partition_index) for p in t.partitions), Errors.TOPIC_AUTHORIZATION_FAILED
                )
            )
    return OffsetDeleteResponse(
        error_code=Errors.NONE,
        topics=[
            OffsetDeleteResponse.OffsetDeleteResponseTopic(
                name=t.name,
                partitions=[
                    OffsetDeleteResponse.OffsetDeleteResponsePartition(
                        partition_index=p.partition_index, error_code=results[(t.name, p.partition_index)]
                    )
                    for p in t.partitions
                ],
            )
            for t in request.topics
        ],
    )
