"""The controller: the one writer of ``__cluster_metadata`` (Kafka's ``QuorumController`` with a single
voter). Every operation decides its records from the current image with the pure rules of this package
(``brokers``, ``alter_partition``, ``partition_updates``, ``placement``, ``configs``, ``scram``,
``acls``), appends them as one batch, and answers from the image they produce; the brokers learn the same
records by fetching the log. Its own configuration follows the dynamic broker configs of the log (the
cluster default and its node id), as a broker's does.

It keeps, outside the log, only what Kafka's controller keeps in its ``BrokerHeartbeatManager``: when
each broker last heartbeated, the metadata offset it reported, and the offset its controlled shutdown
was written at (all restart on every controller start, as on a controller failover). ``tick`` is its
periodic work: fence brokers whose session lapsed, elect unclean leaders for leaderless partitions of
topics that allow it (``maybeElectUncleanLeaders``), and move leadership back to preferred replicas
(``auto.leader.rebalance.enable``, ``maybeBalancePartitionLeaders``).

The topic operations have the names and shapes of the single node's (``create_topic``,
``add_partitions``, ``delete_topic``, and ``NodeSettings``' ``assign_replicas``, ``topic_settings`` ...),
so the same CreateTopics, DeleteTopics and CreatePartitions handlers run on either."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from pathlib import Path

from kconform.codecs.errors import Errors
from kconform.codecs.metadata_records import (
    ConfigRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RemoveTopicRecord,
    TopicRecord,
)

from ..clock import Clock
from ..cluster_metadata import (
    BROKER_RESOURCE,
    NO_LEADER,
    TOPIC_RESOURCE,
    ClusterImage,
    ImageChange,
    MetadataLog,
    TopicInfo,
)
from ..config import AdminError, BrokerConfig
from ..node_settings import NodeSettings
from ..purgatory import Purgatory
from . import brokers as broker_rules
from . import configs as config_rules
from .acls import create_acls, delete_acls
from .alter_partition import alter_partition
from .client_quotas import alter_client_quotas
from .partition_change import Election
from .partition_updates import election, unclean_allowed
from .placement import NotEnoughBrokers
from .reassignment import reassignment_change
from .scram import alter_credentials

__all__ = ["Controller", "METADATA_WATCH_KEY", "PRODUCER_ID_BLOCK_SIZE"]

log = logging.getLogger(__name__)
METADATA_WATCH_KEY = ("__cluster_metadata", 0)
PRODUCER_ID_BLOCK_SIZE = 1000  # ProducerIdControlManager's block


class Controller(NodeSettings):
    def __init__(self, config: BrokerConfig, data_dir: Path, *, clock: Clock, purgatory: Purgatory) -> None:
        self.config = config
        self.clock = clock
        self.purgatory = purgatory
        self.node_id = int(config["node.id"])
        self.metadata = MetadataLog.open(data_dir, clock=clock.now_ms)
        # every start is a new quorum epoch, as a single voter elects itself again
        self.epoch = max(self.metadata.latest_epoch, 0) + 1
        self.follow_dynamic_config()
        self._last_contact: dict[int, float] = {}
        self._metadata_offset: dict[int, int] = {}  # the last currentMetadataOffset each broker sent
        self._shutdown_offset: dict[int, int] = {}  # a broker in controlled shutdown -> where it began
        now = clock.monotonic()
        for broker in self.image.brokers.values():
            self._last_contact[broker.broker_id] = now
        self._next_rebalance = now + int(config["leader.imbalance.check.interval.seconds"])
        self._next_unclean = now + int(config["unclean.leader.election.interval.ms"]) / 1000

    @property
    def image(self) -> ClusterImage:
        return self.metadata.image

    @property
    def topics(self) -> ClusterImage:
        return self.metadata.image

    @property
    def authorizer(self):
        """The controller's own ``Authorizer`` over its image's ACLs (``ControllerApis`` authorizes the
        requests it serves, forwarded ones as the Envelope's principal); None without one."""
        from ..acl_authorizer import authorizer_for

        return authorizer_for(self.config, self.image.acl_entries)

    def close(self) -> None:
        self.metadata.close()

    def append(self, records: Sequence) -> ImageChange:
        change = self.metadata.append(records, leader_epoch=self.epoch, now_ms=self.clock.now_ms())
        if any(resource_type == BROKER_RESOURCE for resource_type, _ in change.configs):
            self.follow_dynamic_config()  # the cluster default or this node's own layer may have moved
        self.purgatory.notify(METADATA_WATCH_KEY)  # wake the brokers' metadata fetches
        return change

    @property
    def _unclean_default(self) -> bool:
        return bool(self.config["unclean.leader.election.enable"])

    # ---- brokers ------------------------------------------------------------------------------

    def register_broker(self, request) -> int:
        """The new broker epoch; ``brokers.Refused`` otherwise."""
        broker_id = request.broker_id
        alive = self._session_alive(broker_id)
        previous = self.image.brokers.get(broker_id)
        records, epoch = broker_rules.registration(
            self.image,
            request,
            next_offset=self.metadata.end_offset,
            session_alive=alive,
            unclean_default=self._unclean_default,
        )
        self.append(records)
        if previous is None or previous.epoch != epoch:  # a new incarnation starts a new session
            self._shutdown_offset.pop(broker_id, None)
            self._metadata_offset.pop(broker_id, None)
        self._last_contact[broker_id] = self.clock.monotonic()
        return epoch

    def heartbeat(self, request) -> broker_rules.HeartbeatAnswer:
        broker_id = request.broker_id
        answer = broker_rules.heartbeat(
            self.image,
            request,
            unclean_default=self._unclean_default,
            shutdown_offset=self._shutdown_offset.get(broker_id, -1),
            lowest_active_offset=self._lowest_active_offset(),
        )
        self._last_contact[broker_id] = self.clock.monotonic()
        self._metadata_offset[broker_id] = request.current_metadata_offset
        self.append(answer.records)
        if answer.is_fenced:  # BrokerHeartbeatManager.touch: a fenced broker leaves controlled shutdown
            self._shutdown_offset.pop(broker_id, None)
        elif answer.in_controlled_shutdown:  # processBatchEndOffset: the end of this write, kept once
            self._shutdown_offset.setdefault(broker_id, self.metadata.end_offset - 1)
        return answer

    def _lowest_active_offset(self) -> int:
        """``BrokerHeartbeatManager.lowestActiveOffset``: the lowest metadata offset of the unfenced
        brokers not in controlled shutdown (-1 for one not heard from since this controller started)."""
        offsets = [
            self._metadata_offset.get(b.broker_id, -1)
            for b in self.image.brokers.values()
            if not b.fenced and b.broker_id not in self._shutdown_offset
        ]
        return min(offsets, default=broker_rules.NO_OFFSET)

    def _session_alive(self, broker_id: int) -> bool:
        """``hasValidSession``'s clock half: heard from no longer than the session timeout ago."""
        last = self._last_contact.get(broker_id)
        timeout_s = int(self.config["broker.session.timeout.ms"]) / 1000
        return last is not None and self.clock.monotonic() - last <= timeout_s

    def fence_lapsed_sessions(self) -> list[int]:
        fenced = []
        for broker_id, broker in list(self.image.brokers.items()):
            if not broker.fenced and not self._session_alive(broker_id):
                log.info("broker %d missed heartbeats for broker.session.timeout.ms: fenced", broker_id)
                self.append(broker_rules.fence(self.image, broker_id, unclean_default=self._unclean_default))
                self._shutdown_offset.pop(broker_id, None)
                fenced.append(broker_id)
        return fenced

    # ---- topics (the shapes the single node's topic handlers call) ------------------------------

    def _partition_records(self, topic_id: uuid.UUID, first_index: int, replicas: list[list[int]]) -> list:
        records = []
        for offset, assignment in enumerate(replicas):
            isr = [b for b in assignment if self._is_active(b)]
            if not isr:  # createTopic / createPartitions: INVALID_REPLICATION_FACTOR
                raise NotEnoughBrokers(
                    f"Unable to replicate the partition {len(assignment)} time(s): All brokers are "
                    "currently fenced or in controlled shutdown."
                )
            records.append(
                PartitionRecord(
                    partition_id=first_index + offset,
                    topic_id=topic_id,
                    replicas=list(assignment),
                    isr=isr,
                    removing_replicas=[],
                    adding_replicas=[],
                    leader=isr[0],
                    leader_epoch=0,
                    partition_epoch=0,
                    directories=[],
                )
            )
        return records

    def _is_active(self, broker_id: int) -> bool:
        """``ClusterControlManager.isActive``: a new partition's ISR is its active replicas."""
        broker = self.image.brokers.get(broker_id)
        return broker is not None and not broker.fenced and not broker.in_controlled_shutdown

    def create_topic(
        self,
        name: str,
        replicas: list[list[int]],
        configs: dict[str, str],
        *,
        topic_id: uuid.UUID | None = None,
    ) -> TopicInfo:
        if topic_id is None:
            topic_id = uuid.uuid4()
            while self.image.by_id(topic_id) is not None or topic_id.int in (0, 1):
                topic_id = uuid.uuid4()
        records: list = [TopicRecord(name=name, topic_id=topic_id)]
        records += [
            ConfigRecord(resource_type=TOPIC_RESOURCE, resource_name=name, name=key, value=value)
            for key, value in sorted(configs.items())
        ]
        records += self._partition_records(topic_id, 0, replicas)
        self.append(records)
        return self.image.get(name)

    def add_partitions(self, name: str, replicas: list[list[int]]) -> TopicInfo:
        topic = self.image.get(name)
        self.append(self._partition_records(topic.topic_id, len(topic.partitions), replicas))
        return self.image.get(name)

    def delete_topic(self, name: str) -> TopicInfo:
        topic = self.image.get(name)
        if topic is None:
            raise KeyError(name)
        self.append([RemoveTopicRecord(topic_id=topic.topic_id)])
        return topic

    def alter_topic_configs(self, name: str, configs: dict[str, str]) -> None:
        """Replace a topic's overrides (AlterConfigs on one topic); ValueError with Kafka's message when
        refused."""
        (error,) = self.alter_configs([(TOPIC_RESOURCE, name, configs)], incremental=False)
        if error is not None:
            raise ValueError(error.message)

    # ---- configs ------------------------------------------------------------------------------

    def alter_configs(
        self, resources: Sequence[tuple[int, str, object]], *, incremental: bool, validate_only: bool = False
    ) -> list[AdminError | None]:
        """IncrementalAlterConfigs or AlterConfigs (``QuorumController.incrementalAlterConfigs`` /
        ``legacyAlterConfigs``) on (type, name, changes) resources, changes being (name, operation, value)
        operations or the whole new config: each resource's error or None, in order. The records of the
        resources that passed are written as one batch, unless ``validate_only``."""
        rule = config_rules.incremental_change if incremental else config_rules.legacy_change
        records: list = []
        errors = []
        for resource_type, name, changes in resources:
            written, error = rule(self.image, self.config, self.node_id, resource_type, name, changes)
            records += written
            errors.append(error)
        if not validate_only:
            self.append(records)
        return errors

    # ---- SCRAM credentials ----------------------------------------------------------------------

    def alter_scram_credentials(self, request) -> list:
        """AlterUserScramCredentials (``QuorumController.alterUserScramCredentials``): the per-user
        results; the records of what passed are written as one batch."""
        records, results = alter_credentials(self.image.scram, request)
        self.append(records)
        return results

    def alter_client_quotas(self, entries, validate_only: bool) -> list:
        """AlterClientQuotas (``QuorumController.alterClientQuotas``): ``(entity, error or None)`` per
        entity; what passed is written as one batch, unless ``validate_only``."""
        records, results = alter_client_quotas(self.image.client_quotas, entries)
        if not validate_only:
            self.append(records)
        return results

    # ---- ACLs -----------------------------------------------------------------------------------

    def create_acls(self, bindings: Sequence) -> list:
        """CreateAcls (``QuorumController.createAcls``): one ``AclOutcome`` per binding; the new
        bindings' records are written as one batch."""
        records, outcomes = create_acls(self.image.acl_entries, bindings, uuid.uuid4)
        self.append(records)
        return outcomes

    def delete_acls(self, filters: Sequence) -> list:
        """DeleteAcls (``QuorumController.deleteAcls``): one ``AclOutcome`` per filter, the removals
        written as one batch."""
        records, outcomes = delete_acls(self.image.acl_entries, filters)
        self.append(records)
        return outcomes

    # ---- partitions -----------------------------------------------------------------------------

    def alter_partition(self, request, version: int):
        unclean = self._unclean_default
        records, response = alter_partition(self.image, request, version, unclean_default=unclean)
        self.append(records)
        return response

    def reassign(self, name: str, index: int, target: list[int] | None) -> tuple[int, str | None]:
        """One AlterPartitionReassignments partition: (error code, message)."""
        code, message, record = reassignment_change(
            self.image, name, index, target, unclean_default=self._unclean_default
        )
        if record is not None:
            self.append([record])
        return code, message

    def elect(self, topic: TopicInfo, index: int, kind: Election) -> int:
        """One ElectLeaders partition (``ReplicationControlManager.electLeader``): an error code. A
        PREFERRED election of a partition its first replica leads, or an UNCLEAN one of a partition that
        has a leader, is not needed; otherwise any change is written and is success, even one that
        elected another than the preferred replica; no change is PREFERRED_LEADER_NOT_AVAILABLE or
        ELIGIBLE_LEADERS_NOT_AVAILABLE."""
        if not 0 <= index < len(topic.partitions):
            return Errors.UNKNOWN_TOPIC_OR_PARTITION
        partition = topic.partitions[index]
        if kind is Election.PREFERRED and partition.leader == partition.preferred_leader:
            return Errors.ELECTION_NOT_NEEDED
        if kind is Election.UNCLEAN and partition.leader != NO_LEADER:
            return Errors.ELECTION_NOT_NEEDED
        record = election(self.image, topic, partition, kind)
        if record is None:
            if kind is Election.PREFERRED:
                return Errors.PREFERRED_LEADER_NOT_AVAILABLE
            return Errors.ELIGIBLE_LEADERS_NOT_AVAILABLE
        self.append([record])
        return Errors.NONE

    # ---- producer ids -------------------------------------------------------------------------

    def allocate_producer_ids(self, broker_id: int, broker_epoch: int) -> tuple[int, int]:
        """(first id, count) of a fresh block (``ProducerIdControlManager.generateNextProducerId``);
        STALE_BROKER_EPOCH as ``brokers.Refused`` for an unknown broker or epoch."""
        broker_rules.check_broker_epoch(self.image, broker_id, broker_epoch)
        first = self.image.next_producer_id
        if first > 2**63 - 1 - PRODUCER_ID_BLOCK_SIZE:
            raise broker_rules.Refused(
                Errors.UNKNOWN_SERVER_ERROR,
                "Exhausted all producerIds as the next block's end producerId has exceeded the int64 "
                "type limit",
            )
        self.append(
            [
                ProducerIdsRecord(
                    broker_id=broker_id,
                    broker_epoch=broker_epoch,
                    next_producer_id=first + PRODUCER_ID_BLOCK_SIZE,
                )
            ]
        )
        return first, PRODUCER_ID_BLOCK_SIZE

    # ---- periodic work ------------------------------------------------------------------------

    def tick(self) -> None:
        """The controller's periodic tasks (``PeriodicTaskControlManager``): session fencing on every
        tick, unclean elections every unclean.leader.election.interval.ms, preferred leaders every
        leader.imbalance.check.interval.seconds."""
        self.fence_lapsed_sessions()
        now = self.clock.monotonic()
        if now >= self._next_unclean:
            self._next_unclean = now + int(self.config["unclean.leader.election.interval.ms"]) / 1000
            self.elect_unclean_leaders()
        if now >= self._next_rebalance:
            self._next_rebalance = now + int(self.config["leader.imbalance.check.interval.seconds"])
            if self.config["auto.leader.rebalance.enable"]:
                self.rebalance_leaders()

    def elect_unclean_leaders(self) -> int:
        """UNCLEAN elections for the leaderless partitions of topics whose unclean.leader.election.enable
        holds (``maybeTriggerUncleanLeaderElectionForLeaderlessPartitions``)."""
        records = [
            record
            for topic in self.image
            if unclean_allowed(self.image, topic, self._unclean_default)
            for partition in topic.partitions
            if partition.leader == NO_LEADER
            and (record := election(self.image, topic, partition, Election.UNCLEAN)) is not None
        ]
        self.append(records)
        return len(records)

    def rebalance_leaders(self) -> int:
        """A preferred election for every partition led by another than its first replica, appending
        whatever change it builds (``maybeTriggerLeaderChangeForPartitionsWithoutPreferredLeader``)."""
        records = [
            record
            for topic in self.image
            for partition in topic.partitions
            if partition.leader != partition.preferred_leader
            and (record := election(self.image, topic, partition, Election.PREFERRED)) is not None
        ]
        self.append(records)
        return len(records)
