"""Group operations for the differential engine: a classic group member's life (join, sync, heartbeat,
leave), a KIP-848 member's heartbeats, and the group admin requests.

Members are indexes (group 0, member 1). What each target gave out (member ids, generations, member
epochs, assignments) is kept per side in ``Context.state`` by ``learn``, so a step sends each target
back its own ids: a sequence of steps reaches the states a real consumer reaches, and shrinks like any
other case."""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass

from kconform.codecs.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
    ConsumerProtocolSubscription,
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    ListGroupsRequest,
    OffsetDeleteRequest,
    SyncGroupRequest,
)

from .context import AFTER_ANOTHER_MEMBERS_DIFFERING_STEP, Context, topic_shape
from .operations import Operation, PerSide

__all__ = [
    "ConsumerGroupDescribe",
    "ConsumerGroupHeartbeat",
    "DeleteGroups",
    "DescribeGroups",
    "Heartbeat",
    "JoinGroup",
    "LeaveGroup",
    "ListGroups",
    "OffsetDelete",
    "SyncGroup",
]

# Short timeouts: a join that waits for another member's rejoin waits at most the rebalance timeout
# (v1+; v0 has none and waits out the session timeout). The session is short too, because librdkafka's
# mock holds every rejoin for the session timeout less 1 s even when no other member is due: the test
# targets allow it (group.min.session.timeout.ms=1000, harness/targets/reference.py TARGET_DEFAULTS).
_REBALANCE_TIMEOUT_MS = 1_000
_SESSION_TIMEOUT_MS = 1_200


def _member(ctx: Context, side: str, group: int, member: int) -> str:
    return ctx.state.get((side, "member", group, member), "")


def _subscription(ctx: Context) -> bytes:
    """What a Java consumer sends as a protocol's metadata: its topics as ConsumerProtocolSubscription
    (v0, after its int16 version). Kafka reads it when a classic member joins a consumer group."""
    return struct.pack(">h", 0) + ConsumerProtocolSubscription(topics=[ctx.topic(0)]).encode(0)


def _in_a_consumer_group(ctx: Context, group: int) -> bool:
    """Whether a KIP-848 member of the case has joined ``group`` (and not left it)."""
    return any(key[:3] == ("a", "member848", group) for key in ctx.state)


def _others_joined(ctx: Context, group: int, member: int, sides: tuple[str, ...] = ("a",)) -> bool:
    """Whether another classic member of the case holds an id in ``group`` (on one of ``sides``)."""
    return any(
        key[0] in sides and key[1:3] == ("member", group) and key[3] != member and value
        for key, value in ctx.state.items()
    )


WITH_ANOTHER_MEMBER = "with another member"
# A join whose protocol another member of the group did not join with (side a's answers).
ANOTHER_PROTOCOL = "a protocol another member lacks"
# A member whose last join was answered MEMBER_ID_REQUIRED (79) on side a: the group holds it pending.
PENDING_MEMBER = "pending member"
# A join with another member in the group, answered without any other member joining meanwhile (sent
# while it was held, or held when it came): Kafka removes the others when the rebalance times out.
THE_OTHERS_NOT_REJOINING = "the others not rejoining"
# A heartbeat of a member whose join left it alone in the group, with no join of another member since.
ALONE_SINCE_ITS_JOIN = "alone since its join"
# A member that did not rejoin while another member's join (which started a rebalance) was held, and
# has not joined since: Kafka removed it when the rebalance timed out.
LEFT_OUT = "left out of another member's rebalance"


def _left_out(ctx: Context, group: int, member: int) -> bool:
    return bool(ctx.state.get(("a", "left out", group, member)))


def _pending(ctx: Context, group: int, member: int) -> bool:
    """Whether side a holds the member pending: MEMBER_ID_REQUIRED gave it an id it has not joined with
    (a refused join leaves it pending)."""
    return bool(ctx.state.get(("a", "pending", group, member)))


class _ClassicMember:
    """A classic member's requests go on a connection of its own, as each consumer has one to its
    coordinator: a member's held JoinGroup does not hold up another member's requests.

    Its shape says when another member of the case holds an id in the group (on either target), as
    the answer then depends on that member too, and when another member's join, sync or leave was
    taken by one target only (the groups' members differ from then on: a consequence, not a cause)."""

    def channel(self, ctx):
        return ("member", self.group, self.member)

    def membership(self):
        return (self.group, self.member)

    def _situation_parts(self, ctx):
        others = _others_joined(ctx, self.group, self.member, sides=("a", "b"))
        parts = [WITH_ANOTHER_MEMBER] if others else []
        if any(g == self.group and m != self.member for g, m in ctx.diverged_members):
            parts.append(AFTER_ANOTHER_MEMBERS_DIFFERING_STEP)
        return parts


@dataclass(frozen=True)
class JoinGroup(_ClassicMember, PerSide, Operation):
    group: int = 0
    member: int = 0
    protocol: str = "range"
    api_key = 11

    def body_for(self, side, ctx, version):
        return JoinGroupRequest(
            group_id=ctx.group(self.group),
            session_timeout_ms=_SESSION_TIMEOUT_MS,
            rebalance_timeout_ms=_REBALANCE_TIMEOUT_MS,
            member_id=_member(ctx, side, self.group, self.member),
            protocol_type="consumer",
            protocols=[
                JoinGroupRequest.JoinGroupRequestProtocol(name=self.protocol, metadata=_subscription(ctx))
            ],
        )

    def may_wait(self, ctx):
        # Kafka holds a join while other members are due to rejoin (up to the rebalance timeout)
        return _others_joined(ctx, self.group, self.member)

    def learn(self, side, ctx, answer):
        if answer.member_id:  # also from MEMBER_ID_REQUIRED (79): the id to join with next
            ctx.state[(side, "member", self.group, self.member)] = answer.member_id
        if answer.error_code in (0, 79):
            ctx.state[(side, "pending", self.group, self.member)] = answer.error_code == 79
        ctx.state[(side, "join answer", self.group, self.member)] = answer.error_code
        if answer.error_code == 0:
            ctx.state[(side, "joined with", self.group, self.member)] = self.protocol
            ctx.state.pop((side, "left out", self.group, self.member), None)
            ctx.state[(side, "generation", self.group)] = answer.generation_id
            if answer.leader == answer.member_id:  # followers are told no members
                ctx.state[(side, "members", self.group)] = [m.member_id for m in answer.members]
            ctx.state[(side, "protocol", self.group)] = answer.protocol_name
            ctx.state[(side, "leader", self.group)] = answer.leader

    def answered_parts(self, ctx, shape, alongside):
        # A new or pending member's join starts a rebalance; a member that does not join again while
        # it is held is removed when it times out (a known member's unchanged rejoin starts none).
        starts_rebalance = "(new member" in shape or PENDING_MEMBER in shape
        ctx.state[("a", "alone", self.group, self.member)] = False
        if not starts_rebalance or not _others_joined(ctx, self.group, self.member, sides=("a", "b")):
            return []
        others = {op.member for op in alongside if isinstance(op, JoinGroup) and op.group == self.group}
        if others - {self.member}:
            return []
        if ctx.state.get(("a", "join answer", self.group, self.member)) == 0:
            ctx.state[("a", "alone", self.group, self.member)] = True
            for key in [k for k in ctx.state if k[:3] == ("a", "member", self.group) and k[3] != self.member]:
                ctx.state[("a", "left out", self.group, key[3])] = True
        return [THE_OTHERS_NOT_REJOINING]

    def _shape_parts(self, ctx):
        parts = [] if _member(ctx, "a", self.group, self.member) else ["new member"]
        parts += [PENDING_MEMBER] if _pending(ctx, self.group, self.member) else []
        parts += [LEFT_OUT] if _left_out(ctx, self.group, self.member) else []
        parts += ["into a consumer group"] if _in_a_consumer_group(ctx, self.group) else []
        others = {
            protocol
            for key, protocol in ctx.state.items()
            if key[:3] == ("a", "joined with", self.group) and key[3] != self.member
        }
        return parts + ([ANOTHER_PROTOCOL] if others - {self.protocol} else [])


@dataclass(frozen=True)
class SyncGroup(_ClassicMember, PerSide, Operation):
    group: int = 0
    member: int = 0
    assign: bool = True  # the leader hands out assignments (followers send none)
    api_key = 14

    def body_for(self, side, ctx, version):
        member_id = _member(ctx, side, self.group, self.member)
        members = ctx.state.get((side, "members", self.group), []) if self.assign else []
        return SyncGroupRequest(
            group_id=ctx.group(self.group),
            generation_id=ctx.state.get((side, "generation", self.group), -1),
            member_id=member_id,
            protocol_type="consumer",
            protocol_name=ctx.state.get((side, "protocol", self.group)) or "range",
            assignments=[
                SyncGroupRequest.SyncGroupRequestAssignment(member_id=m, assignment=b"\x00\x01")
                for m in members
            ],
        )

    def may_wait(self, ctx):
        # a follower's sync is held until the leader's brings the assignments (GroupCoordinator)
        member_id = _member(ctx, "a", self.group, self.member)
        return bool(member_id) and ctx.state.get(("a", "leader", self.group)) not in (None, member_id)

    def _shape_parts(self, ctx):
        return ["with assignments"] if self.assign else []


@dataclass(frozen=True)
class Heartbeat(_ClassicMember, PerSide, Operation):
    group: int = 0
    member: int = 0
    stale_generation: bool = False
    api_key = 12

    def body_for(self, side, ctx, version):
        generation = ctx.state.get((side, "generation", self.group), -1)
        return HeartbeatRequest(
            group_id=ctx.group(self.group),
            generation_id=generation - 1 if self.stale_generation else generation,
            member_id=_member(ctx, side, self.group, self.member),
        )

    def membership(self):
        return None  # a heartbeat changes no member

    def _shape_parts(self, ctx):
        parts = ["stale generation"] if self.stale_generation else []
        parts += [] if _member(ctx, "a", self.group, self.member) else ["unknown member"]
        parts += [PENDING_MEMBER] if _pending(ctx, self.group, self.member) else []
        parts += [LEFT_OUT] if _left_out(ctx, self.group, self.member) else []
        joins = [op for _, op in ctx.sent if isinstance(op, JoinGroup) and op.group == self.group]
        last_is_its_own = bool(joins) and joins[-1].member == self.member
        if last_is_its_own and ctx.state.get(("a", "alone", self.group, self.member)):
            parts.append(ALONE_SINCE_ITS_JOIN)
        return parts


@dataclass(frozen=True)
class LeaveGroup(_ClassicMember, PerSide, Operation):
    group: int = 0
    member: int = 0
    api_key = 13

    def body_for(self, side, ctx, version):
        member_id = _member(ctx, side, self.group, self.member)
        if version >= 3:
            identity = LeaveGroupRequest.MemberIdentity(member_id=member_id)
            return LeaveGroupRequest(group_id=ctx.group(self.group), members=[identity])
        return LeaveGroupRequest(group_id=ctx.group(self.group), member_id=member_id)

    def learn(self, side, ctx, answer):
        if answer.error_code == 0:
            ctx.state.pop((side, "member", self.group, self.member), None)
            ctx.state.pop((side, "joined with", self.group, self.member), None)

    def _shape_parts(self, ctx):
        parts = [] if _member(ctx, "a", self.group, self.member) else ["unknown member"]
        return parts + ([LEFT_OUT] if _left_out(ctx, self.group, self.member) else [])


@dataclass(frozen=True)
class DescribeGroups(Operation):
    groups: tuple[int, ...] = (0,)
    api_key = 15

    def body(self, ctx, version):
        return DescribeGroupsRequest(
            groups=[ctx.group(g) for g in self.groups], include_authorized_operations=False
        )


@dataclass(frozen=True)
class ListGroups(Operation):
    """Every group the broker has; only this case's own are compared."""

    api_key = 16

    def own_entries(self, version):
        return ("groups", "group_id")

    def body(self, ctx, version):
        return ListGroupsRequest(states_filter=[], types_filter=[])


@dataclass(frozen=True)
class DeleteGroups(Operation):
    group: int = 0
    api_key = 42

    def body(self, ctx, version):
        return DeleteGroupsRequest(groups_names=[ctx.group(self.group)])


@dataclass(frozen=True)
class OffsetDelete(Operation):
    group: int = 0
    topic: int = 0
    partition: int = 0
    api_key = 47

    def body(self, ctx, version):
        partition = OffsetDeleteRequest.OffsetDeleteRequestPartition(partition_index=self.partition)
        topic = OffsetDeleteRequest.OffsetDeleteRequestTopic(
            name=ctx.topic(self.topic), partitions=[partition]
        )
        return OffsetDeleteRequest(group_id=ctx.group(self.group), topics=[topic])

    def topics(self, ctx):
        return [ctx.topic(self.topic)]

    def _shape_parts(self, ctx):
        return topic_shape(ctx, self.topic, self.partition)


@dataclass(frozen=True)
class ConsumerGroupHeartbeat(PerSide, Operation):
    """A KIP-848 member: the first heartbeat joins (epoch 0, with its subscription), later ones report
    what the member owns, ``leave`` sends epoch -1."""

    group: int = 0
    member: int = 0
    topic: int = 0
    leave: bool = False
    api_key = 68

    def body_for(self, side, ctx, version):
        key = (side, "member848", self.group, self.member)
        epoch = ctx.state.get((side, "epoch848", self.group, self.member), 0)
        member_id = ctx.state.get(key, "")
        if not member_id and version >= 1:  # from v1 the member names itself (KIP-1082)
            member_id = str(uuid.uuid5(uuid.NAMESPACE_OID, f"{ctx.prefix}/{self.group}/{self.member}"))
        joining = epoch == 0
        owned = ctx.state.get((side, "owned848", self.group, self.member), [])
        return ConsumerGroupHeartbeatRequest(
            group_id=ctx.group(self.group),
            member_id=member_id,
            member_epoch=-1 if self.leave else epoch,
            rebalance_timeout_ms=_REBALANCE_TIMEOUT_MS if joining else -1,
            subscribed_topic_names=[ctx.topic(self.topic)] if joining else None,
            topic_partitions=[
                ConsumerGroupHeartbeatRequest.TopicPartitions(topic_id=t, partitions=list(p))
                for t, p in owned
            ]
            if not self.leave
            else None,
        )

    def learn(self, side, ctx, answer):
        if answer.error_code != 0:
            return
        if self.leave:
            for what in ("member848", "epoch848", "owned848"):
                ctx.state.pop((side, what, self.group, self.member), None)
            return
        if answer.member_id:
            ctx.state[(side, "member848", self.group, self.member)] = answer.member_id
        ctx.state[(side, "epoch848", self.group, self.member)] = answer.member_epoch
        if answer.assignment is not None:
            owned = [(t.topic_id, tuple(t.partitions)) for t in answer.assignment.topic_partitions]
            ctx.state[(side, "owned848", self.group, self.member)] = owned

    def topics(self, ctx):
        return [ctx.topic(self.topic)]

    def _shape_parts(self, ctx):
        joined = ("a", "epoch848", self.group, self.member) in ctx.state
        return (["leave"] if self.leave else []) + ([] if joined else ["joining"])


@dataclass(frozen=True)
class ConsumerGroupDescribe(Operation):
    groups: tuple[int, ...] = (0,)
    api_key = 69

    def body(self, ctx, version):
        return ConsumerGroupDescribeRequest(
            group_ids=[ctx.group(g) for g in self.groups], include_authorized_operations=False
        )
