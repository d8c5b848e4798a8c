"""KIP-848 consumer groups: the assignors' properties, the reconciliation invariant (no partition is
ever in two members' assignments), and Kafka's ConsumerGroupHeartbeat rules through the wire
(GroupMetadataManager.consumerGroupHeartbeat and throwIfConsumerGroupHeartbeatRequestIsInvalid)."""

from __future__ import annotations

import asyncio
import uuid

from hypothesis import given, settings
from hypothesis import strategies as st

from kconform.codecs.errors import Errors
from kconform.codecs.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
    DescribeGroupsRequest,
    OffsetCommitRequest,
)
from kconform.reference_broker.groups.kip848_assignment import compute_target, reconcile
from kconform.reference_broker.groups.kip848_group import ConsumerGroup, ConsumerMember, MemberState
from kconform.reference_broker.groups.server_assignors import range_assign, uniform_assign

from ..support.group_rules_cluster import Cluster, stable_group
from ..support.group_rules_cluster import run as run_cluster

HEARTBEAT, DESCRIBE = 68, 69
TOPICS = [uuid.UUID(int=i + 1) for i in range(3)]


# ---- assignors ------------------------------------------------------------------------------------


subscriptions_strategy = st.dictionaries(
    st.sampled_from([f"m{i}" for i in range(6)]),
    st.sets(st.sampled_from(TOPICS), min_size=1),
    min_size=1,
)
partitions_strategy = st.fixed_dictionaries({t: st.integers(0, 12) for t in TOPICS})


@given(subscriptions_strategy, partitions_strategy)
def test_assignors_give_every_subscribed_partition_to_exactly_one_subscriber(subscriptions, partitions):
    for assign in (uniform_assign, range_assign):
        result = assign(subscriptions, {}, partitions)
        for topic, count in partitions.items():
            owners = [m for m, tps in result.items() for p in tps.get(topic, ()) for _ in [p]]
            subscribed = [m for m, topics in subscriptions.items() if topic in topics]
            got = sorted(p for m in result for p in result[m].get(topic, ()))
            assert got == (list(range(count)) if subscribed else []), (assign.__name__, topic)
            assert set(owners) <= set(subscribed)


@given(subscriptions_strategy, partitions_strategy)
def test_uniform_balances_members_with_the_same_subscription_within_one(subscriptions, partitions):
    same = {m: set(TOPICS) for m in subscriptions}
    result = uniform_assign(same, {}, partitions)
    counts = [sum(len(p) for p in tps.values()) for tps in result.values()]
    assert max(counts) - min(counts) <= 1


@given(st.integers(2, 5), st.integers(1, 24))
def test_uniform_is_sticky_when_membership_does_not_change(members, count):
    subs = {f"m{i}": {TOPICS[0]} for i in range(members)}
    first = uniform_assign(subs, {}, {TOPICS[0]: count})
    assert uniform_assign(subs, first, {TOPICS[0]: count}) == first


# ---- reconciliation -------------------------------------------------------------------------------------


@settings(max_examples=60)
@given(
    st.lists(st.tuples(st.sampled_from(["join", "leave", "beat", "revoke"]), st.integers(0, 4)), max_size=40)
)
def test_reconciliation_never_gives_a_partition_to_two_members(steps):
    """Random joins, leaves and heartbeats (members confirm revocations only when they heartbeat with
    'revoke'): at every point no partition is in two members' assigned or pending sets."""
    group = ConsumerGroup("g")
    topics = {"t": (TOPICS[0], 8)}

    def heartbeat(member: ConsumerMember, confirm: bool) -> None:
        if group.group_epoch > group.assignment_epoch:
            compute_target(group, topics)
        owned = {t: set(p) for t, p in member.assigned.items()}
        if not confirm:
            for t, p in member.pending_revocation.items():
                owned.setdefault(t, set()).update(p)
        reconcile(group, member, owned)

    for action, n in steps:
        member_id = f"m{n}"
        member = group.members.get(member_id)
        if action == "join" and member is None:
            group.members[member_id] = ConsumerMember(member_id, subscribed_topic_names=["t"])
            group.group_epoch += 1
        elif action == "leave" and member is not None:
            del group.members[member_id]
            group.target.pop(member_id, None)
            group.group_epoch += 1
        elif member is not None:
            heartbeat(member, confirm=action == "revoke")
        held: list[int] = []
        for m in group.members.values():
            for source in (m.assigned, m.pending_revocation):
                held.extend(source.get(TOPICS[0], ()))
        assert len(held) == len(set(held)), [
            (m.member_id, m.assigned, m.pending_revocation) for m in group.members.values()
        ]
    # With everyone heartbeating and confirming, the group converges to its target.
    for _ in range(4):
        for m in list(group.members.values()):
            heartbeat(m, confirm=True)
    for m in group.members.values():
        assert m.state == MemberState.STABLE and m.assigned == group.target.get(m.member_id, {})


# ---- ConsumerGroupHeartbeat through the wire ------------------------------------------------------------


def join(group="cg", member_id=None, **kwargs) -> ConsumerGroupHeartbeatRequest:
    fields = dict(
        group_id=group,
        member_id=uuid.uuid4().hex if member_id is None else member_id,
        member_epoch=0,
        rebalance_timeout_ms=5000,
        subscribed_topic_names=["t"],
        topic_partitions=[],
    )
    fields.update(kwargs)
    return ConsumerGroupHeartbeatRequest(**fields)


def run(tmp_path, scenario, **overrides):
    return run_cluster(tmp_path, scenario, **overrides)


def test_a_joining_member_gets_every_partition_at_epoch_one(tmp_path):
    async def scenario(c: Cluster):
        return await c.client.call(HEARTBEAT, 1, join())

    body = run(tmp_path, scenario)
    assert (body.error_code, body.member_epoch) == (Errors.NONE, 1)
    assert [sorted(tp.partitions) for tp in body.assignment.topic_partitions] == [[0, 1]]


def test_heartbeat_validation_is_invalid_request(tmp_path):
    async def scenario(c: Cluster):
        codes = []
        for request in (
            join(group=""),
            join(rebalance_timeout_ms=-1),
            join(topic_partitions=None),
            join(subscribed_topic_names=None),
            join(member_id=""),
            join(member_epoch=-3),
        ):
            codes.append((await c.client.call(HEARTBEAT, 1, request)).error_code)
        return codes

    assert run(tmp_path, scenario) == [Errors.INVALID_REQUEST] * 6


def test_heartbeat_member_and_epoch_rules(tmp_path):
    async def scenario(c: Cluster):
        first = await c.client.call(HEARTBEAT, 1, join(member_id="a"))
        stranger = await c.client.call(
            HEARTBEAT, 1, join(member_id="nobody", member_epoch=1, topic_partitions=None)
        )
        fenced = await c.client.call(HEARTBEAT, 1, join(member_id="a", member_epoch=7, topic_partitions=None))
        assignor = await c.client.call(HEARTBEAT, 1, join(member_id="b", server_assignor="sticky"))
        leave = await c.client.call(HEARTBEAT, 1, join(member_id="a", member_epoch=-1, topic_partitions=None))
        return first, stranger.error_code, fenced.error_code, assignor.error_code, leave

    first, stranger, fenced, assignor, leave = run(tmp_path, scenario)
    assert first.error_code == Errors.NONE
    assert stranger == Errors.UNKNOWN_MEMBER_ID
    assert fenced == Errors.FENCED_MEMBER_EPOCH
    assert assignor == Errors.UNSUPPORTED_ASSIGNOR
    assert (leave.error_code, leave.member_epoch) == (Errors.NONE, -1)


def test_a_consumer_group_past_its_size_is_group_max_size_reached(tmp_path):
    async def scenario(c: Cluster):
        await c.client.call(HEARTBEAT, 1, join(member_id="a"))
        return (await c.client.call(HEARTBEAT, 1, join(member_id="b"))).error_code

    assert run(tmp_path, scenario, **{"group.consumer.max.size": "1"}) == Errors.GROUP_MAX_SIZE_REACHED


def test_a_classic_group_whose_embedded_protocol_does_not_read_is_not_upgraded(tmp_path):
    """``convertToConsumerGroup``: a classic group with members is upgraded only if every member's
    assignment and subscription read as the consumer protocol; ``stable_group``'s assignments are plain
    bytes, so the conversion fails (Kafka's SchemaException) and the group stays classic."""

    async def scenario(c: Cluster):
        await stable_group(c, "classic")
        return await c.client.call(HEARTBEAT, 1, join(group="classic"))

    body = run(tmp_path, scenario)
    assert (body.error_code, body.error_message) == (
        Errors.GROUP_ID_NOT_FOUND,
        "Cannot upgrade the classic group classic to consumer group because the embedded consumer protocol "
        "is malformed.",
    )


def test_revocation_comes_before_the_new_owner_gets_the_partition(tmp_path):
    async def scenario(c: Cluster):
        a = await c.client.call(HEARTBEAT, 1, join(member_id="a"))
        owned = [
            ConsumerGroupHeartbeatRequest.TopicPartitions(topic_id=tp.topic_id, partitions=tp.partitions)
            for tp in a.assignment.topic_partitions
        ]
        b = await c.client.call(HEARTBEAT, 1, join(member_id="b"))
        b_before = b.assignment.topic_partitions
        a_told = await c.client.call(
            HEARTBEAT, 1, join(member_id="a", member_epoch=1, topic_partitions=owned)
        )
        kept = [
            ConsumerGroupHeartbeatRequest.TopicPartitions(topic_id=tp.topic_id, partitions=tp.partitions)
            for tp in a_told.assignment.topic_partitions
        ]
        a_done = await c.client.call(HEARTBEAT, 1, join(member_id="a", member_epoch=1, topic_partitions=kept))
        b_after = await c.client.call(
            HEARTBEAT, 1, join(member_id="b", member_epoch=b.member_epoch, topic_partitions=[])
        )
        described = await c.client.call(DESCRIBE, 0, ConsumerGroupDescribeRequest(group_ids=["cg", "nobody"]))
        return b_before, a_told, a_done, b_after, described

    b_before, a_told, a_done, b_after, described = run(tmp_path, scenario)
    assert b_before == []  # partition 1 is still a's: b waits for it (UNRELEASED_PARTITIONS)
    assert a_told.member_epoch == 1 and len(a_told.assignment.topic_partitions[0].partitions) == 1
    assert a_done.member_epoch == 2  # revocation confirmed: a moves to the assignment epoch
    assert [len(tp.partitions) for tp in b_after.assignment.topic_partitions] == [1]
    group, unknown = described.groups
    assert (group.group_state, group.group_epoch, len(group.members)) == ("Stable", 2, 2)
    assert unknown.error_code == Errors.GROUP_ID_NOT_FOUND


def test_offset_commits_of_a_consumer_group_are_checked_against_the_member_epoch(tmp_path):
    async def scenario(c: Cluster):
        body = await c.client.call(HEARTBEAT, 1, join(member_id="a"))

        async def commit(epoch):
            request = OffsetCommitRequest(
                group_id="cg",
                generation_id_or_member_epoch=epoch,
                member_id="a",
                topics=[
                    OffsetCommitRequest.OffsetCommitRequestTopic(
                        name="t",
                        partitions=[
                            OffsetCommitRequest.OffsetCommitRequestPartition(
                                partition_index=0, committed_offset=1
                            )
                        ],
                    )
                ],
            )
            return (await c.client.call(8, 9, request)).topics[0].partitions[0].error_code

        return await commit(body.member_epoch), await commit(body.member_epoch - 1)

    assert run(tmp_path, scenario) == (Errors.NONE, Errors.STALE_MEMBER_EPOCH)


def test_a_silent_member_is_removed_after_the_session_timeout(tmp_path):
    async def scenario(c: Cluster):
        await c.client.call(HEARTBEAT, 1, join(member_id="a"))
        await asyncio.sleep(1.2)
        described = await c.client.call(DESCRIBE, 0, ConsumerGroupDescribeRequest(group_ids=["cg"]))
        return described.groups[0]

    group = run(
        tmp_path,
        scenario,
        **{
            "group.consumer.session.timeout.ms": "500",
            "group.consumer.min.session.timeout.ms": "100",
            "group.consumer.heartbeat.interval.ms": "100",
            "group.consumer.min.heartbeat.interval.ms": "100",
        },
    )
    assert (group.group_state, group.members) == ("Empty", [])


def test_consumer_groups_are_read_back_after_a_restart(tmp_path):
    """The group, target and current assignment records in __consumer_offsets bring a consumer group
    back with its epochs, members and assignments; its members go on heartbeating as before."""
    from kconform.reference_broker.node import BrokerNode

    from ..support.group_rules_cluster import FAST
    from ..support.rawclient import RawClient

    props = {"node.id": "1", "log.dirs": str(tmp_path / "data"), **FAST}

    async def phase(first: bool):
        node = BrokerNode.from_config_file(None, dict(props))
        host, port = await node.start("127.0.0.1", 0)
        client = await RawClient.connect(host, port)
        try:
            c = Cluster(node, host, port, client)
            if first:
                await c.create_topic("t", 2)
                await client.call(HEARTBEAT, 1, join(member_id="a"))
                await client.call(HEARTBEAT, 1, join(member_id="b", instance_id="static-b"))
            described = await client.call(DESCRIBE, 0, ConsumerGroupDescribeRequest(group_ids=["cg"]))
            group = described.groups[0]
            epoch_a = next(m.member_epoch for m in group.members if m.member_id == "a")
            beat = await client.call(
                HEARTBEAT, 1, join(member_id="a", member_epoch=epoch_a, topic_partitions=None)
            )
            return group, beat
        finally:
            await client.close()
            await node.stop()

    before, _ = asyncio.run(phase(True))
    after, beat = asyncio.run(phase(False))
    summary = lambda g: (  # noqa: E731
        g.group_epoch,
        g.assignment_epoch,
        sorted((m.member_id, m.instance_id, m.member_epoch) for m in g.members),
        sorted(
            (m.member_id, str(tp.topic_id), tuple(tp.partitions))
            for m in g.members
            for tp in m.target_assignment.topic_partitions
        ),
    )
    assert summary(after) == summary(before)
    assert before.group_epoch == 2 and len(before.members) == 2
    assert beat.error_code == Errors.NONE


# ---- ConsumerGroupDescribe v1, DescribeGroups v6, RE2/J subscriptions -------------------------------------


def test_consumer_group_describe_v1_gives_each_member_its_type(tmp_path):
    """ConsumerGroupMember.asConsumerGroupDescribeMember (KIP-1099): MemberType 1 for a member on the
    consumer protocol (0 for a classic member: ``groups/test_mixed_groups.py``); v0 has no such field
    (its default, -1, is what a v0 reader sees)."""

    async def scenario(c: Cluster):
        await c.client.call(HEARTBEAT, 1, join())
        request = ConsumerGroupDescribeRequest(group_ids=["cg"])
        return (
            (await c.client.call(DESCRIBE, 1, request)).groups[0].members,
            (await c.client.call(DESCRIBE, 0, request)).groups[0].members,
        )

    v1, v0 = run(tmp_path, scenario)
    assert [m.member_type for m in v1] == [1]
    assert [m.member_type for m in v0] == [-1]


def test_describe_groups_v6_says_a_consumer_group_is_not_a_classic_group(tmp_path):
    """GroupMetadataManager.describeGroups uses classicGroup(), whose GroupIdNotFoundException for a
    consumer group reads "Group %s is not a classic group."; v6 answers it as GROUP_ID_NOT_FOUND."""

    async def scenario(c: Cluster):
        await c.client.call(HEARTBEAT, 1, join())
        body = await c.client.call(15, 6, DescribeGroupsRequest(groups=["cg"]))
        return body.groups[0]

    described = run(tmp_path, scenario)
    assert (described.error_code, described.error_message, described.group_state) == (
        Errors.GROUP_ID_NOT_FOUND,
        "Group cg is not a classic group.",
        "Dead",
    )


def test_subscription_regexes_are_re2j(tmp_path):
    """GroupMetadataManager compiles a new SubscribedTopicRegex with com.google.re2j.Pattern
    (Utils.throwIfRegularExpressionIsInvalid): what RE2/J refuses is INVALID_REGULAR_EXPRESSION with
    "SubscribedTopicRegex `%s` is not a valid regular expression: %s." and RE2/J's description, even
    where java.util.regex or Python would take it (lookaround, backreferences, possessive repeats); RE2's
    own syntax (\\Q...\\E, POSIX classes) resolves, and a topic matches only as a whole."""

    async def scenario(c: Cluster):
        refused = {}
        for regex in ("(?=t).*", "(t)\\1", "t*+", "t(", "\\Z"):
            body = await c.client.call(
                HEARTBEAT, 1, join(subscribed_topic_names=None, subscribed_topic_regex=regex)
            )
            refused[regex] = (body.error_code, body.error_message)
        member = await c.client.call(
            HEARTBEAT, 1, join(subscribed_topic_names=None, subscribed_topic_regex="\\Qt\\E|[[:digit:]]+")
        )
        described = await c.client.call(DESCRIBE, 1, ConsumerGroupDescribeRequest(group_ids=["cg"]))
        return refused, member.error_code, described.groups[0].members[0]

    refused, joined, member = run(tmp_path, scenario)
    message = "SubscribedTopicRegex `{}` is not a valid regular expression: {}."
    why = {
        "(?=t).*": "invalid or unsupported Perl syntax",
        "(t)\\1": "invalid escape sequence",
        "t*+": "invalid nested repetition operator",
        "t(": "missing closing )",
        "\\Z": "invalid escape sequence",
    }
    assert refused == {r: (Errors.INVALID_REGULAR_EXPRESSION, message.format(r, d)) for r, d in why.items()}
    assert joined == Errors.NONE
    assert [(t.topic_name, t.partitions) for t in member.assignment.topic_partitions] == [("t", [0, 1])]


RE2J_SYNTAX = {
    # pattern: RE2/J's PatternSyntaxException.getDescription, or the names it matches in full
    "(?<=a)b": "invalid named capture",  # RE2/J's Parser.parsePerlFlags reads (?< as a named group
    "(?P<n>a)(?P<n>b)": "duplicate capture group name",
    "(?x)a": "invalid or unsupported Perl syntax",
    "a**": "invalid nested repetition operator",
    "a{2}*": "invalid nested repetition operator",
    "a{*": "invalid nested repetition operator",  # RE2/J counts a literal '{' as a repeat here
    "*a": "missing argument to repetition operator",
    "a|*b": "missing argument to repetition operator",
    "a{1001}": "invalid repeat count",
    "a)": "regexp/syntax: internal error",  # RE2/J's "stack underflow"
    "[a": "missing closing ]",
    "[z-a]": "invalid character class range",
    "[[:nope:]]": "invalid character class range",
    "\\p{Nope}": "invalid character class range",
    "[\\b]": "invalid escape sequence",
    "\\8": "invalid escape sequence",
    "\\C": "invalid escape sequence",
    "a\\": "trailing backslash at end of expression",
    "a{01}": ["a{01}"],  # not a repeat: a literal
    "t$": ["t"],  # $ is the end of the text, not before a final newline
    "(?i)ORDERS-\\d+": ["orders-1", "Orders-22"],
    "\\Qa.b\\E": ["a.b"],
    "[[:alpha:]]+\\z": ["axb", "t", "orders", "payments"],
    "a*?|pay(?U:.*)s": ["", "payments"],
}


def test_re2j_syntax():
    """RE2/J 1.8's Parser (what Kafka's coordinators compile with): its errors, and matches() in full."""
    from kconform.reference_broker.groups.re2 import Re2SyntaxError, compile_re2

    names = ["", "a.b", "axb", "a{01}", "t", "t\n", "orders", "orders-1", "Orders-22", "payments"]
    for pattern, expected in RE2J_SYNTAX.items():
        try:
            compiled = compile_re2(pattern)
        except Re2SyntaxError as exc:
            assert exc.description == expected, pattern
            continue
        assert [n for n in names if compiled.fullmatch(n)] == expected, pattern
