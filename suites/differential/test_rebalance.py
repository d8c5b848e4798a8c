"""Two classic members of one group rebalance as two consumers do: each member has a connection of its
own, and a request a broker holds (a JoinGroup waiting for the other members to rejoin, a follower's
SyncGroup waiting for the leader's) is answered after the next step (harness/diff/engine.py).

Kafka's rules it walks through (group-coordinator/.../classic/ClassicGroup.java and
GroupMetadataManager.classicGroupJoin*): a new member's join puts a stable group into PreparingRebalance
and is held until every known member rejoins; the rejoin completes the round, both answers carry the new
generation and only the leader's lists the members; a follower's sync is answered with the assignment
the leader's sync brings; a member leaving starts a rebalance, which the other's heartbeat learns as
REBALANCE_IN_PROGRESS (27)."""

from __future__ import annotations

import asyncio

import pytest

from kconform.harness.diff import operations_groups as groups
from kconform.harness.diff.engine import DiffEngine

V = 5  # the version pick: JoinGroup v5, the first with group instance ids, at any target's range
REBALANCE = [
    groups.JoinGroup(V, member=0),  # 0: MEMBER_ID_REQUIRED (79), with the id to join with
    groups.JoinGroup(V, member=0),  # 1: generation 1, member 0 leads
    groups.SyncGroup(V, member=0),  # 2: the leader's assignment
    groups.JoinGroup(V, member=1),  # 3: 79 for the second member
    groups.JoinGroup(V, member=1),  # 4: held: the group waits for member 0 to rejoin
    groups.JoinGroup(V, member=0),  # 5: the rejoin completes the round: generation 2 for both
    groups.SyncGroup(V, member=1, assign=False),  # 6: held until the leader's sync
    groups.SyncGroup(V, member=0),  # 7: the leader hands out both assignments
    groups.Heartbeat(V, member=0),
    groups.Heartbeat(V, member=1),
    groups.DescribeGroups(V),
    groups.LeaveGroup(V, member=1),
    groups.Heartbeat(V, member=0),  # 12: REBALANCE_IN_PROGRESS
]
REBALANCE_TIMEOUT_S = groups._REBALANCE_TIMEOUT_MS / 1000


def run(a, b, case, case_id):
    engine = DiffEngine(a, b)  # reads the targets' versions: outside the loop

    async def go():
        try:
            return await engine.run_case(case, case_id)
        finally:
            await engine.close()

    return asyncio.run(go())


def test_two_members_rebalance_through_held_requests_and_two_brokers_agree(pair):
    result = run(*pair, REBALANCE, "rebalance")
    assert not result.skipped and not result.divergences, result.divergences
    answers = dict(zip(result.exchanged_ops, (a for a, _ in result.exchanges), strict=True))
    assert sorted(answers) == list(range(len(REBALANCE)))
    # the follower's held sync was compared after the leader's, which released it
    assert result.exchanged_ops.index(6) > result.exchanged_ops.index(7)
    body = {index: exchange.decoded for index, exchange in answers.items()}
    assert body[0].error_code == body[3].error_code == 79
    assert body[1].generation_id == 1 and body[1].leader == body[1].member_id
    # the held requests were released by the steps after them, not by the rebalance timeout: a
    # harness that waited for each answer before the next step would wait it out and lose member 0
    assert answers[4].latency_us < REBALANCE_TIMEOUT_S * 1e6 * 0.9
    assert answers[6].latency_us < REBALANCE_TIMEOUT_S * 1e6 * 0.9
    assert body[4].error_code == body[5].error_code == 0
    assert body[4].generation_id == body[5].generation_id == 2
    assert body[5].leader == body[5].member_id and len(body[5].members) == 2  # the leader's answer
    assert body[4].leader == body[5].member_id and body[4].members == []  # the follower's
    assert body[6].error_code == 0 and body[6].assignment  # the assignment the leader's sync brought
    assert [body[i].error_code for i in (7, 8, 9, 11, 12)] == [0, 0, 0, 0, 27]
    assert [m.member_id for m in body[10].groups[0].members] in (
        [body[5].member_id, body[4].member_id],
        [body[4].member_id, body[5].member_id],
    )


@pytest.mark.peer
def test_held_requests_replay_alike_against_another_broker(pair):
    """Against librdkafka's mock, whose group coordinator differs from Kafka's, the same case shows the
    same differences every time it runs: held requests make no timing of their own."""
    from kconform.harness.targets.registry import make_target

    mock = make_target("rdkafka-mock")
    with mock:
        shown = [
            sorted((d.op_index, d.signature) for d in run(pair[0], mock, REBALANCE, f"again{n}").divergences)
            for n in range(2)
        ]
    assert shown[0] and shown[0] == shown[1]


def test_a_members_shape_says_when_another_member_shares_its_group_and_how_it_joined():
    from kconform.harness.diff.context import Context

    ctx = Context("k")
    join = groups.JoinGroup(V, member=1, protocol="sticky")
    assert join.shape(ctx) == "JoinGroup(new member)"
    ctx.state[("b", "member", 0, 0)] = "m0"  # one target gave member 0 an id (pending or joined)
    assert join.shape(ctx) == "JoinGroup(new member,with another member)"
    ctx.state[("a", "joined with", 0, 0)] = "range"
    assert join.shape(ctx) == "JoinGroup(new member,a protocol another member lacks,with another member)"
    ctx.diverged_members.add((0, 0))  # member 0's step was taken by one target only
    assert groups.Heartbeat(V, member=1).shape(ctx).endswith("after another member's differing step)")
    assert "differing" not in groups.Heartbeat(V, member=0).shape(ctx)  # its own steps are its own
    ctx.crashed.add("b")
    assert groups.Heartbeat(V, member=0).shape(ctx).endswith(",after a crash)")


def test_a_held_join_says_whether_another_member_joined_while_it_was_held():
    from kconform.harness.diff.context import Context

    ctx = Context("k")
    ctx.state[("a", "member", 0, 0)] = "m0"
    ctx.state[("a", "member", 0, 1)] = "m1"
    ctx.state[("a", "join answer", 0, 1)] = 0
    join = groups.JoinGroup(V, member=1)
    # a known member's rejoin starts no rebalance: nobody is left out
    assert join.answered_parts(ctx, "JoinGroup(with another member)", []) == []
    # a new member's does; member 0 not joining again while it was held is removed
    assert join.answered_parts(ctx, "JoinGroup(new member,with another member)", []) == [
        "the others not rejoining"
    ]
    ctx.sent.append((0, join))
    assert groups.Heartbeat(V, member=1).shape(ctx) == "Heartbeat(alone since its join,with another member)"
    assert "left out of another member's rebalance" in groups.Heartbeat(V, member=0).shape(ctx)
    # had member 0 joined again while the join was held, the two would share the new generation
    assert join.answered_parts(ctx, "JoinGroup(new member,with another member)", [groups.JoinGroup(V)]) == []
    assert "alone" not in groups.Heartbeat(V, member=1).shape(ctx)
    ctx.state[("a", "pending", 0, 1)] = True
    assert "pending member" in groups.Heartbeat(V, member=1).shape(ctx)
