"""The reference client's admin client, modelled on Kafka's ``KafkaAdminClient``.

Each call routes its requests as Java does: topic creation and deletion to the controller named in
metadata (a KRaft broker names a live broker, which forwards); configs of one broker to that broker and
every other resource to any broker; group calls to the group's coordinator; ListOffsets and
DeleteRecords to each partition's leader; ListGroups to every broker.

Results are per item: a dict from each key the caller gave to its result, or to the ``ClientError``
that item ended with (a ``BrokerError`` carries the broker's error code). ``raise_errors=True`` raises
the first such error instead. Bad input (an empty topic name, a duplicate key) raises ``ValueError``
before anything is sent. Retriable errors (the controller moved, a coordinator moved or is loading, a
leader is not known yet, a connection dropped) are retried with Kafka's exponential backoff until the
call's timeout (``default.api.timeout.ms`` unless the call gives ``timeout_ms``), after which the item
ends with ``AdminTimedOut`` holding the last error.

The modules, by concern:

- ``_types``: the values the caller passes in and the calls return;
- ``_checks``: the input checks, run before anything is sent;
- ``_requests``, ``_group_requests``: request builders and response readers, plain functions of data;
- ``_routing``: which broker each request goes to, what each error code means, the retry loop;
- ``_topics``, ``_configs``, ``_groups``, ``_partitions``, ``_cluster``: the calls, one mixin per API
  family, each only building, routing, sending and reading;
- ``_admin``: ``Admin``, the mixins together with the client's lifecycle."""

from kconform.codecs.constants import AlterConfigOpType, ConfigResourceType, ConfigSource, IsolationLevel

from ._admin import Admin
from ._group_requests import decode_consumer_assignment, decode_consumer_subscription
from ._routing import AdminTimedOut
from ._types import (
    AlterConfigOp,
    ClusterDescription,
    ConfigEntry,
    ConfigResource,
    ConfigSynonym,
    CreatedTopic,
    GroupDescription,
    GroupListing,
    ListOffsetsResult,
    MemberDescription,
    NewTopic,
    OffsetAndMetadata,
    OffsetSpec,
    PartitionDescription,
    TopicDescription,
    TopicListing,
)

__all__ = [
    "Admin",
    "AdminTimedOut",
    "AlterConfigOp",
    "AlterConfigOpType",
    "ClusterDescription",
    "ConfigEntry",
    "ConfigResource",
    "ConfigResourceType",
    "ConfigSource",
    "ConfigSynonym",
    "CreatedTopic",
    "GroupDescription",
    "GroupListing",
    "IsolationLevel",
    "ListOffsetsResult",
    "MemberDescription",
    "NewTopic",
    "OffsetAndMetadata",
    "OffsetSpec",
    "PartitionDescription",
    "TopicDescription",
    "TopicListing",
    "decode_consumer_assignment",
    "decode_consumer_subscription",
]
