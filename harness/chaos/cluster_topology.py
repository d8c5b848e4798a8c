"""A replicated reference cluster (``reference:N``) with a Toxiproxy proxy on every link
(``faults.cluster_links``): each broker advertises its client proxy, dials every other broker through
a proxy of that directed link (``kconform.interbroker.addresses``) and the controller through its own
(``controller.quorum.bootstrap.servers``), so a fault can cut exactly one kind of traffic of one node.

It is also the nemesis's ``ClusterDriver``: a step naming a role (``leader``, ``follower``,
``controller``) is resolved against the partition state when the step starts, read with Metadata from
the brokers' own addresses (behind no proxy, so a cut link never hides the state), trusting the
highest leader epoch any broker reports. ``ClusterRoles`` is that driver for any cluster of this shape
(``docker_topology`` drives Apache Kafka in containers with it); ``NodeProcesses`` the process-fault
adapter both share."""

from __future__ import annotations

import abc
import asyncio
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kconform.codecs.messages import (
    AlterPartitionReassignmentsRequest,
    CreateTopicsRequest,
    ElectLeadersRequest,
    MetadataRequest,
)
from kconform.faults.cluster_links import ClusterLinks, LinkSelectorError
from kconform.faults.nemesis import ToxiproxyDriver
from kconform.faults.schedule import Step

from ..client.raw import RawClient
from ..ports import free_port
from .cluster_observer import freshest
from .topology import destroy_proxies, fresh_proxy

__all__ = [
    "CHAOS_CLUSTER_SETTINGS",
    "ClusterRoles",
    "NodeProcesses",
    "PartitionState",
    "ProxiedReferenceCluster",
    "step_links",
]

# Short sessions and lag, so a failover fits in a short run (Kafka's defaults: 9 s, 30 s, 500 ms).
CHAOS_CLUSTER_SETTINGS = {
    "broker.session.timeout.ms": "2000",
    "broker.heartbeat.interval.ms": "300",
    "replica.lag.time.max.ms": "2000",
    "replica.fetch.wait.max.ms": "100",
    "unclean.leader.election.interval.ms": "500",
    "offsets.topic.num.partitions": "3",
    "transaction.state.log.num.partitions": "3",
}

METADATA, CREATE_TOPICS, ELECT_LEADERS, REASSIGN = 3, 19, 43, 45
PREFERRED = 0
_ASK_TIMEOUT_S = 2.0


class PartitionState(tuple):
    """(leader, leader epoch, replicas, isr) of one partition, as the brokers report it."""

    __slots__ = ()

    def __new__(cls, leader: int, epoch: int, replicas: tuple[int, ...], isr: tuple[int, ...]):
        return super().__new__(cls, (leader, epoch, tuple(replicas), tuple(isr)))

    leader = property(lambda self: self[0])
    epoch = property(lambda self: self[1])
    replicas = property(lambda self: self[2])
    isr = property(lambda self: self[3])


class NodeProcesses:
    """The nemesis's ProcessDriver over a cluster's nodes: ``node_id`` reads a node as the chaos layer
    names it (an id; "0" is the controller), and each fault is one call on that id."""

    def __init__(
        self,
        brokers: tuple[int, ...],
        node_id: Callable[[str], int],
        *,
        kill: Callable[[int], Any],
        stop: Callable[[int], Any],
        restart: Callable[[int], Any],
        freeze: Callable[[int], Any],
        thaw: Callable[[int], Any],
    ) -> None:
        self._brokers = brokers
        self._node_id = node_id
        self._kill, self._stop, self._restart = kill, stop, restart
        self._freeze, self._thaw = freeze, thaw

    def nodes(self) -> list[str]:
        return [str(b) for b in self._brokers]

    def kill(self, node: str) -> None:
        self._kill(self._node_id(node))

    def stop(self, node: str) -> None:
        self._stop(self._node_id(node))

    def restart(self, node: str) -> None:
        self._restart(self._node_id(node))

    def freeze(self, node: str) -> None:
        self._freeze(self._node_id(node))

    def thaw(self, node: str) -> None:
        self._thaw(self._node_id(node))


def step_links(shape: ClusterLinks, step: Step, node_of: Callable[[str], int]) -> list[str]:
    """The cluster links a link or toxic step cuts, its roles read with ``node_of``. A split's minority
    is the leader of partition 0 and the lowest other ids: the leader must lose its majority."""
    if step.fault == "isolate":
        return shape.isolate(node_of(str(step.params["node"])), str(step.params["from"]))
    if step.fault == "split":
        leader = node_of("leader")
        side = [leader, *[b for b in shape.brokers if b != leader]][: int(step.params["minority"])]
        return shape.split(side)
    if step.kind in ("toxic", "link"):
        return sorted({link for s in step.links for link in shape.expand(s, node_of)})
    return []


class ClusterRoles(abc.ABC):
    """The nemesis's ClusterDriver for a replicated cluster with a proxy on every link: roles resolved
    against the partition state the brokers report on their own listeners, admin steps, and the
    workload's topic. A cluster sets ``broker_ids``, ``shape`` and ``topic`` (None until
    ``create_topic``), and says where each broker listens behind no proxy and what its network driver
    calls each cluster link."""

    broker_ids: tuple[int, ...]
    shape: ClusterLinks
    topic: str | None

    @abc.abstractmethod
    def broker_address(self, broker: int) -> tuple[str, int]:
        """The broker's own client listener (host, port), behind no proxy."""

    @abc.abstractmethod
    def link_names(self, links: list[str]) -> list[str]:
        """The network driver's names for these cluster links (``faults.cluster_links`` names)."""

    @abc.abstractmethod
    def start(self) -> ClusterRoles:
        """Bring the cluster and its proxies up; a start that fails removes what it made."""

    @abc.abstractmethod
    def stop(self) -> None:
        """Take the cluster and its proxies down."""

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()

    def create_topic(
        self,
        name: str,
        partitions: int,
        replication_factor: int | None = None,
        configs: dict[str, str] | None = None,
    ) -> None:
        factor = min(replication_factor or 3, len(self.broker_ids))
        T = CreateTopicsRequest.CreatableTopic
        topic = T(
            name=name,
            num_partitions=partitions,
            replication_factor=factor,
            configs=[
                CreateTopicsRequest.CreatableTopicConfig(name=k, value=v) for k, v in (configs or {}).items()
            ],
        )
        response = self._ask(CREATE_TOPICS, 5, CreateTopicsRequest(topics=[topic], timeout_ms=30000))
        code = response.topics[0].error_code
        if code not in (0, 36):  # TOPIC_ALREADY_EXISTS: a rerun
            raise RuntimeError(f"creating {name}: error {code} {response.topics[0].error_message or ''}")
        self.topic = name

    def resolve(self, step: Step) -> list[str]:
        if step.kind == "process":
            if step.links == ("*",):
                return [str(b) for b in self.broker_ids]
            return [str(self.node_of(s)) for s in step.links]
        if step.kind in ("toxic", "link"):
            return self.link_names(step_links(self.shape, step, self.node_of))
        return []

    def node_of(self, role: str) -> int:
        """``leader[:P]``, ``follower[:P]`` (an in-sync follower), ``controller``, ``broker-N`` or N."""
        name, _, partition = role.partition(":")
        if name == "controller":
            return 0
        if name.startswith("broker-"):
            name = name[7:]
        if name.isdigit():
            return int(name)
        if name not in ("leader", "follower"):
            raise LinkSelectorError(f"{role!r}: not a node (leader, follower, controller or an id)")
        state = self.partition_state(int(partition or 0))
        if name == "leader":
            if state.leader < 0:
                raise LinkSelectorError(f"{self.topic}-{partition or 0} has no leader now")
            return state.leader
        followers = [b for b in state.isr if b != state.leader] or [
            b for b in state.replicas if b != state.leader
        ]
        if not followers:
            raise LinkSelectorError(f"{self.topic}-{partition or 0} has no follower")
        return min(followers)

    def admin(self, step: Step) -> None:
        if step.fault == "elect":
            request = ElectLeadersRequest(election_type=PREFERRED, topic_partitions=None, timeout_ms=30000)
            self._ask(ELECT_LEADERS, 2, request)
            return
        partition = int(step.params["partition"])
        replicas = list(self.partition_state(partition).replicas)
        rotated = replicas[1:] + replicas[:1]  # the next broker becomes the preferred leader
        R = AlterPartitionReassignmentsRequest
        request = R(
            timeout_ms=30000,
            topics=[
                R.ReassignableTopic(name=self.topic, partitions=[R.ReassignablePartition(partition, rotated)])
            ],
        )
        self._ask(REASSIGN, 0, request)
        election = ElectLeadersRequest(
            election_type=PREFERRED,
            topic_partitions=[ElectLeadersRequest.TopicPartitions(topic=self.topic, partitions=[partition])],
            timeout_ms=30000,
        )
        self._ask(ELECT_LEADERS, 2, election)

    def partition_state(self, partition: int) -> PartitionState:
        state = self.topic_state().get(partition)
        if state is None:
            raise LinkSelectorError(f"no broker answered for {self.topic}-{partition}")
        return state

    def topic_state(self) -> dict[int, PartitionState]:
        """Each partition's freshest state any broker reports (the highest leader epoch)."""
        return freshest(self.topic_views())

    def topic_views(self) -> dict[int, dict[int, PartitionState]]:
        """Broker -> each partition's state as that broker's Metadata answers it (a broker that does not
        answer is left out). The brokers are asked at once, so a frozen one costs one timeout, not one
        per partition."""
        if self.topic is None:
            raise LinkSelectorError("no topic yet: roles name partitions of the workload's topic")
        request = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=self.topic)])

        async def one(broker: int):
            try:
                return await self._call(broker, METADATA, 12, request)
            except Exception:  # noqa: BLE001 - a dead or frozen broker has no say
                return None

        async def every():
            return await asyncio.gather(*(one(b) for b in self.broker_ids))

        views: dict[int, dict[int, PartitionState]] = {}
        for broker, response in zip(self.broker_ids, asyncio.run(every()), strict=True):
            if response is None:
                continue
            view = views[broker] = {}
            for topic in response.topics:
                for p in topic.partitions:
                    # 9: REPLICA_NOT_AVAILABLE still names the leader; 5: LEADER_NOT_AVAILABLE, leaderless
                    if p.error_code not in (0, 5, 9):
                        continue
                    state = PartitionState(p.leader_id, p.leader_epoch, p.replica_nodes, p.isr_nodes)
                    view[p.partition_index] = state
        return views

    def _ask(self, api_key: int, version: int, body) -> Any:
        last: Exception | None = None
        for broker in self.broker_ids:
            try:
                return self._ask_one(broker, api_key, version, body)
            except Exception as exc:  # noqa: BLE001 - try the next broker
                last = exc
        raise RuntimeError(f"no broker answered API {api_key}: {last}")

    def _ask_one(self, broker: int, api_key: int, version: int, body) -> Any:
        return asyncio.run(self._call(broker, api_key, version, body))

    async def _call(self, broker: int, api_key: int, version: int, body) -> Any:
        timeout = _ASK_TIMEOUT_S if api_key == METADATA else 35.0
        host, port = self.broker_address(broker)
        async with await RawClient.connect(host, port, timeout=_ASK_TIMEOUT_S) as client:
            return await client.call(api_key, version, body, timeout=timeout)


class ProxiedReferenceCluster(ClusterRoles):
    def __init__(
        self,
        toxiproxy: Any,
        *,
        brokers: int = 3,
        planted: tuple[str, ...] = (),
        overrides: dict[str, str] | None = None,
        prefix: str = "kconform",
        host: str = "127.0.0.1",
        kafka_version: str | None = None,
        data_dir: str | Path | None = None,
        client_properties: dict[str, str] | None = None,
        broker_properties: dict[str, str] | None = None,
    ) -> None:
        """``client_properties``/``broker_properties`` secure the brokers' one listener (clients and
        replication both use it, so the broker properties give the brokers' own login too:
        ``sasl.mechanism.inter.broker.protocol`` and the JAAS entry's username and password)."""
        if brokers < 2:
            raise ValueError("a replicated cluster needs at least 2 brokers")
        self.client_properties = dict(client_properties or {})
        self.broker_properties = dict(broker_properties or {})
        self.security = None
        if self.client_properties:
            from ..client.config import AdminConfig
            from ..client.security import security_from_config

            self.security = security_from_config(AdminConfig(self.client_properties))
        self.toxiproxy = toxiproxy
        self.brokers = brokers
        self.kind = f"reference:{brokers}"
        self.broker_ids = tuple(range(1, brokers + 1))
        self.shape = ClusterLinks(self.broker_ids)
        self.planted = planted
        self.overrides = {**CHAOS_CLUSTER_SETTINGS, **(overrides or {})}
        self.prefix = prefix
        self.host = host
        self.kafka_version = kafka_version
        self._given_dir = Path(data_dir) if data_dir is not None else None
        self._owned_dir: Path | None = None
        self.ports: dict[int, int] = {}
        self.proxies: dict[str, Any] = {}  # link name (unprefixed) -> toxiproxy-python Proxy
        self.cluster = None
        self.topic: str | None = None  # the partition roles resolve against: the workload's topic

    # ---- lifecycle ------------------------------------------------------------------------------

    def start(self, attempts: int = 3) -> ProxiedReferenceCluster:
        """Start the cluster behind its proxies. A port chosen free can be taken (by a proxy's own
        listener, or another process) before the node binds it: then start again on fresh ports."""
        for _ in range(attempts - 1):
            try:
                return self._start()
            except RuntimeError as exc:
                if "address already in use" not in str(exc):
                    raise
        return self._start()  # the last attempt: its error is the caller's

    def _start(self) -> ProxiedReferenceCluster:
        from kconform.reference_broker.cluster_processes import CONTROLLER_ID, start_cluster

        try:
            self.ports = {node: free_port(self.host) for node in (CONTROLLER_ID, *self.broker_ids)}
            for link in self.shape.all():
                self._proxy(link, self._upstream(link))
            directory = self._given_dir
            if directory is None:
                self._owned_dir = directory = Path(tempfile.mkdtemp(prefix="kconform-chaos-cluster-"))
            self.cluster = start_cluster(
                directory,
                self.brokers,
                overrides=self.overrides,
                kafka_version=self.kafka_version,
                host=self.host,
                ports=self.ports,
                node_overrides={
                    b: {**self._dialing(b), **self._secured_listener(b)} for b in self.broker_ids
                },
                advertise={b: self.address(f"client-{b}") for b in self.broker_ids},
                planted=self.planted,
            )
        except BaseException:
            self.stop()
            raise
        if self.security is not None:  # every harness client dialling a broker or its proxy logs in
            from ..client.security import register_addresses

            register_addresses(self._client_addresses(), self.security)
        return self

    def _client_addresses(self) -> list[tuple[str, int]]:
        proxied = [self.address(f"client-{b}").rsplit(":", 1) for b in self.broker_ids]
        return [(h, int(p)) for h, p in proxied] + [self.broker_address(b) for b in self.broker_ids]

    def _secured_listener(self, broker: int) -> dict[str, str]:
        """The broker's one listener, named EXTERNAL, on the clients' protocol; nothing when plain."""
        protocol = self.client_properties.get("security.protocol", "PLAINTEXT").upper()
        if protocol == "PLAINTEXT" and not self.broker_properties:
            return {}
        return {
            "listeners": f"EXTERNAL://{self.host}:{self.ports[broker]}",
            "listener.security.protocol.map": f"EXTERNAL:{protocol},CONTROLLER:PLAINTEXT",
            "inter.broker.listener.name": "EXTERNAL",
            **self.broker_properties,
        }

    def _upstream(self, link: str) -> str:
        kind, *nodes = link.split("-")
        target = 0 if kind == "ctrl" else int(nodes[-1])
        return f"{self.host}:{self.ports[target]}"

    def _dialing(self, broker: int) -> dict[str, str]:
        peers = ",".join(f"{o}={self.address(f'repl-{broker}-{o}')}" for o in self.broker_ids if o != broker)
        return {
            "kconform.interbroker.addresses": peers,
            "controller.quorum.bootstrap.servers": self.address(f"ctrl-{broker}"),
        }

    def _proxy(self, link: str, upstream: str) -> None:
        self.proxies[link] = fresh_proxy(self.toxiproxy, f"{self.prefix}-{link}", upstream, self.host)

    def address(self, link: str) -> str:
        host, _, port = self.proxies[link].listen.rpartition(":")
        return f"{host or self.host}:{port}"

    def stop(self) -> None:
        if self.security is not None and self.cluster is not None:  # registered once it started
            from ..client.security import unregister_addresses

            unregister_addresses(self._client_addresses())
        if self.cluster is not None:
            for node in self.cluster.nodes():
                if node.alive():
                    node.thaw()  # a frozen process cannot handle SIGTERM
            for proxy in self.proxies.values():  # links back, so controlled shutdowns can finish
                try:
                    proxy.enable()
                except Exception:  # noqa: BLE001 - the server may be gone already
                    pass
            self.cluster.stop()
            self.cluster = None
        destroy_proxies(self.proxies)
        if self._owned_dir is not None:
            shutil.rmtree(self._owned_dir, ignore_errors=True)
            self._owned_dir = None

    # ---- what a run uses ------------------------------------------------------------------------

    @property
    def bootstrap(self) -> str:
        return ",".join(self.address(f"client-{b}") for b in self.broker_ids)

    @property
    def client_settings(self) -> dict[str, str]:
        return dict(self.client_properties)

    @property
    def network(self) -> ToxiproxyDriver:
        return ToxiproxyDriver(self.toxiproxy, [f"{self.prefix}-{link}" for link in sorted(self.proxies)])

    @property
    def processes(self) -> NodeProcesses:
        """Node ids as given ("0" is the controller); ``cluster`` is read at each call, so a fault
        on a stopped cluster fails as it did before."""
        return NodeProcesses(
            self.broker_ids,
            int,
            kill=lambda n: self.cluster.kill(n),
            stop=lambda n: self.cluster.stop_node(n),
            restart=lambda n: self.cluster.restart(n),
            freeze=lambda n: self.cluster.node(n).freeze(),
            thaw=lambda n: self.cluster.node(n).thaw(),
        )

    @property
    def mock(self):
        return None

    @property
    def cluster_driver(self) -> ProxiedReferenceCluster:
        return self

    def broker_output(self) -> list[str]:
        """Every line the nodes have logged so far (restarted nodes: since their restart)."""
        return [] if self.cluster is None else [line for node in self.cluster.nodes() for line in node.output]

    def link_name(self, node_id: int) -> str:
        return f"{self.prefix}-client-{node_id}"

    # ---- the nemesis's ClusterDriver (ClusterRoles) ---------------------------------------------

    def broker_address(self, broker: int) -> tuple[str, int]:
        return self.host, self.ports[broker]

    def link_names(self, links: list[str]) -> list[str]:
        return [f"{self.prefix}-{link}" for link in links]
