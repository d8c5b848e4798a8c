"""Committed offsets: OffsetCommit (8), OffsetFetch (9), TxnOffsetCommit (28), OffsetDelete (47).

Validation and storage are the group coordinator's; this module reads the version-dependent request
shapes (single group before OffsetFetch v8, several after) and builds the answers. As in
``KafkaApis.handleOffsetCommitRequest``, topics the cluster does not know are answered
UNKNOWN_TOPIC_OR_PARTITION by the coordinator's commit."""

from __future__ import annotations

from kconform.codecs.errors import Errors
from kconform.codecs.messages import (
    OffsetCommitResponse,
    OffsetDeleteResponse,
    OffsetFetchResponse,
    TxnOffsetCommitResponse,
)

from . import handles


def _entries(topics, version_has_epoch: bool) -> list[tuple[str, int, int, int, str | None]]:
    return [
        (
            t.name,
            p.partition_index,
            p.committed_offset,
            p.committed_leader_epoch if version_has_epoch else -1,
            p.committed_metadata,
        )
        for t in topics
        for p in t.partitions
    ]


def _by_topic(topics, results: dict, topic_cls, partition_cls) -> list:
    return [
        topic_cls(
            name=t.name,
            partitions=[
                partition_cls(
                    partition_index=p.partition_index, error_code=results[(t.name, p.partition_index)]
                )
                for p in t.partitions
            ],
        )
        for t in topics
    ]


@handles(8)
async def offset_commit(broker, ctx, request) -> OffsetCommitResponse:
    version = ctx.api_version
    results = broker.group_coordinator.commit_offsets(
        group_id=request.group_id,
        generation=request.generation_id_or_member_epoch if version >= 1 else -1,
        member_id=request.member_id if version >= 1 else "",
        instance_id=request.group_instance_id if version >= 7 else None,
        offsets=_entries(request.topics, version >= 6),
        api_version=version,
    )
    return OffsetCommitResponse(
        topics=_by_topic(
            request.topics,
            results,
            OffsetCommitResponse.OffsetCommitResponseTopic,
            OffsetCommitResponse.OffsetCommitResponsePartition,
        )
    )


@handles(28)
async def txn_offset_commit(broker, ctx, request) -> TxnOffsetCommitResponse:
    version = ctx.api_version
    results = broker.group_coordinator.commit_offsets(
        group_id=request.group_id,
        generation=request.generation_id if version >= 3 else -1,
        member_id=request.member_id if version >= 3 else "",
        instance_id=request.group_instance_id if version >= 3 else None,
        offsets=_entries(request.topics, version >= 2),
        api_version=version,
        producer=(request.producer_id, request.producer_epoch),
        transactional_id=request.transactional_id,
    )
    return TxnOffsetCommitResponse(
        topics=_by_topic(
            request.topics,
            results,
            TxnOffsetCommitResponse.TxnOffsetCommitResponseTopic,
            TxnOffsetCommitResponse.TxnOffsetCommitResponsePartition,
        )
    )


def _fetch_group(broker, group_id: str, topics, require_stable: bool, member: tuple[str | None, int] | None):
    """(group error, [(topic, [(partition, offset, epoch, metadata, error)])])."""
    coordinator = broker.group_coordinator
    group = coordinator.groups.get(group_id)
    error = Errors.NONE
    if group is not None and member is not None:
        error = group.validate_offset_fetch(member[0], member[1], 9)
    elif group is None and member is not None and member[0] is not None and member[1] >= 0:
        error = Errors.GROUP_ID_NOT_FOUND
    if error != Errors.NONE:
        return error, []
    wanted = None if topics is None else [(t.name, list(t.partition_indexes)) for t in topics]
    found = coordinator.fetch_offsets(group_id, wanted, require_stable=require_stable)
    grouped: dict[str, list] = {}
    for (topic, partition), entry in found.items():
        grouped.setdefault(topic, []).append((partition, *entry))
    if wanted is not None:  # answer in the order asked
        grouped = {name: grouped.get(name, []) for name, _ in wanted}
    return Errors.NONE, list(grouped.items())


@handles(9)
async def offset_fetch(broker, ctx, request) -> OffsetFetchResponse:
    version = ctx.api_version
    require_stable = request.require_stable if version >= 7 else False
    if version < 8:
        topics = request.topics if (version >= 2 or request.topics is not None) else []
        error, found = _fetch_group(broker, request.group_id, topics, require_stable, None)
        if version < 2 and error != Errors.NONE:
            return OffsetFetchResponse(topics=[])
        return OffsetFetchResponse(
            error_code=error,
            topics=[
                OffsetFetchResponse.OffsetFetchResponseTopic(
                    name=name,
                    partitions=[
                        OffsetFetchResponse.OffsetFetchResponsePartition(
                            partition_index=p,
                            committed_offset=o,
                            committed_leader_epoch=e if version >= 5 else -1,
                            metadata=m,
                            error_code=code,
                        )
                        for p, o, e, m, code in parts
                    ],
                )
                for name, parts in found
            ],
        )
    groups = []
    for g in request.groups:
        member = (g.member_id, g.member_epoch) if version >= 9 else None
        error, found = _fetch_group(broker, g.group_id, g.topics, require_stable, member)
        groups.append(
            OffsetFetchResponse.OffsetFetchResponseGroup(
                group_id=g.group_id,
                error_code=error,
                topics=[
                    OffsetFetchResponse.OffsetFetchResponseTopics(
                        name=name,
                        partitions=[
                            OffsetFetchResponse.OffsetFetchResponsePartitions(
                                partition_index=p,
                                committed_offset=o,
                                committed_leader_epoch=e,
                                metadata=m,
                                error_code=code,
                            )
                            for p, o, e, m, code in parts
                        ],
                    )
                    for name, parts in found
                ],
            )
        )
    return OffsetFetchResponse(groups=groups)


@handles(47)
async def offset_delete(broker, ctx, request) -> OffsetDeleteResponse:
    wanted = [(t.name, p.partition_index) for t in request.topics for p in t.partitions]
    error, results = broker.group_coordinator.delete_offsets(request.group_id, wanted)
    if error != Errors.NONE:
        return OffsetDeleteResponse(error_code=error)
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
