"""KIP-392, fetch from followers: which replica a partition leader tells a consumer to read from
(Kafka's ``ReplicaManager.findPreferredReadReplica`` with the ``ReplicaSelector`` that
``replica.selector.class`` names; none by default, and then every consumer reads from the leader).
Pure: the leader's view of its followers, the brokers' racks and the time are passed in.

The candidates are the leader and each follower of the committed ISR whose log holds the fetch
offset (its log start offset <= fetch offset <= its log end offset): a follower outside the ISR may lag
for ever, and the consumer with it. Each is seen with its endpoint (an unfenced broker with an
endpoint on the client's listener, ``KRaftMetadataCache.getPartitionReplicaEndpoints``; else
``Node.noNode()``: id -1, no rack), log end offset and time since it was last caught up (0 for the
leader). The selector picks one; only a follower with an endpoint is an answer, anything else means
the leader serves the fetch itself."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from ..config import ConfigError
from .follower_progress import FollowerProgress

__all__ = [
    "RACK_AWARE_REPLICA_SELECTOR",
    "ReplicaSelector",
    "ReplicaView",
    "preferred_read_replica",
    "rack_aware_selector",
    "replica_selector",
]

RACK_AWARE_REPLICA_SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
NO_NODE = -1  # Node.noNode().id


@dataclass(frozen=True, slots=True)
class ReplicaView:
    """``ReplicaView.DefaultReplicaView``: a candidate as the selector sees it."""

    broker_id: int  # NO_NODE when the broker has no endpoint on the client's listener
    rack: str | None
    log_end_offset: int
    time_since_caught_up_ms: int


ReplicaSelector = Callable[[str, Sequence[ReplicaView], ReplicaView], ReplicaView | None]
"""``ReplicaSelector.select``: (client rack, candidates with the leader among them, leader) -> the
preferred replica, or None for none."""


def _most_caught_up(view: ReplicaView) -> tuple[int, int, int]:
    # ReplicaView.comparator(): log end offset, then the shorter time since caught up, then broker id
    return view.log_end_offset, -view.time_since_caught_up_ms, view.broker_id


def rack_aware_selector(
    client_rack: str, replicas: Sequence[ReplicaView], leader: ReplicaView
) -> ReplicaView:
    """``RackAwareReplicaSelector.select``: the leader when the client names no rack, when no replica is
    in the client's rack, or when the leader is; else the most caught-up replica of that rack."""
    if not client_rack:
        return leader
    same_rack = [r for r in replicas if r.rack == client_rack]
    if not same_rack or leader in same_rack:
        return leader
    return max(same_rack, key=_most_caught_up)


_SELECTORS: dict[str, ReplicaSelector] = {RACK_AWARE_REPLICA_SELECTOR: rack_aware_selector}


def replica_selector(class_name: str | None) -> ReplicaSelector | None:
    """The selector ``replica.selector.class`` names (``ReplicaManager.createReplicaSelector``, at start);
    None when it is unset. Kafka loads any class on its class path and fails to start on one it cannot
    find; the reference broker has only Kafka's own selector to offer."""
    if class_name is None:
        return None
    selector = _SELECTORS.get(class_name)
    if selector is None:
        known = ", ".join(sorted(_SELECTORS))
        raise ConfigError(
            "replica.selector.class",
            class_name,
            f"no such ReplicaSelector in the reference broker (it has {known}; leave the property unset "
            "for leader-only reads)",
        )
    return selector


def preferred_read_replica(
    selector: ReplicaSelector | None,
    *,
    client_rack: str,
    leader_id: int,
    leader_end_offset: int,
    followers: Mapping[int, FollowerProgress],
    isr: Iterable[int],
    racks: Mapping[int, str | None],
    fetch_offset: int,
    now_ms: int,
) -> int | None:
    """The follower a consumer's fetch is sent to, or None when the leader serves it.

    ``racks``: broker id -> rack of the brokers with an endpoint for the client (unfenced, on its
    listener). Only a leader asks, and only for a consumer's Fetch v11+ (the caller's part)."""
    if selector is None:
        return None

    def endpoint(broker: int) -> tuple[int, str | None]:
        return (broker, racks[broker]) if broker in racks else (NO_NODE, None)

    in_sync = set(isr)
    candidates = [
        ReplicaView(*endpoint(broker), progress.log_end_offset, now_ms - progress.last_caught_up_ms)
        for broker, progress in followers.items()
        if broker in in_sync
        and progress.log_end_offset >= fetch_offset
        and progress.log_start_offset <= fetch_offset
    ]
    leader = ReplicaView(*endpoint(leader_id), leader_end_offset, 0)
    candidates.append(leader)
    selected = selector(client_rack, candidates, leader)
    # the selector may name the leader: that is not sent out with the fetch response
    if selected is None or selected.broker_id == NO_NODE or selected == leader:
        return None
    return selected.broker_id
