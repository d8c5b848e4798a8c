"""Committed offsets and group administration, as Kafka's ``OffsetMetadataManager`` and
``GroupMetadataManager`` decide them: OffsetCommit and TxnOffsetCommit (written first, applied once the
write is done; transactional ones held until their transaction's marker), OffsetFetch, OffsetDelete,
ListGroups and DeleteGroups. Pure functions of the coordinator's state; the writes are effects."""

from __future__ import annotations

from collections.abc import Mapping
from uuid import UUID

from kconform.codecs.constants import ZERO_UUID
from kconform.codecs.errors import Errors

from ..coordinator_runtime import Effect, Reply, Write
from .classic_group import ClassicGroup, GroupState
from .classic_log_records import (
    OffsetCommitValue,
    encode_group_metadata_key,
    encode_offset_commit_key,
    encode_offset_commit_value,
)
from .errors import GroupError
from .events import (
    CommitOffsets,
    CommittedOffset,
    DeleteGroups,
    DeleteOffsets,
    GroupContext,
    GroupsState,
    OffsetsWritten,
    TransactionCompleted,
)

__all__ = ["RULES", "fetch_offsets", "has_pending_transactional_offsets", "list_groups"]

TopicPartition = tuple[str, int]


def _mismatched_topic_id(stored: UUID, expected: UUID) -> bool:
    """``OffsetMetadataManager.isMismatchedTopicId``: both ids known and different."""
    return stored != ZERO_UUID and expected != ZERO_UUID and stored != expected


# ---- OffsetCommit and TxnOffsetCommit ----------------------------------------------------------------


def _group_for_commit(state: GroupsState, event: CommitOffsets):
    group = state.groups.get(event.group_id)
    if group is not None:
        return group
    if event.generation < 0:
        # A commit from outside group management creates a "simple" group (Kafka does the same).
        group = ClassicGroup(event.group_id)
        state.groups[event.group_id] = group
        return group
    if event.producer is not None:
        raise GroupError(Errors.ILLEGAL_GENERATION)
    raise GroupError(Errors.GROUP_ID_NOT_FOUND if event.api_version >= 9 else Errors.ILLEGAL_GENERATION)


def _commit_offsets(state: GroupsState, event: CommitOffsets, ctx: GroupContext) -> list[Effect]:
    """Answers the error per (topic, partition). With ``producer`` the commit is transactional: written
    now, applied when the producer's transaction commits. ``topic_ids`` (OffsetCommit v10: topics named
    by id) are kept with the offsets, as Kafka 4.1 keeps them (``OffsetAndMetadata.topicId``)."""
    if not event.group_id:
        return [Reply(event.waiter, {(t, p): Errors.INVALID_GROUP_ID for t, p, *_ in event.offsets})]
    # KafkaApis answers partitions the cluster does not have before the coordinator sees the rest
    # (handleOffsetCommitRequest, handleTxnOffsetCommitRequest: metadataCache.getPartitionInfo).
    results: dict[TopicPartition, int] = {tp: Errors.UNKNOWN_TOPIC_OR_PARTITION for tp in event.unknown}
    known = [entry for entry in event.offsets if (entry[0], entry[1]) not in event.unknown]
    if not known:
        return [Reply(event.waiter, results)]
    try:
        group = _group_for_commit(state, event)
        code = group.validate_offset_commit(
            event.member_id,
            event.instance_id,
            event.generation,
            event.producer is not None,
            event.api_version,
        )
    except GroupError as exc:
        code = exc.code
    if code != Errors.NONE:
        return [Reply(event.waiter, {**{(t, p): code for t, p, *_ in known}, **results})]
    accepted: list[tuple[TopicPartition, OffsetCommitValue]] = []
    for topic, partition, offset, leader_epoch, metadata in known:
        if metadata is not None and len(metadata.encode()) > ctx.classic.offset_metadata_max_bytes:
            results[(topic, partition)] = Errors.OFFSET_METADATA_TOO_LARGE
        else:
            topic_id = (event.topic_ids or {}).get(topic, ZERO_UUID)
            value = OffsetCommitValue(offset, leader_epoch, metadata or "", ctx.now_ms, topic_id=topic_id)
            accepted.append(((topic, partition), value))
            results[(topic, partition)] = Errors.NONE
    if not accepted:
        return [Reply(event.waiter, results)]
    records = tuple(
        (encode_offset_commit_key(event.group_id, t, p), encode_offset_commit_value(v))
        for (t, p), v in accepted
    )
    then = OffsetsWritten(event.waiter, event.group_id, tuple(accepted), results, event.producer)
    return [Write(event.group_id, records, producer=event.producer, then=then)]


def _offsets_written(state: GroupsState, event: OffsetsWritten, ctx: GroupContext) -> list[Effect]:
    written = event.written
    if written.failed:
        code = written.error or Errors.COORDINATOR_NOT_AVAILABLE
        failed = {tp: (code if result == Errors.NONE else result) for tp, result in event.results.items()}
        return [Reply(event.waiter, failed)]
    for i, (tp, value) in enumerate(event.accepted):
        committed = CommittedOffset(value, written.first_offset + i)
        if event.producer is None:
            state.offsets[event.group_id][tp] = committed
        else:
            pending = state.pending_txn.setdefault((written.partition, event.producer[0]), [])
            pending.append((event.group_id, tp, committed))
    return [Reply(event.waiter, dict(event.results))]


def _transaction_completed(
    state: GroupsState, event: TransactionCompleted, ctx: GroupContext
) -> list[Effect]:
    complete_pending(state, event.offsets_partition, event.producer_id, event.commit)
    return []


def complete_pending(state: GroupsState, partition: int, producer_id: int, commit: bool) -> None:
    """A transaction's marker reached an offsets partition (also on replay): apply or drop its offsets."""
    pending = state.pending_txn.pop((partition, producer_id), [])
    if not commit:
        return
    for group_id, tp, committed in pending:
        current = state.offsets[group_id].get(tp)
        # A plain commit written after the transactional one wins (Kafka compares record offsets).
        if current is None or current.record_offset < committed.record_offset:
            state.offsets[group_id][tp] = committed


def has_pending_transactional_offsets(state: GroupsState, group_id: str, tp: TopicPartition) -> bool:
    return any(g == group_id and t == tp for entries in state.pending_txn.values() for g, t, _ in entries)


# ---- OffsetFetch (a query: nothing changes) ------------------------------------------------------------


def fetch_offsets(
    state: GroupsState,
    group_id: str,
    topics: list[tuple[str, list[int]]] | None,
    *,
    require_stable: bool,
    topic_ids: Mapping[str, UUID] | None = None,
) -> dict[TopicPartition, tuple[int, int, str, int]]:
    """(offset, leader epoch, metadata, error) per partition; ``topics`` None means every partition the
    group has offsets for. With ``topic_ids`` (OffsetFetch v10) an offset committed under another id of
    the topic's name (the topic was deleted and created again) is no offset:
    ``OffsetMetadataManager.fetchOffsets``, ``isOffsetInvalid`` (KAFKA-19154)."""
    committed = state.offsets.get(group_id, {})
    wanted = sorted(committed) if topics is None else [(t, p) for t, parts in topics for p in parts]
    result = {}
    for tp in wanted:
        if require_stable and has_pending_transactional_offsets(state, group_id, tp):
            result[tp] = (-1, -1, "", Errors.UNSTABLE_OFFSET_COMMIT)
            continue
        entry = committed.get(tp)
        expected = (topic_ids or {}).get(tp[0], ZERO_UUID)
        if entry is None or _mismatched_topic_id(entry.value.topic_id, expected):
            result[tp] = (-1, -1, "", Errors.NONE)
        else:
            v = entry.value
            result[tp] = (v.offset, v.leader_epoch, v.metadata, Errors.NONE)
    return result


# ---- OffsetDelete, ListGroups, DeleteGroups ------------------------------------------------------------


def _delete_offsets(state: GroupsState, event: DeleteOffsets, ctx: GroupContext) -> list[Effect]:
    """Answers (top-level error, error per partition)."""
    group = state.groups.get(event.group_id)
    if group is None:
        return [Reply(event.waiter, (Errors.GROUP_ID_NOT_FOUND, {}))]
    code = group.validate_offset_delete()
    if code != Errors.NONE:
        return [Reply(event.waiter, (code, {}))]
    results = {}
    doomed = []
    for topic, partition in event.partitions:
        if not group.is_empty and group.is_subscribed_to(topic):
            results[(topic, partition)] = Errors.GROUP_SUBSCRIBED_TO_TOPIC
        else:
            results[(topic, partition)] = Errors.NONE
            if (topic, partition) in state.offsets.get(event.group_id, {}):
                doomed.append((topic, partition))
    out: list[Effect] = []
    if doomed:
        tombstones = tuple((encode_offset_commit_key(event.group_id, t, p), None) for t, p in doomed)
        out.append(Write(event.group_id, tombstones))
        for tp in doomed:
            state.offsets[event.group_id].pop(tp, None)
    out.append(Reply(event.waiter, (Errors.NONE, results)))
    return out


def list_groups(state: GroupsState, states: list[str], types: list[str]) -> list[tuple[str, str, str, str]]:
    wanted_states = {s.lower() for s in states}
    wanted_types = {t.lower() for t in types}
    listed = []
    for group_id, group in state.groups.items():
        name = group.state_name
        if wanted_states and name.lower() not in wanted_states:
            continue
        if wanted_types and group.group_type.lower() not in wanted_types:
            continue
        listed.append((group_id, group.protocol_type or "", name, group.group_type))
    return listed


def _delete_groups(state: GroupsState, event: DeleteGroups, ctx: GroupContext) -> list[Effect]:
    out: list[Effect] = []
    results = []
    for group_id in event.group_ids:
        group = state.groups.get(group_id)
        if group is None:
            results.append(Errors.GROUP_ID_NOT_FOUND)
            continue
        code = group.validate_delete_group()
        if code != Errors.NONE:
            results.append(code)
            continue
        records = [
            (encode_offset_commit_key(group_id, t, p), None) for t, p in state.offsets.get(group_id, {})
        ]
        if isinstance(group, ClassicGroup):
            records.append((encode_group_metadata_key(group_id), None))
        else:
            records.extend(group.tombstones())
        out.append(Write(group_id, tuple(records)))
        state.offsets.pop(group_id, None)
        del state.groups[group_id]
        if isinstance(group, ClassicGroup):
            group.transition(GroupState.DEAD, ctx.now_ms)
        results.append(Errors.NONE)
    out.append(Reply(event.waiter, results))
    return out


RULES = {
    CommitOffsets: _commit_offsets,
    OffsetsWritten: _offsets_written,
    TransactionCompleted: _transaction_completed,
    DeleteOffsets: _delete_offsets,
    DeleteGroups: _delete_groups,
}
