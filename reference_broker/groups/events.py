"""What the group coordinator's rules decide on: requests (each with the number of the request it
answers, ``waiter``), timers firing, and the results of the rules' own writes (``written``, filled in by
the runtime), plus the state they decide over and the context a decision may read.

Every value here is plain data, so a test can build any sequence of them and drive the rules alone."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from uuid import UUID

from ..coordinator_runtime import Written
from .classic_log_records import OffsetCommitValue
from .kip848_log_records import TopicMetadata
from .kip848_rules import Heartbeat, Settings  # noqa: F401  (Heartbeat: ConsumerHeartbeat.request)

__all__ = [
    "ClassicHeartbeat",
    "ClassicMemberTimedOut",
    "ClassicSettings",
    "CommitOffsets",
    "CommittedOffset",
    "ConsumerHeartbeat",
    "ConsumerRebalanceExpired",
    "ConsumerRecordsWritten",
    "ConsumerSessionExpired",
    "DeleteGroups",
    "DeleteOffsets",
    "GroupContext",
    "GroupPersisted",
    "GroupsState",
    "InitialJoinStep",
    "JoinDeadline",
    "JoinGroup",
    "LeaveGroup",
    "OffsetsWritten",
    "PendingMemberExpired",
    "SessionExpired",
    "SyncDeadline",
    "SyncGroup",
    "TransactionCompleted",
]

TopicPartition = tuple[str, int]


# ---- state and context ----------------------------------------------------------------------------


@dataclass(frozen=True)
class CommittedOffset:
    value: OffsetCommitValue
    record_offset: int  # where the commit sits in __consumer_offsets: the later record wins


@dataclass
class GroupsState:
    """Everything one group coordinator knows: its groups (classic and KIP-848) and their offsets."""

    groups: dict[str, object] = field(default_factory=dict)
    offsets: defaultdict[str, dict[TopicPartition, CommittedOffset]] = field(
        default_factory=lambda: defaultdict(dict)
    )
    # (offsets partition, producer id) -> [(group, partition, offset)] written, awaiting the marker
    pending_txn: dict[tuple[int, int], list[tuple[str, TopicPartition, CommittedOffset]]] = field(
        default_factory=dict
    )


@dataclass(frozen=True)
class ClassicSettings:
    """The broker settings the classic protocol and the offset rules read (``group.*``, ``offset.*``)."""

    min_session_timeout_ms: int = 6_000
    max_session_timeout_ms: int = 1_800_000
    initial_rebalance_delay_ms: int = 3_000
    max_size: int = 2**31 - 1
    offset_metadata_max_bytes: int = 4096


@dataclass(frozen=True)
class GroupContext:
    """What a decision may read besides the state: the time, the settings, and the cluster's topics
    (asked for only by the KIP-848 rules, so it is a function)."""

    now_ms: int
    classic: ClassicSettings
    consumer: Settings
    consumer_session_timeout_ms: int = 45_000
    topics: Callable[[], Mapping[str, TopicMetadata]] = dict
    migration_policy: str = "bidirectional"  # group.consumer.migration.policy, lower case

    @property
    def upgrade_enabled(self) -> bool:
        """``ConsumerGroupMigrationPolicy.isUpgradeEnabled``."""
        return self.migration_policy in ("bidirectional", "upgrade")

    @property
    def downgrade_enabled(self) -> bool:
        return self.migration_policy in ("bidirectional", "downgrade")


# ---- classic protocol -------------------------------------------------------------------------------


@dataclass(frozen=True)
class JoinGroup:
    waiter: int
    group_id: str
    member_id: str
    instance_id: str | None
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    session_timeout_ms: int
    rebalance_timeout_ms: int
    client_id: str
    client_host: str
    require_known_member_id: bool
    new_member_id: str  # the id a new member gets: chosen by the caller, so the rules stay deterministic
    consumer_member_id: str = ""  # the id it gets in a consumer group (a Uuid, as Kafka's); "": the above


@dataclass(frozen=True)
class SyncGroup:
    waiter: int
    group_id: str
    generation: int
    member_id: str
    instance_id: str | None
    protocol_type: str | None
    protocol_name: str | None
    assignments: tuple[tuple[str, bytes], ...]


@dataclass(frozen=True)
class ClassicHeartbeat:
    waiter: int
    group_id: str
    generation: int
    member_id: str
    instance_id: str | None


@dataclass(frozen=True)
class LeaveGroup:
    waiter: int
    group_id: str
    leaving: tuple[tuple[str, str | None], ...]


@dataclass(frozen=True)
class SessionExpired:
    group_id: str
    member_id: str


@dataclass(frozen=True)
class PendingMemberExpired:
    group_id: str
    member_id: str


@dataclass(frozen=True)
class JoinDeadline:
    """The rebalance timeout of a PreparingRebalance group: complete the join with whoever came."""

    group_id: str


@dataclass(frozen=True)
class InitialJoinStep:
    """Kafka's ``InitialDelayedJoin``: one step of a new group's wait for more members."""

    group_id: str
    remaining_ms: int
    step_ms: int


@dataclass(frozen=True)
class SyncDeadline:
    group_id: str
    generation: int


@dataclass(frozen=True)
class GroupPersisted:
    """The group metadata record written when the leader's assignment arrived."""

    group_id: str
    generation: int
    waiter: int
    written: Written | None = None


# ---- offsets and group administration ----------------------------------------------------------------


@dataclass(frozen=True)
class CommitOffsets:
    waiter: int
    group_id: str
    generation: int
    member_id: str
    instance_id: str | None
    offsets: tuple[tuple[str, int, int, int, str | None], ...]  # topic, partition, offset, epoch, metadata
    api_version: int
    unknown: frozenset[TopicPartition] = frozenset()  # partitions the cluster does not have
    producer: tuple[int, int] | None = None  # transactional: (producer id, epoch)
    topic_ids: Mapping[str, UUID] | None = None


@dataclass(frozen=True)
class OffsetsWritten:
    waiter: int
    group_id: str
    accepted: tuple[tuple[TopicPartition, OffsetCommitValue], ...]
    results: Mapping[TopicPartition, int]
    producer: tuple[int, int] | None
    written: Written | None = None


@dataclass(frozen=True)
class TransactionCompleted:
    """A transaction's marker is in an offsets partition: its offsets apply (commit) or vanish."""

    offsets_partition: int
    producer_id: int
    commit: bool


@dataclass(frozen=True)
class DeleteOffsets:
    waiter: int
    group_id: str
    partitions: tuple[TopicPartition, ...]


@dataclass(frozen=True)
class DeleteGroups:
    waiter: int
    group_ids: tuple[str, ...]


# ---- KIP-848 consumer protocol --------------------------------------------------------------------------


@dataclass(frozen=True)
class ConsumerHeartbeat:
    waiter: int
    request: Heartbeat
    leaving: bool


@dataclass(frozen=True)
class ConsumerRecordsWritten:
    """A KIP-848 decision's records were written (or not): apply them, set its timers, answer."""

    group_id: str
    waiter: int | None
    outcome: object  # kip848_rules.Outcome
    written: Written | None = None


@dataclass(frozen=True)
class ConsumerSessionExpired:
    group_id: str
    member_id: str


@dataclass(frozen=True)
class ClassicMemberTimedOut:
    """A member on the classic protocol in a consumer group did not rejoin, or did not sync, within its
    rebalance timeout (``timeout`` says which): it is fenced."""

    group_id: str
    member_id: str
    timeout: str


@dataclass(frozen=True)
class ConsumerRebalanceExpired:
    group_id: str
    member_id: str
    member_epoch: int
