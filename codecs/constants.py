"""Wire-level enums and special values that the message definitions leave as bare integers.

Each is defined once, here, with the name Apache Kafka's Java classes give it, and used by the broker,
the client and the harness alike."""

from __future__ import annotations

from enum import IntEnum

from ._schema import ZERO_UUID

__all__ = [
    "AlterConfigOpType",
    "ConfigResourceType",
    "ConfigSource",
    "IsolationLevel",
    "LIST_OFFSETS_TIMESTAMP_MIN_VERSION",
    "ListOffsetsTimestamp",
    "NO_TIMESTAMP",
    "ZERO_UUID",
]

NO_TIMESTAMP = -1  # RecordBatch.NO_TIMESTAMP
# ZERO_UUID: Uuid.ZERO_UUID, "no topic id" (from _runtime, where the generated classes take it)


class ConfigResourceType(IntEnum):
    """``ConfigResource.Type``: the resource_type of DescribeConfigs, AlterConfigs and friends."""

    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8
    CLIENT_METRICS = 16
    GROUP = 32


class ConfigSource(IntEnum):
    """``DescribeConfigsResponse.ConfigSource``: where a described value comes from (v1+)."""

    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7
    GROUP_CONFIG = 8


class AlterConfigOpType(IntEnum):
    """``AlterConfigOp.OpType``: IncrementalAlterConfigs' config_operation."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


class IsolationLevel(IntEnum):
    """``IsolationLevel``: Fetch (v4+) and ListOffsets (v2+) isolation_level."""

    READ_UNCOMMITTED = 0
    READ_COMMITTED = 1


class ListOffsetsTimestamp(IntEnum):
    """``ListOffsetsRequest``'s special timestamps; each needs a minimum request version."""

    LATEST = -1
    EARLIEST = -2
    MAX_TIMESTAMP = -3  # v7+ (KIP-734)
    EARLIEST_LOCAL = -4  # v8+ (KIP-405)
    LATEST_TIERED = -5  # v9+ (KIP-1005)
    EARLIEST_PENDING_UPLOAD = -6  # v11+


# The first ListOffsets version that may ask for each special timestamp (ReplicaManager
# .timestampMinSupportedVersion in Kafka 4.2; KafkaApis.handleListOffsetRequestV1AndAbove in 3.x, which
# predates -6). Version 0 knows -1 and -2 only.
LIST_OFFSETS_TIMESTAMP_MIN_VERSION: dict[int, int] = {
    ListOffsetsTimestamp.EARLIEST: 1,
    ListOffsetsTimestamp.LATEST: 1,
    ListOffsetsTimestamp.MAX_TIMESTAMP: 7,
    ListOffsetsTimestamp.EARLIEST_LOCAL: 8,
    ListOffsetsTimestamp.LATEST_TIERED: 9,
    ListOffsetsTimestamp.EARLIEST_PENDING_UPLOAD: 11,
}
