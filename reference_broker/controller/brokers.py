"""Broker registration, heartbeats and fencing, as Kafka's ``ClusterControlManager``,
``BrokerHeartbeatManager`` and ``ReplicationControlManager`` decide them: pure functions from the image
(and the controller's in-memory heartbeat state, passed in) to the records to write and the answer.

Registration (``ClusterControlManager.registerBroker``):
- a new incarnation while the registered one still has a live session (unfenced and heard from within
  ``broker.session.timeout.ms``) is DUPLICATE_BROKER_REGISTRATION;
- the same incarnation amends its registration: same epoch, same fenced and controlled-shutdown state;
- a new incarnation first leaves every ISR as if fenced (``handleBrokerShutdown`` without eligible
  leader replicas, KAFKA-18106: a clean or unclean shutdown alike), then registers fenced; its epoch is
  the offset the first record of the write lands at (``offsetControl.nextWriteOffset``).

Heartbeats (``BrokerHeartbeatManager.calculateNextBrokerState``, then
``ReplicationControlManager.processBrokerHeartbeat``): a broker epoch that is not the registered one is
STALE_BROKER_EPOCH. From its current state a broker moves to:
- FENCED: wants to shut down -> SHUTDOWN_NOW; else, unless it wants to stay fenced, UNFENCED once its
  metadata offset reaches its RegisterBrokerRecord's offset (it then leads the leaderless partitions it
  can, ``handleBrokerUnfenced``);
- UNFENCED: wants to be fenced -> FENCED (SHUTDOWN_NOW if it also wants to shut down); wants to shut
  down -> CONTROLLED_SHUTDOWN while it leads any partition (``handleBrokerInControlledShutdown``: marked
  in controlled shutdown, leaves every ISR), else SHUTDOWN_NOW;
- CONTROLLED_SHUTDOWN (whatever it asks): SHUTDOWN_NOW once it leads nothing and every active broker
  has caught up to the offset its shutdown was written at, else it stays.
FENCED and SHUTDOWN_NOW are reached through ``handleBrokerFenced``: leave every ISR, then a
``BrokerRegistrationChangeRecord`` that fences (metadata versions from 3.3 write it instead of
``FenceBrokerRecord``/``UnfenceBrokerRecord``). A broker whose session lapses is fenced the same way."""

from __future__ import annotations

from dataclasses import dataclass, field

from kconform.codecs.errors import Errors
from kconform.codecs.metadata_records import BrokerRegistrationChangeRecord, RegisterBrokerRecord

from ..cluster_metadata import ClusterImage
from .partition_updates import elect_for_leaderless, isr_without_broker

__all__ = ["HeartbeatAnswer", "heartbeat", "fence", "registration", "Refused", "NO_OFFSET"]

NO_OFFSET = 2**63 - 1  # Long.MAX_VALUE: lowestActiveOffset when no broker is active
FENCE, UNFENCE, IN_CONTROLLED_SHUTDOWN = 1, -1, 1  # BrokerRegistration*Change values


class Refused(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def check_broker_epoch(image: ClusterImage, broker_id: int, epoch: int) -> None:
    """``ClusterControlManager.checkBrokerEpoch``."""
    broker = image.brokers.get(broker_id)
    if broker is None:
        raise Refused(Errors.STALE_BROKER_EPOCH, f"No broker registration found for broker id {broker_id}")
    if broker.epoch != epoch:
        raise Refused(
            Errors.STALE_BROKER_EPOCH, f"Expected broker epoch {broker.epoch}, but got broker epoch {epoch}"
        )


def registration(
    image: ClusterImage, request, *, next_offset: int, session_alive: bool, unclean_default: bool
) -> tuple[list, int]:
    """(records, broker epoch) for a BrokerRegistration; Refused otherwise. ``session_alive``: the
    registered incarnation was heard from within the session timeout (``hasValidSession`` also needs it
    unfenced, which this checks)."""
    existing = image.brokers.get(request.broker_id)
    same_incarnation = existing is not None and existing.incarnation_id == request.incarnation_id
    if existing is not None and not same_incarnation and session_alive and not existing.fenced:
        raise Refused(
            Errors.DUPLICATE_BROKER_REGISTRATION, "Another broker is registered with that broker id."
        )
    records: list = []
    if same_incarnation:
        epoch, fenced, shutting_down = existing.epoch, existing.fenced, existing.in_controlled_shutdown
    else:
        records += isr_without_broker(image, request.broker_id, unclean_default=unclean_default)
        epoch, fenced, shutting_down = next_offset, True, False
    records.append(
        RegisterBrokerRecord(
            broker_id=request.broker_id,
            incarnation_id=request.incarnation_id,
            broker_epoch=epoch,
            end_points=[
                RegisterBrokerRecord.BrokerEndpoint(
                    name=listener.name,
                    host=listener.host,
                    port=listener.port,
                    security_protocol=listener.security_protocol,
                )
                for listener in request.listeners
            ],
            features=[
                RegisterBrokerRecord.BrokerFeature(
                    name=f.name,
                    min_supported_version=f.min_supported_version,
                    max_supported_version=f.max_supported_version,
                )
                for f in request.features
            ],
            rack=request.rack,
            fenced=fenced,
            in_controlled_shutdown=shutting_down,
            log_dirs=list(getattr(request, "log_dirs", None) or []),
        )
    )
    return records, epoch


@dataclass(slots=True)
class HeartbeatAnswer:
    """``BrokerHeartbeatReply``: the records to write and the flags of the next state."""

    records: list = field(default_factory=list)
    is_caught_up: bool = False
    is_fenced: bool = True
    should_shut_down: bool = False
    in_controlled_shutdown: bool = False


def heartbeat(
    image: ClusterImage,
    request,
    *,
    unclean_default: bool,
    shutdown_offset: int = -1,
    lowest_active_offset: int = NO_OFFSET,
) -> HeartbeatAnswer:
    """The next state of the sending broker. ``shutdown_offset``: the offset its controlled shutdown was
    written at, -1 when it is not shutting down (Kafka keeps it in the heartbeat manager, not the
    image); ``lowest_active_offset``: the lowest metadata offset the other active brokers reported."""
    check_broker_epoch(image, request.broker_id, request.broker_epoch)
    broker = image.brokers[request.broker_id]
    broker_id = broker.broker_id
    caught_up = request.current_metadata_offset >= broker.registered_at_offset

    def leads() -> bool:  # brokersToIsrs.hasLeaderships
        return any(p.leader == broker_id for topic in image for p in topic.partitions)

    def fenced(shut_down: bool) -> HeartbeatAnswer:
        records = fence(image, broker_id, unclean_default=unclean_default)
        return HeartbeatAnswer(records, caught_up, is_fenced=True, should_shut_down=shut_down)

    if shutdown_offset >= 0:  # CONTROLLED_SHUTDOWN, whatever the request asks
        if not leads() and shutdown_offset <= lowest_active_offset:
            return fenced(shut_down=True)
        return HeartbeatAnswer([], caught_up, is_fenced=False, in_controlled_shutdown=True)
    if broker.fenced:
        if request.want_shut_down:
            return fenced(shut_down=True)
        if not request.want_fence and caught_up:
            records: list = [
                BrokerRegistrationChangeRecord(broker_id=broker_id, broker_epoch=broker.epoch, fenced=UNFENCE)
            ]
            records += elect_for_leaderless(image, newly_usable=broker_id, unclean_default=unclean_default)
            return HeartbeatAnswer(records, caught_up, is_fenced=False)
        return HeartbeatAnswer([], caught_up, is_fenced=True)
    if request.want_fence:
        return fenced(shut_down=request.want_shut_down)
    if request.want_shut_down:
        if not leads():
            return fenced(shut_down=True)
        records = []
        if not broker.in_controlled_shutdown:
            records.append(
                BrokerRegistrationChangeRecord(
                    broker_id=broker_id,
                    broker_epoch=broker.epoch,
                    in_controlled_shutdown=IN_CONTROLLED_SHUTDOWN,
                )
            )
        records += isr_without_broker(image, broker_id, unclean_default=unclean_default)
        return HeartbeatAnswer(records, caught_up, is_fenced=False, in_controlled_shutdown=True)
    return HeartbeatAnswer([], caught_up, is_fenced=False)


def fence(image: ClusterImage, broker_id: int, *, unclean_default: bool) -> list:
    """``handleBrokerFenced``: the broker leaves every ISR (new leaders where it led), then is fenced."""
    broker = image.brokers[broker_id]
    records = isr_without_broker(image, broker_id, unclean_default=unclean_default)
    records.append(
        BrokerRegistrationChangeRecord(broker_id=broker_id, broker_epoch=broker.epoch, fenced=FENCE)
    )
    return records
