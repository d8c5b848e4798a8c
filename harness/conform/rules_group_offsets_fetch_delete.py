"""Rules of reading and deleting committed offsets: OffsetFetch and OffsetDelete."""

from __future__ import annotations

from kconform.codecs.errors import Errors
from kconform.codecs.messages import (
    OffsetDeleteRequest,
)

from .catalogue import rule
from .rules_group_offsets import (
    _F,
    OFFSET_COMMIT,
    OFFSET_DELETE,
    OFFSET_FETCH,
    commit,
    fetch,
    fetch_request,
    fetched,
    simple_commit,
)
from .rules_groups import (
    call,
    make_topic,
    setup,
    stable_group,
)
from .session import RuleSession, SetupFailed, expect, expect_error

# ---- OffsetFetch ----------------------------------------------------------------------------------------


@rule(
    "offsets.fetch-unknown-group",
    api=OFFSET_FETCH,
    versions=(1, 10),
    family=_F,
    source="OffsetMetadataManager.fetchOffsets INVALID_OFFSET",
)
async def fetch_unknown_group(s: RuleSession, version: int) -> None:
    """OffsetFetch for a group that does not exist answers offset -1 and NONE for each partition asked."""
    topic, topic_id, _ = await make_topic(s, 1)
    group = s.name("g")
    error, got = await fetch(s, await s.coordinator(group), version, group, topic, topic_id, [0])
    expect_error("error_code", error, Errors.NONE)
    expect("partitions", {p: (o, e) for p, (o, _, e) in got.items()}, {0: (-1, Errors.NONE)})


@rule(
    "offsets.fetch-uncommitted-partition",
    api=OFFSET_FETCH,
    versions=(1, 10),
    family=_F,
    source="OffsetMetadataManager.fetchOffsets INVALID_OFFSET",
)
async def fetch_uncommitted(s: RuleSession, version: int) -> None:
    """OffsetFetch of a partition the group committed nothing for answers offset -1 and NONE."""
    topic, topic_id, _ = await make_topic(s, 2)
    group = s.name("g")
    client = await simple_commit(s, group, topic, topic_id, {0: 9})
    _, got = await fetch(s, client, version, group, topic, topic_id, [1])
    expect("partitions", {p: (o, e) for p, (o, _, e) in got.items()}, {1: (-1, Errors.NONE)})


@rule(
    "offsets.fetch-all-offsets",
    api=OFFSET_FETCH,
    versions=(2, 10),
    family=_F,
    source="OffsetMetadataManager.fetchAllOffsets",
)
async def fetch_all(s: RuleSession, version: int) -> None:
    """From v2, OffsetFetch with null topics answers every offset the group committed."""
    topic, topic_id, _ = await make_topic(s, 2)
    group = s.name("g")
    client = await simple_commit(s, group, topic, topic_id, {0: 11, 1: 12})
    body = await call(s, client, OFFSET_FETCH, version, fetch_request(version, {group: None}))
    _, got = fetched(version, body)
    expect("partitions", {p: o for p, (o, _, _) in got.items()}, {0: 11, 1: 12})


async def same_coordinator(s: RuleSession, group: str) -> str:
    """Another group name the node coordinating ``group`` coordinates too (a broker answers only for its
    own groups)."""
    find = s._client.find_coordinator  # noqa: SLF001 - the session's own client
    node = await find(group, 0, timeout=10)
    for _ in range(50):
        other = s.name("g")
        if await find(other, 0, timeout=10) == node:
            return other
    raise SetupFailed(f"no second group name coordinated by node {node}")


@rule(
    "offsets.fetch-several-groups",
    api=OFFSET_FETCH,
    versions=(8, 10),
    family=_F,
    source="KafkaApis.handleOffsetFetchRequest groups",
)
async def fetch_batched(s: RuleSession, version: int) -> None:
    """From v8, OffsetFetch answers each group of the request with its own offsets."""
    topic, topic_id, _ = await make_topic(s, 1)
    a = s.name("g")
    b = await same_coordinator(s, a)
    client = await simple_commit(s, a, topic, topic_id, {0: 1})
    await simple_commit(s, b, topic, topic_id, {0: 2})
    request = fetch_request(version, {a: (topic, topic_id, [0]), b: (topic, topic_id, [0])})
    body = await call(s, client, OFFSET_FETCH, version, request)
    got = {g.group_id: [p.committed_offset for t in g.topics for p in t.partitions] for g in body.groups}
    expect("groups", got, {a: [1], b: [2]})


@rule(
    "offsets.fetch-require-stable",
    api=OFFSET_FETCH,
    versions=(7, 10),
    family=_F,
    source="OffsetMetadataManager.fetchOffsets requireStable",
)
async def fetch_stable(s: RuleSession, version: int) -> None:
    """From v7, OffsetFetch with require_stable and no transaction pending answers the committed offset."""
    topic, topic_id, _ = await make_topic(s, 1)
    group = s.name("g")
    client = await simple_commit(s, group, topic, topic_id, {0: 8})
    error, got = await fetch(s, client, version, group, topic, topic_id, [0], require_stable=True)
    expect_error("error_code", error, Errors.NONE)
    expect("partitions", {p: (o, e) for p, (o, _, e) in got.items()}, {0: (8, Errors.NONE)})


# ---- OffsetDelete (OffsetMetadataManager.deleteOffsets) ---------------------------------------------------


def delete_request(group, topic, partitions) -> OffsetDeleteRequest:
    return OffsetDeleteRequest(
        group_id=group,
        topics=[
            OffsetDeleteRequest.OffsetDeleteRequestTopic(
                name=topic,
                partitions=[
                    OffsetDeleteRequest.OffsetDeleteRequestPartition(partition_index=p) for p in partitions
                ],
            )
        ],
    )


@rule(
    "offsets.delete-unknown-group",
    api=OFFSET_DELETE,
    versions=(0, 0),
    family=_F,
    source="OffsetMetadataManager.deleteOffsets getOrMaybeCreateGroup",
)
async def delete_unknown_group(s: RuleSession, version: int) -> None:
    """OffsetDelete for a group that does not exist is GROUP_ID_NOT_FOUND."""
    topic, _, _ = await make_topic(s, 1)
    group = s.name("g")
    body = await call(
        s, await s.coordinator(group), OFFSET_DELETE, version, delete_request(group, topic, [0])
    )
    expect_error("error_code", body.error_code, Errors.GROUP_ID_NOT_FOUND)


@rule(
    "offsets.delete-empty-group-offsets",
    api=OFFSET_DELETE,
    versions=(0, 0),
    family=_F,
    source="OffsetMetadataManager.deleteOffsets",
)
async def delete_offsets(s: RuleSession, version: int) -> None:
    """OffsetDelete of an empty group's offsets is NONE per partition and the offsets are gone."""
    topic, topic_id, _ = await make_topic(s, 1)
    group = s.name("g")
    client = await simple_commit(s, group, topic, topic_id, {0: 4})
    body = await call(s, client, OFFSET_DELETE, version, delete_request(group, topic, [0]))
    expect_error("error_code", body.error_code, Errors.NONE)
    expect("partitions", [p.error_code for t in body.topics for p in t.partitions], [Errors.NONE])
    _, got = await fetch(s, client, setup(s, OFFSET_FETCH), group, topic, topic_id, [0])
    expect("offset after delete", got[0][0], -1)


@rule(
    "offsets.delete-subscribed-topic",
    api=OFFSET_DELETE,
    versions=(0, 0),
    family=_F,
    source="OffsetMetadataManager.deleteOffsets isSubscribedToTopic",
)
async def delete_subscribed(s: RuleSession, version: int) -> None:
    """OffsetDelete of a topic a stable consumer group subscribes to is GROUP_SUBSCRIBED_TO_TOPIC for its
    partitions."""
    topic, topic_id, _ = await make_topic(s, 1)
    group, client, joined = await stable_group(s, topics=(topic,))
    codes = await commit(
        s,
        client,
        setup(s, OFFSET_COMMIT),
        group,
        topic,
        topic_id,
        {0: 3},
        generation=joined.generation_id,
        member=joined.member_id,
    )
    if codes != {0: Errors.NONE}:
        raise SetupFailed(f"member commit: {codes}")
    body = await call(s, client, OFFSET_DELETE, version, delete_request(group, topic, [0]))
    expect_error("error_code", body.error_code, Errors.NONE)
    expect(
        "partitions",
        [p.error_code for t in body.topics for p in t.partitions],
        [Errors.GROUP_SUBSCRIBED_TO_TOPIC],
    )


@rule(
    "offsets.delete-active-non-consumer-group",
    api=OFFSET_DELETE,
    versions=(0, 0),
    family=_F,
    source="ClassicGroup.validateOffsetDelete usesConsumerGroupProtocol",
)
async def delete_non_consumer(s: RuleSession, version: int) -> None:
    """OffsetDelete for a group with members whose protocol type is not consumer is NON_EMPTY_GROUP."""
    topic, _, _ = await make_topic(s, 1)
    group, client, _ = await stable_group(s, protocol_type="connect")
    body = await call(s, client, OFFSET_DELETE, version, delete_request(group, topic, [0]))
    expect_error("error_code", body.error_code, Errors.NON_EMPTY_GROUP)
