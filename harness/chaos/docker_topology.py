"""``docker:VERSION:N`` under chaos: Apache Kafka in containers (``targets.docker_cluster``: a KRaft
controller, N brokers, a Toxiproxy container on every link) offered to the runner as the reference
cluster is (``cluster_topology``), so the replication catalogue runs on it unchanged.

Links keep their cluster names (``faults.cluster_links``: ``client-<b>``, ``ctrl-<b>``,
``repl-<f>-<l>``) from the schedule to the fault log, so the checks that read replication cuts from the
log read them here as on the reference cluster; ``DockerLinks`` hands each to the container's proxy of
the same name (one per directed link: ``docker_cluster_specs``), so every cut is exactly the one asked
for. ``unsupported`` and ``link_names`` stay as the guard should a layout ever cut wider: a step whose
cut reaches links it does not name is skipped before a run, or refused when it starts, so its run ends
"faults-not-applied", never "pass"."""

from __future__ import annotations

from typing import Any

from kconform.faults.cluster_links import ClusterLinks, LinkSelectorError
from kconform.faults.nemesis import ToxiproxyDriver
from kconform.faults.schedule import Schedule

from ..targets.base import TargetError
from ..targets.docker_cluster import DockerClusterTarget
from ..targets.docker_cluster_specs import CHAOS_SETTINGS, cover
from .cluster_topology import ClusterRoles, NodeProcesses, step_links

__all__ = ["DockerLinks", "ProxiedDockerCluster", "unsupported"]

_WHY = "the docker cluster's proxies carry more links than the step names"


def unsupported(schedule: Schedule, brokers: tuple[int, ...]) -> str | None:
    """Why a docker cluster of these brokers cannot run ``schedule`` as written (its first step whose
    cut reaches links the step does not name), or None: always None while every link has a proxy of
    its own, kept as the guard for a layout that cuts wider. Roles are stood in for (leader: the first
    broker, follower: the second, controller: node 0): every broker sits alike in the links' shape, so
    which one leads does not change how wide a cut is. A step that names no link of this cluster is
    left for the run to report."""
    shape = ClusterLinks(brokers)
    stand_in = {"leader": brokers[0], "follower": brokers[1], "controller": 0}

    def node_of(role: str) -> int:
        name = role.partition(":")[0].removeprefix("broker-")
        return stand_in[name] if name in stand_in else int(name)

    for step in schedule.steps:
        try:
            links = step_links(shape, step, node_of)
        except ValueError:  # LinkSelectorError too: the run logs it as a fault not applied
            continue
        _, wider = cover(links, brokers)
        if wider:
            return (
                f"{step.label()} cannot be cut alone (with the leader on broker {brokers[0]} it would "
                f"also cut {', '.join(wider)}): {_WHY}"
            )
    return None


class DockerLinks:
    """The nemesis's NetworkDriver on cluster links, through the docker cluster's proxies: each link is
    its own proxy, of the same name."""

    def __init__(self, toxiproxy: Any, brokers: tuple[int, ...]) -> None:
        self._proxies = ToxiproxyDriver(toxiproxy)
        self._brokers = brokers

    def links(self) -> list[str]:
        return ClusterLinks(self._brokers).all()

    def proxy_of(self, link: str) -> str:
        """The link's proxy; a name that is no link of this cluster is a ``TargetError``."""
        [proxy], _ = cover([link], self._brokers)
        return proxy

    def add_toxic(self, link: str, name: str, type: str, stream: str, attributes: dict) -> None:
        self._proxies.add_toxic(self.proxy_of(link), name, type, stream, attributes)

    def remove_toxic(self, link: str, name: str) -> None:
        self._proxies.remove_toxic(self.proxy_of(link), name)

    def set_enabled(self, link: str, enabled: bool) -> None:
        self._proxies.set_enabled(self.proxy_of(link), enabled)


class ProxiedDockerCluster(ClusterRoles):
    """``with ProxiedDockerCluster("4.1.1", brokers=3, overrides=scenario.broker) as cluster: ...``

    ``overrides`` are broker settings over ``CHAOS_SETTINGS``; ``target_options`` go to
    ``DockerClusterTarget`` (a Docker client, a Toxiproxy client factory, ports, readiness ...)."""

    def __init__(
        self,
        version: str,
        *,
        brokers: int = 3,
        overrides: dict[str, str] | None = None,
        **target_options: Any,
    ) -> None:
        if brokers < 2:
            raise ValueError("a replicated cluster needs at least 2 brokers")
        self.target = DockerClusterTarget(
            f"docker:{version}:{brokers}",
            version=version,
            brokers=brokers,
            settings=overrides,
            **target_options,
        )
        self.kind = f"docker:{self.target.version}:{brokers}"
        self.brokers = brokers
        self.broker_ids = self.target.broker_ids
        self.shape = ClusterLinks(self.broker_ids)
        self.overrides = {
            **CHAOS_SETTINGS,
            **(overrides or {}),
        }  # as the brokers run: the runner reads the lag
        self.topic: str | None = None  # the partition roles resolve against: the workload's topic
        self._network: DockerLinks | None = None

    # ---- lifecycle ------------------------------------------------------------------------------

    def start(self) -> ProxiedDockerCluster:
        self.target.start()  # a start that fails removes what it made
        self._network = DockerLinks(self.target.toxiproxy, self.broker_ids)
        return self

    def stop(self) -> None:
        self._network = None
        self.target.stop()

    # ---- what a run uses ------------------------------------------------------------------------

    @property
    def bootstrap(self) -> str:
        return self.target.bootstrap

    @property
    def client_settings(self) -> dict[str, str]:
        return {}

    @property
    def network(self) -> DockerLinks:
        if self._network is None:
            raise TargetError(f"{self.kind} is not started")
        return self._network

    @property
    def processes(self) -> NodeProcesses:
        """Kill is ``docker kill``, stop ``docker stop``, freeze and thaw ``docker pause``/``unpause``;
        restart starts the same container on its volume."""
        target = self.target
        return NodeProcesses(
            self.broker_ids,
            target.node_id,
            kill=target.kill,
            stop=target.stop_node,
            restart=target.restart_node,
            freeze=target.freeze,
            thaw=target.thaw,
        )

    @property
    def mock(self):
        return None

    @property
    def cluster_driver(self) -> ProxiedDockerCluster:
        return self

    def broker_output(self) -> list[str]:
        """The Kafka containers' logs."""
        return self.target.broker_output()

    # ---- the nemesis's ClusterDriver (ClusterRoles) ---------------------------------------------

    def broker_address(self, broker: int) -> tuple[str, int]:
        host, _, port = self.target.direct_addresses[broker].rpartition(":")
        return host, int(port)

    def link_names(self, links: list[str]) -> list[str]:
        """The links as named: ``DockerLinks`` takes cluster links. A cut that would reach more is
        refused rather than logged as what it was not."""
        _, wider = cover(links, self.broker_ids)
        if wider:
            raise LinkSelectorError(
                f"{self.kind} cannot cut {', '.join(links)} alone ({', '.join(wider)} too): {_WHY}"
            )
        return list(links)
