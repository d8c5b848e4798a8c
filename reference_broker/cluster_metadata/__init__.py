"""The cluster's metadata as KRaft keeps it: the ``__cluster_metadata`` log of Kafka's metadata records
(``log``) and the image replayed from it (``image``), shared by the controller that writes the log and
the brokers that follow it."""

from .image import (
    BROKER_RESOURCE,
    NO_LEADER,
    NO_LEADER_CHANGE,
    TOPIC_RESOURCE,
    BrokerInfo,
    ClusterImage,
    Endpoint,
    ImageChange,
    ImageError,
    LeaderRecoveryState,
    PartitionInfo,
    TopicInfo,
)
from .log import CorruptMetadataLog, MetadataLog, record_version

__all__ = [
    "BROKER_RESOURCE",
    "NO_LEADER",
    "NO_LEADER_CHANGE",
    "BrokerInfo",
    "ClusterImage",
    "CorruptMetadataLog",
    "Endpoint",
    "ImageChange",
    "ImageError",
    "LeaderRecoveryState",
    "MetadataLog",
    "PartitionInfo",
    "TOPIC_RESOURCE",
    "TopicInfo",
    "record_version",
]
