"""What a differential case is made of: the operations a case may hold, and the Hypothesis strategy that
draws cases (operation sequences). Names inside a case are indexes (topic 0, group 1), so every case is
drawn once and replays on any pair of targets in a namespace of its own."""

from __future__ import annotations

import dataclasses
import functools

from hypothesis import strategies as st

from . import operations as ops
from . import operations_admin as admin
from . import operations_groups as groups
from . import operations_txn as txn

__all__ = ["DRAWN", "OPERATIONS", "STORIES", "check_apis", "drawn_api_keys", "operation_sequences"]

_topic = st.integers(0, 2)
_partition = st.sampled_from([0, 0, 0, 1, 2, -1, 7])
_offset = st.sampled_from([0, 0, 1, 2, 5, -1, 1 << 40])
_pick = st.integers(0, 31)
_epoch = st.sampled_from([-1, -1, -1, 0, 5])  # none, the current one, one from the future
_values = st.lists(st.one_of(st.binary(max_size=20), st.none()), min_size=0, max_size=5).map(tuple)
_group = st.sampled_from([0, 0, 0, 1])
_member = st.sampled_from([0, 0, 0, 1])  # KIP-848 members: heartbeats never wait for each other
# Classic members have connections of their own, and a join held for the others to rejoin is answered
# after the next step (harness/diff/engine.py), so two members rebalance as two consumers do. The second
# member is drawn rarely: a case with two holds a join for up to the rebalance timeout (1 s) each time
# it is replayed, and what two members meet needs one step per member at least.
_classic_member = st.sampled_from([0] * 7 + [1])
_producer = st.sampled_from([0, 0, 0, 1])
_rare = st.sampled_from([False] * 7 + [True])
_SETUP_FIRST = st.sampled_from([True, True, False])

# Every operation a case may hold, with how it is drawn.
DRAWN: dict[type, st.SearchStrategy] = {
    ops.CreateTopic: st.builds(
        ops.CreateTopic, _pick, topic=_topic, partitions=st.sampled_from([1, 1, 2, 3, 0, -1])
    ),
    ops.Produce: st.builds(
        ops.Produce,
        _pick,
        topic=_topic,
        partition=_partition,
        values=_values,
        keyed=st.booleans(),
        acks=st.sampled_from([-1, -1, 1, 0, 2]),
        corrupt=_rare,  # a bad CRC now and then
    ),
    ops.Fetch: st.builds(
        ops.Fetch,
        _pick,
        topic=_topic,
        partition=_partition,
        offset=_offset,
        max_bytes=st.sampled_from([1 << 20, 1, 100]),
        leader_epoch=_epoch,
    ),
    ops.ListOffsets: st.builds(
        ops.ListOffsets,
        _pick,
        topic=_topic,
        partition=_partition,
        timestamp=st.sampled_from([-1, -2, -3, ops.BASE_TIMESTAMP, ops.BASE_TIMESTAMP + 3, 0]),
        leader_epoch=_epoch,
    ),
    ops.Metadata: st.builds(
        ops.Metadata,
        _pick,
        topic_list=st.lists(_topic, max_size=2).map(tuple),
        all_topics=st.sampled_from([False] * 5 + [True]),
    ),
    ops.OffsetForLeaderEpoch: st.builds(
        ops.OffsetForLeaderEpoch,
        _pick,
        topic=_topic,
        partition=_partition,
        leader_epoch=st.sampled_from([0, 0, 1, 5, -1]),
        current_epoch=_epoch,
    ),
    ops.DeleteRecords: st.builds(
        ops.DeleteRecords, _pick, topic=_topic, partition=_partition, offset=_offset
    ),
    ops.FindCoordinator: st.builds(
        ops.FindCoordinator, _pick, group=_group, key_type=st.sampled_from([0, 0, 1])
    ),
    ops.OffsetCommit: st.builds(
        ops.OffsetCommit, _pick, group=_group, topic=_topic, partition=_partition, offset=_offset
    ),
    ops.OffsetFetch: st.builds(ops.OffsetFetch, _pick, group=_group, topic=_topic, partition=_partition),
    # a group member's life
    groups.JoinGroup: st.builds(
        groups.JoinGroup,
        _pick,
        group=_group,
        member=_classic_member,
        protocol=st.sampled_from(["range", "range", "sticky"]),
    ),
    groups.SyncGroup: st.builds(
        groups.SyncGroup, _pick, group=_group, member=_classic_member, assign=st.booleans()
    ),
    groups.Heartbeat: st.builds(
        groups.Heartbeat, _pick, group=_group, member=_classic_member, stale_generation=_rare
    ),
    groups.LeaveGroup: st.builds(groups.LeaveGroup, _pick, group=_group, member=_classic_member),
    groups.DescribeGroups: st.builds(groups.DescribeGroups, _pick, groups=st.sampled_from([(0,), (0, 1)])),
    groups.ListGroups: st.builds(groups.ListGroups, _pick),
    groups.DeleteGroups: st.builds(groups.DeleteGroups, _pick, group=_group),
    groups.OffsetDelete: st.builds(
        groups.OffsetDelete, _pick, group=_group, topic=_topic, partition=_partition
    ),
    groups.ConsumerGroupHeartbeat: st.builds(
        groups.ConsumerGroupHeartbeat, _pick, group=_group, member=_member, topic=_topic, leave=_rare
    ),
    groups.ConsumerGroupDescribe: st.builds(
        groups.ConsumerGroupDescribe, _pick, groups=st.sampled_from([(0,), (0, 1)])
    ),
    # a producer's and a transaction's life
    txn.InitProducerId: st.builds(
        txn.InitProducerId, _pick, producer=_producer, transactional=st.sampled_from([True, True, False])
    ),
    txn.ProducerProduce: st.builds(
        txn.ProducerProduce,
        _pick,
        producer=_producer,
        topic=_topic,
        partition=st.sampled_from([0, 0, 1]),
        values=st.lists(st.binary(max_size=8), min_size=1, max_size=3).map(tuple),
        transactional=st.sampled_from([True, True, False]),
        sequence_gap=_rare,
    ),
    txn.AddPartitionsToTxn: st.builds(
        txn.AddPartitionsToTxn,
        _pick,
        producer=_producer,
        topic=_topic,
        partition=st.sampled_from([0, 0, 1, 7]),
    ),
    txn.AddOffsetsToTxn: st.builds(txn.AddOffsetsToTxn, _pick, producer=_producer, group=_group),
    txn.TxnOffsetCommit: st.builds(
        txn.TxnOffsetCommit,
        _pick,
        producer=_producer,
        group=_group,
        topic=_topic,
        partition=st.sampled_from([0, 0, 7]),
    ),
    txn.EndTxn: st.builds(txn.EndTxn, _pick, producer=_producer, commit=st.sampled_from([True, True, False])),
    txn.DescribeTransactions: st.builds(
        txn.DescribeTransactions, _pick, producers=st.sampled_from([(0,), (0, 1)])
    ),
    txn.ListTransactions: st.builds(txn.ListTransactions, _pick),
    txn.DescribeProducers: st.builds(
        txn.DescribeProducers, _pick, topic=_topic, partition=st.sampled_from([0, 0, 7])
    ),
    # administration
    admin.DeleteTopic: st.builds(admin.DeleteTopic, _pick, topic=_topic),
    admin.CreatePartitions: st.builds(
        admin.CreatePartitions,
        _pick,
        topic=_topic,
        count=st.sampled_from([1, 2, 4, 0]),
        validate_only=st.booleans(),
    ),
    admin.DescribeConfigs: st.builds(admin.DescribeConfigs, _pick, topic=_topic, config=st.integers(-1, 3)),
    admin.AlterConfigs: st.builds(
        admin.AlterConfigs,
        _pick,
        topic=_topic,
        config=st.integers(0, 3),
        value=st.integers(0, 4),
        validate_only=st.booleans(),
    ),
    admin.IncrementalAlterConfigs: st.builds(
        admin.IncrementalAlterConfigs,
        _pick,
        topic=_topic,
        config=st.integers(0, 3),
        value=st.integers(0, 4),
        operation=st.sampled_from([0, 0, 1, 2, 3]),
        validate_only=_rare,
    ),
    admin.DescribeCluster: st.builds(admin.DescribeCluster, _pick),
    admin.DescribeLogDirs: st.builds(admin.DescribeLogDirs, _pick, topic=_topic),
}

OPERATIONS = {cls.__name__: cls for cls in DRAWN}

# Stories: the steps of a life in the order a client takes them, so that cases reach deep states (a
# synced member, an open transaction with offsets in it). Each step is kept most of the time, and other
# steps of the same family may come in between.
STORIES: dict[str, tuple[type, ...]] = {
    "log": (
        "produce-to-the-first-topic", ops.Produce, ops.Fetch, ops.ListOffsets, ops.OffsetForLeaderEpoch,
        ops.DeleteRecords, ops.Fetch, ops.ListOffsets,
    ),
    "group": (
        groups.JoinGroup, groups.JoinGroup, groups.SyncGroup, groups.Heartbeat, ops.OffsetCommit,
        groups.JoinGroup, groups.Heartbeat, groups.DescribeGroups, ops.OffsetFetch, groups.LeaveGroup,
        groups.ListGroups, groups.OffsetDelete, groups.DeleteGroups,
    ),
    "consumer-group": (
        groups.ConsumerGroupHeartbeat, groups.ConsumerGroupHeartbeat, groups.ConsumerGroupDescribe,
        groups.ConsumerGroupHeartbeat, groups.ConsumerGroupDescribe, groups.ListGroups,
    ),
    "transaction": (
        "find-transaction-coordinator", "find-transaction-coordinator", txn.InitProducerId,
        txn.AddPartitionsToTxn, txn.ProducerProduce, txn.ProducerProduce, txn.AddOffsetsToTxn,
        txn.TxnOffsetCommit, txn.DescribeTransactions, txn.EndTxn, txn.DescribeProducers,
        txn.ListTransactions, ops.Fetch,
    ),
    "admin": (
        "grow-the-first-topic", admin.DescribeConfigs, admin.IncrementalAlterConfigs, admin.AlterConfigs,
        admin.DescribeConfigs, admin.DescribeLogDirs, admin.DescribeCluster, admin.DeleteTopic, ops.Metadata,
    ),
}  # fmt: skip
# The step each step needs first (a member joins before it syncs).
NEEDS = {
    groups.SyncGroup: groups.JoinGroup,
    groups.Heartbeat: groups.JoinGroup,
    groups.LeaveGroup: groups.JoinGroup,
    groups.ConsumerGroupDescribe: groups.ConsumerGroupHeartbeat,
    txn.ProducerProduce: txn.InitProducerId,
    txn.AddPartitionsToTxn: txn.InitProducerId,
    txn.AddOffsetsToTxn: txn.InitProducerId,
    txn.TxnOffsetCommit: txn.InitProducerId,
    txn.EndTxn: txn.InitProducerId,
}


# Why no operation draws an API: its pairs are reported as not exercised, with this reason.
NOT_DRAWN = {
    18: "ApiVersions opens every connection (both targets' answers decide what is compared); its "
    "unsupported versions are sent by kconform diff-frames",
}
_BROKER_ONLY = "sent by brokers and controllers to each other, not by clients"
NOT_DRAWN[27] = f"WriteTxnMarkers is {_BROKER_ONLY}"


def not_drawn_reason(api_key: int) -> str:
    from kconform.codecs import api_schema

    if api_key in NOT_DRAWN:
        return NOT_DRAWN[api_key]
    if api_schema(api_key).listeners and "broker" not in api_schema(api_key).listeners:
        return _BROKER_ONLY
    return "no operation draws it yet"


def drawn_api_keys() -> set[int]:
    """Every API key some operation sends."""
    return {cls.api_key for cls in OPERATIONS.values()}


def check_apis(apis: set[int] | None) -> None:
    """Raises ValueError, naming what can be drawn, when ``apis`` leaves no operation to draw."""
    if apis and not apis & drawn_api_keys():
        from kconform.codecs import api_schema

        names = ", ".join(sorted(api_schema(k).name for k in drawn_api_keys()))
        raise ValueError(
            f"no operation sends {', '.join(api_schema(k).name for k in sorted(apis))}; "
            f"the APIs drawn are {names}"
        )


def operation_sequences(apis: set[int] | None = None, max_ops: int = 8) -> st.SearchStrategy:
    """Cases: a story (a life, in order, with detours) or any operations at all, usually after a topic
    was created."""
    check_apis(apis)
    # with --apis, only those APIs' requests are sent: a step whose setup step sends another API is left out
    wanted = [
        cls
        for cls in DRAWN
        if not apis or (cls.api_key in apis and (cls not in NEEDS or NEEDS[cls].api_key in apis))
    ]
    if not wanted:
        raise ValueError("every operation for these APIs needs a step of another API to set it up")
    anything = st.lists(st.one_of([DRAWN[cls] for cls in wanted]), min_size=1, max_size=max_ops)
    stories = []
    for steps in STORIES.values():
        setup = {"find-transaction-coordinator"} if txn.InitProducerId in wanted else set()
        kept = tuple(step for step in steps if _step_class(step) in wanted or step in setup)
        if any(_step_class(step) in wanted for step in kept):
            stories.append(_story(kept, tuple(wanted)))
    setup = st.builds(ops.CreateTopic, _pick, topic=st.just(0), partitions=st.sampled_from([1, 3]))
    body = st.one_of(anything, *stories)
    # two cases in three begin by creating topic 0 (one_of over (with, with, without) is not drawn
    # evenly: Hypothesis favours its last branches)
    return st.tuples(_SETUP_FIRST, setup, body).map(
        lambda drawn: [drawn[1], *drawn[2]] if drawn[0] else drawn[2]
    )


# Story steps drawn in a particular way, each with the operation it sends (what --apis selects by): a
# transaction begins by asking for its coordinator, which also makes a broker create its transaction
# state topic; a log's life begins with records in the partition most cases create first, an
# administrator's with the partitions of that topic.
_NAMED_STEPS: dict[str, tuple[type, st.SearchStrategy]] = {
    "find-transaction-coordinator": (
        ops.FindCoordinator,
        st.builds(ops.FindCoordinator, _pick, group=_producer, key_type=st.just(1)),
    ),
    "produce-to-the-first-topic": (
        ops.Produce,
        DRAWN[ops.Produce].map(lambda produce: dataclasses.replace(produce, topic=0, partition=0)),
    ),
    "grow-the-first-topic": (
        admin.CreatePartitions,
        DRAWN[admin.CreatePartitions].map(lambda grow: dataclasses.replace(grow, topic=0)),
    ),
}


def _step_class(step) -> type:
    return _NAMED_STEPS[step][0] if step in _NAMED_STEPS else step


def _step_draw(step) -> st.SearchStrategy:
    return _NAMED_STEPS[step][1] if step in _NAMED_STEPS else DRAWN[step]


_KEEP_STEP = st.integers(0, 9)  # 9 in 10: the step is taken
_DETOUR = st.integers(0, 5)  # 1 in 6: another operation comes after it


@functools.cache
def _detours(detours: tuple[type, ...]) -> st.SearchStrategy:
    # built once: a fresh one_of over forty strategies on every draw was most of a case's drawing time
    return st.one_of([DRAWN[cls] for cls in detours])


@st.composite
def _story(draw, steps: tuple, detours: tuple[type, ...]) -> list:
    case = []
    for step in steps:
        if draw(_KEEP_STEP) < 9:
            case.append(draw(_step_draw(step)))
        if draw(_DETOUR) == 0:
            case.append(draw(_detours(detours)))
    return case or [draw(_step_draw(steps[0]))]
