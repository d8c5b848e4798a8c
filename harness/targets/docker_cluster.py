"""The replicated ``docker:VERSION:N`` target: Apache Kafka's ``apache/kafka`` image in KRaft mode, one
controller and N brokers, with a Toxiproxy container on every link, so the chaos harness can cut any
broker's client, replication or controller traffic and kill, freeze and restart its process.

    with DockerClusterTarget("docker:4.1.0:3", version="4.1.0", brokers=3) as target:
        target.bootstrap            # "127.0.0.1:40123,..." (the client proxies)
        target.toxiproxy_url        # "http://127.0.0.1:40122"
        target.links()              # ["client-1", ..., "ctrl-1", ..., "repl-1-2", "repl-1-3", ...]
        target.kill(2); target.restart_node(2)

What the containers, networks and proxies are (a proxy per cluster link, replication ones told apart by
the per-broker lane network they listen on) is decided in ``docker_cluster_specs``. The chaos layer
(``chaos.docker_topology``) drives it by node ids (brokers 1..N; the controller is 100, and "0" or
"controller" name it as in ``faults.cluster_links``): ``kill``, ``stop_node``, ``restart_node``,
``freeze``, ``thaw``, and through its proxies (``network``, a ``ToxiproxyDriver``; ``links_for``),
``bootstrap``, ``direct_addresses``, ``broker_output``. Process faults go through the Docker API: kill
is ``docker kill`` (SIGKILL), restart starts the same container again on its volume, freeze and thaw are
``docker pause``/``unpause`` (the cgroup freezer: SIGSTOP without the signal), stop is ``docker stop``
(SIGTERM: a controlled shutdown).

The target starts its own Toxiproxy, and toxiproxy-python keeps one server address per process: while it
runs, the process's Toxiproxy client talks to this one."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from docker import errors as docker_errors

from kconform.faults.nemesis import ToxiproxyDriver

from .base import FaultHooks, TargetError
from .docker_cluster_specs import (
    DATA_DIR,
    INTERBROKER_ALIAS,
    MAX_BROKERS,
    TOXIPROXY_IMAGE,
    ClusterPlan,
    ContainerSpec,
    ProxySpec,
    cluster_version,
    cover,
    plan_cluster,
)
from .docker_specs import CONTROLLER_NODE_ID, new_cluster_id
from .docker_target import DockerTarget

__all__ = ["DockerClusterTarget", "connect_toxiproxy"]

STOP_TIMEOUT_S = 30  # docker stop: SIGTERM, then SIGKILL after this long (a controlled shutdown's time)


def connect_toxiproxy(url: str) -> Any | None:
    """toxiproxy-python's client for the server at ``url``, or None while it does not answer yet."""
    from kconform.faults.toxiproxy import open_toxiproxy

    try:
        with open_toxiproxy(url) as handle:  # a given URL: leaving the block stops nothing
            return handle.client
    except RuntimeError:
        return None


class _Faults(FaultHooks):
    """broker_down freezes the broker's container, broker_up thaws it (as the single docker target)."""

    def __init__(self, target: DockerClusterTarget) -> None:
        self._target = target

    def broker_down(self, node_id: int) -> None:
        self._target.freeze(node_id)

    def broker_up(self, node_id: int) -> None:
        self._target.thaw(node_id)


class DockerClusterTarget(DockerTarget):
    """``settings`` are Kafka properties for every node, over ``CHAOS_SETTINGS`` (short sessions and lag);
    ``toxiproxy`` turns the Toxiproxy URL into a client, None until it answers."""

    def __init__(
        self,
        name: str | None = None,
        *,
        version: str | None = None,
        brokers: int = 3,
        settings: dict[str, str] | None = None,
        toxiproxy: Callable[[str], Any | None] = connect_toxiproxy,
        toxiproxy_image: str = TOXIPROXY_IMAGE,
        **options: Any,
    ) -> None:
        if not 1 <= brokers <= MAX_BROKERS:
            raise TargetError(f"docker target: the broker count must be 1 to {MAX_BROKERS}, not {brokers}")
        super().__init__(name, version=cluster_version(version, name or "docker"), brokers=brokers, **options)
        self.settings = dict(settings or {})
        self.toxiproxy_image = toxiproxy_image
        self.broker_ids = tuple(range(1, brokers + 1))
        self.controller_id = CONTROLLER_NODE_ID
        self.plan: ClusterPlan | None = None
        self.toxiproxy: Any = None  # the toxiproxy-python client, once the server answers
        self.proxies: dict[str, Any] = {}  # link name -> proxy
        self._lanes: dict[int, Any] = {}  # broker -> its lane network
        self._connect_toxiproxy = toxiproxy
        self._down: set[int] = set()  # nodes a fault took down on purpose

    @property
    def node_ids(self) -> tuple[int, ...]:
        return (self.controller_id, *self.broker_ids)

    # ---- lifecycle ------------------------------------------------------------------------------

    def _prepare(self) -> None:
        self._ensure_image()
        self._ensure_image(self.toxiproxy_image)
        self.plan = plan_cluster(
            self.run_id,
            self.brokers,
            self._ports(2 * self.brokers + 1),
            cluster_id=new_cluster_id(),
            settings=self.settings,
            heap=self.heap,
            extra_env={**self._security_env, **self.extra_env},
            external_protocol=self.client_protocol,
        )

    def _launch(self) -> None:
        """Networks, volumes, Toxiproxy on every lane and its proxies (brokers dial the controller through
        them from their first moment), the controller, the brokers each on its lane; then wait until every
        broker answers through its client proxy and Metadata lists them all."""
        plan = self.plan
        self._network = self._client.networks.create(plan.network, driver="bridge", labels=self.labels)
        for broker, lane in plan.lanes.items():
            self._lanes[broker] = self._client.networks.create(lane, driver="bridge", labels=self.labels)
        for spec in plan.nodes:
            self._volumes.append(
                self._client.volumes.create(name=spec.volume, driver="local", labels=self.labels)
            )
        toxiproxy = self._start_spec(plan.toxiproxy, self.toxiproxy_image, list(self._lanes.values()))
        self.toxiproxy = self._await_toxiproxy(plan.toxiproxy_url)
        lane_ips = self._addresses_on(toxiproxy, plan.lanes.values())
        for proxy in plan.proxies:
            self.proxies[proxy.name] = self._create_proxy(proxy, proxy.listen(lane_ips))
        for spec in plan.nodes:
            lanes = [self._lanes[spec.node_id]] if spec.node_id in self._lanes else []
            self._start_spec(spec, self.image, lanes)
        self._wait_until_ready(plan.client_addresses, self.startup_timeout)

    def _start_spec(self, spec: ContainerSpec, image: str, lanes: list[Any]) -> Any:
        """Create the container, join it to its lanes, then start it: a broker's first lookup of
        ``interbroker`` already finds Toxiproxy. Registered on creation, so a failed start removes it."""
        key = spec.node_id if spec.node_id is not None else spec.role
        container = self._containers[key] = self._client.containers.create(image, **self._options(spec))
        for lane in lanes:
            aliases = [INTERBROKER_ALIAS] if spec.role == "toxiproxy" else None
            lane.connect(container, aliases=aliases)
        container.start()
        return container

    def _options(self, spec: ContainerSpec) -> dict[str, Any]:
        labels = {**self.labels, "kconform.roles": spec.role}
        if spec.node_id is not None:
            labels["kconform.node-id"] = str(spec.node_id)
        options: dict[str, Any] = {
            "name": spec.name,
            "hostname": spec.hostname,
            "environment": spec.environment,
            "labels": labels,
            "network": self._network.name,
            "detach": True,
        }
        if spec.ports:
            options["ports"] = dict(spec.ports)
        if spec.volume:
            options["volumes"] = {spec.volume: {"bind": DATA_DIR, "mode": "rw"}}
        if self._mounts:  # key and trust stores the broker config names (DockerTarget.secure_brokers)
            options.setdefault("volumes", {}).update(
                {host: {"bind": inside, "mode": "ro"} for host, inside in self._mounts.items()}
            )
        return options

    @staticmethod
    def _addresses_on(container: Any, networks: Iterable[str]) -> dict[str, str]:
        """The container's IP on each of ``networks`` (names), as the engine reports it."""
        container.reload()
        attached = container.attrs["NetworkSettings"]["Networks"]
        missing = [n for n in networks if not (attached.get(n) or {}).get("IPAddress")]
        if missing:
            raise TargetError(f"container {container.name} has no IP address on {', '.join(missing)}")
        return {n: attached[n]["IPAddress"] for n in networks}

    def _create_proxy(self, proxy: ProxySpec, listen: str) -> Any:
        try:
            return self.toxiproxy.create(upstream=proxy.upstream, name=proxy.name, listen=listen)
        except Exception as exc:  # noqa: BLE001 - toxiproxy-python raises requests' errors and its own
            raise TargetError(
                f"Toxiproxy at {self.plan.toxiproxy_url} refused the proxy {proxy.name} "
                f"({listen} -> {proxy.upstream}): {exc}"
            ) from exc

    def _await_toxiproxy(self, url: str) -> Any:
        deadline = self._clock() + self.startup_timeout
        while True:
            dead = self._first_dead()
            if dead:
                raise TargetError(dead)
            client = self._connect_toxiproxy(url)
            if client is not None:
                return client
            if self._clock() >= deadline:
                raise TargetError(f"Toxiproxy at {url} did not answer after {self.startup_timeout:g} s")
            self._sleep(1.0)

    def stop(self) -> None:
        """Remove every container (Toxiproxy's proxies go with it), volume and network, lanes too."""
        self.proxies.clear()
        self.toxiproxy = None
        self._down.clear()
        super().stop()

    def _remove_networks(self) -> None:
        for broker, lane in list(self._lanes.items()):
            self._remove_network(lane)
            del self._lanes[broker]
        super()._remove_networks()

    def restart(self) -> None:
        """Restart every node on its own volume, the controller first (brokers recover their logs as
        after a crash)."""
        if not self._containers:
            self.start()
            return
        for node_id in self.node_ids:
            self.restart_node(node_id)
        self._versions = None

    def alive(self) -> bool:
        """False once a container is gone or down that no fault took down."""
        return bool(self._containers) and self._first_dead() is None

    def _watched(self) -> dict[int | str, Any]:
        """Every container but the nodes a fault took down on purpose."""
        return {k: c for k, c in self._containers.items() if k not in self._down}

    def crash_report(self) -> str:
        if self.alive() or not self._containers:
            return ""
        return (self._first_dead() or "") + "\n" + "\n".join(self.broker_output()[-20:])

    # ---- process faults -------------------------------------------------------------------------

    def node_id(self, node: str | int) -> int:
        """A node as the chaos layer names it: an id, ``broker-N``, or ``controller`` / ``0``."""
        text = str(node)
        if text in ("controller", "0"):
            return self.controller_id
        if text.startswith("broker-"):
            text = text[7:]
        if not text.isdigit() or int(text) not in self.node_ids:
            raise TargetError(
                f"docker target {self.name} has no node {node!r} (brokers {list(self.broker_ids)}, "
                f"controller {self.controller_id})"
            )
        return int(text)

    def container_for(self, node_id: int) -> Any:
        node_id = self.node_id(node_id)
        if node_id not in self._containers:
            raise TargetError(f"docker target {self.name} is not started")
        return self._containers[node_id]

    def kill(self, node_id: int) -> None:
        """SIGKILL the node's process (its container exits; the volume stays for restart_node)."""
        container = self._thawed(node_id)
        if container.status == "running":
            container.kill(signal="SIGKILL")
        self._down.add(self.node_id(node_id))

    def stop_node(self, node_id: int) -> None:
        """A clean shutdown: SIGTERM, SIGKILL after STOP_TIMEOUT_S."""
        self._thawed(node_id).stop(timeout=STOP_TIMEOUT_S)
        self._down.add(self.node_id(node_id))

    def restart_node(self, node_id: int) -> None:
        """Start the node's container again on its volume (stopping it cleanly first if it runs); a
        broker is back once it answers on its own listener and is registered."""
        node_id = self.node_id(node_id)
        container = self._thawed(node_id)
        if container.status == "running":
            container.stop(timeout=STOP_TIMEOUT_S)
        container.start()
        self._down.discard(node_id)
        if node_id in self.broker_ids:
            self._wait_until_ready({node_id: self.plan.direct_addresses[node_id]}, self.startup_timeout)

    def freeze(self, node_id: int) -> None:
        self.container_for(node_id).pause()

    def thaw(self, node_id: int) -> None:
        self.container_for(node_id).unpause()

    def _thawed(self, node_id: int) -> Any:
        """The node's container, unpaused first: the engine neither stops nor kills a paused one."""
        container = self.container_for(node_id)
        container.reload()
        if container.status == "paused":
            container.unpause()
            container.reload()
        return container

    @property
    def faults(self) -> FaultHooks:
        return _Faults(self)

    # ---- links ----------------------------------------------------------------------------------

    @property
    def toxiproxy_url(self) -> str:
        self._started()
        return self.plan.toxiproxy_url

    def links(self) -> list[str]:
        """Every proxy, named for its cluster link: client-<b>, ctrl-<b>, repl-<f>-<l>."""
        return sorted(self.proxies)

    def link_name(self, node_id: int) -> str:
        """The proxy of clients to broker ``node_id``."""
        return f"client-{self.node_id(node_id)}"

    def links_for(self, cluster_links: list[str]) -> tuple[list[str], list[str]]:
        """The proxies that cut the given cluster links (their namesakes), and the links they cut beyond
        those: none (``docker_cluster_specs.cover``)."""
        return cover(cluster_links, self.broker_ids)

    @property
    def network(self) -> ToxiproxyDriver:
        self._started()
        return ToxiproxyDriver(self.toxiproxy, self.links())

    # ---- what the harness asks ------------------------------------------------------------------

    @property
    def bootstrap(self) -> str:
        self._started()
        return ",".join(self.plan.client_addresses.values())

    @property
    def direct_addresses(self) -> dict[int, str]:
        """Each broker's own client listener, behind no proxy (it still advertises its proxy)."""
        self._started()
        return dict(self.plan.direct_addresses)

    @property
    def client_settings(self) -> dict[str, str]:
        return {}

    @property
    def mock(self):
        return None

    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        replication_factor: int | None = None,
        configs: dict[str, str] | None = None,
    ) -> None:
        """CreateTopics, replicated min(3, N) ways unless told otherwise."""
        factor = min(replication_factor or 3, self.brokers)
        super().create_topic(name, partitions, factor, configs)

    def broker_output(self) -> list[str]:
        """Every line the Kafka nodes have logged (a restarted node: all its runs)."""
        lines: list[str] = []
        for key, container in self._containers.items():
            if key == "toxiproxy":
                continue
            try:
                text = container.logs(stdout=True, stderr=True)
            except docker_errors.DockerException:
                continue
            lines += (
                (text if isinstance(text, bytes) else str(text).encode())
                .decode(errors="replace")
                .splitlines()
            )
        return lines

    def describe(self) -> dict[str, Any]:
        about = {**super().describe(), "layout": "controller + brokers, Toxiproxy on every link"}
        if self.plan is not None and self._containers:
            about |= {"toxiproxy": self.plan.toxiproxy_url, "links": self.links()}
        return about

    def _started(self) -> None:
        if self.plan is None or not self._containers:
            raise TargetError(f"docker target {self.name} is not started")
