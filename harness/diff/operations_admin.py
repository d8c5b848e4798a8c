"""Admin operations for the differential engine: topics, partitions, configs, cluster and log dirs.
Every name is the case's own, so one case's admin steps never touch another's topics."""

from __future__ import annotations

from dataclasses import dataclass

from kconform.codecs.messages import (
    AlterConfigsRequest,
    CreatePartitionsRequest,
    DeleteTopicsRequest,
    DescribeClusterRequest,
    DescribeConfigsRequest,
    DescribeLogDirsRequest,
    IncrementalAlterConfigsRequest,
)

from .context import topic_shape
from .operations import Operation

__all__ = [
    "AlterConfigs",
    "CreatePartitions",
    "DeleteTopic",
    "DescribeCluster",
    "DescribeConfigs",
    "DescribeLogDirs",
    "IncrementalAlterConfigs",
]

_TOPIC_RESOURCE = 2
# Topic configs whose values every Kafka-compatible broker should hold and validate alike.
CONFIG_NAMES = ("cleanup.policy", "retention.ms", "max.message.bytes", "no.such.config")
CONFIG_VALUES = ("compact", "delete", "60000", "-5", "not-a-number")


@dataclass(frozen=True)
class DeleteTopic(Operation):
    topic: int = 0
    api_key = 20

    def writes(self, ctx):
        return (self.topic,)

    def body(self, ctx, version):
        name = ctx.topic(self.topic)
        if version >= 6:
            return DeleteTopicsRequest(
                topics=[DeleteTopicsRequest.DeleteTopicState(name=name)], timeout_ms=5_000
            )
        return DeleteTopicsRequest(topic_names=[name], timeout_ms=5_000)

    def learn(self, side, ctx, answer):
        if side == "a" and answer.responses and answer.responses[0].error_code == 0:
            ctx.created.pop(self.topic, None)  # the steps after it meet an unknown topic

    def topics(self, ctx):
        return [ctx.topic(self.topic)]

    def _shape_parts(self, ctx):
        return topic_shape(ctx, self.topic)


@dataclass(frozen=True)
class CreatePartitions(Operation):
    topic: int = 0
    count: int = 3
    validate_only: bool = False
    api_key = 37

    def writes(self, ctx):
        return (self.topic,)

    def body(self, ctx, version):
        topic = CreatePartitionsRequest.CreatePartitionsTopic(
            name=ctx.topic(self.topic), count=self.count, assignments=None
        )
        return CreatePartitionsRequest(topics=[topic], timeout_ms=5_000, validate_only=self.validate_only)

    def topics(self, ctx):
        return [ctx.topic(self.topic)]

    def _shape_parts(self, ctx):
        parts = topic_shape(ctx, self.topic)
        count = ctx.created.get(self.topic)
        if count is not None:
            parts += ["fewer"] if self.count < count else ["same"] if self.count == count else ["more"]
        return parts + (["validate only"] if self.validate_only else [])


@dataclass(frozen=True)
class DescribeConfigs(Operation):
    topic: int = 0
    config: int = 0  # an index into CONFIG_NAMES; -1 asks for none (all of them is too broker-specific)
    api_key = 32

    def body(self, ctx, version):
        keys = [CONFIG_NAMES[self.config % len(CONFIG_NAMES)]] if self.config >= 0 else []
        resource = DescribeConfigsRequest.DescribeConfigsResource(
            resource_type=_TOPIC_RESOURCE, resource_name=ctx.topic(self.topic), configuration_keys=keys
        )
        return DescribeConfigsRequest(
            resources=[resource], include_synonyms=False, include_documentation=False
        )

    def topics(self, ctx):
        return [ctx.topic(self.topic)]

    def _shape_parts(self, ctx):
        return topic_shape(ctx, self.topic)


@dataclass(frozen=True)
class AlterConfigs(Operation):
    topic: int = 0
    config: int = 0
    value: int = 0
    validate_only: bool = True
    api_key = 33

    def body(self, ctx, version):
        config = AlterConfigsRequest.AlterableConfig(
            name=CONFIG_NAMES[self.config % len(CONFIG_NAMES)],
            value=CONFIG_VALUES[self.value % len(CONFIG_VALUES)],
        )
        resource = AlterConfigsRequest.AlterConfigsResource(
            resource_type=_TOPIC_RESOURCE, resource_name=ctx.topic(self.topic), configs=[config]
        )
        return AlterConfigsRequest(resources=[resource], validate_only=self.validate_only)

    def topics(self, ctx):
        return [ctx.topic(self.topic)]

    def _shape_parts(self, ctx):
        name = CONFIG_NAMES[self.config % len(CONFIG_NAMES)]
        return topic_shape(ctx, self.topic) + [f"{name}={CONFIG_VALUES[self.value % len(CONFIG_VALUES)]}"]


@dataclass(frozen=True)
class IncrementalAlterConfigs(Operation):
    topic: int = 0
    config: int = 0
    value: int = 0
    operation: int = 0  # 0 set, 1 delete, 2 append, 3 subtract
    validate_only: bool = False
    api_key = 44

    def body(self, ctx, version):
        config = IncrementalAlterConfigsRequest.AlterableConfig(
            name=CONFIG_NAMES[self.config % len(CONFIG_NAMES)],
            config_operation=self.operation,
            value=CONFIG_VALUES[self.value % len(CONFIG_VALUES)],
        )
        resource = IncrementalAlterConfigsRequest.AlterConfigsResource(
            resource_type=_TOPIC_RESOURCE, resource_name=ctx.topic(self.topic), configs=[config]
        )
        return IncrementalAlterConfigsRequest(resources=[resource], validate_only=self.validate_only)

    def topics(self, ctx):
        return [ctx.topic(self.topic)]

    def _shape_parts(self, ctx):
        name = CONFIG_NAMES[self.config % len(CONFIG_NAMES)]
        verb = ("set", "delete", "append", "subtract")[self.operation % 4]
        return topic_shape(ctx, self.topic) + [
            f"{verb} {name}={CONFIG_VALUES[self.value % len(CONFIG_VALUES)]}"
        ]


@dataclass(frozen=True)
class DescribeCluster(Operation):
    api_key = 60

    def body(self, ctx, version):
        return DescribeClusterRequest(include_cluster_authorized_operations=False)


@dataclass(frozen=True)
class DescribeLogDirs(Operation):
    topic: int = 0
    api_key = 35

    def body(self, ctx, version):
        topic = DescribeLogDirsRequest.DescribableLogDirTopic(topic=ctx.topic(self.topic), partitions=[0])
        return DescribeLogDirsRequest(topics=[topic])

    def topics(self, ctx):
        return [ctx.topic(self.topic)]

    def _shape_parts(self, ctx):
        return topic_shape(ctx, self.topic)
