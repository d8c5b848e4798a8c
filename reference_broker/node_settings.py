"""What a node works out from its configuration and the cluster metadata image, the same way whether it
is a broker (``node.BrokerNode``) or the controller (``controller.controller.Controller``): topic
defaults and settings, where new replicas go, and its own dynamic broker configuration. The topic
handlers (CreateTopics, CreatePartitions, Metadata's auto-creation) and the internal topics run on
either through these methods."""

from __future__ import annotations

import logging

from .cluster_metadata import ClusterImage, TopicInfo
from .config import BrokerConfig, TopicConfig, create_topics_config_error, with_persisted_dynamic
from .controller.placement import assign_replicas

__all__ = ["NodeSettings"]

log = logging.getLogger(__name__)


class NodeSettings:
    """A mixin for a node with ``config``, ``image``, ``node_id`` and ``create_topic(name, replicas,
    configs)``."""

    config: BrokerConfig
    image: ClusterImage
    node_id: int

    # ---- topic defaults and settings ------------------------------------------------------------

    @property
    def live_broker_ids(self) -> list[int]:
        return [b.broker_id for b in self.image.usable_brokers()]

    @property
    def auto_create_topics(self) -> bool:
        return bool(self.config["auto.create.topics.enable"])

    @property
    def default_partitions(self) -> int:
        return int(self.config["num.partitions"])

    @property
    def default_replication_factor(self) -> int:
        return int(self.config["default.replication.factor"])

    def topic_settings(self, overrides: dict[str, str]) -> dict[str, str]:
        resolved = TopicConfig.resolve(self.config, overrides, include_synonyms=False)
        return {name: entry.value for name, entry in resolved.items() if entry.value is not None}

    def topic_config_problem(self, configs: dict[str, str]) -> str | None:
        error = create_topics_config_error(configs.items(), broker=self.config)
        return None if error is None else error.message

    def describe_topic_configs(self, overrides: dict[str, str]):
        return TopicConfig.for_create_topics(self.config, overrides)

    def assign_replicas(self, partitions: int, factor: int, *, start: int = 0) -> list[list[int]]:
        return assign_replicas(self.image, partitions, factor, start=start)

    def auto_create_topic(self, name: str) -> TopicInfo | None:
        factor = min(self.default_replication_factor, len(self.live_broker_ids))
        return self.create_topic(name, self.assign_replicas(self.default_partitions, factor), {})

    # ---- dynamic broker configuration ------------------------------------------------------------

    def follow_dynamic_config(self) -> None:
        """Take the dynamic broker configs the metadata holds for the cluster (resource "") and for this
        node (its id) into ``config`` (``DynamicConfigPublisher``), logging what Kafka would ignore."""
        self.config, problems = with_persisted_dynamic(
            self.config,
            cluster_default=self.image.broker_configs(None),
            per_broker=self.image.broker_configs(self.node_id),
        )
        for problem in problems:
            log.warning("node %d: %s", self.node_id, problem)
