"""Builders for the controller suites: images replayed from the records Kafka would write, requests
shaped as brokers send them, and a ``Controller`` on a temporary directory with a ``ManualClock``."""

from __future__ import annotations

import uuid
from pathlib import Path

from kconform.codecs.messages import AlterPartitionRequest, BrokerHeartbeatRequest, BrokerRegistrationRequest
from kconform.codecs.metadata_log import decode_metadata_record
from kconform.codecs.metadata_records import (
    BrokerRegistrationChangeRecord,
    ConfigRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
)
from kconform.codecs.records import iter_batches
from kconform.reference_broker.clock import ManualClock
from kconform.reference_broker.cluster_metadata import TOPIC_RESOURCE, ClusterImage, PartitionInfo
from kconform.reference_broker.config import BrokerConfig
from kconform.reference_broker.controller.controller import Controller
from kconform.reference_broker.purgatory import Purgatory

TOPIC_ID = uuid.UUID(int=0xABC)


def partition(
    replicas, isr=None, leader=None, *, leader_epoch=5, partition_epoch=9, **extra
) -> PartitionInfo:
    isr = replicas if isr is None else isr
    leader = (isr[0] if isr else -1) if leader is None else leader
    return PartitionInfo(0, tuple(replicas), tuple(isr), leader, leader_epoch, partition_epoch, **extra)


def image_of(
    brokers=(1, 2, 3), *, fenced=(), shutting_down=(), racks=None, epochs=None, topics=None, unclean=False
) -> ClusterImage:
    """Brokers registered at epoch 100+id (or ``epochs[id]``); ``topics``: name -> PartitionInfo list."""
    image, offset = ClusterImage(), 0

    def replay(record):
        nonlocal offset
        image.replay(record, offset)
        offset += 1

    for b in brokers:
        epoch = (epochs or {}).get(b, 100 + b)
        replay(
            RegisterBrokerRecord(
                broker_id=b,
                incarnation_id=uuid.UUID(int=b),
                broker_epoch=epoch,
                rack=(racks or {}).get(b),
                fenced=b in fenced,
                in_controlled_shutdown=b in shutting_down,
            )
        )
    for number, (name, partitions) in enumerate((topics or {}).items()):
        topic_id = uuid.UUID(int=0xABC + number)
        replay(TopicRecord(name=name, topic_id=topic_id))
        if unclean:
            replay(ConfigRecord(TOPIC_RESOURCE, name, "unclean.leader.election.enable", "true"))
        for index, p in enumerate(partitions):
            replay(
                PartitionRecord(
                    partition_id=index,
                    topic_id=topic_id,
                    replicas=list(p.replicas),
                    isr=list(p.isr),
                    removing_replicas=list(p.removing_replicas),
                    adding_replicas=list(p.adding_replicas),
                    leader=p.leader,
                    leader_recovery_state=p.leader_recovery_state,
                    leader_epoch=p.leader_epoch,
                    partition_epoch=p.partition_epoch,
                )
            )
    return image


def shut_down(image: ClusterImage, broker: int) -> None:
    epoch = image.brokers[broker].epoch
    image.replay(
        BrokerRegistrationChangeRecord(broker_id=broker, broker_epoch=epoch, in_controlled_shutdown=1)
    )


def registration(broker_id: int, incarnation: int | None = None, **fields) -> BrokerRegistrationRequest:
    listener = BrokerRegistrationRequest.Listener(name="PLAINTEXT", host="localhost", port=9000 + broker_id)
    return BrokerRegistrationRequest(
        broker_id=broker_id,
        incarnation_id=uuid.UUID(int=incarnation or broker_id),
        listeners=[listener],
        **fields,
    )


def heartbeat(broker_id: int, epoch: int, offset: int = 1 << 40, **flags) -> BrokerHeartbeatRequest:
    return BrokerHeartbeatRequest(
        broker_id=broker_id, broker_epoch=epoch, current_metadata_offset=offset, **flags
    )


def alter(sender, epoch, isr, *, leader_epoch=5, partition_epoch=9, version=3, name="t", topic_id=TOPIC_ID,
          index=0, isr_epochs=None, recovery=0) -> AlterPartitionRequest:  # fmt: skip
    """An AlterPartition from ``sender`` for one partition; v3 ISRs carry ``isr_epochs`` (default -1)."""
    if version >= 3:
        states = [AlterPartitionRequest.BrokerState(b, (isr_epochs or {}).get(b, -1)) for b in isr]
        fields = {"new_isr_with_epochs": states}
    else:
        fields = {"new_isr": list(isr)}
    data = AlterPartitionRequest.PartitionData(
        partition_index=index,
        leader_epoch=leader_epoch,
        partition_epoch=partition_epoch,
        leader_recovery_state=recovery,
        **fields,
    )
    topic = AlterPartitionRequest.TopicData(topic_name=name, topic_id=topic_id, partitions=[data])
    return AlterPartitionRequest(broker_id=sender, broker_epoch=epoch, topics=[topic])


def new_controller(data_dir: Path, clock: ManualClock | None = None, **config) -> Controller:
    settings = {
        "node.id": "1",
        "process.roles": "broker,controller",
        **{k: str(v) for k, v in config.items()},
    }
    return Controller(BrokerConfig(settings), data_dir, clock=clock or ManualClock(), purgatory=Purgatory())


def join(controller: Controller, broker_id: int, *, rack: str | None = None, incarnation=None) -> int:
    """Register a broker and heartbeat it unfenced; its epoch."""
    epoch = controller.register_broker(registration(broker_id, incarnation, rack=rack))
    answer = controller.heartbeat(heartbeat(broker_id, epoch, controller.metadata.end_offset))
    assert not answer.is_fenced
    return epoch


def records_from(controller: Controller, offset: int) -> list:
    """The metadata records the controller wrote from ``offset`` on."""
    data = controller.metadata.read(offset, 1 << 20)
    return [
        decode_metadata_record(r.value)[2]
        for b in iter_batches(data)
        for r in b.records
        if r.offset >= offset
    ]
