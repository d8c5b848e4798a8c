"""What the transaction coordinator needs from the node it runs in, and nothing more: a typed interface
in place of the whole broker. ``BrokerNode`` provides it as it is; a test checks that it does."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol, runtime_checkable

from ..clock import Clock
from ..cluster_metadata import ClusterImage
from ..internal_topics import StoredRecord
from .marker_writer import MarkerHost

__all__ = ["ProducerIdSource", "TxnCoordinatorHost", "TxnLogTopic"]


class TxnLogTopic(Protocol):
    """``__transaction_state`` (``internal_topics.InternalTopic``): read back in full on start, one
    record appended for each state change, in the partition of the transactional id."""

    @property
    def name(self) -> str: ...

    @property
    def partition_count(self) -> int: ...

    @property
    def exists(self) -> bool: ...

    def ensure(self) -> None: ...

    def partition_for(self, key: str) -> int: ...

    def append(self, partition: int, records: Sequence[tuple[bytes | None, bytes | None]]) -> int: ...

    def read(self, partition: int) -> Iterable[StoredRecord]: ...


class ProducerIdSource(Protocol):
    """``producer_ids.ProducerIdBlocks``: ids never handed out twice, in the cluster and across restarts."""

    def next_id(self) -> int: ...


@runtime_checkable
class TxnCoordinatorHost(MarkerHost, Protocol):
    """The node as the transaction coordinator sees it. From ``MarkerHost``: ``partition`` (the
    ``__transaction_state`` partition's leader epoch, which markers carry as the coordinator epoch, and
    the partitions markers go to) and ``group_coordinator`` (told of markers in ``__consumer_offsets``)."""

    @property
    def config(self) -> Mapping[str, object]:
        """Read for ``TxnSettings``: transaction.max.timeout.ms and the timed-out abort interval."""

    @property
    def clock(self) -> Clock:
        """``now_ms`` for every decision."""

    @property
    def producer_ids(self) -> ProducerIdSource: ...

    @property
    def transaction_state(self) -> TxnLogTopic: ...

    @property
    def node_id(self) -> int: ...

    @property
    def image(self) -> ClusterImage:
        """The cluster metadata: each marker's partition leader."""

    def peer_address(self, broker_id: int) -> tuple[str, int] | None:
        """Where to send WriteTxnMarkers and AddPartitionsToTxn to another broker."""
