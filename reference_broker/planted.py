"""Planted bugs: test-only switches that make the reference broker misbehave in one known way, so the
harness can prove that it notices (the differential engine finds and shrinks the difference; the chaos
checkers report the anomaly). They are switched on only through ``KCONFORM_PLANTED_BUGS`` (names,
comma-separated) in the broker's environment; a broker started with an unknown name refuses to start.

Each bug wraps the one broker function it breaks, once, when the broker starts (``install``): a broker
started without them runs its own functions, with no switch checked on any request. The chaos suite
(``suites/chaos/test_planted_bugs.py``) runs each against the workload that shows it and names the
anomalies the checkers must report; the replication bugs show themselves in
``suites/reference_broker/cluster/test_planted_replication_bugs.py``, each beside the same scenario
without it. A cluster plants them on every node or on chosen ones (``cluster_processes.start_cluster``,
``planted``)."""

from __future__ import annotations

import collections
import os
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["PLANTED_BUGS", "PlantedBug", "PlantedBugError", "check_environment", "install"]


@dataclass(frozen=True)
class PlantedBug:
    description: str
    install: Callable[[], None]  # wraps the one function the bug breaks


class PlantedBugError(ValueError):
    pass


def _wrap(owner, name: str, make: Callable) -> None:
    setattr(owner, name, make(getattr(owner, name)))


def _batches(records) -> list[tuple[object, bytes]]:
    """The whole batches of a read, as (header, bytes), in log order."""
    from kconform.codecs.records import iter_batch_headers

    from .partition import LogSlice

    data = records.read() if isinstance(records, LogSlice) else bytes(records)
    out, position = [], 0
    for header in iter_batch_headers(data, verify_crc=False):
        out.append((header, data[position : position + header.size_in_bytes]))
        position += header.size_in_bytes
    return out


def _wrap_fetch(make: Callable) -> None:
    from .partition import Partition

    _wrap(Partition, "read_for_fetch", make)


# ---- produce ------------------------------------------------------------------------------------


def _ack_without_write() -> None:
    from .storage import AppendInfo, AppendOrigin, PartitionLog

    appends: collections.Counter[int] = collections.Counter()

    def make(append):
        def append_or_drop(self, batches, *, origin=None, **kw):
            if origin is AppendOrigin.CLIENT:
                appends[id(self)] += 1
                if appends[id(self)] % 10 == 0:  # acknowledged with the offsets validation gave it
                    return AppendInfo(-1, -1, -1, -1, -1, self.log_start_offset, 0, 0, 0)
            return append(self, batches, origin=origin, **kw)

        return append_or_drop

    _wrap(PartitionLog, "append", make)


def _forget_idempotent_state() -> None:
    from .storage import AppendOrigin, Verdict, VerdictKind
    from .storage import _producer_state_manager as manager

    def make(check_sequence):
        def accept_any_sequence(
            state, producer_epoch, first_seq, last_seq, *, origin=AppendOrigin.CLIENT, **kw
        ):
            if origin is AppendOrigin.CLIENT:
                return Verdict(VerdictKind.OK)
            return check_sequence(state, producer_epoch, first_seq, last_seq, origin=origin, **kw)

        return accept_any_sequence

    _wrap(manager, "check_sequence", make)


# ---- fetch and list offsets -----------------------------------------------------------------------


def _list_offsets_latest_off_by_one() -> None:
    from .partition import Partition
    from .storage import LATEST_TIMESTAMP

    def make(offset_for_timestamp):
        def one_past(self, timestamp, **kw):
            offset, found_timestamp, epoch = offset_for_timestamp(self, timestamp, **kw)
            return (offset + 1 if timestamp == LATEST_TIMESTAMP else offset), found_timestamp, epoch

        return one_past

    _wrap(Partition, "offset_for_timestamp", make)


def _read_committed_serves_aborted() -> None:
    def make(read_for_fetch):
        def no_aborted_list(self, fetch_offset, max_bytes, *, read_committed, **kw):
            read = read_for_fetch(self, fetch_offset, max_bytes, read_committed=read_committed, **kw)
            if read.aborted_transactions is not None:
                read.aborted_transactions = []  # the reader cannot tell aborted batches from committed
            return read

        return no_aborted_list

    _wrap_fetch(make)


def _fetch_hides_newest_batch() -> None:
    def make(read_for_fetch):
        def hide_newest(self, fetch_offset, max_bytes, **kw):
            read = read_for_fetch(self, fetch_offset, max_bytes, **kw)
            batches = _batches(read.records)
            if batches and batches[-1][0].next_offset >= read.high_watermark:
                hidden = batches[-1][0].base_offset
                read.records = b"".join(raw for _, raw in batches[:-1])
                read.high_watermark = hidden
                read.last_stable_offset = min(read.last_stable_offset, hidden)
            return read

        return hide_newest

    _wrap_fetch(make)


def _fetch_serves_batches_newest_first() -> None:
    def make(read_for_fetch):
        def newest_first(self, fetch_offset, max_bytes, **kw):
            read = read_for_fetch(self, fetch_offset, max_bytes, **kw)
            read.records = b"".join(raw for _, raw in reversed(_batches(read.records)))
            return read

        return newest_first

    _wrap_fetch(make)


def _fetch_high_watermark_past_log_end() -> None:
    def make(read_for_fetch):
        def one_past(self, fetch_offset, max_bytes, **kw):
            read = read_for_fetch(self, fetch_offset, max_bytes, **kw)
            read.high_watermark += 1
            return read

        return one_past

    _wrap_fetch(make)


def _fetch_skips_a_batch_on_resume() -> None:
    def make(read_for_fetch):
        def skip_first(self, fetch_offset, max_bytes, **kw):
            read = read_for_fetch(self, fetch_offset, max_bytes, **kw)
            if fetch_offset > self.log_start_offset:
                batches = _batches(read.records)
                if batches:  # read again from the batch after the one asked for
                    return read_for_fetch(self, batches[0][0].next_offset, max_bytes, **kw)
            return read

        return skip_first

    _wrap_fetch(make)


def _fetch_out_of_range_once() -> None:
    from kconform.codecs.errors import Errors

    from .partition import PartitionError

    fetches: collections.Counter[tuple] = collections.Counter()

    def make(read_for_fetch):
        def out_of_range(self, fetch_offset, max_bytes, **kw):
            if self.log_start_offset < fetch_offset < self.high_watermark:
                fetches[self.watch_key] += 1
                if fetches[self.watch_key] == 10:
                    raise PartitionError(Errors.OFFSET_OUT_OF_RANGE)
            return read_for_fetch(self, fetch_offset, max_bytes, **kw)

        return out_of_range

    _wrap_fetch(make)


# ---- groups -------------------------------------------------------------------------------------


def _sync_group_copies_leaders_assignment() -> None:
    from .groups.coordinator import GroupCoordinator

    def make(sync_group):
        async def everyone_gets_the_leaders(self, *, member_id, assignments, **kw):
            leaders = dict(assignments).get(member_id)
            if leaders is not None:
                assignments = [(member, leaders) for member, _ in assignments]
            return await sync_group(self, member_id=member_id, assignments=assignments, **kw)

        return everyone_gets_the_leaders

    _wrap(GroupCoordinator, "sync_group", make)


def _offset_commit_keeps_first() -> None:
    from .groups.coordinator import GroupCoordinator

    def make(commit_offsets):
        async def keep_first(self, *, group_id, **kw):
            before = dict(self.offsets.get(group_id, {}))
            results = await commit_offsets(self, group_id=group_id, **kw)
            self.offsets[group_id].update(before)  # acknowledged, but the first commit stays
            return results

        return keep_first

    _wrap(GroupCoordinator, "commit_offsets", make)


# ---- replication ----------------------------------------------------------------------------------


def _hw_before_isr() -> None:
    from .partition import Partition

    def make(advance_high_watermark):
        def to_log_end(self):
            if self.leadership.is_leader:  # whatever the ISR has fetched (maybeIncrementLeaderHW skipped)
                self.log.update_high_watermark(self.log.log_end_offset)
            advance_high_watermark(self)

        return to_log_end

    _wrap(Partition, "_advance_high_watermark", make)


def _isr_never_shrinks() -> None:
    from .partition import Partition

    def make(maybe_shrink_isr):
        def keep_every_follower(self):
            return None  # no AlterPartition: a lagging follower stays in, and the high watermark waits

        return keep_every_follower

    _wrap(Partition, "maybe_shrink_isr", make)


def _follower_skips_truncation() -> None:
    import dataclasses

    from .replication import fetcher
    from .replication.follower_log import UNDEFINED_EPOCH

    def make(position):
        def no_epoch_to_compare(partition):
            # without a last fetched epoch the leader cannot answer a diverging epoch
            # (Partition.readRecords), so nothing is truncated and the fetch goes on from the log end
            return dataclasses.replace(position(partition), last_fetched_epoch=UNDEFINED_EPOCH)

        return no_epoch_to_compare

    _wrap(fetcher, "position", make)  # the name the ReplicaFetcher calls, not follower_log's own


def _unclean_election_without_flag() -> None:
    from .cluster_metadata import NO_LEADER
    from .controller import partition_change
    from .controller.partition_change import Election

    def make(elect):
        def any_live_replica(change, replicas, isr):
            leader, unclean = elect(change, replicas, isr)
            if leader == NO_LEADER and change.election is not Election.PREFERRED:
                for broker in replicas:  # electAnyLeader's unclean branch, flag or no flag
                    if change.may_lead(broker):
                        return broker, True
            return leader, unclean

        return any_live_replica

    _wrap(partition_change, "_elect", make)


def _stale_leader_accepts_writes() -> None:
    from .partition import Partition

    def make(apply_registration):
        def keep_leading(self, info):
            superseded = info.leader != self.leadership.broker_id and info.leader_epoch > self.leader_epoch
            if self.is_leader and superseded:
                return False  # makeFollower skipped: produce, fetch and ISR work go on as before
            return apply_registration(self, info)

        return keep_leading

    _wrap(Partition, "apply_registration", make)


# ---- authorization --------------------------------------------------------------------------------


def _authorizer_allow_before_deny() -> None:
    import dataclasses

    from .security.acls import Permission
    from .security.authorizer import Authorizer

    def make(authorize):
        def allow_wins(self, principal, host, operation, resource_type, name):
            if authorize(self, principal, host, operation, resource_type, name):
                return True
            # asked again of the ALLOWs alone: one that applies wins, whatever DENY applies too
            allows = tuple(acl for acl in self.acls if acl.permission == Permission.ALLOW)
            only_allows = dataclasses.replace(self, acls=allows, allow_if_no_acl=False)
            return authorize(only_allows, principal, host, operation, resource_type, name)

        return allow_wins

    _wrap(Authorizer, "authorize", make)


PLANTED_BUGS: dict[str, PlantedBug] = {
    "list-offsets-latest-off-by-one": PlantedBug(
        "ListOffsets for the latest offset (-1) answers one past the end", _list_offsets_latest_off_by_one
    ),
    "ack-without-write": PlantedBug(
        "every tenth produced batch of a partition is acknowledged but never written, as by a broker that "
        "acknowledged before the write was durable and then lost it: the next batch gets its offsets",
        _ack_without_write,
    ),
    "forget-idempotent-state": PlantedBug(
        "idempotent producers' sequence state is ignored, so a resent batch is written again instead of "
        "being recognised as a duplicate",
        _forget_idempotent_state,
    ),
    "read-committed-serves-aborted": PlantedBug(
        "a read_committed Fetch lists no aborted transactions, so readers take aborted records as committed",
        _read_committed_serves_aborted,
    ),
    "fetch-hides-newest-batch": PlantedBug(
        "Fetch never serves a partition's newest batch and answers a high watermark before it, as a broker "
        "whose high watermark lags what it acknowledged: those writes are never read",
        _fetch_hides_newest_batch,
    ),
    "fetch-serves-batches-newest-first": PlantedBug(
        "Fetch answers the batches it read in reverse order", _fetch_serves_batches_newest_first
    ),
    "fetch-high-watermark-past-log-end": PlantedBug(
        "Fetch answers a high watermark one past the log end offset of the in-sync replicas",
        _fetch_high_watermark_past_log_end,
    ),
    "fetch-skips-a-batch-on-resume": PlantedBug(
        "a Fetch from past the log start leaves out the batch it was asked for and answers from the next",
        _fetch_skips_a_batch_on_resume,
    ),
    "fetch-out-of-range-once": PlantedBug(
        "the tenth Fetch of a partition from inside its log answers OFFSET_OUT_OF_RANGE, so a consumer "
        "resets its position (auto.offset.reset) and reads again what it had read",
        _fetch_out_of_range_once,
    ),
    "sync-group-copies-leaders-assignment": PlantedBug(
        "SyncGroup gives every member the leader's assignment, so the leader's partitions have several "
        "owners",
        _sync_group_copies_leaders_assignment,
    ),
    "offset-commit-keeps-first": PlantedBug(
        "an offset commit for a partition that has a committed offset is acknowledged but not applied, so "
        "the group's committed offset goes back to its first commit when a member takes the partition over",
        _offset_commit_keeps_first,
    ),
    "hw-before-isr": PlantedBug(
        "a partition leader moves its high watermark to its own log end at every append, before its "
        "followers have fetched it, so acks=all is acknowledged before the ISR has the write",
        _hw_before_isr,
    ),
    "isr-never-shrinks": PlantedBug(
        "a partition leader never removes a lagging follower from the ISR (only the controller's fencing "
        "of a silent broker does), so acks=all waits on a follower that cannot fetch",
        _isr_never_shrinks,
    ),
    "follower-skips-truncation": PlantedBug(
        "a follower fetches without its last fetched epoch, so it never truncates where its log diverged "
        "from a new leader's: it keeps its uncommitted suffix and copies the leader from its own log end "
        "(cut back only to the leader's end when it is longer)",
        _follower_skips_truncation,
    ),
    "unclean-election-without-flag": PlantedBug(
        "the controller elects a leader from outside the ISR when no ISR member can lead, though "
        "unclean.leader.election.enable is false",
        _unclean_election_without_flag,
    ),
    "stale-leader-accepts-writes": PlantedBug(
        "a leader ignores every registration naming another leader at a newer leader epoch and goes on "
        "leading, so two brokers accept writes for the partition",
        _stale_leader_accepts_writes,
    ),
    "authorizer-allow-before-deny": PlantedBug(
        "the authorizer lets an ALLOW that applies win over a DENY that applies too (StandardAuthorizer "
        "denies whenever a matching DENY exists)",
        _authorizer_allow_before_deny,
    ),
}

_ENV = "KCONFORM_PLANTED_BUGS"


def _names() -> frozenset[str]:
    return frozenset(n.strip() for n in os.environ.get(_ENV, "").split(",") if n.strip())


def check_environment() -> frozenset[str]:
    names = _names()
    unknown = names - PLANTED_BUGS.keys()
    if unknown:
        raise PlantedBugError(
            f"{_ENV} names unknown planted bugs {', '.join(sorted(unknown))}; "
            f"known: {', '.join(PLANTED_BUGS)}"
        )
    return names


_INSTALLED: set[str] = set()


def install() -> frozenset[str]:
    """Switch on the bugs ``KCONFORM_PLANTED_BUGS`` names, once per process (the broker calls this as it
    starts, and the environment is read then); without any, nothing changes. Returns the bugs now on.
    There is no switch to ask about later: a bug is its wrapper, and a function not wrapped is honest."""
    for name in sorted((_names() & PLANTED_BUGS.keys()) - _INSTALLED):
        PLANTED_BUGS[name].install()
        _INSTALLED.add(name)
    return frozenset(_INSTALLED)
