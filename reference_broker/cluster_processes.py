"""A replicated reference cluster as operating-system processes: one controller
(``process.roles=controller``) and N brokers that register with it, each on its own data directory
(``<data dir>/controller-<id>``, ``<data dir>/broker-<id>``), so any node can be killed (SIGKILL),
frozen (SIGSTOP), stopped cleanly and restarted on the same port and data. ``kconform cluster``, the
``reference:N`` target and the replication tests use this."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

from .process import BrokerProcess, start_broker_process

__all__ = ["CONTROLLER_ID", "Planted", "ReferenceCluster", "planted_by_node", "start_cluster"]

CONTROLLER_ID = 0  # brokers are 1..N


Planted = Iterable[str] | Mapping[int, Iterable[str]]
"""Planted bugs (``planted.py``, test only): names for every node, or node id -> names for chosen
nodes (0 is the controller)."""


@dataclass
class ReferenceCluster:
    data_dir: Path
    controller: BrokerProcess
    brokers: dict[int, BrokerProcess]
    overrides: dict[str, str] = field(default_factory=dict)
    kafka_version: str | None = None
    host: str = "127.0.0.1"
    node_overrides: dict[int, dict[str, str]] = field(default_factory=dict)
    """Per node id, properties over ``overrides`` (``broker.rack``, say; 0 is the controller)."""
    advertise: dict[int, str] = field(default_factory=dict)
    """Per broker id, the HOST:PORT it registers and tells clients (a proxy in front of it)."""
    planted: dict[int, tuple[str, ...]] = field(default_factory=dict)
    """Per node id, the planted bugs it runs with (test only); a node not listed inherits
    ``KCONFORM_PLANTED_BUGS`` from this process. All of these are kept across restarts."""

    @property
    def bootstrap(self) -> str:
        return ",".join(b.bootstrap for _, b in sorted(self.brokers.items()))

    @property
    def controller_address(self) -> str:
        return self.controller.bootstrap

    def node(self, node_id: int) -> BrokerProcess:
        return self.controller if node_id == CONTROLLER_ID else self.brokers[node_id]

    def nodes(self) -> list[BrokerProcess]:
        return [self.controller, *(b for _, b in sorted(self.brokers.items()))]

    def kill(self, node_id: int) -> None:
        self.node(node_id).kill()

    def stop_node(self, node_id: int) -> None:
        self.node(node_id).stop()

    def restart(self, node_id: int, timeout: float = 60.0) -> BrokerProcess:
        """Start a stopped or killed node again on its own port and data directory, with the
        properties, advertised address and planted bugs it started with."""
        old = self.node(node_id)
        if old.alive():
            old.stop()
        if node_id == CONTROLLER_ID:
            self.controller = self._start(node_id, old.port, timeout)
        else:
            self.brokers[node_id] = self._start(node_id, old.port, timeout)
        return self.node(node_id)

    def stop(self) -> None:
        """Stop every node: the brokers together (their controlled shutdowns need the controller, not
        one another), then the controller."""
        _each(lambda broker: broker.stop(), list(self.brokers.values()))
        self.controller.stop()

    def _start(self, node_id: int, port: int, timeout: float) -> BrokerProcess:
        props = _node_props(node_id, self.overrides, self.node_overrides, self.controller_address)
        return _launch(self, node_id, port, props, timeout)


def _node_props(node_id: int, overrides, node_overrides, controller_address: str | None) -> dict[str, str]:
    props = {**overrides, **node_overrides.get(node_id, {})}
    if node_id == CONTROLLER_ID:
        return {**props, "process.roles": "controller"}
    # a given controller.quorum.bootstrap.servers wins, so a broker can dial it through a proxy
    return {"controller.quorum.bootstrap.servers": controller_address, **props, "process.roles": "broker"}


def _launch(cluster, node_id: int, port: int, props: dict[str, str], timeout: float) -> BrokerProcess:
    """Start one node with the cluster's directory, host, release, advertised addresses and planted
    bugs (``cluster``: a ``ReferenceCluster``, or the settings ``start_cluster`` makes one from)."""
    role = "controller" if node_id == CONTROLLER_ID else "broker"
    names = cluster.planted.get(node_id)
    return start_broker_process(
        Path(cluster.data_dir) / f"{role}-{node_id}",
        node_id=node_id,
        host=cluster.host,
        port=port,
        overrides=props,
        kafka_version=cluster.kafka_version,
        timeout=timeout,
        advertise=cluster.advertise.get(node_id),
        env=None if names is None else {"KCONFORM_PLANTED_BUGS": ",".join(names)},
    )


def planted_by_node(planted: Planted | str, node_ids: Iterable[int]) -> dict[int, tuple[str, ...]]:
    """Each node's planted bugs: the same names for all (a sequence, or a comma-separated string), or
    the names a mapping gives a node and none for the rest; nothing given, an empty dict (every node
    inherits ``KCONFORM_PLANTED_BUGS``). Unknown names and node ids are refused here, before any node
    starts."""
    from .planted import PLANTED_BUGS, PlantedBugError

    def names(given) -> tuple[str, ...]:
        items = given.split(",") if isinstance(given, str) else given or ()
        return tuple(name.strip() for name in items if name.strip())

    node_ids = list(node_ids)
    if isinstance(planted, Mapping):
        unknown_nodes = sorted(set(planted) - set(node_ids))
        if unknown_nodes:
            raise ValueError(f"planted bugs for nodes {unknown_nodes}, not in the cluster (nodes {node_ids})")
        by_node = {node: names(planted.get(node)) for node in node_ids}
    else:
        everywhere = names(planted)
        by_node = {node: everywhere for node in node_ids} if everywhere else {}
    unknown = sorted({name for names in by_node.values() for name in names} - PLANTED_BUGS.keys())
    if unknown:
        raise PlantedBugError(f"unknown planted bugs {', '.join(unknown)}; known: {', '.join(PLANTED_BUGS)}")
    return by_node


def start_cluster(
    data_dir: Path,
    brokers: int = 3,
    *,
    overrides: dict[str, str] | None = None,
    kafka_version: str | None = None,
    host: str = "127.0.0.1",
    ports: dict[int, int] | None = None,
    timeout: float = 60.0,
    node_overrides: dict[int, dict[str, str]] | None = None,
    advertise: dict[int, str] | None = None,
    planted: Planted | str = (),
) -> ReferenceCluster:
    """Start the controller, then the brokers together (each waits until it is registered, caught up
    and unfenced). ``ports`` pins node ids to ports (0 or absent: any free port);
    ``node_overrides`` gives one node properties of its own, e.g. ``{2: {"broker.rack": "r2"}}``, even
    ``controller.quorum.bootstrap.servers`` and ``kconform.interbroker.addresses`` (where it dials the
    controller and its peers, e.g. through proxies); ``advertise`` the HOST:PORT a broker registers and
    tells clients, e.g. ``{1: "127.0.0.1:19092"}``; ``planted`` test-only bugs (``Planted``), e.g.
    ``("isr-never-shrinks",)`` on every node or ``{0: ["unclean-election-without-flag"]}`` on the
    controller alone."""
    if brokers < 1:
        raise ValueError(f"a cluster needs at least one broker, not {brokers}")
    settings = SimpleNamespace(
        data_dir=Path(data_dir),
        overrides=dict(overrides or {}),
        kafka_version=kafka_version,
        host=host,
        node_overrides={n: dict(props) for n, props in (node_overrides or {}).items()},
        advertise=dict(advertise or {}),
        planted=planted_by_node(planted, range(CONTROLLER_ID, brokers + 1)),
    )
    ports = ports or {}
    props = _node_props(CONTROLLER_ID, settings.overrides, settings.node_overrides, None)
    controller = _launch(settings, CONTROLLER_ID, ports.get(CONTROLLER_ID, 0), props, timeout)
    cluster = ReferenceCluster(controller=controller, brokers={}, **vars(settings))
    node_ids = list(range(1, brokers + 1))
    started = _each(lambda node_id: cluster._start(node_id, ports.get(node_id, 0), timeout), node_ids)
    cluster.brokers.update(
        {n: b for n, b in zip(node_ids, started, strict=True) if not isinstance(b, Exception)}
    )
    failed = [b for b in started if isinstance(b, Exception)]
    if failed:
        cluster.stop()
        raise failed[0]
    return cluster


def _each(action: Callable, items: list) -> list:
    """``action`` on every item at once (each in a thread: starting and stopping nodes is waiting);
    each item's result, or the exception it raised."""

    def attempt(item):
        try:
            return action(item)
        except Exception as exc:  # noqa: BLE001 - handed back for the caller to raise
            return exc

    with ThreadPoolExecutor(max_workers=max(len(items), 1)) as pool:
        return list(pool.map(attempt, items))
