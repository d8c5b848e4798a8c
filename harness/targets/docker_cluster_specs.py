"""What a replicated docker target (``docker:VERSION:N``) is made of, decided without Docker: the
containers, their environment and volumes, the Toxiproxy proxies on every link, and which cluster links a
cut of each proxy reaches.

Layout, on a bridge network ``kconform-<run>`` of its own:

- ``kconform-<run>-controller-100``: the KRaft controller (``process.roles=controller``);
- ``kconform-<run>-kafka-<b>``, b = 1..N: brokers (``process.roles=broker``);
- ``kconform-<run>-toxiproxy``: ghcr.io/shopify/toxiproxy, its API published on 127.0.0.1;
- one named volume per Kafka node at the image's data volume ``/var/lib/kafka/data`` (``log.dirs``), so
  a node killed and started again recovers its own log, as after a crash;
- one more bridge network per broker f, its lane ``kconform-<run>-lane-<f>``: broker f and the Toxiproxy
  container are its only members, Toxiproxy with the network alias ``interbroker``.

Links: every connection between processes goes through a proxy named for the traffic it carries, so a
cut of a proxy is a cut of exactly the cluster link of the same name (``faults.cluster_links``).

- ``client-<b>``: clients to broker b. The proxy listens on :2200b in the Toxiproxy container, published
  on 127.0.0.1 at a free host port, and b advertises that address on its EXTERNAL listener.
- ``ctrl-<b>``: broker b to the controller (registration, heartbeats, the metadata log, forwarding).
  Broker b dials the controller through its own controller listener ``CTRL_<b>`` (:2100b on the
  controller), at the proxy ``toxiproxy:2100b`` named in b's ``controller.quorum.voters``. From 3.9
  (KIP-853) the controller also tells brokers its own address for the listener they came in on, in Fetch
  answers; the image refuses ``advertised.listeners`` on a controller, so the controller's hostname is the
  Toxiproxy container's name, and the address it tells broker b is again ``toxiproxy:2100b``.
- ``repl-<f>-<l>``: every inter-broker connection broker f dials to broker l (f fetching from l, and the
  WriteTxnMarkers and AddPartitionsToTxn f sends l). Kafka gives l one advertised address per listener,
  so l advertises ``interbroker:2000l`` on its inter-broker listener INTERNAL, and the name is what
  differs between dialers: docker's DNS answers an alias per network, and from broker f's container
  ``interbroker`` is Toxiproxy's IP on lane f. So ``repl-<f>-<l>`` listens on that IP at :2000l, and the
  N-1 proxies of port 2000l are told apart by the lane they listen on. Their listen addresses exist only
  once Toxiproxy has joined the lanes, so ``ProxySpec`` names the lane and the target fills in the IP.

``cover`` says which proxies carry a set of cluster links: the ones of the same names, never more."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kconform.faults.cluster_links import client_link, controller_link, replication_link

from .base import TargetError
from .docker_specs import (
    CONTROLLER_NODE_ID,
    CONTROLLER_PORT,
    DEFAULT_HEAP,
    EXTERNAL_PORT,
    INTERNAL_PORT,
    MINIMUM_VERSION,
    resolve_version,
)

__all__ = [
    "CHAOS_SETTINGS",
    "DATA_DIR",
    "INTERBROKER_ALIAS",
    "TOXIPROXY_API_PORT",
    "TOXIPROXY_IMAGE",
    "ClusterPlan",
    "ContainerSpec",
    "ProxySpec",
    "cluster_version",
    "cover",
    "plan_cluster",
    "property_env",
]

TOXIPROXY_IMAGE = "ghcr.io/shopify/toxiproxy:2.12.0"
TOXIPROXY_API_PORT = 8474
DATA_DIR = "/var/lib/kafka/data"  # a VOLUME of the apache/kafka image, owned by its user
INTERBROKER_ALIAS = "interbroker"  # Toxiproxy's alias on every lane, in the brokers' INTERNAL addresses
REPL_PROXY_BASE = 20000  # repl-f-l listens on 20000 + l, at Toxiproxy's IP on lane f
CTRL_PROXY_BASE = 21000  # ctrl-b, and the controller's listener CTRL_b, on 21000 + b
CLIENT_PROXY_BASE = 22000  # client-b on 22000 + b, published on 127.0.0.1
MAX_BROKERS = 999  # the proxy port ranges above hold this many

# Short sessions and lag, so a failover fits in a short run (Kafka's defaults: 9 s, 2 s, 30 s, 500 ms);
# broker.session.timeout.ms is the controller's, the rest the brokers'. Callers override any of them.
CHAOS_SETTINGS = {
    "broker.session.timeout.ms": "3000",
    "broker.heartbeat.interval.ms": "500",
    "replica.lag.time.max.ms": "3000",
    "replica.fetch.wait.max.ms": "100",
    "offsets.topic.num.partitions": "3",
    "transaction.state.log.num.partitions": "3",
    "group.initial.rebalance.delay.ms": "0",
}

_RELEASE = re.compile(r"\d+\.\d+(\.\d+)?")


def cluster_version(version: str | None, spec: str = "docker") -> str:
    """The apache/kafka tag of a replicated cluster: a Kafka release (``4.1.0``, ``3.9``) of 3.7 or
    newer; other tags (``latest``) are refused, since the layout depends on the release."""
    text = (version or "").strip()
    minimum = ".".join(map(str, MINIMUM_VERSION))
    if not _RELEASE.fullmatch(text):
        what = f"{text!r} is not a Kafka release" if text else "no Kafka release is named"
        raise TargetError(
            f"target {spec!r}: {what}; a replicated docker target names one, {minimum} or newer "
            "(e.g. docker:4.1.0:3, docker:3.9:3)"
        )
    try:
        return resolve_version(text)
    except TargetError as exc:
        raise TargetError(f"target {spec!r}: {str(exc).removeprefix('docker target: ')}") from None


def property_env(name: str) -> str:
    """The image's environment variable for a Kafka property (its README: ``_`` -> ``__``, ``-`` ->
    ``___``, ``.`` -> ``_``, upper case, ``KAFKA_`` in front)."""
    return "KAFKA_" + name.replace("_", "__").replace("-", "___").replace(".", "_").upper()


@dataclass(frozen=True, slots=True)
class ContainerSpec:
    """One container: its name (also its hostname unless ``hostname`` says otherwise), node id (None for
    Toxiproxy), role, environment, published ports (``"9092/tcp"`` -> (host, port)) and named volume."""

    name: str
    node_id: int | None
    role: str  # controller, broker, toxiproxy
    environment: dict[str, str]
    ports: dict[str, tuple[str, int]]
    volume: str | None
    hostname: str


@dataclass(frozen=True, slots=True)
class ProxySpec:
    """A proxy listening at ``port`` in the Toxiproxy container: on every address, or with ``lane`` on
    its IP on that network only (proxies of one port, one per lane)."""

    name: str
    port: int
    upstream: str
    lane: str | None = None

    def listen(self, lane_ips: Mapping[str, str]) -> str:
        """Its listen address, given Toxiproxy's IP on each lane (known once the container runs)."""
        host = lane_ips[self.lane] if self.lane else "0.0.0.0"
        return f"{host}:{self.port}"


@dataclass(frozen=True, slots=True)
class ClusterPlan:
    network: str
    lanes: dict[int, str]  # broker f -> its lane, the network on which it reaches Toxiproxy's repl-f-*
    toxiproxy: ContainerSpec
    nodes: list[ContainerSpec]  # start order: the controller, then brokers 1..N
    proxies: list[ProxySpec]
    client_addresses: dict[int, str]  # broker -> its client proxy on 127.0.0.1 (what it advertises)
    direct_addresses: dict[int, str]  # broker -> its own EXTERNAL listener on 127.0.0.1, behind no proxy
    toxiproxy_url: str

    @property
    def brokers(self) -> list[ContainerSpec]:
        return [n for n in self.nodes if n.role == "broker"]


def plan_cluster(
    run_id: str,
    brokers: int,
    host_ports: list[int],
    *,
    cluster_id: str,
    settings: dict[str, str] | None = None,
    heap: str = DEFAULT_HEAP,
    extra_env: dict[str, str] | None = None,
    external_protocol: str = "PLAINTEXT",
) -> ClusterPlan:
    """The whole cluster; ``host_ports`` are 2N+1 free ports on 127.0.0.1: the Toxiproxy API, each
    broker's client proxy, each broker's own listener. ``external_protocol`` is the clients' listener's
    security protocol (``client_listener``). Pure: no Docker involved."""
    if not 1 <= brokers <= MAX_BROKERS:
        raise TargetError(f"docker target: the broker count must be 1 to {MAX_BROKERS}, not {brokers}")
    if len(host_ports) != 2 * brokers + 1:
        raise TargetError(f"docker target: {brokers} brokers need {2 * brokers + 1} host ports")
    ids = range(1, brokers + 1)
    api_port, client_ports, direct_ports = (
        host_ports[0],
        host_ports[1 : brokers + 1],
        host_ports[brokers + 1 :],
    )
    name = f"kconform-{run_id}"
    proxy_host = f"{name}-toxiproxy"
    controller = f"{name}-controller-{CONTROLLER_NODE_ID}"
    replication = str(min(3, brokers))
    min_isr = str(min(2, brokers))  # RF 3 with min ISR 2: one replica may fail without refusing acks=all
    properties = {
        "default.replication.factor": replication,
        "min.insync.replicas": min_isr,
        "offsets.topic.replication.factor": replication,
        "transaction.state.log.replication.factor": replication,
        "transaction.state.log.min.isr": min_isr,
        "share.coordinator.state.topic.replication.factor": replication,  # KIP-932 (4.x)
        "share.coordinator.state.topic.min.isr": min_isr,
        **CHAOS_SETTINGS,
        **(settings or {}),
    }
    common = {
        "CLUSTER_ID": cluster_id,
        "KAFKA_LOG_DIRS": DATA_DIR,
        "KAFKA_HEAP_OPTS": heap,  # read by kafka-server-start.sh, not a server property
        **{property_env(k): v for k, v in properties.items()},
    }
    ctrl = {b: f"CTRL_{b}" for b in ids}
    nodes = [
        ContainerSpec(
            name=controller,
            node_id=CONTROLLER_NODE_ID,
            role="controller",
            environment={
                **common,
                "KAFKA_NODE_ID": str(CONTROLLER_NODE_ID),
                "KAFKA_PROCESS_ROLES": "controller",
                "KAFKA_CONTROLLER_QUORUM_VOTERS": f"{CONTROLLER_NODE_ID}@{controller}:{CONTROLLER_PORT}",
                "KAFKA_CONTROLLER_LISTENER_NAMES": ",".join(["CONTROLLER", *ctrl.values()]),
                "KAFKA_LISTENERS": ",".join(
                    [f"CONTROLLER://:{CONTROLLER_PORT}"]
                    + [f"{ctrl[b]}://:{CTRL_PROXY_BASE + b}" for b in ids]
                ),
                "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": ",".join(
                    f"{listener}:PLAINTEXT" for listener in ["CONTROLLER", *ctrl.values()]
                ),
                **(extra_env or {}),
            },
            ports={},
            volume=f"{controller}-data",
            hostname=proxy_host,  # the address it reports for itself (3.9+) leads through Toxiproxy
        )
    ]
    for b, direct in zip(ids, direct_ports, strict=True):
        broker = f"{name}-kafka-{b}"
        environment = {
            **common,
            "KAFKA_NODE_ID": str(b),
            "KAFKA_PROCESS_ROLES": "broker",
            "KAFKA_CONTROLLER_QUORUM_VOTERS": f"{CONTROLLER_NODE_ID}@{proxy_host}:{CTRL_PROXY_BASE + b}",
            "KAFKA_CONTROLLER_LISTENER_NAMES": ctrl[b],
            "KAFKA_LISTENERS": f"INTERNAL://:{INTERNAL_PORT},EXTERNAL://:{EXTERNAL_PORT}",
            "KAFKA_ADVERTISED_LISTENERS": (
                f"INTERNAL://{INTERBROKER_ALIAS}:{REPL_PROXY_BASE + b},"
                f"EXTERNAL://127.0.0.1:{client_ports[b - 1]}"
            ),
            "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": (
                f"{ctrl[b]}:PLAINTEXT,INTERNAL:PLAINTEXT,EXTERNAL:{external_protocol}"
            ),
            "KAFKA_INTER_BROKER_LISTENER_NAME": "INTERNAL",
            **(extra_env or {}),
        }
        nodes.append(
            ContainerSpec(
                name=broker,
                node_id=b,
                role="broker",
                environment=environment,
                ports={f"{EXTERNAL_PORT}/tcp": ("127.0.0.1", direct)},
                volume=f"{broker}-data",
                hostname=broker,
            )
        )
    lanes = {f: f"{name}-lane-{f}" for f in ids}
    proxies = []
    for b in ids:
        broker = f"{name}-kafka-{b}"
        proxies += [
            ProxySpec(client_link(b), CLIENT_PROXY_BASE + b, f"{broker}:{EXTERNAL_PORT}"),
            ProxySpec(controller_link(b), CTRL_PROXY_BASE + b, f"{controller}:{CTRL_PROXY_BASE + b}"),
        ]
    proxies += [
        ProxySpec(
            replication_link(f, leader),
            REPL_PROXY_BASE + leader,
            f"{name}-kafka-{leader}:{INTERNAL_PORT}",
            lanes[f],
        )
        for f in ids
        for leader in ids
        if f != leader
    ]
    toxiproxy_ports = {f"{TOXIPROXY_API_PORT}/tcp": ("127.0.0.1", api_port)}
    toxiproxy_ports |= {f"{CLIENT_PROXY_BASE + b}/tcp": ("127.0.0.1", client_ports[b - 1]) for b in ids}
    toxiproxy = ContainerSpec(proxy_host, None, "toxiproxy", {}, toxiproxy_ports, None, proxy_host)
    return ClusterPlan(
        network=name,
        lanes=lanes,
        toxiproxy=toxiproxy,
        nodes=nodes,
        proxies=proxies,
        client_addresses={b: f"127.0.0.1:{client_ports[b - 1]}" for b in ids},
        direct_addresses={b: f"127.0.0.1:{direct_ports[b - 1]}" for b in ids},
        toxiproxy_url=f"http://127.0.0.1:{api_port}",
    )


def cover(links: Iterable[str], brokers: Iterable[int]) -> tuple[list[str], list[str]]:
    """The docker proxies that carry the given cluster links (``client-<b>``, ``ctrl-<b>``,
    ``repl-<f>-<l>`` as ``faults.cluster_links`` names them), and the cluster links those proxies cut
    beyond the given ones. Every link has a proxy of its own name, so the second list is empty: the
    callers keep it as the guard it was when replication was cut per destination broker.

        cover(["repl-1-2", "client-3"], [1, 2, 3]) == (["client-3", "repl-1-2"], [])"""
    brokers = sorted(brokers)
    for link in links:
        _check_link(link, brokers)
    return sorted(set(links)), []


def _check_link(link: str, brokers: list[int]) -> None:
    kind, _, rest = link.partition("-")
    nodes = rest.split("-")
    if not all(n.isdigit() and int(n) in brokers for n in nodes) or len(set(nodes)) != len(nodes):
        raise TargetError(f"{link!r} names no link of brokers {brokers}")
    if (kind, len(nodes)) not in (("client", 1), ("ctrl", 1), ("repl", 2)):
        raise TargetError(f"{link!r} is not a cluster link (client-<b>, ctrl-<b>, repl-<f>-<l>)")
