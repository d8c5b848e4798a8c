"""A replicated reference cluster as operating-system processes: one controller
(``process.roles=controller``) and N brokers that register with it, each on its own data directory
(``<data dir>/controller-<id>``, ``<data dir>/broker-<id>``), so any node can be killed (SIGKILL),
frozen (SIGSTOP), stopped cleanly and restarted on the same port and data. ``kconform cluster``, the
``reference:N`` target and the replication tests use this."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .process import BrokerProcess, start_broker_process

__all__ = ["ReferenceCluster", "start_cluster", "CONTROLLER_ID"]

CONTROLLER_ID = 0  # brokers are 1..N


@dataclass
class ReferenceCluster:
    data_dir: Path
    controller: BrokerProcess
    brokers: dict[int, BrokerProcess]
    overrides: dict[str, str] = field(default_factory=dict)
    kafka_version: str | None = None
    host: str = "127.0.0.1"
    node_overrides: dict[int, dict[str, str]] = field(default_factory=dict)
    """Per broker id, properties over ``overrides`` (``broker.rack``, say): kept across restarts."""
    advertise: dict[int, str] = field(default_factory=dict)
    """Per broker id, the HOST:PORT it registers and tells clients (a proxy in front of it)."""
    planted: tuple[str, ...] = ()
    """Planted bugs (``planted``) every node runs with: test-only."""

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
        """Start a stopped or killed node again on its own port and data directory."""
        old = self.node(node_id)
        if old.alive():
            old.stop()
        if node_id == CONTROLLER_ID:
            self.controller = _start_controller(
                self.data_dir, self.host, old.port, self.overrides, self.kafka_version, timeout, self.planted
            )
            return self.controller
        self.brokers[node_id] = _start_broker(
            self.data_dir, node_id, self.host, old.port, self.controller_address,
            {**self.overrides, **self.node_overrides.get(node_id, {})}, self.kafka_version, timeout,
            self.advertise.get(node_id), self.planted,
        )  # fmt: skip
        return self.brokers[node_id]

    def stop(self) -> None:
        """Stop every node: brokers first (their controlled shutdown needs the controller), then it."""
        for broker in self.brokers.values():
            broker.stop()
        self.controller.stop()


def _planted_env(planted: tuple[str, ...]) -> dict[str, str] | None:
    return {"KCONFORM_PLANTED_BUGS": ",".join(planted)} if planted else None


def _start_controller(data_dir, host, port, overrides, kafka_version, timeout, planted=()) -> BrokerProcess:
    return start_broker_process(
        Path(data_dir) / f"controller-{CONTROLLER_ID}",
        node_id=CONTROLLER_ID,
        host=host,
        port=port,
        overrides={**overrides, "process.roles": "controller"},
        kafka_version=kafka_version,
        timeout=timeout,
        env=_planted_env(planted),
    )


def _start_broker(
    data_dir, node_id, host, port, controller, overrides, kafka_version, timeout, advertise=None, planted=()
) -> BrokerProcess:
    """``overrides`` win over the controller address given, so a broker can dial it through a proxy."""
    return start_broker_process(
        Path(data_dir) / f"broker-{node_id}",
        node_id=node_id,
        host=host,
        port=port,
        overrides={"controller.quorum.bootstrap.servers": controller, **overrides, "process.roles": "broker"},
        kafka_version=kafka_version,
        timeout=timeout,
        advertise=advertise,
        env=_planted_env(planted),
    )


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
    planted: tuple[str, ...] = (),
) -> ReferenceCluster:
    """Start the controller, then the brokers one after another (each waits until it is registered,
    caught up and unfenced). ``ports`` pins node ids to ports (0 or absent: any free port);
    ``node_overrides`` gives one broker properties of its own, e.g. ``{2: {"broker.rack": "r2"}}``, even
    ``controller.quorum.bootstrap.servers``; ``advertise`` the address a broker registers and tells
    clients; ``planted`` test-only bugs for every node (``planted``)."""
    if brokers < 1:
        raise ValueError(f"a cluster needs at least one broker, not {brokers}")
    overrides = dict(overrides or {})
    ports = ports or {}
    advertise = dict(advertise or {})
    controller = _start_controller(
        data_dir, host, ports.get(CONTROLLER_ID, 0), overrides, kafka_version, timeout, tuple(planted)
    )
    node_overrides = {n: dict(props) for n, props in (node_overrides or {}).items()}
    cluster = ReferenceCluster(
        Path(data_dir),
        controller,
        {},
        overrides,
        kafka_version,
        host,
        node_overrides,
        advertise,
        tuple(planted),
    )
    try:
        for node_id in range(1, brokers + 1):
            cluster.brokers[node_id] = _start_broker(
                data_dir, node_id, host, ports.get(node_id, 0), controller.bootstrap,
                {**overrides, **node_overrides.get(node_id, {})}, kafka_version, timeout,
                advertise.get(node_id), tuple(planted),
            )  # fmt: skip
    except Exception:
        cluster.stop()
        raise
    return cluster
