"""The ``reference:N`` target: a replicated reference cluster (one controller, N brokers) as processes,
each on a data directory of its own, so faults can kill, freeze and restart any node for real."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from .base import FaultHooks, Target, TargetError
from .client_listener import checked_broker_properties, client_listener_settings

__all__ = ["ReferenceClusterTarget"]


class _ClusterFaults(FaultHooks):
    def __init__(self, target: ReferenceClusterTarget) -> None:
        self._target = target

    def broker_down(self, node_id: int) -> None:
        self._target.cluster.node(node_id).freeze()

    def broker_up(self, node_id: int) -> None:
        self._target.cluster.node(node_id).thaw()


class ReferenceClusterTarget(Target):
    kind = "reference"

    def __init__(
        self,
        name: str | None = None,
        *,
        brokers: int = 3,
        data_dir: str | Path | None = None,
        overrides: dict[str, str] | None = None,
        kafka_version: str | None = None,
    ) -> None:
        super().__init__(name)
        self.brokers = brokers
        self.kafka_version = kafka_version
        self.overrides = dict(overrides or {})
        self._given_dir = Path(data_dir) if data_dir is not None else None
        self._owned_dir: Path | None = None
        self.cluster = None
        self.client_protocol, self._broker_properties = "PLAINTEXT", {}

    def secure_brokers(self, protocol: str, properties: dict[str, str]) -> None:
        """Every broker serves clients on a ``protocol`` listener secured by ``properties``
        (``client_listener``); the controller and the brokers' own traffic stay PLAINTEXT."""
        self.client_protocol = checked_broker_properties(protocol, properties, self.name)
        self._broker_properties = dict(properties)

    def _secured_brokers(self) -> tuple[dict[int, int], dict[int, dict[str, str]]]:
        """(ports, node overrides) putting each broker's clients on its secured listener."""
        if self.client_protocol == "PLAINTEXT" and not self._broker_properties:
            return {}, {}
        from ..ports import free_port

        ports = {node_id: free_port("127.0.0.1") for node_id in range(1, self.brokers + 1)}
        overrides = {
            node_id: {
                **client_listener_settings(self.client_protocol, "127.0.0.1", port, None),
                **self._broker_properties,
            }
            for node_id, port in ports.items()
        }
        return ports, overrides

    def start(self) -> None:
        from kconform.reference_broker.cluster_processes import start_cluster

        directory = self._given_dir
        if directory is None:
            self._owned_dir = directory = Path(tempfile.mkdtemp(prefix="kconform-reference-cluster-"))
        ports, node_overrides = self._secured_brokers()
        try:
            self.cluster = start_cluster(
                directory,
                self.brokers,
                overrides=self.overrides,
                kafka_version=self.kafka_version,
                ports=ports,
                node_overrides=node_overrides,
            )
        except RuntimeError as exc:
            raise TargetError(f"the reference cluster did not start: {exc}") from exc

    def stop(self) -> None:
        if self.cluster is not None:
            for node in self.cluster.nodes():
                if node.alive():
                    node.thaw()  # a frozen process cannot handle SIGTERM
            if self._owned_dir is not None:
                for node in self.cluster.nodes():
                    node.kill()  # its data is deleted next
            else:
                self.cluster.stop()
            self.cluster = None
        if self._owned_dir is not None:
            shutil.rmtree(self._owned_dir, ignore_errors=True)
            self._owned_dir = None

    def alive(self) -> bool:
        return self.cluster is not None and all(node.alive() for node in self.cluster.nodes())

    def crash_report(self) -> str:
        if self.cluster is None:
            return ""
        return "\n".join(
            f"node {node.node_id}: {line}" for node in self.cluster.nodes() for line in node.output[-10:]
        )

    def restart(self) -> None:
        """Restart every node on its data and port (brokers recover their logs as after a crash)."""
        if self.cluster is None:
            self.start()
            return
        for node_id in [0, *sorted(self.cluster.brokers)]:
            self.cluster.restart(node_id)
        self._versions = None

    @property
    def bootstrap(self) -> str:
        if self.cluster is None:
            raise TargetError("the reference cluster target is not started")
        return self.cluster.bootstrap

    @property
    def faults(self) -> FaultHooks:
        return _ClusterFaults(self)
