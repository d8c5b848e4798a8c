"""The one interface every target offers: start (or connect), bootstrap addresses, what it speaks,
stop, and optional fault hooks.

    with make_target("reference") as target:
        target.bootstrap           # "127.0.0.1:41234"
        target.api_versions()      # {api_key: (min, max)} from the target's own ApiVersions answer
        target.create_topic("t", 3)

``api_versions`` is asked of the target, never assumed: the harness compares only (API, version)
pairs both targets advertise, and reports the rest as skipped."""

from __future__ import annotations

import abc
import asyncio
from typing import Any

__all__ = ["FaultHooks", "Target", "TargetError", "common_versions", "fetch_api_versions"]


class TargetError(RuntimeError):
    """A target could not be started, reached or used; the message says what to check."""


class FaultHooks:
    """Faults a target can inject by itself (librdkafka's mock cluster, our broker's processes)."""

    def broker_down(self, node_id: int) -> None:
        raise NotImplementedError(f"{type(self).__name__} cannot take a broker down")

    def broker_up(self, node_id: int) -> None:
        raise NotImplementedError(f"{type(self).__name__} cannot bring a broker up")

    def set_rtt(self, node_id: int, rtt_ms: int) -> None:
        raise NotImplementedError(f"{type(self).__name__} cannot add round-trip time")

    def push_request_errors(self, api_key: int, errors: list[int]) -> None:
        raise NotImplementedError(f"{type(self).__name__} cannot inject request errors")

    def move_leader(self, topic: str, partition: int, node_id: int) -> None:
        raise NotImplementedError(f"{type(self).__name__} cannot move partition leaders")


class Target(abc.ABC):
    """A Kafka-protocol endpoint the harness can talk to."""

    kind: str = "target"

    def __init__(self, name: str | None = None) -> None:
        self.name = name or self.kind
        self._versions: dict[int, tuple[int, int]] | None = None
        self.security = None  # a client.security.ClientSecurity when the target needs TLS or SASL

    def secure(self, properties: dict[str, str]) -> None:
        """Reach this target with the Java client's security properties (``security.protocol`` ...);
        a property no client knows, or a key store that does not load, is a TargetError."""
        from ..client.config import AdminConfig, ClientConfigError
        from ..client.security import security_from_config

        try:
            self.security = security_from_config(AdminConfig(properties))
        except ClientConfigError as exc:
            raise TargetError(f"target {self.name}: {exc}") from None

    def secure_brokers(self, protocol: str, properties: dict[str, str]) -> None:
        """Start the brokers with their clients' listener on ``protocol``, secured by the broker
        ``properties`` (``client_listener``); a kind kconform cannot secure is a TargetError."""
        if protocol.upper() != "PLAINTEXT" or properties:
            raise TargetError(
                f"target {self.name}: a {self.kind} target cannot be secured by kconform "
                "(reference, reference:N and docker targets can, and bootstrap targets are secured already)"
            )

    def _addresses(self) -> list[tuple[str, int]]:
        from ..client.network import parse_bootstrap

        return parse_bootstrap(self.bootstrap)

    @abc.abstractmethod
    def start(self) -> None:
        """Start the target (or connect to it) and wait until it answers ApiVersions."""

    @abc.abstractmethod
    def stop(self) -> None:
        """Stop what ``start`` started; never fails on a target that is already gone."""

    @property
    @abc.abstractmethod
    def bootstrap(self) -> str:
        """host:port[,host:port...] for clients."""

    @property
    def faults(self) -> FaultHooks | None:
        return None

    def alive(self) -> bool:
        """False once a target kconform started has died (a crash is an outcome, not an error)."""
        return True

    def crash_report(self) -> str:
        return ""

    def restart(self) -> None:
        self.stop()
        self._versions = None
        self.start()

    def describe(self) -> dict[str, Any]:
        """What the target is, for run metadata and reports."""
        return {"kind": self.kind, "name": self.name, "bootstrap": self.bootstrap}

    def api_versions(self, *, refresh: bool = False) -> dict[int, tuple[int, int]]:
        if self._versions is None or refresh:
            self._versions = asyncio.run(fetch_api_versions(self.bootstrap, security=self.security))
        return self._versions

    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        replication_factor: int = 1,
        configs: dict[str, str] | None = None,
    ) -> None:
        """Create a topic through the protocol (CreateTopics); targets with a side door override it."""
        asyncio.run(
            _create_topic(self.bootstrap, name, partitions, replication_factor, configs or {}, self.security)
        )

    def __enter__(self) -> Target:
        self.start()
        if self.security is not None:  # every client the harness opens to these addresses uses it
            from ..client.security import register_addresses

            register_addresses(self._addresses(), self.security)
        return self

    def __exit__(self, *exc_info) -> None:
        if self.security is not None:
            from ..client.security import unregister_addresses

            unregister_addresses(self._addresses())
        self.stop()


async def fetch_api_versions(
    bootstrap: str, timeout: float = 10.0, *, security=None
) -> dict[int, tuple[int, int]]:
    from ..client.connection import BrokerConnection
    from ..client.errors import ClientError
    from ..client.network import parse_bootstrap

    host, port = parse_bootstrap(bootstrap)[0]
    try:
        conn = await BrokerConnection.connect(
            host, port, connect_timeout=timeout, request_timeout=timeout, security=security
        )
    except ClientError as exc:
        raise TargetError(f"no Kafka-protocol answer at {host}:{port}: {exc}") from exc
    try:
        return dict(conn.versions)
    finally:
        await conn.wait_closed()


async def _create_topic(bootstrap, name, partitions, replication_factor, configs, security=None) -> None:
    from kconform.codecs.messages import CreateTopicsRequest

    from ..client.errors import BrokerError
    from ..client.network import NetworkClient

    client = NetworkClient(bootstrap, security=security)
    try:
        topic = CreateTopicsRequest.CreatableTopic(
            name=name,
            num_partitions=partitions,
            replication_factor=replication_factor,
            configs=[CreateTopicsRequest.CreatableTopicConfig(name=k, value=v) for k, v in configs.items()],
        )
        response = await client.send_any(19, CreateTopicsRequest(topics=[topic], timeout_ms=30_000))
        result = response.topics[0]
        if result.error_code not in (0, 36):  # 36: TOPIC_ALREADY_EXISTS is fine here
            raise BrokerError(result.error_code, f"creating topic {name}", result.error_message)
    finally:
        await client.close()


def common_versions(
    a: dict[int, tuple[int, int]], b: dict[int, tuple[int, int]]
) -> tuple[dict[int, tuple[int, int]], list[tuple[int, int]]]:
    """The (API, version range) both sides advertise, and the (API, version) pairs only one does."""
    shared: dict[int, tuple[int, int]] = {}
    skipped: list[tuple[int, int]] = []
    for key in sorted(set(a) | set(b)):
        ra, rb = a.get(key), b.get(key)
        versions_a = set(range(ra[0], ra[1] + 1)) if ra else set()
        versions_b = set(range(rb[0], rb[1] + 1)) if rb else set()
        both = versions_a & versions_b
        if both:
            shared[key] = (min(both), max(both))
        skipped += [(key, v) for v in sorted(versions_a ^ versions_b)]
    return shared, skipped
