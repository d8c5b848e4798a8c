"""How a KIP-848 group's members move toward their target assignment (Kafka's
``CurrentAssignmentBuilder``), how the target is computed (``TargetAssignmentBuilder``), and the steps a
heartbeat or a classic member's JoinGroup takes between the two (``move_toward_target``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from uuid import UUID

from kconform.codecs.errors import Errors

from .errors import GroupError
from .kip848_group import (
    ConsumerGroup,
    ConsumerMember,
    MemberState,
    Partitions,
    PartitionsIn,
    _owns_any,
    _partitions,
    _preferred_assignor,
)
from .kip848_log_records import (
    GroupEpoch,
    ResolvedRegex,
    SubscriptionMetadata,
    TargetEpoch,
    TargetMember,
    TopicMetadata,
)
from .server_assignors import ASSIGNORS

# ---- reconciliation (Kafka's CurrentAssignmentBuilder) ----------------------------------------------


__all__ = ["compute_target", "move_toward_target", "next_assignment", "reconcile"]


def next_assignment(
    member: ConsumerMember,
    target_epoch: int,
    target: PartitionsIn,
    owned: PartitionsIn | None,
    partition_epoch: Callable[[UUID, int], int],
) -> ConsumerMember:
    """The member after one reconciliation step toward ``target`` at ``target_epoch``. ``owned`` is
    what the heartbeat reports (None: not reported); ``partition_epoch`` says at which epoch a
    partition is held by anyone (-1: free)."""
    if member.state == MemberState.STABLE:
        if member.member_epoch != target_epoch:
            return _next(member, member.member_epoch, target_epoch, target, owned, partition_epoch)
        return member
    if member.state == MemberState.UNREVOKED_PARTITIONS:
        if _owns_any(owned, member.pending_revocation):
            return member  # still holding what it must give up
        epoch = min(member.member_epoch + 1, target_epoch)
        return _next(member, epoch, target_epoch, target, owned, partition_epoch)
    if member.state == MemberState.UNRELEASED_PARTITIONS:
        return _next(member, member.member_epoch, target_epoch, target, owned, partition_epoch)
    if owned is None or any(owned.values()):
        raise GroupError(
            Errors.FENCED_MEMBER_EPOCH,
            "The consumer group member is in a unknown state. "
            "The member must abandon all its partitions and rejoin.",
        )
    return _next(member, target_epoch, target_epoch, target, owned, partition_epoch)


def _next(
    member: ConsumerMember,
    revoking_epoch: int,
    target_epoch: int,
    target: PartitionsIn,
    owned: PartitionsIn | None,
    partition_epoch: Callable[[UUID, int], int],
) -> ConsumerMember:
    keep: dict[UUID, frozenset[int]] = {}
    revoke: dict[UUID, frozenset[int]] = {}
    add: dict[UUID, frozenset[int]] = {}
    unreleased = False
    for topic in set(target) | set(member.assigned):
        wanted = frozenset(target.get(topic, ()))
        current = member.assigned.get(topic, frozenset())
        kept = current & wanted
        missing = wanted - kept
        free = frozenset(p for p in missing if partition_epoch(topic, p) == -1)
        unreleased = unreleased or free != missing
        if kept:
            keep[topic] = kept
        if current - kept:
            revoke[topic] = current - kept
        if free:
            add[topic] = free
    if revoke and _owns_any(owned, revoke):
        return replace(
            member,
            state=MemberState.UNREVOKED_PARTITIONS,
            member_epoch=revoking_epoch,
            previous_member_epoch=member.member_epoch,
            assigned=keep,
            pending_revocation=revoke,
        )
    assigned = {t: keep.get(t, frozenset()) | add.get(t, frozenset()) for t in set(keep) | set(add)}
    return replace(
        member,
        state=MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE,
        member_epoch=target_epoch,
        previous_member_epoch=member.member_epoch,
        assigned=assigned,
        pending_revocation={},
    )


# ---- target assignment (Kafka's TargetAssignmentBuilder) -------------------------------------------


def _subscription_metadata(
    members: Iterable[ConsumerMember],
    resolved: Mapping[str, ResolvedRegex],
    topics: Mapping[str, TopicMetadata],
) -> dict[str, TopicMetadata]:
    names: set[str] = set()
    for m in members:
        names |= m.topics(resolved)
    return {name: topics[name] for name in names if name in topics}


def _target_assignment(
    group: ConsumerGroup,
    members: Mapping[str, ConsumerMember],
    replaced: tuple[str, str] | None,
    epoch: int,
    metadata: Mapping[str, TopicMetadata],
    assignor: str,
    resolved: Mapping[str, ResolvedRegex] | None = None,
) -> tuple[dict[str, Partitions], list]:
    """The new target of every member in ``members`` and the records for the members whose target
    changed, then the assignment epoch. ``replaced`` (old id, new id): a static member taking over a
    departed one starts from the departed one's target."""
    resolved = group.resolved_regexes if resolved is None else resolved
    ids = {name: t.topic_id for name, t in metadata.items()}
    subscriptions = {mid: {ids[n] for n in m.topics(resolved) if n in ids} for mid, m in members.items()}
    current = {mid: group.target.get(mid, {}) for mid in members}
    if replaced is not None:
        old_id, new_id = replaced
        current[new_id] = group.target.get(old_id, {})
    partitions = {t.topic_id: t.partitions for t in metadata.values()}
    instance_ids = {mid: m.instance_id for mid, m in members.items()}
    assign = ASSIGNORS.get(assignor, ASSIGNORS["uniform"])
    computed = assign(subscriptions, current, partitions, instance_ids)
    targets = {mid: _partitions(computed.get(mid)) for mid in members}
    records: list = [
        TargetMember(group.group_id, mid, parts)
        for mid, parts in targets.items()
        if mid not in group.target or group.target[mid] != parts
    ]
    records.append(TargetEpoch(group.group_id, epoch))
    return targets, records


def move_toward_target(
    group: ConsumerGroup,
    members: Mapping[str, ConsumerMember],
    updated: ConsumerMember,
    replaced_id: str | None,
    resolved: Mapping[str, ResolvedRegex],
    topics: Mapping[str, TopicMetadata],
    bump: bool,
    assignors: Sequence[str],
    owned: PartitionsIn | None,
) -> tuple[ConsumerMember, list]:
    """After a member's subscription is settled (``members``: the group's members as they will be,
    ``updated`` among them; ``bump``: its subscription changed): the subscribed topics' ids and partition
    counts, one group epoch bump for all of it, a new target assignment when the group epoch passed the
    assignment epoch, then one reconciliation step of the member toward its target. Returns the member
    after that step and the records, in Kafka's order (``consumerGroupHeartbeat`` steps 1-3,
    ``classicGroupJoinToConsumerGroup`` likewise)."""
    gid, member_id = group.group_id, updated.member_id
    records: list = []
    metadata = _subscription_metadata(members.values(), resolved, topics)
    if metadata != group.subscription_metadata:
        records.append(SubscriptionMetadata(gid, tuple(sorted(metadata.values(), key=lambda t: t.name))))
        bump = True
    group_epoch = group.group_epoch + 1 if bump else group.group_epoch
    if bump:
        records.append(GroupEpoch(gid, group_epoch))
    if group_epoch > group.assignment_epoch:
        assignor = _preferred_assignor(members.values(), assignors)
        replaced = None if replaced_id is None else (replaced_id, member_id)
        targets, target_records = _target_assignment(
            group, members, replaced, group_epoch, metadata, assignor, resolved
        )
        records += target_records
        target_epoch, target = group_epoch, targets.get(member_id, {})
    else:
        target_epoch = group.assignment_epoch
        holder = (
            group.static_members.get(updated.instance_id) if updated.instance_id is not None else member_id
        )
        target = group.target.get(holder, {}) if holder is not None else {}
    if updated.is_reconciled_to(target_epoch):
        return updated, records
    epochs = group.partition_epochs()
    reconciled = next_assignment(updated, target_epoch, target, owned, lambda t, p: epochs.get((t, p), -1))
    if reconciled != updated:
        records.append(reconciled.assignment_record(gid))
    return reconciled, records


# ---- direct steps, for tests of the state machine -----------------------------------------------


def compute_target(
    group: ConsumerGroup, topics_by_name: Mapping[str, tuple[UUID, int]], assignor: str = "uniform"
) -> None:
    """Run the assignor over the current members and move the assignment epoch to the group epoch."""
    topics = {name: TopicMetadata(tid, name, count) for name, (tid, count) in topics_by_name.items()}
    metadata = _subscription_metadata(group.members.values(), group.resolved_regexes, topics)
    _, records = _target_assignment(group, dict(group.members), None, group.group_epoch, metadata, assignor)
    for record in records:
        group.apply(record)


def reconcile(group: ConsumerGroup, member: ConsumerMember, owned: PartitionsIn | None) -> ConsumerMember:
    """Move ``member`` one step toward its target, given what its heartbeat says it owns."""
    epochs = group.partition_epochs()
    updated = next_assignment(
        member,
        group.assignment_epoch,
        group.target.get(member.member_id, {}),
        owned,
        lambda t, p: epochs.get((t, p), -1),
    )
    group.members[member.member_id] = updated
    return updated
