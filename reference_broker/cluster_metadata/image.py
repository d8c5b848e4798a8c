"""The cluster as the ``__cluster_metadata`` log describes it (Kafka's ``MetadataImage``): brokers and their
registrations, topics and their partitions' replicas, ISR, leader and epochs, configs, the next producer
id block, finalized features, SCRAM credentials (``scram``) and ACLs (``acls()``). The controller and
every broker keep one, built by replaying the same records in the same order, so both see the same
cluster at the same offset.

``replay`` applies one record and says what it touched, so a broker can act on exactly the partitions
whose leadership or ISR moved. Partition registrations are immutable values; ``merge`` is Kafka's
``PartitionRegistration.merge`` of a ``PartitionChangeRecord``."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from uuid import UUID

from kconform.codecs.metadata_records import (
    AccessControlEntryRecord,
    BrokerRegistrationChangeRecord,
    ClientQuotaRecord,
    ConfigRecord,
    FeatureLevelRecord,
    FenceBrokerRecord,
    PartitionChangeRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    RemoveAccessControlEntryRecord,
    RemoveTopicRecord,
    RemoveUserScramCredentialRecord,
    TopicRecord,
    UnfenceBrokerRecord,
    UnregisterBrokerRecord,
    UserScramCredentialRecord,
)

from ..security.acls import AclBinding
from .acls import ClusterAcls, UnknownAcl
from .client_quotas import ClientQuotas
from .scram import ScramCredential, ScramCredentials, UnknownCredential

__all__ = [
    "NO_LEADER",
    "NO_LEADER_CHANGE",
    "BrokerInfo",
    "ClusterImage",
    "Endpoint",
    "ImageChange",
    "ImageError",
    "LeaderRecoveryState",
    "PartitionInfo",
    "TopicInfo",
    "TOPIC_RESOURCE",
    "BROKER_RESOURCE",
]

NO_LEADER = -1
NO_LEADER_CHANGE = -2  # PartitionChangeRecord.leader: keep the leader (and its epoch)
TOPIC_RESOURCE, BROKER_RESOURCE = 2, 4  # ConfigResource.Type ids in ConfigRecord


class LeaderRecoveryState:
    """Kafka's ``LeaderRecoveryState``: RECOVERING after an unclean election until the new leader has
    rebuilt its state; -1 in a change record means no change."""

    RECOVERED, RECOVERING, NO_CHANGE = 0, 1, -1


@dataclass(frozen=True, slots=True)
class Endpoint:
    name: str
    host: str
    port: int
    security_protocol: int


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    broker_id: int
    epoch: int
    incarnation_id: UUID
    endpoints: tuple[Endpoint, ...]
    rack: str | None
    fenced: bool
    in_controlled_shutdown: bool
    registered_at_offset: int

    def endpoint(self, listener: str | None = None) -> Endpoint | None:
        for endpoint in self.endpoints:
            if listener is None or endpoint.name == listener:
                return endpoint
        return None


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    """One partition's registration. Attribute names match the single-node ``PartitionState`` that
    handlers read (``index``, ``leader``, ``leader_epoch``, ``replicas``, ``isr``)."""

    index: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int
    partition_epoch: int
    removing_replicas: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()
    leader_recovery_state: int = LeaderRecoveryState.RECOVERED

    def merge(self, change: PartitionChangeRecord) -> PartitionInfo:
        """Kafka's ``PartitionRegistration.merge``: every field the record carries replaces ours; a
        named leader (even the same one) bumps the leader epoch; the partition epoch always moves."""
        leader, leader_epoch = self.leader, self.leader_epoch
        if change.leader != NO_LEADER_CHANGE:
            leader, leader_epoch = change.leader, self.leader_epoch + 1
        recovery = self.leader_recovery_state
        if change.leader_recovery_state != LeaderRecoveryState.NO_CHANGE:
            recovery = change.leader_recovery_state
        return replace(
            self,
            replicas=_replaced(self.replicas, change.replicas),
            isr=_replaced(self.isr, change.isr),
            removing_replicas=_replaced(self.removing_replicas, change.removing_replicas),
            adding_replicas=_replaced(self.adding_replicas, change.adding_replicas),
            leader=leader,
            leader_epoch=leader_epoch,
            partition_epoch=self.partition_epoch + 1,
            leader_recovery_state=recovery,
        )

    @property
    def is_reassigning(self) -> bool:
        return bool(self.adding_replicas or self.removing_replicas)

    @property
    def preferred_leader(self) -> int:
        return self.replicas[0] if self.replicas else NO_LEADER


def _replaced(current: tuple[int, ...], changed: list[int] | None) -> tuple[int, ...]:
    return current if changed is None else tuple(changed)


@dataclass(slots=True)
class TopicInfo:
    """A topic and its partitions (a list indexed by partition, as the single node's ``TopicState``)."""

    name: str
    topic_id: UUID
    partitions: list[PartitionInfo] = field(default_factory=list)
    configs: dict[str, str] = field(default_factory=dict)

    @property
    def replication_factor(self) -> int:
        return len(self.partitions[0].replicas) if self.partitions else 0


@dataclass(slots=True)
class ImageChange:
    """What one record touched: partitions (topic name, index), brokers, topics created or removed,
    and config resources (type, name)."""

    partitions: set[tuple[str, int]] = field(default_factory=set)
    brokers: set[int] = field(default_factory=set)
    topics_created: set[str] = field(default_factory=set)
    topics_removed: dict[str, TopicInfo] = field(default_factory=dict)
    configs: set[tuple[int, str]] = field(default_factory=set)

    def update(self, other: ImageChange) -> None:
        self.partitions |= other.partitions
        self.brokers |= other.brokers
        self.topics_created |= other.topics_created
        self.topics_removed.update(other.topics_removed)
        self.configs |= other.configs

    def __bool__(self) -> bool:
        return bool(
            self.partitions or self.brokers or self.topics_created or self.topics_removed or self.configs
        )


class ImageError(ValueError):
    """A record that does not fit the image (a partition of an unknown topic, ...): the log is not one
    this image can follow."""


class ClusterImage:
    def __init__(self) -> None:
        self.brokers: dict[int, BrokerInfo] = {}
        self._topics: dict[str, TopicInfo] = {}
        self._by_id: dict[UUID, TopicInfo] = {}
        self.configs: dict[tuple[int, str], dict[str, str]] = {}
        self.next_producer_id = 0
        self.features: dict[str, int] = {}
        self.scram = ScramCredentials()
        self.acl_entries = ClusterAcls()  # ACL id -> binding (AclsImage)
        self.client_quotas = ClientQuotas()  # ClientQuotasImage
        self.offset = -1  # of the last record replayed

    # ---- reading: the topic registry's interface ----------------------------------------------

    def __contains__(self, name: str) -> bool:
        return name in self._topics

    def __iter__(self) -> Iterator[TopicInfo]:
        return iter(list(self._topics.values()))

    def __len__(self) -> int:
        return len(self._topics)

    def get(self, name: str) -> TopicInfo | None:
        return self._topics.get(name)

    def by_id(self, topic_id: UUID) -> TopicInfo | None:
        return self._by_id.get(topic_id)

    def resource_configs(self, resource_type: int, name: str) -> dict[str, str]:
        """The configs stored for one resource (Kafka's ``ConfigurationsImage.configMapForResource``)."""
        return dict(self.configs.get((resource_type, name), {}))

    def topic_configs(self, name: str) -> dict[str, str]:
        return self.resource_configs(TOPIC_RESOURCE, name)

    def broker_configs(self, broker_id: int | None) -> dict[str, str]:
        """A broker's dynamic config layer; None for the cluster-wide default (resource name "")."""
        return self.resource_configs(BROKER_RESOURCE, "" if broker_id is None else str(broker_id))

    def scram_credential(self, mechanism: str, user: str) -> ScramCredential | None:
        """The SCRAM credential of ``user`` for a SASL mechanism name ("SCRAM-SHA-256"), or None."""
        return self.scram.lookup(mechanism, user)

    def acls(self) -> tuple[AclBinding, ...]:
        """Every ACL binding, in the order their records came."""
        return self.acl_entries.bindings()

    def unfenced_brokers(self) -> list[BrokerInfo]:
        return [b for _, b in sorted(self.brokers.items()) if not b.fenced]

    def usable_brokers(self) -> list[BrokerInfo]:
        """Brokers new replicas and leaders may go to: unfenced and not shutting down."""
        return [b for b in self.unfenced_brokers() if not b.in_controlled_shutdown]

    def partitions_of_broker(self, broker_id: int) -> Iterator[tuple[TopicInfo, PartitionInfo]]:
        for topic in self._topics.values():
            for partition in topic.partitions:
                if broker_id in partition.replicas:
                    yield topic, partition

    # ---- replay -------------------------------------------------------------------------------

    def replay(self, record, offset: int = -1) -> ImageChange:
        handler = _REPLAYERS.get(type(record))
        change = ImageChange() if handler is None else handler(self, record, offset)
        if offset >= 0:
            self.offset = offset
        return change

    def _register_broker(self, record: RegisterBrokerRecord, offset: int) -> ImageChange:
        self.brokers[record.broker_id] = BrokerInfo(
            broker_id=record.broker_id,
            epoch=record.broker_epoch,
            incarnation_id=record.incarnation_id,
            endpoints=tuple(
                Endpoint(e.name, e.host, e.port, e.security_protocol) for e in record.end_points or ()
            ),
            rack=record.rack or None,
            fenced=record.fenced,
            in_controlled_shutdown=record.in_controlled_shutdown,
            registered_at_offset=offset,
        )
        return ImageChange(brokers={record.broker_id})

    def _unregister_broker(self, record: UnregisterBrokerRecord, _offset: int) -> ImageChange:
        self.brokers.pop(record.broker_id, None)
        return ImageChange(brokers={record.broker_id})

    def _set_broker(self, broker_id: int, epoch: int, **changes) -> ImageChange:
        broker = self.brokers.get(broker_id)
        if broker is None or broker.epoch != epoch:
            raise ImageError(f"broker {broker_id} epoch {epoch} is not registered")
        self.brokers[broker_id] = replace(broker, **changes)
        return ImageChange(brokers={broker_id})

    def _fence(self, record: FenceBrokerRecord, _offset: int) -> ImageChange:
        return self._set_broker(record.id, record.epoch, fenced=True)

    def _unfence(self, record: UnfenceBrokerRecord, _offset: int) -> ImageChange:
        # ClusterDelta.replay(UnfenceBrokerRecord): the fence goes, in-controlled-shutdown stays (only a
        # new RegisterBrokerRecord clears it)
        return self._set_broker(record.id, record.epoch, fenced=False)

    def _registration_change(self, record: BrokerRegistrationChangeRecord, _offset: int) -> ImageChange:
        if record.fenced not in _FENCING_CHANGE or record.in_controlled_shutdown not in _SHUTDOWN_CHANGE:
            raise ImageError(  # Kafka's replay throws IllegalStateException
                f"BrokerRegistrationChangeRecord for broker {record.broker_id} has unknown values "
                f"fenced={record.fenced} in_controlled_shutdown={record.in_controlled_shutdown}"
            )
        changes = {
            "fenced": _FENCING_CHANGE[record.fenced],
            "in_controlled_shutdown": _SHUTDOWN_CHANGE[record.in_controlled_shutdown],
        }
        return self._set_broker(
            record.broker_id, record.broker_epoch, **{k: v for k, v in changes.items() if v is not None}
        )

    def _topic(self, record: TopicRecord, _offset: int) -> ImageChange:
        topic = TopicInfo(record.name, record.topic_id, [], self.topic_configs(record.name))
        self._topics[record.name] = topic
        self._by_id[record.topic_id] = topic
        return ImageChange(topics_created={record.name})

    def _known_topic(self, topic_id: UUID) -> TopicInfo:
        topic = self._by_id.get(topic_id)
        if topic is None:
            raise ImageError(f"a partition record names topic id {topic_id}, which no TopicRecord created")
        return topic

    def _partition(self, record: PartitionRecord, _offset: int) -> ImageChange:
        topic = self._known_topic(record.topic_id)
        info = PartitionInfo(
            index=record.partition_id,
            replicas=tuple(record.replicas),
            isr=tuple(record.isr),
            leader=record.leader,
            leader_epoch=record.leader_epoch,
            partition_epoch=record.partition_epoch,
            removing_replicas=tuple(record.removing_replicas or ()),
            adding_replicas=tuple(record.adding_replicas or ()),
            leader_recovery_state=record.leader_recovery_state,
        )
        if record.partition_id == len(topic.partitions):
            topic.partitions.append(info)
        elif record.partition_id < len(topic.partitions):
            topic.partitions[record.partition_id] = info
        else:
            raise ImageError(f"partition {record.partition_id} of {topic.name} skips a partition index")
        return ImageChange(partitions={(topic.name, record.partition_id)})

    def _partition_change(self, record: PartitionChangeRecord, _offset: int) -> ImageChange:
        topic = self._known_topic(record.topic_id)
        if not 0 <= record.partition_id < len(topic.partitions):
            raise ImageError(f"a change to unknown partition {topic.name}-{record.partition_id}")
        topic.partitions[record.partition_id] = topic.partitions[record.partition_id].merge(record)
        return ImageChange(partitions={(topic.name, record.partition_id)})

    def _remove_topic(self, record: RemoveTopicRecord, _offset: int) -> ImageChange:
        topic = self._known_topic(record.topic_id)
        del self._topics[topic.name]
        del self._by_id[topic.topic_id]
        self.configs.pop((TOPIC_RESOURCE, topic.name), None)
        return ImageChange(
            topics_removed={topic.name: topic},
            partitions={(topic.name, p.index) for p in topic.partitions},
        )

    def _config(self, record: ConfigRecord, _offset: int) -> ImageChange:
        resource = (record.resource_type, record.resource_name)
        values = self.configs.setdefault(resource, {})
        if record.value is None:  # a null value deletes the override
            values.pop(record.name, None)
        else:
            values[record.name] = record.value
        if not values:
            del self.configs[resource]
        if record.resource_type == TOPIC_RESOURCE and record.resource_name in self._topics:
            self._topics[record.resource_name].configs = self.topic_configs(record.resource_name)
        return ImageChange(configs={resource})

    def _producer_ids(self, record: ProducerIdsRecord, _offset: int) -> ImageChange:
        self.next_producer_id = record.next_producer_id
        return ImageChange()

    def _feature(self, record: FeatureLevelRecord, _offset: int) -> ImageChange:
        if record.feature_level == 0:  # FeaturesDelta.replay: level 0 removes the feature
            self.features.pop(record.name, None)
        else:
            self.features[record.name] = record.feature_level
        return ImageChange()

    def _scram_credential(self, record: UserScramCredentialRecord, _offset: int) -> ImageChange:
        self.scram.upsert(record)
        return ImageChange()

    def _remove_scram_credential(self, record: RemoveUserScramCredentialRecord, _offset: int) -> ImageChange:
        try:
            self.scram.remove(record)
        except UnknownCredential as exc:  # ScramControlManager.replay throws too
            raise ImageError(str(exc)) from exc
        return ImageChange()

    def _client_quota(self, record: ClientQuotaRecord, _offset: int) -> ImageChange:
        self.client_quotas.replay(record)
        return ImageChange()

    def _acl(self, record: AccessControlEntryRecord, _offset: int) -> ImageChange:
        self.acl_entries.add(record)
        return ImageChange()

    def _remove_acl(self, record: RemoveAccessControlEntryRecord, _offset: int) -> ImageChange:
        try:
            self.acl_entries.remove(record)
        except UnknownAcl as exc:  # AclControlManager.replay and AclsDelta.replay throw too
            raise ImageError(str(exc)) from exc
        return ImageChange()


# BrokerRegistrationFencingChange (FENCE 1, NONE 0, UNFENCE -1) and
# BrokerRegistrationInControlledShutdownChange (NONE 0, IN_CONTROLLED_SHUTDOWN 1): value -> new flag
_FENCING_CHANGE = {1: True, 0: None, -1: False}
_SHUTDOWN_CHANGE = {0: None, 1: True}


_REPLAYERS = {
    RegisterBrokerRecord: ClusterImage._register_broker,
    UnregisterBrokerRecord: ClusterImage._unregister_broker,
    FenceBrokerRecord: ClusterImage._fence,
    UnfenceBrokerRecord: ClusterImage._unfence,
    BrokerRegistrationChangeRecord: ClusterImage._registration_change,
    TopicRecord: ClusterImage._topic,
    PartitionRecord: ClusterImage._partition,
    PartitionChangeRecord: ClusterImage._partition_change,
    RemoveTopicRecord: ClusterImage._remove_topic,
    ConfigRecord: ClusterImage._config,
    ProducerIdsRecord: ClusterImage._producer_ids,
    FeatureLevelRecord: ClusterImage._feature,
    UserScramCredentialRecord: ClusterImage._scram_credential,
    RemoveUserScramCredentialRecord: ClusterImage._remove_scram_credential,
    ClientQuotaRecord: ClusterImage._client_quota,
    AccessControlEntryRecord: ClusterImage._acl,
    RemoveAccessControlEntryRecord: ClusterImage._remove_acl,
}
