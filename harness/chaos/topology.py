"""A target whose every client-to-broker link goes through a Toxiproxy proxy.

Each broker gets a proxy named ``broker-<id>``, and the broker advertises the proxy's address, not its
own: clients learn broker addresses from Metadata, so a broker that advertised its real address would
let them route around the faults after the first request. The reference broker is started with
``--advertise``; librdkafka's mock cluster is told with ``rd_kafka_mock_broker_set_host_port``.

The proxies live on any Toxiproxy-compatible server (a real Toxiproxy or kconform's embedded one),
driven through toxiproxy-python; ``network`` is the nemesis driver limited to this cluster's links."""

from __future__ import annotations

from typing import Any

from kconform.faults.nemesis import ToxiproxyDriver

from ..ports import free_port
from ..targets.mock import RdkafkaMockTarget
from ..targets.reference import ReferenceTarget

__all__ = ["ProxiedCluster", "destroy_proxies", "fresh_proxy"]


def fresh_proxy(toxiproxy, name: str, upstream: str, host: str):
    """A new proxy on any free port of ``host``; one of that name left by a run that did not finish
    is destroyed first."""
    stale = toxiproxy.get_proxy(name)
    if stale is not None:
        stale.destroy()
    return toxiproxy.create(upstream=upstream, name=name, listen=f"{host}:0")


def destroy_proxies(proxies: dict) -> None:
    for proxy in proxies.values():
        try:
            proxy.destroy()
        except Exception:  # noqa: BLE001 - the server may be gone already; nothing is left to undo
            pass
    proxies.clear()


class _ReferenceProcesses:
    """Process faults on the reference broker: SIGKILL then a restart on the same log and port,
    SIGSTOP then SIGCONT."""

    def __init__(self, target: ReferenceTarget) -> None:
        self.target = target

    def nodes(self) -> list[str]:
        return ["1"]

    def kill(self, node: str) -> None:
        self.target.node.kill()

    def restart(self, node: str) -> None:
        self.target.restart()

    def freeze(self, node: str) -> None:
        self.target.node.freeze()

    def thaw(self, node: str) -> None:
        self.target.node.thaw()


class ProxiedCluster:
    """``with ProxiedCluster("reference", client) as cluster: cluster.bootstrap ...``

    ``kind`` is ``reference`` or ``rdkafka-mock`` (``brokers`` of them); ``planted`` passes test-only
    misbehaviour to the reference broker."""

    def __init__(
        self,
        kind: str,
        toxiproxy: Any,
        *,
        brokers: int = 1,
        planted: tuple[str, ...] = (),
        overrides: dict[str, str] | None = None,
        prefix: str = "kconform",
        host: str = "127.0.0.1",
        kafka_version: str | None = None,
        client_properties: dict[str, str] | None = None,
        broker_properties: dict[str, str] | None = None,
    ) -> None:
        if kind not in ("reference", "rdkafka-mock"):
            raise ValueError(f"chaos runs on reference or rdkafka-mock targets, not {kind!r}")
        # security (--target-config for the clients, --broker-config for the reference broker)
        self.client_properties = dict(client_properties or {})
        self.broker_properties = dict(broker_properties or {})
        self.kind = kind
        self.toxiproxy = toxiproxy
        self.brokers = brokers if kind == "rdkafka-mock" else 1
        self.planted = planted
        self.overrides = overrides or {}
        self.prefix = prefix
        self.host = host
        self.kafka_version = kafka_version  # the release a reference broker answers as
        self.target: ReferenceTarget | RdkafkaMockTarget | None = None
        self.proxies: dict[str, Any] = {}  # link name -> toxiproxy-python Proxy

    # ---- lifecycle ------------------------------------------------------------------------------

    def start(self) -> ProxiedCluster:
        try:
            if self.kind == "reference":
                self._start_reference()
            else:
                self._start_mock()
        except BaseException:
            self.stop()
            raise
        return self

    def _proxy(self, node_id: int, upstream: str) -> tuple[str, int]:
        name = f"{self.prefix}-broker-{node_id}"
        proxy = self.proxies[name] = fresh_proxy(self.toxiproxy, name, upstream, self.host)
        host, _, port = proxy.listen.rpartition(":")
        return host or self.host, int(port)

    def _start_reference(self) -> None:
        port = free_port(self.host)
        listen = self._proxy(1, f"{self.host}:{port}")
        self.target = ReferenceTarget(
            f"{self.prefix}-reference",
            overrides=self.overrides,
            planted=self.planted,
            port=port,
            advertise=f"{listen[0]}:{listen[1]}",
            kafka_version=self.kafka_version,
            client_protocol=self.client_properties.get("security.protocol", "PLAINTEXT"),
            broker_properties=self.broker_properties,
        )
        if self.client_properties:
            self.target.secure(self.client_properties)
        self.target.start()
        if self.target.security is not None:  # every harness client dialling the proxy uses it
            from ..client.security import register_addresses

            register_addresses([listen], self.target.security)

    def _start_mock(self) -> None:
        self.target = RdkafkaMockTarget(f"{self.prefix}-mock", brokers=self.brokers)
        self.target.start()
        for node_id, (host, port) in self.target.broker_addresses().items():
            listen = self._proxy(node_id, f"{host}:{port}")
            self.target.advertise(node_id, *listen)

    def stop(self) -> None:
        if self.target is not None and self.target.security is not None:
            from ..client.network import parse_bootstrap
            from ..client.security import unregister_addresses

            unregister_addresses(parse_bootstrap(self.bootstrap))
        destroy_proxies(self.proxies)
        if self.target is not None:
            self.target.stop()
            self.target = None

    def __enter__(self) -> ProxiedCluster:
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()

    # ---- what a run uses ------------------------------------------------------------------------

    @property
    def bootstrap(self) -> str:
        return ",".join(proxy.listen for proxy in self.proxies.values())

    @property
    def client_settings(self) -> dict[str, str]:
        """Reference-client settings the target needs (see rdkafka_mock.CLIENT_SETTINGS)."""
        if self.kind == "rdkafka-mock":
            from ..targets.rdkafka_mock import CLIENT_SETTINGS

            return dict(CLIENT_SETTINGS)
        return dict(self.client_properties)

    @property
    def network(self) -> ToxiproxyDriver:
        return ToxiproxyDriver(self.toxiproxy, sorted(self.proxies))

    @property
    def processes(self) -> _ReferenceProcesses | None:
        return _ReferenceProcesses(self.target) if isinstance(self.target, ReferenceTarget) else None

    @property
    def mock(self):
        return self.target.faults if isinstance(self.target, RdkafkaMockTarget) else None

    def create_topic(self, name: str, partitions: int) -> None:
        self.target.create_topic(name, partitions, min(3, self.brokers))
        if isinstance(self.target, RdkafkaMockTarget):  # leaders spread in order: broker 1 leads 0
            for partition in range(partitions):
                self.target.faults.move_leader(name, partition, partition % self.brokers + 1)

    def link_name(self, node_id: int) -> str:
        return f"{self.prefix}-broker-{node_id}"
