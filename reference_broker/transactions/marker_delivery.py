"""Getting a transaction's markers into every partition it touched, wherever those partitions lead
(Kafka's ``TransactionMarkerChannelManager`` with its ``TransactionMarkerRequestCompletionHandler``).

The partitions are grouped by their leader in the metadata; each group goes to its leader as one
WriteTxnMarkers marker, the coordinator's own partitions written in place. A partition whose topic is
gone from the metadata is dropped (it was deleted; ``addTxnMarkersToBrokerQueue`` removes it), one with
no leader waits for one. Each answer decides the partition's fate (``fate_of``): done, tried again
against whoever leads it then, or the whole delivery abandoned because the producer or coordinator
epoch moved on. A lost connection retries every partition it carried. Delivery stops as soon as the
coordinator no longer owns the transaction at that coordinator epoch.

``route`` and ``fate_of`` are pure; ``deliver_markers`` is the loop, with the writes, the sends and the
clock passed in."""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field

from kconform.codecs.errors import Errors
from kconform.codecs.messages import WriteTxnMarkersRequest, WriteTxnMarkersResponse

from .decisions import MarkerWrite

__all__ = [
    "MarkerFate",
    "Routes",
    "codes_from",
    "deliver_markers",
    "fate_of",
    "marker_request",
    "route",
]

log = logging.getLogger(__name__)

RETRY_BACKOFF_S = 0.1  # the inter-broker client's retry.backoff.ms
TopicPartition = tuple[str, int]


class MarkerFate(enum.Enum):
    DONE = "done"
    DROPPED = "dropped"  # the partition no longer waits for a marker
    RETRY = "retry"
    ABANDON = "abandon"  # this transaction's markers are no longer ours to send


_RETRIABLE = frozenset(
    {
        Errors.UNKNOWN_TOPIC_OR_PARTITION,
        Errors.NOT_LEADER_OR_FOLLOWER,
        Errors.NOT_ENOUGH_REPLICAS,
        Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        Errors.REQUEST_TIMED_OUT,
        Errors.KAFKA_STORAGE_ERROR,
    }
)
_FENCED = frozenset({Errors.INVALID_PRODUCER_EPOCH, Errors.TRANSACTION_COORDINATOR_FENCED})
_NOT_APPLICABLE = frozenset({Errors.UNSUPPORTED_FOR_MESSAGE_FORMAT, Errors.UNSUPPORTED_VERSION})


def fate_of(code: int) -> MarkerFate:
    """``TransactionMarkerRequestCompletionHandler.onComplete``'s answer to one partition's error.
    Kafka throws IllegalStateException on anything else (CORRUPT_MESSAGE, MESSAGE_TOO_LARGE, ...):
    such a marker can never be written, so the delivery is abandoned and the error logged."""
    if code == Errors.NONE:
        return MarkerFate.DONE
    if code in _RETRIABLE:
        return MarkerFate.RETRY
    if code in _NOT_APPLICABLE:
        return MarkerFate.DROPPED
    return MarkerFate.ABANDON


@dataclass(frozen=True)
class Routes:
    by_leader: dict[int, tuple[TopicPartition, ...]] = field(default_factory=dict)
    leaderless: tuple[TopicPartition, ...] = ()
    deleted: tuple[TopicPartition, ...] = ()


def route(partitions: Iterable[TopicPartition], leader_of: Callable[[str, int], int | None]) -> Routes:
    """Group partitions by leader. ``leader_of`` gives the leader's id, -1 while there is none, and
    None when the metadata has no such partition."""
    by_leader: dict[int, list[TopicPartition]] = {}
    leaderless: list[TopicPartition] = []
    deleted: list[TopicPartition] = []
    for tp in dict.fromkeys(partitions):
        leader = leader_of(*tp)
        if leader is None:
            deleted.append(tp)
        elif leader < 0:
            leaderless.append(tp)
        else:
            by_leader.setdefault(leader, []).append(tp)
    return Routes({b: tuple(tps) for b, tps in by_leader.items()}, tuple(leaderless), tuple(deleted))


def marker_request(
    markers: MarkerWrite, coordinator_epoch: int, partitions: Iterable[TopicPartition]
) -> WriteTxnMarkersRequest:
    """One WriteTxnMarkers marker for the partitions one leader holds."""
    by_topic: dict[str, list[int]] = {}
    for topic, index in partitions:
        by_topic.setdefault(topic, []).append(index)
    R = WriteTxnMarkersRequest
    return R(
        markers=[
            R.WritableTxnMarker(
                producer_id=markers.producer_id,
                producer_epoch=markers.producer_epoch,
                transaction_result=markers.commit,
                topics=[R.WritableTxnMarkerTopic(name=t, partition_indexes=ps) for t, ps in by_topic.items()],
                coordinator_epoch=coordinator_epoch,
                transaction_version=markers.transaction_version,
            )
        ]
    )


def codes_from(
    response: WriteTxnMarkersResponse, producer_id: int, sent: Iterable[TopicPartition]
) -> dict[TopicPartition, int]:
    """Each sent partition's error; a partition the answer leaves out is tried again."""
    codes = {tp: Errors.REQUEST_TIMED_OUT for tp in sent}
    for result in response.markers:
        if result.producer_id != producer_id:
            continue
        for topic in result.topics:
            for partition in topic.partitions:
                if (topic.name, partition.partition_index) in codes:
                    codes[(topic.name, partition.partition_index)] = partition.error_code
    return codes


WriteLocal = Callable[[tuple[TopicPartition, ...]], Awaitable[dict[TopicPartition, int]]]
SendRemote = Callable[[int, WriteTxnMarkersRequest], Awaitable[WriteTxnMarkersResponse]]


async def deliver_markers(
    markers: MarkerWrite,
    coordinator_epoch: int,
    *,
    node_id: int,
    leader_of: Callable[[str, int], int | None],
    write_local: WriteLocal,
    send: SendRemote,
    still_current: Callable[[], bool],
    pending: Iterable[TopicPartition] | None = None,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> bool:
    """True once every partition has its marker (or no longer needs one); False when the delivery
    was abandoned. ``pending``: the partitions still to do (all of the markers' by default)."""
    left = set(markers.partitions if pending is None else pending)
    while left:
        if not still_current():
            return False
        routes = route(sorted(left), leader_of)
        if routes.deleted:
            log.info("%s: no marker for %s, deleted", markers.transactional_id, list(routes.deleted))
            left.difference_update(routes.deleted)
        attempts = [
            _attempt(leader, tps, markers, coordinator_epoch, node_id, write_local, send)
            for leader, tps in routes.by_leader.items()
        ]
        for codes in await asyncio.gather(*attempts):
            for tp, code in codes.items():
                fate = fate_of(code)
                if fate is MarkerFate.ABANDON:
                    log.log(
                        logging.INFO if code in _FENCED else logging.ERROR,
                        "%s: markers abandoned, %s-%d answered error %d",
                        markers.transactional_id,
                        *tp,
                        code,
                    )
                    return False
                if fate is not MarkerFate.RETRY:
                    left.discard(tp)
        if left:
            await sleep(RETRY_BACKOFF_S)
    return still_current()


async def _attempt(
    leader: int,
    partitions: tuple[TopicPartition, ...],
    markers: MarkerWrite,
    coordinator_epoch: int,
    node_id: int,
    write_local: WriteLocal,
    send: SendRemote,
) -> dict[TopicPartition, int]:
    if leader == node_id:
        return await write_local(partitions)
    try:
        response = await send(leader, marker_request(markers, coordinator_epoch, partitions))
    except (TimeoutError, ConnectionError) as exc:  # Kafka re-enqueues a disconnected request
        log.info("%s: markers to broker %d not sent: %s", markers.transactional_id, leader, exc)
        return dict.fromkeys(partitions, Errors.NOT_LEADER_OR_FOLLOWER)
    return codes_from(response, markers.producer_id, partitions)
