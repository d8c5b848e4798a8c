"""Rules of committed offsets and group administration: OffsetCommit, OffsetFetch, OffsetDelete,
LeaveGroup, DescribeGroups, ListGroups and DeleteGroups, as Kafka decides them (OffsetMetadataManager,
ClassicGroup.validateOffsetCommit, GroupMetadataManager, KafkaApis)."""

from __future__ import annotations

import asyncio
import uuid

from kconform.codecs.constants import ZERO_UUID
from kconform.codecs.errors import Errors, error_for
from kconform.codecs.messages import (
    OffsetCommitRequest,
    OffsetFetchRequest,
)

from .catalogue import Rule, add, rule
from .rules_groups import (
    call,
    joined_member,
    make_topic,
    setup,
    stable_group,
)
from .session import RuleSession, SetupFailed, expect, expect_error

OFFSET_COMMIT, OFFSET_FETCH, OFFSET_DELETE = 8, 9, 47
_F = "offsets"
_G = "groups"


def commit_request(
    group,
    topic,
    topic_id,
    offsets: dict[int, int],
    *,
    generation=-1,
    member="",
    instance=None,
    metadata="",
    leader_epoch=-1,
) -> OffsetCommitRequest:
    return OffsetCommitRequest(
        group_id=group,
        generation_id_or_member_epoch=generation,
        member_id=member,
        group_instance_id=instance,
        topics=[
            OffsetCommitRequest.OffsetCommitRequestTopic(
                name=topic,
                topic_id=topic_id or ZERO_UUID,
                partitions=[
                    OffsetCommitRequest.OffsetCommitRequestPartition(
                        partition_index=p,
                        committed_offset=o,
                        committed_metadata=metadata,
                        committed_leader_epoch=leader_epoch,
                    )
                    for p, o in offsets.items()
                ],
            )
        ],
    )


async def commit(s: RuleSession, client, version, group, topic, topic_id, offsets, **kw) -> dict[int, int]:
    body = await call(
        s, client, OFFSET_COMMIT, version, commit_request(group, topic, topic_id, offsets, **kw)
    )
    return {p.partition_index: p.error_code for t in body.topics for p in t.partitions}


def fetch_request(
    version: int, groups: dict[str, tuple[str, object, list[int]] | None], *, require_stable=False
) -> OffsetFetchRequest:
    """One group below v8; from v8 any number. A group's value None asks for all its offsets."""
    if version < 8:
        ((group, topics),) = groups.items()
        return OffsetFetchRequest(
            group_id=group,
            topics=None
            if topics is None
            else [OffsetFetchRequest.OffsetFetchRequestTopic(name=topics[0], partition_indexes=topics[2])],
            require_stable=require_stable,
        )
    return OffsetFetchRequest(
        groups=[
            OffsetFetchRequest.OffsetFetchRequestGroup(
                group_id=group,
                topics=None
                if topics is None
                else [
                    OffsetFetchRequest.OffsetFetchRequestTopics(
                        name=topics[0], topic_id=topics[1] or ZERO_UUID, partition_indexes=topics[2]
                    )
                ],
            )
            for group, topics in groups.items()
        ],
        require_stable=require_stable,
    )


def fetched(version: int, body, group_index: int = 0) -> tuple[int, dict[int, tuple[int, str, int]]]:
    """(the group's error, {partition: (offset, metadata, error)})."""
    if version < 8:
        topics, error = body.topics, (body.error_code if version >= 2 else Errors.NONE)
    else:
        g = body.groups[group_index]
        topics, error = g.topics, g.error_code
    return error, {
        p.partition_index: (p.committed_offset, p.metadata, p.error_code)
        for t in topics
        for p in t.partitions
    }


async def fetch(s: RuleSession, client, version, group, topic, topic_id, partitions, **kw):
    body = await call(
        s, client, OFFSET_FETCH, version, fetch_request(version, {group: (topic, topic_id, partitions)}, **kw)
    )
    return fetched(version, body)


async def simple_commit(s: RuleSession, group: str, topic: str, topic_id, offsets, **kw):
    """Offsets committed outside any membership, at the newest version the target serves."""
    client = await s.coordinator(group)
    for _ in range(20):  # a new topic may reach the coordinator's metadata a moment after the others
        codes = await commit(s, client, setup(s, OFFSET_COMMIT), group, topic, topic_id, offsets, **kw)
        if Errors.UNKNOWN_TOPIC_OR_PARTITION not in codes.values():
            break
        await asyncio.sleep(0.25)
    if any(codes.values()):
        raise SetupFailed(f"committing offsets for {group}: {codes}")
    return client


# ---- OffsetCommit --------------------------------------------------------------------------------------


@rule(
    "offsets.simple-commit-then-fetch",
    api=OFFSET_COMMIT,
    versions=(2, 10),
    family=_F,
    source="OffsetMetadataManager.commitOffset",
)
async def simple_commit_fetch(s: RuleSession, version: int) -> None:
    """Offsets committed with generation -1 and no member id (outside any membership) are NONE and read
    back by OffsetFetch with their metadata."""
    topic, topic_id, _ = await make_topic(s, 2)
    group = s.name("g")
    client = await s.coordinator(group)
    codes = await commit(s, client, version, group, topic, topic_id, {0: 42, 1: 7}, metadata="m")
    expect("error codes", codes, {0: Errors.NONE, 1: Errors.NONE})
    _, got = await fetch(s, client, setup(s, OFFSET_FETCH), group, topic, topic_id, [0, 1])
    expect("fetched", got, {0: (42, "m", Errors.NONE), 1: (7, "m", Errors.NONE)})


@rule(
    "offsets.commit-unknown-topic",
    api=OFFSET_COMMIT,
    versions=(2, 9),
    family=_F,
    source="KafkaApis.handleOffsetCommitRequest metadataCache.getPartitionInfo",
)
async def commit_unknown_topic(s: RuleSession, version: int) -> None:
    """An offset committed for a topic that does not exist is UNKNOWN_TOPIC_OR_PARTITION."""
    group = s.name("g")
    codes = await commit(s, await s.coordinator(group), version, group, s.name("t"), None, {0: 1})
    expect("error codes", codes, {0: Errors.UNKNOWN_TOPIC_OR_PARTITION})


@rule(
    "offsets.commit-unknown-topic-id",
    api=OFFSET_COMMIT,
    versions=(10, 10),
    family=_F,
    since="4.1",
    source="KafkaApis.handleOffsetCommitRequest metadataCache.getTopicName",
)
async def commit_unknown_topic_id(s: RuleSession, version: int) -> None:
    """From v10, an offset committed for a topic id no topic has is UNKNOWN_TOPIC_ID."""
    group = s.name("g")
    codes = await commit(s, await s.coordinator(group), version, group, "", uuid.uuid4(), {0: 1})
    expect("error codes", codes, {0: Errors.UNKNOWN_TOPIC_ID})


@rule(
    "offsets.commit-unknown-partition",
    api=OFFSET_COMMIT,
    versions=(2, 10),
    family=_F,
    source="KafkaApis.handleOffsetCommitRequest metadataCache.getPartitionInfo",
)
async def commit_unknown_partition(s: RuleSession, version: int) -> None:
    """An offset committed for a partition the topic does not have is UNKNOWN_TOPIC_OR_PARTITION, while the
    other partitions of the request are committed."""
    topic, topic_id, _ = await make_topic(s, 1)
    group = s.name("g")
    codes = await commit(s, await s.coordinator(group), version, group, topic, topic_id, {0: 1, 99: 1})
    expect("error codes", codes, {0: Errors.NONE, 99: Errors.UNKNOWN_TOPIC_OR_PARTITION})


@rule(
    "offsets.commit-metadata-too-large",
    api=OFFSET_COMMIT,
    versions=(2, 10),
    family=_F,
    source="OffsetMetadataManager.commitOffset offsetMetadataMaxSize",
)
async def commit_metadata_too_large(s: RuleSession, version: int) -> None:
    """An offset whose metadata is longer than offset.metadata.max.bytes (4096) is
    OFFSET_METADATA_TOO_LARGE."""
    topic, topic_id, _ = await make_topic(s, 1)
    group = s.name("g")
    codes = await commit(
        s, await s.coordinator(group), version, group, topic, topic_id, {0: 1}, metadata="x" * 5000
    )
    expect("error codes", codes, {0: Errors.OFFSET_METADATA_TOO_LARGE})


async def _member_commit(s: RuleSession, version: int, case: str) -> int:
    topic, topic_id, _ = await make_topic(s, 1)
    instance = s.name("i") if case == "fenced-instance" else None
    if case == "unknown-group":
        group = s.name("g")
        client, gen, member = await s.coordinator(group), 3, "made-up-member"
    elif case == "completing-rebalance":
        group = s.name("g")
        client = await s.coordinator(group)
        joined = await joined_member(s, client, group)
        gen, member = joined.generation_id, joined.member_id
    else:
        group, client, joined = await stable_group(s, instance_id=instance, topics=(topic,))
        gen, member = joined.generation_id, joined.member_id
    kw = {}
    if case == "wrong-generation":
        gen += 1
    elif case in ("unknown-member", "fenced-instance"):
        member, kw["instance"] = "made-up-member", instance
    elif case == "no-membership":
        gen, member = -1, ""
    codes = await commit(
        s, client, version, group, topic, topic_id, {0: 5}, generation=gen, member=member, **kw
    )
    return codes[0]


_COMMIT_CASES = {
    "member": ("an offset committed by a member of a stable group at its generation", Errors.NONE, (2, 10),
               "ClassicGroup.validateOffsetCommit"),
    "wrong-generation": ("an offset committed by a member at another generation", Errors.ILLEGAL_GENERATION,
                         (2, 10), "ClassicGroup.validateOffsetCommit generationId"),
    "unknown-member": ("an offset committed with a member id the group does not have",
                       Errors.UNKNOWN_MEMBER_ID, (2, 10), "ClassicGroup.validateMember hasMember"),
    "no-membership": ("an offset committed with generation -1 and no member id to a group with members",
                      Errors.UNKNOWN_MEMBER_ID, (2, 10), "ClassicGroup.validateOffsetCommit isInState EMPTY"),
    "completing-rebalance": ("an offset committed by a member before the group's SyncGroup completes",
                             Errors.REBALANCE_IN_PROGRESS, (2, 10),
                             "ClassicGroup.validateOffsetCommit COMPLETING_REBALANCE"),
    "fenced-instance": ("an offset committed with a static member's instance id and another member id",
                        Errors.FENCED_INSTANCE_ID, (7, 10), "ClassicGroup.validateMember groupInstanceId"),
    "unknown-group": ("from v9, an offset committed with a generation for a group that does not exist",
                      Errors.GROUP_ID_NOT_FOUND, (9, 10),
                      "OffsetMetadataManager.validateOffsetCommit apiVersion"),
    "unknown-group-before-v9": ("before v9, an offset committed with a generation for a group that does not "
                                "exist", Errors.ILLEGAL_GENERATION, (2, 8),
                                "OffsetMetadataManager.validateOffsetCommit apiVersion"),
}  # fmt: skip


def _commit_case(case: str, error: int):
    async def check(s: RuleSession, version: int) -> None:
        expect_error("error_code", await _member_commit(s, version, case.replace("-before-v9", "")), error)

    return check


for _case, (_what, _error, _versions, _source) in _COMMIT_CASES.items():
    add(
        Rule(
            id=f"offsets.commit-{_case}",
            api=OFFSET_COMMIT,
            versions=_versions,
            source=_source,
            family=_F,
            text=f"{_what[0].upper()}{_what[1:]} is {error_for(_error).name}.",
            check=_commit_case(_case, _error),
        )
    )


@rule(
    "offsets.commit-leader-epoch-fetched",
    api=OFFSET_COMMIT,
    versions=(6, 10),
    family=_F,
    source="OffsetMetadataManager.fetchOffsets leaderEpoch",
)
async def commit_leader_epoch(s: RuleSession, version: int) -> None:
    """From v6, the committed leader epoch is kept with the offset and answered by OffsetFetch."""
    topic, topic_id, _ = await make_topic(s, 1)
    group = s.name("g")
    client = await s.coordinator(group)
    await commit(s, client, version, group, topic, topic_id, {0: 3}, leader_epoch=0)
    body = await call(
        s,
        client,
        OFFSET_FETCH,
        setup(s, OFFSET_FETCH),
        fetch_request(setup(s, OFFSET_FETCH), {group: (topic, topic_id, [0])}),
    )
    parts = [
        p
        for t in (body.groups[0].topics if setup(s, OFFSET_FETCH) >= 8 else body.topics)
        for p in t.partitions
    ]
    expect("committed_leader_epoch", [p.committed_leader_epoch for p in parts], [0])
