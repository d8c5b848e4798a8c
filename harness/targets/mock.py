"""The ``rdkafka-mock`` target: librdkafka's mock cluster (see rdkafka_mock.py), with its own fault
hooks."""

from __future__ import annotations

from .base import FaultHooks, Target, TargetError

__all__ = ["RdkafkaMockTarget"]


class _MockFaults(FaultHooks):
    def __init__(self, target: RdkafkaMockTarget) -> None:
        self._target = target

    @property
    def _cluster(self):
        return self._target.cluster

    def broker_down(self, node_id: int) -> None:
        self._cluster.set_broker_down(node_id)

    def broker_up(self, node_id: int) -> None:
        self._cluster.set_broker_up(node_id)

    def set_rtt(self, node_id: int, rtt_ms: int) -> None:
        self._cluster.set_rtt(node_id, rtt_ms)

    def push_request_errors(self, api_key: int, errors: list[int]) -> None:
        self._cluster.push_request_errors(api_key, errors)

    def move_leader(self, topic: str, partition: int, node_id: int) -> None:
        self._cluster.set_partition_leader(topic, partition, node_id)


class RdkafkaMockTarget(Target):
    kind = "rdkafka-mock"

    def __init__(self, name: str | None = None, *, brokers: int = 1) -> None:
        super().__init__(name)
        self.brokers = brokers
        self.cluster = None

    def start(self) -> None:
        from .rdkafka_mock import RdkafkaMockCluster

        try:
            self.cluster = RdkafkaMockCluster(self.brokers)
        except (RuntimeError, OSError) as exc:
            raise TargetError(f"librdkafka's mock cluster did not start: {exc}") from exc

    def stop(self) -> None:
        if self.cluster is not None:
            self.cluster.close()
            self.cluster = None

    @property
    def bootstrap(self) -> str:
        if self.cluster is None:
            raise TargetError("the rdkafka-mock target is not started")
        return self.cluster.bootstrap

    @property
    def faults(self) -> FaultHooks:
        return _MockFaults(self)

    def create_topic(self, name, partitions=1, replication_factor=1, configs=None) -> None:
        if configs:
            super().create_topic(name, partitions, replication_factor, configs)
        else:
            self.cluster.create_topic(name, partitions, min(replication_factor, self.brokers))

    def describe(self) -> dict:
        return {**super().describe(), "brokers": self.brokers}
