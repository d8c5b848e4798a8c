"""What a partition leader knows of each follower, and the rules it draws from that (Kafka's
``Replica``/``ReplicaState`` and the ISR and high-watermark parts of ``Partition``). Pure: times are
passed in, in milliseconds.

- A follower's fetch offset is its log end offset. It is caught up at a fetch that asks from the
  leader's log end offset; a fetch that asks from at least the leader's log end offset at the previous
  fetch proves it was caught up then (``Replica.updateFetchStateOrThrow``).
- It is out of sync once it has not been caught up for ``replica.lag.time.max.ms``
  (``Partition.getOutOfSyncReplicas``); a follower whose log end offset equals the leader's never is.
- It may join the ISR once its log end offset reaches the high watermark and the start of the
  leader's epoch (``Partition.isFollowerInSync``, ``canAddReplicaToIsr``).
- The high watermark is the smallest log end offset among the leader, the replicas of the maximal ISR
  (the ISR with any member being added), and the caught-up followers about to join; it never goes
  back, and does not move at all while the committed ISR is below min.insync.replicas
  (``Partition.maybeIncrementLeaderHW``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

__all__ = [
    "FollowerProgress",
    "UNKNOWN_OFFSET",
    "new_leader_view",
    "after_fetch",
    "is_caught_up",
    "out_of_sync",
    "may_join_isr",
    "high_watermark",
]

UNKNOWN_OFFSET = -1


@dataclass(frozen=True, slots=True)
class FollowerProgress:
    broker_id: int
    log_end_offset: int = UNKNOWN_OFFSET
    log_start_offset: int = UNKNOWN_OFFSET
    last_caught_up_ms: int = 0
    last_fetch_leader_end_offset: int = UNKNOWN_OFFSET
    last_fetch_ms: int = 0
    broker_epoch: int = -1


def new_leader_view(
    followers: Iterable[int],
    isr: Iterable[int],
    now_ms: int,
    *,
    kept: Mapping[int, FollowerProgress] | None = None,
    leader_end_offset: int = UNKNOWN_OFFSET,
) -> dict[int, FollowerProgress]:
    """The followers at a new leader epoch (``Replica.resetReplicaState``). ISR members count as caught
    up now so that they are not dropped before their first fetch; the rest, as not caught up, so that
    they do not hold the high watermark back. A newly elected leader knows nothing of its followers'
    logs; a re-elected one (``kept``: what it knew) keeps their log offsets and broker epochs."""
    in_sync = set(isr)
    view = {}
    for broker in followers:
        caught_up = now_ms if broker in in_sync else 0
        if kept is None:
            view[broker] = FollowerProgress(broker, last_caught_up_ms=caught_up)
        else:
            view[broker] = replace(
                kept.get(broker, FollowerProgress(broker)),
                last_caught_up_ms=caught_up,
                last_fetch_leader_end_offset=leader_end_offset,
                last_fetch_ms=caught_up,
            )
    return view


def after_fetch(
    progress: FollowerProgress,
    *,
    fetch_offset: int,
    log_start_offset: int,
    leader_end_offset: int,
    now_ms: int,
    broker_epoch: int = -1,
) -> FollowerProgress:
    if fetch_offset >= leader_end_offset:
        caught_up = max(progress.last_caught_up_ms, now_ms)
    elif fetch_offset >= progress.last_fetch_leader_end_offset:
        caught_up = max(progress.last_caught_up_ms, progress.last_fetch_ms)
    else:
        caught_up = progress.last_caught_up_ms
    return FollowerProgress(
        broker_id=progress.broker_id,
        log_end_offset=fetch_offset,
        log_start_offset=log_start_offset,
        last_caught_up_ms=caught_up,
        last_fetch_leader_end_offset=max(leader_end_offset, progress.last_fetch_leader_end_offset),
        last_fetch_ms=now_ms,
        broker_epoch=broker_epoch,
    )


def is_caught_up(progress: FollowerProgress, leader_end_offset: int, now_ms: int, lag_ms: int) -> bool:
    """``ReplicaState.isCaughtUp``: at the leader's end, or caught up within the lag time."""
    return progress.log_end_offset == leader_end_offset or now_ms - progress.last_caught_up_ms <= lag_ms


def out_of_sync(
    followers: Mapping[int, FollowerProgress],
    isr: Iterable[int],
    leader_id: int,
    leader_end_offset: int,
    now_ms: int,
    lag_ms: int,
) -> list[int]:
    def lagging(broker: int) -> bool:
        # an ISR member the leader keeps no progress for is out of sync (Partition.isFollowerOutOfSync)
        progress = followers.get(broker)
        return progress is None or not is_caught_up(progress, leader_end_offset, now_ms, lag_ms)

    return [broker for broker in isr if broker != leader_id and lagging(broker)]


def may_join_isr(progress: FollowerProgress, high_watermark: int, leader_epoch_start_offset: int) -> bool:
    """``Partition.isFollowerInSync``: lag time plays no part here."""
    return progress.log_end_offset >= high_watermark and progress.log_end_offset >= leader_epoch_start_offset


def high_watermark(
    current: int,
    leader_end_offset: int,
    followers: Mapping[int, FollowerProgress],
    maximal_isr: Iterable[int],
    *,
    now_ms: int,
    lag_ms: int,
    isr_eligible,
) -> int:
    """The new high watermark (never below ``current``). ``isr_eligible(broker, broker_epoch)``: the
    follower is unfenced, not shutting down and fetched at its registered broker epoch."""
    members = set(maximal_isr)
    bound = leader_end_offset
    for broker, progress in followers.items():
        joining = is_caught_up(progress, leader_end_offset, now_ms, lag_ms) and isr_eligible(
            broker, progress.broker_epoch
        )
        if progress.log_end_offset < bound and (broker in members or joining):
            bound = progress.log_end_offset
    return max(current, bound)
