"""What a principal may see and do in a Metadata request (KafkaApis.handleTopicMetadataRequest).

- DESCRIBE on a topic: a topic named without it is TOPIC_AUTHORIZATION_FAILED whether it exists or not,
  and an all-topics request leaves it out;
- auto-creation needs CREATE on the cluster, or else on each topic to create: an unknown topic the
  principal may describe but not create is TOPIC_AUTHORIZATION_FAILED;
- ``topic_authorized_operations`` and, v8-10, ``cluster_authorized_operations`` are the operations the
  ACLs allow (``AuthHelper.authorizedOperations``); the cluster's are 0 without DESCRIBE on it."""

from __future__ import annotations

from dataclasses import dataclass

from ..security.acls import Operation, ResourceType
from ..security.authorization import CLUSTER_NAME, allowed, authorized_operations, filter_allowed

__all__ = ["TopicAccess"]


@dataclass(frozen=True)
class TopicAccess:
    broker: object
    ctx: object
    described: frozenset[str]
    creatable: frozenset[str]

    @classmethod
    def of(cls, broker, ctx, wanted, allow_create: bool) -> TopicAccess:
        """``wanted``: the request's topics, None for all of them."""
        if wanted is None:
            names = {t.name for t in broker.topics}
        else:
            names = set()
            for entry in wanted:
                if entry.name is not None:
                    names.add(entry.name)
                elif (topic := broker.topics.by_id(entry.topic_id)) is not None:
                    names.add(topic.name)
        described = filter_allowed(broker, ctx, Operation.DESCRIBE, ResourceType.TOPIC, names)
        missing = {name for name in described if name not in broker.topics}
        creatable = missing
        if wanted is not None and allow_create and missing:
            if not allowed(broker, ctx, Operation.CREATE, ResourceType.CLUSTER, CLUSTER_NAME):
                creatable = filter_allowed(broker, ctx, Operation.CREATE, ResourceType.TOPIC, missing)
        return cls(broker, ctx, frozenset(described), frozenset(creatable))

    def operations(self, name: str) -> int:
        return authorized_operations(self.broker, self.ctx, ResourceType.TOPIC, name)

    def cluster_operations(self) -> int:
        if not allowed(self.broker, self.ctx, Operation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
            return 0
        return authorized_operations(self.broker, self.ctx, ResourceType.CLUSTER, CLUSTER_NAME)
